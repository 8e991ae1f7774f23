//! The report document: what `report.json` holds (described by `schemas/report.schema.json`,
//! generated from these types), built from the report's inputs and the statistics. The Markdown
//! and HTML renderings read this document, so the three files always agree.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::report::stats::{Summary, TeamSummary};
use crate::types::Promote;

/// Version of the report document's shape.
pub const REPORT_SCHEMA: u32 = 4;

/// `report.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportDocument {
    /// Version of this document's shape.
    pub schema: u32,
    /// The manifest's `name`.
    pub manifest: String,
    pub description: Option<String>,
    /// The bench version that wrote the report.
    pub bench_version: String,
    /// The backend kind (`local`, `docker`).
    pub backend: String,
    /// The network policy each phase ran under: `agent` (what agents reached) and `grading`.
    pub network: BTreeMap<String, String>,
    /// Datasets sampled: `repo@revision` for Hub datasets, `name (local)` for local ones.
    pub datasets: Vec<String>,
    /// Contamination cutoff: tasks created on or after this instant (RFC 3339).
    pub since: Option<String>,
    /// The team every other team is compared with (`None`: no comparisons).
    pub baseline: Option<String>,
    /// Errored pairs count as unresolved instead of being excluded.
    pub count_errors_as_failures: bool,
    pub gold: GoldReport,
    /// Tasks every statistic is computed on: a valid result for every team.
    pub common_tasks: Vec<String>,
    /// Tasks left out of every team's numbers (see `errored`, `not_run`, `missing`).
    pub excluded_tasks: Vec<String>,
    /// One entry per team, in the manifest's order.
    pub teams: Vec<TeamReport>,
    /// Every errored pair (infrastructure failure), by name.
    pub errored: Vec<ErroredPairReport>,
    /// Pairs that never ran, by name.
    pub not_run: Vec<PairReport>,
    /// (task, team) cells without any result.
    pub missing: Vec<MissingReport>,
    /// Clusters of the common tasks for the clustered errors: distinct repositories (a task
    /// without one counts as its own).
    pub repositories: u64,
    /// The percentile bootstrap of the score intervals: its resamples and generator seed
    /// (splitmix64), so anyone can redraw it.
    pub bootstrap: BootstrapReport,
    /// language -> team -> resolved on the common tasks.
    pub by_language: BTreeMap<String, BTreeMap<String, GroupReport>>,
    /// repo -> team -> resolved on the common tasks.
    pub by_repo: BTreeMap<String, BTreeMap<String, GroupReport>>,
    /// The promotion verdict, when the report stage has a `promote` rule.
    pub promotion: Option<PromotionVerdict>,
    /// Pairs whose patch the audit flagged (counted unresolved under `audit = "strict"`).
    pub audit: Vec<AuditedPair>,
    /// SWE-bench's resolution status of every graded pair whose protocol reports one
    /// (`swe-bench`: FULL, PARTIAL or NO), by task, team and replicate.
    pub resolutions: Vec<PairResolution>,
    /// How scores were computed from rewards (`reward`, or `frontier-swe (SSIM threshold
    /// 0.95)`); `None` without scored pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scorer: Option<String>,
    /// Where Harbor verifiers ran in this report's grades: `in-place`, `fresh`, `oracle`,
    /// `nop`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verifier_modes: Vec<String>,
    /// Every scored pair (Harbor tasks), sorted by task, team and replicate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scores: Vec<PairScore>,
    /// Per team with pairs `apply --rerun` ran again: how many, from which outcome, and the
    /// first-attempt figures beside the counting ones (the latest attempt counts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reruns: Vec<TeamReruns>,
}

/// A pair run more than once (`apply --rerun`): every attempt, oldest first; the last counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PairAttempts {
    pub task: String,
    pub team: String,
    pub replicate: u32,
    pub attempts: Vec<AttemptSummary>,
}

/// One attempt of a pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttemptSummary {
    /// 1 for the first.
    pub attempt: u32,
    /// Its outcome when a rerun replaced it (`None`: the counting attempt, whose outcome is
    /// the pair's).
    pub outcome: Option<String>,
    /// Its solve deadline, in seconds.
    pub deadline_s: f64,
    /// The `--rerun` word that ran it (`None`: the first attempt).
    pub selected_by: Option<String>,
    /// The apply that ran it (`None`: the first attempt).
    pub run_id: Option<String>,
}

