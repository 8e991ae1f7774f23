//! `report.html`: one self-contained file (inline CSS and SVG, no scripts, no network) with the
//! resolve rate per team and its headline interval (Wilson or clustered), the quality/cost frontier and the resolve rate
//! per language, then the report's tables (the same as report.md's, by repository included).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::document::{PerTask, ReportDocument, TeamReport};
use super::markdown::{
    BASELINE_NOTE, REPLICATES_NOTE, baseline_table, breakdown_table, cost_cell, headline_note,
    known_mean_cost, not_run_line, pct, priced_cell, replicates_table, resolve_table, secs, usd,
};

const PALETTE: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f",
];

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Teams on the quality/cost frontier: no other team is at most as expensive and at least as
/// good, and strictly better in one of the two. Teams without a known mean cost are left out.
pub fn frontier(teams: &[TeamReport]) -> Vec<&str> {
    let priced: Vec<(&str, f64, f64)> = teams
        .iter()
        .filter_map(|t| known_mean_cost(t).map(|c| (t.name.as_str(), c, t.rate)))
        .collect();
    priced
        .iter()
        .filter(|(_, c, r)| {
            !priced
                .iter()
                .any(|(_, c2, r2)| c2 <= c && r2 >= r && (c2 < c || r2 > r))
        })
        .map(|(n, _, _)| *n)
        .collect()
}

fn rate_chart(doc: &ReportDocument) -> String {
    let (left, width, row) = (170.0, 440.0, 30.0);
    let height = 40.0 + row * doc.teams.len() as f64;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" role="img" aria-label="Resolve rate per team with 95% intervals" viewBox="0 0 {w} {height}" width="{w}" height="{height}" xmlns="http://www.w3.org/2000/svg">"#,
        w = left + width + 80.0
    );
    for tick in 0..=4 {
        let x = left + width * tick as f64 / 4.0;
        let _ = write!(
            s,
            r##"<line x1="{x}" y1="10" x2="{x}" y2="{y2}" stroke="#ddd"/><text x="{x}" y="{ty}" font-size="11" text-anchor="middle" fill="#555">{}%</text>"##,
            tick * 25,
            y2 = height - 22.0,
            ty = height - 8.0
        );
    }
    for (i, t) in doc.teams.iter().enumerate() {
        let y = 14.0 + row * i as f64;
        let _ = write!(
            s,
            r##"<text x="{lx}" y="{ty}" font-size="12" text-anchor="end">{name}</text><rect x="{left}" y="{y}" width="{bw:.2}" height="18" fill="{c}"><title>{name}: {rate} ({low} – {high})</title></rect><line x1="{x1:.2}" y1="{cy}" x2="{x2:.2}" y2="{cy}" stroke="#222" stroke-width="1.5"/><line x1="{x1:.2}" y1="{ya}" x2="{x1:.2}" y2="{yb}" stroke="#222"/><line x1="{x2:.2}" y1="{ya}" x2="{x2:.2}" y2="{yb}" stroke="#222"/><text x="{tx:.2}" y="{ty}" font-size="11" fill="#333">{rate}</text>"##,
            lx = left - 8.0,
            ty = y + 13.0,
            name = esc(&t.name),
            bw = width * t.rate,
            c = color(i),
            rate = pct(t.rate),
            low = pct(t.ci_low),
            high = pct(t.ci_high),
            x1 = left + width * t.ci_low,
            x2 = left + width * t.ci_high,
            cy = y + 9.0,
            ya = y + 4.0,
            yb = y + 14.0,
            tx = left + width * t.ci_high + 6.0,
        );
    }
    s.push_str("</svg>");
    s
}

