//! `bench apply`: the dispatcher. It owns all run state; node work runs in tokio tasks bounded by
//! resource pools and reports back over a channel. Completed results are written to the store
//! by the worker before it reports, so a crash at any instant loses nothing completed. Ctrl-C
//! (or SIGTERM) stops launching, cancels running nodes (killing their processes), and leaves the
//! store valid.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::graph::{GradeOutput, Graph, Mode, NodeKind, NodeState, SolveOutput};
use crate::manifest::{Manifest, StageKind};
use crate::report::results::NodeRow;
use crate::report::stats::{PairOutcome, PairState};
use crate::stages::{
    DockerRun, PairArtifacts, ReportInputs, WorkError, WorkOutput, grade_docker, grade_local,
    materialize, solve_docker, solve_local, write_report,
};
use crate::store::{ActionRecord, Index, RECORD_SCHEMA, RunNode, RunRecord, Store};
use crate::tasks::TaskSet;

use super::progress::Progress;

pub struct ApplyOptions {
    /// The command line, for the run log and the lock.
    pub command: String,
    pub quiet: bool,
}

/// How an apply ended.
#[derive(Debug)]
pub struct ApplyResult {
    pub run_id: String,
    pub failed: Vec<(String, String)>,
    pub interrupted: bool,
    pub reports: Vec<PathBuf>,
    pub counts: BTreeMap<String, usize>,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Pool {
    Jobs,
    Agents,
}

type Completion = (usize, Result<ActionRecord, WorkError>);

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

/// Runs everything `m` needs that the store does not hold.
pub async fn apply(
    m: Arc<Manifest>,
    store: Store,
    datasets: Arc<BTreeMap<String, TaskSet>>,
    opts: ApplyOptions,
) -> Result<ApplyResult, String> {
    let run_id = format!(
        "{}-{}",
        jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ"),
        &crate::key::digest(format!("{}{}", std::process::id(), now()).as_bytes())[..8]
    );
    let mut run = RunRecord {
        schema: RECORD_SCHEMA,
        id: run_id.clone(),
        manifest_path: m.path.display().to_string(),
        manifest_hash: m.hash.clone(),
        resolved_manifest: serde_json::to_value(&m.resolved).unwrap_or_default(),
        bench_version: env!("CARGO_PKG_VERSION").to_string(),
        command: opts.command.clone(),
        host: gethostname::gethostname().to_string_lossy().into_owned(),
        pid: std::process::id(),
        started_at: now(),
        ended_at: None,
        status: "running".into(),
        nodes: BTreeMap::new(),
    };
    // The run record is first written when the first node launches (a no-op apply writes it
    // once, at the end).
    let mut run_saved = false;
    let mut index: Index = store.load_index(&m.path);
    let index_before = index.nodes.clone();
    let mut budgets = Budgets::load(&m, &store);
    // docker: connect, and sweep leftovers of dead runs before starting (we hold the lock).
    let docker = match m.backend.kind {
        crate::manifest::BackendKind::Docker => {
            Some(Arc::new(docker_run(&m, &store, &run_id, opts.quiet).await?))
        }
        crate::manifest::BackendKind::Local => None,
    };

    let cancel = CancellationToken::new();
    let mut graph = Graph::new(&m, Some(&store), &datasets, Mode::Apply);
    let mut progress = Progress::new(&m.stage_order, opts.quiet);
    let (tx, mut rx) = mpsc::unbounded_channel::<Completion>();
    let mut queue: VecDeque<usize> = VecDeque::new();
    let mut running: HashMap<Pool, usize> = HashMap::new();
    let mut running_per_stage: HashMap<String, usize> = HashMap::new();
    // docker: containers the running nodes may hold at once (see `containers_held`).
    let mut containers: usize = 0;
    let mut inflight: HashMap<String, usize> = HashMap::new();
    let mut waiters: HashMap<String, Vec<usize>> = HashMap::new();
    let mut failed = Vec::new();
    let mut interrupted = false;
    let mut last_flush = Instant::now();
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| format!("cannot watch SIGTERM: {e}"))?;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);

    loop {
        if !interrupted {
            for id in graph.advance() {
                let node = &graph.nodes[id];
                match &node.state {
                    NodeState::Cached(rec) => {
                        progress.added(&node.stage, true);
                        index.nodes.insert(node.address.clone(), rec.key.clone());
                        run.nodes.insert(
                            node.address.clone(),
                            RunNode {
                                key: Some(rec.key.clone()),
                                status: "cached".into(),
                                error: None,
                            },
                        );
                        if let (NodeKind::Report, StageKind::Report(r)) =
                            (&node.kind, &m.stages[&node.stage].kind)
                        {
                            materialize(&store, &rec.blobs, &r.out).map_err(|e| {
                                format!("cannot write the report to {}: {e}", r.out.display())
                            })?;
                        }
                    }
                    NodeState::Ready => {
                        progress.added(&node.stage, false);
                        let key = node
                            .keyed
                            .as_ref()
                            .expect("ready nodes have keys")
                            .key
                            .clone();
                        if let std::collections::hash_map::Entry::Vacant(e) =
                            inflight.entry(key.clone())
                        {
                            e.insert(id);
                            queue.push_back(id);
                        } else {
                            // Same key as a running node (an identical patch): wait for its result.
                            waiters.entry(key).or_default().push(id);
                            progress.started(&node.stage, &node.address);
                            graph.set_state(id, NodeState::Running);
                        }
                    }
                    _ => {}
                }
            }
            // Launch what the pools allow, in creation order.
            let mut deferred = VecDeque::new();
            while let Some(id) = queue.pop_front() {
                let node = &graph.nodes[id];
                let pool = match node.kind {
                    NodeKind::Solve { .. } => Pool::Agents,
                    _ => Pool::Jobs,
                };
                let cap = match pool {
                    Pool::Agents => m.limits.agents,
                    Pool::Jobs => m.limits.jobs,
                };
                let stage_cap = match &m.stages[&node.stage].kind {
                    StageKind::Solve(s) => s.concurrency.map_or(usize::MAX, |c| c as usize),
                    _ => usize::MAX,
                };
                let used = running.get(&pool).copied().unwrap_or(0);
                let used_stage = running_per_stage.get(&node.stage).copied().unwrap_or(0);
                // docker: `limits.containers` caps the containers running nodes hold; a node
                // that needs more than the cap still runs when nothing else does.
                let held = containers_held(&m, &node.kind);
                let containers_full =
                    docker.is_some() && containers > 0 && containers + held > m.limits.containers;
                if used >= cap || used_stage >= stage_cap || containers_full {
                    deferred.push_back(id);
                    continue;
                }
                let mut share = None;
                if let NodeKind::Solve { .. } = node.kind
                    && let Some(b) = budgets.get(&node.stage)
                {
                    if let Some(reason) = b.halted() {
                        let address = node.address.clone();
                        let stage = node.stage.clone();
                        progress.not_run(&stage, &address, &reason);
                        run.nodes.insert(
                            address,
                            RunNode {
                                key: node.keyed.as_ref().map(|k| k.key.clone()),
                                status: "not_run".into(),
                                error: Some(reason.clone()),
                            },
                        );
                        let key = node
                            .keyed
                            .as_ref()
                            .map(|k| k.key.clone())
                            .unwrap_or_default();
                        inflight.remove(&key);
                        for w in waiters.remove(&key).unwrap_or_default() {
                            graph.complete(w, NodeState::NotRun(reason.clone()));
                        }
                        graph.complete(id, NodeState::NotRun(reason));
                        continue;
                    }
                    let pending = 1 + queue
                        .iter()
                        .chain(deferred.iter())
                        .filter(|q| graph.nodes[**q].stage == node.stage)
                        .count();
                    share = Some(b.remaining() / pending as f64);
                }
                if !run_saved {
                    store.save_run(&run).map_err(|e| e.to_string())?;
                    run_saved = true;
                }
                *running.entry(pool).or_default() += 1;
                *running_per_stage.entry(node.stage.clone()).or_default() += 1;
                containers += held;
                progress.started(&node.stage, &node.address);
                let mut job = prepare(&graph, id, &m, &store)?;
                if let Job::Solve { budget_share, .. } = &mut job.job {
                    *budget_share = share;
                }
                graph.set_state(id, NodeState::Running);
                let tx = tx.clone();
                let cancel = cancel.clone();
                let store = store.clone();
                let m = m.clone();
                let docker = docker.clone();
                tokio::spawn(async move {
                    let result = job.run(&store, &m, docker.as_deref(), &cancel).await;
                    let _ = tx.send((id, result));
                });
            }
            queue = deferred;
        }
        let active: usize = running.values().sum();
        if active == 0 {
            if interrupted || queue.is_empty() {
                break;
            }
            return Err("internal error: work is queued but no pool slot is free".into());
        }
        let completion = tokio::select! {
            c = rx.recv() => c,
            _ = &mut ctrl_c, if !interrupted => {
                interrupted = true;
                cancel.cancel();
                progress.note("interrupted: cancelling running nodes (press Ctrl-C again is not needed)");
                continue;
            }
            _ = sigterm.recv(), if !interrupted => {
                interrupted = true;
                cancel.cancel();
                progress.note("terminated: cancelling running nodes");
                continue;
            }
        };
        let Some((id, result)) = completion else {
            break;
        };
        let node = graph.nodes[id].clone();
        let pool = match node.kind {
            NodeKind::Solve { .. } => Pool::Agents,
            _ => Pool::Jobs,
        };
        *running.get_mut(&pool).expect("pool was used") -= 1;
        containers -= containers_held(&m, &node.kind);
        *running_per_stage
            .get_mut(&node.stage)
            .expect("stage was used") -= 1;
        let key = node
            .keyed
            .as_ref()
            .expect("run nodes have keys")
            .key
            .clone();
        inflight.remove(&key);
        let mut same_key = waiters.remove(&key).unwrap_or_default();
        same_key.insert(0, id);
        match result {
            Ok(rec) => {
                let rec = Arc::new(rec);
                if let (NodeKind::Solve { .. }, Some(b)) =
                    (&node.kind, budgets.get_mut(&node.stage))
                {
                    b.charge(&rec);
                }
                for (i, nid) in same_key.iter().enumerate() {
                    let address = graph.nodes[*nid].address.clone();
                    let detail = describe(&node.kind, &rec);
                    progress.finished(
                        &node.stage,
                        &address,
                        true,
                        &if i == 0 {
                            detail
                        } else {
                            format!("{detail} (same key as {})", node.address)
                        },
                    );
                    index.nodes.insert(address.clone(), key.clone());
                    run.nodes.insert(
                        address,
                        RunNode {
                            key: Some(key.clone()),
                            status: if i == 0 { "done" } else { "cached" }.into(),
                            error: None,
                        },
                    );
                    graph.complete(
                        *nid,
                        if i == 0 {
                            NodeState::Done(rec.clone())
                        } else {
                            NodeState::Cached(rec.clone())
                        },
                    );
                }
            }
            Err(err) => {
                let (status, msg) = match &err {
                    WorkError::Cancelled => ("interrupted", "cancelled".to_string()),
                    WorkError::Infra(e) => ("failed", e.clone()),
                };
                if !matches!(err, WorkError::Cancelled) {
                    progress.finished(&node.stage, &node.address, false, &msg);
                }
                for nid in &same_key {
                    let address = graph.nodes[*nid].address.clone();
                    if status == "failed" {
                        failed.push((address.clone(), msg.clone()));
                    }
                    run.nodes.insert(
                        address,
                        RunNode {
                            key: Some(key.clone()),
                            status: status.into(),
                            error: Some(msg.clone()),
                        },
                    );
                    graph.complete(*nid, NodeState::Failed(msg.clone()));
                }
            }
        }
        if last_flush.elapsed() > Duration::from_secs(5) {
            let _ = store.save_index(&m.path, &index);
            let _ = store.save_run(&run);
            last_flush = Instant::now();
        }
    }
    progress.finish();
    if let Some(d) = &docker {
        // Every job removed its container; this catches anything a crash of a job left.
        if let Ok(left) = d.host.list(&[format!("bench.run={}", d.run_id)]).await {
            for (id, _, _) in left {
                let _ = d.host.remove(&id).await;
            }
        }
    }
    run.ended_at = Some(now());
    run.status = if interrupted {
        "interrupted"
    } else if failed.is_empty() {
        "complete"
    } else {
        "failed"
    }
    .into();
    if index.nodes != index_before {
        store
            .save_index(&m.path, &index)
            .map_err(|e| e.to_string())?;
    }
    store.save_run(&run).map_err(|e| e.to_string())?;
    let mut counts = BTreeMap::new();
    for n in run.nodes.values() {
        *counts.entry(n.status.clone()).or_insert(0) += 1;
    }
    let reports = graph
        .nodes
        .iter()
        .filter(|n| matches!(n.kind, NodeKind::Report) && n.state.record().is_some())
        .filter_map(|n| match &m.stages[&n.stage].kind {
            StageKind::Report(r) => Some(r.out.join("report.md")),
            _ => None,
        })
        .collect();
    // The process is about to exit: skip freeing the node graph, node by node.
    std::mem::forget(graph);
    Ok(ApplyResult {
        run_id,
        failed,
        interrupted,
        reports,
        counts,
    })
}

