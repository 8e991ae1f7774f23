//! The expected spend of a plan's pending solves, from the costs already stored for the same
//! team (the same topology of the same `harness@model` agents, in any manifest sharing the
//! store): per team, the mean cost of a stored solve and its range, times the solves to run. So
//! an experiment prices itself before it runs. Not a budget (that is apply's) and not a promise:
//! a team with no stored priced solve has no estimate, never $0, except a team whose agents
//! drive no model (oracle, nop, predictions, a command without a model or usage reader), which
//! is free, as its report says. A team in a stage with a budget (`max_cost_usd`) is capped by
//! what is left of it: apply stops launching there once it is spent.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::manifest::Manifest;
use crate::store::{Lookup, Store};

/// One team's expected spend.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SpendEstimate {
    pub team: String,
    /// Solves of the team the plan would run.
    pub pending: u64,
    /// Stored priced solves of the same team the estimate is drawn from.
    pub samples: u64,
    /// Mean cost of one solve (one task), when there are samples.
    pub mean_usd: Option<f64>,
    pub min_usd: Option<f64>,
    pub max_usd: Option<f64>,
    /// `pending x mean`, when there are samples (0 for a free team).
    pub expected_usd: Option<f64>,
    /// The team drives no model: its runs cost nothing (the report's `free` basis).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub free: bool,
    /// The budget of the solve stage the team's pending solves are in, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetCap>,
}

/// What is left of a solve stage's budget, which caps the spend of its pending solves.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BudgetCap {
    pub stage: String,
    pub cap_usd: f64,
    pub spent_usd: f64,
    pub remaining_usd: f64,
    /// Why apply launches none of the stage's solves, when it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halted: Option<String>,
}

/// Whether every agent of `team` drives no model, as the solve records it (`RunUsage::no_model`):
/// oracle, nop and predictions harnesses, and commands without a model and a usage reader.
pub fn drives_no_model(m: &Manifest, team: &str) -> bool {
    use crate::manifest::HarnessKind;
    let Some(t) = m.teams.get(team) else {
        return false;
    };
    t.topology
        .agents()
        .iter()
        .all(|a| match m.harnesses.get(&a.harness) {
            Some(h) => match h.kind {
                HarnessKind::Oracle | HarnessKind::Nop | HarnessKind::Predictions => true,
                HarnessKind::Command => a.model.is_none() && h.usage.is_none(),
            },
            None => false,
        })
}

/// A team's identity for cost history: its topology, agents as `harness@model` (how solve jobs
/// record it), canonical.
fn signature(topology: &serde_json::Value) -> String {
    crate::key::digest_of(topology)
}

/// Stored priced solve costs by team signature (timed-out and unpriced solves are left out:
/// their cost is unknown), priced by the manifest's table.
fn stored_costs(m: &Manifest, store: &Store) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for key in store.action_keys() {
        let Lookup::Hit(rec) = store.get_action(&key) else {
            continue;
        };
        let Some(solve) = rec.solve() else {
            continue;
        };
        if solve.timed_out {
            continue;
        }
        let Some(cost) = solve.cost_usd(&m.pricing) else {
            continue;
        };
        let Some(topology) = rec.job.get("team").and_then(|t| t.get("topology")) else {
            continue;
        };
        out.entry(signature(topology)).or_default().push(cost);
    }
    out
}

