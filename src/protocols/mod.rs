//! Grading protocols, each a module written once over the [`Sandbox`] trait, so a task grades
//! the same on every backend:
//!
//! - `local.rs`: bench's local task format.
//! - `brain_bench.rs`: brain bench's runner (setup, fix's test files, `verify`'s exit code).
//! - `swe_bench_live.rs`: SWE-bench-Live's `evaluation.py`.
//! - `swe_bench.rs`: the official SWE-bench harness (its own steps, the shared helpers).
//! - `harbor.rs`: Harbor's verifier contract and reward files (its executor: `stages/harbor.rs`).
//! - `steps.rs`: the steps they share (patches, rebuild, tests, print, parse), under one time
//!   budget that bounds apply + rebuild + tests.
//! - `verdict.rs`: the verdict rule; `status.rs`: the status rule for parser scripts.
//! - `in_sandbox.rs`: the forgery check's grade in the agent's own sandbox.
//!
//! Not here: creating and removing the sandbox (the grade executor in `stages/grade.rs`).

mod audit;
mod brain_bench;
mod grading;
pub mod harbor;
mod in_sandbox;
mod local;
mod paths;
mod status;
mod steps;
pub mod swe_bench;
mod swe_bench_live;
pub(crate) mod swe_bench_pro;
mod swe_rebench_v2;
#[cfg(test)]
pub(crate) mod toy;
mod verdict;

pub use audit::{AuditFlag, audit};
pub use grading::Graded;
pub use in_sandbox::in_sandbox;
pub use status::script_status;
pub use verdict::verdict;

use tokio_util::sync::CancellationToken;

use crate::backend::{Sandbox, SandboxError};
use crate::jobs::{GradeJob, ProtocolId};
use grading::Protocol;

static LOCAL: steps::RecipeProtocol = steps::RecipeProtocol {
    version: local::VERSION,
    recipe: local::RECIPE,
};

static SWE_BENCH_LIVE: steps::RecipeProtocol = steps::RecipeProtocol {
    version: swe_bench_live::VERSION,
    recipe: swe_bench_live::RECIPE,
};

/// Harbor tasks are verified by their own executor (`stages/harbor.rs`), not through
/// [`grade`]; this only carries the version.
struct HarborVerifier;

#[async_trait::async_trait]
impl Protocol for HarborVerifier {
    fn version(&self) -> u32 {
        harbor::VERSION
    }

    fn audited_commands<'j>(&self, _job: &'j GradeJob) -> Vec<&'j str> {
        Vec::new()
    }

    async fn steps(&self, _g: &grading::Grading<'_>) -> Result<(Graded, String), GradeError> {
        Err(GradeError::Task(
            "internal error: Harbor tasks are graded by their own executor (stages/harbor.rs)"
                .into(),
        ))
    }
}

/// Every protocol bench grades with, by name: the one list a new protocol joins.
static PROTOCOLS: [(ProtocolId, &dyn Protocol); 7] = [
    (ProtocolId::Local, &LOCAL),
    (ProtocolId::SweBenchLive, &SWE_BENCH_LIVE),
    (ProtocolId::SweBenchPro, &swe_bench_pro::SweBenchPro),
    (ProtocolId::SweBench, &swe_bench::SweBench),
    (ProtocolId::SweRebenchV2, &swe_rebench_v2::SweRebenchV2),
    (ProtocolId::BrainBench, &brain_bench::BrainBench),
    (ProtocolId::Harbor, &HarborVerifier),
];

/// The protocol registered under `p`, if one is (a job read back from another bench's store
/// may name one this bench does not have).
fn protocol(p: ProtocolId) -> Option<&'static dyn Protocol> {
    PROTOCOLS
        .iter()
        .chain(TEST_PROTOCOLS.iter())
        .find(|(id, _)| *id == p)
        .map(|(_, pr)| *pr)
}

/// The toy benchmark's protocol (`toy.rs`), registered in test builds only.
#[cfg(test)]
static TEST_PROTOCOLS: [(ProtocolId, &dyn Protocol); 1] = [(toy::TOY, &toy::Toy)];
#[cfg(not(test))]
static TEST_PROTOCOLS: [(ProtocolId, &dyn Protocol); 0] = [];

/// Whether a protocol is registered under `p`.
pub fn is_registered(p: ProtocolId) -> bool {
    protocol(p).is_some()
}

/// The implementation version of a protocol (part of its grades' keys).
/// 0 for a name no protocol is registered under.
pub fn version(p: ProtocolId) -> u32 {
    protocol(p).map_or(0, |pr| pr.version())
}

/// What the job's protocol has the backend run in the task image before the history strip
/// (`SandboxSpec::before_strip`), if anything.
pub fn before_strip(job: &GradeJob) -> Option<String> {
    protocol(job.protocol.name).and_then(|pr| pr.before_strip(job))
}

/// Why grading produced no verdict.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GradeError {
    /// The task cannot be graded as given (its test patch does not apply, its parser fails):
    /// an infrastructure error, retried.
    #[error("{0}")]
    Task(String),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

/// Grades `patch` in a fresh sandbox of the job's task, by the job's protocol; `base` is the
/// commit the sandbox's history is stripped to (`Backend::base_commit`; `None`: its HEAD).
pub async fn grade(
    job: &GradeJob,
    patch: &[u8],
    sandbox: &dyn Sandbox,
    base: Option<&str>,
    cancel: &CancellationToken,
) -> Result<Graded, GradeError> {
    let Some(pr) = protocol(job.protocol.name) else {
        return Err(GradeError::Task(format!(
            "no protocol named `{}` is registered in this bench (src/protocols/mod.rs)",
            job.protocol.name.name()
        )));
    };
    grading::grade_with(pr, job, patch, sandbox, base, cancel).await
}
