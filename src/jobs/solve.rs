//! The solve node's job: a team run once on one task (replicate `i` of it). The job holds the
//! solver-visible task, the whole team (topology, every harness used, the prompt templates it
//! renders), the gold patch when an oracle runs, this task's prediction when a predictions file
//! is replayed, the timeout and the replicate index. A rollout is nondeterministic, so the store
//! keeps the first rollout of each (task, team, replicate).
//!
//! Not here: the runtime budget share an attempt is offered (a scheduling decision recorded in
//! the output, like a time slot), and prices (cost is derived when the report renders).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    BackendFacts, Blob, Digested, GoldPatch, GradingTask, Job, KEY_SCHEMA, Kind, SolverTask,
};
use crate::types::{HarnessKind, Price, Topology, UsageFormat};
pub use crate::types::{InstallFile, InstallSpec, Tokens};

/// A harness as a solve runs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarnessSpec {
    pub kind: HarnessKind,
    /// Version of bench's adapter for this harness (how it is invoked and read).
    pub adapter_version: u32,
    pub command: Option<String>,
    pub script: Option<ScriptSpec>,
    /// The files the script reads, copied beside it (paths relative to the side directory):
    /// the harness's `files`, or the files beside its script.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<InstallFile>,
    /// Names of the variables passed from bench's environment (values are never keyed or
    /// stored).
    pub env: Vec<String>,
    pub usage: Option<UsageFormat>,
    pub version: Option<String>,
    /// Git globs of the files the CLI writes for itself (kept out of the patch).
    pub own_files: Vec<String>,
    /// What the agent image is built from (docker; `None` where nothing is installed).
    pub install: Option<InstallSpec>,
    /// docker under `egress = "allowlist"`: the only endpoints (`host:port`, sorted) the
    /// agent reaches, through the egress proxy. `None`: the backend's default (local: the
    /// host's network; docker with `egress = "open"`: the default bridge; oracle, nop and
    /// predictions: no network).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<Vec<String>>,
    /// The model API's base URL (`{{base_url}}` in the command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Globs of the CLI's caches under its home, left out of the trajectory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caches: Vec<String>,
}

/// A harness's script, by content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptSpec {
    pub name: String,
    pub content: Blob,
}

/// The prompt templates a team renders (`None`: the team never renders it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptSet {
    pub instruction: Option<String>,
    pub review: Option<String>,
    pub fix: Option<String>,
    pub judge: Option<String>,
}

/// A team as solves run it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeamSpec {
    pub topology: Topology,
    pub harnesses: BTreeMap<String, HarnessSpec>,
    pub prompts: PromptSet,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SolveJob {
    pub schema: u32,
    /// Version of the team logic (`stages/solve/teams.rs`).
    pub version: u32,
    pub backend: BackendFacts,
    pub task: SolverTask,
    pub team: Digested<TeamSpec>,
    /// The reference patch, when the team runs an oracle.
    pub gold_patch: Option<GoldPatch>,
    /// Per predictions harness: this task's patch in its file (`None`: no prediction).
    pub predictions: BTreeMap<String, Option<Blob>>,
    pub timeout_ms: u64,
    pub replicate: u32,
    /// The forgery check (`[stages.grade] confirm = true`): the grade to run in the agent's
    /// own sandbox after a solo team's worker (its patch input is the one produced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<Box<super::GradeJob>>,
    /// Harbor tasks: a solve is Harbor's trial, the rollout and then the verifier in the
    /// agent's own container, so it reads the task's grading view too (tests, verifier
    /// settings); the agent never sees it (`/tests` is uploaded after the agent's run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harbor: Option<HarborTrialJob>,
}

/// What a Harbor trial reads beyond the solve's own inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarborTrialJob {
    /// The harbor protocol's version (`protocols/harbor.rs`: the snapshot, the verifier steps,
    /// the network policy).
    pub protocol: u32,
    /// The task's grading view: tests and verifier settings.
    pub task: GradingTask,
}

impl SolveJob {
    pub fn new(
        backend: BackendFacts,
        task: SolverTask,
        team: Digested<TeamSpec>,
        gold_patch: Option<GoldPatch>,
        predictions: BTreeMap<String, Option<Blob>>,
        timeout: std::time::Duration,
        replicate: u32,
    ) -> SolveJob {
        SolveJob {
            schema: KEY_SCHEMA,
            version: super::versions::SOLVE,
            backend,
            task,
            team,
            gold_patch,
            predictions,
            timeout_ms: super::millis(timeout),
            replicate,
            confirm: None,
            harbor: None,
        }
    }

    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.timeout_ms)
    }
}

impl Job for SolveJob {
    const KIND: Kind = Kind::Solve;
    type Output = SolveOutput;

    fn explain(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("jobs serialize");
        v["team"] = self.team.expanded();
        v["task"] = self.task.explain();
        v
    }
}

/// What one agent run recorded of its model use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunUsage {
    /// `worker`, `coder`, `reviewer (round 1)`, ...
    pub role: String,
    pub harness: String,
    pub model: Option<String>,
    /// `None` when the run reported no token counts.
    pub tokens: Option<Tokens>,
    /// The harness's own dollar figure, if it printed one.
    pub reported_cost_usd: Option<f64>,
    /// Whether that figure is exact (not rounded for display).
    pub reported_exact: bool,
    /// The run drives no model (oracle, nop, predictions, a command without a model).
    pub no_model: bool,
    pub timed_out: bool,
}

/// Where a run's cost comes from, as the report counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CostBasis {
    /// No model: free.
    Free,
    /// The harness's own figure (claude's `total_cost_usd`), for a model the pricing table does
    /// not price.
    Reported,
    /// Its tokens priced from the pricing table.
    Table,
    /// Only the CLI's rounded figure.
    Rounded,
    /// Unknown.
    Unpriced,
}

