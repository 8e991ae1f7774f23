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

use super::solve::{Ledger, RunCtx, render_prompt};
use super::{WorkError, WorkOutput};
use crate::backend::{Backend, Phase, Sandbox, SandboxSpec};
use crate::harness::scrub;
use crate::jobs::{GradeJob, HarborTrial, PatchInput, SolveJob, SolveOutput};
use crate::protocols::GradeError;
use crate::protocols::harbor::{
    SNAPSHOT_EXCLUDE, VerifierRun, agent_network, check_verifier_network, grade_of, run_oracle,
    task_env, verify,
};
use crate::store::{Output, Store};
use crate::tasks::HarborSpec;
use crate::types::{HarborVerifier, HarnessKind, Topology};

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
            task_env: Some(task_env(spec)),
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
    let result = async {
        let ctx = RunCtx {
            job,
            budget_share,
            cancel,
        };
        let run = match harness.kind {
            HarnessKind::Oracle => {
                let gold = job.gold_patch.as_ref().ok_or_else(|| {
                    WorkError::Bug("an oracle solve without the solution in its job".into())
                })?;
                if gold.text().is_empty() {
                    return Err(infra(format!(
                        "Harbor task {id} has no solution/solve.sh for the oracle"
                    )));
                }
                let r = run_oracle(
                    ws.as_ref(),
                    spec,
                    &solution_bytes(gold.text())?,
                    agent_timeout,
                    cancel,
                )
                .await?;
                super::solve::AgentRun {
                    files: Vec::new(),
                    left_out: Vec::new(),
                    exit_code: r.exit_code,
                    output: r.output,
                    timed_out: r.timed_out,
                    usage: None,
                    recorded: crate::jobs::RunUsage {
                        role: String::new(),
                        harness: worker.harness.clone(),
                        model: None,
                        tokens: None,
                        reported_cost_usd: None,
                        reported_exact: false,
                        no_model: true,
                        timed_out: r.timed_out,
                    },
                }
            }
            HarnessKind::Predictions => {
                return Err(infra(format!(
                    "Harbor task {id}: a predictions file holds patches, and a Harbor agent's result is a container's end state; use an agent harness"
                )));
            }
            _ => {
                let prompt = match &team.prompts.instruction {
                    Some(t) => render_prompt(t, job.task.problem_statement(), job.task.repo())
                        .map_err(infra)?,
                    None => String::new(),
                };
                ctx.run(worker, ws.as_ref(), &prompt, ledger.remaining())
                    .await?
            }
        };
        ledger.record("worker", worker, &run);
        ledger.exit_code = run.exit_code;
        // Nothing the agent started outlives its run: the snapshot is its end state, and no
        // background process writes during the verifier (which ends them again itself).
        ws.end_processes().await?;
        let snapshot = ws.snapshot(&SNAPSHOT_EXCLUDE).await?;
        if network != crate::backend::Network::None {
            ws.set_network(false).await?;
        }
        let run = match verify(ws.as_ref(), spec, "in-place", false, cancel).await {
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
    .await;
    let closed = ws.destroy().await;
    let (snapshot, mut run) = result?;
    closed?;
    let secrets = scrub::secret_values();
    let (snapshot, snap_redacted) = scrub_tar(&snapshot, &secrets).map_err(infra)?;
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
        runs: ledger.runs,
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
        blobs,
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
    let read = |d: &str, what: &str| {
        let corrupt = |e: &dyn std::fmt::Display| WorkError::CorruptInput {
            digest: d.to_string(),
            message: format!("cannot read the {what} to grade: {e}"),
        };
        let digest = crate::types::Digest::parse(d).map_err(|e| corrupt(&e))?;
        store.get_blob(&digest).map_err(|e| corrupt(&e))
    };
    let mut blobs = BTreeMap::new();
    let place = Place {
        backend,
        address,
        key,
        cancel,
    };
    let mut run = match (&job.patch, job.harbor) {
        (PatchInput::Stored(d), Some(HarborVerifier::InPlace) | None) => {
            let bytes = read(d, "in-place verifier record")?;
            serde_json::from_slice::<VerifierRun>(&bytes).map_err(|e| WorkError::CorruptInput {
                digest: d.clone(),
                message: format!("the in-place verifier record {d} does not parse: {e}"),
            })?
        }
        (PatchInput::Stored(d), Some(HarborVerifier::Fresh)) => {
            let snapshot = read(d, "snapshot")?;
            check_verifier_network(id, spec).map_err(grade_err)?;
            let s = place
                .sandbox(
                    job.task.base(),
                    spec,
                    Phase::Grade,
                    None,
                    crate::backend::Network::None,
                )
                .await?;
            let result = async {
                s.restore(&snapshot).await?;
                verify(s.as_ref(), spec, "fresh", false, cancel)
                    .await
                    .map_err(grade_err)
            }
            .await;
            super::solve::finish(s, result).await?
        }
        (PatchInput::Gold(gold), _) => {
            check_verifier_network(id, spec).map_err(grade_err)?;
            let network = agent_network(id, spec).map_err(grade_err)?;
            if gold.text().is_empty() {
                return Err(infra(format!(
                    "Harbor task {id} has no solution/solve.sh to check"
                )));
            }
            let solution = solution_bytes(gold.text())?;
            let s = place
                .sandbox(job.task.base(), spec, Phase::Agent, None, network.clone())
                .await?;
            let timeout = match spec.config.agent.timeout_sec {
                Some(t) => Duration::from_secs_f64(t).min(job.timeout()),
                None => job.timeout(),
            };
            let result = async {
                let r = run_oracle(s.as_ref(), spec, &solution, timeout, cancel).await?;
                let out = r.output.clone();
                if network != crate::backend::Network::None {
                    s.set_network(false).await?;
                }
                let run = verify(s.as_ref(), spec, "oracle", false, cancel)
                    .await
                    .map_err(grade_err)?;
                Ok((run, out))
            }
            .await;
            let (run, out) = super::solve::finish(s, result).await?;
            blobs.insert(
                "oracle_log".to_string(),
                store
                    .put_blob(&scrub::scrub(&out, &scrub::secret_values()).0)
                    .map_err(WorkError::store)?,
            );
            run
        }
        (PatchInput::Empty, _) => {
            check_verifier_network(id, spec).map_err(grade_err)?;
            let s = place
                .sandbox(
                    job.task.base(),
                    spec,
                    Phase::Grade,
                    None,
                    crate::backend::Network::None,
                )
                .await?;
            let result = verify(s.as_ref(), spec, "nop", false, cancel)
                .await
                .map_err(grade_err);
            super::solve::finish(s, result).await?
        }
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
        blobs,
    })
}
