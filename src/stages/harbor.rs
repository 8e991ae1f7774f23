//! The executors of Harbor tasks (`protocols/harbor.rs` for the contract):
//!
//! - [`trial`], a solve: the agent in a container of the task's environment (its workdir, its
//!   resources, its agent network), for `agent.timeout_sec` (at most the stage's timeout); then
//!   every process it left ended, the end state snapshotted (`docker diff` + the archive API,
//!   before `/tests` exists), the network cut, and Harbor's verifier run in that same container
//!   (on `/logs/verifier` and `/tests` bench empties first: `protocols/harbor.rs`). Both are stored: the
//!   snapshot for `fresh` grades, the verifier's record for `in-place` ones.
//! - [`grade`]: `in-place` reads the trial's record; `fresh` verifies in a new container of the
//!   task image with the snapshot restored; a gold check runs the oracle (`solution/solve.sh`)
//!   and verifies in its container; an empty check verifies the untouched environment.
//!
//! Only `solo` teams run Harbor tasks (a Harbor agent's result is a container's end state, not
//! a patch a reviewer or judge could read). Not here: the reward rules (the protocol).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::solve::{AgentRun, Ledger, RunCtx, render_prompt};
use super::{WorkError, WorkOutput};
use crate::backend::{Backend, Phase, Sandbox, SandboxSpec};
use crate::harness::scrub;
use crate::jobs::{GoldPatch, GradeJob, HarborTrial, PatchInput, SolveJob, SolveOutput, TeamSpec};
use crate::protocols::GradeError;
use crate::protocols::harbor::{
    SNAPSHOT_EXCLUDE, VerifierRun, agent_network, check_fresh, check_verifier_network,
    cut_for_verifier, grade_of, run_oracle, task_env, verifier_reaches_services, verify,
};
use crate::store::{Output, Store};
use crate::tasks::HarborSpec;
use crate::types::{Agent, HarborVerifier, HarnessKind, Topology};

fn infra(e: impl std::fmt::Display) -> WorkError {
    WorkError::Infra(e.to_string())
}

fn grade_err(e: GradeError) -> WorkError {
    match e {
        GradeError::Task(m) => WorkError::Infra(scrub::scrub_str(&m)),
        GradeError::Sandbox(s) => s.into(),
    }
}

/// A tarball with every file's content scrubbed (sizes follow), so nothing an agent wrote
/// carries a secret into the store.
fn scrub_tar(bytes: &[u8], secrets: &[Vec<u8>]) -> Result<(Vec<u8>, bool), String> {
    let mut out = tar::Builder::new(Vec::new());
    let mut changed = false;
    let mut a = tar::Archive::new(bytes);
    for e in a.entries().map_err(|e| e.to_string())? {
        let mut e = e.map_err(|e| e.to_string())?;
        let path = e.path().map_err(|e| e.to_string())?.into_owned();
        let mut header = e.header().clone();
        let mut content = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut content).map_err(|e| e.to_string())?;
        if let Some(target) = e.link_name().ok().flatten().map(|l| l.into_owned()) {
            out.append_link(&mut header, &path, &target)
                .map_err(|e| e.to_string())?;
            continue;
        }
        let (clean, c) = scrub::scrub(&content, secrets);
        changed |= c;
        header.set_size(clean.len() as u64);
        out.append_data(&mut header, &path, clean.as_slice())
            .map_err(|e| e.to_string())?;
    }
    Ok((out.into_inner().map_err(|e| e.to_string())?, changed))
}

fn scrub_text(t: &str, secrets: &[Vec<u8>]) -> String {
    String::from_utf8_lossy(&scrub::scrub(t.as_bytes(), secrets).0).into_owned()
}

