//! `bench report A.toml B.toml ...`: several experiments side by side on their common tasks,
//! like `dvc exp show`: the manifest fields in which they differ, each team's numbers, the
//! deltas against the first manifest with their clustered interval, and the exact McNemar test
//! on the shared tasks (Holm-adjusted over the rows).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use crate::report::inference::{clustered_mean, holm};
use crate::report::markdown::{pct, secs, usd};
use crate::report::stats::{
    PairOutcome, PairState, StatsOptions, TeamSummary, mcnemar_exact, team_statistics,
};

/// One experiment's stored results.
pub struct Experiment {
    /// How the experiment is named in the table (the manifest's name, or its path).
    pub label: String,
    pub path: String,
    /// The resolved manifest (after `extends`).
    pub resolved: toml::Value,
    pub teams: Vec<String>,
    pub baseline: Option<String>,
    pub count_errors_as_failures: bool,
    pub pairs: Vec<PairOutcome>,
}

#[derive(Debug, Serialize)]
pub struct Comparison {
    pub experiments: Vec<ExperimentInfo>,
    /// Flattened manifest fields whose values differ (missing: `null`).
    pub differences: Vec<Difference>,
    /// Tasks with a valid result for every team of every experiment.
    pub common_tasks: Vec<String>,
    pub rows: Vec<Row>,
}

#[derive(Debug, Serialize)]
pub struct ExperimentInfo {
    pub label: String,
    pub path: String,
}

#[derive(Debug, Serialize)]
pub struct Difference {
    pub field: String,
    /// One value per experiment, as TOML text; `None` where the field is absent.
    pub values: Vec<Option<String>>,
}

#[derive(Debug, Serialize)]
pub struct Row {
    pub experiment: String,
    pub team: String,
    pub tasks: u64,
    pub resolved: u64,
    pub rate: f64,
    pub wilson_low: f64,
    pub wilson_high: f64,
    pub mean_usd: Option<f64>,
    pub cost_lower_bound: bool,
    pub wall_time_median_s: Option<f64>,
    /// Against the same team (or the baseline) of the first experiment.
    pub vs: Option<Versus>,
}

#[derive(Debug, Serialize)]
pub struct Versus {
    pub experiment: String,
    pub team: String,
    /// Rate difference in percentage points (this minus the reference).
    pub rate_diff_points: f64,
    pub cost_diff_usd: Option<f64>,
    /// Common tasks this row resolved and the reference did not.
    pub wins: u64,
    pub losses: u64,
    /// Exact two-sided McNemar p-value.
    pub p_value: f64,
    /// Holm-adjusted `p_value` over every row compared with the first experiment.
    pub p_holm: f64,
    /// 95% interval of `rate_diff_points`, cluster-robust by repository (the paired
    /// difference on the common tasks); `None` with fewer than two repositories.
    pub diff_low_points: Option<f64>,
    pub diff_high_points: Option<f64>,
}

/// Flattens a TOML value into dotted paths -> TOML text of the leaves.
pub fn flatten(v: &toml::Value, prefix: &str, out: &mut BTreeMap<String, String>) {
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(v, &p, out);
            }
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// Resolved first replicates of the common tasks: (task, team) -> resolved.
fn first_resolved(
    pairs: &[PairOutcome],
    tasks: &BTreeSet<String>,
) -> BTreeMap<(String, String), bool> {
    let mut out: BTreeMap<(String, String), (u32, bool)> = BTreeMap::new();
    for p in pairs.iter().filter(|p| tasks.contains(&p.task)) {
        let resolved = matches!(p.state, PairState::Resolved);
        let e = out
            .entry((p.task.clone(), p.team.clone()))
            .or_insert((p.replicate, resolved));
        if p.replicate <= e.0 {
            *e = (p.replicate, resolved);
        }
    }
    out.into_iter().map(|(k, (_, r))| (k, r)).collect()
}

/// Each common task's cluster: its repository (the smallest any experiment gives), or itself.
fn clusters<'a>(experiments: &'a [Experiment], common: &'a BTreeSet<String>) -> Vec<(u8, &'a str)> {
    let mut repos: BTreeMap<&str, &str> = BTreeMap::new();
    for p in experiments.iter().flat_map(|e| &e.pairs) {
        if let (true, Some(repo)) = (common.contains(&p.task), p.repo.as_deref()) {
            let slot = repos.entry(p.task.as_str()).or_insert(repo);
            *slot = (*slot).min(repo);
        }
    }
    common
        .iter()
        .map(|t| repos.get(t.as_str()).map_or((1, t.as_str()), |r| (0, *r)))
        .collect()
}

