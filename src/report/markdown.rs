//! `report.md`, rendered from the report document.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::document::{GroupReport, ReportDocument, TeamReport};

pub fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// `$1.23`, `≥ $1.23` for a lower bound, `–` when unknown.
pub fn usd(x: Option<f64>, lower_bound: bool) -> String {
    match x {
        Some(c) if lower_bound => format!("≥ ${c:.2}"),
        Some(c) => format!("${c:.2}"),
        None => "–".into(),
    }
}

pub fn secs(x: Option<f64>) -> String {
    match x {
        None => "–".into(),
        Some(s) if s >= 60.0 => format!("{:.1} min", s / 60.0),
        Some(s) => format!("{s:.1} s"),
    }
}

/// The vs-baseline cell.
pub fn vs_cell(doc: &ReportDocument, t: &TeamReport) -> String {
    match &t.vs_baseline {
        Some(c) => format!(
            "{}/{}, p = {:.3} ({:+.1} pts)",
            c.wins,
            c.losses,
            c.p_value,
            c.rate_diff * 100.0
        ),
        None if doc.baseline.as_deref() == Some(t.name.as_str()) => "baseline".into(),
        None => String::new(),
    }
}

/// Renders `report.md`. `per_task` is task -> team -> cell (first replicate).
fn num(x: Option<f64>) -> String {
    x.map_or_else(|| "–".to_string(), |v| format!("{v:.4}"))
}

/// The scores section (Harbor rewards): per team mean score with its interval, mean
/// correctness, mean@k / best@k, the paired difference with the baseline; then every scored
/// pair's reward fields.
fn scores(md: &mut String, doc: &ReportDocument) {
    if doc.scores.is_empty() {
        return;
    }
    let _ = writeln!(md, "\n## Scores\n");
    let _ = writeln!(
        md,
        "Score rule: {}. Verifier: {} (`in-place`: Harbor's contract, in the agent's own container; `fresh`: a new container with the agent's end state restored, `/tests` uploaded only then).\n",
        doc.scorer.as_deref().unwrap_or("reward"),
        doc.verifier_modes.join(", ")
    );
    let _ = writeln!(
        md,
        "| team | scored tasks | mean score | 95% CI | mean correctness | best@k | vs baseline (mean paired diff, 95% CI) |"
    );
    let _ = writeln!(md, "|---|---:|---:|---|---:|---:|---|");
    for t in &doc.teams {
        let ci = match (t.score_low, t.score_high) {
            (Some(l), Some(h)) => format!(
                "{l:.4} – {h:.4} ({})",
                t.score_interval.as_deref().unwrap_or("")
            ),
            _ => "–".into(),
        };
        let vs = match t
            .vs_baseline
            .as_ref()
            .and_then(|v| Some((v.score_diff?, v.score_diff_low?, v.score_diff_high?)))
        {
            Some((d, l, h)) => format!("{d:+.4} ({l:+.4} – {h:+.4})"),
            None if doc.baseline.as_deref() == Some(t.name.as_str()) => "baseline".into(),
            None => "–".into(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} |",
            t.name,
            t.scored_tasks,
            num(t.mean_score),
            ci,
            num(t.mean_correctness),
            num(t.replicates.as_ref().and_then(|r| r.best_score)),
            vs
        );
    }
    let _ = writeln!(
        md,
        "\n| task | team | replicate | verifier | score | correctness | reward fields |"
    );
    let _ = writeln!(md, "|---|---|---:|---|---:|---:|---|");
    for p in &doc.scores {
        let fields = match &p.reward {
            Some(r) => r
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", "),
            None => "(verifier timed out)".into(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} |",
            p.task,
            p.team,
            p.replicate,
            p.verifier,
            num(p.score),
            num(p.correctness),
            fields
        );
    }
}

/// The scores section as HTML (the same content as in report.md).
pub fn scores_html(doc: &ReportDocument) -> String {
    let mut md = String::new();
    scores(&mut md, doc);
    if md.is_empty() {
        return md;
    }
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut html = String::new();
    let mut in_table = false;
    for line in md.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            let _ = writeln!(html, "<h2>{}</h2>", esc(h));
        } else if line.starts_with("|---") {
            continue;
        } else if let Some(row) = line.strip_prefix('|') {
            if !in_table {
                html.push_str("<table>\n");
                in_table = true;
            }
            let cells: Vec<String> = row
                .trim_end_matches('|')
                .split(" | ")
                .map(|c| format!("<td>{}</td>", esc(c.trim())))
                .collect();
            let _ = writeln!(html, "<tr>{}</tr>", cells.join(""));
        } else {
            if in_table {
                html.push_str("</table>\n");
                in_table = false;
            }
            if !line.trim().is_empty() {
                let _ = writeln!(html, "<p>{}</p>", esc(line));
            }
        }
    }
    if in_table {
        html.push_str("</table>\n");
    }
    html
}

