//! `bench worker`: runs one shipped job where an engine placed it (a Slurm node). Given the
//! job's kind and key and the shared cache's URL, it rebuilds the job from its key (every part
//! verified, `ship.rs`), checks that this machine's backend facts are the job's (its isolation,
//! its task image's ID, its limits: a result computed here must be what the key says), runs it
//! with this machine's sandbox, and uploads the record signed with this machine's key. The
//! apply that shipped the job sees it arrive through the cache, verified as any cached record.
//!
//! What it tells the apply beyond the record: a [`WorkerReport`] written to `--report`, so an
//! error (infrastructure, a refused job) crosses the process boundary typed.
//!
//! Secrets come from the worker's own environment (the harness's `env` names) and are scrubbed
//! from everything it stores, as on the apply's machine.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::runner::{InProcess, NodeContext, NodeRun, Runner};
use super::ship::{ShipError, Source};
use crate::backend::{Backend, BackendConfig, Resources};
use crate::cache::RemoteCache;
use crate::events::Events;
use crate::graph::NodeJob;
use crate::jobs::{BackendFacts, Kind};
use crate::stages::WorkError;
use crate::store::Store;
use crate::tasks::TaskBase;
use crate::types::{BackendKind, Digest};

/// What `bench worker` is asked to do.
pub struct WorkerArgs {
    pub kind: Kind,
    pub key: Digest,
    /// The node's address in the apply that shipped it (labels, logs).
    pub address: String,
    /// This machine's store: the job's parts and its outputs before they are uploaded.
    pub store: PathBuf,
    /// A solve's share of its stage's remaining budget.
    pub budget_share: Option<f64>,
    /// CPUs of a docker container (the apply's `[backend] cpus`).
    pub cpus: f64,
}

/// How a worker ended, written for the apply that shipped the job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum WorkerReport {
    /// The record is in the shared cache.
    Done { key: String },
    /// The job ran and failed (or was cancelled): not cached.
    Failed { key: String, error: WorkError },
    /// The job was not run here: why (another backend, a part that does not verify).
    Refused { key: String, reason: String },
}

/// Why a worker refuses a job: never a result under another key.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error(transparent)]
    Ship(#[from] ShipError),
    #[error(
        "this worker's backend differs from the job's: {0}; a result computed here would not be the one its key names (run the job on a machine whose backend matches, or apply again here so the keys follow this machine)"
    )]
    Facts(String),
    #[error("{0}")]
    Setup(String),
}

/// The parts of a job, read from the local store or downloaded into it from the shared cache.
struct CacheSource<'a> {
    remote: &'a dyn RemoteCache,
    store: &'a Store,
}

#[async_trait::async_trait]
impl Source for CacheSource<'_> {
    async fn bytes(&self, digest: &Digest) -> Result<Vec<u8>, ShipError> {
        let missing = |message: String| ShipError::Missing {
            digest: digest.to_string(),
            message,
        };
        if !self.store.has_blob(digest) {
            self.remote
                .get_blob(digest, self.store)
                .await
                .map_err(|e| missing(e.to_string()))?;
        }
        self.store
            .get_blob(digest)
            .map_err(|e| missing(e.to_string()))
    }

    fn trees(&self) -> PathBuf {
        self.store.root().join("trees")
    }
}

/// The jobs whose facts a job's run depends on: itself and the grade a solve confirms.
fn facts_of(job: &NodeJob) -> Vec<(&BackendFacts, &TaskBase)> {
    match job {
        NodeJob::Grade(g) => vec![(&g.backend, g.task.base())],
        NodeJob::Solve(s) => {
            let mut v = vec![(&s.backend, s.task.base())];
            if let Some(c) = &s.confirm {
                v.push((&c.backend, c.task.base()));
            }
            v
        }
        NodeJob::Sample(_) | NodeJob::Report(_) => Vec::new(),
    }
}

/// Where facts differ, in words (`None`: they agree).
fn differs(job: &BackendFacts, here: &BackendFacts) -> Option<String> {
    let mut out = Vec::new();
    if job.kind != here.kind {
        out.push(format!(
            "backend {:?} here, {:?} in the job",
            here.kind, job.kind
        ));
    }
    if job.isolation != here.isolation {
        out.push(format!(
            "isolation `{}` here, `{}` in the job",
            here.isolation, job.isolation
        ));
    }
    if job.image != here.image {
        out.push(format!(
            "task image {} here, {} in the job",
            here.image.as_deref().unwrap_or("missing"),
            job.image.as_deref().unwrap_or("none")
        ));
    }
    if (job.memory_bytes, job.pids) != (here.memory_bytes, here.pids) {
        out.push("other container limits".to_string());
    }
    (!out.is_empty()).then(|| out.join("; "))
}