/// How many containers a node holds at once on the docker backend: a review solve keeps the
/// coder's container while its reviewer's runs; every other node holds one at a time.
fn containers_held(m: &Manifest, kind: &NodeKind) -> usize {
    match kind {
        NodeKind::Solve { team, .. }
            if matches!(
                m.teams[team].topology,
                crate::manifest::Topology::Review { .. }
            ) =>
        {
            2
        }
        _ => 1,
    }
}

/// Connects to the manifest's Docker daemon and removes leftovers: containers of this store
/// not of this run (the caller holds the store lock), and containers of dead bench processes.
async fn docker_run(
    m: &Manifest,
    store: &Store,
    run_id: &str,
    quiet: bool,
) -> Result<DockerRun, String> {
    let host = crate::backend::docker::DockerHost::connect(m.backend.host.as_deref()).await?;
    let store_label =
        crate::key::digest(store.root().display().to_string().as_bytes())[..16].to_string();
    let removed = host.sweep(Some(&store_label), Some(run_id)).await?;
    if !removed.is_empty() && !quiet {
        eprintln!(
            "note: removed {} containers left by dead runs: {}",
            removed.len(),
            removed.join(", ")
        );
    }
    Ok(DockerRun {
        host,
        run_id: run_id.to_string(),
        store_label,
    })
}

