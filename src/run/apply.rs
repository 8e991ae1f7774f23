//! `bench apply`: the [`Dispatcher`]. It owns all run state; node work runs in tokio tasks,
//! bounded by the pools (`pools.rs`) and budgets (`budget.rs`), and reports back over a channel.
//! Each key runs once per apply: addresses that share a key wait for the one run, and a key that
//! completed earlier in the apply is a hit. Completed results are written to the store by the
//! worker before it reports, so a crash at any instant loses nothing completed. A stored input
//! that fails verification (a corrupt blob) reopens the node that produced it, on this apply.
//! Ctrl-C (or SIGTERM) stops launching, cancels running nodes (killing their processes), and
//! leaves the store valid.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::budget::Budgets;
use super::error::ApplyError;
use super::pools::{Demand, Pool, Pools};
use super::ready::ReadyQueue;
use super::remote::{Reads, RemoteSummary};
use crate::backend::Backend;
use crate::cache::{CacheError, RemoteCache};
use crate::events::{
    CacheHit, Event, Events, NodeFinished, NodePlaced, NodeRetried, NodeShared, NodeStarted,
    Outcome, RunStarted, StageCounts, StagePlan, Tally,
};
use crate::execution::runner::{InProcess, NodeContext, NodeRun, Placement, ProgressSink, Runner};
use crate::graph::{Graph, Mode, NodeJob, NodeKind, NodeState};
use crate::manifest::{Manifest, StageKind, Topology};
use crate::stages::{WorkError, materialize};
use crate::store::{
    ActionRecord, Index, IndexView, NodeStatus, Output, RECORD_SCHEMA, RunNode, RunRecord,
    RunStatus, Store,
};
use crate::tasks::TaskSet;

pub struct ApplyOptions {
    /// The command line, for the run log and the lock.
    pub command: String,
    /// Where the apply's events go (the reporter).
    pub events: Events,
    /// Records read ahead (`Store::prefetch_light`): lookups of their keys read nothing.
    pub prefetched: HashMap<String, crate::store::ActionRecord>,
    /// The manifest's index as the caller read it (to prefetch); `None`: read it here.
    pub index: Option<crate::store::Index>,
    /// Whether an apply in which every node was cached saves its no-op memo (`noop.rs`).
    pub noop_memo: bool,
    /// Re-hash every blob a cached result needs (`apply --verify`): a corrupt one is removed
    /// and its node recomputes in this apply.
    pub verify_blobs: bool,
    /// The shared remote cache (`[cache] remote`): asked for what is missing here before it
    /// runs, and given what runs here (when `push` and a signing key allow).
    pub remote: Option<Arc<dyn RemoteCache>>,
    pub push: bool,
    /// Runs solves and grades somewhere else (`[execution]`); `None`: here.
    pub shipped: Option<Arc<dyn Runner>>,
    /// `--rerun`: the solve addresses that run again as a new attempt (`rerun.rs`).
    pub rerun: HashMap<String, crate::graph::RerunOf>,
}

/// How an apply ended.
#[derive(Debug)]
pub struct ApplyResult {
    pub run_id: String,
    pub failed: Vec<(String, String)>,
    pub interrupted: bool,
    pub reports: Vec<PathBuf>,
    pub counts: BTreeMap<String, usize>,
    /// Per stage in the manifest's order, what its nodes' terminal events counted.
    pub stages: Vec<StageCounts>,
    /// What the remote cache served and took, if there is one.
    pub remote: Option<RemoteSummary>,
}

type Completion = (usize, Result<ActionRecord, WorkError>);

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

/// A new run id: the start time and a random-ish suffix.
pub fn new_run_id() -> String {
    format!(
        "{}-{}",
        jiff::Timestamp::now().strftime("%Y%m%dT%H%M%S%.3fZ"),
        &crate::key::digest(format!("{}{}", std::process::id(), now()).as_bytes())[..8]
    )
}

/// What a node needs from the pools: a solve or grade shipped to an engine (`[execution]`)
/// holds a place in the engine's queue and no sandbox here.
fn demand(m: &Manifest, stage: &str, kind: &NodeKind) -> Demand {
    let shipped = m.execution != crate::manifest::Execution::Local
        && matches!(
            kind,
            NodeKind::Solve { .. } | NodeKind::Grade { .. } | NodeKind::Gold { .. }
        );
    let (pool, sandboxes) = match kind {
        _ if shipped => (Pool::Shipped, 0),
        NodeKind::Solve { team, .. } => (
            Pool::Agents,
            // A review solve keeps the coder's sandbox while its reviewer's runs.
            if matches!(m.teams[team].topology, Topology::Review { .. }) {
                2
            } else {
                1
            },
        ),
        NodeKind::Report | NodeKind::Sample { .. } => (Pool::Jobs, 0),
        _ => (Pool::Jobs, 1),
    };
    let stage_cap = match &m.stages[stage].kind {
        StageKind::Solve(s) => s.concurrency.map(|c| c as usize),
        _ => None,
    };
    Demand {
        pool,
        stage: stage.to_string(),
        stage_cap,
        sandboxes,
    }
}