/// A team's reruns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TeamReruns {
    pub team: String,
    /// Its pairs run more than once.
    pub pairs: u64,
    /// Those pairs by their first attempt's outcome.
    pub from: BTreeMap<String, u64>,
    /// Its graded pairs (resolved or not; errored and not-run pairs are not counted).
    pub graded: u64,
    /// Of those, resolved by their first attempt.
    pub first_attempt_resolved: u64,
    /// Of those, resolved by their counting (latest) attempt.
    pub counting_resolved: u64,
    /// The pairs run more than once, by task and replicate.
    pub rerun_pairs: Vec<PairAttempts>,
}

/// The reruns of every team with some, in `teams`' order.
pub fn team_reruns(
    teams: &[String],
    pairs: &[crate::report::stats::PairOutcome],
    attempts: &[PairAttempts],
) -> Vec<TeamReruns> {
    use crate::report::stats::PairState;
    let mut out = Vec::new();
    for team in teams {
        let mine: Vec<&PairAttempts> = attempts.iter().filter(|a| &a.team == team).collect();
        if mine.is_empty() {
            continue;
        }
        let first_of = |p: &crate::report::stats::PairOutcome| {
            mine.iter()
                .find(|a| a.task == p.task && a.replicate == p.replicate)
                .and_then(|a| a.attempts.first())
                .and_then(|a| a.outcome.clone())
        };
        let (mut graded, mut first, mut counting) = (0, 0, 0);
        for p in pairs.iter().filter(|p| &p.team == team) {
            let resolved = match p.state {
                PairState::Resolved => true,
                PairState::Unresolved { .. } => false,
                _ => continue,
            };
            graded += 1;
            counting += u64::from(resolved);
            first += u64::from(match first_of(p) {
                Some(o) => o == "resolved",
                None => resolved,
            });
        }
        let mut from = BTreeMap::new();
        for a in &mine {
            if let Some(o) = a.attempts.first().and_then(|a| a.outcome.clone()) {
                *from.entry(o).or_insert(0) += 1;
            }
        }
        out.push(TeamReruns {
            team: team.clone(),
            pairs: mine.len() as u64,
            from,
            graded,
            first_attempt_resolved: first,
            counting_resolved: counting,
            rerun_pairs: mine.into_iter().cloned().collect(),
        });
    }
    out
}

/// How the bootstrap intervals were drawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BootstrapReport {
    pub resamples: u64,
    /// The splitmix64 seed (a resample's index is `next() mod n`).
    pub seed: u64,
}

/// Gold self-check verdicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoldReport {
    /// Tasks with a gold check.
    pub tasks: usize,
    pub valid: Vec<String>,
    pub invalid: Vec<String>,
    pub errored: Vec<String>,
    /// Why each invalid or errored task failed its check (task -> reason): the gold patch did
    /// not apply, which FAIL_TO_PASS tests still fail, which PASS_TO_PASS tests broke, or the
    /// infrastructure error.
    #[serde(default)]
    pub reasons: BTreeMap<String, String>,
}

impl ReportDocument {
    /// Why the report measured nothing, when it did not (no common task): the sample drew no
    /// task, every gold patch failed its check, or no task has a result of every team. Its
    /// rates are of zero tasks and mean nothing: the report and the apply say so first.
    pub fn empty_warning(&self) -> Option<String> {
        if !self.common_tasks.is_empty() {
            return None;
        }
        let why = if self.gold.tasks > 0 && self.gold.valid.is_empty() {
            format!(
                "no gold patch passed its check ({} of {} tasks{}), so no task was left to solve",
                self.gold.tasks - self.gold.valid.len(),
                self.gold.tasks,
                self.gold.failed_lists().replacen(';', ":", 1)
            )
        } else if self.gold.tasks == 0 && self.excluded_tasks.is_empty() {
            match &self.since {
                Some(since) => format!(
                    "the sample drew no task: none of {} was created since {since} (lower `since`, or check the dataset)",
                    self.datasets.join(", ")
                ),
                None => format!(
                    "the sample drew no task from {} (check the dataset and the sample's filters)",
                    self.datasets.join(", ")
                ),
            }
        } else {
            format!(
                "no task has a valid result of every team ({} excluded: see the errored and not-run pairs)",
                self.excluded_tasks.len()
            )
        };
        Some(format!(
            "nothing was measured: {why}; every rate here is of 0 tasks and means nothing"
        ))
    }
}