/// Budgets of solve stages with `max_cost_usd`: the priced spend recorded in the store for this
/// manifest (every attempt, earlier applies included), and whether a run of unknown cost halts
/// launches.
struct Budgets(BTreeMap<String, Budget>);

struct Budget {
    cap: f64,
    allow_unpriced: bool,
    spent: f64,
    unknown: usize,
}

impl Budget {
    fn charge(&mut self, rec: &ActionRecord) {
        match rec
            .output
            .get("cost_usd")
            .and_then(serde_json::Value::as_f64)
        {
            Some(c) => self.spent += c,
            None => self.unknown += 1,
        }
    }

    fn remaining(&self) -> f64 {
        (self.cap - self.spent).max(0.0)
    }

    /// Why launches stop, if they do.
    fn halted(&self) -> Option<String> {
        if self.spent >= self.cap {
            return Some(format!(
                "budget reached (${:.2} of ${:.2} spent)",
                self.spent, self.cap
            ));
        }
        if self.unknown > 0 && !self.allow_unpriced {
            return Some(format!(
                "budget: {} earlier run(s) of unknown cost halt launches (set allow_unpriced = true to count priced spend only)",
                self.unknown
            ));
        }
        None
    }
}

impl Budgets {
    fn load(m: &Manifest, store: &Store) -> Budgets {
        let mut out = BTreeMap::new();
        for (name, stage) in &m.stages {
            if let StageKind::Solve(s) = &stage.kind
                && let Some(cap) = s.max_cost_usd
            {
                out.insert(
                    name.clone(),
                    Budget {
                        cap,
                        allow_unpriced: s.allow_unpriced,
                        spent: 0.0,
                        unknown: 0,
                    },
                );
            }
        }
        if out.is_empty() {
            return Budgets(out);
        }
        let path = m.path.display().to_string();
        let mut seen = std::collections::HashSet::new();
        for r in store.runs().iter().filter(|r| r.manifest_path == path) {
            for (address, n) in &r.nodes {
                let stage = address.split('/').next().unwrap_or("");
                let (Some(b), Some(key)) = (out.get_mut(stage), &n.key) else {
                    continue;
                };
                // Each paid attempt counts once, however many runs recorded it.
                if n.status == "done"
                    && seen.insert(key.clone())
                    && let Some(rec) = store.get_action(key)
                {
                    b.charge(&rec);
                }
            }
        }
        Budgets(out)
    }