fn scrub_run(run: &mut VerifierRun, secrets: &[Vec<u8>]) {
    run.stdout = scrub_text(&run.stdout, secrets);
    run.reward_txt = run.reward_txt.as_deref().map(|t| scrub_text(t, secrets));
    run.reward_json = run.reward_json.as_deref().map(|t| scrub_text(t, secrets));
    run.error = run.error.as_deref().map(|t| scrub_text(t, secrets));
}

fn solution_bytes(text: &str) -> Result<Vec<u8>, WorkError> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| infra(format!("the task's solution cannot be decoded: {e}")))
}

/// Where a node's sandboxes come from, and for which node.
struct Place<'a> {
    backend: &'a dyn Backend,
    address: &'a str,
    key: &'a str,
    cancel: &'a CancellationToken,
}

impl Place<'_> {
    /// A container of the task's environment with its resources, its workdir and `network`.
    async fn sandbox(
        &self,
        base: &crate::tasks::TaskBase,
        spec: &HarborSpec,
        phase: Phase,
        image: Option<String>,
        network: crate::backend::Network,
    ) -> Result<Box<dyn Sandbox>, WorkError> {
        let s = SandboxSpec {
            base,
            phase,
            image,
            address: self.address,
            key: self.key,
            repo_dir: Some(&spec.workdir),
            hardening: None,
            // The task's own policy (`agent_network`), on docker and in the local jail alike.
            network,
            stripped: None,
            before_strip: None,
            task_env: Some(task_env(spec, phase)),
        };
        Ok(self.backend.create(&s, self.cancel).await?)
    }
}

/// A Harbor trial: the agent's run, the snapshot, the in-place verifier.
pub async fn trial(
    job: &SolveJob,
    store: &Store,
    backend: &dyn Backend,
    budget_share: Option<f64>,
    address: &str,
    key: &str,
    cancel: &CancellationToken,
) -> Result<WorkOutput, WorkError> {
    let started = Instant::now();
    let task = &job
        .harbor
        .as_ref()
        .ok_or_else(|| WorkError::Bug("a Harbor trial without its task".into()))?
        .task;
    let id = task.instance_id();
    let spec = task
        .harbor()
        .ok_or_else(|| WorkError::Bug(format!("{id} is not a Harbor task")))?;
    check_verifier_network(id, spec).map_err(grade_err)?;
    let network = agent_network(id, spec).map_err(grade_err)?;
    let team = job.team.get();
    let Topology::Solo { worker } = &team.topology else {
        return Err(infra(format!(
            "Harbor task {id}: only `solo` teams run Harbor tasks (the result is a container's end state, which a reviewer or judge cannot read as a diff)"
        )));
    };
    let harness = &team.harnesses[&worker.harness];
    let place = Place {
        backend,
        address,
        key,
        cancel,
    };
    let image = match &harness.install {
        Some(install) => backend.agent_image(task.base(), install, cancel).await?,
        None => None,
    };
    let ws = place
        .sandbox(task.base(), spec, Phase::Agent, image, network.clone())
        .await?;
    let agent_timeout = match spec.config.agent.timeout_sec {
        Some(s) => Duration::from_secs_f64(s).min(job.timeout()),
        None => job.timeout(),
    };
    let mut ledger = Ledger::new(agent_timeout);
    let run = TrialRun {
        job,
        id,
        spec,
        team,
        worker,
        ws: ws.as_ref(),
        budget_share,
        cancel,
    };
    let result = run.in_container(&mut ledger, agent_timeout, &network).await;
    let closed = ws.destroy().await;
    let (snapshot, run) = result?;
    closed?;
    store_trial(store, ledger, &snapshot, run, started, budget_share)
}

/// A trial's agent container and what its steps there read.
struct TrialRun<'a> {
    job: &'a SolveJob,
    id: &'a str,
    spec: &'a HarborSpec,
    team: &'a TeamSpec,
    worker: &'a Agent,
    ws: &'a dyn Sandbox,
    budget_share: Option<f64>,
    cancel: &'a CancellationToken,
}

