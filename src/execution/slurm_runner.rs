//! Nodes placed on Slurm: a solve or grade is shipped (its input root uploaded to the shared
//! cache, `ship.rs`), submitted as a job running `bench worker`, watched, and its result taken
//! from the shared cache when the job ends, verified and trusted as any cached record (so a
//! tampered or forged result is refused like one). Slurm is placement only: the node's key is
//! the same wherever it runs.
//!
//! Faults: a job lost to a dead node, a preemption or its time limit is submitted again, at
//! most `attempts` times, each submission a placement event; a job cancelled by hand fails its
//! node (an infrastructure error naming the job); Ctrl-C cancels the node's job. The job id is
//! kept in the spool beside the job's output, so an apply that dies (kill -9) loses nothing:
//! the next apply takes the results that landed meanwhile from the cache, follows the jobs
//! still queued or running, and submits only the rest.
//!
//! Watching is shared: one `squeue` call per poll answers for every job in flight. So is
//! submitting: the nodes that become ready together (a stage's wave, resubmissions after a
//! node died) go out as one array job, one `sbatch` for up to a thousand of them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use super::runner::{NodeContext, NodeRun, Placement, Runner};
use super::slurm::{JobId, JobState, Slurm, Submit};
use super::worker::WorkerReport;
use crate::cache::{Fetch, RemoteCache};
use crate::graph::NodeJob;
use crate::jobs::Kind;
use crate::stages::WorkError;
use crate::store::{ActionRecord, Store};

const ENGINE: &str = "slurm";

/// How jobs are submitted, from `[execution]`.
#[derive(Debug, Clone)]
pub struct SlurmPlacement {
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    pub sbatch: Vec<String>,
    pub cpus: Option<u32>,
    pub mem_mb: Option<u64>,
    /// `None`: the node's timeout plus [`MARGIN`].
    pub time_limit: Option<Duration>,
    pub attempts: u32,
    /// The bench the jobs run.
    pub bench: PathBuf,
    /// Where jobs write their output, reports and ids (shared with the cluster's nodes).
    pub spool: PathBuf,
    pub worker_store: Option<PathBuf>,
    /// The shared cache's URL, as the workers open it.
    pub cache_url: String,
    /// The largest object a worker downloads.
    pub max_object_bytes: u64,
    /// CPUs of a docker container on the workers (`[backend] cpus`).
    pub container_cpus: f64,
    /// How often jobs' states are read.
    pub poll: Duration,
}

/// What a job's time limit adds to its node's timeout: the worker's setup (its inputs, a
/// sandbox, an agent image) and the upload.
pub const MARGIN: Duration = Duration::from_secs(15 * 60);

/// How long a submission waits for others to share its array job.
const BATCH_WINDOW: Duration = Duration::from_millis(200);

/// The most tasks of one array job (Slurm's `MaxArraySize` defaults to 1001).
const MAX_ARRAY: usize = 1000;

/// A submission waiting for its array job, and where its task's id goes.
type Waiting = (Submit, tokio::sync::oneshot::Sender<Result<JobId, String>>);

/// Submits what waited together: the jobs sharing their options as one array job each (a
/// thousand tasks at most), every waiting node told its task's id or the error.
async fn submit_together(slurm: &Slurm, waiting: Vec<Waiting>) {
    let mut groups: Vec<Vec<Waiting>> = Vec::new();
    for w in waiting {
        let shares = |g: &&mut Vec<Waiting>| {
            g.len() < MAX_ARRAY && g[0].0.options() == w.0.options() && g[0].0.env == w.0.env
        };
        match groups.iter_mut().find(|g| shares(g)) {
            Some(g) => g.push(w),
            None => groups.push(vec![w]),
        }
    }
    for group in groups {
        let (jobs, replies): (Vec<Submit>, Vec<_>) = group.into_iter().unzip();
        match slurm.submit_array(&jobs).await {
            Ok(ids) => {
                for (reply, id) in replies.into_iter().zip(ids) {
                    let _ = reply.send(Ok(id));
                }
            }
            Err(e) => {
                for reply in replies {
                    let _ = reply.send(Err(e.to_string()));
                }
            }
        }
    }
}

/// The job of a node, as the spool keeps it across applies.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
struct Submitted {
    job: JobId,
    attempt: u32,
}

/// The states of the jobs in flight, read for all of them at once.
#[derive(Default)]
struct Watch {
    jobs: BTreeSet<JobId>,
    states: BTreeMap<JobId, JobState>,
    read_at: Option<Instant>,
}

