//! Solving on the local backend: teams of agent runs in fresh workspaces holding only the base
//! tree, under the solve timeout, and the patch collected as the diff against the start
//! snapshot.
//!
//! Topologies: `solo` (one worker); `review` (the coder works; a reviewer reads the diff
//! against the issue in its own workspace and answers APPROVE or REQUEST_CHANGES; the coder
//! fixes; up to `rounds` reviews); `best-of` (n workers from the same start, each in its own
//! workspace; a judge reads their diffs and answers `PICK: n`; the other candidates are kept as
//! artifacts). A timeout or a crash is an outcome (graded on what was left), not an error; a run
//! that never reached its model (no token used and an error) is an infrastructure error.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use handlebars::Handlebars;
use tokio_util::sync::CancellationToken;

use crate::backend::{Workspace, exec, git_env};
use crate::graph::SolveOutput;
use crate::harness::scrub;
use crate::harness::usage::{Usage, parse_usage};
use crate::manifest::{Agent, HarnessKind, Manifest, Team, Topology};
use crate::store::Store;
use crate::tasks::{Task, TaskBase};

use super::{WorkError, WorkOutput};

fn infra(e: impl std::fmt::Display) -> WorkError {
    WorkError::Infra(e.to_string())
}

fn render(template: &str, vars: &serde_json::Value) -> Result<String, String> {
    let mut hb = Handlebars::new();
    hb.register_escape_fn(handlebars::no_escape);
    hb.render_template(template, vars)
        .map_err(|e| format!("cannot render a prompt: {e}"))
}

/// Renders the instruction prompt for a task (solver-visible fields only).
pub fn render_prompt(m: &Manifest, task: &Task) -> Result<String, String> {
    render(
        &m.prompts.instruction,
        &serde_json::json!({ "problem_statement": task.problem_statement, "repo": task.repo }),
    )
}

/// One agent run.
struct AgentRun {
    /// Files the agent left in its home directory (relative path, content), capped.
    files: Vec<(String, Vec<u8>)>,
    exit_code: Option<i32>,
    output: Vec<u8>,
    timed_out: bool,
    usage: Option<Usage>,
    /// Cost of this run: `None` when unknown.
    cost_usd: Option<f64>,
}

impl AgentRun {
    fn final_message(&self) -> String {
        match &self.usage {
            Some(u) if !u.final_message.is_empty() => u.final_message.clone(),
            _ => String::from_utf8_lossy(&self.output).into_owned(),
        }
    }
}

/// The team's state as runs accumulate.
struct Ledger {
    trajectory: Vec<u8>,
    cost: Option<f64>,
    input_tokens: u64,
    output_tokens: u64,
    deadline: Instant,
    timed_out: bool,
    crashed: Option<String>,
}

impl Ledger {
    fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    fn record(&mut self, role: &str, agent: &Agent, run: &AgentRun) {
        self.trajectory
            .extend_from_slice(format!("===== {role}: {agent} =====\n").as_bytes());
        self.trajectory.extend_from_slice(&run.output);
        if !run.output.ends_with(b"\n") {
            self.trajectory.push(b'\n');
        }
        // The agent's own run files (conversation logs under its home, e.g. ~/.claude/projects
        // or ~/.codex/sessions), as written so far.
        for (path, bytes) in &run.files {
            self.trajectory.extend_from_slice(
                format!("----- {role} file {path} ({} bytes) -----\n", bytes.len()).as_bytes(),
            );
            self.trajectory.extend_from_slice(bytes);
            if !bytes.ends_with(b"\n") {
                self.trajectory.push(b'\n');
            }
        }
        self.cost = match (self.cost, run.cost_usd) {
            (Some(a), Some(b)) if !run.timed_out => Some(a + b),
            _ => None,
        };
        if let Some(u) = &run.usage {
            self.input_tokens += u.input_tokens;
            self.output_tokens += u.output_tokens;
        }
        if run.timed_out {
            self.timed_out = true;
        } else if run.exit_code != Some(0) && self.crashed.is_none() {
            self.crashed = Some(match run.exit_code {
                Some(c) => format!("{role} exited with code {c}"),
                None => format!("{role} was killed by a signal"),
            });
        }
    }
}