    fn get(&self, stage: &str) -> Option<&Budget> {
        self.0.get(stage)
    }

    fn get_mut(&mut self, stage: &str) -> Option<&mut Budget> {
        self.0.get_mut(stage)
    }
}

fn describe(kind: &NodeKind, rec: &ActionRecord) -> String {
    match kind {
        NodeKind::Sample { .. } => {
            let n = rec
                .output
                .get("tasks")
                .and_then(|t| t.as_array())
                .map_or(0, Vec::len);
            format!("{n} tasks")
        }
        NodeKind::Gold { .. } | NodeKind::Grade { .. } => {
            let g: GradeOutput = serde_json::from_value(rec.output.clone()).unwrap_or_default();
            let mut s = if g.resolved { "resolved" } else { "unresolved" }.to_string();
            if g.timed_out {
                s.push_str(" (timed out)");
            }
            if !g.patch_applied {
                s.push_str(" (patch did not apply)");
            }
            s
        }
        NodeKind::Solve { .. } => {
            let o: SolveOutput = serde_json::from_value(rec.output.clone()).unwrap_or_default();
            let mut s = format!("patch {} bytes", o.patch_bytes);
            if o.timed_out {
                s.push_str(", timed out");
            }
            if let Some(e) = o.solve_error {
                s.push_str(&format!(", {e}"));
            }
            s
        }
        NodeKind::Report => "written".into(),
    }
}

