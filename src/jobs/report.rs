//! The report node's job: everything the report prints (the manifest's name and description,
//! the bench version, the backend, the datasets with their revisions and the sample's filters,
//! every pair's outcome, per-node rows, the pricing of the models used, the statistics
//! settings) and the version of the renderer. Cost is derived here at render time from the
//! stored token counts and the prices, so a price edit re-renders and reruns no solve.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Job, KEY_SCHEMA, Kind};
use crate::report::results::NodeRow;
use crate::report::stats::{BasisCounts, PairOutcome};
use crate::types::Promote;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportJob {
    pub schema: u32,
    pub version: u32,
    pub inputs: ReportInputs,
    /// Where the files are written: a location, not an input.
    #[serde(skip)]
    pub out: super::Location,
}

impl ReportJob {
    pub fn new(inputs: ReportInputs, out: std::path::PathBuf) -> ReportJob {
        ReportJob {
            schema: KEY_SCHEMA,
            version: super::versions::REPORT,
            inputs,
            out: super::Location(out),
        }
    }
}

/// Output of a report node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportOutput {
    pub out: String,
    pub files: Vec<String>,
    pub artifacts: usize,
    pub promotion: Option<String>,
}

impl Job for ReportJob {
    const KIND: Kind = Kind::Report;
    type Output = ReportOutput;
}

/// Everything a report reads (and so everything it prints), gathered from the node graph. It
/// is the report job's content: its key hashes all of it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ReportInputs {
    pub manifest: String,
    pub description: Option<String>,
    pub bench_version: String,
    pub backend: String,
    /// The network policy each phase ran under (`agent`, `grading`).
    pub network: BTreeMap<String, String>,
    pub datasets: Vec<String>,
    /// The sample stages' filters (cutoffs, repos, languages, ids, limit, seed).
    pub filters: Vec<crate::types::SampleFilters>,
    pub since: Option<String>,
    pub teams: Vec<String>,
    pub baseline: Option<String>,
    pub count_errors_as_failures: bool,
    /// Gold verdicts: task -> valid (None: errored).
    pub gold: BTreeMap<String, Option<bool>>,
    /// Why each task that did not pass its gold check failed it (from the check's recorded
    /// grade, or its error).
    #[serde(default)]
    pub gold_reasons: BTreeMap<String, String>,
    pub pairs: Vec<PairOutcome>,
    /// One row per solve and grade node (`results.parquet`).
    pub rows: Vec<NodeRow>,
    /// Stored files per pair (`artifacts/`, `predictions.jsonl`).
    pub artifacts: Vec<PairArtifacts>,
    /// The promotion rule, if any.
    pub promote: Option<Promote>,
    /// Per solve: what its agent runs recorded of their model use (cost is derived from it at
    /// render time).
    pub usage: Vec<PairUsage>,
    /// Prices of the models the runs used.
    pub pricing: BTreeMap<String, crate::types::Price>,
    /// Pairs whose patch the audit flagged, with the flags.
    pub audit: Vec<crate::report::AuditedPair>,
    /// Graded pairs' SWE-bench resolution status, where the protocol reports one.
    #[serde(default)]
    pub resolutions: Vec<crate::report::PairResolution>,
    /// Scored pairs (Harbor tasks): the reward's fields, the score, where the verifier ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scores: Vec<crate::report::document::PairScore>,
    /// How scores were computed, when there are any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scorer: Option<String>,
    /// Pairs `apply --rerun` ran again, with every attempt (none: the field is left out, so
    /// a report without reruns keeps its key).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<crate::report::document::PairAttempts>,
}

/// The model use of one solve.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct PairUsage {
    pub task: String,
    pub team: String,
    pub replicate: u32,
    pub runs: Vec<crate::jobs::RunUsage>,
}

/// Each solve's cost and how its runs were priced, from the recorded usage and the prices, by
/// (task, team, replicate): what pricing changes in the pairs and solve rows, kept beside the
/// inputs so that the renderer does not copy them whole.
pub struct Costs<'a> {
    by_solve: BTreeMap<(&'a str, &'a str, u32), SolveCost>,
}

struct SolveCost {
    usd: Option<f64>,
    /// Runs by cost basis.
    basis: BasisCounts,
}