/// The state of one apply.
pub struct Dispatcher<'a> {
    m: Arc<Manifest>,
    store: Store,
    backend: Arc<dyn Backend>,
    /// Runs nodes here.
    runner: Arc<dyn Runner>,
    /// Runs solves and grades elsewhere (`[execution]`), if set.
    shipped: Option<Arc<dyn Runner>>,
    placements: ProgressSink,
    graph: Graph<'a>,
    pools: Pools,
    budgets: Budgets,
    events: Events,
    /// The terminal events so far, counted per stage.
    tally: Tally,
    /// Keys run by this apply -> the node that ran them: a node that finds one cached later
    /// shares that run (as the plan counts it), it is no cache hit.
    ran: HashMap<String, usize>,
    /// The backend's load line last emitted.
    last_load: Option<String>,
    /// Ready nodes not launched yet, in the order they became ready.
    queue: ReadyQueue,
    /// Key -> the node running it; other nodes of the key wait in `waiters`.
    inflight: HashMap<String, usize>,
    waiters: HashMap<String, Vec<usize>>,
    run: RunRecord,
    run_saved: bool,
    /// The manifest's index as the apply found it; what it saves is this with the address and
    /// key of every node marked in `indexed` ([`Dispatcher::index_now`]).
    index: Index,
    /// By node id: whether the node's address names its key in the index (it was cached or
    /// computed). A flag per node, not a second copy of every address and key.
    indexed: Vec<bool>,
    failed: Vec<(String, String)>,
    interrupted: bool,
    cancel: CancellationToken,
    tx: mpsc::UnboundedSender<Completion>,
    remote: Option<Arc<dyn RemoteCache>>,
    /// Whether finished nodes are uploaded (`[cache] push` and a signing key).
    push: bool,
    remote_summary: Option<RemoteSummary>,
    /// The remote cache's reads (with `remote`).
    reads: Option<Reads>,
    /// Write-behind uploads in flight, at most `UPLOADS` at once.
    uploads: tokio::task::JoinSet<Result<bool, CacheError>>,
    upload_slots: Arc<tokio::sync::Semaphore>,
}

/// Uploads to the remote cache at once.
const UPLOADS: usize = 8;

/// How long an apply waits between saves of its index and run record while nodes finish,
/// with `nodes` recorded so far: five seconds per whole 1,000 nodes, at least five and at most
/// sixty. A save writes every node recorded, so at a fixed period its cost per node finished
/// would grow with the apply's size; up to 12,000 nodes this period keeps it level (a save's
/// cost over its period is about the same at any size), and beyond, a killed apply's run
/// record is at most a minute behind. The last save, at the end, is always made.
fn flush_interval(nodes: usize) -> Duration {
    Duration::from_secs(5 * (nodes / 1000).clamp(1, 12) as u64)
}

impl<'a> Dispatcher<'a> {
    /// Runs the apply until nothing is left to launch or wait for: launches what the pools
    /// admit, then waits for a completion, a placement or a signal (Ctrl-C or SIGTERM cancel
    /// the running nodes, once). The index and the run record are saved at most every five
    /// seconds meanwhile.
    async fn drive(
        &mut self,
        rx: &mut mpsc::UnboundedReceiver<Completion>,
        placements: &mut mpsc::UnboundedReceiver<(usize, Placement)>,
    ) -> Result<(), ApplyError> {
        let mut last_flush = Instant::now();
        let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(ApplyError::Signal)?;
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        loop {
            if !self.interrupted {
                // Nodes the budget halts are settled at launch: the graph advances again, so what
                // reads them (the report, with its halted pairs shown as not run) is made and run.
                loop {
                    self.advance().await;
                    crate::timings::mark("nodes admitted");
                    if !self.launch()? {
                        break;
                    }
                }
                self.load();
            }
            if self.pools.active() == 0 {
                if self.interrupted || self.queue.is_empty() {
                    break;
                }
                return Err(ApplyError::Bug(
                    "work is queued but no pool slot is free".into(),
                ));
            }
            let completion = tokio::select! {
                c = rx.recv() => c,
                Some((id, p)) = placements.recv() => {
                    self.on_placed(id, p);
                    continue;
                }
                _ = &mut ctrl_c, if !self.interrupted => {
                    self.on_cancel("interrupted: cancelling running nodes");
                    continue;
                }
                _ = sigterm.recv(), if !self.interrupted => {
                    self.on_cancel("terminated: cancelling running nodes");
                    continue;
                }
            };
            let Some((id, result)) = completion else {
                break;
            };
            self.on_done(id, result);
            self.load();
            if last_flush.elapsed() > flush_interval(self.run.nodes.len()) {
                let _ = self.store.save_index(&self.m.path, &self.index_now());
                let _ = self.store.save_run(&self.run);
                last_flush = Instant::now();
            }
        }
        Ok(())
    }

