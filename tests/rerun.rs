//! `bench apply --rerun`: stored pairs run again as a new attempt, end to end through the
//! binary. Only the selected pairs run; every attempt is kept (`.bench/attempts/`), shown by
//! `status --node` and counted in the report beside the first-attempt figures; the latest
//! attempt counts even when an earlier one did better; gc keeps what earlier attempts need.

mod common;

use std::collections::BTreeSet;

use common::*;

/// The quickstart with a 3 s solve deadline, and a fixer that sleeps 8 s first on the roman
/// and slugify tasks: those two of its pairs time out (roman's fix is right, slugify's wrong).
fn slow_fixer() -> Sandbox {
    let sb = Sandbox::quickstart();
    sb.edit(
        "quickstart.toml",
        "teams = [\"oracle\", \"nop\", \"fixer\"]\ntimeout = \"2m\"",
        "teams = [\"oracle\", \"nop\", \"fixer\"]\ntimeout = \"3s\"",
    );
    sb.edit(
        "quickstart.toml",
        "command = \"python3 {{script}}\"",
        "command = \"if grep -qi -e roman -e slugify \\\"$BENCH_PROBLEM_FILE\\\"; then sleep 8; fi; python3 {{script}}\"",
    );
    sb
}

fn apply(sb: &Sandbox, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["apply", "quickstart.toml"];
    args.extend_from_slice(extra);
    let o = sb.bench(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

/// The solves an apply ran (not cached), as `task/team`.
fn solves_run(o: &std::process::Output) -> BTreeSet<String> {
    executed(o)
        .into_iter()
        .filter_map(|a| {
            a.strip_prefix("solve/")
                .map(|s| s.trim_end_matches("/0").to_string())
        })
        .collect()
}

/// The pairs the report says timed out, as `task/team`.
fn timed_out(sb: &Sandbox) -> BTreeSet<String> {
    let md = sb.read("reports/quickstart/report.md");
    let header: Vec<&str> = md
        .lines()
        .find(|l| l.starts_with("| task |"))
        .expect("a per-task table")
        .split('|')
        .map(str::trim)
        .collect();
    let mut out = BTreeSet::new();
    for line in md.lines().filter(|l| l.starts_with("| quickstart__")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        for (i, c) in cells.iter().enumerate() {
            if *c == "timed out" {
                out.insert(format!("{}/{}", cells[1], header[i]));
            }
        }
    }
    out
}

fn fixer_reruns(report: &serde_json::Value) -> serde_json::Value {
    report["reruns"]
        .as_array()
        .expect("a reruns section")
        .iter()
        .find(|t| t["team"] == "fixer")
        .cloned()
        .expect("the fixer's reruns")
}

#[test]
fn timed_out_pairs_rerun_with_a_longer_deadline_and_every_attempt_is_kept_and_counted() {
    let sb = slow_fixer();
    apply(&sb, &[]);
    let first = timed_out(&sb);
    assert!(
        first.contains("quickstart__roman-1/fixer")
            && first.contains("quickstart__slugify-1/fixer"),
        "{first:?}"
    );
    let before = sb.report_json();
    let fixer_before = before["teams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "fixer")
        .unwrap()["resolved"]
        .clone();

    // The plan shows them to run, with why, and writes nothing.
    let o = sb.bench(&[
        "plan",
        "quickstart.toml",
        "--rerun",
        "timed-out",
        "--timeout",
        "60s",
        "--explain",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(2), "work pending: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("plan json");
    let planned: BTreeSet<String> = v["to_run"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            let a = e["address"].as_str()?.strip_prefix("solve/")?;
            assert_eq!(
                e["reasons"][0],
                "rerun (--rerun timed-out): its stored attempt timed out; kept as an earlier attempt, with a deadline of 1m",
                "{e}"
            );
            Some(a.trim_end_matches("/0").to_string())
        })
        .collect();
    assert_eq!(planned, first);
    assert!(!sb.path(".bench/attempts").exists());

    // Exactly the timed-out pairs run again, under the longer deadline.
    let o = apply(&sb, &["--rerun", "timed-out", "--timeout", "60s"]);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "--rerun timed-out: {} pairs run again as a new attempt ({} timed out), with a deadline of 1m",
            first.len(),
            first.len()
        )),
        "{err}"
    );
    assert_eq!(solves_run(&o), first, "{err}");
    assert!(timed_out(&sb).is_empty(), "{:?}", timed_out(&sb));

    // The report counts the new attempt and gives the first attempts' figures beside it.
    let report = sb.report_json();
    let fixer = fixer_reruns(&report);
    // Every fixer pair the first apply timed out (roman and slugify always; on a loaded
    // machine a slow start may time out another, of any team) was rerun from its timeout.
    let fixer_first = first.iter().filter(|p| p.ends_with("/fixer")).count();
    assert_eq!(fixer["from"]["timed out"], fixer_first, "{fixer}");
    assert_eq!(fixer["first_attempt_resolved"], fixer_before, "{fixer}");
    assert!(
        fixer["counting_resolved"].as_u64().unwrap() > fixer_before.as_u64().unwrap(),
        "roman's fix is right once it has the time: {fixer}"
    );
    let md = sb.read("reports/quickstart/report.md");
    assert!(
        md.contains(
            "- `quickstart__roman-1` × fixer: attempt 2 counts (deadline 1m, `--rerun timed-out`); attempt 1 timed out (deadline 3s)"
        ),
        "{md}"
    );

    let html = sb.read("reports/quickstart/report.html");
    assert!(
        html.contains("<h2>Reruns</h2>")
            && html.contains("<li><code>quickstart__roman-1</code> × fixer: attempt 2 counts"),
        "{html}"
    );

    // The viewer's pair page lists both attempts (its static export holds the page's data).
    let o = sb.bench(&["view", "quickstart.toml", "--static", "view"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let pages = files_under(&sb.path("view"));
    let roman = pages
        .iter()
        .find(|(name, _)| name.contains("pair") && name.contains("roman") && name.contains("fixer"))
        .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
        .expect("the roman x fixer pair page");
    assert!(
        roman.contains(r#""attempts":[{"attempt":1,"deadline_s":3.0,"outcome":"timed out""#)
            && roman.contains(r#""selected_by":"timed-out""#),
        "{roman}"
    );

    // status --node shows both attempts.
    let o = sb.bench(&[
        "status",
        "quickstart.toml",
        "--node",
        "solve/quickstart__roman-1/fixer/0",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("status json");
    let attempts = v["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2, "{v}");
    assert_eq!(attempts[0]["outcome"], "timed out");
    assert_eq!(attempts[0]["replaced_by"]["timeout_ms"], 60000);
    assert_eq!(attempts[0]["replaced_by"]["selected_by"], "timed-out");
    assert_eq!(attempts[1]["outcome"], "counts");

    // Nothing is left to select: said, and nothing runs.
    let o = apply(&sb, &["--rerun", "timed-out,errored"]);
    assert!(
        stderr(&o).contains("--rerun timed-out,errored: no stored pair of"),
        "{}",
        stderr(&o)
    );
    assert!(solves_run(&o).is_empty(), "{}", stderr(&o));

    // A team's pairs all run again; with a deadline shorter than its sleep, roman times out
    // again, and the latest attempt counts although the one before resolved it.
    let o = apply(&sb, &["--rerun", "fixer", "--timeout", "5s"]);
    let ran = solves_run(&o);
    assert_eq!(ran.len(), 8, "{ran:?}");
    assert!(ran.iter().all(|p| p.ends_with("/fixer")), "{ran:?}");
    let report = sb.report_json();
    let fixer = fixer_reruns(&report);
    assert_eq!(fixer["pairs"], 8, "{fixer}");
    let roman = fixer["rerun_pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["task"] == "quickstart__roman-1")
        .unwrap()["attempts"]
        .clone();
    let outcomes: Vec<&serde_json::Value> = roman
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["outcome"])
        .collect();
    assert_eq!(
        outcomes,
        [
            &serde_json::json!("timed out"),
            &serde_json::json!("resolved"),
            &serde_json::Value::Null
        ],
        "{roman}"
    );
    assert!(timed_out(&sb).contains("quickstart__roman-1/fixer"));

    // gc keeps what the earlier attempts need: their patches and their grades.
    let o = sb.bench(&["gc", "--delete", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let store = bench::store::Store::open_existing(&sb.path(".bench")).unwrap();
    let manifest = fs_err::canonicalize(sb.manifest()).unwrap();
    let key = store.load_index(&manifest).nodes["solve/quickstart__roman-1/fixer/0"].clone();
    let all = store.attempts(&key).unwrap().expect("attempts kept");
    assert_eq!(all.earlier.len(), 2);
    for a in &all.earlier {
        for d in a.record.blob_digests().unwrap() {
            assert!(
                store.blob_path(&d).is_file(),
                "blob {d} of an attempt was collected"
            );
        }
        let g = a.grade_key.as_ref().expect("graded");
        assert!(
            store.has_action(g),
            "the grade {g} of an attempt was collected"
        );
    }
    // ... and a plain apply after all that is a no-op with the same report.
    let report_md = sb.read("reports/quickstart/report.md");
    let o = apply(&sb, &[]);
    assert!(solves_run(&o).is_empty(), "{}", stderr(&o));
    assert_eq!(sb.read("reports/quickstart/report.md"), report_md);
}

#[test]
fn a_rerun_word_that_is_no_outcome_or_team_is_refused_naming_what_is_accepted() {
    let sb = Sandbox::quickstart();
    let o = sb.bench(&["apply", "quickstart.toml", "--rerun", "timedout"]);
    assert!(!o.status.success());
    let err = flat(&stderr(&o));
    assert!(
        err.contains("`timedout` is neither an outcome nor a team")
            && err.contains("timed-out, errored, failed or a team (fixer, nop, oracle)"),
        "{err}"
    );
    let o = sb.bench(&["apply", "quickstart.toml", "--timeout", "1h"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--rerun"), "{}", stderr(&o));
    let o = sb.bench(&[
        "apply",
        "quickstart.toml",
        "--rerun",
        "failed",
        "--timeout",
        "soon",
    ]);
    assert!(!o.status.success());
    assert!(
        flat(&stderr(&o)).contains("--timeout \"soon\""),
        "{}",
        stderr(&o)
    );
    // Nothing ran: no store was even written to.
    assert!(!sb.path(".bench/attempts").exists());
}