/// Runs `team` on `task` in local workspaces.
pub async fn solve_local(
    store: &Store,
    m: &Manifest,
    task: &Task,
    team: &Team,
    timeout: Duration,
    budget_share: Option<f64>,
    cancel: &CancellationToken,
) -> Result<WorkOutput, WorkError> {
    let started = Instant::now();
    let TaskBase::Dir { path, .. } = &task.base else {
        return Err(infra(
            "the local backend solves tasks with a local base tree only",
        ));
    };
    let tmp = store.tmp_dir();
    let new_ws = || Workspace::create(&tmp, path, cancel);
    let prompt = render_prompt(m, task).map_err(infra)?;
    let mut ledger = Ledger {
        trajectory: Vec::new(),
        cost: Some(0.0),
        input_tokens: 0,
        output_tokens: 0,
        deadline: Instant::now() + timeout,
        timed_out: false,
        crashed: None,
    };
    let mut blobs = BTreeMap::new();
    let ctx = RunCtx {
        m,
        task,
        budget_share,
        cancel,
    };
    let patch: Vec<u8> = match &team.topology {
        Topology::Solo { worker } => {
            let ws = new_ws().await.map_err(infra)?;
            let run = ctx.run(worker, &ws, &prompt, ledger.remaining()).await?;
            ledger.record("worker", worker, &run);
            ws.diff(cancel).await.map_err(infra)?
        }
        Topology::Review {
            coder,
            reviewer,
            rounds,
        } => {
            let ws = new_ws().await.map_err(infra)?;
            let run = ctx.run(coder, &ws, &prompt, ledger.remaining()).await?;
            ledger.record("coder", coder, &run);
            for round in 1..=*rounds {
                if ledger.timed_out {
                    break;
                }
                let diff = ws.diff(cancel).await.map_err(infra)?;
                let review_ws = new_ws().await.map_err(infra)?;
                if !diff.is_empty() {
                    let p = review_ws
                        .write_side("candidate.patch", &diff)
                        .map_err(infra)?;
                    review_ws
                        .git(
                            &format!("git apply --whitespace=nowarn {}", p.display()),
                            cancel,
                        )
                        .await
                        .map_err(infra)?;
                }
                let review_prompt = render(
                    &m.prompts.review,
                    &serde_json::json!({
                        "problem_statement": task.problem_statement,
                        "diff": String::from_utf8_lossy(&diff),
                    }),
                )
                .map_err(infra)?;
                let review = ctx
                    .run(reviewer, &review_ws, &review_prompt, ledger.remaining())
                    .await?;
                ledger.record(&format!("reviewer (round {round})"), reviewer, &review);
                let verdict = review.final_message();
                if ledger.timed_out || approves(&verdict) {
                    break;
                }
                let fix_prompt = render(
                    &m.prompts.fix,
                    &serde_json::json!({
                        "problem_statement": task.problem_statement,
                        "review": verdict,
                    }),
                )
                .map_err(infra)?;
                let fix = ctx.run(coder, &ws, &fix_prompt, ledger.remaining()).await?;
                ledger.record(&format!("coder (fix {round})"), coder, &fix);
            }
            ws.diff(cancel).await.map_err(infra)?
        }
        Topology::BestOf { workers, judge } => {
            let mut candidates = Vec::new();
            for (i, w) in workers.iter().enumerate() {
                let ws = new_ws().await.map_err(infra)?;
                if !ledger.timed_out {
                    let run = ctx.run(w, &ws, &prompt, ledger.remaining()).await?;
                    ledger.record(&format!("worker {}", i + 1), w, &run);
                }
                let diff = ws.diff(cancel).await.map_err(infra)?;
                blobs.insert(
                    format!("candidate_{}", i + 1),
                    store
                        .put_blob(&scrub::scrub(&diff, &scrub::secret_values()).0)
                        .map_err(infra)?,
                );
                candidates.push(diff);
            }
            let nonempty: Vec<usize> = (0..candidates.len())
                .filter(|i| !candidates[*i].is_empty())
                .collect();
            let pick = if ledger.timed_out || nonempty.len() <= 1 {
                nonempty.first().copied().unwrap_or(0)
            } else {
                let listing: String = candidates
                    .iter()
                    .enumerate()
                    .map(|(i, d)| {
                        format!(
                            "<candidate number=\"{}\">\n{}\n</candidate>\n",
                            i + 1,
                            String::from_utf8_lossy(d)
                        )
                    })
                    .collect();
                let judge_prompt = render(
                    &m.prompts.judge,
                    &serde_json::json!({
                        "problem_statement": task.problem_statement,
                        "candidates": listing,
                    }),
                )
                .map_err(infra)?;
                let judge_ws = new_ws().await.map_err(infra)?;
                let run = ctx
                    .run(judge, &judge_ws, &judge_prompt, ledger.remaining())
                    .await?;
                ledger.record("judge", judge, &run);
                picked(&run.final_message(), candidates.len())
                    .filter(|i| !candidates[*i].is_empty())
                    .unwrap_or(nonempty[0])
            };
            blobs.insert(
                "picked".to_string(),
                store
                    .put_blob(format!("{}\n", pick + 1).as_bytes())
                    .map_err(infra)?,
            );
            candidates.swap_remove(pick)
        }
    };
    let stored = store_scrubbed(store, &mut blobs, &patch, &ledger.trajectory)?;
    let out = SolveOutput {
        patch: stored.patch,
        patch_bytes: stored.patch_bytes,
        timed_out: ledger.timed_out,
        solve_error: if ledger.timed_out {
            None
        } else {
            ledger.crashed.clone()
        },
        exit_code: None,
        cost_usd: if ledger.timed_out { None } else { ledger.cost },
        input_tokens: Some(ledger.input_tokens),
        output_tokens: Some(ledger.output_tokens),
        redacted: stored.redacted,
        duration_ms: started.elapsed().as_millis() as u64,
    };
    Ok(WorkOutput {
        output: serde_json::to_value(&out).expect("solve outputs serialize"),
        blobs,
    })
}

