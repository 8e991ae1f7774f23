//! The executors of each node kind: what runs when a node is not in the store. Each receives
//! its job (and the store, to read inputs by digest and write blobs) and nothing else.

pub(crate) mod grade;
mod harbor;
mod report;
mod solve;

pub use grade::{grade, patch_bytes};
pub use report::{
    MaterializeError, PairArtifacts, PairUsage, RenderedReport, ReportInputs, artifact_dir,
    materialize, render_report, report_document, report_files_intact, report_list_digest,
    write_report,
};
pub use solve::solve;

/// The pieces of one agent run that the team topologies (`harness::teams`) build on.
pub mod solve_parts {
    pub use super::solve::{
        AgentRun, Ledger, RunCtx, Sandboxes, finish, render_about, render_prompt,
    };
}

use std::collections::BTreeMap;

use crate::backend::SandboxError;
use crate::store::{Output, StoreError};

/// Why a node's work did not produce a result.
#[derive(Debug, Clone)]
pub enum WorkError {
    /// An infrastructure failure: not cached, retried on the next apply.
    Infra(String),
    /// An input read by digest from the store failed its verification (it was removed): the
    /// node that produced it recomputes, then this one runs again.
    CorruptInput { digest: String, message: String },
    /// Cancelled (Ctrl-C): not cached.
    Cancelled,
}

impl WorkError {
    pub fn store(e: StoreError) -> WorkError {
        WorkError::Infra(e.to_string())
    }

    pub fn message(&self) -> String {
        match self {
            WorkError::Infra(m) => m.clone(),
            WorkError::CorruptInput { message, .. } => message.clone(),
            WorkError::Cancelled => "cancelled".to_string(),
        }
    }
}

impl From<SandboxError> for WorkError {
    fn from(e: SandboxError) -> Self {
        match e {
            SandboxError::Failed(m) => WorkError::Infra(m),
            SandboxError::Cancelled => WorkError::Cancelled,
        }
    }
}

/// What a node's work produced: its typed output and named blobs.
#[derive(Debug, Clone)]
pub struct WorkOutput {
    pub output: Output,
    pub blobs: BTreeMap<String, String>,
}