    /// What the apply returns once its run is saved: the failures, whether it was interrupted,
    /// the reports it made, its nodes counted by status, `stages`' counts and the remote
    /// cache's summary. The graph is not freed: the process is about to exit.
    fn into_result(mut self, run_id: String, stages: Vec<StageCounts>) -> ApplyResult {
        let mut counts = BTreeMap::new();
        for n in self.run.nodes.values() {
            let s = serde_json::to_value(n.status)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            *counts.entry(s).or_insert(0) += 1;
        }
        let reports = self
            .graph
            .nodes
            .iter()
            .filter(|n| matches!(n.kind, NodeKind::Report) && n.state.record().is_some())
            .filter_map(|n| match &self.m.stages[&n.stage].kind {
                StageKind::Report(r) => Some(r.out.join("report.md")),
                _ => None,
            })
            .collect();
        let result = ApplyResult {
            run_id,
            failed: self.failed,
            interrupted: self.interrupted,
            reports,
            counts,
            stages,
            remote: self.remote_summary.take(),
        };
        // The process is about to exit: skip freeing the node graph, node by node.
        std::mem::forget(self.graph);
        result
    }

    /// Expands the graph and admits its new nodes; with a remote cache, the new nodes that
    /// would run are fetched first, as a pipeline (`remote::Reads`): each answer is applied
    /// as it arrives, and the nodes it makes known are asked for at once, while the other
    /// fetches go on. Returns once nothing is in flight (what the remote served is cached and
    /// expanded from; the rest is queued).
    async fn advance(&mut self) {
        let new = self.graph.advance();
        crate::timings::mark("graph advanced");
        let (mut reads, mut summary) = match (self.reads.take(), self.remote_summary.take()) {
            (Some(r), Some(s)) => (r, s),
            (reads, summary) => {
                (self.reads, self.remote_summary) = (reads, summary);
                self.admit(new);
                return;
            }
        };
        let mut new = new;
        loop {
            let now = reads.ask(&self.graph, new, &mut summary);
            self.admit(now);
            let answers = reads.answers().await;
            if answers.is_empty() {
                break;
            }
            let mut settled = Vec::new();
            for (key, answer) in answers {
                settled.extend(reads.settle(&mut self.graph, &key, answer, &mut summary));
            }
            settled.sort_unstable();
            self.admit(settled);
            new = self.graph.advance();
        }
        summary.rejected.sort();
        (self.reads, self.remote_summary) = (Some(reads), Some(summary));
    }

    /// Uploads a result computed here (write-behind: the apply goes on meanwhile).
    fn upload(&mut self, key: &str) {
        let Some(remote) = self.remote.clone().filter(|r| self.push && r.can_push()) else {
            return;
        };
        let (store, key, slots) = (
            self.store.clone(),
            key.to_string(),
            self.upload_slots.clone(),
        );
        self.uploads.spawn(async move {
            let _slot = slots.acquire_owned().await;
            remote.push(&key, &store, false).await
        });
    }

    /// Waits for the uploads (aborted when the apply was interrupted: an upload cut short
    /// leaves no visible entry) and counts them.
    async fn finish_uploads(&mut self) {
        if self.interrupted {
            self.uploads.abort_all();
        }
        while let Some(done) = self.uploads.join_next().await {
            let Some(summary) = self.remote_summary.as_mut() else {
                continue;
            };
            match done {
                Ok(Ok(_)) => summary.uploaded += 1,
                Ok(Err(CacheError::Unreachable { message, .. })) => {
                    summary.not_uploaded += 1;
                    summary.unreachable.get_or_insert(message);
                }
                Ok(Err(e)) => {
                    summary.not_uploaded += 1;
                    self.events.note(format!("remote cache: not uploaded: {e}"));
                }
                Err(_) => summary.not_uploaded += 1,
            }
        }
    }

    /// Takes the graph's new nodes: cached ones are recorded (a cached report is written
    /// again if its files are missing), ready ones are queued or wait for their key's run.
    fn admit(&mut self, new: Vec<usize>) {
        for id in new {
            let node = &self.graph.nodes[id];
            let (stage, address) = (node.stage.clone(), node.address.clone());
            let is_report = matches!(node.kind, NodeKind::Report);
            match node.state.clone() {
                NodeState::Cached(rec) => {
                    match self
                        .ran
                        .get(&rec.key)
                        .map(|&n| self.graph.nodes[n].address.clone())
                    {
                        // A key this apply ran: the node shares that run.
                        Some(with) => {
                            self.emit(Event::NodeShared(NodeShared {
                                stage: stage.clone(),
                                address: address.clone(),
                                key: rec.key.clone(),
                                with: with.clone(),
                            }));
                            self.emit(Event::NodeFinished(NodeFinished {
                                stage: stage.clone(),
                                address: address.clone(),
                                key: Some(rec.key.clone()),
                                outcome: Outcome::Done,
                                detail: describe(&rec),
                                shared_with: Some(with),
                                duration_ms: None,
                            }));
                        }
                        None => {
                            let remote = self.graph.served_by_remote(&rec.key);
                            self.emit(Event::CacheHit(CacheHit {
                                stage: stage.clone(),
                                address: address.clone(),
                                key: rec.key.clone(),
                                remote,
                            }));
                        }
                    }
                    self.mark_indexed(id);
                    self.note(&address, Some(rec.key.clone()), NodeStatus::Cached, None);
                    let m = self.m.clone();
                    if is_report {
                        crate::timings::mark("nodes noted");
                    }
                    if let (true, StageKind::Report(r)) = (is_report, &m.stages[&stage].kind)
                        && let Err(e) = materialize(&self.store, &rec.blobs, &r.out)
                    {
                        self.events.note(format!(
                            "cannot write the cached report: {e}; recomputing it"
                        ));
                        let _ = self.store.remove_action(&rec.key);
                        self.graph.reopen(id);
                        self.enqueue(id);
                    }
                }
                NodeState::Ready => self.enqueue(id),
                NodeState::Failed(e) => {
                    let key = self.graph.nodes[id].key.clone();
                    self.emit(Event::NodeFinished(NodeFinished {
                        stage: stage.clone(),
                        address: address.clone(),
                        key,
                        outcome: Outcome::Failed,
                        detail: e.clone(),
                        shared_with: None,
                        duration_ms: None,
                    }));
                    self.failed.push((address.clone(), e.clone()));
                    self.note(&address, None, NodeStatus::Failed, Some(e));
                }
                _ => {}
            }
        }
        for (path, reason) in std::mem::take(&mut self.graph.invalid) {
            self.events.note(format!(
                "record {} is not valid ({reason}); it was removed and its node recomputes",
                path.display()
            ));
        }
        for bad in std::mem::take(&mut self.graph.bad_blobs) {
            self.events
                .note(format!("{bad}; the node that wrote it recomputes"));
        }
    }

