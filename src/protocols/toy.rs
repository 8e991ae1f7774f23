//! A toy benchmark's protocol, compiled into tests only: what a protocol supplies is its steps
//! and its verdict (resolved when the candidate applies and the task's test command passes),
//! nothing of the prologue or epilogue. Its dataset format is `datasets/toy.rs`; together they
//! are the whole of the toy benchmark (docs/adding-a-benchmark.md).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::grading::{Graded, Grading, Protocol};
use crate::backend::{LocalSandbox, Network, Sandbox, shell_quote};
use crate::jobs::{GradeJob, GradeOutput, GradingTask, PatchInput, ProtocolId};
use crate::parsers::Statuses;
use crate::protocols::GradeError;
use crate::tasks::{Task, TaskBase};
use crate::types::{AuditMode, BackendFacts, BackendKind};

/// The toy protocol's name (its datasets say `format = "toy"`, `datasets/toy.rs`).
pub(crate) const TOY: ProtocolId = ProtocolId::named("toy");

/// The toy benchmark's protocol: resolved when the candidate applies and the task's test command
/// passes.
pub(crate) struct Toy;

#[async_trait]
impl Protocol for Toy {
    fn version(&self) -> u32 {
        1
    }

    fn audited_commands<'j>(&self, job: &'j GradeJob) -> Vec<&'j str> {
        job.task.test_cmds().iter().map(String::as_str).collect()
    }

    async fn steps(&self, g: &Grading<'_>) -> Result<(Graded, String), GradeError> {
        let history_check = g.clean().await?;
        let s = g.sandbox;
        let candidate = format!("{}/candidate.patch", s.paths().state);
        s.put_files(&[(candidate.as_str(), g.patch, 0o644)]).await?;
        let apply = s
            .exec(
                &format!("git apply {}", shell_quote(&candidate)),
                &[],
                g.left(),
                g.cancel,
            )
            .await?;
        let tests = s
            .exec(&g.job.task.test_cmds().join(" ; "), &[], g.left(), g.cancel)
            .await?;
        let output = GradeOutput {
            patch_applied: apply.exit_code == Some(0),
            resolved: apply.exit_code == Some(0) && tests.exit_code == Some(0),
            test_exit_code: tests.exit_code,
            ..Default::default()
        };
        let graded = Graded {
            output,
            statuses: Statuses::default(),
            logs: [("log".to_string(), tests.output)].into(),
        };
        Ok((graded, history_check))
    }
}

/// A toy task: the candidate must create `DONE`.
fn task() -> Task {
    let base = TaskBase::Dir {
        path: "/unused".into(),
        digest: "d".into(),
    };
    Task {
        repo: "toy/toy".into(),
        created_at: "2026-01-01T00:00:00Z".into(),
        problem_statement: "create DONE".into(),
        test_cmds: vec!["test -f DONE".into()],
        ..Task::blank("toy-1".into(), base)
    }
}

/// Grades `patch` on `task` by the job's protocol (found in the registry under its name), in a
/// local sandbox of a one-file repository.
pub(crate) async fn grade(
    task: Task,
    protocol: ProtocolId,
    patch: &str,
    audit: AuditMode,
) -> Graded {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs_err::create_dir_all(&src).unwrap();
    fs_err::write(src.join("README"), "toy\n").unwrap();
    let cancel = CancellationToken::new();
    let sb = LocalSandbox::create(dir.path(), &src, &[], &Network::None, &cancel)
        .await
        .unwrap();
    let facts = BackendFacts {
        kind: BackendKind::Local,
        image: None,
        memory_bytes: None,
        pids: None,
        isolation: "none".into(),
    };
    let job = GradeJob::new(
        protocol,
        facts,
        GradingTask::new(&Arc::new(task)),
        PatchInput::Empty,
        Duration::from_secs(60),
        audit,
    );
    let s: &dyn Sandbox = &sb;
    super::grade(&job, patch.as_bytes(), s, None, &cancel)
        .await
        .unwrap()
}

/// The patch that resolves a toy task.
pub(crate) const MAKES_DONE: &str =
    "diff --git a/DONE b/DONE\nnew file mode 100644\nindex 0000000..e69de29\n";

#[tokio::test]
async fn a_toy_protocol_supplies_only_its_steps_and_verdict() {
    let g = grade(task(), TOY, MAKES_DONE, AuditMode::Flag).await;
    assert!(g.output.resolved, "{:?}", g.output);
    // The epilogue's part, as for every protocol: the history check, the nonce, and the audit
    // over the commands the protocol names (its test command names DONE).
    assert!(!g.output.history_check.is_empty());
    assert_eq!(g.output.nonce.len(), 32);
    assert_eq!(g.output.audit.len(), 1, "{:?}", g.output.audit);
    assert_eq!(g.output.audit[0].path, "DONE");
    assert_eq!(super::version(TOY), 1);

    let g = grade(task(), TOY, "", AuditMode::Flag).await;
    assert!(!g.output.resolved && !g.output.patch_applied);
    assert!(g.output.audit.is_empty());
}

#[tokio::test]
async fn the_skeleton_applies_strict_audits_to_a_toy_protocol_too() {
    let strict = grade(task(), TOY, MAKES_DONE, AuditMode::Strict).await;
    assert!(strict.output.patch_applied && !strict.output.resolved);
}

#[tokio::test]
async fn an_unregistered_protocol_is_a_grading_error_naming_it() {
    let job = GradeJob::new(
        ProtocolId::named("nonesuch"),
        BackendFacts {
            kind: BackendKind::Local,
            image: None,
            memory_bytes: None,
            pids: None,
            isolation: "none".into(),
        },
        GradingTask::new(&Arc::new(task())),
        PatchInput::Empty,
        Duration::from_secs(60),
        AuditMode::Flag,
    );
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs_err::create_dir_all(&src).unwrap();
    let cancel = CancellationToken::new();
    let sb = LocalSandbox::create(dir.path(), &src, &[], &Network::None, &cancel)
        .await
        .unwrap();
    let e = super::grade(&job, b"", &sb, None, &cancel)
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("no protocol named `nonesuch`"),
        "{e}"
    );
    assert_eq!(super::version(ProtocolId::named("nonesuch")), 0);
}
