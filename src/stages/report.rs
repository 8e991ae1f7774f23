//! The report node: resolve rates per team with Wilson intervals, the paired McNemar test
//! against the baseline, gold validity, cost and time, written as `report.md` and `report.json`
//! in the report's `out` directory (and stored as blobs, so a cached report is rewritten
//! byte-identically when its files are missing).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::report::stats::{PairOutcome, StatsOptions, Summary, team_statistics};
use crate::store::{Store, write_atomic};

use super::{WorkError, WorkOutput};

/// Everything a report reads, gathered by the dispatcher from the node graph.
#[derive(Debug, Clone, Serialize)]
pub struct ReportInputs {
    pub manifest: String,
    pub description: Option<String>,
    pub bench_version: String,
    pub backend: String,
    pub datasets: Vec<String>,
    pub since: Option<String>,
    pub teams: Vec<String>,
    pub baseline: Option<String>,
    pub count_errors_as_failures: bool,
    /// Gold verdicts: task -> valid (None: errored).
    pub gold: BTreeMap<String, Option<bool>>,
    pub pairs: Vec<PairOutcome>,
}

#[derive(Serialize)]
struct ReportJson<'a> {
    schema: u32,
    manifest: &'a str,
    description: Option<&'a str>,
    bench_version: &'a str,
    backend: &'a str,
    datasets: &'a [String],
    since: Option<&'a str>,
    gold: GoldJson,
    summary: &'a Summary,
}