/// Opens this machine's backend for `job` and checks its facts against the job's.
async fn backend_for(
    job: &NodeJob,
    args: &WorkerArgs,
    store: &Store,
    events: &Events,
) -> Result<Arc<dyn Backend>, Refusal> {
    let facts = facts_of(job);
    let Some((first, _)) = facts.first() else {
        return Err(Refusal::Setup("only solves and grades are shipped".into()));
    };
    let resources = Resources {
        cpus: args.cpus,
        memory_bytes: first.memory_bytes.unwrap_or(0),
        pids: first.pids.unwrap_or(0),
    };
    let refs: BTreeSet<String> = facts
        .iter()
        .flat_map(|(_, base)| match base {
            TaskBase::Image { image, .. } => vec![image.clone()],
            // A build context's base images: its environment's identity.
            TaskBase::Build { from, .. } => from.clone(),
            TaskBase::Dir { .. } => Vec::new(),
        })
        .collect();
    let mut config = BackendConfig {
        kind: first.kind,
        host: None,
        hosts: &[],
        images: &BTreeMap::new(),
        resources,
        containers: 8,
    };
    let images = crate::backend::resolve_images(&config, &refs, events)
        .await
        .map_err(Refusal::Setup)?;
    config.images = &images;
    for (want, base) in &facts {
        let here = match first.kind {
            BackendKind::Local => BackendFacts {
                kind: BackendKind::Local,
                image: None,
                memory_bytes: None,
                pids: None,
                isolation: crate::backend::jail::isolation().to_string(),
            },
            BackendKind::Docker => crate::backend::docker_facts(&images, base, &resources),
        };
        if let Some(why) = differs(want, &here) {
            return Err(Refusal::Facts(why));
        }
    }
    let run_id = format!("worker-{}", &args.key.as_str()[..12]);
    crate::backend::open(crate::backend::OpenSpec {
        config,
        store_root: store.root(),
        tmp: store.tmp_dir(),
        hidden: vec![store.root().to_path_buf()],
        run_id: &run_id,
        events,
        store_locked: false,
    })
    .await
    .map_err(Refusal::Setup)
}

/// Registers the names of the variables a shipped solve passes to its agents: their values
/// (this machine's) are scrubbed from everything stored.
fn register_secrets(job: &NodeJob) {
    if let NodeJob::Solve(s) = job {
        for h in s.team.get().harnesses.values() {
            crate::harness::scrub::register_passed(&h.env);
        }
    }
}

/// Runs the job `args` names and uploads its record through `remote` (signed). Cancelled by
/// `cancel` (Slurm's SIGTERM on `scancel` or a time limit).
pub async fn work(
    args: &WorkerArgs,
    remote: Arc<dyn RemoteCache>,
    events: &Events,
    cancel: CancellationToken,
) -> WorkerReport {
    let key = args.key.to_string();
    let refused = |reason: String| WorkerReport::Refused {
        key: key.clone(),
        reason,
    };
    let failed = |error: WorkError| WorkerReport::Failed {
        key: key.clone(),
        error,
    };
    if !remote.can_push() {
        return refused(crate::cache::CacheError::NoSigningKey.to_string());
    }
    let store = match Store::open(&args.store) {
        Ok(s) => s,
        Err(e) => {
            return refused(format!(
                "cannot open the store {}: {e}",
                args.store.display()
            ));
        }
    };
    let source = CacheSource {
        remote: remote.as_ref(),
        store: &store,
    };
    let job = match super::ship::rebuild(args.kind, &args.key, &source).await {
        Ok(j) => j,
        Err(e) => return refused(Refusal::Ship(e).to_string()),
    };
    register_secrets(&job);
    let backend = match backend_for(&job, args, &store, events).await {
        Ok(b) => b,
        Err(e) => return refused(e.to_string()),
    };
    let runner = InProcess {
        store: store.clone(),
        backend: backend.clone(),
        datasets: Arc::new(BTreeMap::new()),
    };
    let (sink, _placements) = tokio::sync::mpsc::unbounded_channel();
    let node = NodeRun {
        job,
        key: key.clone(),
        address: args.address.clone(),
        budget_share: args.budget_share,
        out_dir: None,
        deadline: None,
    };
    let cx = NodeContext {
        id: 0,
        sink,
        cancel,
    };
    let result = runner.run(node, cx).await;
    backend.finish().await;
    if let Err(e) = result {
        return failed(e);
    }
    match remote.push(&key, &store, false).await {
        Ok(_) => WorkerReport::Done { key },
        Err(e) => failed(WorkError::Infra(format!(
            "the result was computed but not uploaded: {e}"
        ))),
    }
}

/// Writes `report` to `path` atomically (the apply reads it when the job ends).
pub fn write_report(path: &Path, report: &WorkerReport) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(report).expect("reports serialize");
    crate::files::write_atomic(path, &bytes)
}