impl Costs<'_> {
    fn get<'k>(&'k self, task: &'k str, team: &'k str, replicate: u32) -> Option<&'k SolveCost> {
        // The map's keys live as long as the inputs; looked up here with shorter-lived ones.
        let by_solve: &'k BTreeMap<(&'k str, &'k str, u32), SolveCost> = &self.by_solve;
        by_solve.get(&(task, team, replicate))
    }

    /// The pair with its cost and cost basis filled in (as recorded when no usage is).
    pub fn price_pair(&self, p: &mut PairOutcome) {
        if let Some(c) = self.get(&p.task, &p.team, p.replicate) {
            p.cost_usd = c.usd;
            p.cost_basis = c.basis;
        }
    }

    /// Copies of the pairs, priced.
    pub fn priced_pairs(&self, pairs: &[PairOutcome]) -> Vec<PairOutcome> {
        pairs
            .iter()
            .map(|p| {
                let mut p = p.clone();
                self.price_pair(&mut p);
                p
            })
            .collect()
    }

    /// A row's cost: a solve row's from its usage, where recorded; the row's own otherwise.
    pub fn row_cost(&self, r: &NodeRow) -> Option<f64> {
        match self.get(&r.task, &r.team, r.replicate) {
            Some(c) if r.node == "solve" => c.usd,
            _ => r.cost_usd,
        }
    }
}

impl ReportInputs {
    /// Every solve's cost from the recorded usage and the prices (a later usage of the same
    /// solve replaces an earlier one).
    pub fn costs(&self) -> Costs<'_> {
        let by_solve = self
            .usage
            .iter()
            .map(|u| {
                let usd = u
                    .runs
                    .iter()
                    .map(|r| r.cost_usd(&self.pricing))
                    .sum::<Option<f64>>();
                let mut basis = BasisCounts::default();
                for r in &u.runs {
                    // Every `CostBasis` name is one of `BASIS_NAMES` (a test holds them).
                    basis.add(r.cost_basis(&self.pricing).name(), 1);
                }
                let at = (u.task.as_str(), u.team.as_str(), u.replicate);
                (at, SolveCost { usd, basis })
            })
            .collect();
        Costs { by_solve }
    }

    /// A copy with every pair's and solve row's cost filled in from the recorded usage and the
    /// prices. The renderer prices without the copy ([`ReportInputs::costs`]).
    pub fn priced(&self) -> ReportInputs {
        let costs = self.costs();
        let mut out = self.clone();
        for p in &mut out.pairs {
            costs.price_pair(p);
        }
        for r in &mut out.rows {
            r.cost_usd = costs.row_cost(r);
        }
        out
    }
}

/// The stored files of one pair (blob digests), for `artifacts/<team>/<task>/`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct PairArtifacts {
    pub task: String,
    pub team: String,
    pub replicate: u32,
    /// The solve's patch (`SolveOutput.patch`).
    pub patch: Option<String>,
    /// The solve's trajectory.
    pub trajectory: Option<String>,
    /// The grade's test log.
    pub log: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::CostBasis;
    use crate::report::stats::BASIS_NAMES;

    /// Every basis a run can be priced by has its place in the pairs' counts (an `add` of a
    /// name without one would be lost).
    #[test]
    fn every_cost_basis_is_counted() {
        let all = [
            CostBasis::Free,
            CostBasis::Reported,
            CostBasis::Table,
            CostBasis::Rounded,
            CostBasis::Unpriced,
        ];
        let mut counts = BasisCounts::default();
        for (i, b) in all.into_iter().enumerate() {
            // A match that fails to compile when a basis is added without its place here.
            match b {
                CostBasis::Free
                | CostBasis::Reported
                | CostBasis::Table
                | CostBasis::Rounded
                | CostBasis::Unpriced => {}
            }
            assert_eq!(counts.add(b.name(), i as u64 + 1), Some(()), "{}", b.name());
        }
        let names: Vec<&str> = counts.iter().map(|(name, _)| name).collect();
        assert_eq!(names, BASIS_NAMES);
        let mut sorted = BASIS_NAMES;
        sorted.sort_unstable();
        assert_eq!(
            sorted, BASIS_NAMES,
            "the names are sorted, as the map's keys were"
        );
    }
}
