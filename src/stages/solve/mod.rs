//! The solve executor: a team (`teams.rs`) run on one task, each agent in a fresh sandbox
//! of its harness's image holding only the task's base (history stripped and checked), under the
//! solve timeout; the patch is the diff against the start snapshot. One agent run is
//! [`RunCtx::run`]: the oracle applies the gold patch, a predictions harness its file's patch
//! for the task, nop nothing, a command harness runs its command line and is read for usage. A
//! timeout or a crash is an outcome (graded on what was left), not an error; a run that never
//! reached its model (no model call in what it recorded, see `harness::evidence`) is an
//! infrastructure error.

mod teams;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::{WorkError, WorkOutput};
use crate::backend::egress::Endpoint;
use crate::backend::{Backend, Network, Sandbox, SandboxPaths, SandboxSpec, repo};
use crate::harness::scrub;
use crate::harness::template::{self, TemplateKind};
use crate::harness::usage::{Usage, parse_usage};
use crate::jobs::{HarnessSpec, RunUsage, SolveJob, SolveOutput, Tokens};
use crate::store::{Output, Store};
use crate::types::{Agent, HarnessKind};

fn infra(e: impl std::fmt::Display) -> WorkError {
    WorkError::Infra(e.to_string())
}

/// Renders a team prompt (review, fix, judge): the problem statement and the one more variable
/// of its kind (`diff`, `review`, `candidates`).
pub fn render_about(
    kind: TemplateKind,
    template: &str,
    job: &SolveJob,
    value: &str,
) -> Result<String, WorkError> {
    let [first, second] = kind.variables() else {
        unreachable!(
            "{} takes the problem statement and one more",
            kind.describe()
        )
    };
    template::render(
        kind,
        template,
        &[(first, job.task.problem_statement()), (second, value)],
    )
    .map_err(|e| infra(format!("cannot render {}: {e}", kind.describe())))
}

/// Renders the instruction prompt for a task (solver-visible fields only).
pub fn render_prompt(
    template: &str,
    problem_statement: &str,
    repo: &str,
) -> Result<String, String> {
    template::render(
        TemplateKind::Instruction,
        template,
        &[("problem_statement", problem_statement), ("repo", repo)],
    )
    .map_err(|e| format!("cannot render a prompt: {e}"))
}

/// One agent run.
pub struct AgentRun {
    /// Files the agent left in its home directory (relative path, content), capped.
    pub files: Vec<(String, Vec<u8>)>,
    /// Its home's caches (its harness's `caches`), by path and size: not kept.
    pub left_out: Vec<(String, u64)>,
    pub exit_code: Option<i32>,
    pub output: Vec<u8>,
    pub timed_out: bool,
    pub usage: Option<Usage>,
    /// What the run recorded of its model use.
    pub recorded: RunUsage,
}

impl AgentRun {
    pub fn final_message(&self) -> String {
        match &self.usage {
            Some(u) if !u.final_message.is_empty() => u.final_message.clone(),
            _ => String::from_utf8_lossy(&self.output).into_owned(),
        }
    }
}

/// The team's state as runs accumulate.
pub struct Ledger {
    pub trajectory: Vec<u8>,
    pub runs: Vec<RunUsage>,
    pub deadline: Instant,
    pub timed_out: bool,
    pub crashed: Option<String>,
    /// A solo worker's exit code.
    pub exit_code: Option<i32>,
    /// The forgery check's grade in the worker's own sandbox.
    pub in_sandbox: Option<crate::jobs::InSandbox>,
}

