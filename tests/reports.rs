//! The report's files: schema, statistics end to end (synthetic 2 x 50 and the quickstart),
//! results.parquet read back with pyarrow, report.html in a real headless browser, the
//! side-by-side `bench report` and the promotion rule.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use bench::manifest::Promote;
use bench::report::document::{ReportDocument, promotion_verdict, report_schema_text};
use bench::report::results::NodeRow;
use bench::report::stats::{PairOutcome, PairState};
use bench::stages::{PairArtifacts, ReportInputs, render_report};
use common::*;
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn schema() -> Value {
    serde_json::from_str(
        &fs_err::read_to_string(root().join("schemas/report.schema.json"))
            .expect("schemas/report.schema.json exists"),
    )
    .expect("schema parses")
}

fn assert_valid(report: &Value) {
    let schema = schema();
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(report)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "report.json violates its schema: {errors:#?}"
    );
}

/// A tool the test needs: under CI=true its absence fails, locally it skips with a note.
fn require(tool: &str, probe: &[&str]) -> bool {
    let ok = Command::new(tool)
        .args(probe)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{tool} is required under CI=true (.ci/run installs it)");
        }
        eprintln!(
            "note: skipping: `{tool} {}` failed (not installed?)",
            probe.join(" ")
        );
    }
    ok
}

#[test]
fn report_schema_is_up_to_date() {
    let on_disk =
        fs_err::read_to_string(root().join("schemas/report.schema.json")).unwrap_or_default();
    assert!(
        on_disk == report_schema_text(),
        "schemas/report.schema.json is stale: run `cargo run -- schema --report > schemas/report.schema.json`"
    );
}

fn reference_scenario(name: &str) -> Value {
    let text = fs_err::read_to_string(root().join("tests/fixtures/stats/reference.json"))
        .expect("reference.json");
    let v: Value = serde_json::from_str(&text).expect("parses");
    v["scenarios"]
        .as_array()
        .expect("scenarios")
        .iter()
        .find(|s| s["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no scenario {name}"))
}

/// Inputs of a reference scenario, with a solve and a grade row per pair and stored files.
fn synthetic_inputs(name: &str) -> ReportInputs {
    let s = reference_scenario(name);
    let pairs: Vec<PairOutcome> = serde_json::from_value(s["pairs"].clone()).expect("pairs");
    let teams: Vec<String> = serde_json::from_value(s["teams"].clone()).expect("teams");
    let mut rows = Vec::new();
    let mut artifacts = Vec::new();
    for p in &pairs {
        let base = NodeRow {
            node: "solve".into(),
            address: format!("solve/{}/{}/{}", p.task, p.team, p.replicate),
            key: Some(format!("key-{}-{}-{}", p.task, p.team, p.replicate)),
            task: p.task.clone(),
            repo: p.repo.clone(),
            language: p.language.clone(),
            team: p.team.clone(),
            replicate: p.replicate,
            status: "ok".into(),
            resolved: None,
            timed_out: None,
            errored: false,
            error: None,
            patch_applied: None,
            resolution: None,
            cost_usd: p.cost_usd,
            input_tokens: Some(1000),
            output_tokens: Some(100),
            patch_bytes: Some(10),
            duration_s: p.wall_time_s,
            reward: None,
            score: None,
            verifier: None,
        };
        match &p.state {
            PairState::NotRun => rows.push(NodeRow {
                status: "not_run".into(),
                key: None,
                cost_usd: None,
                ..base
            }),
            PairState::Errored { reason } => rows.push(NodeRow {
                node: "grade".into(),
                address: base.address.replace("solve/", "grade/"),
                status: "failed".into(),
                errored: true,
                error: Some(reason.clone()),
                cost_usd: None,
                ..base
            }),
            PairState::Resolved | PairState::Unresolved { .. } => {
                let timed_out = matches!(p.state, PairState::Unresolved { timed_out: true });
                rows.push(NodeRow {
                    timed_out: Some(timed_out),
                    ..base.clone()
                });
                rows.push(NodeRow {
                    node: "grade".into(),
                    address: base.address.replace("solve/", "grade/"),
                    resolved: Some(matches!(p.state, PairState::Resolved)),
                    timed_out: Some(timed_out),
                    patch_applied: Some(true),
                    resolution: None,
                    cost_usd: None,
                    ..base
                });
                artifacts.push(PairArtifacts {
                    task: p.task.clone(),
                    team: p.team.clone(),
                    replicate: p.replicate,
                    patch: Some(format!("patch:{}:{}", p.task, p.team)),
                    trajectory: Some("trajectory".into()),
                    log: Some("log".into()),
                });
            }
        }
    }
    ReportInputs {
        manifest: format!("synthetic-{name}"),
        description: Some("reference scenario".into()),
        bench_version: "0.0.0-test".into(),
        backend: "local".into(),
        network: Default::default(),
        datasets: vec!["SWE-bench-Live/MultiLang@3638632e8153a10ca422c1022bed79023084b5c9".into()],
        since: Some("2026-07-01T00:00:00Z".into()),
        teams,
        baseline: s["options"]["baseline"].as_str().map(str::to_string),
        count_errors_as_failures: s["options"]["count_errors_as_failures"]
            .as_bool()
            .unwrap_or(false),
        gold: BTreeMap::new(),
        gold_reasons: BTreeMap::new(),
        pairs,
        rows,
        artifacts,
        promote: None,
        filters: Vec::new(),
        usage: Vec::new(),
        pricing: BTreeMap::new(),
        audit: Vec::new(),
        resolutions: Vec::new(),
        scores: Vec::new(),
        scorer: None,
        attempts: Vec::new(),
    }
}