impl GoldReport {
    /// The tasks the gold check did not pass, as both reports print them after the count
    /// (`; invalid: a, b; errored: c`; empty when every task is valid).
    pub fn failed_lists(&self) -> String {
        let mut out = String::new();
        for (label, tasks) in [("invalid", &self.invalid), ("errored", &self.errored)] {
            if !tasks.is_empty() {
                out.push_str(&format!("; {label}: {}", tasks.join(", ")));
            }
        }
        out
    }

    /// Each task that did not pass its check with why: the invalid ones, then the errored
    /// ones, each in task order.
    pub fn failures(&self) -> Vec<(&str, &str)> {
        self.invalid
            .iter()
            .chain(&self.errored)
            .map(|t| {
                let why = self
                    .reasons
                    .get(t)
                    .map_or("no reason recorded", String::as_str);
                (t.as_str(), why)
            })
            .collect()
    }
}

/// The per-task table of `report.md` and `report.html`: task -> team -> cell (the first
/// replicate's), borrowed from the pairs. Each task's cells are a short list sorted by team,
/// not a map: a report lists a few teams, and a B-tree's first leaf has room for eleven.
#[derive(Debug, Default)]
pub struct PerTask<'a>(BTreeMap<&'a str, TaskCells<'a>>);

/// One task's cells in [`PerTask`], sorted by team, each team once.
#[derive(Debug, Default)]
pub struct TaskCells<'a>(Vec<(&'a str, &'static str)>);

impl<'a> PerTask<'a> {
    /// Sets the cell of `task` and `team` (a later one replaces an earlier, as a map's insert).
    pub fn insert(&mut self, task: &'a str, team: &'a str, cell: &'static str) {
        let cells = &mut self.0.entry(task).or_default().0;
        match cells.binary_search_by(|(t, _)| (*t).cmp(team)) {
            Ok(i) => cells[i].1 = cell,
            Err(i) => cells.insert(i, (team, cell)),
        }
    }

    /// Each task with its cells, in task order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &TaskCells<'a>)> {
        self.0.iter().map(|(task, cells)| (*task, cells))
    }
}

impl TaskCells<'_> {
    /// The cell of `team`, if it has one.
    pub fn get(&self, team: &str) -> Option<&'static str> {
        self.0
            .binary_search_by(|(t, _)| (*t).cmp(team))
            .ok()
            .map(|i| self.0[i].1)
    }
}

/// One team's numbers on the common tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TeamReport {
    /// The team's name.
    pub name: String,
    /// Common tasks.
    pub tasks: u64,
    /// Common tasks resolved (first replicate).
    pub resolved: u64,
    /// `resolved / tasks`.
    pub rate: f64,
    /// Wilson 95% interval of `rate`.
    pub wilson_low: f64,
    pub wilson_high: f64,
    /// Cluster-robust (CR1, by repository) standard error of `rate` and its 95% interval
    /// (normal, clipped to [0, 1]); `None` with fewer than two repositories.
    pub cluster_se: Option<f64>,
    pub cluster_low: Option<f64>,
    pub cluster_high: Option<f64>,
    /// The interval the headline uses (`wilson` or `clustered`: the wider of the two) and its
    /// bounds.
    pub headline_interval: String,
    pub ci_low: f64,
    pub ci_high: f64,
    /// The team's errored pairs, over all tasks.
    pub errored: u64,
    /// Timed-out runs on the common tasks (counted as unresolved).
    pub timed_out: u64,
    /// The team's pairs that never ran, over all tasks.
    pub not_run: u64,
    pub cost: CostReport,
    /// Median wall time of a solve, in seconds.
    pub wall_time_median_s: Option<f64>,
    /// Mean score, for benchmarks that grade with a score.
    pub mean_score: Option<f64>,
    pub scored_tasks: u64,
    /// 95% interval of `mean_score` (`score_interval`: `wilson` for 0/1 scores, else a seeded
    /// percentile bootstrap of 2000 resamples).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_low: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_high: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_interval: Option<String>,
    /// Mean over tasks of the runs' correctness (Frontier-SWE's gate input; a plain reward's
    /// is 1 when it reached 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_correctness: Option<f64>,
    /// pass@k and best-of-k, when some task has several replicates.
    pub replicates: Option<ReplicateReport>,
    /// Paired comparison with the baseline (absent for the baseline itself).
    pub vs_baseline: Option<VsBaseline>,
}