    /// Queues a ready node, or makes it wait for the node running its key.
    fn enqueue(&mut self, id: usize) {
        let key = self.graph.nodes[id]
            .key
            .clone()
            .expect("ready nodes have keys");
        match self.inflight.get(&key).copied() {
            None => {
                self.inflight.insert(key, id);
                let node = &self.graph.nodes[id];
                self.queue
                    .push(id, demand(&self.m, &node.stage, &node.kind));
            }
            Some(runner) => {
                // Same key as a queued or running node (an identical patch): wait for its
                // result.
                let node = &self.graph.nodes[id];
                let shared = NodeShared {
                    stage: node.stage.clone(),
                    address: node.address.clone(),
                    key: key.clone(),
                    with: self.graph.nodes[runner].address.clone(),
                };
                self.waiters.entry(key).or_default().push(id);
                self.emit(Event::NodeShared(shared));
                self.graph.set_state(id, NodeState::Running);
            }
        }
    }

    /// Counts an event, then hands it to the reporter.
    fn emit(&mut self, e: Event) {
        self.tally.observe(&e);
        self.events.emit(e);
    }

    /// Marks a node whose address names its key in the index from now on.
    fn mark_indexed(&mut self, id: usize) {
        if self.indexed.len() <= id {
            self.indexed.resize(id + 1, false);
        }
        self.indexed[id] = true;
    }

