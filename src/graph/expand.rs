//! Expansion of the stage DAG into nodes, shared by `plan` and `apply`.
//!
//! [`Graph::advance`] walks the stages in topological order and creates every node whose inputs
//! are now known: sample 1; gold 1 per sampled task (2 with the empty check); solve 1 per task x
//! team x replicate, for tasks that passed gold (a `limit` takes a prefix of the incoming order);
//! grade 1 per finished solve; report 1 once everything it reads has settled. A new node with a
//! key is looked up in the store at once: a hit completes it. In [`Mode::Plan`] a miss becomes
//! `WillRun`, and nodes behind it are created with an unknown key where their key needs its
//! output; in [`Mode::Apply`] a miss is `Ready` for the dispatcher. Nothing here runs work or
//! writes to the store.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use crate::jobs::{GradeJob, Job, Kind, PatchInput, ProtocolId, ReportJob, SampleJob, SolveJob};
use crate::manifest::AuditMode;
use crate::manifest::{Manifest, StageKind};
use crate::store::{ActionRecord, Lookup, Store};
use crate::tasks::{Task, TaskSet};

use super::jobs::{JobBuilder, protocol_of};

/// A node's job, by kind. Boxed: the graph keeps every node's job, and a `Node` holding one
/// inline was 440 bytes, most of it the largest job's, in a vector that grows by doubling.
#[derive(Debug, Clone)]
pub enum NodeJob {
    Sample(Box<SampleJob>),
    Grade(Box<GradeJob>),
    Solve(Box<SolveJob>),
    /// Shared: the launch hands the runner the graph's job, not a copy (a report's inputs hold a
    /// row per node).
    Report(Arc<ReportJob>),
}

/// A node to add, in [`Graph::add_all`].
struct Pending {
    address: String,
    kind: NodeKind,
    job: Option<NodeJob>,
    error: Option<String>,
}

impl Pending {
    fn job(address: String, kind: NodeKind, job: NodeJob) -> Pending {
        Pending {
            job: Some(job),
            ..Pending::open(address, kind)
        }
    }

    /// A node whose job is not known yet (plan mode).
    fn open(address: String, kind: NodeKind) -> Pending {
        Pending {
            address,
            kind,
            job: None,
            error: None,
        }
    }
}

/// The keys of `items`' jobs, in order, hashed on up to two threads.
fn keys_of(items: &[Pending]) -> Vec<Option<String>> {
    let key = |p: &Pending| p.job.as_ref().map(NodeJob::key);
    if items.len() < 64 {
        return items.iter().map(key).collect();
    }
    let (first, second) = items.split_at(items.len() / 2);
    std::thread::scope(|s| {
        let other = s.spawn(|| second.iter().map(key).collect::<Vec<_>>());
        let mut keys: Vec<Option<String>> = first.iter().map(key).collect();
        keys.extend(other.join().expect("hashing a job does not panic"));
        keys
    })
}

impl NodeJob {
    pub fn key(&self) -> String {
        match self {
            NodeJob::Sample(j) => j.key(),
            NodeJob::Grade(j) => j.key(),
            NodeJob::Solve(j) => j.key(),
            NodeJob::Report(j) => j.key(),
        }
    }