/// Cost of a team's runs on the common tasks, in USD.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CostReport {
    /// Priced total / all runs; a lower bound when `lower_bound`.
    pub mean_usd: Option<f64>,
    /// Median over priced runs only (no bound).
    pub median_usd: Option<f64>,
    /// Priced total / resolved runs; a lower bound when `lower_bound`.
    pub per_resolved_usd: Option<f64>,
    /// Runs with a known cost.
    pub priced_runs: u64,
    /// All runs on the common tasks.
    pub runs: u64,
    /// Resolved runs.
    pub resolved_runs: u64,
    /// Sum of the known costs.
    pub total_priced_usd: f64,
    /// Some runs are unpriced (or timed out, or crashed): mean and per-resolved are lower bounds.
    pub lower_bound: bool,
    /// Agent runs by where their cost came from: `table` (tokens x the pricing table, which
    /// wins for a model it prices), `reported` (the harness's own exact figure, for a model the
    /// table does not price), `rounded` (only a harness's rounded figure), `unpriced`, `free`
    /// (no model).
    #[serde(default)]
    pub basis: BTreeMap<String, u64>,
}

/// Replicate statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplicateReport {
    pub min_replicates: u64,
    pub max_replicates: u64,
    /// k -> unbiased pass@k averaged over the common tasks.
    pub pass_at_k: BTreeMap<String, f64>,
    /// Common tasks resolved by at least one replicate (best-of-k).
    pub best_of_resolved: u64,
    pub best_of_rate: f64,
    pub best_score: Option<f64>,
    /// Mean over tasks of the share of resolved replicates, with its cluster-robust standard
    /// error and 95% interval, clustered by `mean_clusters` (`repository`, or `task` when the
    /// tasks span one repository).
    pub mean: f64,
    pub mean_se: Option<f64>,
    pub mean_low: Option<f64>,
    pub mean_high: Option<f64>,
    pub mean_clusters: String,
    /// The variance of one rollout's outcome: within tasks (mean sample variance of a task's
    /// replicates) and between tasks (variance of the tasks' true rates).
    pub within_task_variance: Option<f64>,
    pub between_task_variance: Option<f64>,
}

/// Exact McNemar test against the baseline on the common tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VsBaseline {
    /// Tasks this team resolved and the baseline did not.
    pub wins: u64,
    /// Tasks the baseline resolved and this team did not.
    pub losses: u64,
    /// Exact two-sided McNemar p-value.
    pub p_value: f64,
    /// Holm-adjusted `p_value` over every team compared with the baseline.
    pub p_holm: f64,
    /// This team's rate minus the baseline's: the mean paired difference.
    pub rate_diff: f64,
    /// Cluster-robust (by repository) standard error of `rate_diff` and its 95% interval
    /// (clipped to [-1, 1]); `None` with fewer than two repositories.
    pub diff_se: Option<f64>,
    pub diff_low: Option<f64>,
    pub diff_high: Option<f64>,
    /// Mean paired score difference with the baseline on the tasks both scored, and its
    /// paired bootstrap 95% interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_diff: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_diff_low: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_diff_high: Option<f64>,
}

/// Resolved count on a group of common tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupReport {
    pub tasks: u64,
    pub resolved: u64,
    pub rate: f64,
}

/// An errored pair, by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErroredPairReport {
    pub task: String,
    pub team: String,
    pub replicate: u32,
    pub reason: String,
}

