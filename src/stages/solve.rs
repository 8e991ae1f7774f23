//! Solving on the local backend: a fresh workspace holding only the base tree, the team's
//! harness run in it under the solve timeout, and the patch collected as the diff against the
//! start snapshot. A timeout or a crash is an outcome (graded on what was left), not an error.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use handlebars::Handlebars;
use tokio_util::sync::CancellationToken;

use crate::backend::{Workspace, exec, git_env};
use crate::graph::SolveOutput;
use crate::harness::scrub;
use crate::manifest::{Agent, HarnessKind, Manifest, Team, Topology};
use crate::store::Store;
use crate::tasks::{Task, TaskBase};

use super::{WorkError, WorkOutput};

fn infra(e: impl std::fmt::Display) -> WorkError {
    WorkError::Infra(e.to_string())
}

/// Renders the instruction prompt for a task (solver-visible fields only).
pub fn render_prompt(m: &Manifest, task: &Task) -> Result<String, String> {
    let mut hb = Handlebars::new();
    hb.register_escape_fn(handlebars::no_escape);
    hb.render_template(
        &m.prompts.instruction,
        &serde_json::json!({ "problem_statement": task.problem_statement, "repo": task.repo }),
    )
    .map_err(|e| format!("cannot render the instruction prompt: {e}"))
}

