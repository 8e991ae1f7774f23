//! Solving: teams of agent runs, each in a fresh sandbox holding only the task's base, under the
//! solve timeout; the patch is the diff against the start snapshot. A sandbox is a local git
//! workspace (local backend) or a container of the agent's image whose history was stripped
//! (docker backend, see `docker.rs`); the team logic below is the same on both.
//!
//! Topologies: `solo` (one worker); `review` (the coder works; a reviewer reads the diff
//! against the issue in its own sandbox and answers APPROVE or REQUEST_CHANGES; the coder
//! fixes; up to `rounds` reviews); `best-of` (n workers from the same start, each in its own
//! sandbox; a judge reads their diffs and answers `PICK: n`; the other candidates are kept as
//! artifacts). A timeout or a crash is an outcome (graded on what was left), not an error; a run
//! that never reached its model (no model call in what it recorded, see `harness::evidence`) is
//! an infrastructure error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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

/// Renders a team prompt (review, fix, judge): the problem statement and one more variable.
fn render_about(template: &str, task: &Task, name: &str, value: &str) -> Result<String, WorkError> {
    let mut vars = serde_json::Map::new();
    vars.insert(
        "problem_statement".into(),
        task.problem_statement.clone().into(),
    );
    vars.insert(name.into(), value.into());
    render(template, &serde_json::Value::Object(vars)).map_err(infra)
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
    /// A solo worker's exit code.
    exit_code: Option<i32>,
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
    let TaskBase::Dir { path, .. } = &task.base else {
        return Err(infra(
            "the local backend solves tasks with a local base tree only",
        ));
    };
    let place = Place::Local {
        tmp: store.tmp_dir(),
        base: path,
    };
    solve_team(store, m, task, team, timeout, budget_share, &place, cancel).await
}

/// Where a team's sandboxes come from.
pub(crate) enum Place<'a> {
    /// Fresh git workspaces under `tmp` holding the base tree at `base`.
    Local { tmp: PathBuf, base: &'a Path },
    /// Fresh containers, prepared by [`super::docker::DockerPlace::sandbox`].
    Docker(super::docker::DockerPlace<'a>),
}

impl Place<'_> {
    /// A fresh sandbox for `agent`'s harness (on docker, a container of its image).
    async fn sandbox(
        &self,
        agent: &Agent,
        cancel: &CancellationToken,
    ) -> Result<Sandbox, WorkError> {
        match self {
            Place::Local { tmp, base } => Workspace::create(tmp, base, cancel)
                .await
                .map(Sandbox::Local)
                .map_err(infra),
            Place::Docker(d) => d.sandbox(&agent.harness, cancel).await.map(Sandbox::Docker),
        }
    }
}

/// One agent's sandbox: a local workspace or a prepared container.
pub(crate) enum Sandbox {
    Local(Workspace),
    Docker(super::docker::DockerSandbox),
}

impl Sandbox {
    /// Applies a patch to the repository with `git apply`: exit code and output.
    async fn apply(
        &self,
        name: &str,
        patch: &[u8],
        cancel: &CancellationToken,
    ) -> Result<(Option<i32>, Vec<u8>), WorkError> {
        match self {
            Sandbox::Local(ws) => {
                let p = ws.write_side(name, patch).map_err(infra)?;
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
                Ok((r.exit_code, r.output))
            }
            Sandbox::Docker(s) => s.apply(name, patch, cancel).await,
        }
    }

    /// Everything changed since the start.
    async fn diff(&self, cancel: &CancellationToken) -> Result<Vec<u8>, WorkError> {
        match self {
            Sandbox::Local(ws) => ws.diff(cancel).await.map_err(infra),
            Sandbox::Docker(s) => s.diff(cancel).await,
        }
    }

    /// Writes a file beside the repository (not in it); returns its path as the agent sees it.
    /// `mode` applies in a container; locally only prompts are written (a harness's script runs
    /// from its own path).
    async fn write_side(&self, name: &str, bytes: &[u8], mode: u32) -> Result<String, WorkError> {
        match self {
            Sandbox::Local(ws) => Ok(ws
                .write_side(name, bytes)
                .map_err(infra)?
                .display()
                .to_string()),
            Sandbox::Docker(s) => s.write_side(name, bytes, mode).await,
        }
    }

    /// The repository's path, the side directory's, and the environment every agent run gets
    /// (HOME, PATH, LANG, git identity).
    fn layout(&self) -> (String, String, Vec<(String, String)>) {
        match self {
            Sandbox::Local(ws) => {
                let mut env = git_env(&ws.home());
                env.retain(|(k, _)| matches!(k.as_str(), "PATH" | "HOME" | "LANG"));
                (
                    ws.dir.display().to_string(),
                    ws.side().display().to_string(),
                    env,
                )
            }
            Sandbox::Docker(s) => s.layout(),
        }
    }