#[derive(Serialize)]
struct GoldJson {
    tasks: usize,
    valid: Vec<String>,
    invalid: Vec<String>,
    errored: Vec<String>,
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Computes the report and writes its files to `out`.
pub fn write_report(
    store: &Store,
    inputs: &ReportInputs,
    out: &Path,
) -> Result<WorkOutput, WorkError> {
    let opts = StatsOptions {
        baseline: inputs.baseline.clone(),
        count_errors_as_failures: inputs.count_errors_as_failures,
    };
    let summary = team_statistics(&inputs.pairs, &inputs.teams, &opts);
    let gold = GoldJson {
        tasks: inputs.gold.len(),
        valid: inputs
            .gold
            .iter()
            .filter(|(_, v)| **v == Some(true))
            .map(|(k, _)| k.clone())
            .collect(),
        invalid: inputs
            .gold
            .iter()
            .filter(|(_, v)| **v == Some(false))
            .map(|(k, _)| k.clone())
            .collect(),
        errored: inputs
            .gold
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.clone())
            .collect(),
    };
    let mut md = String::new();
    let _ = writeln!(md, "# {}\n", inputs.manifest);
    if let Some(d) = &inputs.description {
        let _ = writeln!(md, "{d}\n");
    }
    let _ = writeln!(
        md,
        "bench {} · backend `{}` · datasets {} · contamination cutoff (since) {}\n",
        inputs.bench_version,
        inputs.backend,
        inputs.datasets.join(", "),
        inputs.since.as_deref().unwrap_or("none")
    );
    if gold.tasks > 0 {
        let _ = writeln!(
            md,
            "Gold check: {} of {} tasks valid{}{}.\n",
            gold.valid.len(),
            gold.tasks,
            if gold.invalid.is_empty() {
                String::new()
            } else {
                format!("; invalid: {}", gold.invalid.join(", "))
            },
            if gold.errored.is_empty() {
                String::new()
            } else {
                format!("; errored: {}", gold.errored.join(", "))
            },
        );
    }
    let _ = writeln!(
        md,
        "Statistics on the {} common tasks (a valid result for every team).\n",
        summary.common_tasks.len()
    );
    let _ = writeln!(
        md,
        "| team | tasks | resolved | rate | 95% CI (Wilson) | timed out | errored | not run | vs baseline (wins/losses, p) | mean cost |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---|---:|---:|---:|---|---:|");
    for t in &summary.teams {
        let vs = match &t.vs_baseline {
            Some(c) => format!("{}/{}, p = {:.3}", c.wins, c.losses, c.p_value),
            None if inputs.baseline.as_deref() == Some(t.team.as_str()) => "baseline".into(),
            None => String::new(),
        };
        let cost = match t.cost.mean_usd {
            Some(c) if t.cost.lower_bound => format!("≥ ${c:.2}"),
            Some(c) => format!("${c:.2}"),
            None => "unknown".into(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} – {} | {} | {} | {} | {} | {} |",
            t.team,
            t.tasks,
            t.resolved,
            pct(t.rate),
            pct(t.wilson_low),
            pct(t.wilson_high),
            t.timed_out,
            t.errored,
            t.not_run,
            vs,
            cost
        );
    }
    if !summary.errored.is_empty() {
        let _ = writeln!(md, "\nErrored pairs (excluded):\n");
        for e in &summary.errored {
            let _ = writeln!(
                md,
                "- {} × {} (replicate {}): {}",
                e.task, e.team, e.replicate, e.reason
            );
        }
    }
    if !summary.not_run.is_empty() {
        let _ = writeln!(md, "\nNot run:\n");
        for e in &summary.not_run {
            let _ = writeln!(md, "- {} × {} (replicate {})", e.task, e.team, e.replicate);
        }
    }
    let _ = writeln!(md, "\n## Per task\n");
    let mut per_task: BTreeMap<&str, BTreeMap<&str, &str>> = BTreeMap::new();
    for p in &inputs.pairs {
        let cell = match &p.state {
            crate::report::stats::PairState::Resolved => "resolved",
            crate::report::stats::PairState::Unresolved { timed_out: true } => "timed out",
            crate::report::stats::PairState::Unresolved { .. } => "no",
            crate::report::stats::PairState::Errored { .. } => "errored",
            crate::report::stats::PairState::NotRun => "not run",
        };
        if p.replicate == 0 {
            per_task.entry(&p.task).or_default().insert(&p.team, cell);
        }
    }
    let _ = writeln!(md, "| task | {} |", inputs.teams.join(" | "));
    let _ = writeln!(md, "|---|{}", "---|".repeat(inputs.teams.len()));
    for (task, cells) in &per_task {
        let row: Vec<&str> = inputs
            .teams
            .iter()
            .map(|t| cells.get(t.as_str()).copied().unwrap_or(""))
            .collect();
        let _ = writeln!(md, "| {task} | {} |", row.join(" | "));
    }
    let json = ReportJson {
        schema: 1,
        manifest: &inputs.manifest,
        description: inputs.description.as_deref(),
        bench_version: &inputs.bench_version,
        backend: &inputs.backend,
        datasets: &inputs.datasets,
        since: inputs.since.as_deref(),
        gold,
        summary: &summary,
    };
    let mut json_text = serde_json::to_vec_pretty(&json).expect("reports serialize");
    json_text.push(b'\n');
    let infra = |e: &dyn std::fmt::Display| WorkError::Infra(e.to_string());
    let mut blobs = BTreeMap::new();
    for (name, bytes) in [
        ("report.md", md.as_bytes()),
        ("report.json", &json_text[..]),
    ] {
        blobs.insert(
            name.to_string(),
            store.put_blob(bytes).map_err(|e| infra(&e))?,
        );
        write_atomic(&out.join(name), bytes)
            .map_err(|e| infra(&format!("cannot write {}: {e}", out.join(name).display())))?;
    }
    Ok(WorkOutput {
        output: serde_json::json!({ "out": out.display().to_string(), "files": blobs.keys().collect::<Vec<_>>() }),
        blobs,
    })
}

/// Writes a cached report's files again if they are missing or differ.
pub fn materialize(
    store: &Store,
    blobs: &BTreeMap<String, String>,
    out: &Path,
) -> std::io::Result<()> {
    for (name, digest) in blobs {
        let path = out.join(name);
        let bytes = store.get_blob(digest).map_err(std::io::Error::other)?;
        if std::fs::read(&path).ok().as_deref() != Some(&bytes[..]) {
            write_atomic(&path, &bytes)?;
        }
    }
    Ok(())
}