/// A node's work, detached from the graph so it can run on its own task.
enum Job {
    Sample {
        ids: Vec<String>,
    },
    Grade {
        task: Arc<crate::tasks::Task>,
        patch: Vec<u8>,
        timeout: Duration,
    },
    Solve {
        task: Arc<crate::tasks::Task>,
        team: String,
        timeout: Duration,
        budget_share: Option<f64>,
    },
    Report {
        inputs: Box<ReportInputs>,
        out: PathBuf,
    },
}

struct PreparedJob {
    job: Job,
    key: String,
    kind: &'static str,
    address: String,
    inputs: serde_json::Value,
}

impl PreparedJob {
    async fn run(
        self,
        store: &Store,
        m: &Manifest,
        docker: Option<&DockerRun>,
        cancel: &CancellationToken,
    ) -> Result<ActionRecord, WorkError> {
        let started_at = now();
        let t0 = Instant::now();
        let out: WorkOutput = match self.job {
            Job::Sample { ids } => {
                let bytes = serde_json::to_vec(&ids).expect("ids serialize");
                let digest = store
                    .put_blob(&bytes)
                    .map_err(|e| WorkError::Infra(e.to_string()))?;
                WorkOutput {
                    output: serde_json::json!({ "tasks": ids }),
                    blobs: BTreeMap::from([("tasks".to_string(), digest)]),
                }
            }
            Job::Grade {
                task,
                patch,
                timeout,
            } => match docker {
                Some(d) => {
                    grade_docker(
                        d,
                        store,
                        m,
                        &task,
                        &patch,
                        timeout,
                        &self.address,
                        &self.key,
                        cancel,
                    )
                    .await?
                }
                None => grade_local(store, &task, &patch, timeout, cancel).await?,
            },
            Job::Solve {
                task,
                team,
                timeout,
                budget_share,
            } => match docker {
                Some(d) => {
                    solve_docker(
                        d,
                        store,
                        m,
                        &task,
                        &m.teams[&team],
                        timeout,
                        budget_share,
                        &self.address,
                        &self.key,
                        cancel,
                    )
                    .await?
                }
                None => {
                    solve_local(
                        store,
                        m,
                        &task,
                        &m.teams[&team],
                        timeout,
                        budget_share,
                        cancel,
                    )
                    .await?
                }
            },
            Job::Report { inputs, out } => {
                let store = store.clone();
                tokio::task::spawn_blocking(move || write_report(&store, &inputs, &out))
                    .await
                    .map_err(|e| WorkError::Infra(e.to_string()))??
            }
        };
        let rec = ActionRecord {
            schema: RECORD_SCHEMA,
            key: self.key,
            node: self.kind.to_string(),
            address: self.address,
            inputs: self.inputs,
            output: out.output,
            blobs: out.blobs,
            bench_version: env!("CARGO_PKG_VERSION").to_string(),
            started_at,
            duration_ms: t0.elapsed().as_millis() as u64,
        };
        store
            .put_action(&rec)
            .map_err(|e| WorkError::Infra(e.to_string()))?;
        Ok(rec)
    }
}

