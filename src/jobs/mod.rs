//! One typed job per node kind. A job is both what is hashed into the node's key and the only
//! input its executor receives: whatever the executor reads is in the key by construction, and
//! what only changes speed or location (concurrency, paths, colours) is kept out by the type.
//! Outputs are typed too: a stored output that does not parse as its kind's type is an error
//! naming the record, never a default.
//!
//! - `sample.rs`: [`SampleJob`] -> [`SampleOutput`]
//! - `grade.rs`: [`GradeJob`] -> [`GradeOutput`] (gold checks and grades share it)
//! - `solve.rs`: [`SolveJob`] -> [`SolveOutput`]
//! - `report.rs`: [`ReportJob`] -> [`ReportOutput`]
//! - `content.rs`: parts that enter keys by digest (task views, blobs)
//! - `versions.rs`: the implementation versions every job carries
//!
//! Not here: running jobs (`stages/`), deciding which nodes exist (`graph/`).

mod content;
mod grade;
mod report;
mod sample;
mod solve;
pub mod versions;

pub use content::{Blob, Digested, GoldPatch, GradingTask, Location, SolverTask};
pub use grade::{
    Confirmation, GradeJob, GradeOutput, ParserRef, PatchInput, ProtocolId, ProtocolRef, Resolution,
};
pub use report::{Costs, PairArtifacts, PairUsage, ReportInputs, ReportJob, ReportOutput};
pub use sample::{DatasetFacts, SampleJob, SampleOutput};
pub use solve::{
    CostBasis, HarborTrial, HarborTrialJob, HarnessSpec, InSandbox, InstallFile, InstallSpec,
    PromptSet, RunUsage, ScriptSpec, SolveJob, SolveOutput, TeamSpec, Tokens,
};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use crate::types::BackendFacts;

/// Version of the key encoding itself (defined with the encoding, in `key.rs`).
pub use crate::key::KEY_SCHEMA;

/// The node kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Sample,
    Grade,
    Solve,
    Report,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Sample => "sample",
            Kind::Grade => "grade",
            Kind::Solve => "solve",
            Kind::Report => "report",
        }
    }
}

/// A node's job: hashed into its key, handed to its executor, nothing else.
pub trait Job: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug {
    const KIND: Kind;
    type Output: Serialize + DeserializeOwned + std::fmt::Debug + Clone;

    /// The node's key: blake3 of the job's canonical bytes (declaration-ordered fields, sorted
    /// maps, content-addressed parts by digest, shortest round-trip floats).
    fn key(&self) -> String {
        crate::key::digest_json(self)
    }

    /// What `plan --explain` compares: the job with its digested parts expanded where that
    /// tells a user more than a digest.
    fn explain(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("jobs serialize")
    }
}

/// A duration at full precision (milliseconds), as keys hold it.
pub fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
pub(crate) mod key_coverage;
