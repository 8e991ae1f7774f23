//! Budgets (`max_cost_usd` on a solve stage), usage readers and cost, on the bundled quickstart:
//! its `fixer` harness (`kind = "command"`) is made to print Claude Code's JSON result after it
//! runs, so its tokens and its own dollar figure are read as a real harness's would be.

mod common;

use common::*;

/// The JSON result object `claude -p --output-format json` prints: 1000 input and 100 output
/// tokens, and `cost` as the harness's own total.
fn claude_result(cost: f64) -> String {
    format!(
        r#"{{"type":"result","is_error":false,"num_turns":1,"result":"done","total_cost_usd":{cost},"usage":{{"input_tokens":1000,"output_tokens":100}}}}"#
    )
}

/// The quickstart with the fixer driving `model` and printing a claude result with `cost`
/// (`usage`: the harness's usage reader line, if any).
fn sandbox(model: &str, cost: f64, usage: Option<&str>) -> Sandbox {
    let sb = Sandbox::quickstart();
    sb.edit(
        "quickstart.toml",
        "worker = \"fixer\"",
        &format!("worker = \"fixer@{model}\""),
    );
    let usage = usage
        .map(|u| format!("\nusage = \"{u}\""))
        .unwrap_or_default();
    sb.edit(
        "quickstart.toml",
        "command = \"python3 {{script}}\"",
        &format!(
            "command = '''python3 {{{{script}}}}; echo '{}' '''{usage}",
            claude_result(cost)
        ),
    );
    sb
}

/// Priced by the table at $9 / $10 per million input / output tokens: $0.01 a fixer solve.
const PRICE_M1: &str = "\n[pricing.\"m1\"]\ninput = 9.0\noutput = 10.0\n";

fn budget(sb: &Sandbox, cap: &str) {
    sb.edit(
        "quickstart.toml",
        "teams = [\"oracle\", \"nop\", \"fixer\"]\ntimeout = \"2m\"",
        &format!(
            "teams = [\"oracle\", \"nop\", \"fixer\"]\ntimeout = \"2m\"\n{cap}\nconcurrency = 1"
        ),
    );
}

fn apply(sb: &Sandbox) -> std::process::Output {
    sb.bench(&["apply", "quickstart.toml"])
}

fn fixer(r: &serde_json::Value) -> &serde_json::Value {
    r["teams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "fixer")
        .unwrap()
}

/// Issue 49, item 1: a budget halt keeps the report. It is written on the apply that halts,
/// written again when it is deleted, and re-rendered after a price edit; its halted pairs are
/// not run; `plan --explain` says the budget halts them, and the expected spend is capped.
#[test]
fn a_budget_halt_keeps_the_report() {
    // The harness's total agrees with the table: this is about the halt, not whose figure.
    let sb = sandbox("m1", 0.01, Some("claude-json"));
    sb.append("quickstart.toml", PRICE_M1);
    budget(&sb, "max_cost_usd = 0.025");
    let o = apply(&sb);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("not run (budget)"), "{err}");
    assert!(err.contains("report: 0 cached, 1 done"), "{err}");
    let r = sb.report_json();
    let not_run = r["not_run"].as_array().unwrap().len();
    assert!(not_run > 0, "{r}");
    // Three fixer solves at the table's $0.01 reach the cap.
    assert_eq!(fixer(&r)["cost"]["priced_runs"], 3, "{r}");
    // Halted pairs are not run, and say the budget halted them.
    let md = sb.read("reports/quickstart/report.md");
    assert!(md.contains("| not run (budget) |"), "{md}");
    assert!(
        md.contains("(replicate 0): not run (budget: spent $0.03 of $0.025)"),
        "{md}"
    );
    assert!(
        r["not_run"][0]["reason"]
            .as_str()
            .is_some_and(|w| w.starts_with("budget: spent")),
        "{r}"
    );

    // Applied again (the halt holds): the report is there, cached.
    let again = apply(&sb);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("report: 1 cached, 0 done"),
        "{}",
        stderr(&again)
    );
    assert!(stdout(&again).contains("report.md"), "{}", stdout(&again));

    // Deleted, it is written again.
    fs_err::remove_dir_all(sb.path("reports")).unwrap();
    let again = apply(&sb);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(
        sb.report_json()["not_run"].as_array().unwrap().len(),
        not_run
    );

    // A price edit re-renders it (and runs no solve).
    sb.edit("quickstart.toml", "input = 9.0", "input = 19.0");
    let again = apply(&sb);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("report: 0 cached, 1 done"),
        "{}",
        stderr(&again)
    );
    let mean = fixer(&sb.report_json())["cost"]["mean_usd"]
        .as_f64()
        .unwrap();
    assert!((mean - 0.02).abs() < 1e-9, "{mean}");

    // The plan says why the halted solves do not run, and caps the spend.
    let plan = sb.bench(&["plan", "--explain", "quickstart.toml"]);
    let out = stdout(&plan);
    assert!(
        out.contains("halted by budget: stage solve spent $0.06 of $0.025"),
        "{out}"
    );
    assert!(!out.contains("new"), "{out}");
    assert!(out.contains("capped by the budget"), "{out}");
}