    /// The index as it stands, borrowed: the one the apply found, with each marked node's
    /// address naming its key (in node order: a node made later for an address, after a
    /// withdrawn one, names its key last, as it was marked last).
    fn index_now(&self) -> IndexView<'_> {
        let mut index = self.index.view();
        for (id, _) in self.indexed.iter().enumerate().filter(|(_, on)| **on) {
            let node = &self.graph.nodes[id];
            if let Some(key) = &node.key {
                index.nodes.insert(&node.address, key);
            }
        }
        index
    }

    fn note(
        &mut self,
        address: &str,
        key: Option<String>,
        status: NodeStatus,
        error: Option<String>,
    ) {
        self.run
            .nodes
            .insert(address.to_string(), RunNode { key, status, error });
    }

    /// Launches what the pools and budgets allow, in creation order. Returns whether the budget
    /// halted a node (settling it without a run: the graph may advance from it).
    fn launch(&mut self) -> Result<bool, ApplyError> {
        let mut halted = false;
        // Demands the pools refused in this pass: they stay refused until a node finishes.
        let mut refused = Vec::new();
        while let Some(class) = self.queue.next(&refused) {
            let d = self.queue.demand(class).clone();
            if !self.pools.admits(&d) {
                refused.push(class);
                continue;
            }
            let id = self.queue.pop(class).expect("a class has a first node");
            let node = &self.graph.nodes[id];
            let mut share = None;
            if let NodeKind::Solve { .. } = node.kind
                && let Some(b) = self.budgets.get(&node.stage)
            {
                if let Some(reason) = b.halted() {
                    self.not_run(id, reason);
                    halted = true;
                    continue;
                }
                let pending = 1 + self.queue.in_stage(&node.stage);
                share = Some(b.share(pending));
            }
            if !self.run_saved {
                self.store.save_run(&self.run)?;
                self.run_saved = true;
            }
            self.pools.take(&d);
            let node = &self.graph.nodes[id];
            let started = NodeStarted {
                stage: node.stage.clone(),
                address: node.address.clone(),
                key: node.key.clone().expect("ready nodes have keys"),
            };
            self.emit(Event::NodeStarted(started));
            let node = &self.graph.nodes[id];
            let job = self
                .graph
                .job_of(id)
                .cloned()
                .ok_or_else(|| ApplyError::Bug(format!("node {} has no job", node.address)))?;
            let key = node.key.clone().expect("ready nodes have keys");
            let address = node.address.clone();
            let deadline = match self.file_attempt(id) {
                Ok(d) => d,
                Err(e) => {
                    self.pools.release(&d);
                    self.fail(id, e);
                    continue;
                }
            };
            let node = &self.graph.nodes[id];
            let out_dir = match &self.m.stages[&node.stage].kind {
                StageKind::Report(r) => Some(r.out.clone()),
                _ => None,
            };
            self.graph.set_state(id, NodeState::Running);
            let tx = self.tx.clone();
            let runner = self.runner_for(&job);
            let cx = NodeContext {
                id,
                sink: self.placements.clone(),
                cancel: self.cancel.clone(),
            };
            let node = NodeRun {
                job,
                key,
                address,
                budget_share: share,
                out_dir,
                deadline,
            };
            tokio::spawn(async move {
                let result = runner.run(node, cx).await;
                let _ = tx.send((id, result));
            });
        }
        Ok(halted)
    }

    /// Marks a node (and the nodes waiting on its key) not run.
    fn not_run(&mut self, id: usize, reason: String) {
        let node = &self.graph.nodes[id];
        let (stage, address, key) = (node.stage.clone(), node.address.clone(), node.key.clone());
        self.emit(Event::NodeFinished(NodeFinished {
            stage: stage.clone(),
            address: address.clone(),
            key: key.clone(),
            outcome: Outcome::NotRun,
            detail: reason.clone(),
            shared_with: None,
            duration_ms: None,
        }));
        self.note(
            &address,
            key.clone(),
            NodeStatus::NotRun,
            Some(reason.clone()),
        );
        let key = key.unwrap_or_default();
        self.inflight.remove(&key);
        for w in self.waiters.remove(&key).unwrap_or_default() {
            let a = self.graph.nodes[w].address.clone();
            self.emit(Event::NodeFinished(NodeFinished {
                stage: self.graph.nodes[w].stage.clone(),
                address: a.clone(),
                key: Some(key.clone()),
                outcome: Outcome::NotRun,
                detail: reason.clone(),
                shared_with: Some(address.clone()),
                duration_ms: None,
            }));
            self.note(
                &a,
                Some(key.clone()),
                NodeStatus::NotRun,
                Some(reason.clone()),
            );
            self.graph.complete(w, NodeState::NotRun(reason.clone()));
        }
        self.graph.complete(id, NodeState::NotRun(reason));
    }

    /// Takes a finished node's result.
    fn on_done(&mut self, id: usize, result: Result<ActionRecord, WorkError>) {
        let node = self.graph.nodes[id].clone();
        self.pools
            .release(&demand(&self.m, &node.stage, &node.kind));
        let key = node.key.clone().expect("run nodes have keys");
        self.inflight.remove(&key);
        let mut same_key = self.waiters.remove(&key).unwrap_or_default();
        same_key.insert(0, id);
        // A lost host (a pool): the backend says why the node can run again elsewhere.
        let retry = match &result {
            Err(WorkError::Infra(msg)) if !self.interrupted => self.backend.retry(&key, msg),
            _ => None,
        };
        match result {
            Ok(mut rec) => {
                // The record is stored: what reads it here (the graph, the report, the
                // budget) never reads its job, whose JSON tree would otherwise be held for
                // every node the apply runs (most of an apply's memory growth per node).
                rec.job = serde_json::Value::Null;
                self.on_result(&node, &key, &same_key, Arc::new(rec))
            }
            Err(WorkError::CorruptInput { digest, message }) => {
                let reason = format!("{message}; recomputing what produced it");
                for nid in &same_key {
                    let n = &self.graph.nodes[*nid];
                    let retried = NodeRetried {
                        stage: n.stage.clone(),
                        address: n.address.clone(),
                        reason: reason.clone(),
                    };
                    self.emit(Event::NodeRetried(retried));
                }
                // No longer running: a node built on the producer (a grade of its patch, the
                // report) is withdrawn with it and built again from the producer's new result,
                // never rerun with the inputs it had (they may name the old result).
                for nid in &same_key {
                    self.graph.set_state(*nid, NodeState::Ready);
                }
                self.reopen_producers(&digest);
                for nid in same_key {
                    if !matches!(self.graph.nodes[nid].state, NodeState::Retracted) {
                        self.graph.reopen(nid);
                        self.enqueue(nid);
                    }
                }
            }
            Err(WorkError::Infra(msg)) if retry.is_some() => {
                let why = retry.unwrap_or_default();
                // A lost host (a pool): the node and those sharing its key run again.
                for nid in same_key {
                    let n = &self.graph.nodes[nid];
                    let retried = NodeRetried {
                        stage: n.stage.clone(),
                        address: n.address.clone(),
                        reason: format!("{why} (was: {msg})"),
                    };
                    self.emit(Event::NodeRetried(retried));
                    self.graph.reopen(nid);
                    self.enqueue(nid);
                }
            }
            Err(err) => {
                let (status, msg) = match &err {
                    WorkError::Cancelled => (NodeStatus::Interrupted, "cancelled".to_string()),
                    other => (NodeStatus::Failed, other.message()),
                };
                let outcome = if status == NodeStatus::Failed {
                    Outcome::Failed
                } else {
                    Outcome::Cancelled
                };
                for (i, nid) in same_key.iter().enumerate() {
                    let address = self.graph.nodes[*nid].address.clone();
                    self.emit(Event::NodeFinished(NodeFinished {
                        stage: self.graph.nodes[*nid].stage.clone(),
                        address: address.clone(),
                        key: Some(key.clone()),
                        outcome,
                        detail: msg.clone(),
                        shared_with: (i > 0).then(|| node.address.clone()),
                        duration_ms: None,
                    }));
                    if status == NodeStatus::Failed {
                        self.failed.push((address.clone(), msg.clone()));
                    }
                    self.note(&address, Some(key.clone()), status, Some(msg.clone()));
                    self.graph.complete(*nid, NodeState::Failed(msg.clone()));
                }
            }
        }
    }

    /// A node's stored result: it and the nodes sharing its key complete with it.
    fn on_result(
        &mut self,
        node: &crate::graph::Node,
        key: &str,
        same_key: &[usize],
        rec: Arc<ActionRecord>,
    ) {
        if let (Some(b), Some(s)) = (self.budgets.get_mut(&node.stage), rec.solve()) {
            b.charge(s.cost_usd(&self.m.pricing));
        }
        let detail = describe(&rec);
        let key = key.to_string();
        self.ran.insert(key.clone(), node.id);
        for (i, nid) in same_key.iter().enumerate() {
            let address = self.graph.nodes[*nid].address.clone();
            self.emit(Event::NodeFinished(NodeFinished {
                stage: self.graph.nodes[*nid].stage.clone(),
                address: address.clone(),
                key: Some(key.clone()),
                outcome: Outcome::Done,
                detail: detail.clone(),
                shared_with: (i > 0).then(|| node.address.clone()),
                duration_ms: (i == 0).then_some(rec.duration_ms),
            }));
            self.mark_indexed(*nid);
            let status = if i == 0 {
                NodeStatus::Done
            } else {
                NodeStatus::Cached
            };
            self.note(&address, Some(key.clone()), status, None);
            // A shipped node's record came from the shared cache: nothing to upload. A rerun's
            // attempt stays here: the shared cache keeps the key's first result.
            if i == 0
                && !self.run.placements.contains_key(&address)
                && !self.graph.rerunning.contains_key(&node.id)
            {
                self.upload(&key);
            }
            self.graph.complete(
                *nid,
                if i == 0 {
                    NodeState::Done(rec.clone())
                } else {
                    NodeState::Cached(rec.clone())
                },
            );
        }
    }

    /// Every finished node whose result references `digest` is recomputed: its record is
    /// removed and it runs again on this apply.
    fn reopen_producers(&mut self, digest: &str) {
        let producers: Vec<usize> = self
            .graph
            .nodes
            .iter()
            .filter(|n| {
                n.state.record().is_some_and(|r| {
                    r.blobs.values().any(|d| d == digest)
                        || r.solve().is_some_and(|s| s.patch == digest)
                })
            })
            .map(|n| n.id)
            .collect();
        for p in producers {
            // Reopening an earlier producer may have withdrawn this one (the report).
            if self.graph.nodes[p].state.record().is_none() {
                continue;
            }
            if let Some(k) = self.graph.nodes[p].key.clone() {
                let _ = self.store.remove_action(&k);
            }
            self.graph.reopen(p);
            self.enqueue(p);
        }
    }

    /// A rerun's record before is filed as an earlier attempt, before the new attempt can
    /// replace it (nothing is lost if this apply is killed). Returns the new attempt's
    /// deadline, when `--timeout` set one.
    fn file_attempt(&mut self, id: usize) -> Result<Option<std::time::Duration>, String> {
        let Some(r) = self.graph.rerunning.get(&id) else {
            return Ok(None);
        };
        let crate::store::Lookup::Hit(before) = self.store.get_action(&r.solve_key) else {
            return Err(format!(
                "cannot rerun: the record of {} is gone from the store",
                r.solve_key
            ));
        };
        let job_timeout = match self.graph.job_of(id) {
            Some(NodeJob::Solve(j)) => j.timeout(),
            _ => return Err("a rerun node is not a solve (a bench bug: please report it)".into()),
        };
        let attempt = crate::store::Attempt {
            record: *before,
            outcome: r.outcome.clone(),
            grade_key: r.grade_key.clone(),
            replaced_by: crate::store::Replacement {
                run_id: self.run.id.clone(),
                selected_by: r.selected_by.clone(),
                timeout_ms: r.timeout.unwrap_or(job_timeout).as_millis() as u64,
                at: now(),
            },
        };
        let deadline = r.timeout;
        self.store
            .file_attempt(attempt)
            .map_err(|e| format!("cannot file the attempt this rerun replaces: {e}"))?;
        Ok(deadline)
    }

    /// A node that cannot start: failed (an infrastructure error, tried again next apply).
    fn fail(&mut self, id: usize, msg: String) {
        let node = &self.graph.nodes[id];
        let (stage, address, key) = (node.stage.clone(), node.address.clone(), node.key.clone());
        self.emit(Event::NodeFinished(NodeFinished {
            stage,
            address: address.clone(),
            key: key.clone(),
            outcome: Outcome::Failed,
            detail: msg.clone(),
            shared_with: None,
            duration_ms: None,
        }));
        self.failed.push((address.clone(), msg.clone()));
        self.note(&address, key, NodeStatus::Failed, Some(msg.clone()));
        self.graph.complete(id, NodeState::Failed(msg));
    }

    /// The backend's load, when it changed.
    fn load(&mut self) {
        let Some(line) = self.backend.load() else {
            return;
        };
        if self.last_load.as_deref() != Some(line.as_str()) {
            self.last_load = Some(line.clone());
            self.events
                .emit(Event::BackendLoad(crate::events::BackendLoad { line }));
        }
    }

    /// Where a node's job runs: shipped to the engine of `[execution]` (solves and grades), or
    /// here.
    fn runner_for(&self, job: &NodeJob) -> Arc<dyn Runner> {
        match (&self.shipped, job) {
            (Some(r), NodeJob::Solve(_) | NodeJob::Grade(_)) => r.clone(),
            _ => self.runner.clone(),
        }
    }

    /// A shipped node's placement: an event, and the run's record of the node.
    fn on_placed(&mut self, id: usize, placement: Placement) {
        let node = &self.graph.nodes[id];
        let (stage, address) = (node.stage.clone(), node.address.clone());
        let key = node.key.clone().unwrap_or_default();
        self.run
            .placements
            .insert(address.clone(), placement.clone());
        self.emit(Event::NodePlaced(NodePlaced {
            stage,
            address,
            key,
            placement,
        }));
    }

    fn on_cancel(&mut self, why: &str) {
        self.interrupted = true;
        self.cancel.cancel();
        self.events.note(why);
    }
}