/// Runs solves and grades as Slurm jobs.
pub struct SlurmRunner {
    slurm: Slurm,
    remote: Arc<dyn RemoteCache>,
    store: Store,
    placement: SlurmPlacement,
    watch: Mutex<Watch>,
    /// Submissions waiting for the batch window to close.
    batch: Arc<std::sync::Mutex<Vec<Waiting>>>,
}

fn infra(m: impl Into<String>) -> WorkError {
    WorkError::Infra(m.into())
}

impl SlurmRunner {
    pub fn new(
        slurm: Slurm,
        remote: Arc<dyn RemoteCache>,
        store: Store,
        placement: SlurmPlacement,
    ) -> SlurmRunner {
        SlurmRunner {
            slurm,
            remote,
            store,
            placement,
            watch: Mutex::new(Watch::default()),
            batch: Arc::default(),
        }
    }

    fn spool_file(&self, key: &str, ext: &str) -> PathBuf {
        self.placement.spool.join(format!("{key}.{ext}"))
    }

    /// The record of `key` if a trusted worker's verified result is in the cache (now in the
    /// local store too).
    async fn landed(&self, key: &str, kind: Kind) -> Result<Option<ActionRecord>, String> {
        match self.remote.fetch(key, kind, &self.store).await {
            Fetch::Hit(f) => Ok(Some(f.record)),
            Fetch::Miss => Ok(None),
            // A refused result (tampered, forged, misfiled) is no result: the node runs.
            Fetch::Rejected(_) => Ok(None),
            Fetch::Unreachable(m) => Err(m),
        }
    }

    /// The job's state, read with every other job in flight when the last read is older than
    /// the poll interval.
    async fn state(&self, job: JobId) -> Result<Option<JobState>, WorkError> {
        let mut w = self.watch.lock().await;
        w.jobs.insert(job);
        let stale = w.read_at.is_none_or(|t| t.elapsed() >= self.placement.poll)
            || !w.states.contains_key(&job);
        if stale {
            let ids: Vec<JobId> = w.jobs.iter().copied().collect();
            let states = self
                .slurm
                .states(&ids)
                .await
                .map_err(|e| infra(e.to_string()))?;
            w.states = states;
            w.read_at = Some(Instant::now());
        }
        Ok(w.states.get(&job).cloned())
    }

    async fn forget(&self, job: JobId) {
        let mut w = self.watch.lock().await;
        w.jobs.remove(&job);
        w.states.remove(&job);
    }

    fn submit_spec(&self, node: &NodeRun, kind: Kind, attempt: u32) -> Submit {
        let p = &self.placement;
        let key = &node.key;
        let mut argv = vec![
            p.bench.display().to_string(),
            "worker".into(),
            "--kind".into(),
            kind.name().into(),
            "--key".into(),
            key.clone(),
            "--cache".into(),
            p.cache_url.clone(),
            "--address".into(),
            node.address.clone(),
            "--cpus".into(),
            p.container_cpus.to_string(),
            "--max-object-size".into(),
            p.max_object_bytes.to_string(),
            "--report".into(),
            self.spool_file(key, &format!("{attempt}.json"))
                .display()
                .to_string(),
        ];
        if let Some(s) = &p.worker_store {
            argv.extend(["--store".into(), s.display().to_string()]);
        }
        if let Some(share) = node.budget_share {
            argv.extend(["--budget-share".into(), share.to_string()]);
        }
        let timeout = match &node.job {
            NodeJob::Solve(s) => s.timeout(),
            NodeJob::Grade(g) => g.timeout(),
            _ => Duration::ZERO,
        };
        Submit {
            name: format!("bench-{}-{}", kind.name(), &key[..12]),
            argv,
            output: self.spool_file(key, &format!("{attempt}.out")),
            partition: p.partition.clone(),
            account: p.account.clone(),
            qos: p.qos.clone(),
            time_limit: Some(p.time_limit.unwrap_or(timeout + MARGIN)),
            cpus: p.cpus,
            mem_mb: p.mem_mb,
            // bench resubmits a lost job itself (bounded, each attempt an event); Slurm's own
            // requeue would hide it.
            requeue: Some(false),
            extra: p.sbatch.clone(),
            env: Vec::new(),
        }
    }