/// Mean score per team with its 95% interval (scores may pass 1: Frontier-SWE's speedups).
fn score_chart(doc: &ReportDocument) -> String {
    let teams: Vec<(usize, &crate::report::document::TeamReport, f64)> = doc
        .teams
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.mean_score.map(|m| (i, t, m)))
        .collect();
    if teams.is_empty() {
        return String::new();
    }
    let top = teams
        .iter()
        .map(|(_, t, m)| t.score_high.unwrap_or(*m).max(*m))
        .fold(1.0f64, f64::max);
    let (step, steps) = ticks(top);
    let scale = step * steps as f64;
    let (left, width, row) = (170.0, 440.0, 30.0);
    let height = 40.0 + row * teams.len() as f64;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" role="img" aria-label="Mean score per team with 95% intervals" viewBox="0 0 {w} {height}" width="{w}" height="{height}" xmlns="http://www.w3.org/2000/svg">"#,
        w = left + width + 80.0
    );
    for tick in 0..=steps {
        let v = step * tick as f64;
        let x = left + width * v / scale;
        let _ = write!(
            s,
            r##"<line x1="{x:.2}" y1="10" x2="{x:.2}" y2="{y2}" stroke="#ddd"/><text x="{x:.2}" y="{ty}" font-size="11" text-anchor="middle" fill="#555">{v}</text>"##,
            y2 = height - 22.0,
            ty = height - 8.0
        );
    }
    for (row_i, (i, t, m)) in teams.iter().enumerate() {
        let y = 14.0 + row * row_i as f64;
        let (low, high) = (t.score_low.unwrap_or(*m), t.score_high.unwrap_or(*m));
        let _ = write!(
            s,
            r##"<text x="{lx}" y="{ty}" font-size="12" text-anchor="end">{name}</text><rect x="{left}" y="{y}" width="{bw:.2}" height="18" fill="{c}"><title>{name}: {m:.4} ({low:.4} – {high:.4})</title></rect><line x1="{x1:.2}" y1="{cy}" x2="{x2:.2}" y2="{cy}" stroke="#222" stroke-width="1.5"/><line x1="{x1:.2}" y1="{ya}" x2="{x1:.2}" y2="{yb}" stroke="#222"/><line x1="{x2:.2}" y1="{ya}" x2="{x2:.2}" y2="{yb}" stroke="#222"/><text x="{tx:.2}" y="{ty}" font-size="11" fill="#333">{m:.3}</text>"##,
            lx = left - 8.0,
            ty = y + 13.0,
            name = esc(&t.name),
            bw = width * m / scale,
            c = color(*i),
            x1 = left + width * low / scale,
            x2 = left + width * high / scale,
            cy = y + 9.0,
            ya = y + 4.0,
            yb = y + 14.0,
            tx = left + width * high / scale + 6.0,
        );
    }
    s.push_str("</svg>");
    s
}

/// A round tick step so that about four steps cover `x`, and the number of steps.
fn ticks(x: f64) -> (f64, usize) {
    if x <= 0.0 || !x.is_finite() {
        return (0.25, 4);
    }
    let raw = x / 4.0;
    let p = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p);
    (step, (x / step).ceil().max(1.0) as usize)
}

