//! `report.md`, rendered from the report document.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::document::{GroupReport, PerTask, ReportDocument, TeamReport};

/// How to read the table against the baseline, under it in both renderings.
pub const BASELINE_NOTE: &str = "The difference is the mean over common tasks of (team − baseline), \
    first replicates; its interval is cluster-robust by repository (Student t with one degree of \
    freedom fewer than repositories). Read it, not two separate intervals: it is what the teams \
    differ by. p is McNemar's exact test on the wins and losses; with several teams, judge by \
    Holm's p, which keeps the chance of any false difference at 5%. Holm's p decides whether a \
    difference is significant; the interval is descriptive, and with few repositories the two \
    can disagree.";

/// The teams whose interval and Holm-adjusted p disagree (an interval that excludes 0 with
/// Holm's p above 0.05, or one that includes 0 with Holm's p at or below it), in one sentence
/// under the table against the baseline; `None` when they agree everywhere.
pub fn disagreement_note(doc: &ReportDocument) -> Option<String> {
    let teams: Vec<String> = doc
        .teams
        .iter()
        .filter_map(|t| {
            let c = t.vs_baseline.as_ref()?;
            let (low, high) = (c.diff_low?, c.diff_high?);
            let excludes_zero = low > 0.0 || high < 0.0;
            let significant = c.p_holm <= 0.05;
            (excludes_zero != significant).then(|| {
                format!(
                    "{} (interval {} – {}, Holm's p {:.3})",
                    t.name,
                    points(low),
                    points(high),
                    c.p_holm
                )
            })
        })
        .collect();
    (!teams.is_empty()).then(|| {
        format!(
            "The interval and Holm's p disagree for {}: Holm's exact McNemar p decides, so a \
             difference is significant only when Holm's p is at most 0.05.",
            teams.join(", ")
        )
    })
}

/// What the replicates table means, under it in both renderings.
pub const REPLICATES_NOTE: &str = "pass@k: the unbiased estimator (Chen et al. 2021) of the chance that \
    k rollouts include a resolved one, averaged over tasks. The mean over replicates is pass@1 on \
    every rollout, with its clustered interval. Variance within tasks is how much reruns of a task \
    disagree (more replicates shrink its share of the error); variance between tasks is how much \
    the tasks differ (only more tasks shrink it).";

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

/// A team's mean cost when anything is known of it: `None` when no run has a known cost (a
/// lower bound of $0.00 says nothing), the priced mean otherwise (free runs count as $0.00).
pub fn known_mean_cost(t: &TeamReport) -> Option<f64> {
    if t.cost.runs > 0 && t.cost.priced_runs == 0 {
        None
    } else {
        t.cost.mean_usd
    }
}

/// A cost cell of a team (its mean, or its cost per resolved), read the same way in every table:
/// `$0.00` for runs that drive no model, `unknown` when no run has a known cost (never
/// `≥ $0.00`), `≥ $x` when some runs are unpriced.
pub fn cost_cell(t: &TeamReport, x: Option<f64>) -> String {
    if t.cost.runs > 0 && t.cost.priced_runs == 0 {
        "unknown".into()
    } else {
        usd(x, t.cost.lower_bound)
    }
}

/// The priced-runs cell: `8 of 8 (free: no model)`, `0 of 8 (none recorded a cost or priced
/// tokens)`, `5 of 8`; runs priced by the harness's own figure (a model the pricing table does
/// not price) are said: `8 of 8 (the harness's own figure)`, `8 of 8 (3 by the harness's own
/// figure)`.
pub fn priced_cell(t: &TeamReport) -> String {
    let c = &t.cost;
    let own = ["reported", "rounded"]
        .iter()
        .filter_map(|b| c.basis.get(*b))
        .sum::<u64>();
    let why = if c.runs > 0 && c.basis.keys().all(|b| b == "free") && !c.basis.is_empty() {
        " (free: no model)".to_string()
    } else if c.runs > 0 && c.priced_runs == 0 {
        " (none recorded a cost or priced tokens)".to_string()
    } else if own > 0 && own == c.priced_runs {
        " (the harness's own figure)".to_string()
    } else if own > 0 {
        format!(" ({own} by the harness's own figure)")
    } else {
        String::new()
    };
    format!("{} of {}{why}", c.priced_runs, c.runs)
}

