//! The executor seam: the dispatcher hands a node's job to a [`Runner`] and gets back the
//! node's record or a typed error, whether the job ran in this process ([`InProcess`]) or was
//! shipped to a worker (`slurm_runner.rs`). A runner says what becomes of a shipped node
//! (queued, running where, resubmitted) through [`Progress`] messages the dispatcher turns into
//! events: runners print nothing.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::backend::Backend;
pub use crate::events::Placement;
use crate::graph::NodeJob;
use crate::stages::{WorkError, WorkOutput};
use crate::store::{ActionRecord, Output, RECORD_SCHEMA, Store};
use crate::tasks::TaskSet;

/// One node to run.
pub struct NodeRun {
    pub job: NodeJob,
    pub key: String,
    pub address: String,
    /// The share of its stage's remaining budget a solve may spend.
    pub budget_share: Option<f64>,
    /// A report's output directory.
    pub out_dir: Option<PathBuf>,
    /// `apply --rerun --timeout`: the solve's deadline instead of its job's (the key, and the
    /// job the record shows, are the job's).
    pub deadline: Option<std::time::Duration>,
}

/// Where a runner sends a node's placements: (node id, placement).
pub type ProgressSink = mpsc::UnboundedSender<(usize, Placement)>;

/// What a runner gets beside the node: where its placements go, and the apply's cancellation
/// (Ctrl-C: kill what runs here, cancel what is queued elsewhere).
#[derive(Clone)]
pub struct NodeContext {
    pub id: usize,
    pub sink: ProgressSink,
    pub cancel: CancellationToken,
}

impl NodeContext {
    pub fn placed(&self, p: Placement) {
        let _ = self.sink.send((self.id, p));
    }
}

/// Runs nodes: here, or somewhere else.
#[async_trait::async_trait]
pub trait Runner: Send + Sync {
    async fn run(&self, node: NodeRun, cx: NodeContext) -> Result<ActionRecord, WorkError>;
}

/// Runs a node in this process, on this machine's backend: what a node's work needs is the
/// store (inputs by digest, blobs out), the backend, and the datasets (a sample's content by
/// snapshot digest). Nothing of the manifest.
#[derive(Clone)]
pub struct InProcess {
    pub store: Store,
    pub backend: Arc<dyn Backend>,
    pub datasets: Arc<BTreeMap<String, TaskSet>>,
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

impl InProcess {
    async fn work(
        &self,
        node: &NodeRun,
        cancel: &CancellationToken,
    ) -> Result<WorkOutput, WorkError> {
        Ok(match &node.job {
            NodeJob::Sample(j) => {
                let set = self
                    .datasets
                    .values()
                    .find(|s| s.snapshot == j.dataset.snapshot)
                    .ok_or_else(|| WorkError::Bug("the sample's dataset is not loaded".into()))?;
                let out = j.run(set).map_err(WorkError::Infra)?;
                let bytes = serde_json::to_vec(&out.tasks).expect("ids serialize");
                let digest = self.store.put_blob(&bytes).map_err(WorkError::store)?;
                WorkOutput {
                    output: Output::Sample(out),
                    blobs: crate::store::Blobs::from([("tasks".to_string(), digest)]),
                }
            }
            NodeJob::Grade(j) => {
                crate::stages::grade(
                    j,
                    &self.store,
                    self.backend.as_ref(),
                    &node.address,
                    &node.key,
                    cancel,
                )
                .await?
            }
            NodeJob::Solve(j) => {
                let longer;
                let j = match node.deadline {
                    Some(d) => {
                        longer = crate::jobs::SolveJob {
                            timeout_ms: d.as_millis() as u64,
                            ..(**j).clone()
                        };
                        &longer
                    }
                    None => j,
                };
                crate::stages::solve(
                    j,
                    &self.store,
                    self.backend.as_ref(),
                    node.budget_share,
                    &node.address,
                    &node.key,
                    cancel,
                )
                .await?
            }
            NodeJob::Report(j) => {
                let (store, j) = (self.store.clone(), j.clone());
                let out = node.out_dir.clone().unwrap_or_else(|| j.out.0.clone());
                tokio::task::spawn_blocking(move || crate::stages::write_report(&store, &j, &out))
                    .await
                    .map_err(|e| WorkError::Infra(e.to_string()))??
            }
        })
    }
}

#[async_trait::async_trait]
impl Runner for InProcess {
    async fn run(&self, node: NodeRun, cx: NodeContext) -> Result<ActionRecord, WorkError> {
        let started_at = now();
        let t0 = Instant::now();
        let out = self.work(&node, &cx.cancel).await?;
        let mut rec = ActionRecord {
            schema: RECORD_SCHEMA,
            key: node.key,
            job: serde_json::Value::Null,
            output: out.output,
            blobs: out.blobs,
            bench_version: env!("CARGO_PKG_VERSION").to_string(),
            started_at,
            duration_ms: t0.elapsed().as_millis() as u64,
        };
        match &node.job {
            // A report's job (its inputs: a row per node) is written as it is serialized,
            // never made into a JSON tree (several times its size); its record comes back
            // without it, as the apply keeps every record it computes.
            NodeJob::Report(j) => self.store.put_action_with(&rec.with_job(&**j)),
            job => {
                rec.job = job.explain();
                self.store.put_action(&rec)
            }
        }
        .map_err(WorkError::store)?;
        Ok(rec)
    }
}