fn money_tick(x: f64, step: f64) -> String {
    if (step - step.round()).abs() < 1e-9 {
        format!("{x:.0}")
    } else if step >= 0.01 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

/// Where the cost chart's team labels go: beside their point, moved to the next free place
/// when a label already there would overlap (teams with the same cost and rate, or close).
#[derive(Default)]
struct Labels {
    /// Placed labels' boxes: left, top, right, bottom.
    placed: Vec<(f64, f64, f64, f64)>,
}

impl Labels {
    /// Font size 12: about 7 units a character, 12 high.
    const CHAR: f64 = 7.0;
    const HEIGHT: f64 = 12.0;

    /// The text position (left end of the baseline) for a label of the point at `(x, y)`.
    fn place(&mut self, x: f64, y: f64, text: &str) -> (f64, f64) {
        let width = text.chars().count() as f64 * Self::CHAR;
        let boxed = |tx: f64, ty: f64| (tx, ty - Self::HEIGHT + 2.0, tx + width, ty + 3.0);
        // Above right first, then below right, then further down, 14 units a step.
        let mut candidates = vec![(x + 7.0, y - 9.0), (x + 7.0, y + 19.0)];
        candidates.extend((1..40).map(|k| (x + 7.0, y + 19.0 + 14.0 * k as f64)));
        let free = |b: &(f64, f64, f64, f64), placed: &[(f64, f64, f64, f64)]| {
            placed
                .iter()
                .all(|p| b.2 <= p.0 || b.0 >= p.2 || b.3 <= p.1 || b.1 >= p.3)
        };
        let (tx, ty) = candidates
            .iter()
            .copied()
            .find(|(tx, ty)| free(&boxed(*tx, *ty), &self.placed))
            .unwrap_or(candidates[0]);
        self.placed.push(boxed(tx, ty));
        (tx, ty)
    }
}

fn frontier_chart(doc: &ReportDocument) -> String {
    let front = frontier(&doc.teams);
    let priced: Vec<(usize, &TeamReport, f64)> = doc
        .teams
        .iter()
        .enumerate()
        .filter_map(|(i, t)| known_mean_cost(t).map(|c| (i, t, c)))
        .collect();
    let (left, top, w, h) = (60.0, 28.0, 480.0, 260.0);
    let (step, steps) = ticks(priced.iter().map(|p| p.2).fold(0.0, f64::max) * 1.15);
    let xmax = step * steps as f64;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" role="img" aria-label="Mean cost per task against resolve rate" viewBox="0 0 {vw} {vh}" width="{vw}" height="{vh}" xmlns="http://www.w3.org/2000/svg">"#,
        vw = left + w + 140.0,
        vh = top + h + 45.0
    );
    for tick in 0..=steps {
        let x = left + w * tick as f64 / steps as f64;
        let _ = write!(
            s,
            r##"<line x1="{x:.2}" y1="{top}" x2="{x:.2}" y2="{yb}" stroke="#eee"/><text x="{x:.2}" y="{ty}" font-size="11" text-anchor="middle" fill="#555">${cost}</text>"##,
            yb = top + h,
            ty = top + h + 16.0,
            cost = money_tick(step * tick as f64, step),
        );
    }
    for tick in 0..=4 {
        let y = top + h * (1.0 - tick as f64 / 4.0);
        let _ = write!(
            s,
            r##"<line x1="{left}" y1="{y}" x2="{xr}" y2="{y}" stroke="#eee"/><text x="{lx}" y="{ly}" font-size="11" text-anchor="end" fill="#555">{p}%</text>"##,
            xr = left + w,
            lx = left - 6.0,
            ly = y + 4.0,
            p = tick * 25,
        );
    }
    let _ = write!(
        s,
        r##"<line x1="{left}" y1="{yb}" x2="{xr}" y2="{yb}" stroke="#333"/><line x1="{left}" y1="{top}" x2="{left}" y2="{yb}" stroke="#333"/><text x="{cx}" y="{ly}" font-size="12" text-anchor="middle">mean cost per task (USD)</text><text x="14" y="{cy}" font-size="12" text-anchor="middle" transform="rotate(-90 14 {cy})">resolve rate</text>"##,
        yb = top + h,
        xr = left + w,
        cx = left + w / 2.0,
        ly = top + h + 36.0,
        cy = top + h / 2.0,
    );
    let pos = |t: &TeamReport, c: f64| (left + w * c / xmax, top + h * (1.0 - t.rate));
    let mut line: Vec<(f64, f64)> = priced
        .iter()
        .filter(|(_, t, _)| front.contains(&t.name.as_str()))
        .map(|(_, t, c)| pos(t, *c))
        .collect();
    line.sort_by(|a, b| a.0.total_cmp(&b.0));
    if line.len() > 1 {
        let pts: Vec<String> = line.iter().map(|(x, y)| format!("{x:.2},{y:.2}")).collect();
        let _ = write!(
            s,
            r##"<polyline points="{}" fill="none" stroke="#888" stroke-dasharray="4 3"/>"##,
            pts.join(" ")
        );
    }
    let mut labels = Labels::default();
    for (i, t, c) in &priced {
        let (x, y) = pos(t, *c);
        let on = front.contains(&t.name.as_str());
        let text = format!("{}{}", t.name, if on { " ★" } else { "" });
        let (tx, ty) = labels.place(x, y, &text);
        let bound = if t.cost.lower_bound { "≥ " } else { "" };
        if t.cost.lower_bound {
            // The true cost is at least this: an arrow to the right.
            let _ = write!(
                s,
                r##"<line x1="{x:.2}" y1="{y:.2}" x2="{x2:.2}" y2="{y:.2}" stroke="{c}" stroke-dasharray="3 2"/><path d="M{x2:.2},{y:.2} l-5,-3 v6 z" fill="{c}"/>"##,
                x2 = x + 26.0,
                c = color(*i),
            );
        }
        let _ = write!(
            s,
            r##"<circle cx="{x:.2}" cy="{y:.2}" r="6" fill="{fill}" stroke="{c}" stroke-width="2"><title>{name}: {rate}, {bound}${c2:.4} per task{f}</title></circle><text x="{tx:.2}" y="{ty:.2}" font-size="12">{name}{star}</text>"##,
            fill = if on { color(*i) } else { "#fff" },
            c = color(*i),
            name = esc(&t.name),
            rate = pct(t.rate),
            c2 = c,
            f = if on { " (frontier)" } else { "" },
            star = if on { " ★" } else { "" },
        );
    }
    s.push_str("</svg>");
    if priced.iter().any(|(_, t, _)| t.cost.lower_bound) {
        s.push_str("<p class=\"note\">Arrows: the mean cost is a lower bound (some runs are unpriced, timed out or crashed).</p>");
    }
    let unpriced: Vec<String> = doc
        .teams
        .iter()
        .filter(|t| known_mean_cost(t).is_none())
        .map(|t| esc(&t.name))
        .collect();
    if !unpriced.is_empty() {
        let _ = write!(
            s,
            "<p class=\"note\">Cost unknown (not plotted): {}.</p>",
            unpriced.join(", ")
        );
    }
    s
}