/// Blobs of the synthetic inputs: the digest names its content.
/// The renderer prices the pairs and solve rows beside the inputs, without copying them: its
/// files are those of the inputs priced first (`ReportInputs::priced`) with no usage left to
/// price, for the golden inputs (whose pairs and rows carry no cost of their own).
#[test]
fn rendering_prices_as_the_priced_copy_does() {
    let inputs: ReportInputs = serde_json::from_slice(
        &fs_err::read(root().join("tests/golden/report-inputs.json")).expect("golden inputs"),
    )
    .expect("golden inputs parse");
    assert!(inputs.usage.len() > 1 && inputs.rows.iter().all(|r| r.cost_usd.is_none()));
    let mut priced = inputs.priced();
    assert!(priced.rows.iter().any(|r| r.cost_usd.is_some()));
    assert!(priced.pairs.iter().any(|p| !p.cost_basis.is_empty()));
    priced.usage.clear();
    let files = |i: &ReportInputs| render_report(i, &fake_blob).expect("renders").files;
    assert_eq!(files(&inputs), files(&priced));
}

fn fake_blob(d: &str) -> Result<Vec<u8>, String> {
    Ok(format!("--- {d}\n").into_bytes())
}

/// The scenario's expected summary in report.json's shape (`team` is called `name`).
fn expected_document_part(expected: &Value) -> Value {
    let mut e = expected.clone();
    for t in e["teams"].as_array_mut().expect("teams") {
        let obj = t.as_object_mut().expect("team");
        let name = obj.remove("team").expect("team name");
        let mut renamed = serde_json::Map::new();
        renamed.insert("name".into(), name);
        // The document flattens the score interval (absent keys when there is none).
        if let Some(Value::Object(i)) = obj.remove("score_interval") {
            renamed.insert("score_low".into(), i["low"].clone());
            renamed.insert("score_high".into(), i["high"].clone());
            renamed.insert("score_interval".into(), i["method"].clone());
        }
        if obj.get("mean_correctness").is_some_and(Value::is_null) {
            obj.remove("mean_correctness");
        }
        if let Some(vs) = obj.get_mut("vs_baseline").and_then(Value::as_object_mut)
            && let Some(d) = vs.remove("score_diff")
            && let Value::Object(d) = d
        {
            vs.insert("score_diff".into(), d["mean"].clone());
            vs.insert("score_diff_low".into(), d["low"].clone());
            vs.insert("score_diff_high".into(), d["high"].clone());
        }
        renamed.extend(std::mem::take(obj));
        *t = Value::Object(renamed);
    }
    e
}

fn check_against_reference(name: &str) -> (ReportDocument, BTreeMap<String, Vec<u8>>) {
    let inputs = synthetic_inputs(name);
    let rendered = render_report(&inputs, &fake_blob).expect("renders");
    let json: Value = serde_json::from_slice(&rendered.files["report.json"]).expect("json");
    assert_valid(&json);
    let scenario = reference_scenario(name);
    let expected = expected_document_part(&scenario["expected"]);
    let mut errors = Vec::new();
    for (k, v) in expected.as_object().expect("object") {
        let mut actual = json[k].clone();
        // Key order of team objects differs (name first); compare as maps.
        if k == "teams" {
            for (a, e) in actual
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .zip(v.as_array().unwrap())
            {
                let keys: Vec<String> = e.as_object().unwrap().keys().cloned().collect();
                // Where costs came from is read from the runs' usage, not a statistic.
                if let Some(c) = a
                    .as_object_mut()
                    .and_then(|o| o.get_mut("cost"))
                    .and_then(Value::as_object_mut)
                {
                    c.remove("basis");
                }
                let obj = a.as_object().unwrap();
                let mut ordered = serde_json::Map::new();
                for key in keys {
                    if let Some(x) = obj.get(&key) {
                        ordered.insert(key, x.clone());
                    }
                }
                for (key, x) in obj {
                    if !ordered.contains_key(key) {
                        ordered.insert(key.clone(), x.clone());
                    }
                }
                *a = Value::Object(ordered);
            }
        }
        common::compare_json(&format!("{name}.{k}"), &actual, v, 1e-9, &mut errors);
    }
    assert!(
        errors.is_empty(),
        "{} mismatches:\n{}",
        errors.len(),
        errors.join("\n")
    );
    // Deterministic: the same inputs give the same bytes.
    let again = render_report(&inputs, &fake_blob).expect("renders");
    assert_eq!(rendered.files, again.files);
    assert_eq!(rendered.linked, again.linked);
    let doc: ReportDocument = serde_json::from_value(json).expect("document parses");
    (doc, rendered.files)
}