    async fn submit(
        &self,
        node: &NodeRun,
        kind: Kind,
        attempt: u32,
    ) -> Result<Submitted, WorkError> {
        let (reply, id) = tokio::sync::oneshot::channel();
        let first = {
            let mut batch = self.batch.lock().expect("the batch lock");
            batch.push((self.submit_spec(node, kind, attempt), reply));
            batch.len() == 1
        };
        if first {
            // The first to wait submits for all, in a task of its own: a node dropped while it
            // waits leaves the others submitted.
            let (batch, slurm) = (self.batch.clone(), self.slurm.clone());
            tokio::spawn(async move {
                tokio::time::sleep(BATCH_WINDOW).await;
                let waiting = std::mem::take(&mut *batch.lock().expect("the batch lock"));
                submit_together(&slurm, waiting).await;
            });
        }
        let job = id
            .await
            .map_err(|_| WorkError::Bug("a Slurm submission was dropped".into()))?
            .map_err(infra)?;
        let s = Submitted { job, attempt };
        let bytes = serde_json::to_vec(&s).expect("ids serialize");
        crate::files::write_atomic(&self.spool_file(&node.key, "job"), &bytes)
            .map_err(|e| infra(format!("cannot record Slurm job {job}: {e}")))?;
        Ok(s)
    }

    /// Uploads the node's input root to the shared cache and submits its first job.
    async fn ship(&self, node: &NodeRun, kind: Kind) -> Result<Submitted, WorkError> {
        let (job, store, key) = (node.job.clone(), self.store.clone(), node.key.clone());
        let digests = tokio::task::spawn_blocking(move || super::ship::stage(&job, &key, &store))
            .await
            .map_err(|e| infra(e.to_string()))?
            .map_err(|e| infra(e.to_string()))?;
        self.remote
            .put_blobs(&digests, &self.store)
            .await
            .map_err(|e| infra(e.to_string()))?;
        self.submit(node, kind, 1).await
    }

    /// The job an earlier apply submitted for `key`, if Slurm still runs or queues it.
    async fn earlier(&self, key: &str) -> Option<Submitted> {
        let bytes = fs_err::read(self.spool_file(key, "job")).ok()?;
        let s: Submitted = serde_json::from_slice(&bytes).ok()?;
        match self.state(s.job).await.ok()?? {
            JobState::Pending { .. } | JobState::Running { .. } => Some(s),
            _ => {
                self.forget(s.job).await;
                None
            }
        }
    }