fn prepare(
    graph: &Graph<'_>,
    id: usize,
    m: &Manifest,
    store: &Store,
) -> Result<PreparedJob, String> {
    let node = &graph.nodes[id];
    let keyed = node.keyed.clone().expect("run nodes have keys");
    let stage = &m.stages[&node.stage];
    let job = match (&node.kind, &stage.kind) {
        (NodeKind::Sample { dataset }, StageKind::Sample(s)) => Job::Sample {
            ids: crate::tasks::sample(&graph_dataset(graph, dataset), &s.filters),
        },
        (NodeKind::Gold { task, empty }, StageKind::Gold(g)) => Job::Grade {
            task: task.clone(),
            patch: if *empty {
                Vec::new()
            } else {
                task.gold_patch.clone().into_bytes()
            },
            timeout: g.timeout,
        },
        (NodeKind::Grade { task, source, .. }, StageKind::Grade(g)) => {
            let rec = graph.nodes[*source]
                .state
                .record()
                .expect("graded solves have results");
            let out: SolveOutput =
                serde_json::from_value(rec.output.clone()).map_err(|e| e.to_string())?;
            let patch = store.get_blob(&out.patch).map_err(|e| {
                format!(
                    "cannot read the patch of {}: {e}",
                    graph.nodes[*source].address
                )
            })?;
            Job::Grade {
                task: task.clone(),
                patch,
                timeout: g.timeout,
            }
        }
        (NodeKind::Solve { task, team, .. }, StageKind::Solve(s)) => Job::Solve {
            task: task.clone(),
            team: team.clone(),
            timeout: s.timeout,
            budget_share: None,
        },
        (NodeKind::Report, StageKind::Report(r)) => Job::Report {
            inputs: Box::new(report_inputs(graph, m, &stage.needs, r)),
            out: r.out.clone(),
        },
        _ => {
            return Err(format!(
                "internal error: node {} does not match its stage",
                node.address
            ));
        }
    };
    Ok(PreparedJob {
        job,
        key: keyed.key,
        kind: node.kind.name(),
        address: node.address.clone(),
        inputs: keyed.inputs,
    })
}

fn graph_dataset(graph: &Graph<'_>, dataset: &str) -> TaskSet {
    graph.datasets_ref()[dataset].clone()
}