#[test]
fn synthetic_two_teams_50_tasks_match_the_reference_values() {
    let (doc, files) = check_against_reference("two_teams_50_tasks");
    assert_eq!(doc.teams.len(), 2);
    let md = String::from_utf8(files["report.md"].clone()).unwrap();
    let html = String::from_utf8(files["report.html"].clone()).unwrap();
    // The scenario has errored, timed-out, unpriced and not-run pairs.
    assert!(!doc.errored.is_empty() && !doc.not_run.is_empty());
    assert!(doc.teams.iter().any(|t| t.timed_out > 0));
    assert!(doc.teams.iter().any(|t| t.cost.lower_bound));
    // Every excluded pair is listed by name in report.md and report.html.
    for e in &doc.errored {
        let line = format!(
            "- {} × {} (replicate {}): {}",
            e.task, e.team, e.replicate, e.reason
        );
        assert!(md.contains(&line), "report.md lacks {line}");
        assert!(html.contains(&e.task), "report.html lacks {}", e.task);
    }
    for e in &doc.not_run {
        let line = format!("- {} × {} (replicate {})", e.task, e.team, e.replicate);
        assert!(md.contains(&line), "report.md lacks {line}");
    }
    // Lower bounds carry ≥ and the median says "priced runs only".
    assert!(md.contains("≥ $"), "{md}");
    assert!(md.contains("median cost (priced runs only)"));
    assert!(md.contains("SWE-bench-Live/MultiLang@3638632e"));
    assert!(md.contains("2026-07-01T00:00:00Z"));
    assert!(md.contains("## By language") && md.contains("## By repository"));
    // predictions.jsonl: one line per graded first replicate, SWE-bench fields.
    let preds = String::from_utf8(files["predictions.jsonl"].clone()).unwrap();
    let first: Value = serde_json::from_str(preds.lines().next().unwrap()).unwrap();
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["instance_id", "model_name_or_path", "model_patch"]);
    assert!(
        first["model_patch"]
            .as_str()
            .unwrap()
            .starts_with("--- patch:")
    );
}

#[test]
fn other_reference_scenarios_match_too() {
    for name in [
        "zero_and_all_successes",
        "no_discordant",
        "single_task",
        "replicates_with_scores",
        "clustered_three_teams",
        "binary_scores",
        "replicates_clustered",
        "replicates_one_repository",
    ] {
        let (doc, files) = check_against_reference(name);
        if name == "replicates_with_scores" {
            assert!(doc.teams.iter().any(|t| t.replicates.is_some()));
            let md = String::from_utf8(files["report.md"].clone()).unwrap();
            assert!(md.contains("pass@1") && md.contains("best-of-k"), "{md}");
        }
    }
}

/// Five repositories, one win in each and no loss: the clustered interval of the difference
/// excludes 0 (t with 4 degrees of freedom) while the exact McNemar p is 0.0625. Both
/// renderings say the two disagree and that Holm's p decides; a report where they agree says
/// nothing more.
#[test]
fn the_report_says_which_readout_decides_when_interval_and_p_disagree() {
    let (doc, files) = check_against_reference("five_repositories_disagree");
    assert_eq!(doc.repositories, 5);
    let md = String::from_utf8(files["report.md"].clone()).unwrap();
    let html = String::from_utf8(files["report.html"].clone()).unwrap();
    let note = "The interval and Holm's p disagree for team (interval +19.5 pts – +30.5 pts, \
                Holm's p 0.062): Holm's exact McNemar p decides, so a difference is significant \
                only when Holm's p is at most 0.05.";
    assert!(md.contains(&format!("**{note}**")), "{md}");
    let escaped = |s: &str| s.replace('\'', "&#39;");
    assert!(
        html.contains(&format!("<strong>{}</strong>", escaped(note))),
        "{html}"
    );
    let decides = "Holm's p decides whether a difference is significant; the interval is \
                   descriptive";
    assert!(md.contains(decides), "{md}");
    assert!(html.contains(&escaped(decides)), "{html}");
    let (_, agree) = check_against_reference("six_wins_no_losses");
    let agree = String::from_utf8(agree["report.md"].clone()).unwrap();
    assert!(!agree.contains("disagree for"), "{agree}");
}

