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
    let history_check = g.clean().await?;
    let mut apply_log = Vec::new();
    let setup_timed_out = setup(g, &mut apply_log).await?;
    let (empty, patch_applied) = candidate(g, &mut apply_log).await?;
    test_files(g, &mut apply_log).await?;
    let (log, exit, timed_out) = verify(g, setup_timed_out).await?;
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

/// Step 1: `setup`, in the fresh repository (as brain bench runs it before its tool), its
/// output added to `apply_log`. Returns whether it used the whole budget; a failing `setup` is
/// a grading error naming its output.
async fn setup(g: &Grading<'_>, apply_log: &mut Vec<u8>) -> Result<bool, GradeError> {
    let task = &g.job.task;
    let setup = task.setup_cmds().join("\n");
    if setup.trim().is_empty() {
        return Ok(false);
    }
    let workdir = &g.sandbox.paths().workdir;
    let r = run(
        g.sandbox,
        &format!("cd {}\n{setup}\n", shell_quote(workdir)),
        g.left(),
        g.cancel,
    )
    .await?;
    apply_log.extend_from_slice(b">>>>> setup\n");
    apply_log.extend_from_slice(&r.output);
    if r.timed_out {
        return Ok(true);
    }
    if r.exit_code != Some(0) {
        return Err(GradeError::Task(format!(
            "the setup of {} failed (exit {:?}): {}",
            task.instance_id(),
            r.exit_code,
            String::from_utf8_lossy(&r.output).trim()
        )));
    }
    Ok(false)
}

/// Step 2: the test patch and the candidate written to the state directory, then the
/// candidate applied (`git apply --reject`), its output added to `apply_log`. Returns whether
/// the candidate is empty and whether it applied fully (an empty one counts as applied).
async fn candidate(g: &Grading<'_>, apply_log: &mut Vec<u8>) -> Result<(bool, bool), GradeError> {
    let (patch, s) = (g.patch, g.sandbox);
    let state = &s.paths().state;
    let empty = patch.iter().all(u8::is_ascii_whitespace);
    let candidate_path = format!("{state}/candidate.patch");
    let test_patch_path = format!("{state}/test.patch");
    let mut files: Vec<(&str, &[u8], u32)> = vec![(
        test_patch_path.as_str(),
        g.job.task.test_patch().as_bytes(),
        0o644,
    )];
    if !empty {
        files.push((candidate_path.as_str(), patch, 0o644));
    }
    s.put_files(&files).await?;
    if empty {
        apply_log.extend_from_slice(b">>>>> candidate patch is empty\n");
        return Ok((true, true));
    }
    let r = run(
        s,
        &format!(
            "git apply --reject --whitespace=nowarn {}",
            shell_quote(&candidate_path)
        ),
        g.left(),
        g.cancel,
    )
    .await?;
    apply_log.extend_from_slice(b">>>>> candidate patch\n");
    apply_log.extend_from_slice(&r.output);
    Ok((false, r.exit_code == Some(0)))
}

/// Step 3, `git checkout <commit_fix> -- <test files>`: the paths the test patch touches reset
/// to the base, then the test patch (written by [`candidate`]) applied, their output added to
/// `apply_log`. Either failing is a grading error.
async fn test_files(g: &Grading<'_>, apply_log: &mut Vec<u8>) -> Result<(), GradeError> {
    let (task, s) = (&g.job.task, g.sandbox);
    let id = task.instance_id();
    let r = run(
        s,
        &reset_script(&patch_files(task.test_patch())),
        g.left(),
        g.cancel,
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
    if task.test_patch().trim().is_empty() {
        return Ok(());
    }
    let test_patch_path = format!("{}/test.patch", s.paths().state);
    let r = run(
        s,
        &format!(
            "git apply --whitespace=nowarn {}",
            shell_quote(&test_patch_path)
        ),
        g.left(),
        g.cancel,
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
    Ok(())
}

/// Step 4: `verify`, its exit code read from the nonce'd end marker (not run when `setup`
/// used the whole budget). Returns its log, its exit code and whether the grade timed out.
async fn verify(
    g: &Grading<'_>,
    setup_timed_out: bool,
) -> Result<(Vec<u8>, Option<i32>, bool), GradeError> {
    if setup_timed_out {
        return Ok((
            b"[bench: setup used the whole time budget]\n".to_vec(),
            None,
            true,
        ));
    }
    let nonce = &g.nonce;
    let start = format!("BENCH-{nonce}-VERIFY-START");
    let end = format!("BENCH-{nonce}-VERIFY-END ");
    let verify = g.job.task.test_cmds().join("\n");
    let script = format!(
        "cd {}\nprintf '\\n%s\\n' '{start}'\n( {verify}\n)\nprintf '\\n%s%s\\n' '{end}' \"$?\"\n",
        shell_quote(&g.sandbox.paths().workdir)
    );
    let r = run(g.sandbox, &script, g.left(), g.cancel).await?;
    let (log, end_line) = between(&r.output, &start, &end);
    Ok((
        log,
        end_line.and_then(|e| e.trim().parse::<i32>().ok()),
        r.timed_out,
    ))
}
