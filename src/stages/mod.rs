//! The executors of each node kind: what runs when a node is not in the store. Each receives
//! its job (and the store, to read inputs by digest and write blobs) and nothing else.

mod grade;
mod harbor;
mod report;
mod solve;

/// The report job's content, defined with the job (`jobs::report`).
pub use crate::jobs::{PairArtifacts, PairUsage, ReportInputs};
pub use grade::patch_bytes;
pub use report::{
    MaterializeError, RenderedReport, artifact_dir, materialize, render_report, report_document,
    report_files_intact, report_list_digest, write_report,
};

use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, SandboxError};
use crate::jobs::{GradeJob, ProtocolId, SolveJob};
use crate::store::{Output, Store, StoreError};

/// Runs the solve job's team on its task: a Harbor trial by its own executor
/// (`stages/harbor.rs`), any other by the solve executor (`stages/solve/`).
pub async fn solve(
    job: &SolveJob,
    store: &Store,
    backend: &dyn Backend,
    budget_share: Option<f64>,
    address: &str,
    key: &str,
    cancel: &CancellationToken,
) -> Result<WorkOutput, WorkError> {
    if job.harbor.is_some() {
        return harbor::trial(job, store, backend, budget_share, address, key, cancel).await;
    }
    solve::solve(job, store, backend, budget_share, address, key, cancel).await
}

/// Grades the job's patch: a Harbor task by its verifier's executor (`stages/harbor.rs`), any
/// other by the grade executor (`stages/grade.rs`) in a fresh sandbox.
pub async fn grade(
    job: &GradeJob,
    store: &Store,
    backend: &dyn Backend,
    address: &str,
    key: &str,
    cancel: &CancellationToken,
) -> Result<WorkOutput, WorkError> {
    if job.protocol.name == ProtocolId::Harbor {
        return harbor::grade(job, store, backend, address, key, cancel).await;
    }
    grade::grade(job, store, backend, address, key, cancel).await
}

/// Why a node's work did not produce a result. It serializes: a worker that ran a shipped job
/// reports it to the apply that shipped it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum WorkError {
    /// An infrastructure failure: not cached, retried on the next apply.
    Infra(String),
    /// A bench bug (a state the code should never reach): not cached; the message asks for a
    /// report. Retrying does not help.
    Bug(String),
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
            WorkError::Bug(m) => format!("{m} (a bench bug: please report it)"),
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
    pub blobs: crate::store::Blobs,
}

#[cfg(test)]
mod tests {
    use super::WorkError;

    #[test]
    fn work_errors_cross_a_process_boundary_typed_and_a_bug_says_so() {
        for e in [
            WorkError::Infra("the daemon is gone".into()),
            WorkError::Bug("a Harbor trial without its task".into()),
            WorkError::CorruptInput {
                digest: "ab".into(),
                message: "blob ab is corrupt".into(),
            },
            WorkError::Cancelled,
        ] {
            let json = serde_json::to_string(&e).unwrap();
            assert_eq!(
                serde_json::from_str::<WorkError>(&json).unwrap(),
                e,
                "{json}"
            );
        }
        let bug = WorkError::Bug("a Harbor trial without its task".into());
        assert_eq!(
            serde_json::to_value(&bug).unwrap(),
            serde_json::json!({"kind": "bug", "detail": "a Harbor trial without its task"})
        );
        assert!(bug.message().ends_with("(a bench bug: please report it)"));
        assert_eq!(
            WorkError::Infra("the daemon is gone".into()).message(),
            "the daemon is gone"
        );
    }
}