impl TrialRun<'_> {
    /// Everything a trial does in its container: the worker's run (recorded in `ledger`), every
    /// process it left ended, the end state snapshotted, the network cut (unless it was already
    /// `None`), and the in-place verifier. Returns the raw snapshot and the verifier's record.
    async fn in_container(
        &self,
        ledger: &mut Ledger,
        agent_timeout: Duration,
        network: &crate::backend::Network,
    ) -> Result<(Vec<u8>, VerifierRun), WorkError> {
        let run = self.worker_run(ledger, agent_timeout).await?;
        ledger.record("worker", self.worker, &run);
        ledger.exit_code = run.exit_code;
        // Nothing the agent started outlives its run: the snapshot is its end state, and no
        // background process writes during the verifier (which ends them again itself).
        self.ws.end_processes().await?;
        let snapshot = self.ws.snapshot(&SNAPSHOT_EXCLUDE).await?;
        let reach = cut_for_verifier(self.ws, self.spec, network).await?;
        let run = match verify(self.ws, self.spec, "in-place", reach, self.cancel).await {
            Ok(run) => run,
            // The agent's end state defeated the verifier here (its reset failed): that is the
            // in-place outcome, recorded with the snapshot, which a fresh grade still verifies.
            Err(GradeError::Task(m)) => VerifierRun {
                mode: "in-place".to_string(),
                error: Some(scrub::scrub_str(&m)),
                ..Default::default()
            },
            Err(GradeError::Sandbox(e)) => return Err(e.into()),
        };
        Ok((snapshot, run))
    }

    /// The worker's run by its harness: the oracle runs the task's `solution/solve.sh`, an
    /// agent harness gets the team's instruction and the time the ledger has left; a predictions
    /// file cannot solve a Harbor task.
    async fn worker_run(
        &self,
        ledger: &Ledger,
        agent_timeout: Duration,
    ) -> Result<AgentRun, WorkError> {
        let id = self.id;
        match self.team.harnesses[&self.worker.harness].kind {
            HarnessKind::Oracle => self.oracle_run(agent_timeout).await,
            HarnessKind::Predictions => Err(infra(format!(
                "Harbor task {id}: a predictions file holds patches, and a Harbor agent's result is a container's end state; use an agent harness"
            ))),
            _ => {
                let prompt = match &self.team.prompts.instruction {
                    Some(t) => {
                        render_prompt(t, self.job.task.problem_statement(), self.job.task.repo())
                            .map_err(infra)?
                    }
                    None => String::new(),
                };
                let ctx = RunCtx {
                    job: self.job,
                    budget_share: self.budget_share,
                    cancel: self.cancel,
                };
                ctx.run(self.worker, self.ws, &prompt, ledger.remaining())
                    .await
            }
        }
    }

    /// The oracle as the worker: the job's solution (the task's `solution/solve.sh`) run for
    /// `agent_timeout`, recorded as a run that drives no model.
    async fn oracle_run(&self, agent_timeout: Duration) -> Result<AgentRun, WorkError> {
        let id = self.id;
        let gold = self.job.gold_patch.as_ref().ok_or_else(|| {
            WorkError::Bug("an oracle solve without the solution in its job".into())
        })?;
        if gold.text().is_empty() {
            return Err(infra(format!(
                "Harbor task {id} has no solution/solve.sh for the oracle"
            )));
        }
        let r = run_oracle(
            self.ws,
            self.spec,
            &solution_bytes(gold.text())?,
            agent_timeout,
            self.cancel,
        )
        .await?;
        Ok(AgentRun {
            files: Vec::new(),
            left_out: Vec::new(),
            exit_code: r.exit_code,
            output: r.output,
            timed_out: r.timed_out,
            usage: None,
            recorded: crate::jobs::RunUsage {
                role: String::new(),
                harness: self.worker.harness.clone(),
                model: None,
                tokens: None,
                reported_cost_usd: None,
                reported_exact: false,
                no_model: true,
                timed_out: r.timed_out,
            },
        })
    }
}