    /// What `plan --explain` compares and records keep.
    pub fn explain(&self) -> serde_json::Value {
        match self {
            NodeJob::Sample(j) => j.explain(),
            NodeJob::Grade(j) => j.explain(),
            NodeJob::Solve(j) => j.explain(),
            NodeJob::Report(j) => j.explain(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Plan,
    Apply,
}

/// What a node computes.
#[derive(Debug, Clone)]
pub enum NodeKind {
    Sample {
        dataset: String,
    },
    /// Grading of the gold patch (or, with `empty`, of the empty patch).
    Gold {
        task: Arc<Task>,
        empty: bool,
    },
    Solve {
        task: Arc<Task>,
        team: String,
        replicate: u32,
    },
    Grade {
        task: Arc<Task>,
        /// Address of the solve node whose patch is graded.
        source: usize,
        team: String,
        replicate: u32,
    },
    Report,
}

impl NodeKind {
    /// The kind of output a node of this kind stores (a gold check is a grade).
    pub fn output_kind(&self) -> Kind {
        match self {
            NodeKind::Sample { .. } => Kind::Sample,
            NodeKind::Gold { .. } | NodeKind::Grade { .. } => Kind::Grade,
            NodeKind::Solve { .. } => Kind::Solve,
            NodeKind::Report => Kind::Report,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            NodeKind::Sample { .. } => "sample",
            NodeKind::Gold { .. } | NodeKind::Grade { .. } => "grade",
            NodeKind::Solve { .. } => "solve",
            NodeKind::Report => "report",
        }
    }

    pub fn team(&self) -> Option<&str> {
        match self {
            NodeKind::Solve { team, .. } | NodeKind::Grade { team, .. } => Some(team),
            _ => None,
        }
    }

    pub fn task(&self) -> Option<&Arc<Task>> {
        match self {
            NodeKind::Gold { task, .. }
            | NodeKind::Solve { task, .. }
            | NodeKind::Grade { task, .. } => Some(task),
            _ => None,
        }
    }
}

/// Where a node is.
#[derive(Debug, Clone)]
pub enum NodeState {
    /// Apply: to run (its key is known and not in the store).
    Ready,
    Running,
    /// Found in the store.
    Cached(Arc<ActionRecord>),
    /// Computed by this apply.
    Done(Arc<ActionRecord>),
    /// An infrastructure error: not cached, retried next time.
    Failed(String),
    /// Plan: will run (its key is unknown or not in the store).
    WillRun,
    /// Not run: the budget halted launches.
    NotRun(String),
    /// Withdrawn: the result it was made from is being recomputed (a corrupt input); a new
    /// node takes its place.
    Retracted,
}

impl NodeState {
    pub fn is_terminal(&self) -> bool {
        !matches!(self, NodeState::Ready | NodeState::Running)
    }

    pub fn record(&self) -> Option<&Arc<ActionRecord>> {
        match self {
            NodeState::Cached(r) | NodeState::Done(r) => Some(r),
            _ => None,
        }
    }
}

/// One node.
#[derive(Debug, Clone)]
pub struct Node {
    pub id: usize,
    pub address: String,
    pub stage: String,
    pub kind: NodeKind,
    /// `None` when the job depends on an output that is not known yet (plan only).
    pub job: Option<NodeJob>,
    /// The job's key.
    pub key: Option<String>,
    pub state: NodeState,
}

/// Per-stage counts for plan and status.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct StageSummary {
    pub stage: String,
    pub kind: String,
    pub cached: usize,
    pub to_run: usize,
    pub done: usize,
    pub failed: usize,
    pub not_run: usize,
    /// Nodes that will run with a key an earlier node runs: they wait for that one run.
    pub shared: usize,
    /// Nodes the remote cache serves (plan: a trusted record is there; apply: fetched).
    #[serde(skip_serializing_if = "is_zero")]
    pub remote: usize,
    pub orphaned: usize,
    /// Counts depend on outcomes not known yet (e.g. which gold patches pass).
    pub estimated: bool,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Default)]
struct StageRt {
    nodes: Vec<usize>,
    /// Solve: emitted task ids (a sample that names a task twice gets its solves once).
    seen: HashSet<String>,
    /// Solve: the positions in the incoming order not decided yet (a gold verdict pending), in
    /// order; `None` until the incoming tasks are known. An expansion looks at these only, so
    /// it costs what is still pending, not every task again.
    undecided: Option<Vec<usize>>,
    /// Solve: tasks taken so far (towards a `limit`).
    taken: u32,
    /// Grade: per upstream stage, the next position of its node list not looked at yet, and
    /// the nodes looked at that have not finished (in order). A finished source is taken once;
    /// a reopened one is put back (`reopen`).
    sources: HashMap<String, Sources>,
    expanded: bool,
    settled: bool,
    estimated: bool,
}

/// A grade stage's scan of one upstream stage's nodes: see `StageRt::sources`.
#[derive(Default)]
struct Sources {
    next: usize,
    waiting: Vec<usize>,
}

/// Tasks flowing into a solve stage, whether a gold stage gates them, and whether the upstream
/// stage is settled (`Graph::incoming`).
type Incoming<'g> = (&'g Vec<Arc<Task>>, bool, bool);

/// A record known for a key (`Graph::records`), and whether the blobs it references were
/// checked (or this apply computed it): a flag beside the record, not a second set of keys.
#[derive(Clone)]
struct Known {
    rec: Arc<ActionRecord>,
    checked: bool,
}

/// The expanding node graph of one manifest.
pub struct Graph<'a> {
    pub manifest: &'a Manifest,
    pub(super) store: Option<&'a Store>,
    mode: Mode,
    datasets: &'a BTreeMap<String, TaskSet>,
    pub nodes: Vec<Node>,
    stages: BTreeMap<String, StageRt>,
    /// Gold stage -> task id -> node ids.
    gold_nodes: HashMap<String, HashMap<String, Vec<usize>>>,
    /// Sample stage -> ordered tasks.
    samples: HashMap<String, Vec<Arc<Task>>>,
    /// Records read from the store or completed by this apply, by key (shared keys are read
    /// once; a key completed earlier in this apply is a hit).
    records: HashMap<String, Option<Known>, foldhash::fast::RandomState>,
    /// Plan mode: the keys each shard of the store's records holds, listed once per shard, so
    /// that a key without a record costs no file lookup (a plan on a new store looks up
    /// hundreds of thousands). Apply reads the record files themselves (others may be written
    /// while it runs).
    shards: HashMap<String, std::collections::HashSet<String>>,
    jobs: JobBuilder<'a>,
    /// Task id -> the protocol of the dataset it was sampled from.
    protocols: HashMap<String, ProtocolId>,
    /// Tasks whose dataset lets grading use the network (`grade_network`).
    grade_network: std::collections::HashSet<String>,
    /// Records that failed verification: (path, reason). Their nodes recompute.
    pub invalid: Vec<(PathBuf, String)>,
    /// Blobs a cached record needs that are missing, empty or (with `verify_blobs`) corrupt:
    /// the record is not used, so its node recomputes (and what is built on it).
    pub bad_blobs: Vec<crate::store::BadBlob>,
    /// Re-hash every blob a cached record needs (`apply --verify`, `bench verify`); without
    /// it, blobs are checked by stat.
    pub verify_blobs: bool,
    /// Keys whose result the remote cache served (`serve_remote`): their nodes count as
    /// served by it.
    remote_served: HashSet<String>,
    /// Plan with a remote cache: a node with a key and no local record is left `Ready` (not
    /// settled) until the remote has been asked for it, so nothing downstream is expanded from
    /// a guess; the caller then serves it or makes it `WillRun` (`settle_unserved`).
    pub ask_remote: bool,
    /// Keep the jobs of nodes that will not run (for `plan --explain` they are not needed;
    /// dropping them keeps big plans small).
    pub keep_inputs: bool,
    /// `apply --rerun`: solve addresses whose stored result runs again as a new attempt
    /// (when their record is still the one selected).
    pub rerun: HashMap<String, RerunOf>,
    /// The solve nodes of this expansion that run again, by id.
    pub rerunning: HashMap<usize, RerunOf>,
}