/// The expected spend of `pending` solves (team -> count) from what `store` holds; `budgets`
/// (team -> the budget of the stage its pending solves are in) caps it.
pub fn estimate(
    m: &Manifest,
    store: Option<&Store>,
    pending: &BTreeMap<String, u64>,
    budgets: &BTreeMap<String, BudgetCap>,
) -> Vec<SpendEstimate> {
    if pending.is_empty() {
        return Vec::new();
    }
    let history = store.map(|s| stored_costs(m, s)).unwrap_or_default();
    pending
        .iter()
        .map(|(team, &n)| {
            if drives_no_model(m, team) {
                return SpendEstimate {
                    team: team.clone(),
                    pending: n,
                    samples: 0,
                    mean_usd: Some(0.0),
                    min_usd: Some(0.0),
                    max_usd: Some(0.0),
                    expected_usd: Some(0.0),
                    free: true,
                    budget: budgets.get(team).cloned(),
                };
            }
            let sig = signature(
                &serde_json::to_value(&m.teams[team].topology).expect("topologies serialize"),
            );
            let costs = history.get(&sig).map(Vec::as_slice).unwrap_or(&[]);
            let mean = (!costs.is_empty()).then(|| costs.iter().sum::<f64>() / costs.len() as f64);
            SpendEstimate {
                team: team.clone(),
                pending: n,
                samples: costs.len() as u64,
                mean_usd: mean,
                min_usd: costs.iter().copied().reduce(f64::min),
                max_usd: costs.iter().copied().reduce(f64::max),
                expected_usd: mean.map(|c| c * n as f64),
                free: false,
                budget: budgets.get(team).cloned(),
            }
        })
        .collect()
}