/// What a solve stored: the scrubbed patch's digest and size, and whether scrubbing changed
/// the patch or the trajectory.
pub(crate) struct Stored {
    pub patch: String,
    pub patch_bytes: u64,
    pub redacted: bool,
}

/// Scrubs a solve's patch and trajectory and stores them as the `patch` and `trajectory`
/// blobs. Nothing unscrubbed is stored, so the grade (a later node, maybe a later apply) reads
/// the scrubbed patch; `redacted` says when that differs from what the agent wrote.
pub(crate) fn store_scrubbed(
    store: &Store,
    blobs: &mut BTreeMap<String, String>,
    patch: &[u8],
    trajectory: &[u8],
) -> Result<Stored, WorkError> {
    let secrets = scrub::secret_values();
    let (patch, patch_redacted) = scrub::scrub(patch, &secrets);
    let (trajectory, traj_redacted) = scrub::scrub(trajectory, &secrets);
    blobs.insert("patch".to_string(), store.put_blob(&patch).map_err(infra)?);
    blobs.insert(
        "trajectory".to_string(),
        store.put_blob(&trajectory).map_err(infra)?,
    );
    Ok(Stored {
        patch: crate::key::digest(&patch),
        patch_bytes: patch.len() as u64,
        redacted: patch_redacted || traj_redacted,
    })
}

/// Files under an agent's home, sorted, at most 64 MiB in all (the rest is noted, not kept).
fn home_files(home: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => walk(&p, out),
                Ok(t) if t.is_file() => out.push(p),
                _ => {}
            }
        }
    }
    let mut paths = Vec::new();
    walk(home, &mut paths);
    paths.sort();
    let mut budget: usize = 64 << 20;
    let mut out = Vec::new();
    for p in paths {
        let rel = p.strip_prefix(home).unwrap_or(&p).display().to_string();
        match std::fs::read(&p) {
            Ok(b) if b.len() <= budget => {
                budget -= b.len();
                out.push((rel, b));
            }
            Ok(b) => out.push((
                rel,
                format!("[bench: {} bytes not kept]", b.len()).into_bytes(),
            )),
            Err(_) => {}
        }
    }
    out
}

/// Whether a reviewer's message approves: an `APPROVE` line and no `REQUEST_CHANGES`.
pub fn approves(message: &str) -> bool {
    let upper = message.to_uppercase();
    !upper.contains("REQUEST_CHANGES")
        && upper
            .lines()
            .any(|l| l.trim().trim_matches(['*', '`', '.']).trim() == "APPROVE")
}

/// The 0-based candidate a judge picked (`PICK: n`, 1-based), if valid.
pub fn picked(message: &str, n: usize) -> Option<usize> {
    let upper = message.to_uppercase();
    let at = upper.rfind("PICK:")?;
    let digits: String = upper[at + 5..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let k: usize = digits.parse().ok()?;
    (1..=n).contains(&k).then(|| k - 1)
}

struct RunCtx<'a> {
    m: &'a Manifest,
    task: &'a Task,
    budget_share: Option<f64>,
    cancel: &'a CancellationToken,
}

