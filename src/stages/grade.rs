//! Grading on the local backend: a fresh workspace of the base tree, the hidden test patch, the
//! candidate patch (`git apply --reject --whitespace=nowarn`, as SWE-bench-Live), the test
//! command under a time budget, the task's log parser, and the verdict.
//!
//! Semantics kept from the seed protocol: a candidate patch that does not apply fully cannot be
//! resolved (`patch_applied` is recorded); a test patch that does not apply is a grading error
//! (not a verdict); a run past its budget is unresolved with `timed_out`; a PASS_TO_PASS test
//! missing from the log does not fail the task but is recorded as `pass_to_pass_missing`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::backend::{Workspace, exec, git_env};
use crate::graph::GradeOutput;
use crate::parsers::{Statuses, TestStatus, parse_log};
use crate::store::Store;
use crate::tasks::{Task, TaskBase};

use super::{WorkError, WorkOutput};

fn infra(e: impl std::fmt::Display) -> WorkError {
    WorkError::Infra(e.to_string())
}

/// Applies the verdict rule to parsed statuses.
pub fn verdict(
    task: &Task,
    statuses: &Statuses,
    patch_applied: bool,
    timed_out: bool,
) -> GradeOutput {
    let mut g = GradeOutput {
        patch_applied,
        timed_out,
        ..Default::default()
    };
    for t in &task.fail_to_pass {
        match statuses.get(t) {
            Some(TestStatus::Pass) => g.fail_to_pass_success.push(t.clone()),
            _ => g.fail_to_pass_failure.push(t.clone()),
        }
    }
    for t in &task.pass_to_pass {
        match statuses.get(t) {
            Some(TestStatus::Pass) => g.pass_to_pass_success.push(t.clone()),
            Some(TestStatus::Fail) => g.pass_to_pass_failure.push(t.clone()),
            Some(TestStatus::Skip) => {}
            None => g.pass_to_pass_missing.push(t.clone()),
        }
    }
    g.resolved = patch_applied
        && !timed_out
        && g.fail_to_pass_failure.is_empty()
        && g.pass_to_pass_failure.is_empty();
    g
}

/// Grades `patch` on `task` in a fresh local workspace.
pub async fn grade_local(
    store: &Store,
    task: &Task,
    patch: &[u8],
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<WorkOutput, WorkError> {
    let started = Instant::now();
    let TaskBase::Dir { path, .. } = &task.base else {
        return Err(infra(
            "the local backend grades tasks with a local base tree only",
        ));
    };
    let ws = Workspace::create(&store.tmp_dir(), path, cancel)
        .await
        .map_err(infra)?;
    let mut apply_log = Vec::new();
    let test_patch = ws
        .write_side("test.patch", task.test_patch.as_bytes())
        .map_err(infra)?;
    let r = ws
        .git(
            &format!("git apply --whitespace=nowarn {}", test_patch.display()),
            cancel,
        )
        .await
        .map_err(infra)?;
    if r.cancelled {
        return Err(WorkError::Cancelled);
    }
    apply_log.extend_from_slice(b">>>>> test patch\n");
    apply_log.extend_from_slice(&r.output);
    if r.exit_code != Some(0) {
        return Err(infra(format!(
            "the hidden test patch does not apply: {}",
            String::from_utf8_lossy(&r.output).trim()
        )));
    }
    let empty = patch.iter().all(u8::is_ascii_whitespace);
    let patch_applied = if empty {
        apply_log.extend_from_slice(b">>>>> candidate patch is empty\n");
        true
    } else {
        let p = ws.write_side("candidate.patch", patch).map_err(infra)?;
        let r = ws
            .git(
                &format!("git apply --reject --whitespace=nowarn {}", p.display()),
                cancel,
            )
            .await
            .map_err(infra)?;
        if r.cancelled {
            return Err(WorkError::Cancelled);
        }
        apply_log.extend_from_slice(b">>>>> candidate patch\n");
        apply_log.extend_from_slice(&r.output);
        r.exit_code == Some(0)
    };
    let mut env = git_env(&ws.home());
    env.retain(|(k, _)| matches!(k.as_str(), "PATH" | "HOME" | "LANG"));
    let script = task.test_cmds.join(" ; ");
    let r = exec(&script, &ws.dir, &env, timeout, cancel)
        .await
        .map_err(infra)?;
    if r.cancelled {
        return Err(WorkError::Cancelled);
    }
    let log = String::from_utf8_lossy(&r.output).into_owned();
    let statuses = parse_log(&task.log_parser, &log).map_err(|e| {
        infra(format!(
            "cannot parse the test log of {}: {e}",
            task.instance_id
        ))
    })?;
    let mut out = verdict(task, &statuses, patch_applied, r.timed_out);
    out.empty_patch = empty;
    out.test_exit_code = r.exit_code;
    out.duration_ms = started.elapsed().as_millis() as u64;
    let mut blobs = BTreeMap::new();
    blobs.insert("log".to_string(), store.put_blob(&r.output).map_err(infra)?);
    blobs.insert(
        "apply_log".to_string(),
        store.put_blob(&apply_log).map_err(infra)?,
    );
    let statuses_json = serde_json::to_vec_pretty(&statuses).expect("statuses serialize");
    blobs.insert(
        "statuses".to_string(),
        store.put_blob(&statuses_json).map_err(infra)?,
    );
    blobs.insert("patch".to_string(), store.put_blob(patch).map_err(infra)?);
    Ok(WorkOutput {
        output: serde_json::to_value(&out).expect("grade outputs serialize"),
        blobs,
    })
}