/// What the plan counts per stage, from the same store and datasets (a graph in plan mode,
/// expanded as far as the store allows; `prefetched` records are read from memory), and the
/// notes of its expansion.
fn planned_stages(
    m: &Manifest,
    store: &Store,
    datasets: &BTreeMap<String, TaskSet>,
    prefetched: &HashMap<String, ActionRecord>,
    index: &Index,
    rerun: &HashMap<String, crate::graph::RerunOf>,
) -> Result<(Vec<StagePlan>, Vec<String>), String> {
    let mut graph = Graph::new(m, Some(store), datasets, Mode::Plan)?;
    graph.seed(prefetched.clone());
    graph.rerun = rerun.clone();
    while !graph.advance().is_empty() {}
    // Records that fail verification are removed by the lookup that finds them: this one.
    let notes = std::mem::take(&mut graph.invalid)
        .into_iter()
        .map(|(path, reason)| {
            format!(
                "record {} is not valid ({reason}); it was removed and its node recomputes",
                path.display()
            )
        })
        .collect();
    let stages = graph
        .summaries(&index.nodes)
        .into_iter()
        .map(|s| StagePlan {
            stage: s.stage,
            kind: s.kind,
            to_run: s.to_run as u64,
            cached: (s.cached + s.remote) as u64,
            shared: s.shared as u64,
            estimated: s.estimated,
        })
        .collect();
    Ok((stages, notes))
}