impl CostBasis {
    pub fn name(self) -> &'static str {
        match self {
            CostBasis::Free => "free",
            CostBasis::Reported => "reported",
            CostBasis::Table => "table",
            CostBasis::Rounded => "rounded",
            CostBasis::Unpriced => "unpriced",
        }
    }
}

/// Where a recorded run's cost comes from, and the cost. The pricing table (built-in plus the
/// manifest's `[pricing]`) wins for a model it prices: a harness's own total (claude's
/// `total_cost_usd`) is one figure for the whole run, not priced per model, so it is used only
/// for a model the table does not price (exact first, then a rounded one). Unknown (`None`,
/// never $0) when neither is available; nothing for a run that drives no model. Derived when a
/// report is made, so editing a price re-renders the report and reruns nothing.
pub fn recorded_cost(
    run: &RunUsage,
    pricing: &BTreeMap<String, Price>,
) -> (CostBasis, Option<f64>) {
    if run.no_model {
        return (CostBasis::Free, Some(0.0));
    }
    if let (Some(t), Some(p)) = (run.tokens, run.model.as_ref().and_then(|m| pricing.get(m))) {
        return (
            CostBasis::Table,
            Some(crate::harness::pricing::cost_of_tokens(&t, p)),
        );
    }
    match run.reported_cost_usd {
        Some(c) if run.reported_exact => (CostBasis::Reported, Some(c)),
        Some(c) => (CostBasis::Rounded, Some(c)),
        None => (CostBasis::Unpriced, None),
    }
}

impl RunUsage {
    /// Where [`RunUsage::cost_usd`] takes the run's cost from ([`recorded_cost`]).
    pub fn cost_basis(&self, pricing: &BTreeMap<String, Price>) -> CostBasis {
        recorded_cost(self, pricing).0
    }

    /// The run's cost: nothing for a run without a model; the tokens at the table's price when
    /// the table prices its model; else the harness's own figure; else unknown.
    pub fn cost_usd(&self, pricing: &BTreeMap<String, Price>) -> Option<f64> {
        recorded_cost(self, pricing).1
    }
}

/// Output of a solve node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SolveOutput {
    /// Digest of the patch blob (possibly empty).
    pub patch: String,
    pub patch_bytes: u64,
    pub timed_out: bool,
    /// Set when the agent crashed (non-zero exit): an outcome, not an error.
    pub solve_error: Option<String>,
    pub exit_code: Option<i32>,
    /// Every agent run, in order.
    pub runs: Vec<RunUsage>,
    pub redacted: bool,
    pub duration_ms: u64,
    /// The budget share this attempt was offered, if the stage has a budget.
    pub budget_share_usd: Option<f64>,
    /// The forgery check's grade of the patch in the agent's own sandbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_sandbox: Option<InSandbox>,
    /// Harbor tasks: the agent's end state and the in-place verifier run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harbor: Option<HarborTrial>,
}

/// The verdict of the in-sandbox grade (`confirm`), or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InSandbox {
    pub resolved: Option<bool>,
    pub error: Option<String>,
}

/// What a Harbor trial stored: blobs by digest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HarborTrial {
    /// The agent's end state: a tarball of the paths it changed (`docker diff`) and the list
    /// of those it deleted, taken before the verifier ran.
    pub snapshot: String,
    pub snapshot_bytes: u64,
    /// The record of the verifier run in the agent's container (exit code, timeout, the
    /// reward files as written).
    pub verification: String,
}

impl SolveOutput {
    /// The team's cost: the sum over its runs, unknown when any run's is.
    pub fn cost_usd(&self, pricing: &BTreeMap<String, Price>) -> Option<f64> {
        self.runs
            .iter()
            .map(|r| r.cost_usd(pricing))
            .sum::<Option<f64>>()
    }

    /// Input and output tokens over the runs that reported them.
    pub fn tokens(&self) -> (u64, u64) {
        self.runs
            .iter()
            .filter_map(|r| r.tokens)
            .fold((0, 0), |(i, o), t| (i + t.input, o + t.output))
    }
}

#[cfg(test)]
mod cost_tests {
    use super::*;
    use crate::harness::pricing::tests::P;

    #[test]
    fn the_table_wins_and_the_harness_figure_prices_the_rest() {
        let pricing = BTreeMap::from([("m".to_string(), P)]);
        let mut run = RunUsage {
            role: "worker".into(),
            harness: "claude-code".into(),
            model: Some("m".into()),
            tokens: Some(crate::types::Tokens {
                input: 1000,
                output: 100,
                ..Default::default()
            }),
            reported_cost_usd: Some(0.5),
            reported_exact: true,
            no_model: false,
            timed_out: false,
        };
        let table = (1000.0 * 2.0 + 100.0 * 10.0) / 1e6;
        let (basis, cost) = recorded_cost(&run, &pricing);
        assert_eq!(basis, CostBasis::Table);
        assert!((cost.unwrap() - table).abs() < 1e-15);
        // A model the table does not price: the harness's own figure.
        run.model = Some("other".into());
        assert_eq!(
            recorded_cost(&run, &pricing),
            (CostBasis::Reported, Some(0.5))
        );
        run.reported_exact = false;
        assert_eq!(
            recorded_cost(&run, &pricing),
            (CostBasis::Rounded, Some(0.5))
        );
        run.reported_cost_usd = None;
        assert_eq!(recorded_cost(&run, &pricing), (CostBasis::Unpriced, None));
        run.no_model = true;
        assert_eq!(recorded_cost(&run, &pricing), (CostBasis::Free, Some(0.0)));
    }
}