impl Ledger {
    pub fn new(timeout: Duration) -> Ledger {
        Ledger {
            trajectory: Vec::new(),
            runs: Vec::new(),
            deadline: Instant::now() + timeout,
            timed_out: false,
            crashed: None,
            exit_code: None,
            in_sandbox: None,
        }
    }

    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    pub fn record(&mut self, role: &str, agent: &Agent, run: &AgentRun) {
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
        if !run.left_out.is_empty() {
            let total: u64 = run.left_out.iter().map(|(_, n)| n).sum();
            self.trajectory.extend_from_slice(
                format!(
                    "----- {role} caches left out ({} files, {total} bytes) -----\n",
                    run.left_out.len()
                )
                .as_bytes(),
            );
            for (path, n) in &run.left_out {
                self.trajectory
                    .extend_from_slice(format!("{path} ({n} bytes)\n").as_bytes());
            }
        }
        let mut recorded = run.recorded.clone();
        recorded.role = role.to_string();
        self.runs.push(recorded);
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

/// How much of an agent's home directory a trajectory keeps.
const HOME_FILES_CAP: usize = 64 << 20;

/// Where a solve's sandboxes come from: the backend, and the image each harness runs in.
pub struct Sandboxes<'a> {
    backend: &'a dyn Backend,
    job: &'a SolveJob,
    images: BTreeMap<String, Option<String>>,
    address: &'a str,
    key: &'a str,
}

impl Sandboxes<'_> {
    /// The commit the task's sandboxes start at, where the backend knows it.
    pub fn base_commit(&self) -> Option<String> {
        self.backend.base_commit(self.job.task.base())
    }

    /// A fresh, prepared sandbox for `agent`'s harness.
    pub async fn sandbox(
        &self,
        agent: &Agent,
        cancel: &CancellationToken,
    ) -> Result<Box<dyn Sandbox>, WorkError> {
        let base = self.job.task.base();
        let harness = self.job.team.get().harnesses.get(&agent.harness);
        let network = match harness {
            Some(h) if h.kind == HarnessKind::Command => match &h.egress {
                Some(list) => Network::Allowlist(
                    list.iter()
                        .map(|e| Endpoint::parse(e))
                        .collect::<Result<_, _>>()
                        .map_err(|e| {
                            WorkError::Infra(format!("harness `{}`: {e}", agent.harness))
                        })?,
                ),
                None => Network::Open,
            },
            // bench's own harnesses apply a patch or do nothing: no network.
            _ => Network::None,
        };
        let spec = SandboxSpec {
            base,
            phase: crate::backend::Phase::Agent,
            network,
            image: self.images.get(&agent.harness).cloned().flatten(),
            address: self.address,
            key: self.key,
            repo_dir: self.job.task.repo_dir(),
            hardening: None,
            stripped: None,
            before_strip: None,
            task_env: None,
        };
        let s = self.backend.create(&spec, cancel).await?;
        // The task's setup (brain bench's), before the start snapshot: what it builds is the
        // agent's starting point, not part of its patch.
        let setup = self.job.task.setup_cmds().join("\n");
        if !setup.trim().is_empty() {
            let script = format!(
                "cd {}\n{setup}\n",
                crate::backend::shell_quote(&s.paths().workdir)
            );
            let r = s.exec(&script, &[], self.job.timeout(), cancel).await;
            let failed = match &r {
                Ok(r) if r.exit_code == Some(0) => None,
                Ok(r) => Some(format!(
                    "the setup of {} failed in the agent's workspace ({}): {}",
                    self.job.task.instance_id(),
                    if r.timed_out {
                        "timed out".to_string()
                    } else {
                        format!("exit {:?}", r.exit_code)
                    },
                    String::from_utf8_lossy(&r.output).trim()
                )),
                Err(e) => Some(e.to_string()),
            };
            if let Some(why) = failed {
                let _ = s.destroy().await;
                return Err(infra(why));
            }
        }
        let commit = self.backend.base_commit(base);
        if let Err(e) = repo::prepare(s.as_ref(), commit.as_deref(), cancel).await {
            let _ = s.destroy().await;
            return Err(e.into());
        }
        Ok(s)
    }
}

/// Removes a sandbox after its work, keeping the work's error if both failed.
pub async fn finish<T>(
    sandbox: Box<dyn Sandbox>,
    result: Result<T, WorkError>,
) -> Result<T, WorkError> {
    let closed = sandbox.destroy().await;
    let value = result?;
    closed?;
    Ok(value)
}

