//! brain bench's grading (seed 004, `brain bench run`), over the [`Sandbox`] trait: a fresh
//! repository at `commit_before`, `setup`, the candidate (where brain bench's tool worked), then
//! `git checkout <commit_fix> -- <test_files_from_fix>` and `verify`: exit code 0 passes.
//!
//! bench's locked protocol on top, as in the other protocols:
//! - the history is stripped to the base and checked fail-closed (`repo::clean`) before
//!   anything runs (local sandboxes hold one commit anyway);
//! - the hidden test files are the task's test patch (the diff of those files from
//!   `commit_before` to `commit_fix`, the same bytes the checkout writes), applied after every
//!   path it touches is reset to the base (created ones removed), so a candidate that edits or
//!   pre-creates them changes nothing; `.git` locks and Python bytecode are removed first;
//! - `verify`'s exit code is read from a nonce'd end marker, so a candidate that prints a forged
//!   marker or exits early from a shell hook cannot report 0;
//! - a candidate that does not apply fully (`git apply --reject`) is unresolved;
//! - past the stage's timeout, unresolved with `timed_out`.
//!
//! `setup` failing is a grading error naming its output (it runs before the candidate, so it
//! says nothing about the patch). Grading sandboxes have no network: a `setup` that downloads
//! works in the agent's workspace (which has) but not here.
//!
//! Not here: reading the task files (`datasets/brain_bench.rs`).

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::GradeError;
use super::grading::{Graded, Grading, Protocol};
use super::paths::patch_files;
use super::steps::{between, reset_script, run};
use crate::backend::shell_quote;
use crate::jobs::{GradeJob, GradeOutput};
use crate::parsers::Statuses;

pub const VERSION: u32 = 1;

/// brain bench's protocol.
pub(crate) struct BrainBench;

#[async_trait]
impl Protocol for BrainBench {
    fn version(&self) -> u32 {
        VERSION
    }

    fn audited_commands<'j>(&self, job: &'j GradeJob) -> Vec<&'j str> {
        let task = &job.task;
        [task.setup_cmds(), task.test_cmds()]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect()
    }

    async fn steps(&self, g: &Grading<'_>) -> Result<(Graded, String), GradeError> {
        steps(g).await
    }
}

/// Grades the candidate on a brain bench task: setup, the candidate, the test files from the
/// fix, `verify`.
async fn steps(g: &Grading<'_>) -> Result<(Graded, String), GradeError> {
    let (job, patch, s, cancel) = (g.job, g.patch, g.sandbox, g.cancel);
    let task = &job.task;
    let id = task.instance_id();
    let left = || g.left();
    let history_check = g.clean().await?;
    let nonce = &g.nonce;
    let state = s.paths().state.clone();
    let workdir = s.paths().workdir.clone();
    let mut apply_log = Vec::new();

    // 1. setup, in the fresh repository (as brain bench runs it before its tool).
    let setup = task.setup_cmds().join("\n");
    let mut timed_out = false;
    if !setup.trim().is_empty() {
        let r = run(
            s,
            &format!("cd {}\n{setup}\n", shell_quote(&workdir)),
            left(),
            cancel,
        )
        .await?;
        apply_log.extend_from_slice(b">>>>> setup\n");
        apply_log.extend_from_slice(&r.output);
        if r.timed_out {
            timed_out = true;
        } else if r.exit_code != Some(0) {
            return Err(GradeError::Task(format!(
                "the setup of {id} failed (exit {:?}): {}",
                r.exit_code,
                String::from_utf8_lossy(&r.output).trim()
            )));
        }
    }

    // 2. the candidate.
    let empty = patch.iter().all(u8::is_ascii_whitespace);
    let candidate_path = format!("{state}/candidate.patch");
    let test_patch_path = format!("{state}/test.patch");
    let mut files: Vec<(&str, &[u8], u32)> = vec![(
        test_patch_path.as_str(),
        task.test_patch().as_bytes(),
        0o644,
    )];
    if !empty {
        files.push((candidate_path.as_str(), patch, 0o644));
    }
    s.put_files(&files).await?;
    let patch_applied = if empty {
        apply_log.extend_from_slice(b">>>>> candidate patch is empty\n");
        true
    } else {
        let r = run(
            s,
            &format!(
                "git apply --reject --whitespace=nowarn {}",
                shell_quote(&candidate_path)
            ),
            left(),
            cancel,
        )
        .await?;
        apply_log.extend_from_slice(b">>>>> candidate patch\n");
        apply_log.extend_from_slice(&r.output);
        r.exit_code == Some(0)
    };

    // 3. `git checkout <commit_fix> -- <test files>`: the paths reset, then their fix version.
    let r = run(
        s,
        &reset_script(&patch_files(task.test_patch())),
        left(),
        cancel,
    )
    .await?;
    apply_log.extend_from_slice(b">>>>> reset before the test files\n");
    apply_log.extend_from_slice(&r.output);
    if r.exit_code != Some(0) {
        return Err(GradeError::Task(format!(
            "cannot reset the test files of {id}: {}",
            String::from_utf8_lossy(&r.output).trim()
        )));
    }
    if !task.test_patch().trim().is_empty() {
        let r = run(
            s,
            &format!(
                "git apply --whitespace=nowarn {}",
                shell_quote(&test_patch_path)
            ),
            left(),
            cancel,
        )
        .await?;
        apply_log.extend_from_slice(b">>>>> test files from the fix\n");
        apply_log.extend_from_slice(&r.output);
        if r.exit_code != Some(0) {
            return Err(GradeError::Task(format!(
                "the test files of {id} do not apply to its base: {}",
                String::from_utf8_lossy(&r.output).trim()
            )));
        }
    }

    // 4. verify: exit 0 passes.
    let start = format!("BENCH-{nonce}-VERIFY-START");
    let end = format!("BENCH-{nonce}-VERIFY-END ");
    let verify = task.test_cmds().join("\n");
    let script = format!(
        "cd {}\nprintf '\\n%s\\n' '{start}'\n( {verify}\n)\nprintf '\\n%s%s\\n' '{end}' \"$?\"\n",
        shell_quote(&workdir)
    );
    let (log, exit) = if timed_out {
        (
            b"[bench: setup used the whole time budget]\n".to_vec(),
            None,
        )
    } else {
        let r = run(s, &script, left(), cancel).await?;
        timed_out = r.timed_out;
        let (log, end_line) = between(&r.output, &start, &end);
        (log, end_line.and_then(|e| e.trim().parse::<i32>().ok()))
    };
    let resolved = patch_applied && !timed_out && exit == Some(0);
    let output = GradeOutput {
        resolved,
        patch_applied,
        empty_patch: empty,
        timed_out,
        test_exit_code: exit,
        ..Default::default()
    };
    Ok((
        Graded {
            output,
            statuses: Statuses::default(),
            logs: BTreeMap::from([
                ("log".to_string(), log),
                ("apply_log".to_string(), apply_log),
            ]),
        },
        history_check,
    ))
}