/// Reads results.parquet with pyarrow and checks it against report.json.
fn pyarrow_agrees(dir: &Path) {
    if !require("python3", &["-c", "import pyarrow"]) {
        return;
    }
    let script = r#"
import json, sys, math
import pyarrow.parquet as pq
rows = pq.read_table(sys.argv[1]).to_pylist()
rep = json.load(open(sys.argv[2]))
common = set(rep["common_tasks"])
excluded = set(rep["excluded_tasks"])
assert {r["task"] for r in rows} >= common
for team in rep["teams"]:
    name = team["name"]
    grades = [r for r in rows if r["node"] == "grade" and r["team"] == name and r["task"] in common]
    first = {}
    for r in sorted(grades, key=lambda r: r["replicate"], reverse=True):
        first[r["task"]] = r
    assert len(first) == team["tasks"], (name, len(first), team["tasks"])
    assert sum(1 for r in first.values() if r["resolved"]) == team["resolved"], name
    assert sum(1 for r in grades if r["timed_out"]) == team["timed_out"], name
    solves = [r for r in rows if r["node"] == "solve" and r["team"] == name and r["task"] in common]
    priced = [r["cost_usd"] for r in solves if r["cost_usd"] is not None]
    cost = team["cost"]
    assert len(solves) == cost["runs"], (name, len(solves), cost["runs"])
    assert len(priced) == cost["priced_runs"], name
    assert math.isclose(sum(priced), cost["total_priced_usd"], rel_tol=1e-9, abs_tol=1e-9), name
    if cost["mean_usd"] is not None:
        assert math.isclose(sum(priced) / len(solves), cost["mean_usd"], rel_tol=1e-9), name
    errored = [r for r in rows if r["errored"] and r["team"] == name]
    assert len(errored) == team["errored"], (name, len(errored), team["errored"])
    not_run = [r for r in rows if r["status"] == "not_run" and r["team"] == name]
    assert len(not_run) == team["not_run"], (name, len(not_run), team["not_run"])
    # Every row of the team carries the team's rate and both intervals.
    for r in (r for r in rows if r["team"] == name):
        for column in ["rate", "wilson_low", "wilson_high", "cluster_low", "cluster_high"]:
            assert r["team_" + column] == team[column], (name, column, r["team_" + column], team[column])
print("ok", len(rows))
"#;
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(dir.join("results.parquet"))
        .arg(dir.join("report.json"))
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "pyarrow disagrees with report.json:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn synthetic_results_parquet_agrees_with_report_json_in_pyarrow() {
    let inputs = synthetic_inputs("two_teams_50_tasks");
    let rendered = render_report(&inputs, &fake_blob).expect("renders");
    let dir = tempfile::tempdir().unwrap();
    for name in ["results.parquet", "report.json"] {
        fs_err::write(dir.path().join(name), &rendered.files[name]).unwrap();
    }
    pyarrow_agrees(dir.path());
}

/// Console output in chromium's log: any message a page logs (the report has no scripts, so any
/// is a failure), and uncaught errors.
fn console_errors(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .collect()
}

/// Runs headless chromium on a file URL with console logging on stderr.
fn chromium(url: &str, profile: &Path, extra: &[&str]) -> std::process::Output {
    Command::new("timeout")
        .arg("120")
        .arg("chromium")
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--disable-dev-shm-usage",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("chromium runs")
}