impl RunCtx<'_> {
    /// An "agent" that applies a given patch (the oracle, a predictions file).
    async fn apply_patch(
        &self,
        ws: &Workspace,
        name: &str,
        patch: &[u8],
    ) -> Result<AgentRun, WorkError> {
        let p = ws.write_side(name, patch).map_err(infra)?;
        let r = ws
            .git(
                &format!("git apply --whitespace=nowarn {}", p.display()),
                self.cancel,
            )
            .await
            .map_err(infra)?;
        if r.cancelled {
            return Err(WorkError::Cancelled);
        }
        Ok(AgentRun {
            files: Vec::new(),
            exit_code: r.exit_code,
            output: r.output,
            timed_out: false,
            usage: None,
            cost_usd: Some(0.0),
        })
    }

    /// Runs one agent in `ws` with `prompt`.
    async fn run(
        &self,
        agent: &Agent,
        ws: &Workspace,
        prompt: &str,
        timeout: Duration,
    ) -> Result<AgentRun, WorkError> {
        let harness = &self.m.harnesses[&agent.harness];
        let prompt_file = ws
            .write_side("prompt.md", prompt.as_bytes())
            .map_err(infra)?;
        if timeout.is_zero() {
            return Ok(AgentRun {
                files: Vec::new(),
                exit_code: None,
                output: b"[bench: no time left for this run]\n".to_vec(),
                timed_out: true,
                usage: None,
                cost_usd: None,
            });
        }
        match harness.kind {
            HarnessKind::Nop => Ok(AgentRun {
                files: Vec::new(),
                exit_code: Some(0),
                output: b"nop: no change\n".to_vec(),
                timed_out: false,
                usage: None,
                cost_usd: Some(0.0),
            }),
            HarnessKind::Oracle => {
                self.apply_patch(ws, "gold.patch", self.task.gold_patch.as_bytes())
                    .await
            }
            HarnessKind::Predictions => {
                // The "agent" writes the file's patch for this task; no prediction: no change.
                let Some(patch) =
                    crate::datasets::predictions::prediction_for(harness, &self.task.instance_id)
                        .map_err(infra)?
                else {
                    return Ok(AgentRun {
                        files: Vec::new(),
                        exit_code: Some(0),
                        output: format!("predictions: no patch for {}\n", self.task.instance_id)
                            .into_bytes(),
                        timed_out: false,
                        usage: None,
                        cost_usd: Some(0.0),
                    });
                };
                self.apply_patch(ws, "prediction.patch", patch.as_bytes())
                    .await
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
                    "side_dir": ws.side().display().to_string(),
                    "max_cost_usd": self.budget_share.map(|b| format!("{b:.4}")).unwrap_or_default(),
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
                    self.task.problem_statement.clone(),
                ));
                env.push(("BENCH_PROMPT".into(), prompt.to_string()));
                env.push(("BENCH_WORKDIR".into(), ws.dir.display().to_string()));
                env.push(("BENCH_SIDE_DIR".into(), ws.side().display().to_string()));
                env.push(("IS_SANDBOX".into(), "1".into()));
                if let Some(model) = &agent.model {
                    env.push(("BENCH_MODEL".into(), model.clone()));
                }
                if let Some(b) = self.budget_share {
                    env.push(("BENCH_MAX_COST_USD".into(), format!("{b:.4}")));
                }
                for var in &harness.env {
                    if let Ok(v) = std::env::var(var) {
                        env.push((var.clone(), v));
                    }
                }
                let r = exec(&command, &ws.dir, &env, timeout, self.cancel)
                    .await
                    .map_err(infra)?;
                if r.cancelled {
                    return Err(WorkError::Cancelled);
                }
                let text = String::from_utf8_lossy(&r.output);
                let usage = harness
                    .usage
                    .and_then(|f| parse_usage(f, &text, agent.model.as_deref(), &self.m.pricing));
                if let (Some(_), Some(u)) = (harness.usage, &usage)
                    && !r.timed_out
                    && u.tokens() == 0
                    && (u.is_error || r.exit_code != Some(0))
                {
                    return Err(infra(format!(
                        "harness `{}` never reached its model (no token used): {}",
                        harness.name,
                        scrub::scrub(u.final_message.as_bytes(), &scrub::secret_values())
                            .0
                            .escape_ascii()
                    )));
                }
                let cost_usd = match (harness.usage, &usage) {
                    (None, _) if agent.model.is_none() => Some(0.0),
                    (None, _) => None,
                    (Some(_), Some(u)) => u.cost_usd,
                    (Some(_), None) => None,
                };
                Ok(AgentRun {
                    files: home_files(&ws.home()),
                    exit_code: r.exit_code,
                    output: r.output,
                    timed_out: r.timed_out,
                    usage,
                    cost_usd,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn review_verdicts() {
        assert!(approves("Looks good.\nAPPROVE\n"));
        assert!(approves("**APPROVE**"));
        assert!(!approves("REQUEST_CHANGES\nAPPROVE once fixed"));
        assert!(!approves("I would not approve this"));
    }

    #[test]
    fn judge_picks() {
        assert_eq!(picked("I think PICK: 2", 3), Some(1));
        assert_eq!(picked("pick: 3.", 3), Some(2));
        assert_eq!(picked("PICK: 4", 3), None);
        assert_eq!(picked("no idea", 3), None);
    }
}
