//! What happened during an apply, as typed values: the dispatcher, the executors and the
//! backends emit an [`Event`] for each thing a person or a tool may want to know (a node
//! started, finished, was cached or shared a run; a note; a stage's and the run's summary).
//! This file says what happened, never how it looks: rendering is `reporter.rs`'s. One event
//! per line is what `bench apply --message-format json` prints, described by
//! `schemas/events.schema.json` (generated from these types by [`events_schema_text`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The version of the event stream's shape, in [`RunStarted::format`]. A field added keeps it;
/// a field removed or changed in meaning bumps it.
pub const EVENTS_FORMAT: u32 = 1;

/// One event of an apply. Each serializes as a JSON object whose `event` field names its kind.
///
/// Per node, the stream holds exactly one terminal event: `cache_hit` (the store or the remote
/// cache held its result before this apply) or `node_finished`. A node that runs has one
/// `node_started` before it; a node whose key another node of this apply runs has one
/// `node_shared` instead. A node requeued after its host was lost (`node_retried`) starts
/// again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The apply begins; the plan's counts per stage are known before any node starts.
    RunStarted(RunStarted),
    /// A node begins to run (its key's one run in this apply).
    NodeStarted(NodeStarted),
    /// A node whose key another node of this apply runs (an identical patch, say): it waits
    /// for that run and takes its result. Ends with its own `node_finished`.
    NodeShared(NodeShared),
    /// A node whose result the store (or the remote cache) held before this apply. Terminal.
    CacheHit(CacheHit),
    /// A node ended. Terminal.
    NodeFinished(NodeFinished),
    /// A running node runs again: its host was lost (a pool of Docker hosts).
    NodeRetried(NodeRetried),
    /// A node shipped to an engine (`[execution]`): queued, running on a node, or resubmitted
    /// after its job was lost. Not terminal: the node ends with its `node_finished`.
    NodePlaced(NodePlaced),
    /// Something a person should read: a note or a warning.
    Note(Note),
    /// A backend built an image (an agent image, or a task's environment).
    ImageBuilt(ImageBuilt),
    /// A line of progress of a task image's pull (before any node starts).
    ImagePull(ImagePull),
    /// The backend's current load (a pool's hosts), when it changed.
    BackendLoad(BackendLoad),
    /// What each host of a pool did, when the apply ends.
    BackendSummary(BackendSummary),
    /// A stage's final counts (emitted for every stage, in the manifest's order, when the
    /// apply ends).
    StageFinished(StageCounts),
    /// The apply ended. The last event.
    RunFinished(RunFinished),
}

/// The start of an apply, with the plan it follows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunStarted {
    /// The version of the stream's shape ([`EVENTS_FORMAT`]).
    pub format: u32,
    /// The run's id (its file in the store's `runs/`).
    pub run_id: String,
    /// The manifest's path.
    pub manifest: String,
    /// The store's path.
    pub store: String,
    /// Per stage in the manifest's order, what the plan counts.
    pub stages: Vec<StagePlan>,
}

/// What the plan counts for one stage, as `bench plan` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StagePlan {
    pub stage: String,
    /// The stage's kind (`sample`, `gold`, `solve`, `grade`, `report`).
    pub kind: String,
    /// Nodes to run: distinct keys not in the store.
    pub to_run: u64,
    /// Nodes the store holds.
    pub cached: u64,
    /// Nodes that will share the run of a key another node runs.
    pub shared: u64,
    /// The counts depend on outcomes not known yet (which gold patches pass, which patches
    /// the agents write): `to_run` and `shared` are then at most.
    pub estimated: bool,
}

/// A node starts to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NodeStarted {
    pub stage: String,
    /// The node's address (`solve/<task>/<team>/0`, ...).
    pub address: String,
    /// Its key (blake3 of its job).
    pub key: String,
}

/// A node shares another node's run of the same key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NodeShared {
    pub stage: String,
    pub address: String,
    pub key: String,
    /// The address of the node that runs (or ran) the key.
    pub with: String,
}

/// A node's result was in the store before this apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CacheHit {
    pub stage: String,
    pub address: String,
    pub key: String,
    /// The remote cache served it in this apply.
    pub remote: bool,
}