/// Issue 49, item 4: under a budget, the preflight names the fix that works, and applying it
/// clears the refusal; an unpriced model is refused even with a harness that prints a total.
#[test]
fn the_budget_preflight_names_the_fix_that_works() {
    // A command with a model and no usage reader: its tokens cannot be read.
    let sb = sandbox("m1", 0.5, None);
    sb.append("quickstart.toml", PRICE_M1);
    budget(&sb, "max_cost_usd = 1");
    let o = apply(&sb);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("add `usage = \"claude-json\"`") && err.contains("`[harnesses.fixer]`"),
        "{err}"
    );
    assert!(!err.contains("[pricing."), "m1 is priced already: {err}");
    sb.edit(
        "quickstart.toml",
        "script = \"quickstart/agents/fixer.py\"",
        "script = \"quickstart/agents/fixer.py\"\nusage = \"claude-json\"",
    );
    let o = apply(&sb);
    assert!(o.status.success(), "{}", stderr(&o));

    // A model the table does not price, with a harness that prints its own total: refused
    // before anything runs.
    let sb = sandbox("m2", 0.5, Some("claude-json"));
    budget(&sb, "max_cost_usd = 1");
    let o = apply(&sb);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("add `[pricing.\"m2\"]`"), "{err}");
    assert!(!err.contains("done    "), "nothing runs: {err}");
    assert!(!sb.path(".bench/runs").exists() || !err.contains("solve/"));
    sb.append(
        "quickstart.toml",
        "\n[pricing.\"m2\"]\ninput = 1.0\noutput = 1.0\n",
    );
    let o = apply(&sb);
    assert!(o.status.success(), "{}", stderr(&o));

    // Or allow_unpriced: priced spend only.
    let sb = sandbox("m2", 0.5, Some("claude-json"));
    budget(&sb, "max_cost_usd = 1\nallow_unpriced = true");
    let o = apply(&sb);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Issue 49, item 5: the pricing table beats a harness's printed total for a model it prices;
/// the total prices only a model the table does not, and the report says whose figure it is.
#[test]
fn the_pricing_table_beats_the_harness_figure() {
    let sb = sandbox("m1", 0.5, Some("claude-json"));
    sb.append("quickstart.toml", PRICE_M1);
    let o = apply(&sb);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = sb.report_json();
    let cost = &fixer(&r)["cost"];
    assert!(
        (cost["mean_usd"].as_f64().unwrap() - 0.01).abs() < 1e-9,
        "{cost}"
    );
    assert_eq!(cost["basis"], serde_json::json!({"table": 8}), "{cost}");

    let sb = sandbox("m2", 0.5, Some("claude-json"));
    let o = apply(&sb);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = sb.report_json();
    let cost = &fixer(&r)["cost"];
    assert!(
        (cost["mean_usd"].as_f64().unwrap() - 0.5).abs() < 1e-9,
        "{cost}"
    );
    assert_eq!(cost["basis"], serde_json::json!({"reported": 8}), "{cost}");
    let md = sb.read("reports/quickstart/report.md");
    assert!(md.contains("8 of 8 (the harness's own figure)"), "{md}");
}