    /// Runs an agent's command line in the repository.
    async fn exec(
        &self,
        command: &str,
        env: &[(String, String)],
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<crate::backend::ExecResult, WorkError> {
        let r = match self {
            Sandbox::Local(ws) => exec(command, &ws.dir, env, timeout, cancel)
                .await
                .map_err(infra)?,
            Sandbox::Docker(s) => s.exec(command, env, timeout, cancel).await?,
        };
        if r.cancelled {
            return Err(WorkError::Cancelled);
        }
        Ok(r)
    }

    /// The files the agent left in its home directory (its own run logs).
    async fn home_files(&self) -> Vec<(String, Vec<u8>)> {
        match self {
            Sandbox::Local(ws) => home_files(&ws.home()),
            Sandbox::Docker(s) => s.home_files(HOME_FILES_CAP).await,
        }
    }

    /// Removes the sandbox.
    async fn close(self) -> Result<(), WorkError> {
        match self {
            Sandbox::Local(ws) => {
                drop(ws);
                Ok(())
            }
            Sandbox::Docker(s) => s.close().await,
        }
    }
}

/// Runs `team` on `task`: the team logic shared by both backends.
#[expect(clippy::too_many_arguments, reason = "the solve's whole context")]
pub(crate) async fn solve_team(
    store: &Store,
    m: &Manifest,
    task: &Task,
    team: &Team,
    timeout: Duration,
    budget_share: Option<f64>,
    place: &Place<'_>,
    cancel: &CancellationToken,
) -> Result<WorkOutput, WorkError> {
    let started = Instant::now();
    let prompt = render_prompt(m, task).map_err(infra)?;
    let mut ledger = Ledger {
        trajectory: Vec::new(),
        cost: Some(0.0),
        input_tokens: 0,
        output_tokens: 0,
        deadline: Instant::now() + timeout,
        timed_out: false,
        crashed: None,
        exit_code: None,
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
            let ws = place.sandbox(worker, cancel).await?;
            let result = async {
                let run = ctx.run(worker, &ws, &prompt, ledger.remaining()).await?;
                ledger.record("worker", worker, &run);
                ledger.exit_code = run.exit_code;
                ws.diff(cancel).await
            }
            .await;
            finish(ws, result).await?
        }
        Topology::Review {
            coder,
            reviewer,
            rounds,
        } => {
            let ws = place.sandbox(coder, cancel).await?;
            let result = async {
                let run = ctx.run(coder, &ws, &prompt, ledger.remaining()).await?;
                ledger.record("coder", coder, &run);
                for round in 1..=*rounds {
                    if ledger.timed_out {
                        break;
                    }
                    let diff = ws.diff(cancel).await?;
                    let review_prompt = render_about(
                        &m.prompts.review,
                        task,
                        "diff",
                        &String::from_utf8_lossy(&diff),
                    )?;
                    // The reviewer reads the coder's work in a sandbox of its own.
                    let review_ws = place.sandbox(reviewer, cancel).await?;
                    let review = async {
                        if !diff.is_empty() {
                            let (code, out) =
                                review_ws.apply("candidate.patch", &diff, cancel).await?;
                            if code != Some(0) {
                                return Err(infra(format!(
                                    "cannot give the reviewer the coder's changes: {}",
                                    String::from_utf8_lossy(&out).trim()
                                )));
                            }
                        }
                        ctx.run(reviewer, &review_ws, &review_prompt, ledger.remaining())
                            .await
                    }
                    .await;
                    let review = finish(review_ws, review).await?;
                    ledger.record(&format!("reviewer (round {round})"), reviewer, &review);
                    let verdict = review.final_message();
                    if ledger.timed_out || approves(&verdict) {
                        break;
                    }
                    let fix_prompt = render_about(&m.prompts.fix, task, "review", &verdict)?;
                    let fix = ctx.run(coder, &ws, &fix_prompt, ledger.remaining()).await?;
                    ledger.record(&format!("coder (fix {round})"), coder, &fix);
                }
                ws.diff(cancel).await
            }
            .await;
            finish(ws, result).await?
        }
        Topology::BestOf { workers, judge } => {
            let mut candidates = Vec::new();
            for (i, w) in workers.iter().enumerate() {
                let ws = place.sandbox(w, cancel).await?;
                let result = async {
                    if !ledger.timed_out {
                        let run = ctx.run(w, &ws, &prompt, ledger.remaining()).await?;
                        ledger.record(&format!("worker {}", i + 1), w, &run);
                    }
                    ws.diff(cancel).await
                }
                .await;
                let diff = finish(ws, result).await?;
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
                let judge_prompt = render_about(&m.prompts.judge, task, "candidates", &listing)?;
                let judge_ws = place.sandbox(judge, cancel).await?;
                let run = ctx
                    .run(judge, &judge_ws, &judge_prompt, ledger.remaining())
                    .await;
                let run = finish(judge_ws, run).await?;
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
        exit_code: ledger.exit_code,
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

/// Removes a sandbox after its work, keeping the work's error if both failed.
async fn finish<T>(sandbox: Sandbox, result: Result<T, WorkError>) -> Result<T, WorkError> {
    let closed = sandbox.close().await;
    let value = result?;
    closed?;
    Ok(value)
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

/// How much of an agent's home directory a trajectory keeps.
const HOME_FILES_CAP: usize = 64 << 20;

/// Files under an agent's home, sorted, at most [`HOME_FILES_CAP`] in all (the rest is noted,
/// not kept).
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
    let mut budget: usize = HOME_FILES_CAP;
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
        ws: &Sandbox,
        name: &str,
        patch: &[u8],
    ) -> Result<AgentRun, WorkError> {
        let (exit_code, output) = ws.apply(name, patch, self.cancel).await?;
        Ok(AgentRun {
            files: Vec::new(),
            exit_code,
            output,
            timed_out: false,
            usage: None,
            cost_usd: Some(0.0),
        })
    }

    /// Runs one agent in `ws` with `prompt`.
    async fn run(
        &self,
        agent: &Agent,
        ws: &Sandbox,
        prompt: &str,
        timeout: Duration,
    ) -> Result<AgentRun, WorkError> {
        let harness = &self.m.harnesses[&agent.harness];
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
            HarnessKind::Command => self.run_command(agent, harness, ws, prompt, timeout).await,
        }
    }

    /// Runs a `command` harness: its command line, rendered, in the repository; then its
    /// usage read from the output.
    async fn run_command(
        &self,
        agent: &Agent,
        harness: &crate::manifest::Harness,
        ws: &Sandbox,
        prompt: &str,
        timeout: Duration,
    ) -> Result<AgentRun, WorkError> {
        let prompt_file = ws.write_side("prompt.md", prompt.as_bytes(), 0o644).await?;
        let script = match &harness.script {
            Some(p) if matches!(ws, Sandbox::Local(_)) => p.display().to_string(),
            Some(p) => {
                let bytes = std::fs::read(p).map_err(|e| {
                    infra(format!(
                        "cannot read the harness script {}: {e}",
                        p.display()
                    ))
                })?;
                let name = p
                    .file_name()
                    .map_or("script".into(), |n| n.to_string_lossy().into_owned());
                ws.write_side(&format!("agent-{name}"), &bytes, 0o755)
                    .await?
            }
            None => String::new(),
        };
        let (workdir, side_dir, mut env) = ws.layout();
        let mut hb = Handlebars::new();
        hb.register_escape_fn(handlebars::no_escape);
        hb.set_strict_mode(true);
        let vars = serde_json::json!({
            "script": script,
            "prompt_file": prompt_file,
            "model": agent.model.clone().unwrap_or_default(),
            "workdir": workdir,
            "side_dir": side_dir,
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
        env.push(("BENCH_PROBLEM_FILE".into(), prompt_file));
        env.push((
            "BENCH_PROBLEM_STATEMENT".into(),
            self.task.problem_statement.clone(),
        ));
        env.push(("BENCH_PROMPT".into(), prompt.to_string()));
        env.push(("BENCH_WORKDIR".into(), workdir));
        env.push(("BENCH_SIDE_DIR".into(), side_dir));
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
        let r = ws.exec(&command, &env, timeout, self.cancel).await?;
        // ---- issue 13: own files, outcome from evidence, exact cost ----
        let mut output = r.output;
        // The CLI's own files leave the workspace (kept in the trajectory) before any diff.
        let cleanup = crate::harness::own_files::cleanup_script(&harness.own_files);
        if !cleanup.is_empty() {
            let c = ws
                .exec(&cleanup, &env, Duration::from_secs(120), self.cancel)
                .await?;
            output.extend_from_slice(&c.output);
        }
        let text = String::from_utf8_lossy(&output);
        let usage = harness.usage.and_then(|f| parse_usage(f, &text));
        if harness.usage.is_some()
            && let Err(why) =
                crate::harness::evidence::judge(usage.as_ref(), r.exit_code, r.timed_out, &text)
        {
            return Err(infra(format!(
                "harness `{}` never reached its model ({why})",
                harness.name,
                why = String::from_utf8_lossy(
                    &scrub::scrub(why.as_bytes(), &scrub::secret_values()).0
                )
                .replace(|c: char| c.is_control(), " ")
            )));
        }
        let cost_usd = match (harness.usage, &usage) {
            (None, _) if agent.model.is_none() => Some(0.0),
            (None, _) => None,
            (Some(_), Some(u)) => {
                crate::harness::pricing::run_cost(u, agent.model.as_deref(), &self.m.pricing)
            }
            (Some(_), None) => None,
        };
        // ---- end issue 13 ----
        Ok(AgentRun {
            files: ws.home_files().await,
            exit_code: r.exit_code,
            output,
            timed_out: r.timed_out,
            usage,
            cost_usd,
        })
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