/// Runs the job's team on its task (a Harbor trial runs in `stages/harbor.rs` instead).
pub async fn solve(
    job: &SolveJob,
    store: &Store,
    backend: &dyn Backend,
    budget_share: Option<f64>,
    address: &str,
    key: &str,
    cancel: &CancellationToken,
) -> Result<WorkOutput, WorkError> {
    let started = Instant::now();
    let team = job.team.get();
    let mut images = BTreeMap::new();
    for (name, h) in &team.harnesses {
        let image = match &h.install {
            Some(install) => backend
                .agent_image(job.task.base(), install, cancel)
                .await
                .map_err(|e| match WorkError::from(e) {
                    WorkError::Infra(m) => infra(format!("harness `{name}`: {m}")),
                    other => other,
                })?,
            None => None,
        };
        images.insert(name.clone(), image);
    }
    let sandboxes = Sandboxes {
        backend,
        job,
        images,
        address,
        key,
    };
    let ctx = RunCtx {
        job,
        budget_share,
        cancel,
    };
    let mut ledger = Ledger::new(job.timeout());
    let mut blobs = BTreeMap::new();
    let patch = teams::run(&ctx, &sandboxes, &mut ledger, store, &mut blobs).await?;
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
        // Without the room pushing left (four runs' worth for one): every record is kept.
        runs: ledger.runs.into_boxed_slice().into_vec(),
        redacted: stored.redacted,
        duration_ms: started.elapsed().as_millis() as u64,
        budget_share_usd: budget_share,
        in_sandbox: ledger.in_sandbox,
        harbor: None,
    };
    Ok(WorkOutput {
        output: Output::Solve(out),
        blobs: blobs.into(),
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
    blobs.insert(
        "patch".to_string(),
        store.put_blob(&patch).map_err(WorkError::store)?,
    );
    blobs.insert(
        "trajectory".to_string(),
        store.put_blob(&trajectory).map_err(WorkError::store)?,
    );
    Ok(Stored {
        patch: crate::key::digest(&patch),
        patch_bytes: patch.len() as u64,
        redacted: patch_redacted || traj_redacted,
    })
}

/// What every agent run of one solve shares.
pub struct RunCtx<'a> {
    pub job: &'a SolveJob,
    pub budget_share: Option<f64>,
    pub cancel: &'a CancellationToken,
}

/// The usage record of a run that drives no model.
fn no_model(harness: &str) -> RunUsage {
    RunUsage {
        role: String::new(),
        harness: harness.to_string(),
        model: None,
        tokens: None,
        reported_cost_usd: None,
        reported_exact: false,
        no_model: true,
        timed_out: false,
    }
}