/// A pair, by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PairReport {
    pub task: String,
    pub team: String,
    pub replicate: u32,
    /// Why it did not run, when the apply said (`budget: spent $0.06 of $0.025`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A (task, team) cell without any result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MissingReport {
    pub task: String,
    pub team: String,
}

/// The verdict of a promotion rule: promote when pass@1 >= baseline - `max_drop_points` and
/// mean cost <= baseline - `min_cost_saving_percent` percent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromotionVerdict {
    pub candidate: String,
    pub baseline: String,
    /// Whether the candidate should replace the baseline.
    pub promote: bool,
    /// pass@1 of each (the first-replicate resolve rate, or the mean over replicates).
    pub candidate_pass_at_1: Option<f64>,
    pub baseline_pass_at_1: Option<f64>,
    /// Candidate minus baseline, in percentage points.
    pub change_points: Option<f64>,
    pub max_drop_points: f64,
    /// Mean cost per run of each.
    pub candidate_cost_usd: Option<f64>,
    pub baseline_cost_usd: Option<f64>,
    /// How much cheaper the candidate is, in percent of the baseline's cost.
    pub cost_saving_percent: Option<f64>,
    pub min_cost_saving_percent: f64,
    /// One line: the verdict and its numbers.
    pub summary: String,
}

impl TeamReport {
    fn from_summary(t: &TeamSummary) -> TeamReport {
        TeamReport {
            name: t.team.clone(),
            tasks: t.tasks,
            resolved: t.resolved,
            rate: t.rate,
            wilson_low: t.wilson_low,
            wilson_high: t.wilson_high,
            cluster_se: t.cluster_se,
            cluster_low: t.cluster_low,
            cluster_high: t.cluster_high,
            headline_interval: t.headline_interval.to_string(),
            ci_low: t.ci_low,
            ci_high: t.ci_high,
            errored: t.errored,
            timed_out: t.timed_out,
            not_run: t.not_run,
            cost: CostReport {
                mean_usd: t.cost.mean_usd,
                median_usd: t.cost.median_usd,
                per_resolved_usd: t.cost.per_resolved_usd,
                priced_runs: t.cost.priced_runs,
                runs: t.cost.runs,
                resolved_runs: t.cost.resolved_runs,
                total_priced_usd: t.cost.total_priced_usd,
                lower_bound: t.cost.lower_bound,
                basis: t.cost.basis.clone(),
            },
            wall_time_median_s: t.wall_time_median_s,
            mean_score: t.mean_score,
            scored_tasks: t.scored_tasks,
            score_low: t.score_interval.as_ref().map(|i| i.low),
            score_high: t.score_interval.as_ref().map(|i| i.high),
            score_interval: t.score_interval.as_ref().map(|i| i.method.to_string()),
            mean_correctness: t.mean_correctness,
            replicates: t.replicates.as_ref().map(|r| ReplicateReport {
                min_replicates: r.min_replicates,
                max_replicates: r.max_replicates,
                pass_at_k: r
                    .pass_at_k
                    .iter()
                    .map(|(k, v)| (k.to_string(), *v))
                    .collect(),
                best_of_resolved: r.best_of_resolved,
                best_of_rate: r.best_of_rate,
                best_score: r.best_score,
                mean: r.mean,
                mean_se: r.mean_se,
                mean_low: r.mean_low,
                mean_high: r.mean_high,
                mean_clusters: r.mean_clusters.to_string(),
                within_task_variance: r.within_task_variance,
                between_task_variance: r.between_task_variance,
            }),
            vs_baseline: t.vs_baseline.as_ref().map(|c| VsBaseline {
                wins: c.wins,
                losses: c.losses,
                p_value: c.p_value,
                p_holm: c.p_holm,
                rate_diff: c.rate_diff,
                diff_se: c.diff_se,
                diff_low: c.diff_low,
                diff_high: c.diff_high,
                score_diff: c.score_diff.as_ref().map(|d| d.mean),
                score_diff_low: c.score_diff.as_ref().map(|d| d.low),
                score_diff_high: c.score_diff.as_ref().map(|d| d.high),
            }),
        }
    }