/// How a node ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Its result is stored (an unresolved grade or a timed-out solve is a result too).
    Done,
    /// An infrastructure error: nothing stored, the next apply retries it.
    Failed,
    /// A budget kept it from launching.
    NotRun,
    /// Ctrl-C or SIGTERM cancelled it; the next apply runs it.
    Cancelled,
}

/// A node ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NodeFinished {
    pub stage: String,
    pub address: String,
    /// Its key (`None`: the node failed before its key was known).
    pub key: Option<String>,
    pub outcome: Outcome,
    /// For people: what it produced (`resolved`, `patch 120 bytes`), or the error or reason.
    pub detail: String,
    /// The node whose run it shared (`None`: it ran itself).
    pub shared_with: Option<String>,
    /// How long its run took, for a node that ran and stored its result.
    pub duration_ms: Option<u64>,
}

/// A node runs again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NodeRetried {
    pub stage: String,
    pub address: String,
    /// Why, with the error it had.
    pub reason: String,
}

/// Where a shipped node is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NodePlaced {
    pub stage: String,
    pub address: String,
    pub key: String,
    pub placement: Placement,
}

/// What became of a shipped node, as its engine tells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum Placement {
    /// Submitted (or found still queued from an earlier apply), waiting for a machine.
    Queued {
        /// `slurm`.
        engine: String,
        /// The engine's id of the job (Slurm's job id).
        job_id: String,
        /// 1 for the first submission.
        attempt: u32,
    },
    /// Running on `node` (Slurm's node name).
    Running {
        engine: String,
        job_id: String,
        node: String,
        attempt: u32,
    },
    /// Its job was lost (a dead node, a preemption, a time limit) and it was submitted again.
    Resubmitted {
        engine: String,
        /// The lost job's id.
        job_id: String,
        /// What became of it.
        lost: String,
        /// The attempt now submitted.
        attempt: u32,
    },
}

impl Placement {
    /// A few words for a screen or `bench status --node`.
    pub fn describe(&self) -> String {
        match self {
            Placement::Queued {
                engine,
                job_id,
                attempt,
            } => format!("queued on {engine} as job {job_id} (attempt {attempt})"),
            Placement::Running {
                engine,
                job_id,
                node,
                attempt,
            } => format!("running on {engine} node {node} as job {job_id} (attempt {attempt})"),
            Placement::Resubmitted {
                engine,
                job_id,
                lost,
                attempt,
            } => format!(
                "{engine} job {job_id} was lost ({lost}); submitted again (attempt {attempt})"
            ),
        }
    }
}

/// How loud a note is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Worth knowing; nothing is wrong with the results.
    Note,
    /// Something that weakens what the run means (e.g. sandboxes without isolation).
    Warning,
}

/// A message for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Note {
    pub level: Level,
    /// The message, without a `note:` prefix.
    pub message: String,
}

/// What kind of image a backend built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImageKind {
    /// A harness installed on a task image (`bench-agent:<digest>`).
    Agent,
    /// A task's environment built from its build context (`bench-env:<digest>`).
    Environment,
}

/// A backend built an image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ImageBuilt {
    pub kind: ImageKind,
    /// The image's reference.
    pub image: String,
    /// The image it was built on (an ID), when there is one.
    pub base: Option<String>,
}

/// A pull's progress line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ImagePull {
    /// The image being pulled.
    pub image: String,
    /// The line, for people (`pull    IMAGE from REGISTRY ...`, `pulled  IMAGE ...`).
    pub line: String,
}

/// The backend's load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BackendLoad {
    /// One line, for people (`hosts   a 2/4, b 1/4`).
    pub line: String,
}

/// What a pool's hosts did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BackendSummary {
    pub hosts: Vec<HostSummary>,
}

/// One host of a pool, at the end of an apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HostSummary {
    /// The host's URL.
    pub host: String,
    /// Sandboxes created on it.
    pub sandboxes: u64,
    /// It stopped answering during the apply.
    pub unreachable: bool,
    /// Nodes that were running on it when it was lost (they ran again elsewhere).
    pub nodes_moved: u64,
}