/// Runs `team` on `task` in a local workspace.
pub async fn solve_local(
    store: &Store,
    m: &Manifest,
    task: &Task,
    team: &Team,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<WorkOutput, WorkError> {
    let started = Instant::now();
    let Topology::Solo { worker } = &team.topology else {
        return Err(infra(format!(
            "team `{}`: only the solo topology runs in this build",
            team.name
        )));
    };
    let TaskBase::Dir { path, .. } = &task.base else {
        return Err(infra(
            "the local backend solves tasks with a local base tree only",
        ));
    };
    let ws = Workspace::create(&store.tmp_dir(), path, cancel)
        .await
        .map_err(infra)?;
    let prompt = render_prompt(m, task).map_err(infra)?;
    let prompt_file = ws
        .write_side("prompt.md", prompt.as_bytes())
        .map_err(infra)?;
    let (exit_code, output, timed_out) =
        run_agent(m, worker, task, &ws, &prompt_file, &prompt, timeout, cancel).await?;
    let patch = ws.diff(cancel).await.map_err(infra)?;
    let secrets = scrub::secret_values();
    let (patch_scrubbed, patch_redacted) = scrub::scrub(&patch, &secrets);
    let (trajectory, traj_redacted) = scrub::scrub(&output, &secrets);
    let mut blobs = BTreeMap::new();
    // Nothing unscrubbed is stored, so the grade (a later node, maybe a later apply) reads the
    // scrubbed patch; `redacted` says when that differs from what the agent wrote.
    blobs.insert(
        "patch".to_string(),
        store.put_blob(&patch_scrubbed).map_err(infra)?,
    );
    blobs.insert(
        "trajectory".to_string(),
        store.put_blob(&trajectory).map_err(infra)?,
    );
    let out = SolveOutput {
        patch: crate::key::digest(&patch_scrubbed),
        patch_bytes: patch.len() as u64,
        timed_out,
        solve_error: match (timed_out, exit_code) {
            (false, Some(0)) | (true, _) => None,
            (false, Some(c)) => Some(format!("agent exited with code {c}")),
            (false, None) => Some("agent was killed by a signal".into()),
        },
        exit_code,
        cost_usd: match m.harnesses[&worker.harness].kind {
            HarnessKind::Oracle
            | HarnessKind::Nop
            | HarnessKind::Command
            | HarnessKind::Predictions => Some(0.0),
            _ => None,
        },
        input_tokens: None,
        output_tokens: None,
        redacted: patch_redacted || traj_redacted,
        duration_ms: started.elapsed().as_millis() as u64,
    };
    Ok(WorkOutput {
        output: serde_json::to_value(&out).expect("solve outputs serialize"),
        blobs,
    })
}

#[expect(clippy::too_many_arguments, reason = "the agent's whole context")]
async fn run_agent(
    m: &Manifest,
    agent: &Agent,
    task: &Task,
    ws: &Workspace,
    prompt_file: &std::path::Path,
    prompt: &str,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<(Option<i32>, Vec<u8>, bool), WorkError> {
    let harness = &m.harnesses[&agent.harness];
    match harness.kind {
        HarnessKind::Nop => Ok((Some(0), b"nop: no change\n".to_vec(), false)),
        HarnessKind::Oracle => {
            let p = ws
                .write_side("gold.patch", task.gold_patch.as_bytes())
                .map_err(infra)?;
            let r = ws
                .git(
                    &format!("git apply --whitespace=nowarn {}", p.display()),
                    cancel,
                )
                .await
                .map_err(infra)?;
            if r.cancelled {
                return Err(WorkError::Cancelled);
            }
            Ok((r.exit_code, r.output, false))
        }
        HarnessKind::Predictions => {
            // The "agent" writes the file's patch for this task; no prediction: no change.
            let path = harness.path.as_deref().ok_or_else(|| {
                infra(format!(
                    "harness `{}` has no predictions file",
                    harness.name
                ))
            })?;
            let preds = crate::datasets::predictions::load_predictions(path).map_err(infra)?;
            let Some(patch) = preds
                .get(&task.instance_id)
                .filter(|p| !p.trim().is_empty())
            else {
                return Ok((
                    Some(0),
                    format!(
                        "predictions: {} has no patch for {}\n",
                        path.display(),
                        task.instance_id
                    )
                    .into_bytes(),
                    false,
                ));
            };
            let p = ws
                .write_side("prediction.patch", patch.as_bytes())
                .map_err(infra)?;
            let r = ws
                .git(
                    &format!("git apply --whitespace=nowarn {}", p.display()),
                    cancel,
                )
                .await
                .map_err(infra)?;
            if r.cancelled {
                return Err(WorkError::Cancelled);
            }
            Ok((r.exit_code, r.output, false))
        }
        HarnessKind::Command => {
            let mut hb = Handlebars::new();
            hb.register_escape_fn(handlebars::no_escape);
            hb.set_strict_mode(true);
            let vars = serde_json::json!({
                "script": harness.script.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
                "prompt_file": prompt_file.display().to_string(),
                "model": agent.model.clone().unwrap_or_default(),
                "workdir": ws.dir.display().to_string(),
            });
            let command = hb
                .render_template(harness.command.as_deref().unwrap_or(""), &vars)
                .map_err(|e| {
                    infra(format!(
                        "cannot render the command of harness `{}`: {e}",
                        harness.name
                    ))
                })?;
            let mut env = git_env(&ws.home());
            env.retain(|(k, _)| matches!(k.as_str(), "PATH" | "HOME" | "LANG"));
            env.push((
                "BENCH_PROBLEM_FILE".into(),
                prompt_file.display().to_string(),
            ));
            env.push((
                "BENCH_PROBLEM_STATEMENT".into(),
                task.problem_statement.clone(),
            ));
            env.push(("BENCH_PROMPT".into(), prompt.to_string()));
            env.push(("BENCH_WORKDIR".into(), ws.dir.display().to_string()));
            if let Some(model) = &agent.model {
                env.push(("BENCH_MODEL".into(), model.clone()));
            }
            for var in &harness.env {
                if let Ok(v) = std::env::var(var) {
                    env.push((var.clone(), v));
                }
            }
            let r = exec(&command, &ws.dir, &env, timeout, cancel)
                .await
                .map_err(infra)?;
            if r.cancelled {
                return Err(WorkError::Cancelled);
            }
            Ok((r.exit_code, r.output, r.timed_out))
        }
        other => Err(infra(format!(
            "harness kind {other:?} does not run in this build"
        ))),
    }
}