/// A stored solve that `apply --rerun` runs again, with what it replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RerunOf {
    /// The key whose record is replaced (the node's key when it was selected).
    pub solve_key: String,
    /// The grade of the replaced attempt, if it was graded.
    pub grade_key: Option<String>,
    /// The pair's outcome before (`timed out`, `errored`, `unresolved`, `resolved`, ...).
    pub outcome: String,
    /// The `--rerun` word that selected it.
    pub selected_by: String,
    /// The new attempt's deadline (`--timeout`; `None`: the stage's).
    pub timeout: Option<std::time::Duration>,
}

impl<'a> Graph<'a> {
    /// Errors: a harness file (script, install files) that cannot be read.
    pub fn new(
        manifest: &'a Manifest,
        store: Option<&'a Store>,
        datasets: &'a BTreeMap<String, TaskSet>,
        mode: Mode,
    ) -> Result<Self, String> {
        Ok(Graph {
            manifest,
            store,
            mode,
            datasets,
            nodes: Vec::new(),
            stages: manifest
                .stage_order
                .iter()
                .map(|s| (s.clone(), StageRt::default()))
                .collect(),
            gold_nodes: HashMap::new(),
            samples: HashMap::new(),
            records: HashMap::default(),
            shards: HashMap::new(),
            jobs: JobBuilder::new(manifest)?,
            protocols: HashMap::new(),
            grade_network: Default::default(),
            invalid: Vec::new(),
            bad_blobs: Vec::new(),
            verify_blobs: false,
            remote_served: HashSet::new(),
            ask_remote: false,
            keep_inputs: false,
            rerun: HashMap::new(),
            rerunning: HashMap::new(),
        })
    }

    fn add(&mut self, stage: &str, address: String, kind: NodeKind, job: Option<NodeJob>) -> usize {
        let key = job.as_ref().map(NodeJob::key);
        self.add_keyed(stage, address, kind, job, key)
    }

    /// [`Graph::add`] of many nodes in order (the same ids), their keys hashed on two threads
    /// first (hashing the jobs is most of a big cached stage's expansion). An item's error, if
    /// any, fails its node.
    fn add_all(&mut self, stage: &str, items: Vec<Pending>) {
        let keys = keys_of(&items);
        for (item, key) in items.into_iter().zip(keys) {
            let id = self.add_keyed(stage, item.address, item.kind, item.job, key);
            if let Some(e) = item.error {
                self.nodes[id].state = NodeState::Failed(e);
            }
        }
    }

    fn add_keyed(
        &mut self,
        stage: &str,
        address: String,
        kind: NodeKind,
        job: Option<NodeJob>,
        key: Option<String>,
    ) -> usize {
        let id = self.nodes.len();
        let state = match (&key, self.mode) {
            (Some(k), _) => match self.lookup(k, kind.output_kind()) {
                Some(rec) => NodeState::Cached(rec),
                None if self.mode == Mode::Plan && !self.ask_remote => NodeState::WillRun,
                None if self.mode == Mode::Plan => NodeState::Ready,
                None => NodeState::Ready,
            },
            (None, Mode::Plan) => NodeState::WillRun,
            (None, Mode::Apply) => unreachable!("apply creates nodes only when their job is known"),
        };
        // `apply --rerun`: a selected solve whose record is still the one selected runs again.
        let state = match state {
            NodeState::Cached(rec) if matches!(kind, NodeKind::Solve { .. }) => {
                match self.rerun.get(&address) {
                    Some(r) if r.solve_key == rec.key => {
                        self.rerunning.insert(id, r.clone());
                        match self.mode {
                            Mode::Apply => NodeState::Ready,
                            Mode::Plan => NodeState::WillRun,
                        }
                    }
                    _ => NodeState::Cached(rec),
                }
            }
            other => other,
        };
        // Jobs are kept only where they are read: by nodes about to run (apply), and for
        // explanations (plan --explain). Dropping the rest keeps big plans small.
        let keep = match self.mode {
            // A finished node may be reopened (a corrupt input): apply keeps every job.
            Mode::Apply => true,
            Mode::Plan => {
                matches!(state, NodeState::WillRun | NodeState::Ready) && self.keep_inputs
            }
        };
        self.nodes.push(Node {
            id,
            address,
            stage: stage.to_string(),
            kind,
            job: if keep { job } else { None },
            key,
            state,
        });
        self.stages
            .get_mut(stage)
            .expect("stage exists")
            .nodes
            .push(id);
        id
    }