pub fn render(
    doc: &ReportDocument,
    per_task: &BTreeMap<String, BTreeMap<String, String>>,
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# {}\n", doc.manifest);
    if let Some(d) = &doc.description {
        let _ = writeln!(md, "{d}\n");
    }
    let _ = writeln!(md, "| | |\n|---|---|");
    let _ = writeln!(md, "| bench version | {} |", doc.bench_version);
    let _ = writeln!(md, "| backend | `{}` |", doc.backend);
    for (phase, policy) in &doc.network {
        let _ = writeln!(md, "| network ({phase}) | {policy} |");
    }
    let _ = writeln!(
        md,
        "| dataset (revision) | {} |",
        if doc.datasets.is_empty() {
            "none".to_string()
        } else {
            doc.datasets.join(", ")
        }
    );
    let _ = writeln!(
        md,
        "| contamination cutoff (since) | {} |",
        doc.since.as_deref().unwrap_or("none")
    );
    let _ = writeln!(
        md,
        "| baseline | {} |",
        doc.baseline.as_deref().unwrap_or("none")
    );
    let _ = writeln!(
        md,
        "| errored pairs | {} |\n",
        if doc.count_errors_as_failures {
            "counted as unresolved"
        } else {
            "excluded (their task leaves every team's numbers)"
        }
    );
    if doc.gold.tasks > 0 {
        let _ = writeln!(
            md,
            "Gold check: {} of {} tasks valid{}{}.\n",
            doc.gold.valid.len(),
            doc.gold.tasks,
            if doc.gold.invalid.is_empty() {
                String::new()
            } else {
                format!("; invalid: {}", doc.gold.invalid.join(", "))
            },
            if doc.gold.errored.is_empty() {
                String::new()
            } else {
                format!("; errored: {}", doc.gold.errored.join(", "))
            },
        );
    }
    if let Some(p) = &doc.promotion {
        let _ = writeln!(md, "**Promotion:** {}\n", p.summary);
    }
    let _ = writeln!(
        md,
        "Statistics on the {} common tasks (a valid result for every team).\n",
        doc.common_tasks.len()
    );
    let _ = writeln!(
        md,
        "| team | tasks | resolved | rate | 95% CI (Wilson) | timed out | errored | not run | vs baseline (wins/losses, p) |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---|---:|---:|---:|---|");
    for t in &doc.teams {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} – {} | {} | {} | {} | {} |",
            t.name,
            t.tasks,
            t.resolved,
            pct(t.rate),
            pct(t.wilson_low),
            pct(t.wilson_high),
            t.timed_out,
            t.errored,
            t.not_run,
            vs_cell(doc, t),
        );
    }
    scores(&mut md, doc);
    let _ = writeln!(md, "\n## Cost and time\n");
    let _ = writeln!(
        md,
        "| team | mean cost | median cost (priced runs only) | cost per resolved | priced runs | median wall time |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|");
    for t in &doc.teams {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} of {} | {} |",
            t.name,
            usd(t.cost.mean_usd, t.cost.lower_bound),
            usd(t.cost.median_usd, false),
            usd(t.cost.per_resolved_usd, t.cost.lower_bound),
            t.cost.priced_runs,
            t.cost.runs,
            secs(t.wall_time_median_s),
        );
    }
    if doc.teams.iter().any(|t| t.cost.lower_bound) {
        let _ = writeln!(
            md,
            "\n≥: some runs have an unknown cost (unpriced, timed out or crashed), so the mean and \
             the cost per resolved are lower bounds; the median is over priced runs only."
        );
    }
    if doc.teams.iter().any(|t| t.replicates.is_some()) {
        let _ = writeln!(md, "\n## Replicates\n");
        let _ = writeln!(md, "| team | replicates | pass@k | best-of-k resolved |");
        let _ = writeln!(md, "|---|---|---|---:|");
        for t in &doc.teams {
            if let Some(r) = &t.replicates {
                let mut ks: Vec<(u64, f64)> = r
                    .pass_at_k
                    .iter()
                    .filter_map(|(k, v)| Some((k.parse().ok()?, *v)))
                    .collect();
                ks.sort_by_key(|(k, _)| *k);
                let passes: Vec<String> = ks
                    .iter()
                    .map(|(k, v)| format!("pass@{k} {}", pct(*v)))
                    .collect();
                let reps = if r.min_replicates == r.max_replicates {
                    r.min_replicates.to_string()
                } else {
                    format!("{}–{}", r.min_replicates, r.max_replicates)
                };
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} ({}) |",
                    t.name,
                    reps,
                    passes.join(", "),
                    r.best_of_resolved,
                    pct(r.best_of_rate)
                );
            }
        }
    }
    for (title, groups) in [("language", &doc.by_language), ("repository", &doc.by_repo)] {
        if groups.is_empty() {
            continue;
        }
        let _ = writeln!(md, "\n## By {title}\n");
        breakdown(&mut md, title, groups, &doc.teams);
    }
    if !doc.errored.is_empty() {
        let _ = writeln!(
            md,
            "\nErrored pairs ({}):\n",
            if doc.count_errors_as_failures {
                "counted as unresolved"
            } else {
                "excluded"
            }
        );
        for e in &doc.errored {
            let _ = writeln!(
                md,
                "- {} × {} (replicate {}): {}",
                e.task, e.team, e.replicate, e.reason
            );
        }
    }
    if !doc.not_run.is_empty() {
        let _ = writeln!(md, "\nNot run (excluded):\n");
        for e in &doc.not_run {
            let _ = writeln!(md, "- {} × {} (replicate {})", e.task, e.team, e.replicate);
        }
    }
    if !doc.missing.is_empty() {
        let _ = writeln!(md, "\nMissing (excluded):\n");
        for e in &doc.missing {
            let _ = writeln!(md, "- {} × {}", e.task, e.team);
        }
    }
    if !doc.audit.is_empty() {
        let _ = writeln!(md, "\nAudit flags:\n");
        for a in &doc.audit {
            for f in &a.flags {
                let _ = writeln!(
                    md,
                    "- {} × {} (replicate {}): `{}` {}",
                    a.task, a.team, a.replicate, f.path, f.reason
                );
            }
        }
    }
    if !doc.resolutions.is_empty() {
        // SWE-bench's three-way status, first replicates (PARTIAL counts as unresolved).
        let _ = writeln!(md, "\n## Resolution (SWE-bench)\n");
        let _ = writeln!(md, "| team | FULL | PARTIAL | NO |");
        let _ = writeln!(md, "|---|---:|---:|---:|");
        for t in &doc.teams {
            let [full, partial, no] = crate::report::document::resolution_counts(doc, &t.name);
            let _ = writeln!(md, "| {} | {full} | {partial} | {no} |", t.name);
        }
    }
    let _ = writeln!(md, "\n## Per task\n");
    let names: Vec<&str> = doc.teams.iter().map(|t| t.name.as_str()).collect();
    let _ = writeln!(md, "| task | {} |", names.join(" | "));
    let _ = writeln!(md, "|---|{}", "---|".repeat(names.len()));
    for (task, cells) in per_task {
        let row: Vec<&str> = names
            .iter()
            .map(|t| cells.get(*t).map_or("", String::as_str))
            .collect();
        let _ = writeln!(md, "| {task} | {} |", row.join(" | "));
    }
    md
}

fn breakdown(
    md: &mut String,
    title: &str,
    groups: &BTreeMap<String, BTreeMap<String, GroupReport>>,
    teams: &[TeamReport],
) {
    let names: Vec<&str> = teams.iter().map(|t| t.name.as_str()).collect();
    let _ = writeln!(md, "| {title} | tasks | {} |", names.join(" | "));
    let _ = writeln!(md, "|---|---:|{}", "---:|".repeat(names.len()));
    for (g, per_team) in groups {
        let tasks = per_team.values().map(|s| s.tasks).max().unwrap_or(0);
        let cells: Vec<String> = names
            .iter()
            .map(|t| {
                per_team.get(*t).map_or(String::new(), |s| {
                    format!("{} ({})", s.resolved, pct(s.rate))
                })
            })
            .collect();
        let _ = writeln!(md, "| {g} | {tasks} | {} |", cells.join(" | "));
    }
}
