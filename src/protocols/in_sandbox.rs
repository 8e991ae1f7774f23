//! The forgery check's grade in the agent's own sandbox (`[stages.grade] confirm = true`):
//! the same protocol as a clean grade, run where the agent left its files, so a verdict that
//! depends on something outside the patch shows as a disagreement with the clean grades.
//!
//! Not here: taking the clean grades and counting the majority (the grade executor,
//! `stages/grade.rs`); when the check runs (the solve executor's solo team).

use tokio_util::sync::CancellationToken;

use super::{GradeError, grade};
use crate::backend::{Sandbox, SandboxError, shell_quote};
use crate::harness::scrub;
use crate::jobs::{GradeJob, InSandbox};

/// The forgery check's grade of `patch` in the agent's own sandbox, right after its run: the
/// repository goes back to the base (tracked files reset, untracked files removed: the
/// protocol applies the patch again), while ignored files and everything outside the
/// repository stay as the agent left them; then the protocol grades as in a fresh sandbox.
/// A grading failure is recorded as the check's error, not the solve's.
pub async fn in_sandbox(
    job: &GradeJob,
    patch: &[u8],
    s: &dyn Sandbox,
    base: Option<&str>,
    cancel: &CancellationToken,
) -> Result<InSandbox, SandboxError> {
    let reset = match base {
        Some(b) => format!(
            "git reset -q --hard {} && git clean -fdq",
            shell_quote(b)
        ),
        None => "git reset -q --hard \"$(git rev-list --max-parents=0 HEAD | tail -n 1)\" && git clean -fdq".to_string(),
    };
    let r = s
        .exec(&reset, &[], std::time::Duration::from_secs(300), cancel)
        .await?;
    if r.exit_code != Some(0) {
        return Ok(InSandbox {
            resolved: None,
            error: Some(scrub::scrub_str(&format!(
                "cannot reset the agent's repository: {}",
                String::from_utf8_lossy(&r.output).trim()
            ))),
        });
    }
    Ok(match grade(job, patch, s, base, cancel).await {
        Ok(g) => InSandbox {
            resolved: Some(g.output.resolved),
            error: None,
        },
        Err(GradeError::Sandbox(SandboxError::Cancelled)) => {
            return Err(SandboxError::Cancelled);
        }
        Err(e) => InSandbox {
            resolved: None,
            error: Some(scrub::scrub_str(&e.to_string())),
        },
    })
}