type Resolved = BTreeMap<(String, String), bool>;

/// Wins, losses and the clustered paired difference of team `a` against team `b` on `common`
/// (a missing first replicate counts as unresolved).
fn paired(
    common: &BTreeSet<String>,
    (a_resolved, a_team): (&Resolved, &String),
    (b_resolved, b_team): (&Resolved, &String),
    clusters: &[(u8, &str)],
) -> (u64, u64, Option<crate::report::inference::ClusteredMean>) {
    let (mut wins, mut losses) = (0, 0);
    let mut diffs = Vec::with_capacity(common.len());
    for task in common {
        let get = |m: &Resolved, team: &String| {
            m.get(&(task.clone(), team.clone()))
                .copied()
                .unwrap_or(false)
        };
        let (a, b) = (get(a_resolved, a_team), get(b_resolved, b_team));
        match (a, b) {
            (true, false) => wins += 1,
            (false, true) => losses += 1,
            _ => {}
        }
        diffs.push(f64::from(u8::from(a)) - f64::from(u8::from(b)));
    }
    (wins, losses, clustered_mean(&diffs, clusters))
}

/// The tasks common to every experiment: each experiment's common tasks (those with a valid
/// result for each of its teams), intersected; empty without experiments.
fn common_tasks(experiments: &[Experiment]) -> BTreeSet<String> {
    // Tasks common within each experiment, then across all of them.
    let mut common: Option<BTreeSet<String>> = None;
    for e in experiments {
        let s = team_statistics(
            &e.pairs,
            &e.teams,
            &StatsOptions {
                baseline: None,
                count_errors_as_failures: e.count_errors_as_failures,
            },
        );
        let tasks: BTreeSet<String> = s.common_tasks.into_iter().collect();
        common = Some(match common {
            None => tasks,
            Some(c) => c.intersection(&tasks).cloned().collect(),
        });
    }
    common.unwrap_or_default()
}

/// The flattened manifest fields whose values are not the same in every experiment, in field
/// order, each with its value per experiment.
fn differences(experiments: &[Experiment]) -> Vec<Difference> {
    let mut flat: Vec<BTreeMap<String, String>> = Vec::new();
    for e in experiments {
        let mut f = BTreeMap::new();
        flatten(&e.resolved, "", &mut f);
        flat.push(f);
    }
    let fields: BTreeSet<&String> = flat.iter().flat_map(|f| f.keys()).collect();
    fields
        .into_iter()
        .filter_map(|k| {
            let values: Vec<Option<String>> = flat.iter().map(|f| f.get(k).cloned()).collect();
            values.iter().any(|v| v != &values[0]).then(|| Difference {
                field: k.clone(),
                values,
            })
        })
        .collect()
}

