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
pub mod harbor;
mod in_sandbox;
mod local;
mod paths;
mod status;
mod steps;
pub mod swe_bench;
mod swe_bench_live;
pub(crate) mod swe_bench_pro;
mod verdict;

pub use audit::{AuditFlag, audit};
pub use in_sandbox::in_sandbox;
pub use status::script_status;
pub use steps::Graded;
pub use verdict::verdict;

use tokio_util::sync::CancellationToken;

use crate::backend::{Sandbox, SandboxError};
use crate::jobs::{GradeJob, ProtocolId};

/// The implementation version of a protocol (part of its grades' keys).
pub fn version(p: ProtocolId) -> u32 {
    match p {
        ProtocolId::Local => local::VERSION,
        ProtocolId::SweBenchLive => swe_bench_live::VERSION,
        ProtocolId::SweBenchPro => swe_bench_pro::VERSION,
        ProtocolId::SweBench => swe_bench::VERSION,
        ProtocolId::BrainBench => brain_bench::VERSION,
        ProtocolId::Harbor => harbor::VERSION,
    }
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
    let recipe = match job.protocol.name {
        ProtocolId::Local => local::RECIPE,
        ProtocolId::SweBenchLive => swe_bench_live::RECIPE,
        ProtocolId::SweBenchPro => {
            return swe_bench_pro::grade(job, patch, sandbox, base, cancel).await;
        }
        ProtocolId::SweBench => return swe_bench::grade(job, patch, sandbox, base, cancel).await,
        ProtocolId::BrainBench => {
            return brain_bench::grade(job, patch, sandbox, base, cancel).await;
        }
        ProtocolId::Harbor => {
            return Err(GradeError::Task(
                "internal error: Harbor tasks are graded by their own executor (stages/harbor.rs)"
                    .into(),
            ));
        }
    };
    steps::grade(&recipe, job, patch, sandbox, base, cancel).await
}