/// The plan's spend lines: a total over the teams with an estimate (each budgeted stage's part
/// capped by what is left of its budget, and said so), then one line per team.
pub fn render(estimates: &[SpendEstimate]) -> Vec<String> {
    if estimates.is_empty() {
        return Vec::new();
    }
    // Unbudgeted teams add their estimates; a budgeted stage adds at most what is left of it.
    let mut known = 0.0;
    let mut stages: BTreeMap<&str, (&BudgetCap, f64, bool)> = BTreeMap::new();
    for e in estimates {
        match &e.budget {
            None => known += e.expected_usd.unwrap_or(0.0),
            Some(b) => {
                let s = stages.entry(b.stage.as_str()).or_insert((b, 0.0, false));
                s.1 += e.expected_usd.unwrap_or(0.0);
                s.2 |= e.expected_usd.is_none();
            }
        }
    }
    let mut caps = Vec::new();
    for (stage, (b, expected, unknown)) in &stages {
        if *unknown || *expected > b.remaining_usd {
            known += b.remaining_usd;
            caps.push(match &b.halted {
                Some(why) => format!("stage {stage} halted: {why}"),
                None => format!(
                    "stage {stage} has ${:.4} of ${:.4} left",
                    b.remaining_usd, b.cap_usd
                ),
            });
        } else {
            known += expected;
        }
    }
    let pending: u64 = estimates.iter().map(|e| e.pending).sum();
    // Teams with no stored cost leave the total unknown, unless their budget bounds it.
    let unknown: Vec<&str> = estimates
        .iter()
        .filter(|e| e.expected_usd.is_none() && e.budget.is_none())
        .map(|e| e.team.as_str())
        .collect();
    let capped = if caps.is_empty() {
        String::new()
    } else {
        format!(", capped by the budget: {}", caps.join("; "))
    };
    let mut out = vec![if unknown.is_empty() && caps.is_empty() {
        format!("expected spend: ${known:.4} for {pending} solves")
    } else if unknown.is_empty() {
        format!("expected spend: at most ${known:.4} for {pending} solves{capped}")
    } else if unknown.len() == estimates.len() {
        format!("expected spend: unknown for {pending} solves (no stored cost of these teams)")
    } else {
        format!(
            "expected spend: at least ${known:.4} for {pending} solves (no stored cost of team {}){capped}",
            unknown.join(", ")
        )
    }];
    for e in estimates {
        if e.free {
            out.push(format!(
                "  team {}: {} to run, free (drives no model)",
                e.team, e.pending
            ));
            continue;
        }
        out.push(match (e.mean_usd, e.min_usd, e.max_usd) {
            (Some(mean), Some(lo), Some(hi)) => format!(
                "  team {}: {} to run x ${mean:.4} a task (range ${lo:.4}-${hi:.4} over {} stored solves)",
                e.team, e.pending, e.samples
            ),
            _ => format!("  team {}: {} to run, no stored cost", e.team, e.pending),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_match_between_manifest_and_stored_jobs() {
        use crate::manifest::{Agent, Topology};
        let t = Topology::Review {
            coder: Agent {
                harness: "aider".into(),
                model: Some("openai/x".into()),
            },
            reviewer: Agent {
                harness: "claude-code".into(),
                model: None,
            },
            rounds: 2,
        };
        // A stored solve job's team spec holds the topology as the manifest's own encoding.
        let stored = serde_json::json!({"topology": "review", "coder": "aider@openai/x",
            "reviewer": "claude-code", "rounds": 2});
        assert_eq!(
            signature(&serde_json::to_value(&t).unwrap()),
            signature(&stored)
        );
        let other = serde_json::json!({"topology": "review", "coder": "aider@openai/y",
            "reviewer": "claude-code", "rounds": 2});
        assert_ne!(signature(&other), signature(&stored));
    }

    #[test]
    fn lines_say_what_is_known() {
        let e = |team: &str, costs: &[f64], pending: u64| {
            let mean = (!costs.is_empty()).then(|| costs.iter().sum::<f64>() / costs.len() as f64);
            SpendEstimate {
                team: team.into(),
                pending,
                samples: costs.len() as u64,
                mean_usd: mean,
                min_usd: costs.iter().copied().reduce(f64::min),
                max_usd: costs.iter().copied().reduce(f64::max),
                expected_usd: mean.map(|c| c * pending as f64),
                free: false,
                budget: None,
            }
        };
        let lines = render(&[e("a", &[0.01, 0.03], 4), e("b", &[], 2)]);
        assert_eq!(
            lines,
            [
                "expected spend: at least $0.0800 for 6 solves (no stored cost of team b)",
                "  team a: 4 to run x $0.0200 a task (range $0.0100-$0.0300 over 2 stored solves)",
                "  team b: 2 to run, no stored cost",
            ]
        );
        assert_eq!(
            render(&[e("a", &[0.5], 2)])[0],
            "expected spend: $1.0000 for 2 solves"
        );
        assert!(render(&[]).is_empty());
        let free = SpendEstimate {
            free: true,
            ..e("oracle", &[0.0], 8)
        };
        assert_eq!(
            render(&[free, e("a", &[0.5], 2)]),
            [
                "expected spend: $1.0000 for 10 solves",
                "  team oracle: 8 to run, free (drives no model)",
                "  team a: 2 to run x $0.5000 a task (range $0.5000-$0.5000 over 1 stored solves)",
            ]
        );
    }

    #[test]
    fn a_budget_caps_the_expected_spend() {
        let cap = |remaining: f64, halted: Option<&str>| BudgetCap {
            stage: "solve".into(),
            cap_usd: 1.0,
            spent_usd: 1.0 - remaining,
            remaining_usd: remaining,
            halted: halted.map(String::from),
        };
        let team = |name: &str, expected: Option<f64>, b: Option<BudgetCap>| SpendEstimate {
            team: name.into(),
            pending: 10,
            samples: u64::from(expected.is_some()),
            mean_usd: expected.map(|e| e / 10.0),
            min_usd: expected.map(|e| e / 10.0),
            max_usd: expected.map(|e| e / 10.0),
            expected_usd: expected,
            free: false,
            budget: b,
        };
        // Within the budget: the estimate stands.
        assert_eq!(
            render(&[team("a", Some(0.5), Some(cap(0.75, None)))])[0],
            "expected spend: $0.5000 for 10 solves"
        );
        // Over it, or unknown: what is left, and why.
        assert_eq!(
            render(&[
                team("a", Some(2.0), Some(cap(0.75, None))),
                team("b", None, Some(cap(0.75, None))),
                team("c", Some(0.1), None),
            ])[0],
            "expected spend: at most $0.8500 for 30 solves, capped by the budget: stage solve has $0.7500 of $1.0000 left"
        );
        assert_eq!(
            render(&[team(
                "a",
                Some(2.0),
                Some(cap(0.0, Some("spent $1.20 of $1.00")))
            )])[0],
            "expected spend: at most $0.0000 for 10 solves, capped by the budget: stage solve halted: spent $1.20 of $1.00"
        );
    }
}