/// The run record of an apply starting now (no nodes yet).
pub fn new_run_record(m: &Manifest, run_id: &str, command: &str) -> RunRecord {
    RunRecord {
        schema: RECORD_SCHEMA,
        id: run_id.to_string(),
        manifest_path: m.path.display().to_string(),
        manifest_hash: m.hash.clone(),
        resolved_manifest: serde_json::to_value(&m.resolved).unwrap_or_default(),
        bench_version: env!("CARGO_PKG_VERSION").to_string(),
        command: command.to_string(),
        host: gethostname::gethostname().to_string_lossy().into_owned(),
        pid: std::process::id(),
        started_at: now(),
        ended_at: None,
        status: RunStatus::Running,
        nodes: BTreeMap::new(),
        placements: BTreeMap::new(),
    }
}

/// Runs everything `m` needs that the store does not hold, on `backend`.
pub async fn apply(
    m: Arc<Manifest>,
    store: Store,
    datasets: Arc<BTreeMap<String, TaskSet>>,
    backend: Arc<dyn Backend>,
    run_id: String,
    opts: ApplyOptions,
) -> Result<ApplyResult, ApplyError> {
    let run = new_run_record(&m, &run_id, &opts.command);
    let index = match opts.index {
        Some(i) => i,
        None => store.load_index(&m.path),
    };
    crate::timings::mark("apply started");
    // The plan's counts, before any node starts: the bars' totals and the stream's
    // `run_started`.
    let (stages, notes) =
        planned_stages(&m, &store, &datasets, &opts.prefetched, &index, &opts.rerun)
            .map_err(ApplyError::Graph)?;
    crate::timings::mark("plan counted");
    opts.events.emit(Event::RunStarted(RunStarted {
        format: crate::events::EVENTS_FORMAT,
        run_id: run_id.clone(),
        manifest: m.path.display().to_string(),
        store: store.root().display().to_string(),
        stages,
    }));
    for note in notes {
        opts.events.note(note);
    }
    let mut graph =
        Graph::new(&m, Some(&store), &datasets, Mode::Apply).map_err(ApplyError::Graph)?;
    graph.verify_blobs = opts.verify_blobs;
    graph.rerun = opts.rerun;
    crate::timings::mark("graph made");
    graph.seed(opts.prefetched);
    crate::timings::mark("graph seeded");
    let (tx, mut rx) = mpsc::unbounded_channel::<Completion>();
    let (placements_tx, mut placements) = mpsc::unbounded_channel::<(usize, Placement)>();
    let mut d = Dispatcher {
        graph,
        pools: Pools::new(m.limits.jobs, m.limits.agents, backend.sandbox_cap()).with_shipped(
            match &m.execution {
                crate::manifest::Execution::Slurm(s) => s.max_jobs,
                crate::manifest::Execution::Local => 1,
            },
        ),
        budgets: Budgets::load(&m, &store),
        events: opts.events,
        tally: Tally::default(),
        ran: HashMap::new(),
        last_load: None,
        queue: ReadyQueue::default(),
        inflight: HashMap::new(),
        waiters: HashMap::new(),
        run,
        run_saved: false,
        index,
        indexed: Vec::new(),
        failed: Vec::new(),
        interrupted: false,
        cancel: CancellationToken::new(),
        tx,
        m: m.clone(),
        store: store.clone(),
        backend: backend.clone(),
        runner: Arc::new(InProcess {
            store: store.clone(),
            backend: backend.clone(),
            datasets: datasets.clone(),
        }),
        shipped: opts.shipped,
        placements: placements_tx,
        remote_summary: opts.remote.as_deref().map(RemoteSummary::new),
        reads: opts
            .remote
            .clone()
            .map(|r| Reads::new(r, Some(store.clone()))),
        remote: opts.remote,
        push: opts.push,
        uploads: tokio::task::JoinSet::new(),
        upload_slots: Arc::new(tokio::sync::Semaphore::new(UPLOADS)),
    };
    crate::timings::mark("dispatcher made");
    d.drive(&mut rx, &mut placements).await?;
    d.finish_uploads().await;
    backend.finish().await;
    let stages = d.tally.in_order(&m.stage_order);
    for c in &stages {
        d.events.emit(Event::StageFinished(c.clone()));
    }
    crate::timings::mark("nodes settled");
    d.run.ended_at = Some(now());
    d.run.status = if d.interrupted {
        RunStatus::Interrupted
    } else if d.failed.is_empty() {
        RunStatus::Complete
    } else {
        RunStatus::Failed
    };
    let index = d.index_now();
    if index != d.index.view() {
        store.save_index(&m.path, &index)?;
    }
    drop(index);
    store.save_run(&d.run)?;
    crate::timings::mark("index and run saved");
    if opts.noop_memo && d.run.status == RunStatus::Complete {
        save_noop_memo(&d, &m, &store, &datasets);
    }
    Ok(d.into_result(run_id, stages))
}