/// Compares experiments on the tasks they share.
pub fn compare(experiments: &[Experiment]) -> Comparison {
    let common = common_tasks(experiments);
    let differences = differences(experiments);
    let mut summaries: Vec<Vec<TeamSummary>> = Vec::new();
    let mut resolved: Vec<BTreeMap<(String, String), bool>> = Vec::new();
    for e in experiments {
        let pairs: Vec<PairOutcome> = e
            .pairs
            .iter()
            .filter(|p| common.contains(&p.task))
            .cloned()
            .collect();
        let s = team_statistics(
            &pairs,
            &e.teams,
            &StatsOptions {
                baseline: None,
                count_errors_as_failures: e.count_errors_as_failures,
            },
        );
        summaries.push(s.teams);
        resolved.push(first_resolved(&e.pairs, &common));
    }
    let clusters = clusters(experiments, &common);
    let mut rows = Vec::new();
    for (i, e) in experiments.iter().enumerate() {
        for t in &summaries[i] {
            let vs = (i > 0)
                .then(|| {
                    let first = &experiments[0];
                    let reference = if first.teams.contains(&t.team) {
                        Some(t.team.clone())
                    } else {
                        first
                            .baseline
                            .clone()
                            .or_else(|| first.teams.first().cloned())
                    }?;
                    let rt = summaries[0].iter().find(|x| x.team == reference)?;
                    let (wins, losses, diff) = paired(
                        &common,
                        (&resolved[i], &t.team),
                        (&resolved[0], &reference),
                        &clusters,
                    );
                    Some(Versus {
                        experiment: first.label.clone(),
                        team: reference,
                        rate_diff_points: (t.rate - rt.rate) * 100.0,
                        cost_diff_usd: t.cost.mean_usd.zip(rt.cost.mean_usd).map(|(a, b)| a - b),
                        wins,
                        losses,
                        p_value: mcnemar_exact(wins, losses),
                        p_holm: 1.0,
                        diff_low_points: diff.map(|d| d.low.max(-1.0) * 100.0),
                        diff_high_points: diff.map(|d| d.high.min(1.0) * 100.0),
                    })
                })
                .flatten();
            rows.push(Row {
                experiment: e.label.clone(),
                team: t.team.clone(),
                tasks: t.tasks,
                resolved: t.resolved,
                rate: t.rate,
                wilson_low: t.wilson_low,
                wilson_high: t.wilson_high,
                mean_usd: t.cost.mean_usd,
                cost_lower_bound: t.cost.lower_bound,
                wall_time_median_s: t.wall_time_median_s,
                vs,
            });
        }
    }
    let raw: Vec<f64> = rows
        .iter()
        .filter_map(|r: &Row| r.vs.as_ref().map(|v| v.p_value))
        .collect();
    let mut adjusted = holm(&raw).into_iter();
    for v in rows.iter_mut().filter_map(|r| r.vs.as_mut()) {
        v.p_holm = adjusted.next().unwrap_or(v.p_value);
    }
    Comparison {
        experiments: experiments
            .iter()
            .map(|e| ExperimentInfo {
                label: e.label.clone(),
                path: e.path.clone(),
            })
            .collect(),
        differences,
        common_tasks: common.into_iter().collect(),
        rows,
    }
}

/// The Markdown table of a comparison.
pub fn render(c: &Comparison) -> String {
    let mut md = String::new();
    let labels: Vec<&str> = c.experiments.iter().map(|e| e.label.as_str()).collect();
    let _ = writeln!(md, "# Experiments\n");
    let _ = writeln!(md, "| field | {} |", labels.join(" | "));
    let _ = writeln!(md, "|---|{}", "---|".repeat(labels.len()));
    let paths: Vec<&str> = c.experiments.iter().map(|e| e.path.as_str()).collect();
    let _ = writeln!(md, "| manifest | {} |", paths.join(" | "));
    for d in &c.differences {
        let vals: Vec<String> = d
            .values
            .iter()
            .map(|v| match v {
                Some(v) => format!("`{}`", v.replace('|', "\\|")),
                None => "–".into(),
            })
            .collect();
        let _ = writeln!(md, "| `{}` | {} |", d.field, vals.join(" | "));
    }
    let _ = writeln!(
        md,
        "\nStatistics on the {} tasks common to every team of every experiment.\n",
        c.common_tasks.len()
    );
    let _ = writeln!(
        md,
        "| experiment | team | tasks | resolved | rate | 95% CI (Wilson) | mean cost | median wall time | vs | Δ rate | Δ rate 95% CI (clustered) | Δ cost | wins/losses, p | p (Holm) |"
    );
    let _ = writeln!(
        md,
        "|---|---|---:|---:|---:|---|---:|---:|---|---:|---|---:|---|---:|"
    );
    for r in &c.rows {
        let (vs, dr, ci, dc, test, holm) = match &r.vs {
            Some(v) => (
                format!("{} / {}", v.experiment, v.team),
                format!("{:+.1} pts", v.rate_diff_points),
                match (v.diff_low_points, v.diff_high_points) {
                    (Some(l), Some(h)) => format!("{l:+.1} – {h:+.1} pts"),
                    _ => "–".into(),
                },
                v.cost_diff_usd.map_or("–".into(), |d| {
                    format!("{}${:.2}", if d < 0.0 { "-" } else { "+" }, d.abs())
                }),
                format!("{}/{}, p = {:.3}", v.wins, v.losses, v.p_value),
                format!("{:.3}", v.p_holm),
            ),
            None => Default::default(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} – {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.experiment,
            r.team,
            r.tasks,
            r.resolved,
            pct(r.rate),
            pct(r.wilson_low),
            pct(r.wilson_high),
            usd(r.mean_usd, r.cost_lower_bound),
            secs(r.wall_time_median_s),
            vs,
            dr,
            ci,
            dc,
            test,
            holm
        );
    }
    md
}
