//! The grade skeleton every protocol shares, and the [`Protocol`] trait each one implements.
//!
//! A grade is: the prologue ([`Grading::new`]: the clock, the per-grade nonce of the log
//! markers, the protocol's time budget), the protocol's steps in the fresh sandbox (which call
//! [`Grading::clean`] to strip and check the history before anything of the candidate runs, and
//! use the shared steps of `steps.rs`: writing the patches, applying the candidate, resetting
//! the hidden tests' paths, applying the hidden tests, reading nonce'd markers), its verdict,
//! then the epilogue ([`Grading::finish`]: the history check, the patch audit and what `strict`
//! makes of it, the nonce, the duration). A protocol supplies only [`Protocol::steps`] (steps
//! and verdict) and what the audit reads ([`Protocol::audited_commands`]).
//!
//! Not here: creating and removing the sandbox (the grade executor, `stages/grade.rs`); which
//! protocol a job names (`mod.rs`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::GradeError;
use crate::backend::{Sandbox, repo};
use crate::jobs::{GradeJob, GradeOutput};
use crate::parsers::Statuses;
use crate::types::AuditMode;

/// A grading protocol: what differs per benchmark when a patch is graded.
#[async_trait]
pub(crate) trait Protocol: Sync {
    /// The implementation version (part of its grades' keys).
    fn version(&self) -> u32;

    /// How long the grade may take (applying, rebuilding and testing together).
    fn budget(&self, job: &GradeJob) -> Duration {
        job.timeout()
    }

    /// A script the backend runs in the task image before it strips the history, once per
    /// image (SWE-bench Pro reads its hidden tests from that history); `None`: nothing.
    fn before_strip(&self, _job: &GradeJob) -> Option<String> {
        None
    }

    /// The commands the patch audit checks the patch against (edits to what they name are
    /// flagged).
    fn audited_commands<'j>(&self, job: &'j GradeJob) -> Vec<&'j str>;

    /// The protocol's steps and verdict in the sandbox of `g`: the outcome (without what the
    /// epilogue fills in) and the history check of [`Grading::clean`].
    async fn steps(&self, g: &Grading<'_>) -> Result<(Graded, String), GradeError>;
}

/// One grade in progress: its inputs, its clock, its nonce and its budget.
pub(crate) struct Grading<'a> {
    pub job: &'a GradeJob,
    /// The candidate patch.
    pub patch: &'a [u8],
    pub sandbox: &'a dyn Sandbox,
    /// The commit the sandbox's history is stripped to (`None`: its HEAD).
    pub base: Option<&'a str>,
    pub cancel: &'a CancellationToken,
    pub started: Instant,
    /// The per-grade random nonce the log markers carry.
    pub nonce: String,
    pub budget: Duration,
}

impl<'a> Grading<'a> {
    /// The prologue: the clock starts, the nonce is drawn, the protocol's budget is set.
    pub fn new(
        protocol: &dyn Protocol,
        job: &'a GradeJob,
        patch: &'a [u8],
        sandbox: &'a dyn Sandbox,
        base: Option<&'a str>,
        cancel: &'a CancellationToken,
    ) -> Grading<'a> {
        Grading {
            started: Instant::now(),
            nonce: nonce(),
            budget: protocol.budget(job),
            job,
            patch,
            sandbox,
            base,
            cancel,
        }
    }

    /// What is left of the budget (at least 100 ms, so a step past it still reports).
    pub fn left(&self) -> Duration {
        self.budget
            .saturating_sub(self.started.elapsed())
            .max(Duration::from_millis(100))
    }

    /// Nothing of the image's history beyond the base is reachable by the patch's code: the
    /// history stripped and checked fail-closed. Returns the check's record.
    pub async fn clean(&self) -> Result<String, GradeError> {
        let (_, history_check) =
            repo::clean(self.sandbox, self.base, "grading sandbox", self.cancel).await?;
        Ok(history_check)
    }

    /// The epilogue: the history check, the patch audit over `commands` (under `strict` a
    /// flagged patch is not resolved), the nonce, the duration.
    pub fn finish(&self, mut graded: Graded, history_check: String, commands: &[&str]) -> Graded {
        let output = &mut graded.output;
        output.history_check = history_check;
        output.audit = super::audit(&String::from_utf8_lossy(self.patch), commands);
        if self.job.audit == AuditMode::Strict && !output.audit.is_empty() {
            output.resolved = false;
        }
        output.nonce = self.nonce.clone();
        output.duration_ms = self.started.elapsed().as_millis() as u64;
        graded
    }
}

/// Grades with `protocol`: prologue, its steps and verdict, epilogue.
pub(crate) async fn grade_with(
    protocol: &dyn Protocol,
    job: &GradeJob,
    patch: &[u8],
    sandbox: &dyn Sandbox,
    base: Option<&str>,
    cancel: &CancellationToken,
) -> Result<Graded, GradeError> {
    let g = Grading::new(protocol, job, patch, sandbox, base, cancel);
    let (graded, history_check) = protocol.steps(&g).await?;
    Ok(g.finish(graded, history_check, &protocol.audited_commands(job)))
}

/// A grade's outcome and what it stores.
#[derive(Debug, Clone)]
pub struct Graded {
    pub output: GradeOutput,
    pub statuses: Statuses,
    /// Named logs: `log` (what was parsed), `test_output`, `apply_log`.
    pub logs: BTreeMap<String, Vec<u8>>,
}

/// A fresh random nonce (128 bits, hex) for one grade's markers.
pub(crate) fn nonce() -> String {
    let mut b = [0u8; 16];
    if let Ok(mut f) = fs_err::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut b);
    }
    if b == [0u8; 16] {
        // No /dev/urandom: the clock and the process, hashed (still unknown to a patch).
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let d = blake3::hash(format!("{t:?}/{}", std::process::id()).as_bytes());
        b.copy_from_slice(&d.as_bytes()[..16]);
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}