/// Saves the no-op memo of an apply in which every node was cached (any other state: nothing
/// is saved): the next apply with the same inputs can skip the expansion (noop.rs).
fn save_noop_memo(
    d: &Dispatcher<'_>,
    m: &Manifest,
    store: &Store,
    datasets: &BTreeMap<String, TaskSet>,
) {
    let nodes = d
        .graph
        .nodes
        .iter()
        .map(|n| match &n.state {
            NodeState::Cached(rec) => Some(super::noop::CachedNode {
                stage: n.stage.clone(),
                address: n.address.clone(),
                key: rec.key.clone(),
                report_list: matches!(n.kind, NodeKind::Report)
                    .then(|| crate::stages::report_list_digest(&rec.blobs)),
                blobs: rec
                    .blob_digests()
                    .unwrap_or_default()
                    .into_iter()
                    .map(crate::types::Digest::into_string)
                    .collect(),
            }),
            _ => None,
        })
        .collect::<Option<Vec<_>>>();
    // The fingerprint of the inputs this expansion read (its own team specs).
    let fp = super::noop::fingerprint(m, &super::datasets::snapshots_of(datasets), d.graph.jobs());
    if let (Some(nodes), Some(fp)) = (nodes, fp) {
        super::noop::save(store, m, &fp, nodes);
    }
    crate::timings::mark("no-op memo saved");
}

/// A stored result in a few words (`resolved`, `patch 120 bytes, timed out`).
pub fn describe(rec: &ActionRecord) -> String {
    match &rec.output {
        Output::Sample(s) => format!("{} tasks", s.tasks.len()),
        Output::Grade(g) => {
            let mut s = if g.resolved { "resolved" } else { "unresolved" }.to_string();
            if g.timed_out {
                s.push_str(" (timed out)");
            }
            if !g.patch_applied {
                s.push_str(" (patch did not apply)");
            }
            s
        }
        Output::Solve(o) => {
            let mut s = format!("patch {} bytes", o.patch_bytes);
            if o.timed_out {
                s.push_str(", timed out");
            }
            if let Some(e) = &o.solve_error {
                s.push_str(&format!(", {e}"));
            }
            s
        }
        Output::Report(_) => "written".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_saves_slow_down_as_the_nodes_recorded_grow() {
        let secs = |n| flush_interval(n).as_secs();
        assert_eq!(secs(0), 5);
        assert_eq!(secs(1_999), 5);
        assert_eq!(secs(2_000), 10);
        assert_eq!(secs(5_002), 25);
        assert_eq!(secs(12_999), 60);
        assert_eq!(secs(100_000), 60);
    }
}