    fn lookup(&mut self, key: &str, kind: Kind) -> Option<Arc<ActionRecord>> {
        let (rec, checked) = self.lookup_record(key)?;
        // A record answers one job: its key (checked when it was read) and its kind. A record
        // of another kind at this key (a grade filed at a sample's key) is not this node's
        // result: it is removed, said, and the node recomputes.
        if rec.kind() != kind {
            self.records.insert(key.to_string(), None);
            if let Some(store) = self.store {
                let path = store.action_file(key).unwrap_or_default();
                let _ = store.remove_action(key);
                self.invalid.push((
                    path,
                    format!(
                        "it holds a {} result where this {} node's result belongs (misfiled); it was removed",
                        rec.kind().name(),
                        kind.name()
                    ),
                ));
            }
            return None;
        }
        if checked {
            return Some(rec);
        }
        // A cached result is used only if the blobs it references are there (and, verifying,
        // intact): else its node recomputes, in this apply, as a missing record would.
        let store = self.store?;
        let deep = self.verify_blobs;
        let bad: Vec<_> = match rec.blob_digests() {
            Ok(digests) => digests
                .iter()
                .filter_map(|d| store.check_blob(d, deep).err())
                .collect(),
            Err(e) => vec![crate::store::BadBlob {
                path: store.root().join("objects"),
                problem: format!("not usable: the record names it by {e}"),
            }],
        };
        if bad.is_empty() {
            if let Some(Some(known)) = self.records.get_mut(key) {
                known.checked = true;
            }
            Some(rec)
        } else {
            self.bad_blobs.extend(bad);
            self.records.insert(key.to_string(), None);
            None
        }
    }

    /// The record known for `key` (read from the store the first time), and whether its
    /// blobs were checked.
    fn lookup_record(&mut self, key: &str) -> Option<(Arc<ActionRecord>, bool)> {
        if let Some(r) = self.records.get(key) {
            return r.as_ref().map(|k| (k.rec.clone(), k.checked));
        }
        let store = self.store?;
        if self.mode == Mode::Plan {
            let shard = key[..2.min(key.len())].to_string();
            let listed = self
                .shards
                .entry(shard)
                .or_insert_with(|| store.action_keys_in_shard_of(key));
            if !listed.contains(key) {
                self.records.insert(key.to_string(), None);
                return None;
            }
        }
        let rec: Option<Arc<ActionRecord>> = match store.get_action_light(key) {
            Lookup::Hit(r) => Some(Arc::from(r)),
            Lookup::Miss => None,
            Lookup::Invalid { path, reason } => {
                self.invalid.push((path, reason));
                None
            }
        };
        let known = rec.map(|rec| Known {
            rec,
            checked: false,
        });
        self.records.insert(key.to_string(), known.clone());
        known.map(|k| (k.rec, k.checked))
    }

    /// Records read ahead of the graph (valid ones only): their lookups read nothing.
    pub fn seed(&mut self, records: HashMap<String, ActionRecord>) {
        self.records.reserve(records.len());
        for (k, r) in records {
            let known = Known {
                rec: Arc::new(r),
                checked: false,
            };
            self.records.insert(k, Some(known));
        }
    }

    /// Whether the remote cache served `key`'s result in this expansion.
    pub fn served_by_remote(&self, key: &str) -> bool {
        self.remote_served.contains(key)
    }

    /// A result the remote cache serves for a node that would run: it becomes cached (and is
    /// counted as served by the remote), and the expansion goes on from it.
    pub fn serve_remote(&mut self, id: usize, rec: Arc<ActionRecord>) {
        if let Some(k) = self.nodes[id].key.clone() {
            self.remember(&k, rec.clone());
            self.remote_served.insert(k);
        }
        self.nodes[id].state = NodeState::Cached(rec);
    }

    /// Plan: the nodes among `ids` left `Ready` for the remote (`ask_remote`) that it did not
    /// serve will run.
    pub fn settle_unserved(&mut self, ids: &[usize]) {
        for &id in ids {
            if matches!(self.nodes[id].state, NodeState::Ready) {
                self.nodes[id].state = NodeState::WillRun;
            }
        }
    }

    /// A result this apply computed: later nodes with the same key reuse it.
    pub fn remember(&mut self, key: &str, rec: Arc<ActionRecord>) {
        let known = Known { rec, checked: true };
        self.records.insert(key.to_string(), Some(known));
    }

    /// Recomputes a finished node whose stored result turned out unusable (a corrupt blob): its
    /// record is forgotten, it becomes ready to run again, and what was built from it (the grade
    /// of a solve, the report) is withdrawn and rebuilt once it completes.
    pub fn reopen(&mut self, id: usize) {
        if let Some(k) = self.nodes[id].key.clone() {
            self.records.insert(k, None);
        }
        self.nodes[id].state = NodeState::Ready;
        if let Some(k) = &self.nodes[id].key {
            self.remote_served.remove(k);
        }
        let dependents: Vec<usize> = self
            .nodes
            .iter()
            .filter(|n| n.id != id)
            .filter(|n| match &n.kind {
                NodeKind::Grade { source, .. } => *source == id,
                NodeKind::Report => true,
                _ => false,
            })
            .map(|n| n.id)
            .collect();
        for d in dependents {
            if matches!(self.nodes[d].state, NodeState::Running) {
                continue;
            }
            self.nodes[d].state = NodeState::Retracted;
            let stage = self.nodes[d].stage.clone();
            let rt = self.stages.get_mut(&stage).expect("stage exists");
            rt.nodes.retain(|n| *n != d);
            // A grade's source is taken again once it finishes again.
            if let Some(scan) = rt.sources.get_mut(&self.nodes[id].stage)
                && let Err(at) = scan.waiting.binary_search(&id)
            {
                scan.waiting.insert(at, id);
            }
            if matches!(self.nodes[d].kind, NodeKind::Report) {
                rt.expanded = false;
            }
        }
    }