    /// pass@1: the mean over replicates when there are several, else the resolve rate.
    pub fn pass_at_1(&self) -> f64 {
        self.replicates
            .as_ref()
            .and_then(|r| r.pass_at_k.get("1").copied())
            .unwrap_or(self.rate)
    }
}

/// Everything about the run that is not a statistic.
pub struct Context<'a> {
    pub manifest: &'a str,
    pub description: Option<&'a str>,
    pub bench_version: &'a str,
    pub backend: &'a str,
    pub network: &'a BTreeMap<String, String>,
    pub datasets: &'a [String],
    pub since: Option<&'a str>,
    pub gold: &'a BTreeMap<String, Option<bool>>,
    /// Why each task that did not pass its gold check failed it.
    pub gold_reasons: &'a BTreeMap<String, String>,
    pub promote: Option<&'a Promote>,
    pub audit: &'a [AuditedPair],
    pub resolutions: &'a [PairResolution],
    pub scores: &'a [PairScore],
    pub scorer: Option<&'a str>,
}

/// A team's first-replicate pairs by resolution status: FULL, PARTIAL, NO.
pub fn resolution_counts(doc: &ReportDocument, team: &str) -> [usize; 3] {
    let mut n = [0; 3];
    for r in doc
        .resolutions
        .iter()
        .filter(|r| r.team == team && r.replicate == 0)
    {
        n[match r.resolution {
            crate::types::Resolution::Full => 0,
            crate::types::Resolution::Partial => 1,
            crate::types::Resolution::No => 2,
        }] += 1;
    }
    n
}

/// A graded pair's SWE-bench resolution status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PairResolution {
    pub task: String,
    pub team: String,
    pub replicate: u32,
    pub resolution: crate::types::Resolution,
}

/// One scored pair (a Harbor task's grade): the reward's numeric fields as the verifier wrote
/// them, the score the report's rule derived, and where the verifier ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PairScore {
    pub task: String,
    pub team: String,
    pub replicate: u32,
    /// `in-place`, `fresh`, `oracle` or `nop`.
    pub verifier: String,
    /// The reward's numeric fields (`None`: the verifier timed out).
    pub reward: Option<BTreeMap<String, f64>>,
    pub score: Option<f64>,
    pub correctness: Option<f64>,
}

/// A pair whose patch the audit flagged (see `src/protocols/audit.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditedPair {
    pub task: String,
    pub team: String,
    pub replicate: u32,
    pub flags: Vec<crate::types::AuditFlag>,
}

impl ReportDocument {
    /// Says why pairs did not run: `halts` maps (task, team, replicate) to the reason the apply
    /// gave (a budget halt).
    pub fn with_halts(mut self, halts: &BTreeMap<(String, String, u32), String>) -> Self {
        for p in &mut self.not_run {
            p.reason = halts
                .get(&(p.task.clone(), p.team.clone(), p.replicate))
                .cloned();
        }
        self
    }

    /// Adds the reruns (`apply --rerun`) of `attempts` with their first-attempt figures.
    pub fn with_reruns(
        mut self,
        teams: &[String],
        pairs: &[crate::report::stats::PairOutcome],
        attempts: &[PairAttempts],
    ) -> Self {
        self.reruns = team_reruns(teams, pairs, attempts);
        self
    }