fn language_chart(doc: &ReportDocument) -> String {
    let groups: Vec<(&String, &BTreeMap<String, super::document::GroupReport>)> =
        doc.by_language.iter().collect();
    let n = doc.teams.len().max(1) as f64;
    let bar = 14.0;
    let group_w = bar * n + 24.0;
    let (left, top, h) = (50.0, 15.0, 200.0);
    let w = group_w * groups.len() as f64;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" role="img" aria-label="Resolve rate per language" viewBox="0 0 {vw} {vh}" width="{vw}" height="{vh}" xmlns="http://www.w3.org/2000/svg">"#,
        vw = left + w + 20.0,
        vh = top + h + 40.0
    );
    for tick in 0..=4 {
        let y = top + h * (1.0 - tick as f64 / 4.0);
        let _ = write!(
            s,
            r##"<line x1="{left}" y1="{y}" x2="{xr}" y2="{y}" stroke="#eee"/><text x="{lx}" y="{ly}" font-size="11" text-anchor="end" fill="#555">{p}%</text>"##,
            xr = left + w,
            lx = left - 6.0,
            ly = y + 4.0,
            p = tick * 25
        );
    }
    for (g, (lang, per_team)) in groups.iter().enumerate() {
        let gx = left + group_w * g as f64 + 12.0;
        for (i, t) in doc.teams.iter().enumerate() {
            if let Some(st) = per_team.get(&t.name) {
                let bh = h * st.rate;
                let _ = write!(
                    s,
                    r##"<rect x="{x:.2}" y="{y:.2}" width="{bw}" height="{bh:.2}" fill="{c}"><title>{lang} · {name}: {r} of {n} ({p})</title></rect>"##,
                    x = gx + bar * i as f64,
                    y = top + h - bh,
                    bw = bar - 2.0,
                    c = color(i),
                    lang = esc(lang),
                    name = esc(&t.name),
                    r = st.resolved,
                    n = st.tasks,
                    p = pct(st.rate),
                );
            }
        }
        let _ = write!(
            s,
            r##"<text x="{x:.2}" y="{y}" font-size="11" text-anchor="middle">{lang}</text>"##,
            x = gx + bar * n / 2.0,
            y = top + h + 16.0,
            lang = esc(lang),
        );
    }
    let _ = write!(
        s,
        r##"<line x1="{left}" y1="{yb}" x2="{xr}" y2="{yb}" stroke="#333"/></svg>"##,
        yb = top + h,
        xr = left + w
    );
    s
}

fn legend(doc: &ReportDocument) -> String {
    let mut s = String::from("<p class=\"legend\">");
    for (i, t) in doc.teams.iter().enumerate() {
        let _ = write!(
            s,
            "<span><i style=\"background:{}\"></i>{}</span> ",
            color(i),
            esc(&t.name)
        );
    }
    s.push_str("</p>");
    s
}

const CSS: &str = "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:1000px;padding:0 1rem;color:#222}\
h1{margin-bottom:.2rem}h2{margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}\
table{border-collapse:collapse;margin:.6rem 0}th,td{border:1px solid #ddd;padding:.25rem .6rem;text-align:left}\
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f5f5f5}\
.meta td:first-child{color:#555}.note{color:#555;font-size:13px}.chart{max-width:100%;height:auto}\
.legend span{margin-right:1rem;white-space:nowrap}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}\
.verdict{padding:.6rem 1rem;border-left:4px solid #59a14f;background:#f3f9f1}.verdict.keep{border-color:#e15759;background:#fcf2f2}";