/// A stage's counts, as the plan counts them: `cached + remote + done + shared + failed +
/// not_run + cancelled` is the stage's nodes, `done` is the plan's `to_run` and `shared` its
/// `shared` when the plan was exact.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StageCounts {
    pub stage: String,
    /// Held by the store before this apply.
    pub cached: u64,
    /// Served by the remote cache in this apply.
    pub remote: u64,
    /// Ran and stored their result.
    pub done: u64,
    /// Took the result of another node's run of the same key.
    pub shared: u64,
    /// Infrastructure errors (retried by the next apply), shared runs that failed included.
    pub failed: u64,
    /// Kept from launching by a budget.
    pub not_run: u64,
    /// Cancelled by Ctrl-C or SIGTERM.
    pub cancelled: u64,
}

impl StageCounts {
    /// Nodes that reached a terminal event.
    pub fn total(&self) -> u64 {
        self.cached
            + self.remote
            + self.done
            + self.shared
            + self.failed
            + self.not_run
            + self.cancelled
    }
}

/// How an apply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Every node has its result.
    Complete,
    /// Some nodes failed (not cached; the next apply retries them).
    Failed,
    /// Ctrl-C or SIGTERM; completed work is kept.
    Interrupted,
}

/// The end of an apply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunFinished {
    pub run_id: String,
    pub status: RunStatus,
    /// The exit code bench returns (see docs/events.md and `exit_codes.rs`).
    pub exit_code: u8,
    /// Per stage in the manifest's order (the same as the `stage_finished` events).
    pub stages: Vec<StageCounts>,
    /// The reports written, with their headline numbers.
    pub reports: Vec<ReportSummary>,
    /// The nodes that failed, each with the command that shows more.
    pub failures: Vec<Failure>,
    /// What the remote cache served and took (`None` without `[cache] remote`).
    pub remote: Option<RemoteCounts>,
}

/// A report's headline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportSummary {
    /// `report.md`'s path (report.json and report.html are beside it).
    pub path: String,
    /// One row per team, in the manifest's order (empty if report.json cannot be read).
    pub teams: Vec<TeamHeadline>,
    /// The promotion rule's verdict, if the report has one.
    pub promotion: Option<String>,
    /// What makes its numbers meaningless, if anything (it measured no task); `apply --strict`
    /// fails on one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One team's headline numbers, from report.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TeamHeadline {
    pub team: String,
    /// Resolved common tasks (first replicate) and the common tasks.
    pub resolved: u64,
    pub tasks: u64,
    /// `resolved / tasks`, and its 95% interval (`interval` names which: `wilson` or
    /// `clustered`).
    pub rate: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub interval: String,
    /// The priced spend on the common tasks, in US dollars; a lower bound when
    /// `cost_lower_bound` (some runs have no known cost).
    pub cost_usd: f64,
    pub cost_lower_bound: bool,
    /// Runs with a known cost, of `runs`.
    pub priced_runs: u64,
    pub runs: u64,
    /// Errored pairs (infrastructure failures), excluded from the numbers.
    pub errored: u64,
}

/// A node that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Failure {
    pub address: String,
    pub error: String,
    /// The command that shows the node's inputs and its last error.
    pub inspect: String,
}

/// The remote cache's part in an apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RemoteCounts {
    pub url: String,
    /// Distinct keys it served, the blobs downloaded for them and their bytes.
    pub served: u64,
    pub blobs: u64,
    pub bytes: u64,
    /// Results uploaded, and those that could not be.
    pub uploaded: u64,
    pub not_uploaded: u64,
}

/// The JSON Schema of one line of `--message-format json` (draft 7), as checked in at
/// `schemas/events.schema.json`.
pub fn events_schema_text() -> String {
    let schema = schemars::generate::SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<Event>();
    let mut text = serde_json::to_string_pretty(&schema.to_value()).expect("schemas serialize");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialize_with_their_kind_and_read_back() {
        let e = Event::NodeShared(NodeShared {
            stage: "grade".into(),
            address: "grade/t/oracle/0".into(),
            key: "k".into(),
            with: "gold/t".into(),
        });
        let text = serde_json::to_string(&e).expect("serializes");
        assert_eq!(
            text,
            r#"{"event":"node_shared","stage":"grade","address":"grade/t/oracle/0","key":"k","with":"gold/t"}"#
        );
        assert_eq!(serde_json::from_str::<Event>(&text).expect("parses"), e);
    }
}