/// Gathers the pairs, per-node rows and artifacts a report reads from the graph. In plan mode
/// (`bench report`), pairs not graded yet count as not run.
pub fn report_inputs(
    graph: &Graph<'_>,
    m: &Manifest,
    needs: &[String],
    r: &crate::manifest::ReportStage,
) -> ReportInputs {
    let stages = graph.report_input_stages(needs);
    let mut teams: Vec<String> = Vec::new();
    let mut gold = BTreeMap::new();
    let mut pairs = Vec::new();
    let mut rows = Vec::new();
    // Solve nodes that have a grade node (whose pair the grade reports).
    let graded: std::collections::HashSet<usize> = graph
        .nodes
        .iter()
        .filter_map(|n| match &n.kind {
            NodeKind::Grade { source, .. } => Some(*source),
            _ => None,
        })
        .collect();
    let mut artifacts: BTreeMap<(String, String, u32), PairArtifacts> = BTreeMap::new();
    let mut since = None;
    let mut datasets = Vec::new();
    for s in &m.stage_order {
        match &m.stages[s].kind {
            StageKind::Sample(sample) => {
                since = since.or(sample.filters.since.clone());
                datasets.push(match &m.datasets[&sample.dataset].source {
                    crate::manifest::DatasetSource::Path(_) => {
                        format!("{} (local)", sample.dataset)
                    }
                    crate::manifest::DatasetSource::Hub { repo, revision, .. } => {
                        format!("{repo}@{revision}")
                    }
                });
            }
            StageKind::Solve(solve) if stages.contains(s) => {
                for t in &solve.teams {
                    if !teams.contains(t) {
                        teams.push(t.clone());
                    }
                }
            }
            _ => {}
        }
    }
    for s in &stages {
        for id in graph.stage_nodes(s) {
            let node = &graph.nodes[*id];
            match &node.kind {
                NodeKind::Gold { task, empty } => {
                    let v = graph.gold_verdict(s, &task.instance_id);
                    let failed = matches!(node.state, NodeState::Failed(_));
                    if !*empty {
                        gold.insert(task.instance_id.clone(), if failed { None } else { v });
                    }
                }
                NodeKind::Grade {
                    task,
                    source,
                    team,
                    replicate,
                } => {
                    let solve = graph.nodes[*source].state.record();
                    let solve_out: Option<SolveOutput> =
                        solve.and_then(|r| serde_json::from_value(r.output.clone()).ok());
                    let grade_out: Option<GradeOutput> = node
                        .state
                        .record()
                        .map(|rec| serde_json::from_value(rec.output.clone()).unwrap_or_default());
                    let solve_timed_out = solve_out.as_ref().is_some_and(|o| o.timed_out);
                    let state = match &node.state {
                        NodeState::Cached(_) | NodeState::Done(_) => {
                            let g = grade_out.clone().unwrap_or_default();
                            if g.resolved {
                                PairState::Resolved
                            } else {
                                PairState::Unresolved {
                                    timed_out: g.timed_out || solve_timed_out,
                                }
                            }
                        }
                        // Plan mode (`bench report`): not graded yet.
                        NodeState::NotRun(_) | NodeState::WillRun => PairState::NotRun,
                        NodeState::Failed(e) => PairState::Errored {
                            reason: format!("grading: {e}"),
                        },
                        _ => PairState::Errored {
                            reason: "not graded".into(),
                        },
                    };
                    rows.push(NodeRow {
                        node: "grade".into(),
                        address: node.address.clone(),
                        key: node.state.record().map(|r| r.key.clone()),
                        task: task.instance_id.clone(),
                        repo: Some(task.repo.clone()),
                        language: task.language.clone(),
                        team: team.clone(),
                        replicate: *replicate,
                        status: row_status(&node.state).into(),
                        resolved: grade_out.as_ref().map(|g| g.resolved),
                        timed_out: grade_out.as_ref().map(|g| g.timed_out || solve_timed_out),
                        errored: matches!(node.state, NodeState::Failed(_)),
                        error: match &node.state {
                            NodeState::Failed(e) => Some(e.clone()),
                            _ => None,
                        },
                        patch_applied: grade_out.as_ref().map(|g| g.patch_applied),
                        cost_usd: None,
                        input_tokens: None,
                        output_tokens: None,
                        patch_bytes: None,
                        duration_s: grade_out.as_ref().map(|g| g.duration_ms as f64 / 1000.0),
                    });
                    if let Some(rec) = node.state.record() {
                        artifact_entry(&mut artifacts, task, team, *replicate).log =
                            rec.blobs.get("log").cloned();
                    }
                    pairs.push(PairOutcome {
                        task: task.instance_id.clone(),
                        team: team.clone(),
                        replicate: *replicate,
                        state,
                        cost_usd: solve_out.as_ref().and_then(|o| o.cost_usd),
                        wall_time_s: solve_out.as_ref().map(|o| o.duration_ms as f64 / 1000.0),
                        language: task.language.clone(),
                        repo: Some(task.repo.clone()),
                        score: None,
                    });
                }
                NodeKind::Solve {
                    task,
                    team,
                    replicate,
                } => {
                    let solve_out: Option<SolveOutput> = node
                        .state
                        .record()
                        .and_then(|r| serde_json::from_value(r.output.clone()).ok());
                    rows.push(NodeRow {
                        node: "solve".into(),
                        address: node.address.clone(),
                        key: node.state.record().map(|r| r.key.clone()),
                        task: task.instance_id.clone(),
                        repo: Some(task.repo.clone()),
                        language: task.language.clone(),
                        team: team.clone(),
                        replicate: *replicate,
                        status: row_status(&node.state).into(),
                        resolved: None,
                        timed_out: solve_out.as_ref().map(|o| o.timed_out),
                        errored: matches!(node.state, NodeState::Failed(_)),
                        error: match &node.state {
                            NodeState::Failed(e) => Some(e.clone()),
                            _ => solve_out.as_ref().and_then(|o| o.solve_error.clone()),
                        },
                        patch_applied: None,
                        cost_usd: solve_out.as_ref().and_then(|o| o.cost_usd),
                        input_tokens: solve_out.as_ref().and_then(|o| o.input_tokens),
                        output_tokens: solve_out.as_ref().and_then(|o| o.output_tokens),
                        patch_bytes: solve_out.as_ref().map(|o| o.patch_bytes),
                        duration_s: solve_out.as_ref().map(|o| o.duration_ms as f64 / 1000.0),
                    });
                    if let Some(rec) = node.state.record() {
                        let a = artifact_entry(&mut artifacts, task, team, *replicate);
                        a.patch = solve_out.as_ref().map(|o| o.patch.clone());
                        a.trajectory = rec.blobs.get("trajectory").cloned();
                    }
                    let reason = match &node.state {
                        NodeState::Failed(e) => Some(PairState::Errored {
                            reason: format!("solving: {e}"),
                        }),
                        NodeState::NotRun(_) => Some(PairState::NotRun),
                        NodeState::WillRun if !graded.contains(id) => Some(PairState::NotRun),
                        _ => None,
                    };
                    if let Some(state) = reason {
                        pairs.push(PairOutcome {
                            task: task.instance_id.clone(),
                            team: team.clone(),
                            replicate: *replicate,
                            state,
                            cost_usd: None,
                            wall_time_s: None,
                            language: task.language.clone(),
                            repo: Some(task.repo.clone()),
                            score: None,
                        });
                    }
                }
                _ => {}
            }
        }
    }
    pairs.sort_by(|a, b| (&a.task, &a.team, a.replicate).cmp(&(&b.task, &b.team, b.replicate)));
    ReportInputs {
        manifest: m.name.clone(),
        description: m.description.clone(),
        bench_version: env!("CARGO_PKG_VERSION").to_string(),
        backend: m.backend.kind.to_string(),
        datasets,
        since,
        teams,
        baseline: r.baseline.clone(),
        count_errors_as_failures: r.count_errors_as_failures,
        gold,
        pairs,
        rows,
        artifacts: artifacts.into_values().collect(),
        promote: r.promote.clone(),
    }
}

fn row_status(state: &NodeState) -> &'static str {
    match state {
        NodeState::Cached(_) | NodeState::Done(_) => "ok",
        NodeState::Failed(_) => "failed",
        _ => "not_run",
    }
}

fn artifact_entry<'a>(
    artifacts: &'a mut BTreeMap<(String, String, u32), PairArtifacts>,
    task: &crate::tasks::Task,
    team: &str,
    replicate: u32,
) -> &'a mut PairArtifacts {
    artifacts
        .entry((task.instance_id.clone(), team.to_string(), replicate))
        .or_insert_with(|| PairArtifacts {
            task: task.instance_id.clone(),
            team: team.to_string(),
            replicate,
            ..Default::default()
        })
}