/// Renders `report.html`.
pub fn render(doc: &ReportDocument, per_task: &PerTask<'_>) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{} · bench report</title><style>{CSS}</style></head><body>\n",
        esc(&doc.manifest)
    );
    let _ = writeln!(h, "<h1>{}</h1>", esc(&doc.manifest));
    if let Some(d) = &doc.description {
        let _ = writeln!(h, "<p>{}</p>", esc(d));
    }
    meta_table(&mut h, doc);
    let failures = doc.gold.failures();
    if !failures.is_empty() {
        h.push_str("<p>Why the gold check failed:</p>\n<ul>");
        for (task, why) in &failures {
            let _ = write!(h, "<li><code>{}</code>: {}</li>", esc(task), esc(why));
        }
        h.push_str("</ul>\n");
    }
    if let Some(w) = doc.empty_warning() {
        let _ = writeln!(
            h,
            "<p class=\"verdict keep\"><strong>Warning:</strong> {}.</p>",
            esc(&w)
        );
    }
    if let Some(p) = &doc.promotion {
        let _ = writeln!(
            h,
            "<p class=\"verdict{}\"><strong>Promotion:</strong> {}</p>",
            if p.promote { "" } else { " keep" },
            esc(&p.summary)
        );
    }
    h.push_str("<h2>Resolve rate</h2>\n<p class=\"note\">Bars: resolve rate on the common tasks; whiskers: the headline 95% interval (the wider of Wilson's and the clustered one).</p>\n");
    let _ = writeln!(h, "{}", rate_chart(doc));
    h.push_str(&resolve_table(doc).html());
    let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(&headline_note(doc)));
    h.push_str(&crate::report::markdown::reruns_html(doc));
    if let Some(table) = baseline_table(doc) {
        let _ = writeln!(
            h,
            "<h2>Against the baseline <code>{}</code></h2>",
            esc(doc.baseline.as_deref().unwrap_or_default())
        );
        h.push_str(&table.html());
        let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(BASELINE_NOTE));
        if let Some(note) = crate::report::markdown::disagreement_note(doc) {
            let _ = writeln!(h, "<p class=\"note\"><strong>{}</strong></p>", esc(&note));
        }
    }
    let scores = crate::report::markdown::scores_html(doc);
    if !scores.is_empty() {
        h.push_str("<h2>Scores</h2>\n<p class=\"note\">Bars: mean score on the common tasks; whiskers: 95% interval (Wilson for 0/1 scores, else a seeded bootstrap).</p>\n");
        h.push_str(&score_chart(doc));
        h.push_str(&scores.replacen("<h2>Scores</h2>\n", "", 1));
    }
    h.push_str("<h2>Quality and cost</h2>\n<p class=\"note\">Filled points marked ★ are on the frontier: no other team is both cheaper (or as cheap) and better (or as good).</p>\n");
    h.push_str(&frontier_chart(doc));
    cost_table(&mut h, doc);
    if let Some(table) = replicates_table(doc) {
        h.push_str("<h2>Replicates</h2>\n");
        h.push_str(&table.html());
        let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(REPLICATES_NOTE));
    }
    if !doc.by_language.is_empty() {
        h.push_str("<h2>By language</h2>\n");
        h.push_str(&legend(doc));
        h.push_str(&language_chart(doc));
        h.push('\n');
        h.push_str(&breakdown_table("language", &doc.by_language, &doc.teams).html());
    }
    if !doc.by_repo.is_empty() {
        h.push_str("<h2>By repository</h2>\n");
        h.push_str(&breakdown_table("repository", &doc.by_repo, &doc.teams).html());
    }
    left_out_lists(&mut h, doc);
    if !doc.resolutions.is_empty() {
        h.push_str("<h2>Resolution (SWE-bench)</h2>\n<table><tr><th>team</th><th>FULL</th><th>PARTIAL</th><th>NO</th></tr>\n");
        for t in &doc.teams {
            let [full, partial, no] = crate::report::document::resolution_counts(doc, &t.name);
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{full}</td><td>{partial}</td><td>{no}</td></tr>",
                esc(&t.name)
            );
        }
        h.push_str("</table>\n");
    }
    h.push_str("<h2>Per task</h2>\n<table><tr><th>task</th>");
    for t in &doc.teams {
        let _ = write!(h, "<th>{}</th>", esc(&t.name));
    }
    h.push_str("</tr>\n");
    for (task, cells) in per_task.iter() {
        let _ = write!(h, "<tr><td>{}</td>", esc(task));
        for t in &doc.teams {
            let _ = write!(h, "<td>{}</td>", esc(cells.get(&t.name).unwrap_or("")));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n</body></html>\n");
    h
}

/// The table of what the numbers rest on: version, backend, network, datasets, cutoff,
/// baseline, the common tasks (and how many were excluded) and the gold check.
fn meta_table(h: &mut String, doc: &ReportDocument) {
    let _ = write!(h, "<table class=\"meta\">");
    let network: Vec<(String, String)> = doc
        .network
        .iter()
        .map(|(phase, policy)| (format!("network ({phase})"), policy.clone()))
        .collect();
    for (k, v) in [
        ("bench version".to_string(), doc.bench_version.clone()),
        ("backend".to_string(), doc.backend.clone()),
    ]
    .into_iter()
    .chain(network)
    .chain([
        ("dataset (revision)".to_string(), doc.datasets.join(", ")),
        (
            "contamination cutoff (since)".to_string(),
            doc.since.clone().unwrap_or_else(|| "none".into()),
        ),
        (
            "baseline".to_string(),
            doc.baseline.clone().unwrap_or_else(|| "none".into()),
        ),
        (
            "common tasks".to_string(),
            format!(
                "{} ({} excluded)",
                doc.common_tasks.len(),
                doc.excluded_tasks.len()
            ),
        ),
        (
            "gold check".to_string(),
            format!(
                "{} of {} valid{}",
                doc.gold.valid.len(),
                doc.gold.tasks,
                doc.gold.failed_lists(),
            ),
        ),
    ]) {
        let _ = write!(h, "<tr><td>{}</td><td>{}</td></tr>", esc(&k), esc(&v));
    }
    h.push_str("</table>\n");
}

/// The cost table: per team the mean, median and per-resolved cost, the priced runs and the
/// median wall time.
fn cost_table(h: &mut String, doc: &ReportDocument) {
    h.push_str("\n<table><tr><th>team</th><th>mean cost</th><th>median cost (priced runs only)</th><th>cost per resolved</th><th>priced runs</th><th>median wall time</th></tr>\n");
    for t in &doc.teams {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td></tr>",
            esc(&t.name),
            esc(&cost_cell(t, t.cost.mean_usd)),
            esc(&usd(t.cost.median_usd, false)),
            esc(&cost_cell(t, t.cost.per_resolved_usd)),
            esc(&priced_cell(t)),
            esc(&secs(t.wall_time_median_s))
        );
    }
    h.push_str("</table>\n");
}