pub fn secs(x: Option<f64>) -> String {
    match x {
        None => "–".into(),
        Some(s) if s >= 60.0 => format!("{:.1} min", s / 60.0),
        Some(s) => format!("{s:.1} s"),
    }
}

/// A pair that did not run: `task × team (replicate 0)`, and why when the apply said:
/// `: not run (budget: spent $0.06 of $0.025)`.
pub fn not_run_line(e: &crate::report::document::PairReport) -> String {
    let pair = format!("{} × {} (replicate {})", e.task, e.team, e.replicate);
    match e.reason.as_deref() {
        Some(why) => match why.strip_prefix("budget: ") {
            Some(rest) => format!("{pair}: not run (budget: {rest})"),
            None => format!("{pair}: not run ({why})"),
        },
        None => pair,
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

/// A table both renderers print: a header, which columns are numeric (right-aligned), and
/// rows of plain-text cells (HTML escapes them).
pub struct Table {
    pub head: Vec<String>,
    pub numeric: Vec<bool>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    fn new(head: &[(&str, bool)]) -> Table {
        Table {
            head: head.iter().map(|(h, _)| (*h).to_string()).collect(),
            numeric: head.iter().map(|(_, n)| *n).collect(),
            rows: Vec::new(),
        }
    }

    /// The table as Markdown, with a trailing newline.
    pub fn markdown(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(md, "| {} |", self.head.join(" | "));
        let align: Vec<&str> = self
            .numeric
            .iter()
            .map(|n| if *n { "---:" } else { "---" })
            .collect();
        let _ = writeln!(md, "|{}|", align.join("|"));
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(|c| c.replace('|', "\\|")).collect();
            let _ = writeln!(md, "| {} |", cells.join(" | "));
        }
        md
    }

    /// The table as HTML.
    pub fn html(&self) -> String {
        let esc = super::html::esc;
        let mut h = String::from("<table><tr>");
        for c in &self.head {
            let _ = write!(h, "<th>{}</th>", esc(c));
        }
        h.push_str("</tr>\n");
        for row in &self.rows {
            h.push_str("<tr>");
            for (cell, numeric) in row.iter().zip(&self.numeric) {
                let class = if *numeric { " class=n" } else { "" };
                let _ = write!(h, "<td{class}>{}</td>", esc(cell));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
        h
    }
}

/// `low – high` as percentages, `–` when unknown.
fn interval(low: Option<f64>, high: Option<f64>) -> String {
    match (low, high) {
        (Some(l), Some(h)) => format!("{} – {}", pct(l), pct(h)),
        _ => "–".into(),
    }
}

/// A difference in percentage points.
fn points(x: f64) -> String {
    format!("{:+.1} pts", x * 100.0)
}

/// The teams' resolve rates with both intervals and the headline's.
pub fn resolve_table(doc: &ReportDocument) -> Table {
    let clustered = format!("95% CI (clustered, {} repos)", doc.repositories);
    let mut table = Table::new(&[
        ("team", false),
        ("tasks", true),
        ("resolved", true),
        ("rate", true),
        ("95% CI (headline)", false),
        ("95% CI (Wilson)", false),
        (clustered.as_str(), false),
        ("timed out", true),
        ("errored", true),
        ("not run", true),
        ("vs baseline (wins/losses, p)", false),
    ]);
    for t in &doc.teams {
        table.rows.push(vec![
            t.name.clone(),
            t.tasks.to_string(),
            t.resolved.to_string(),
            pct(t.rate),
            format!(
                "{} ({})",
                interval(Some(t.ci_low), Some(t.ci_high)),
                t.headline_interval
            ),
            interval(Some(t.wilson_low), Some(t.wilson_high)),
            interval(t.cluster_low, t.cluster_high),
            t.timed_out.to_string(),
            t.errored.to_string(),
            t.not_run.to_string(),
            vs_cell(doc, t),
        ]);
    }
    table
}

/// What the headline interval is and why, in one paragraph.
pub fn headline_note(doc: &ReportDocument) -> String {
    let mut note = format!(
        "Headline interval: the wider of Wilson's and the cluster-robust one (CR1 standard error \
         clustered by repository, {} clusters, Student t with one degree of freedom fewer). Tasks of one repository are correlated, so when \
         the clustered interval is wider, Wilson's is too narrow; Wilson's stays valid near 0% and \
         100%, where a normal interval collapses, and with a single repository, where no \
         clustered error exists.",
        doc.repositories
    );
    if (2..10).contains(&doc.repositories) {
        note.push_str(&format!(
            " With only {} repositories the clustered error is itself uncertain.",
            doc.repositories
        ));
    }
    note
}

/// Each team against the baseline: the paired difference with its clustered interval, the
/// exact McNemar p-value and Holm's adjustment. `None` without a baseline.
pub fn baseline_table(doc: &ReportDocument) -> Option<Table> {
    let baseline = doc.baseline.as_deref()?;
    let compared = doc.teams.iter().filter(|t| t.vs_baseline.is_some()).count();
    let holm = format!("p (Holm, {compared} comparisons)");
    let mut table = Table::new(&[
        ("team", false),
        ("difference (paired)", true),
        ("95% CI (clustered)", false),
        ("wins/losses", true),
        ("p (exact McNemar)", true),
        (holm.as_str(), true),
    ]);
    for t in &doc.teams {
        let Some(c) = &t.vs_baseline else { continue };
        let ci = match (c.diff_low, c.diff_high) {
            (Some(l), Some(h)) => format!("{} – {}", points(l), points(h)),
            _ => "–".into(),
        };
        table.rows.push(vec![
            format!("{} − {baseline}", t.name),
            points(c.rate_diff),
            ci,
            format!("{}/{}", c.wins, c.losses),
            format!("{:.3}", c.p_value),
            format!("{:.3}", c.p_holm),
        ]);
    }
    (!table.rows.is_empty()).then_some(table)
}

/// pass@k, the mean over replicates with its interval, the variance split and best-of-k.
pub fn replicates_table(doc: &ReportDocument) -> Option<Table> {
    let mut table = Table::new(&[
        ("team", false),
        ("replicates", true),
        ("pass@k", false),
        ("mean over replicates (95% CI)", false),
        ("variance within tasks", true),
        ("variance between tasks", true),
        ("best-of-k resolved", true),
    ]);
    for t in &doc.teams {
        let Some(r) = &t.replicates else { continue };
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
        let var = |x: Option<f64>| x.map_or_else(|| "–".to_string(), |v| format!("{v:.4}"));
        table.rows.push(vec![
            t.name.clone(),
            reps,
            passes.join(", "),
            format!(
                "{} ({}, clustered by {})",
                pct(r.mean),
                interval(r.mean_low, r.mean_high),
                r.mean_clusters
            ),
            var(r.within_task_variance),
            var(r.between_task_variance),
            format!("{} ({})", r.best_of_resolved, pct(r.best_of_rate)),
        ]);
    }
    (!table.rows.is_empty()).then_some(table)
}

/// A number to four decimals, `–` when unknown.
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
        "Intervals of non-0/1 scores and of the paired differences: percentile bootstrap over tasks, {} resamples, splitmix64 seed {:#x}.\n",
        doc.bootstrap.resamples, doc.bootstrap.seed
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

/// Renders `report.md`. `per_task` is task -> team -> cell (first replicate).
pub fn render(doc: &ReportDocument, per_task: &PerTask<'_>) -> String {
    let mut md = String::new();
    header(&mut md, doc);
    if doc.gold.tasks > 0 {
        let _ = writeln!(
            md,
            "Gold check: {} of {} tasks valid{}.\n",
            doc.gold.valid.len(),
            doc.gold.tasks,
            doc.gold.failed_lists(),
        );
        let failures = doc.gold.failures();
        for (task, why) in &failures {
            let _ = writeln!(md, "- `{task}`: {why}");
        }
        if !failures.is_empty() {
            md.push('\n');
        }
    }
    if let Some(p) = &doc.promotion {
        let _ = writeln!(md, "**Promotion:** {}\n", p.summary);
    }
    let _ = writeln!(
        md,
        "Statistics on the {} common tasks (a valid result for every team).\n",
        doc.common_tasks.len()
    );
    md.push_str(&resolve_table(doc).markdown());
    let _ = writeln!(md, "\n{}", headline_note(doc));
    reruns(&mut md, doc);
    if let Some(table) = baseline_table(doc) {
        let _ = writeln!(
            md,
            "\n## Against the baseline `{}`\n",
            doc.baseline.as_deref().unwrap_or_default()
        );
        md.push_str(&table.markdown());
        let _ = writeln!(md, "\n{BASELINE_NOTE}");
        if let Some(note) = disagreement_note(doc) {
            let _ = writeln!(md, "\n**{note}**");
        }
    }
    scores(&mut md, doc);
    cost_and_time(&mut md, doc);
    if let Some(table) = replicates_table(doc) {
        let _ = writeln!(md, "\n## Replicates\n");
        md.push_str(&table.markdown());
        let _ = writeln!(md, "\n{REPLICATES_NOTE}");
    }
    for (title, groups) in [("language", &doc.by_language), ("repository", &doc.by_repo)] {
        if groups.is_empty() {
            continue;
        }
        let _ = writeln!(md, "\n## By {title}\n");
        md.push_str(&breakdown_table(title, groups, &doc.teams).markdown());
    }
    errored(&mut md, doc);
    excluded(&mut md, doc);
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
    for (task, cells) in per_task.iter() {
        let row: Vec<&str> = names.iter().map(|t| cells.get(t).unwrap_or("")).collect();
        let _ = writeln!(md, "| {task} | {} |", row.join(" | "));
    }
    md
}

/// A breakdown (by language, by repository): each group's tasks and, per team, resolved and
/// rate. One table for report.md and report.html.
pub fn breakdown_table(
    title: &str,
    groups: &BTreeMap<String, BTreeMap<String, GroupReport>>,
    teams: &[TeamReport],
) -> Table {
    let mut head: Vec<(&str, bool)> = vec![(title, false), ("tasks", true)];
    head.extend(teams.iter().map(|t| (t.name.as_str(), true)));
    let mut table = Table::new(&head);
    for (g, per_team) in groups {
        let tasks = per_team.values().map(|s| s.tasks).max().unwrap_or(0);
        let mut row = vec![g.clone(), tasks.to_string()];
        row.extend(teams.iter().map(|t| {
            per_team.get(&t.name).map_or(String::new(), |s| {
                format!("{} ({})", s.resolved, pct(s.rate))
            })
        }));
        table.rows.push(row);
    }
    table
}

/// What the reruns section says first.
const RERUNS_NOTE: &str = "Pairs run again by `bench apply --rerun`: the latest attempt counts in \
     every figure above. Beside it, what the first attempts gave (over each team's graded pairs).";

/// The title, the description and the table of what the numbers rest on (version, backend,
/// network, datasets, cutoff, baseline, how errored pairs count), then the warning of an empty
/// report.
fn header(md: &mut String, doc: &ReportDocument) {
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
    if let Some(w) = doc.empty_warning() {
        let _ = writeln!(md, "**Warning: {w}.**\n");
    }
}

/// The cost and time section: per team the mean, median and per-resolved cost, the priced runs
/// and the median wall time, with a note when unknown costs make the figures lower bounds.
fn cost_and_time(md: &mut String, doc: &ReportDocument) {
    let _ = writeln!(md, "\n## Cost and time\n");
    let _ = writeln!(
        md,
        "| team | mean cost | median cost (priced runs only) | cost per resolved | priced runs | median wall time |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|");
    for t in &doc.teams {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            t.name,
            cost_cell(t, t.cost.mean_usd),
            usd(t.cost.median_usd, false),
            cost_cell(t, t.cost.per_resolved_usd),
            priced_cell(t),
            secs(t.wall_time_median_s),
        );
    }
    if doc
        .teams
        .iter()
        .any(|t| t.cost.lower_bound && known_mean_cost(t).is_some())
    {
        let _ = writeln!(
            md,
            "\n≥: some runs have an unknown cost (unpriced, timed out or crashed), so the mean and \
             the cost per resolved are lower bounds; the median is over priced runs only."
        );
    }
}

/// The pairs left out besides the errored ones: those not run and those missing, then the
/// audit flags raised on trajectories.
fn excluded(md: &mut String, doc: &ReportDocument) {
    if !doc.not_run.is_empty() {
        let _ = writeln!(md, "\nNot run (excluded):\n");
        for e in &doc.not_run {
            let _ = writeln!(md, "- {}", not_run_line(e));
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
}

/// Per team with reruns: how many pairs ran again and from which outcome, with the
/// first-attempt figures beside the counting ones.
fn reruns_table(doc: &ReportDocument) -> Table {
    let mut t = Table::new(&[
        ("team", false),
        ("pairs rerun", true),
        ("first outcome", false),
        ("resolved (first attempts)", true),
        ("resolved (counting attempts)", true),
    ]);
    let frac = |n: u64, d: u64| match d {
        0 => "0/0".to_string(),
        d => format!("{n}/{d} ({})", pct(n as f64 / d as f64)),
    };
    for r in &doc.reruns {
        let from: Vec<String> = r.from.iter().map(|(o, n)| format!("{n} {o}")).collect();
        t.rows.push(vec![
            r.team.clone(),
            r.pairs.to_string(),
            from.join(", "),
            frac(r.first_attempt_resolved, r.graded),
            frac(r.counting_resolved, r.graded),
        ]);
    }
    t
}

/// Each rerun pair's attempts, latest first: (task, team and replicate, the attempts).
fn rerun_pairs(doc: &ReportDocument) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for p in doc.reruns.iter().flat_map(|t| &t.rerun_pairs) {
        let mut who = p.team.clone();
        if p.replicate > 0 {
            who.push_str(&format!(" (replicate {})", p.replicate));
        }
        let parts: Vec<String> = p
            .attempts
            .iter()
            .rev()
            .map(|a| {
                let deadline = humantime::format_duration(std::time::Duration::from_millis(
                    (a.deadline_s * 1000.0).round() as u64,
                ));
                let how = match &a.selected_by {
                    Some(w) => format!("deadline {deadline}, `--rerun {w}`"),
                    None => format!("deadline {deadline}"),
                };
                match &a.outcome {
                    None => format!("attempt {} counts ({how})", a.attempt),
                    Some(o) => format!("attempt {} {o} ({how})", a.attempt),
                }
            })
            .collect();
        out.push((p.task.clone(), who, parts.join("; ")));
    }
    out
}

/// The reruns section (`apply --rerun`), if any pair ran more than once.
fn reruns(md: &mut String, doc: &ReportDocument) {
    if doc.reruns.is_empty() {
        return;
    }
    let _ = writeln!(md, "\n## Reruns\n\n{RERUNS_NOTE}\n");
    md.push_str(&reruns_table(doc).markdown());
    md.push('\n');
    for (task, who, attempts) in rerun_pairs(doc) {
        let _ = writeln!(md, "- `{task}` × {who}: {attempts}");
    }
}

/// The reruns section as HTML (empty without reruns).
pub fn reruns_html(doc: &ReportDocument) -> String {
    if doc.reruns.is_empty() {
        return String::new();
    }
    let esc = super::html::esc;
    let mut h = format!(
        "<h2>Reruns</h2>\n<p class=\"note\">{}</p>\n",
        esc(RERUNS_NOTE)
    );
    h.push_str(&reruns_table(doc).html());
    h.push_str("<ul>");
    for (task, who, attempts) in rerun_pairs(doc) {
        let _ = write!(
            h,
            "<li><code>{}</code> × {}: {}</li>",
            esc(&task),
            esc(&who),
            esc(&attempts)
        );
    }
    h.push_str("</ul>\n");
    h
}

/// The errored pairs, each with why.
fn errored(md: &mut String, doc: &ReportDocument) {
    if doc.errored.is_empty() {
        return;
    }
    let counted = if doc.count_errors_as_failures {
        "counted as unresolved"
    } else {
        "excluded"
    };
    let _ = writeln!(md, "\nErrored pairs ({counted}):\n");
    for e in &doc.errored {
        let _ = writeln!(
            md,
            "- {} × {} (replicate {}): {}",
            e.task, e.team, e.replicate, e.reason
        );
    }
}