impl RunCtx<'_> {
    /// An "agent" that applies a given patch (the oracle, a predictions file).
    async fn apply_patch(
        &self,
        agent: &Agent,
        ws: &dyn Sandbox,
        name: &str,
        patch: &[u8],
    ) -> Result<AgentRun, WorkError> {
        let (exit_code, output) = repo::apply(ws, name, patch, self.cancel).await?;
        Ok(AgentRun {
            files: Vec::new(),
            left_out: Vec::new(),
            exit_code,
            output,
            timed_out: false,
            usage: None,
            recorded: no_model(&agent.harness),
        })
    }

    /// Runs one agent in `ws` with `prompt`.
    pub async fn run(
        &self,
        agent: &Agent,
        ws: &dyn Sandbox,
        prompt: &str,
        timeout: Duration,
    ) -> Result<AgentRun, WorkError> {
        let harness = &self.job.team.get().harnesses[&agent.harness];
        if timeout.is_zero() {
            return Ok(AgentRun {
                files: Vec::new(),
                left_out: Vec::new(),
                exit_code: None,
                output: b"[bench: no time left for this run]\n".to_vec(),
                timed_out: true,
                usage: None,
                recorded: RunUsage {
                    timed_out: true,
                    no_model: agent.model.is_none() && harness.usage.is_none(),
                    model: agent.model.clone(),
                    ..no_model(&agent.harness)
                },
            });
        }
        match harness.kind {
            HarnessKind::Nop => Ok(AgentRun {
                files: Vec::new(),
                left_out: Vec::new(),
                exit_code: Some(0),
                output: b"nop: no change\n".to_vec(),
                timed_out: false,
                usage: None,
                recorded: no_model(&agent.harness),
            }),
            HarnessKind::Oracle => {
                let gold = self.job.gold_patch.as_ref().ok_or_else(|| {
                    WorkError::Bug("an oracle solve without the gold patch in its job".into())
                })?;
                self.apply_patch(agent, ws, "gold.patch", gold.text().as_bytes())
                    .await
            }
            HarnessKind::Predictions => {
                // The "agent" writes the file's patch for this task; no prediction: no change.
                match self.job.predictions.get(&agent.harness).cloned().flatten() {
                    Some(patch) => {
                        self.apply_patch(agent, ws, "prediction.patch", patch.bytes())
                            .await
                    }
                    None => Ok(AgentRun {
                        files: Vec::new(),
                        left_out: Vec::new(),
                        exit_code: Some(0),
                        output: format!(
                            "predictions: no patch for {}\n",
                            self.job.task.instance_id()
                        )
                        .into_bytes(),
                        timed_out: false,
                        usage: None,
                        recorded: no_model(&agent.harness),
                    }),
                }
            }
            HarnessKind::Command => self.run_command(agent, harness, ws, prompt, timeout).await,
        }
    }

    /// The command line of a `command` harness: its template rendered with the script and the
    /// prompt file as written to the side directory, the model and its provider prefix, the
    /// repository and side directories, the run's share of the budget and the base URL.
    fn command_line(
        &self,
        agent: &Agent,
        harness: &HarnessSpec,
        paths: &SandboxPaths,
        script: Option<&str>,
        prompt_file: &str,
    ) -> Result<String, WorkError> {
        let max_cost_usd = self
            .budget_share
            .map(|b| format!("{b:.4}"))
            .unwrap_or_default();
        // The model's provider prefix (`anthropic` of `anthropic/claude-...`).
        let provider = agent
            .model
            .as_deref()
            .and_then(|m| m.split_once('/'))
            .map_or("", |(p, _)| p);
        let values = [
            ("script", script.unwrap_or_default()),
            ("prompt_file", prompt_file),
            ("model", agent.model.as_deref().unwrap_or_default()),
            ("workdir", paths.repo.as_str()),
            ("side_dir", paths.side.as_str()),
            ("max_cost_usd", max_cost_usd.as_str()),
            ("base_url", harness.base_url.as_deref().unwrap_or_default()),
            ("provider", provider),
        ];
        let name = &agent.harness;
        template::render(
            TemplateKind::Command,
            harness.command.as_deref().unwrap_or(""),
            &values,
        )
        .map_err(|e| {
            infra(format!(
                "cannot render the command of harness `{name}`: {e}"
            ))
        })
    }

    /// The environment of a `command` harness: bench's `BENCH_*` variables (the prompt and its
    /// file, the problem statement, the directories, the model and the budget share when set)
    /// and `IS_SANDBOX`, then each variable the harness passes that is set here, whose values
    /// are registered with the scrubber first.
    fn command_env(
        &self,
        agent: &Agent,
        harness: &HarnessSpec,
        paths: &SandboxPaths,
        prompt_file: &str,
        prompt: &str,
    ) -> Vec<(String, String)> {
        let mut env = vec![
            ("BENCH_PROBLEM_FILE".to_string(), prompt_file.to_string()),
            (
                "BENCH_PROBLEM_STATEMENT".to_string(),
                self.job.task.problem_statement().to_string(),
            ),
            ("BENCH_PROMPT".to_string(), prompt.to_string()),
            ("BENCH_WORKDIR".to_string(), paths.repo.clone()),
            ("BENCH_SIDE_DIR".to_string(), paths.side.clone()),
            ("IS_SANDBOX".to_string(), "1".to_string()),
        ];
        if let Some(model) = &agent.model {
            env.push(("BENCH_MODEL".into(), model.clone()));
        }
        if let Some(b) = self.budget_share {
            env.push(("BENCH_MAX_COST_USD".into(), format!("{b:.4}")));
        }
        scrub::register_passed(&harness.env);
        for var in &harness.env {
            if let Ok(v) = std::env::var(var) {
                env.push((var.clone(), v));
            }
        }
        env
    }

    /// Runs a `command` harness: its command line, rendered, in the repository; then its
    /// usage read from the output.
    async fn run_command(
        &self,
        agent: &Agent,
        harness: &HarnessSpec,
        ws: &dyn Sandbox,
        prompt: &str,
        timeout: Duration,
    ) -> Result<AgentRun, WorkError> {
        let paths = ws.paths().clone();
        let prompt_file = format!("{}/prompt.md", paths.side);
        let script = harness
            .script
            .as_ref()
            .map(|s| format!("{}/agent-{}", paths.side, s.name));
        // The script's files beside it (a module it imports), then bench's own files.
        let beside: Vec<String> = harness
            .files
            .iter()
            .map(|f| format!("{}/{}", paths.side, f.path))
            .collect();
        let mut files: Vec<(&str, &[u8], u32)> = harness
            .files
            .iter()
            .zip(&beside)
            .map(|(f, p)| (p.as_str(), f.content.bytes(), f.mode))
            .collect();
        files.push((prompt_file.as_str(), prompt.as_bytes(), 0o644));
        if let (Some(path), Some(s)) = (&script, &harness.script) {
            files.push((path.as_str(), s.content.bytes(), 0o755));
        }
        ws.put_files(&files).await?;
        let command = self.command_line(agent, harness, &paths, script.as_deref(), &prompt_file)?;
        let env = self.command_env(agent, harness, &paths, &prompt_file, prompt);
        let name = &agent.harness;
        let r = ws.exec(&command, &env, timeout, self.cancel).await?;
        // The CLI's own files leave the workspace (kept in the trajectory) before any diff.
        let mut output = r.output;
        let cleanup = crate::harness::own_files::cleanup_script(&harness.own_files);
        if !cleanup.is_empty() {
            let c = ws
                .exec(&cleanup, &env, Duration::from_secs(120), self.cancel)
                .await?;
            output.extend_from_slice(&c.output);
        }
        // The CLI's own files under its home: its transcript (evidence when it was killed),
        // kept in the trajectory; its caches only listed.
        let home = ws
            .get_dir(&paths.home, HOME_FILES_CAP)
            .await
            .unwrap_or_else(|e| {
                vec![(
                    "[bench]".to_string(),
                    format!("cannot read the agent's home: {e}").into_bytes(),
                )]
            });
        let (files, left_out) = crate::harness::own_files::split_caches(home, &harness.caches);
        // Outcome from evidence: what the run recorded, not its exit code.
        let text = String::from_utf8_lossy(&output);
        let usage = harness.usage.and_then(|f| parse_usage(f, &text, &files));
        if harness.usage.is_some()
            && let Err(why) =
                crate::harness::evidence::judge(usage.as_ref(), r.exit_code, r.timed_out, &text)
        {
            return Err(infra(format!(
                "harness `{name}` never reached its model ({why})",
                why = String::from_utf8_lossy(
                    &scrub::scrub(why.as_bytes(), &scrub::secret_values()).0
                )
                .replace(|c: char| c.is_control(), " ")
            )));
        }
        let recorded = RunUsage {
            role: String::new(),
            harness: name.clone(),
            model: agent.model.clone(),
            tokens: usage.as_ref().map(|u| Tokens {
                input: u.input_tokens,
                cached_input: u.cached_input_tokens,
                cache_write: u.cache_write_tokens,
                output: u.output_tokens,
            }),
            // Only an exact figure is reported (claude's `total_cost_usd` for a model it priced).
            reported_cost_usd: usage.as_ref().and_then(|u| u.reported_cost_usd),
            reported_exact: usage
                .as_ref()
                .is_some_and(|u| u.reported_cost_usd.is_some()),
            no_model: harness.usage.is_none() && agent.model.is_none(),
            timed_out: r.timed_out,
        };
        Ok(AgentRun {
            files,
            left_out,
            exit_code: r.exit_code,
            output,
            timed_out: r.timed_out,
            usage,
            recorded,
        })
    }
}