    /// Builds the document from the statistics and the run's context.
    pub fn new(ctx: &Context<'_>, summary: &Summary) -> ReportDocument {
        let gold_with = |want: Option<bool>| -> Vec<String> {
            ctx.gold
                .iter()
                .filter(|(_, v)| **v == want)
                .map(|(k, _)| k.clone())
                .collect()
        };
        let group = |m: &BTreeMap<String, BTreeMap<String, crate::report::stats::GroupStats>>| {
            m.iter()
                .map(|(k, teams)| {
                    (
                        k.clone(),
                        teams
                            .iter()
                            .map(|(t, g)| {
                                (
                                    t.clone(),
                                    GroupReport {
                                        tasks: g.tasks,
                                        resolved: g.resolved,
                                        rate: g.rate,
                                    },
                                )
                            })
                            .collect(),
                    )
                })
                .collect()
        };
        let teams: Vec<TeamReport> = summary.teams.iter().map(TeamReport::from_summary).collect();
        let promotion = ctx.promote.map(|p| promotion_verdict(p, &teams));
        ReportDocument {
            schema: REPORT_SCHEMA,
            manifest: ctx.manifest.to_string(),
            description: ctx.description.map(str::to_string),
            bench_version: ctx.bench_version.to_string(),
            backend: ctx.backend.to_string(),
            network: ctx.network.clone(),
            datasets: ctx.datasets.to_vec(),
            since: ctx.since.map(str::to_string),
            baseline: summary.baseline.clone(),
            count_errors_as_failures: summary.count_errors_as_failures,
            gold: GoldReport {
                tasks: ctx.gold.len(),
                valid: gold_with(Some(true)),
                invalid: gold_with(Some(false)),
                errored: gold_with(None),
                reasons: ctx
                    .gold_reasons
                    .iter()
                    .filter(|(task, _)| ctx.gold.get(*task).is_some_and(|v| *v != Some(true)))
                    .map(|(task, why)| (task.clone(), why.clone()))
                    .collect(),
            },
            common_tasks: summary.common_tasks.clone(),
            excluded_tasks: summary.excluded_tasks.clone(),
            teams,
            errored: summary
                .errored
                .iter()
                .map(|e| ErroredPairReport {
                    task: e.task.clone(),
                    team: e.team.clone(),
                    replicate: e.replicate,
                    reason: e.reason.clone(),
                })
                .collect(),
            not_run: summary
                .not_run
                .iter()
                .map(|e| PairReport {
                    task: e.task.clone(),
                    team: e.team.clone(),
                    replicate: e.replicate,
                    reason: None,
                })
                .collect(),
            missing: summary
                .missing
                .iter()
                .map(|e| MissingReport {
                    task: e.task.clone(),
                    team: e.team.clone(),
                })
                .collect(),
            repositories: summary.repositories,
            bootstrap: BootstrapReport {
                resamples: crate::report::stats::BOOTSTRAP_RESAMPLES as u64,
                seed: crate::report::stats::BOOTSTRAP_SEED,
            },
            by_language: group(&summary.by_language),
            by_repo: group(&summary.by_repo),
            promotion,
            audit: ctx.audit.to_vec(),
            resolutions: ctx.resolutions.to_vec(),
            scorer: ctx.scorer.map(str::to_string),
            verifier_modes: {
                let mut m: Vec<String> = ctx.scores.iter().map(|s| s.verifier.clone()).collect();
                m.sort();
                m.dedup();
                m
            },
            scores: ctx.scores.to_vec(),
            reruns: Vec::new(),
        }
    }

    pub fn team(&self, name: &str) -> Option<&TeamReport> {
        self.teams.iter().find(|t| t.name == name)
    }

    /// Pretty JSON with a trailing newline.
    pub fn to_json(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).expect("reports serialize");
        v.push(b'\n');
        v
    }
}