    /// The report the worker of `attempt` wrote, if it did.
    fn report(&self, key: &str, attempt: u32) -> Option<WorkerReport> {
        let bytes = fs_err::read(self.spool_file(key, &format!("{attempt}.json"))).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Why a job that ended gave no result: the worker's report, else Slurm's word.
    fn ended_without_result(&self, key: &str, s: Submitted, state: &JobState) -> WorkError {
        let out = self.spool_file(key, &format!("{}.out", s.attempt));
        if state.is_lost() || matches!(state, JobState::Timeout) {
            // Slurm stopped it (its worker saw only a SIGTERM): Slurm's word first.
            let worker = match self.report(key, s.attempt) {
                Some(WorkerReport::Failed { error, .. }) => error.message(),
                Some(WorkerReport::Refused { reason, .. }) => reason,
                Some(WorkerReport::Done { .. }) => "uploaded a result not trusted here".into(),
                None => "no report".into(),
            };
            return infra(format!(
                "Slurm job {} ended {} (its worker: {worker}); its output: {}",
                s.job,
                describe(state),
                out.display()
            ));
        }
        match self.report(key, s.attempt) {
            Some(WorkerReport::Failed { error, .. }) => error,
            Some(WorkerReport::Refused { reason, .. }) => infra(format!(
                "the worker of Slurm job {} refused the job: {reason}",
                s.job
            )),
            Some(WorkerReport::Done { .. }) => infra(format!(
                "Slurm job {} reported its result uploaded, but the shared cache has no trusted, valid record of {key} (is the workers' key in `[cache] trust`?)",
                s.job
            )),
            None => infra(format!(
                "Slurm job {} ended {} without a report; its output: {}",
                s.job,
                describe(state),
                out.display()
            )),
        }
    }
}

fn describe(state: &JobState) -> String {
    match state {
        JobState::Completed { .. } => "completed".into(),
        JobState::Failed { exit, .. } => format!("failed ({exit})"),
        JobState::Cancelled => "cancelled".into(),
        JobState::Timeout => "at its time limit".into(),
        JobState::NodeFail => "with its node failing".into(),
        JobState::Preempted => "preempted".into(),
        JobState::OutOfMemory => "out of memory".into(),
        JobState::Gone => "forgotten by slurmctld".into(),
        JobState::Pending { reason } => format!("pending ({reason})"),
        JobState::Running { node } => format!("running on {node}"),
    }
}

fn kind_of(job: &NodeJob) -> Option<Kind> {
    match job {
        NodeJob::Solve(_) => Some(Kind::Solve),
        NodeJob::Grade(_) => Some(Kind::Grade),
        NodeJob::Sample(_) | NodeJob::Report(_) => None,
    }
}

#[async_trait::async_trait]
impl Runner for SlurmRunner {
    async fn run(&self, node: NodeRun, cx: NodeContext) -> Result<ActionRecord, WorkError> {
        let kind = kind_of(&node.job).ok_or_else(|| infra("only solves and grades are shipped"))?;
        let key = node.key.clone();
        if let Some(rec) = self.landed(&key, kind).await.map_err(infra)? {
            return Ok(rec);
        }
        fs_err::create_dir_all(&self.placement.spool).map_err(|e| {
            infra(format!(
                "cannot make the spool {}: {e}",
                self.placement.spool.display()
            ))
        })?;
        let mut current = match self.earlier(&key).await {
            Some(s) => s,
            None => self.ship(&node, kind).await?,
        };
        let mut told: Option<Placement> = None;
        let mut tell = |p: Placement| {
            if told.as_ref() != Some(&p) {
                cx.placed(p.clone());
                told = Some(p);
            }
        };
        tell(Placement::Queued {
            engine: ENGINE.into(),
            job_id: current.job.to_string(),
            attempt: current.attempt,
        });
        loop {
            tokio::select! {
                _ = tokio::time::sleep(self.placement.poll) => {}
                _ = cx.cancel.cancelled() => {
                    let _ = self.slurm.cancel(&[current.job]).await;
                    self.forget(current.job).await;
                    let _ = fs_err::remove_file(self.spool_file(&key, "job"));
                    return Err(WorkError::Cancelled);
                }
            }
            let Some(state) = self.state(current.job).await? else {
                continue;
            };
            let (job_id, attempt) = (current.job.to_string(), current.attempt);
            match &state {
                JobState::Pending { .. } => tell(Placement::Queued {
                    engine: ENGINE.into(),
                    job_id,
                    attempt,
                }),
                JobState::Running { node } => tell(Placement::Running {
                    engine: ENGINE.into(),
                    job_id,
                    node: node.clone(),
                    attempt,
                }),
                ended => {
                    self.forget(current.job).await;
                    // A job that ran between two reads: where it ran.
                    if let JobState::Completed { node: Some(node) }
                    | JobState::Failed {
                        node: Some(node), ..
                    } = ended
                    {
                        tell(Placement::Running {
                            engine: ENGINE.into(),
                            job_id: job_id.clone(),
                            node: node.clone(),
                            attempt,
                        });
                    }
                    if let Some(rec) = self.landed(&key, kind).await.map_err(infra)? {
                        let _ = fs_err::remove_file(self.spool_file(&key, "job"));
                        return Ok(rec);
                    }
                    // A worker that says it uploaded while no valid record is there: its
                    // result was refused (tampered with, say), so the node runs again.
                    let uploaded = matches!(
                        self.report(&key, current.attempt),
                        Some(WorkerReport::Done { .. })
                    );
                    let lost = ended.is_lost() || matches!(ended, JobState::Timeout) || uploaded;
                    if matches!(ended, JobState::Cancelled) {
                        let _ = fs_err::remove_file(self.spool_file(&key, "job"));
                        return Err(infra(format!(
                            "Slurm job {job_id} was cancelled outside bench (scancel?); the node is not cached and runs again on the next apply"
                        )));
                    }
                    if !lost || attempt >= self.placement.attempts {
                        let _ = fs_err::remove_file(self.spool_file(&key, "job"));
                        let mut e = self.ended_without_result(&key, current, ended);
                        if lost {
                            e = infra(format!(
                                "{} (lost {attempt} times, the most `[execution] attempts` allows)",
                                e.message()
                            ));
                        }
                        return Err(e);
                    }
                    current = self.submit(&node, kind, attempt + 1).await?;
                    tell(Placement::Resubmitted {
                        engine: ENGINE.into(),
                        job_id,
                        lost: describe(ended),
                        attempt: current.attempt,
                    });
                }
            }
        }
    }
}
