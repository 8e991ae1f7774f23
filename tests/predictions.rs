//! Predictions interop on the quickstart: a SWE-bench predictions file as a team (graded by
//! bench, cached like any solve, reported beside the other teams), and `bench export`.

mod common;

use common::*;

fn team<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["teams"]
        .as_array()
        .expect("teams")
        .iter()
        .find(|t| t["name"] == name)
        .expect("team in report")
}

#[test]
fn a_predictions_file_is_graded_beside_the_other_teams_and_exported() {
    let sb = Sandbox::quickstart();
    // Gold patches for two tasks (JSON lines), a junk patch for a third, none for the rest.
    let gold = |id: &str| sb.read(&format!("quickstart/tasks/{id}/gold.patch"));
    let preds = [
        serde_json::json!({"instance_id": "quickstart__roman-1", "model_name_or_path": "x", "model_patch": gold("quickstart__roman-1")}),
        serde_json::json!({"instance_id": "quickstart__semver-1", "model_name_or_path": "x", "model_patch": gold("quickstart__semver-1")}),
        serde_json::json!({"instance_id": "quickstart__slugify-1", "model_name_or_path": "x", "model_patch": "not a patch\n"}),
    ];
    fs_err::write(
        sb.path("preds.jsonl"),
        preds.iter().map(|p| format!("{p}\n")).collect::<String>(),
    )
    .unwrap();
    sb.edit(
        "quickstart.toml",
        "teams = [\"oracle\", \"nop\", \"fixer\"]",
        "teams = [\"oracle\", \"nop\", \"fixer\", \"imported\"]",
    );
    sb.append(
        "quickstart.toml",
        "\n[teams.imported]\ntopology = \"solo\"\nworker = \"preds\"\n\n[harnesses.preds]\nkind = \"predictions\"\npath = \"preds.jsonl\"\n",
    );
    let run = sb.bench(&["apply", "quickstart.toml"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let report = sb.report_json();
    assert_eq!(team(&report, "imported")["resolved"], 2, "{report}");
    assert_eq!(team(&report, "oracle")["resolved"], 8);
    let md = sb.read("reports/quickstart/report.md");
    assert!(md.contains("imported"));

    // Cached like any solve: a rerun runs nothing.
    assert!(plan_to_run(&sb).is_empty());
    // Reformatting the file changes no task's prediction: nothing reruns.
    let mut text = sb.read("preds.jsonl");
    text.push('\n');
    fs_err::write(sb.path("preds.jsonl"), &text).unwrap();
    assert!(plan_to_run(&sb).is_empty());
    // With the no-op memo in place (records past the racy window, one full no-op), an edit
    // of the predictions file still reaches the apply (the memo fingerprints the predictions).
    std::thread::sleep(std::time::Duration::from_millis(2200));
    let timed = || {
        let o = bench_env(
            sb.dir.path(),
            &["apply", "quickstart.toml"],
            &[("BENCH_TIMINGS", "1")],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        o
    };
    assert!(!stderr(&timed()).contains("no-op applied"));
    assert!(stderr(&timed()).contains("no-op applied"));
    // Editing one task's prediction reruns that task's imported solve only.
    fs_err::write(
        sb.path("preds.jsonl"),
        text.replace("not a patch", "still not a patch"),
    )
    .unwrap();
    let to_run = plan_to_run(&sb);
    assert!(
        to_run.contains(&"solve/quickstart__slugify-1/imported/0".to_string()),
        "{to_run:?}"
    );
    assert_eq!(
        to_run.iter().filter(|a| a.starts_with("solve/")).count(),
        1,
        "{to_run:?}"
    );
    assert!(
        to_run
            .iter()
            .all(|a| a.contains("/imported/") || a == "report"),
        "{to_run:?}"
    );
    let o = timed();
    assert!(!stderr(&o).contains("no-op applied"));
    assert!(
        executed(&o).contains(&"solve/quickstart__slugify-1/imported/0".to_string()),
        "{}",
        stderr(&o)
    );

    // A missing file is a manifest error naming it.
    sb.edit(
        "quickstart.toml",
        "path = \"preds.jsonl\"",
        "path = \"nope.jsonl\"",
    );
    let v = sb.bench(&["validate", "quickstart.toml"]);
    assert!(!v.status.success());
    assert!(stderr(&v).contains("nope.jsonl"), "{}", stderr(&v));
    sb.edit(
        "quickstart.toml",
        "path = \"nope.jsonl\"",
        "path = \"preds.jsonl\"",
    );

    // Export, several teams: one file per team (an evaluator keeps one prediction per
    // instance), SWE-bench format, sorted by instance id, deterministic.
    let e = sb.bench(&["export", "quickstart.toml", "--out", "out"]);
    assert!(e.status.success(), "{}", stderr(&e));
    let mut files: Vec<String> = fs_err::read_dir(sb.path("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files.len(), 4, "{files:?}");
    assert!(
        files.contains(&"oracle.jsonl".to_string()) && files.contains(&"nop.jsonl".to_string())
    );
    let rows = |text: &str| -> Vec<serde_json::Value> {
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    for f in &files {
        let team = f.trim_end_matches(".jsonl");
        let r = rows(&sb.read(&format!("out/{f}")));
        assert_eq!(r.len(), 8, "{f}");
        assert!(r.iter().all(|p| p["model_name_or_path"] == team));
        let ids: Vec<&str> = r
            .iter()
            .map(|p| p["instance_id"].as_str().unwrap())
            .collect();
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(ids, sorted, "one prediction per instance, sorted");
    }
    let oracle = rows(&sb.read("out/oracle.jsonl"));
    let oracle_roman = oracle
        .iter()
        .find(|r| r["instance_id"] == "quickstart__roman-1")
        .unwrap();
    assert_eq!(oracle_roman["model_patch"], gold("quickstart__roman-1"));
    assert!(
        rows(&sb.read("out/nop.jsonl"))
            .iter()
            .all(|r| r["model_patch"] == "")
    );
    // Without --out, the files go beside the manifest, and stdout lists them.
    let e = sb.bench(&["export", "quickstart.toml"]);
    assert!(e.status.success(), "{}", stderr(&e));
    assert!(
        stdout(&e).contains("predictions/quickstart/oracle.jsonl"),
        "{}",
        stdout(&e)
    );
    assert_eq!(
        sb.read("predictions/quickstart/oracle.jsonl"),
        sb.read("out/oracle.jsonl")
    );

    // One team: `--team` to a file or to stdout, byte-identical.
    let e = sb.bench(&[
        "export",
        "quickstart.toml",
        "--team",
        "oracle",
        "--out",
        "out.jsonl",
    ]);
    assert!(e.status.success(), "{}", stderr(&e));
    let out = sb.read("out.jsonl");
    assert_eq!(out, sb.read("out/oracle.jsonl"));
    let again = sb.bench(&["export", "quickstart.toml", "--team", "oracle"]);
    assert_eq!(stdout(&again), out);
    let bad = sb.bench(&["export", "quickstart.toml", "--team", "nosuch"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr(&bad).contains("no team `nosuch`"),
        "{}",
        stderr(&bad)
    );

    // The export reads back as a predictions team: oracle's patches resolve everything.
    fs_err::copy(sb.path("out.jsonl"), sb.path("preds.jsonl")).unwrap();
    let p = bench::datasets::predictions::load_predictions(&sb.path("preds.jsonl")).unwrap();
    assert_eq!(p.len(), 8, "one patch per id");
}