/// Applies a promotion rule to the teams' numbers.
pub fn promotion_verdict(p: &Promote, teams: &[TeamReport]) -> PromotionVerdict {
    let cand = teams.iter().find(|t| t.name == p.candidate);
    let base = teams.iter().find(|t| t.name == p.baseline);
    let cand_rate = cand.filter(|t| t.tasks > 0).map(TeamReport::pass_at_1);
    let base_rate = base.filter(|t| t.tasks > 0).map(TeamReport::pass_at_1);
    let change = cand_rate.zip(base_rate).map(|(c, b)| (c - b) * 100.0);
    let cand_cost = cand.and_then(|t| t.cost.mean_usd);
    let base_cost = base.and_then(|t| t.cost.mean_usd);
    let cand_bound = cand.is_some_and(|t| t.cost.lower_bound);
    let saving = match (cand_cost, base_cost) {
        (Some(c), Some(b)) if b > 0.0 => Some((b - c) / b * 100.0),
        // Both free: no saving.
        (Some(c), Some(b)) if b == 0.0 && c == 0.0 => Some(0.0),
        _ => None,
    };
    let mut reasons = Vec::new();
    // A tiny tolerance so that a drop of exactly the allowed points passes despite rounding.
    let eps = 1e-9;
    let quality_ok = match change {
        Some(d) if d + p.max_drop_points >= -eps => true,
        Some(d) => {
            reasons.push(format!(
                "pass@1 drops {:.1} points (at most {:.1} allowed)",
                -d, p.max_drop_points
            ));
            false
        }
        None => {
            reasons.push("pass@1 unknown (no common tasks)".into());
            false
        }
    };
    let cost_ok = match saving {
        _ if cand_bound => {
            reasons.push(format!(
                "`{}`'s cost is only a lower bound (unpriced runs)",
                p.candidate
            ));
            false
        }
        Some(s) if s + eps >= p.min_cost_saving_percent => true,
        Some(s) => {
            reasons.push(format!(
                "cost saving {s:.1}% (at least {:.1}% required)",
                p.min_cost_saving_percent
            ));
            false
        }
        None => {
            reasons.push("cost unknown".into());
            false
        }
    };
    let promote = quality_ok && cost_ok;
    let fmt_pct =
        |x: Option<f64>| x.map_or("unknown".to_string(), |x| format!("{:.1}%", x * 100.0));
    let fmt_usd = |x: Option<f64>| x.map_or("unknown".to_string(), |x| format!("${x:.4}"));
    let numbers = format!(
        "pass@1 {} vs {} ({} points, at most -{:.1} allowed); mean cost {} vs {} ({} saving, at least {:.1}% required)",
        fmt_pct(cand_rate),
        fmt_pct(base_rate),
        change.map_or("unknown".into(), |d| format!("{d:+.1}")),
        p.max_drop_points,
        fmt_usd(cand_cost),
        fmt_usd(base_cost),
        saving.map_or("unknown".into(), |s| format!("{s:.1}%")),
        p.min_cost_saving_percent,
    );
    let summary = if promote {
        format!("PROMOTE `{}` over `{}`: {numbers}", p.candidate, p.baseline)
    } else {
        format!(
            "KEEP `{}` (do not promote `{}`: {}): {numbers}",
            p.baseline,
            p.candidate,
            reasons.join("; ")
        )
    };
    PromotionVerdict {
        candidate: p.candidate.clone(),
        baseline: p.baseline.clone(),
        promote,
        candidate_pass_at_1: cand_rate,
        baseline_pass_at_1: base_rate,
        change_points: change,
        max_drop_points: p.max_drop_points,
        candidate_cost_usd: cand_cost,
        baseline_cost_usd: base_cost,
        cost_saving_percent: saving,
        min_cost_saving_percent: p.min_cost_saving_percent,
        summary,
    }
}

/// The JSON Schema of `report.json` (draft 7), as checked in at `schemas/report.schema.json`.
pub fn report_schema_text() -> String {
    let schema = schemars::generate::SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<ReportDocument>();
    let mut text = serde_json::to_string_pretty(&schema.to_value()).expect("schemas serialize");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::PerTask;

    /// The per-task table reads as the map of maps it replaces: tasks in order, a later cell
    /// of a task and team replacing the earlier one, teams looked up whatever order they came
    /// in, and no cell for a team a task has none for.
    #[test]
    fn per_task_cells_read_as_a_map_of_maps() {
        let mut t = PerTask::default();
        t.insert("b", "zed", "no");
        t.insert("a", "oracle", "resolved");
        t.insert("b", "alpha", "errored");
        t.insert("b", "zed", "timed out");
        t.insert("b", "mid", "partial");
        let tasks: Vec<&str> = t.iter().map(|(task, _)| task).collect();
        assert_eq!(tasks, ["a", "b"]);
        let (_, b) = t.iter().nth(1).expect("two tasks");
        assert_eq!(b.get("zed"), Some("timed out"));
        assert_eq!(b.get("alpha"), Some("errored"));
        assert_eq!(b.get("mid"), Some("partial"));
        assert_eq!(b.get("oracle"), None);
        let (_, a) = t.iter().next().expect("a task");
        assert_eq!(a.get("oracle"), Some("resolved"));
        assert_eq!(a.get("zed"), None);
    }
}