/// A trial's output: its snapshot and verifier record scrubbed and stored (the `snapshot` and
/// `verification` blobs, beside the `patch` and `trajectory` every solve stores).
fn store_trial(
    store: &Store,
    ledger: Ledger,
    snapshot: &[u8],
    mut run: VerifierRun,
    started: Instant,
    budget_share: Option<f64>,
) -> Result<WorkOutput, WorkError> {
    let secrets = scrub::secret_values();
    let (snapshot, snap_redacted) = scrub_tar(snapshot, &secrets).map_err(infra)?;
    scrub_run(&mut run, &secrets);
    let mut blobs = BTreeMap::new();
    let stored = super::solve::store_scrubbed(store, &mut blobs, b"", &ledger.trajectory)?;
    let snapshot_digest = store.put_blob(&snapshot).map_err(WorkError::store)?;
    blobs.insert("snapshot".to_string(), snapshot_digest.clone());
    let record = serde_json::to_vec_pretty(&run).expect("verifier runs serialize");
    let verification = store.put_blob(&record).map_err(WorkError::store)?;
    blobs.insert("verification".to_string(), verification.clone());
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
        runs: ledger.runs.into_boxed_slice().into_vec(),
        redacted: stored.redacted || snap_redacted,
        duration_ms: started.elapsed().as_millis() as u64,
        budget_share_usd: budget_share,
        harbor: Some(HarborTrial {
            snapshot_bytes: snapshot.len() as u64,
            snapshot: snapshot_digest,
            verification,
        }),
        in_sandbox: None,
    };
    Ok(WorkOutput {
        output: Output::Solve(out),
        blobs: blobs.into(),
    })
}

/// A Harbor grade: by the stage's verifier mode, or a gold or empty check.
pub async fn grade(
    job: &GradeJob,
    store: &Store,
    backend: &dyn Backend,
    address: &str,
    key: &str,
    cancel: &CancellationToken,
) -> Result<WorkOutput, WorkError> {
    let id = job.task.instance_id();
    let spec = job
        .task
        .harbor()
        .ok_or_else(|| WorkError::Bug(format!("{id} is not a Harbor task")))?;
    let mut blobs = BTreeMap::new();
    let place = Place {
        backend,
        address,
        key,
        cancel,
    };
    let mut run = match (&job.patch, job.harbor) {
        (PatchInput::Stored(d), Some(HarborVerifier::InPlace) | None) => {
            let bytes = read_blob(store, d, "in-place verifier record")?;
            serde_json::from_slice::<VerifierRun>(&bytes).map_err(|e| WorkError::CorruptInput {
                digest: d.clone(),
                message: format!("the in-place verifier record {d} does not parse: {e}"),
            })?
        }
        (PatchInput::Stored(d), Some(HarborVerifier::Fresh)) => {
            let snapshot = read_blob(store, d, "snapshot")?;
            place.verify_fresh(job, spec, &snapshot).await?
        }
        (PatchInput::Gold(gold), _) => {
            let (run, out) = place.verify_gold(job, spec, gold).await?;
            blobs.insert(
                "oracle_log".to_string(),
                store
                    .put_blob(&scrub::scrub(&out, &scrub::secret_values()).0)
                    .map_err(WorkError::store)?,
            );
            run
        }
        (PatchInput::Empty, _) => place.verify_empty(job, spec).await?,
    };
    scrub_run(&mut run, &scrub::secret_values());
    let output = grade_of(id, &run).map_err(grade_err)?;
    let record = serde_json::to_vec_pretty(&run).expect("verifier runs serialize");
    blobs.insert(
        "verifier".to_string(),
        store.put_blob(&record).map_err(WorkError::store)?,
    );
    blobs.insert(
        "log".to_string(),
        store
            .put_blob(run.stdout.as_bytes())
            .map_err(WorkError::store)?,
    );
    Ok(WorkOutput {
        output: Output::Grade(output),
        blobs: blobs.into(),
    })
}