    /// The job builder (team specs).
    pub fn jobs(&self) -> &JobBuilder<'a> {
        &self.jobs
    }

    /// The job of a node that is about to run; jobs of cached nodes are not kept.
    pub fn job_of(&self, id: usize) -> Option<&NodeJob> {
        self.nodes[id].job.as_ref()
    }

    /// Marks a node finished (apply). A result is remembered for later nodes of its key.
    pub fn complete(&mut self, id: usize, state: NodeState) {
        if let (NodeState::Done(rec) | NodeState::Cached(rec), Some(k)) =
            (&state, self.nodes[id].key.clone())
        {
            self.remember(&k, rec.clone());
        }
        self.nodes[id].state = state;
    }

    pub fn set_state(&mut self, id: usize, state: NodeState) {
        self.nodes[id].state = state;
    }

    fn settled(&self, stage: &str) -> bool {
        self.stages[stage].settled
    }

    /// Creates every node whose inputs are known. Returns the ids of new nodes.
    pub fn advance(&mut self) -> Vec<usize> {
        let before = self.nodes.len();
        let order = self.manifest.stage_order.clone();
        for name in &order {
            let stage = &self.manifest.stages[name];
            match &stage.kind {
                StageKind::Sample(s) => self.expand_sample(name, &s.dataset),
                StageKind::Gold(g) => {
                    let up = stage.needs[0].clone();
                    self.expand_gold(name, &up, g.empty, g.timeout)
                }
                StageKind::Solve(s) => {
                    let up = stage.needs[0].clone();
                    self.expand_solve(name, &up, s)
                }
                StageKind::Grade(g) => {
                    let needs = stage.needs.clone();
                    self.expand_grade(name, &needs, g.timeout, g.audit, g.confirm, g.harbor)
                }
                StageKind::Report(r) => {
                    let needs = stage.needs.clone();
                    self.expand_report(name, &needs, r)
                }
            }
            if crate::timings::enabled() {
                crate::timings::mark(&format!("stage {name} expanded"));
            }
            let rt = &self.stages[name];
            let upstream_settled = stage.needs.iter().all(|n| self.settled(n));
            let all_terminal = rt.nodes.iter().all(|i| self.nodes[*i].state.is_terminal());
            let settled = upstream_settled && rt.expanded && all_terminal;
            let estimated = stage.needs.iter().any(|n| self.stages[n].estimated)
                || (self.mode == Mode::Plan
                    && stage.needs.iter().any(|n| {
                        self.stages[n]
                            .nodes
                            .iter()
                            .any(|i| matches!(self.nodes[*i].state, NodeState::WillRun))
                            && !matches!(self.manifest.stages[n].kind, StageKind::Sample(_))
                    }));
            let rt = self.stages.get_mut(name).expect("stage exists");
            rt.settled = settled;
            rt.estimated = estimated;
        }
        (before..self.nodes.len()).collect()
    }

    fn expand_sample(&mut self, stage: &str, dataset: &str) {
        if self.stages[stage].expanded {
            if let Some(id) = self.stages[stage].nodes.first().copied() {
                self.record_sample(stage, id);
            }
            return;
        }
        let StageKind::Sample(s) = &self.manifest.stages[stage].kind else {
            return;
        };
        let ds = &self.manifest.datasets[dataset];
        let Some(set) = self.datasets.get(dataset) else {
            // A dataset this machine cannot read yet: plan shows the sample as pending.
            if self.mode == Mode::Plan {
                self.add(
                    stage,
                    stage.to_string(),
                    NodeKind::Sample {
                        dataset: dataset.to_string(),
                    },
                    None,
                );
            }
            self.stages.get_mut(stage).expect("stage").expanded = true;
            return;
        };
        let job = self.jobs.sample(dataset, set, &s.filters);
        let protocol = protocol_of(ds.format);
        let id = self.add(
            stage,
            stage.to_string(),
            NodeKind::Sample {
                dataset: dataset.to_string(),
            },
            Some(NodeJob::Sample(Box::new(job))),
        );
        for t in set.tasks.keys() {
            self.protocols.insert(t.clone(), protocol);
            if ds.grade_network {
                self.grade_network.insert(t.clone());
            }
        }
        self.stages.get_mut(stage).expect("stage").expanded = true;
        if self.mode == Mode::Plan
            && matches!(self.nodes[id].state, NodeState::WillRun | NodeState::Ready)
        {
            // The sample is a pure function of the dataset: plan computes it to count what
            // follows.
            let ids = crate::tasks::sample(set, &s.filters);
            self.samples.insert(
                stage.to_string(),
                ids.iter().map(|i| set.tasks[i].clone()).collect(),
            );
        }
        self.record_sample(stage, id);
    }

    fn record_sample(&mut self, stage: &str, id: usize) {
        if self.samples.contains_key(stage) {
            return;
        }
        let Some(rec) = self.nodes[id].state.record() else {
            return;
        };
        let NodeKind::Sample { dataset } = &self.nodes[id].kind else {
            return;
        };
        let set = &self.datasets[dataset];
        let Some(out) = rec.sample() else {
            return;
        };
        let tasks = out
            .tasks
            .iter()
            .filter_map(|t| set.tasks.get(t).cloned())
            .collect();
        self.samples.insert(stage.to_string(), tasks);
    }

    /// The tasks of a sample stage, once known.
    pub fn sample_tasks(&self, stage: &str) -> Option<&Vec<Arc<Task>>> {
        self.samples.get(stage)
    }

    fn protocol(&self, task: &Task) -> ProtocolId {
        self.protocols
            .get(&task.instance_id)
            .copied()
            .unwrap_or(ProtocolId::Local)
    }

    fn grade_network(&self, task: &Task) -> bool {
        self.grade_network.contains(&task.instance_id)
    }

    fn expand_gold(&mut self, stage: &str, up: &str, empty: bool, timeout: std::time::Duration) {
        if self.stages[stage].expanded {
            return;
        }
        let Some(tasks) = self.samples.get(up).cloned() else {
            return;
        };
        let mut by_task: HashMap<String, Vec<usize>> = HashMap::new();
        for task in tasks {
            let protocol = self.protocol(&task);
            let gold = crate::jobs::GoldPatch::new(&task);
            let network = self.grade_network(&task);
            let job = self.jobs.grade(
                protocol,
                &task,
                PatchInput::Gold(gold),
                timeout,
                AuditMode::Flag,
                network,
            );
            let id = self.add(
                stage,
                format!("{stage}/{}", task.instance_id),
                NodeKind::Gold {
                    task: task.clone(),
                    empty: false,
                },
                Some(NodeJob::Grade(Box::new(job))),
            );
            let mut ids = vec![id];
            if empty {
                let job = self.jobs.grade(
                    protocol,
                    &task,
                    PatchInput::Empty,
                    timeout,
                    AuditMode::Flag,
                    network,
                );
                ids.push(self.add(
                    stage,
                    format!("{stage}/{}/empty", task.instance_id),
                    NodeKind::Gold {
                        task: task.clone(),
                        empty: true,
                    },
                    Some(NodeJob::Grade(Box::new(job))),
                ));
            }
            by_task.insert(task.instance_id.clone(), ids);
        }
        self.gold_nodes.insert(stage.to_string(), by_task);
        self.stages.get_mut(stage).expect("stage").expanded = true;
    }

    /// Whether a task passed a gold stage: `Some(true/false)` once known, `None` while pending.
    /// In plan mode a gold check that will run counts as passing (an upper bound).
    pub fn gold_verdict(&self, gold_stage: &str, task: &str) -> Option<bool> {
        let ids = self.gold_nodes.get(gold_stage)?.get(task)?;
        let mut valid = true;
        for id in ids {
            let node = &self.nodes[*id];
            let empty = matches!(node.kind, NodeKind::Gold { empty: true, .. });
            match &node.state {
                NodeState::Ready | NodeState::Running => return None,
                NodeState::WillRun => {}
                NodeState::Failed(_) | NodeState::NotRun(_) | NodeState::Retracted => valid = false,
                NodeState::Cached(r) | NodeState::Done(r) => {
                    let resolved = r.grade().is_some_and(|g| g.resolved);
                    // The gold patch must resolve; the empty patch must not.
                    valid &= resolved != empty;
                }
            }
        }
        Some(valid)
    }

    /// Why a task did not pass a gold stage, from its checks' recorded grades (or the error
    /// of a check that failed to run); `None` when it passed or is pending. Several checks'
    /// reasons (the gold patch and the empty patch) are joined with `; `.
    pub fn gold_reason(&self, gold_stage: &str, task: &str) -> Option<String> {
        let ids = self.gold_nodes.get(gold_stage)?.get(task)?;
        let mut why = Vec::new();
        for id in ids {
            let node = &self.nodes[*id];
            let empty = matches!(node.kind, NodeKind::Gold { empty: true, .. });
            match &node.state {
                NodeState::Failed(e) => why.push(format!("infrastructure error: {e}")),
                NodeState::NotRun(e) => why.push(format!("not run: {e}")),
                NodeState::Cached(r) | NodeState::Done(r) => {
                    if let Some(g) = r.grade().filter(|g| g.resolved == empty) {
                        why.push(g.gold_failure(empty));
                    }
                }
                _ => {}
            }
        }
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// The ordered tasks flowing into a solve stage from `up` (its sample's), whether a gold
    /// stage gates them (`up` is one) and whether `up` is settled; `None` until the sample is
    /// known.
    fn incoming(&self, up: &str) -> Option<Incoming<'_>> {
        match &self.manifest.stages[up].kind {
            StageKind::Sample(_) => Some((self.samples.get(up)?, false, true)),
            StageKind::Gold(_) => {
                let sample = &self.manifest.stages[up].needs[0];
                Some((self.samples.get(sample)?, true, self.stages[up].settled))
            }
            _ => None,
        }
    }

    /// The task at `pos` of what flows from `up`, with its gold verdict (`Some(true)` straight
    /// from a sample).
    fn incoming_at(&self, up: &str, pos: usize) -> Option<(Arc<Task>, Option<bool>)> {
        let (tasks, gated, _) = self.incoming(up)?;
        let task = tasks[pos].clone();
        let verdict = if gated {
            self.gold_verdict(up, &task.instance_id)
        } else {
            Some(true)
        };
        Some((task, verdict))
    }

    /// The in-sandbox grade a solve of `stage` runs for the forgery check: the first grade
    /// stage that grades `stage` with `confirm = true` (its timeout and audit mode).
    fn confirm_grade(&self, stage: &str, task: &Arc<Task>) -> Option<Box<crate::jobs::GradeJob>> {
        let (timeout, audit) = self.manifest.stage_order.iter().find_map(|name| {
            let st = &self.manifest.stages[name];
            match &st.kind {
                StageKind::Grade(g) if g.confirm && st.needs.iter().any(|n| n == stage) => {
                    Some((g.timeout, g.audit))
                }
                _ => None,
            }
        })?;
        Some(Box::new(self.jobs.grade(
            self.protocol(task),
            task,
            PatchInput::Empty,
            timeout,
            audit,
            self.grade_network(task),
        )))
    }

    /// Creates the solves of the tasks whose gold verdict is now known, in the incoming order
    /// (a `limit` takes a prefix of it: a pending verdict blocks what follows). Only the
    /// positions still undecided are looked at.
    fn expand_solve(&mut self, stage: &str, up: &str, s: &crate::manifest::SolveStage) {
        if self.stages[stage].expanded {
            return;
        }
        let Some((tasks, _, complete)) = self.incoming(up) else {
            return;
        };
        let count = tasks.len();
        let rt = self.stages.get_mut(stage).expect("stage");
        let undecided = rt.undecided.take().unwrap_or_else(|| (0..count).collect());
        let mut taken = rt.taken;
        let mut blocked = false;
        let mut left = Vec::new();
        let mut pending = Vec::new();
        for (i, &pos) in undecided.iter().enumerate() {
            if s.limit.is_some_and(|l| taken >= l) {
                left.extend_from_slice(&undecided[i..]);
                break;
            }
            let (task, verdict) = self.incoming_at(up, pos).expect("known above");
            match verdict {
                None if s.limit.is_some() => {
                    // Order matters for a limit: wait for the earlier task's verdict.
                    blocked = true;
                    left.extend_from_slice(&undecided[i..]);
                    break;
                }
                None => {
                    left.push(pos);
                    continue;
                }
                Some(false) => continue,
                Some(true) => taken += 1,
            }
            let rt = self.stages.get_mut(stage).expect("stage");
            if !rt.seen.insert(task.instance_id.clone()) {
                continue;
            }
            self.solves_of(stage, s, &task, &mut pending);
        }
        let rt = self.stages.get_mut(stage).expect("stage");
        rt.undecided = Some(left);
        rt.taken = taken;
        self.add_all(stage, pending);
        let limit_reached = s.limit.is_some_and(|l| taken >= l);
        if (complete && !blocked) || limit_reached {
            self.stages.get_mut(stage).expect("stage").expanded = true;
        }
    }

    /// The solve nodes of one task: one per team and replicate.
    fn solves_of(
        &self,
        stage: &str,
        s: &crate::manifest::SolveStage,
        task: &Arc<Task>,
        pending: &mut Vec<Pending>,
    ) {
        for team_name in &s.teams {
            for rep in 0..s.replicates {
                let address = format!("{stage}/{}/{team_name}/{rep}", task.instance_id);
                let kind = NodeKind::Solve {
                    task: task.clone(),
                    team: team_name.clone(),
                    replicate: rep,
                };
                pending.push(match self.jobs.solve(task, team_name, s.timeout, rep) {
                    Ok(mut job) => {
                        // The check grades in the worker's sandbox: solo teams.
                        if matches!(
                            self.manifest.teams[team_name].topology,
                            crate::manifest::Topology::Solo { .. }
                        ) {
                            job.confirm = self.confirm_grade(stage, task);
                        }
                        Pending::job(address, kind, NodeJob::Solve(Box::new(job)))
                    }
                    Err(e) => Pending {
                        error: Some(e),
                        ..Pending::open(address, kind)
                    },
                });
            }
        }
    }

    fn expand_grade(
        &mut self,
        stage: &str,
        needs: &[String],
        timeout: std::time::Duration,
        audit: AuditMode,
        confirm: bool,
        harbor: crate::manifest::HarborVerifier,
    ) {
        let sources = self.finished_sources(stage, needs);
        let mut pending = Vec::with_capacity(sources.len());
        for id in sources {
            let src = self.nodes[id].clone();
            let NodeKind::Solve {
                task,
                team,
                replicate,
            } = &src.kind
            else {
                continue;
            };
            let address = format!(
                "{stage}/{}/{}/{team}/{replicate}",
                src.stage, task.instance_id
            );
            let kind = NodeKind::Grade {
                task: task.clone(),
                source: id,
                team: team.clone(),
                replicate: *replicate,
            };
            match &src.state {
                NodeState::Cached(r) | NodeState::Done(r) => {
                    let Some(out) = r.solve() else {
                        continue;
                    };
                    if let Some(trial) = &out.harbor {
                        let job = self.jobs.harbor_grade(task, trial, harbor, timeout);
                        pending.push(Pending::job(address, kind, NodeJob::Grade(Box::new(job))));
                        continue;
                    }
                    let mut job = self.jobs.grade(
                        self.protocol(task),
                        task,
                        PatchInput::Stored(out.patch.clone()),
                        timeout,
                        audit,
                        self.grade_network(task),
                    );
                    if confirm {
                        job.confirm = out.in_sandbox.as_ref().and_then(|c| c.resolved);
                    }
                    pending.push(Pending::job(address, kind, NodeJob::Grade(Box::new(job))));
                }
                NodeState::WillRun => pending.push(Pending::open(address, kind)),
                _ => {}
            }
        }
        self.add_all(stage, pending);
        let expanded = needs.iter().all(|n| self.stages[n].settled);
        self.stages.get_mut(stage).expect("stage").expanded = expanded;
    }

    /// The upstream nodes of a grade stage that have finished since its last expansion, in
    /// the order of `needs` and of each stage's nodes. Looks at the nodes added upstream since
    /// and at those still waiting to finish, not at every node again.
    fn finished_sources(&mut self, stage: &str, needs: &[String]) -> Vec<usize> {
        let mut finished = Vec::new();
        for up in needs {
            let mut scan = self
                .stages
                .get_mut(stage)
                .expect("stage")
                .sources
                .remove(up)
                .unwrap_or_default();
            let added = &self.stages[up].nodes[scan.next..];
            scan.next += added.len();
            scan.waiting.extend_from_slice(added);
            scan.waiting.retain(|&id| {
                let done = self.nodes[id].state.is_terminal();
                if done {
                    finished.push(id);
                }
                !done
            });
            let rt = self.stages.get_mut(stage).expect("stage");
            rt.sources.insert(up.clone(), scan);
        }
        finished
    }

    fn expand_report(&mut self, stage: &str, needs: &[String], r: &crate::manifest::ReportStage) {
        if self.stages[stage].expanded || !needs.iter().all(|n| self.settled(n)) {
            return;
        }
        let unknown = self.report_input_stages(needs).iter().any(|n| {
            self.stages[n]
                .nodes
                .iter()
                .any(|id| matches!(self.nodes[*id].state, NodeState::WillRun))
        });
        let job = (!unknown).then(|| {
            let inputs = super::report::report_inputs(self, needs, r);
            crate::timings::mark("report inputs built");
            NodeJob::Report(Arc::new(ReportJob::new(inputs, r.out.clone())))
        });
        self.add(stage, stage.to_string(), NodeKind::Report, job);
        self.stages.get_mut(stage).expect("stage").expanded = true;
    }

    /// Every stage a report reads: its needs and, transitively, the solve and gold stages
    /// behind them.
    pub fn report_input_stages(&self, needs: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        let mut todo: Vec<String> = needs.to_vec();
        while let Some(s) = todo.pop() {
            if out.contains(&s) {
                continue;
            }
            let st = &self.manifest.stages[&s];
            if !matches!(st.kind, StageKind::Sample(_)) {
                out.push(s.clone());
                todo.extend(st.needs.iter().cloned());
            }
        }
        out.sort();
        out
    }

    /// The loaded datasets.
    pub fn datasets_ref(&self) -> &BTreeMap<String, TaskSet> {
        self.datasets
    }

    /// Node ids of a stage.
    pub fn stage_nodes(&self, stage: &str) -> &[usize] {
        &self.stages[stage].nodes
    }

    /// Counts per stage, with orphans from the index (addresses seen before, absent now).
    pub fn summaries(&self, previous: &BTreeMap<String, String>) -> Vec<StageSummary> {
        let present: HashSet<&str> = self.nodes.iter().map(|n| n.address.as_str()).collect();
        let mut to_run_keys: HashSet<&str> = HashSet::new();
        self.manifest
            .stage_order
            .iter()
            .map(|name| {
                let rt = &self.stages[name];
                let mut s = StageSummary {
                    stage: name.clone(),
                    kind: self.manifest.stages[name].kind.name().to_string(),
                    estimated: rt.estimated || !rt.expanded,
                    ..Default::default()
                };
                for id in &rt.nodes {
                    let node = &self.nodes[*id];
                    match &node.state {
                        NodeState::Cached(_)
                            if node
                                .key
                                .as_ref()
                                .is_some_and(|k| self.remote_served.contains(k)) =>
                        {
                            s.remote += 1
                        }
                        NodeState::Cached(_) => s.cached += 1,
                        NodeState::Done(_) => s.done += 1,
                        NodeState::Failed(_) => s.failed += 1,
                        NodeState::NotRun(_) => s.not_run += 1,
                        NodeState::Retracted => {}
                        NodeState::WillRun | NodeState::Ready | NodeState::Running => {
                            // Plan counts distinct keys: a node whose key an earlier node
                            // runs shares that run.
                            match &node.key {
                                Some(k) if !to_run_keys.insert(k.as_str()) => s.shared += 1,
                                _ => s.to_run += 1,
                            }
                        }
                    }
                }
                let prefix = format!("{name}/");
                s.orphaned = previous
                    .keys()
                    .filter(|a| {
                        (a.starts_with(&prefix) || *a == name) && !present.contains(a.as_str())
                    })
                    .count();
                s
            })
            .collect()
    }
}