/// The pairs left out of the numbers, a titled list each when not empty: errored (with why),
/// not run, missing, and the audit flags raised on trajectories.
fn left_out_lists(h: &mut String, doc: &ReportDocument) {
    let lists = [
        (
            "Errored pairs",
            doc.errored
                .iter()
                .map(|e| {
                    format!(
                        "{} × {} (replicate {}): {}",
                        e.task, e.team, e.replicate, e.reason
                    )
                })
                .collect::<Vec<_>>(),
        ),
        ("Not run", doc.not_run.iter().map(not_run_line).collect()),
        (
            "Missing",
            doc.missing
                .iter()
                .map(|e| format!("{} × {}", e.task, e.team))
                .collect(),
        ),
        (
            "Audit flags",
            doc.audit
                .iter()
                .flat_map(|a| {
                    a.flags.iter().map(move |f| {
                        format!(
                            "{} × {} (replicate {}): {} {}",
                            a.task, a.team, a.replicate, f.path, f.reason
                        )
                    })
                })
                .collect(),
        ),
    ];
    for (title, items) in lists {
        if items.is_empty() {
            continue;
        }
        let _ = writeln!(h, "<h2>{title}</h2><ul>");
        for i in items {
            let _ = writeln!(h, "<li>{}</li>", esc(&i));
        }
        h.push_str("</ul>\n");
    }
}