#[test]
fn the_console_check_catches_a_broken_page() {
    if !require("chromium", &["--version"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.html");
    fs_err::write(
        &bad,
        "<html><body>x<script>undefinedFunction();</script></body></html>",
    )
    .unwrap();
    let o = chromium(
        &format!("file://{}", bad.display()),
        &dir.path().join("profile"),
        &["--dump-dom"],
    );
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(
        !console_errors(&log).is_empty(),
        "no console error detected in:\n{log}"
    );
}

/// Renders `html` in headless chromium: the DOM holds every team name, the console is clean.
fn check_in_chromium(html: &Path, teams: &[String]) {
    if !require("chromium", &["--version"]) {
        return;
    }
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", html.display());
    let run = |extra: &[&str]| chromium(&url, profile.path(), extra);
    let o = run(&["--dump-dom"]);
    let dom = String::from_utf8_lossy(&o.stdout);
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "chromium failed: {log}");
    for t in teams {
        assert!(
            dom.contains(t.as_str()),
            "team {t} missing from the rendered DOM"
        );
    }
    assert!(dom.contains("<svg"), "no chart rendered");
    let errors = console_errors(&log);
    assert!(errors.is_empty(), "console output: {errors:#?}");
    let shot = html.with_file_name("report.png");
    let o = run(&[
        &format!("--screenshot={}", shot.display()),
        "--window-size=1100,2200",
        "--hide-scrollbars",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        fs_err::metadata(&shot).is_ok_and(|m| m.len() > 10_000),
        "no screenshot"
    );
    if let Ok(keep) = std::env::var("BENCH_KEEP_SCREENSHOT") {
        let _ = fs_err::copy(&shot, keep);
    }
}

#[test]
fn synthetic_report_html_renders_in_chromium() {
    let inputs = synthetic_inputs("two_teams_50_tasks");
    let rendered = render_report(&inputs, &fake_blob).expect("renders");
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    fs_err::write(&html, &rendered.files["report.html"]).unwrap();
    let text = String::from_utf8(rendered.files["report.html"].clone()).unwrap();
    // Self-contained: no scripts, no stylesheets or images to load.
    for bad in ["<script", "<link", "src=", "href=", "@import", "url("] {
        assert!(!text.contains(bad), "report.html contains {bad}");
    }
    check_in_chromium(&html, &inputs.teams);
}

#[test]
fn promotion_rule_boundaries() {
    let inputs = synthetic_inputs("two_teams_50_tasks");
    let rendered = render_report(&inputs, &fake_blob).expect("renders");
    let mut doc: ReportDocument = serde_json::from_slice(&rendered.files["report.json"]).unwrap();
    // Make both teams' numbers known and exact.
    doc.teams[0].rate = 0.50;
    doc.teams[0].cost.mean_usd = Some(1.00);
    doc.teams[0].cost.lower_bound = false;
    doc.teams[1].rate = 0.48;
    doc.teams[1].cost.mean_usd = Some(0.90);
    doc.teams[1].cost.lower_bound = false;
    let (base, cand) = (doc.teams[0].name.clone(), doc.teams[1].name.clone());
    let rule = |drop: f64, saving: f64| Promote {
        candidate: cand.clone(),
        baseline: base.clone(),
        max_drop_points: drop,
        min_cost_saving_percent: saving,
    };
    // Exactly 2 points lower and exactly 10% cheaper: promote.
    let v = promotion_verdict(&rule(2.0, 10.0), &doc.teams);
    assert!(v.promote, "{}", v.summary);
    assert!(v.summary.starts_with("PROMOTE"));
    // Too large a drop, or too small a saving: keep.
    assert!(!promotion_verdict(&rule(1.9, 10.0), &doc.teams).promote);
    assert!(!promotion_verdict(&rule(2.0, 10.5), &doc.teams).promote);
    // A candidate whose cost is only a lower bound is never promoted on cost.
    doc.teams[1].cost.lower_bound = true;
    let v = promotion_verdict(&rule(2.0, 10.0), &doc.teams);
    assert!(
        !v.promote && v.summary.contains("lower bound"),
        "{}",
        v.summary
    );
}

// ---- the quickstart, through the real binary ----

fn team<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["teams"]
        .as_array()
        .expect("teams")
        .iter()
        .find(|t| t["name"] == name)
        .expect("team in report")
}

#[test]
fn quickstart_report_files() {
    let sb = Sandbox::quickstart();
    sb.edit(
        "quickstart.toml",
        "baseline = \"nop\"",
        "baseline = \"nop\"\npromote = { candidate = \"fixer\", baseline = \"oracle\", max_drop_points = 2.0, min_cost_saving_percent = 10.0 }",
    );
    let o = sb.bench(&["apply", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The verdict is printed at the end of apply.
    assert!(
        stdout(&o).contains("promotion: KEEP `oracle`"),
        "{}",
        stdout(&o)
    );
    let out = sb.path("reports/quickstart");
    let report = sb.report_json();
    assert_valid(&report);
    assert_eq!(team(&report, "oracle")["resolved"], 8);
    assert_eq!(team(&report, "nop")["resolved"], 0);
    assert_eq!(team(&report, "fixer")["resolved"], 3);
    assert_eq!(team(&report, "fixer")["vs_baseline"]["wins"], 3);
    assert_eq!(team(&report, "fixer")["vs_baseline"]["losses"], 0);
    assert_eq!(team(&report, "fixer")["vs_baseline"]["p_value"], 0.25);
    assert!(team(&report, "nop")["vs_baseline"].is_null());
    assert_eq!(report["promotion"]["promote"], false);
    assert_eq!(report["backend"], "local");
    assert_eq!(report["since"], "2026-07-01T00:00:00Z");
    let md = sb.read("reports/quickstart/report.md");
    assert!(md.contains("**Promotion:** KEEP"), "{md}");
    // The new columns: both intervals, the headline's, the paired difference and Holm. Eight
    // tasks in eight repositories; the fixer resolves 3: its CR1 standard error by hand is
    // sqrt(8/7 * (3 * 0.625^2 + 5 * 0.375^2)) / 8.
    assert_eq!(report["repositories"], 8);
    let fixer = team(&report, "fixer");
    let se = (8.0f64 / 7.0 * (3.0 * 0.625f64.powi(2) + 5.0 * 0.375f64.powi(2))).sqrt() / 8.0;
    assert!(
        (fixer["cluster_se"].as_f64().unwrap() - se).abs() < 1e-12,
        "{fixer}"
    );
    assert_eq!(fixer["headline_interval"], "clustered");
    assert_eq!(team(&report, "oracle")["headline_interval"], "wilson");
    let vs = &fixer["vs_baseline"];
    assert!((vs["diff_se"].as_f64().unwrap() - se).abs() < 1e-12, "{vs}");
    // Holm over two comparisons: oracle's 2 * 0.0078125, fixer's max(0.25, that).
    assert_eq!(team(&report, "oracle")["vs_baseline"]["p_holm"], 0.015625);
    assert_eq!(vs["p_holm"], 0.25);
    for needle in [
        "| 95% CI (headline) | 95% CI (Wilson) | 95% CI (clustered, 8 repos) |",
        // t with 7 degrees of freedom (2.365), not the normal 1.960: 37.5% ± 43.3 pts.
        "| fixer | 8 | 3 | 37.5% | 0.0% – 80.8% (clustered) | 13.7% – 69.4% | 0.0% – 80.8% |",
        "## Against the baseline `nop`",
        // The normal quantile gave +1.6 – +73.4, excluding 0 against Holm's p of 0.25.
        "| fixer − nop | +37.5 pts | -5.8 pts – +80.8 pts | 3/0 | 0.250 | 0.250 |",
        "p (Holm, 2 comparisons)",
        "Headline interval: the wider of Wilson's and the cluster-robust one",
        "With only 8 repositories the clustered error is itself uncertain.",
    ] {
        assert!(md.contains(needle), "report.md lacks {needle:?}:\n{md}");
    }
    // Interval and p agree here: no disagreement line.
    assert!(!md.contains("disagree for"), "{md}");
    let html = sb.read("reports/quickstart/report.html");
    assert!(html.contains("<h2>Against the baseline <code>nop</code></h2>"));
    assert!(html.contains("<th>95% CI (clustered, 8 repos)</th>"));
    // Artifacts per team and task, and SWE-bench predictions.
    let files = files_under(&out);
    for name in [
        "report.md",
        "report.html",
        "report.json",
        "results.parquet",
        "predictions.jsonl",
    ] {
        assert!(files.contains_key(name), "{name} missing");
    }
    let tasks: Vec<String> = report["common_tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    assert_eq!(tasks.len(), 8);
    for t in ["oracle", "nop", "fixer"] {
        for task in &tasks {
            for f in ["patch.diff", "eval.log", "trajectory.txt"] {
                let rel = format!("artifacts/{t}/{task}/{f}");
                assert!(files.contains_key(&rel), "{rel} missing");
            }
        }
    }
    let oracle_patch = &files[&format!("artifacts/oracle/{}/patch.diff", tasks[0])];
    assert!(!oracle_patch.is_empty());
    assert!(files[&format!("artifacts/nop/{}/patch.diff", tasks[0])].is_empty());
    let preds: Vec<Value> = sb
        .read("reports/quickstart/predictions.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(preds.len(), 24);
    let p = preds
        .iter()
        .find(|p| p["model_name_or_path"] == "oracle" && p["instance_id"] == tasks[0].as_str())
        .expect("oracle prediction");
    assert_eq!(
        p["model_patch"].as_str().unwrap().as_bytes(),
        &oracle_patch[..]
    );
    pyarrow_agrees(&out);
    // Rerun: nothing runs, every file is byte-identical; a deleted directory is rewritten.
    let again = sb.bench(&["apply", "quickstart.toml"]);
    assert!(again.status.success());
    assert!(executed(&again).is_empty(), "{}", stderr(&again));
    assert_eq!(files_under(&out), files);
    fs_err::remove_dir_all(&out).unwrap();
    let third = sb.bench(&["apply", "quickstart.toml"]);
    assert!(third.status.success());
    assert!(executed(&third).is_empty(), "{}", stderr(&third));
    assert_eq!(files_under(&out), files);
    check_in_chromium(
        &out.join("report.html"),
        &["oracle".into(), "nop".into(), "fixer".into()],
    );
}

#[test]
fn bench_report_compares_manifests_side_by_side() {
    let sb = Sandbox::quickstart();
    assert!(sb.bench(&["apply", "quickstart.toml"]).status.success());
    let b = sb
        .read("quickstart.toml")
        .replace("name = \"quickstart\"", "name = \"quickstart-b\"")
        .replace("baseline = \"nop\"", "baseline = \"fixer\"");
    fs_err::write(sb.path("b.toml"), b).unwrap();
    // Runs nothing: B's solves and grades are A's (same keys), read in plan mode.
    let o = sb.bench(&["report", "quickstart.toml", "b.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let md = stdout(&o);
    assert!(
        md.contains("| `name` | `\"quickstart\"` | `\"quickstart-b\"` |"),
        "{md}"
    );
    assert!(md.contains("`stages.report.baseline`"), "{md}");
    assert!(
        !md.contains("`stages.solve.timeout`"),
        "only differing fields: {md}"
    );
    assert!(md.contains("| quickstart-b | fixer | 8 | 3 |"), "{md}");
    let o = sb.bench(&["report", "--json", "quickstart.toml", "b.toml"]);
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["common_tasks"].as_array().unwrap().len(), 8);
    let row = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["experiment"] == "quickstart-b" && r["team"] == "fixer")
        .unwrap();
    assert_eq!(row["vs"]["team"], "fixer");
    assert_eq!(row["vs"]["wins"], 0);
    assert_eq!(row["vs"]["p_value"], 1.0);
    // The same results: a zero paired difference, its clustered interval (8 repositories)
    // collapsed on 0, and Holm over the three rows against the first experiment.
    assert_eq!(row["vs"]["diff_low_points"], 0.0);
    assert_eq!(row["vs"]["diff_high_points"], 0.0);
    assert_eq!(row["vs"]["p_holm"], 1.0);
    assert!(md.contains("| Δ rate 95% CI (clustered) |"), "{md}");
    assert!(
        !sb.path("reports/quickstart-b").exists(),
        "report runs nothing"
    );
}

#[test]
fn promote_naming_an_unknown_team_is_a_diagnostic() {
    let sb = Sandbox::quickstart();
    sb.edit(
        "quickstart.toml",
        "baseline = \"nop\"",
        "baseline = \"nop\"\npromote = { candidate = \"fixr\" }",
    );
    let o = sb.bench(&["validate", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("unknown team `fixr`"), "{}", stderr(&o));
}

#[test]
fn frontier_keeps_only_undominated_teams() {
    let inputs = synthetic_inputs("two_teams_50_tasks");
    let rendered = render_report(&inputs, &fake_blob).expect("renders");
    let doc: ReportDocument = serde_json::from_slice(&rendered.files["report.json"]).unwrap();
    let mut teams = Vec::new();
    for (name, cost, rate) in [
        ("a", Some(1.0), 0.5),
        ("b", Some(2.0), 0.6),
        ("c", Some(2.0), 0.4),
        ("d", None, 0.9),
        ("e", Some(1.0), 0.5),
    ] {
        let mut t = doc.teams[0].clone();
        t.name = name.into();
        t.cost.mean_usd = cost;
        t.rate = rate;
        teams.push(t);
    }
    assert_eq!(bench::report::html::frontier(&teams), ["a", "b", "e"]);
}

#[test]
fn the_promotion_rule_is_part_of_the_report_key() {
    use bench::jobs::{Job, ReportJob};
    let base_inputs = synthetic_inputs("two_teams_50_tasks");
    let rule = |drop: f64| Promote {
        candidate: "cheap".into(),
        baseline: "solo".into(),
        max_drop_points: drop,
        min_cost_saving_percent: 10.0,
    };
    let key = |p: Option<&Promote>| {
        let mut inputs = base_inputs.clone();
        inputs.promote = p.cloned();
        ReportJob::new(inputs, "/out".into()).key()
    };
    assert_ne!(key(None), key(Some(&rule(2.0))));
    assert_ne!(key(Some(&rule(2.0))), key(Some(&rule(3.0))));
    assert_eq!(key(Some(&rule(2.0))), key(Some(&rule(2.0))));
}

/// SWE-bench's FULL / PARTIAL / NO reaches every output: a grade row's `resolution` column in
/// results.parquet, `resolutions` in report.json, per-team counts and `partial` cells in
/// report.md and report.html.
#[test]
fn swe_bench_resolution_is_shown_per_pair() {
    use bench::jobs::Resolution;
    let mut inputs = synthetic_inputs("two_teams_50_tasks");
    let mut want: BTreeMap<(String, String, u32), Resolution> = BTreeMap::new();
    for (i, p) in inputs.pairs.iter().enumerate() {
        let r = match p.state {
            PairState::Resolved => Resolution::Full,
            PairState::Unresolved { .. } if i % 2 == 0 => Resolution::Partial,
            PairState::Unresolved { .. } => Resolution::No,
            _ => continue,
        };
        want.insert((p.task.clone(), p.team.clone(), p.replicate), r);
    }
    for row in &mut inputs.rows {
        if row.node == "grade" {
            row.resolution = want
                .get(&(row.task.clone(), row.team.clone(), row.replicate))
                .map(|r| r.as_str().to_string());
        }
    }
    inputs.resolutions = want
        .iter()
        .map(
            |((task, team, replicate), r)| bench::report::PairResolution {
                task: task.clone(),
                team: team.clone(),
                replicate: *replicate,
                resolution: *r,
            },
        )
        .collect();
    let partial = want
        .iter()
        .find(|(k, r)| **r == Resolution::Partial && k.2 == 0)
        .map(|(k, _)| k.clone())
        .expect("a partial pair");
    let rendered = render_report(&inputs, &fake_blob).expect("renders");
    let json: Value = serde_json::from_slice(&rendered.files["report.json"]).unwrap();
    assert_valid(&json);
    let listed = json["resolutions"].as_array().unwrap();
    assert_eq!(listed.len(), want.len());
    assert!(listed.iter().any(|r| r["task"] == partial.0.as_str()
        && r["team"] == partial.1.as_str()
        && r["resolution"] == "RESOLVED_PARTIAL"));
    let md = String::from_utf8(rendered.files["report.md"].clone()).unwrap();
    let html = String::from_utf8(rendered.files["report.html"].clone()).unwrap();
    for team in &inputs.teams {
        let n = |r: Resolution| {
            want.iter()
                .filter(|(k, v)| k.1 == *team && k.2 == 0 && **v == r)
                .count()
        };
        let (f, p, no) = (
            n(Resolution::Full),
            n(Resolution::Partial),
            n(Resolution::No),
        );
        assert!(
            md.contains(&format!("| {team} | {f} | {p} | {no} |")),
            "{md}"
        );
        assert!(
            html.contains(&format!(
                "<tr><td>{team}</td><td>{f}</td><td>{p}</td><td>{no}</td></tr>"
            )),
            "{html}"
        );
    }
    let line = md
        .lines()
        .find(|l| l.starts_with(&format!("| {} |", partial.0)))
        .expect("a per-task line");
    assert!(line.contains("partial"), "{line}");
    // results.parquet: the column, read back with pyarrow, matches report.json.
    if !require("python3", &["-c", "import pyarrow"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for name in ["results.parquet", "report.json"] {
        fs_err::write(dir.path().join(name), &rendered.files[name]).unwrap();
    }
    let script = r#"
import json, sys
import pyarrow.parquet as pq
rows = pq.read_table(sys.argv[1]).to_pylist()
rep = json.load(open(sys.argv[2]))
got = {(r["task"], r["team"], r["replicate"]): r["resolution"] for r in rows if r["node"] == "grade" and r["resolution"] is not None}
want = {(r["task"], r["team"], r["replicate"]): r["resolution"] for r in rep["resolutions"]}
assert got == want, (len(got), len(want))
assert all(r["resolution"] is None for r in rows if r["node"] == "solve")
print("ok", len(got))
"#;
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(dir.path().join("results.parquet"))
        .arg(dir.path().join("report.json"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Issue 30: report.html has report.md's "By repository" table and names the gold check's
/// invalid and errored tasks, as report.md does.
#[test]
fn report_html_has_the_tables_and_names_of_report_md() {
    let mut inputs = synthetic_inputs("two_teams_50_tasks");
    let tasks: Vec<String> = {
        let mut t: Vec<String> = inputs.pairs.iter().map(|p| p.task.clone()).collect();
        t.sort();
        t.dedup();
        t
    };
    inputs.gold = tasks.iter().map(|t| (t.clone(), Some(true))).collect();
    let (invalid, errored) = (tasks[0].clone(), tasks[1].clone());
    inputs.gold.insert(invalid.clone(), Some(false));
    inputs.gold.insert(errored.clone(), None);
    let rendered = render_report(&inputs, &fake_blob).expect("renders");
    let json: Value = serde_json::from_slice(&rendered.files["report.json"]).unwrap();
    let md = String::from_utf8(rendered.files["report.md"].clone()).unwrap();
    let html = String::from_utf8(rendered.files["report.html"].clone()).unwrap();
    let gold = format!("; invalid: {invalid}; errored: {errored}");
    assert!(md.contains(&gold), "{md}");
    assert!(
        html.contains(&gold),
        "report.html does not name them: {html}"
    );
    assert!(md.contains("## By repository"));
    assert!(html.contains("<h2>By repository</h2>"), "{html}");
    let repos = json["by_repo"].as_object().expect("by_repo");
    assert!(repos.len() > 1);
    for (repo, per_team) in repos {
        // The same row in both: the repository, its tasks, each team's resolved (rate).
        let team = per_team.as_object().unwrap().values().next().unwrap();
        assert!(
            html.contains(&format!(
                "<tr><td>{repo}</td><td class=n>{}</td>",
                team["tasks"]
            )),
            "report.html lacks the row of {repo}"
        );
        assert!(
            md.contains(&format!("| {repo} | {} |", team["tasks"])),
            "report.md lacks the row of {repo}"
        );
    }
}

/// Issue 49, item 6: a gold patch that does not resolve its task is named in every report file
/// with why, from its check's recorded grade: here a "fix" of the century rule that breaks a
/// PASS_TO_PASS test (2000 is a leap year), and a patch that does not apply.
#[test]
fn the_report_says_why_a_gold_patch_is_invalid() {
    let sb = Sandbox::quickstart();
    let leap = "quickstart/tasks/quickstart__leapyear-1/gold.patch";
    sb.edit(
        leap,
        "+    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)",
        "+    return year % 4 == 0 and year % 100 != 0",
    );
    fs_err::write(
        sb.path("quickstart/tasks/quickstart__roman-1/gold.patch"),
        "--- a/no-such-file.py\n+++ b/no-such-file.py\n@@ -1 +1 @@\n-a\n+b\n",
    )
    .unwrap();
    let o = sb.bench(&["apply", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // 2000 is no longer a leap year: one FAIL_TO_PASS test still fails, one PASS_TO_PASS breaks.
    let broken = "FAIL_TO_PASS still failing: test_days_in_year_2100 (tests.test_datecal.TestDatecal.test_days_in_year_2100); \
                  PASS_TO_PASS broken: test_divisible_by_400_is_leap (tests.test_datecal.TestDatecal.test_divisible_by_400_is_leap)";
    let json = sb.report_json();
    assert_valid(&json);
    assert_eq!(
        json["gold"]["invalid"],
        serde_json::json!(["quickstart__leapyear-1", "quickstart__roman-1"]),
        "{}",
        json["gold"]
    );
    assert_eq!(
        json["gold"]["reasons"],
        serde_json::json!({
            "quickstart__leapyear-1": broken,
            "quickstart__roman-1": "the gold patch did not apply",
        }),
    );
    let md = sb.read("reports/quickstart/report.md");
    assert!(
        md.contains(&format!("- `quickstart__leapyear-1`: {broken}")),
        "{md}"
    );
    assert!(
        md.contains("- `quickstart__roman-1`: the gold patch did not apply"),
        "{md}"
    );
    let html = sb.read("reports/quickstart/report.html");
    assert!(
        html.contains("<li><code>quickstart__roman-1</code>: the gold patch did not apply</li>"),
        "{html}"
    );
}