/// The blob a grade reads (`what` names it in the error): an unparsable digest or an unreadable
/// blob is a corrupt input.
fn read_blob(store: &Store, d: &str, what: &str) -> Result<Vec<u8>, WorkError> {
    let corrupt = |e: &dyn std::fmt::Display| WorkError::CorruptInput {
        digest: d.to_string(),
        message: format!("cannot read the {what} to grade: {e}"),
    };
    let digest = crate::types::Digest::parse(d).map_err(|e| corrupt(&e))?;
    store.get_blob(&digest).map_err(|e| corrupt(&e))
}

impl Place<'_> {
    /// A container of the task's environment for the verifier alone, without network (the
    /// verifier's policy checked first).
    async fn grade_sandbox(
        &self,
        job: &GradeJob,
        spec: &HarborSpec,
    ) -> Result<Box<dyn Sandbox>, WorkError> {
        check_verifier_network(job.task.instance_id(), spec).map_err(grade_err)?;
        self.sandbox(
            job.task.base(),
            spec,
            Phase::Grade,
            None,
            crate::backend::Network::None,
        )
        .await
    }

    /// A `fresh` grade: the trial's snapshot restored into a new container of the task's
    /// environment without network, and the verifier run there.
    async fn verify_fresh(
        &self,
        job: &GradeJob,
        spec: &HarborSpec,
        snapshot: &[u8],
    ) -> Result<VerifierRun, WorkError> {
        check_fresh(job.task.instance_id(), spec).map_err(grade_err)?;
        let s = self.grade_sandbox(job, spec).await?;
        let result = async {
            s.restore(snapshot).await?;
            verify(s.as_ref(), spec, "fresh", false, self.cancel)
                .await
                .map_err(grade_err)
        }
        .await;
        super::solve::finish(s, result).await
    }

    /// A gold check: the oracle (the task's `solution/solve.sh`) run in a container with the
    /// agent's network, the network cut, and the verifier run in that container. Returns the
    /// verifier's record and the oracle's raw output.
    async fn verify_gold(
        &self,
        job: &GradeJob,
        spec: &HarborSpec,
        gold: &GoldPatch,
    ) -> Result<(VerifierRun, Vec<u8>), WorkError> {
        let id = job.task.instance_id();
        check_verifier_network(id, spec).map_err(grade_err)?;
        let network = agent_network(id, spec).map_err(grade_err)?;
        if gold.text().is_empty() {
            return Err(infra(format!(
                "Harbor task {id} has no solution/solve.sh to check"
            )));
        }
        let solution = solution_bytes(gold.text())?;
        let s = self
            .sandbox(job.task.base(), spec, Phase::Agent, None, network.clone())
            .await?;
        let timeout = match spec.config.agent.timeout_sec {
            Some(t) => Duration::from_secs_f64(t).min(job.timeout()),
            None => job.timeout(),
        };
        let result = async {
            let r = run_oracle(s.as_ref(), spec, &solution, timeout, self.cancel).await?;
            let out = r.output.clone();
            let reach = cut_for_verifier(s.as_ref(), spec, &network).await?;
            let run = verify(s.as_ref(), spec, "oracle", reach, self.cancel)
                .await
                .map_err(grade_err)?;
            Ok((run, out))
        }
        .await;
        super::solve::finish(s, result).await
    }

    /// An empty check: the verifier run on the untouched environment, without network.
    async fn verify_empty(
        &self,
        job: &GradeJob,
        spec: &HarborSpec,
    ) -> Result<VerifierRun, WorkError> {
        let s = self.grade_sandbox(job, spec).await?;
        let reach = verifier_reaches_services(spec);
        let result = verify(s.as_ref(), spec, "nop", reach, self.cancel)
            .await
            .map_err(grade_err);
        super::solve::finish(s, result).await
    }
}
