//! End-to-end tests of the engine on the bundled quickstart, driving the real binary.

mod common;

use common::*;

fn expected_outcomes(sb: &Sandbox) -> Vec<(String, [bool; 3])> {
    sb.read("quickstart/EXPECTED.md")
        .lines()
        .filter(|l| l.starts_with("| quickstart__"))
        .filter_map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            (cells.len() == 4).then(|| {
                (
                    cells[0].to_string(),
                    [cells[1] == "yes", cells[2] == "yes", cells[3] == "yes"],
                )
            })
        })
        .collect()
}

fn team<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["teams"]
        .as_array()
        .expect("teams")
        .iter()
        .find(|t| t["name"] == name)
        .expect("team in report")
}

#[test]
fn quickstart_runs_then_reruns_nothing() {
    let sb = Sandbox::quickstart();
    let plan = sb.bench(&["plan", "quickstart.toml"]);
    assert_eq!(plan.status.code(), Some(2), "{}", stdout(&plan));

    let first = sb.bench(&["apply", "quickstart.toml"]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(stdout(&first).contains("report: "), "names its report");

    let report = sb.report_json();
    assert_eq!(team(&report, "oracle")["resolved"], 8);
    assert_eq!(team(&report, "nop")["resolved"], 0);
    assert_eq!(team(&report, "fixer")["resolved"], 3);
    assert_eq!(report["gold"]["valid"].as_array().unwrap().len(), 8);

    // Per task, the verdicts match EXPECTED.md.
    let md = sb.read("reports/quickstart/report.md");
    // The error bars: Wilson and clustered intervals, the headline's, the paired difference
    // with the baseline and Holm's p.
    for needle in [
        "| 95% CI (headline) | 95% CI (Wilson) | 95% CI (clustered, 8 repos) |",
        "## Against the baseline `nop`",
        "| fixer − nop | +37.5 pts |",
        "p (Holm, 2 comparisons)",
    ] {
        assert!(md.contains(needle), "report.md lacks {needle:?}:\n{md}");
    }
    let expected = expected_outcomes(&sb);
    assert_eq!(expected.len(), 8);
    for (task, [oracle, nop, fixer]) in expected {
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| {task} |")))
            .expect("task row");
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        let yes = |c: &str| c == "resolved";
        assert_eq!(
            [yes(cells[1]), yes(cells[2]), yes(cells[3])],
            [oracle, nop, fixer],
            "{task}"
        );
    }

    // A second apply runs nothing and rewrites the same bytes; plan exits 0.
    let md_before = md.clone();
    let second = sb.bench(&["apply", "quickstart.toml"]);
    assert!(second.status.success());
    assert!(executed(&second).is_empty(), "{}", stderr(&second));
    assert_eq!(sb.read("reports/quickstart/report.md"), md_before);
    let plan = sb.bench(&["plan", "quickstart.toml"]);
    assert_eq!(plan.status.code(), Some(0), "{}", stdout(&plan));
    assert!(stdout(&plan).contains("nothing to run"));

    // A deleted report is rewritten from the store without running anything.
    fs_err::remove_file(sb.path("reports/quickstart/report.md")).unwrap();
    let third = sb.bench(&["apply", "quickstart.toml"]);
    assert!(executed(&third).is_empty());
    assert_eq!(sb.read("reports/quickstart/report.md"), md_before);

    let status = sb.bench(&["status", "quickstart.toml"]);
    assert!(stdout(&status).contains("report: "), "{}", stdout(&status));
}

#[test]
fn edits_rerun_exactly_what_they_touch() {
    let sb = Sandbox::quickstart();
    assert!(sb.bench(&["apply", "quickstart.toml"]).status.success());

    // One team's setting: only that team's solves (and the grades of its patches) are planned.
    sb.edit(
        "quickstart.toml",
        "worker = \"fixer\"",
        "worker = \"fixer@model-b\"",
    );
    let to_run = plan_to_run(&sb);
    assert!(!to_run.is_empty());
    for a in &to_run {
        assert!(
            a.contains("/fixer/") || a == "report",
            "unexpected rerun of {a}"
        );
    }
    assert_eq!(to_run.iter().filter(|a| a.starts_with("solve/")).count(), 8);
    let explain = sb.bench(&["plan", "--explain", "quickstart.toml"]);
    assert!(
        stdout(&explain).contains("team fixer: worker \"fixer\" -> \"fixer@model-b\""),
        "{}",
        stdout(&explain)
    );
    let run = sb.bench(&["apply", "quickstart.toml"]);
    let ran = executed(&run);
    assert_eq!(ran.iter().filter(|a| a.starts_with("solve/")).count(), 8);
    // The fixer writes the same patches for another model: their grades are reused.
    assert!(!ran.iter().any(|a| a.starts_with("grade/")), "{ran:?}");

    // Adding a team runs only its nodes.
    sb.edit(
        "quickstart.toml",
        "teams = [\"oracle\", \"nop\", \"fixer\"]",
        "teams = [\"oracle\", \"nop\", \"fixer\", \"fixer2\"]",
    );
    sb.append(
        "quickstart.toml",
        "\n[teams.fixer2]\ntopology = \"solo\"\nworker = \"fixer@model-c\"\n",
    );
    let to_run = plan_to_run(&sb);
    for a in &to_run {
        assert!(
            a.contains("/fixer2/") || a == "report",
            "unexpected rerun of {a}"
        );
    }
    assert!(sb.bench(&["apply", "quickstart.toml"]).status.success());

    // A grading-only setting reruns grades, not solves.
    sb.edit(
        "quickstart.toml",
        "needs = [\"solve\"]\ntimeout = \"2m\"",
        "needs = [\"solve\"]\ntimeout = \"3m\"",
    );
    let to_run = plan_to_run(&sb);
    assert!(
        to_run
            .iter()
            .all(|a| a.starts_with("grade/") || a == "report"),
        "{to_run:?}"
    );
    assert_eq!(
        to_run.iter().filter(|a| a.starts_with("grade/")).count(),
        32
    );
    let explain = sb.bench(&["plan", "--explain", "quickstart.toml"]);
    assert!(
        stdout(&explain).contains("timeout_ms 120000 -> 180000"),
        "{}",
        stdout(&explain)
    );

    // A sample setting shows in the explanation.
    sb.edit("quickstart.toml", "seed = 7", "seed = 8");
    let explain = sb.bench(&["plan", "--explain", "quickstart.toml"]);
    assert!(
        stdout(&explain).contains("stage sample: seed 7 -> 8"),
        "{}",
        stdout(&explain)
    );
}

#[test]
fn three_mistakes_three_diagnostics() {
    let sb = Sandbox::quickstart();
    sb.edit("quickstart.toml", "seed = 7", "sed = 7");
    sb.edit(
        "quickstart.toml",
        "needs = [\"gold\"]",
        "needs = [\"golden\"]",
    );
    sb.edit("quickstart.toml", "worker = \"nop\"", "worker = \"nopp\"");
    let o = sb.bench(&["validate", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("has 3 problems"), "{err}");
    for needle in [
        "quickstart.toml:22:1: unknown key `sed` in stage `sample`",
        "did you mean `seed`?",
        "stage `solve` needs unknown stage `golden`",
        "did you mean `gold`?",
        "unknown harness `nopp`",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
    }
}

#[test]
fn interrupted_apply_resumes_without_rerunning_completed_nodes() {
    let sb = Sandbox::quickstart();
    // Slow the fixer down so the kill lands mid-run.
    sb.edit(
        "quickstart.toml",
        "command = \"python3 {{script}}\"",
        "command = \"sleep 1; python3 {{script}}\"",
    );
    let mut child = std::process::Command::new(bench_bin())
        .args(["apply", "quickstart.toml"])
        .current_dir(sb.dir.path())
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let actions = sb.path(".bench/actions");
    let count = || {
        walk(&actions)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .count()
    };
    let start = std::time::Instant::now();
    while count() < 12 && start.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let done_before: std::collections::BTreeSet<String> = walk(&actions)
        .into_iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    assert!(!done_before.is_empty());

    let resumed = sb.bench(&["apply", "quickstart.toml"]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    // No node completed before the kill ran again.
    let runs: Vec<serde_json::Value> = walk(&sb.path(".bench/runs"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| serde_json::from_str(&fs_err::read_to_string(p).unwrap()).unwrap())
        .collect();
    let last = runs
        .iter()
        .max_by_key(|r| r["started_at"].as_str().unwrap().to_string())
        .unwrap();
    for (addr, n) in last["nodes"].as_object().unwrap() {
        if n["status"] == "done" {
            let key = n["key"].as_str().unwrap();
            assert!(
                !done_before.iter().any(|d| key.ends_with(d.as_str())),
                "{addr} ran twice"
            );
        }
    }
    // The results equal an uninterrupted run's.
    let clean = Sandbox::quickstart();
    clean.edit(
        "quickstart.toml",
        "command = \"python3 {{script}}\"",
        "command = \"sleep 1; python3 {{script}}\"",
    );
    assert!(clean.bench(&["apply", "quickstart.toml"]).status.success());
    // Equal except for measured wall times.
    let strip = |mut v: serde_json::Value| {
        for t in v["teams"].as_array_mut().unwrap() {
            t["wall_time_median_s"] = serde_json::Value::Null;
        }
        v
    };
    assert_eq!(strip(sb.report_json()), strip(clean.report_json()));
    // report.md too, but for its cost-and-time section (measured wall times).
    let without_times = |md: String| {
        let mut skip = false;
        md.lines()
            .filter(|l| {
                if l.starts_with("## ") {
                    skip = *l == "## Cost and time";
                }
                !skip
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        without_times(sb.read("reports/quickstart/report.md")),
        without_times(clean.read("reports/quickstart/report.md"))
    );
    // No workspace is left behind.
    let left = walk(&sb.path(".bench/tmp"));
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_second_apply_on_a_locked_store_names_the_holder() {
    let sb = Sandbox::quickstart();
    let store = sb.path(".bench");
    bench::store::Store::open(&store).unwrap();
    let _lock = bench::store::StoreLock::acquire(&store, "bench apply other.toml").unwrap();
    let o = sb.bench(&["apply", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("in use by pid {}", std::process::id())),
        "{err}"
    );
    assert!(err.contains("bench apply other.toml"), "{err}");
}

/// The orphaned records `plan --json` counts over its stages, and the records `gc --json`
/// (a dry run, with `extra` arguments) would remove.
fn orphaned_and_collectable(sb: &Sandbox, extra: &[&str]) -> (usize, usize) {
    let plan = sb.bench(&["plan", "--json", "quickstart.toml"]);
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).expect("plan json");
    let orphaned = plan["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["orphaned"].as_u64().unwrap() as usize)
        .sum::<usize>();
    assert_eq!(
        plan["orphaned"].as_array().unwrap().len(),
        orphaned,
        "{plan}"
    );
    let gc = sb.bench(&[&["gc", "--json"], extra, &["quickstart.toml"]].concat());
    assert!(gc.status.success(), "{}", stderr(&gc));
    let gc: serde_json::Value = serde_json::from_slice(&gc.stdout).unwrap();
    assert_eq!(gc["dry_run"], true);
    (orphaned, gc["removed_actions"].as_array().unwrap().len())
}

/// Issue 49, item 7: gc keeps what the last N applies of a manifest used (`[store] keep_runs`,
/// 3 by default; `gc --keep-runs N` for one collection), so undoing an edit pays nothing; and
/// plan's orphaned count is what gc would remove.
#[test]
fn gc_keeps_the_last_applies_and_plan_counts_what_it_would_remove() {
    let sb = Sandbox::quickstart();
    let (v1, v2) = (
        "command = \"python3 {{script}}\"",
        "command = \"python3 {{script}} --quiet\"",
    );
    assert!(sb.bench(&["apply", "quickstart.toml"]).status.success());
    sb.edit("quickstart.toml", v1, v2);
    assert!(sb.bench(&["apply", "quickstart.toml"]).status.success());
    // The first version's results are the previous apply's: kept, and not orphaned.
    assert_eq!(orphaned_and_collectable(&sb, &[]), (0, 0));
    let real = sb.bench(&["gc", "--delete", "quickstart.toml"]);
    assert!(real.status.success(), "{}", stderr(&real));
    // Undoing the edit runs nothing.
    sb.edit("quickstart.toml", v2, v1);
    let o = sb.bench(&["apply", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(executed(&o), Vec::<String>::new(), "{}", stderr(&o));

    // Keeping one apply: the second version's results (the fixer's solves and grades, the
    // report) go, and plan counts exactly them, whether N comes from the manifest or the flag.
    let (_, by_flag) = orphaned_and_collectable(&sb, &["--keep-runs", "1"]);
    assert!(by_flag >= 8, "{by_flag}");
    sb.append("quickstart.toml", "\n[store]\nkeep_runs = 1\n");
    assert_eq!(orphaned_and_collectable(&sb, &[]), (by_flag, by_flag));
    let explain = sb.bench(&["plan", "--explain", "quickstart.toml"]);
    let listed = stdout(&explain)
        .lines()
        .filter(|l| l.contains("orphaned (`bench gc --delete` would remove it)"))
        .count();
    assert_eq!(listed, by_flag, "{}", stdout(&explain));
    let real = sb.bench(&["gc", "--delete", "quickstart.toml"]);
    assert!(real.status.success(), "{}", stderr(&real));
    assert_eq!(orphaned_and_collectable(&sb, &[]), (0, 0));
    // What the manifest reaches is intact; the deleted version runs again.
    let plan = sb.bench(&["plan", "quickstart.toml"]);
    assert_eq!(plan.status.code(), Some(0), "{}", stdout(&plan));
    sb.edit("quickstart.toml", v1, v2);
    let o = sb.bench(&["apply", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!executed(&o).is_empty(), "{}", stderr(&o));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in fs_err::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn ctrl_c_stops_cleans_up_and_resumes() {
    let sb = Sandbox::quickstart();
    sb.edit(
        "quickstart.toml",
        "command = \"python3 {{script}}\"",
        "command = \"sleep 30; python3 {{script}}\"",
    );
    let child = std::process::Command::new(bench_bin())
        .args(["apply", "quickstart.toml"])
        .current_dir(sb.dir.path())
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until a fixer (sleeping) is running.
    let tmp = sb.path(".bench/tmp");
    let start = std::time::Instant::now();
    while walk(&tmp).iter().all(|p| !p.ends_with("prompt.md"))
        && start.elapsed() < std::time::Duration::from_secs(60)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let t0 = std::time::Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(20),
        "the sleeping agent was killed"
    );
    // The counts say what really ran: the cancelled solves are counted as such, and fewer
    // nodes ended than the 58 the quickstart has.
    let err = String::from_utf8_lossy(&out.stderr);
    let summary = err
        .lines()
        .find(|l| l.starts_with("summary  "))
        .unwrap_or_else(|| {
            panic!(
                "no summary:
{err}"
            )
        });
    assert!(summary.contains("cancelled"), "{summary}");
    let ended: u64 = summary
        .split([';', ',', ':'])
        .filter_map(|p| p.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    assert!(ended < 58, "{summary}");
    assert!(err.contains("interrupted: completed work is kept"), "{err}");
    assert!(
        walk(&tmp).is_empty(),
        "workspaces removed: {:?}",
        walk(&tmp)
    );
    // The run log says interrupted; the next apply finishes the work.
    sb.edit(
        "quickstart.toml",
        "command = \"sleep 30; python3 {{script}}\"",
        "command = \"python3 {{script}}\"",
    );
    let again = sb.bench(&["apply", "quickstart.toml"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(
        sb.bench(&["plan", "quickstart.toml"]).status.code(),
        Some(0)
    );
}

/// `bench plan` shows, before anything runs, what the comparison with the baseline can detect
/// with the exact McNemar test the report decides with, and with `--detect` the tasks needed;
/// the figures are checked against an independent enumeration with scipy (binomtest and binom,
/// brentq for the detectable difference, a scan over n for the tasks needed), run here as the
/// oracle.
#[test]
fn plan_shows_the_power_of_the_comparison_before_anything_runs() {
    let sb = Sandbox::quickstart();
    sb.edit(
        "quickstart.toml",
        "teams = [\"oracle\", \"nop\", \"fixer\"]",
        "teams = [\"oracle\", \"nop\", \"fixer\"]\nlimit = 6",
    );
    let text = sb.bench(&["plan", "quickstart.toml", "--detect", "5pts"]);
    assert_eq!(text.status.code(), Some(2), "{}", stderr(&text));
    let out = stdout(&text);
    for needle in [
        // Six discordant pairs are the fewest exact McNemar can reject with: 6 tasks give at
        // most 2^-6 = 1.6% power.
        "power vs baseline `nop` (6 paired tasks, baseline rate 50% assumed; set it with --baseline-rate; exact McNemar, alpha 0.05, two-sided, 80% power): too few tasks: no improvement on a 50% baseline reaches 80% power (even +50.0 pts has 1.6%)",
        "power: detecting +5.0 pts needs 1606 paired tasks (the plan has 6)",
        "power method: exact enumeration of the discordant pairs and the team's wins under the exact McNemar test",
        "an assumption, not a bound",
    ] {
        assert!(out.contains(needle), "plan lacks {needle:?}:\n{out}");
    }
    // The unedited quickstart's 8 tasks cannot reach 80% on a 50% baseline (the normal
    // approximation promised +49.8 points; exact McNemar has 14.5% there).
    sb.edit("quickstart.toml", "\nlimit = 6", "");
    // The listing of docs/reports.md ("Reading the error bars").
    let eight = stdout(&sb.bench(&["plan", "quickstart.toml", "--detect", "5pts"]));
    let readme = fs_err::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/reports.md"))
        .expect("docs/reports.md");
    for line in [
        "  power vs baseline `nop` (8 paired tasks, baseline rate 50% assumed; set it with --baseline-rate; exact McNemar, alpha 0.05, two-sided, 80% power): too few tasks: no improvement on a 50% baseline reaches 80% power (even +50.0 pts has 14.5%)\n",
        "  power: detecting +5.0 pts needs 1606 paired tasks (the plan has 8)\n",
    ] {
        assert!(eight.contains(line), "{eight}");
        assert!(
            readme.contains(&format!("  {line}")),
            "docs/reports.md lacks {line:?}"
        );
    }
    let o = sb.bench(&[
        "plan",
        "quickstart.toml",
        "--json",
        "--detect",
        "30",
        "--baseline-rate",
        "5%",
    ]);
    let plan: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("plan JSON");
    let power = &plan["power"];
    assert_eq!(power["baseline"], "nop");
    assert_eq!(power["tasks"], 8);
    assert_eq!(power["baseline_rate"], 0.05);
    assert_eq!(power["baseline_rate_given"], true);
    assert_eq!(power["detect"], 0.3);
    assert_eq!(power["test"], "exact McNemar, alpha 0.05, two-sided");
    let mdd = power["min_detectable_difference"].as_f64().expect("mdd");
    let needed = power["tasks_needed"].as_u64().expect("tasks needed");
    let bad = sb.bench(&["plan", "quickstart.toml", "--detect", "5x"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("`--detect 5x` is not a number of percentage points"));

    let oracle = r#"
import sys
from scipy import optimize, stats
n, p0, d = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
def power(m, delta):
    p1 = p0 + delta
    p10, p01 = p1 * (1 - p0), p0 * (1 - p1)
    q = p10 + p01
    total = 0.0
    for k in range(1, m + 1):
        for w in range(k + 1):
            if stats.binomtest(w, k, 0.5).pvalue <= 0.05:
                total += stats.binom.pmf(k, m, q) * stats.binom.pmf(w, k, p10 / q)
    return total
steps = [(1 - p0) * i / 200 for i in range(201)]
i = next(i for i in range(1, 201) if power(n, steps[i]) >= 0.8)
mdd = optimize.brentq(lambda x: power(n, x) - 0.8, steps[i - 1], steps[i], xtol=1e-15)
need = next(m for m in range(1, 500) if power(m, d) >= 0.8)
print(repr(mdd), need)
"#;
    let py = std::process::Command::new("python3")
        .args(["-c", oracle, "8", "0.05", "0.3"])
        .output();
    match py {
        Ok(py) if py.status.success() => {
            let line = String::from_utf8_lossy(&py.stdout).to_string();
            let mut parts = line.split_whitespace();
            let want_mdd: f64 = parts.next().and_then(|x| x.parse().ok()).expect("mdd");
            let want_n: u64 = parts.next().and_then(|x| x.parse().ok()).expect("n");
            assert!((mdd - want_mdd).abs() < 1e-9, "{mdd} vs scipy {want_mdd}");
            assert_eq!(needed, want_n);
        }
        _ => {
            assert!(!ci(), "python3 with scipy is required under CI=true");
            eprintln!("note: scipy not available; the power figures are not cross-checked here");
        }
    }
}

/// Issue 30: `plan --explain` names the task field an edit changed (not a digest against a
/// digest), with a line diff of the text; `plan` prices teams that drive no model as free, as
/// the report does; the cost chart's labels of two teams on one point do not overlap.
#[test]
fn explain_names_the_changed_task_field_and_free_teams_are_priced() {
    let sb = Sandbox::quickstart();
    sb.edit(
        "quickstart.toml",
        "teams = [\"oracle\", \"nop\", \"fixer\"]",
        "teams = [\"oracle\", \"nop\", \"fixer\", \"twin\", \"named\"]",
    );
    sb.append(
        "quickstart.toml",
        "\n[teams.twin]                   # the fixer again: same cost, same rate\ntopology = \"solo\"\nworker = \"fixer\"\n\n[teams.named]                  # the fixer with a model named: its cost is unknown\ntopology = \"solo\"\nworker = \"fixer@other\"\n",
    );
    let plan = sb.bench(&["plan", "quickstart.toml"]);
    let out = stdout(&plan);
    for team in ["oracle", "nop", "fixer", "twin"] {
        let line = format!("  team {team}: 8 to run, free (drives no model)");
        assert!(out.contains(&line), "plan lacks {line:?}:\n{out}");
    }
    assert!(
        out.contains(
            "expected spend: at least $0.0000 for 40 solves (no stored cost of team named)"
        ),
        "{out}"
    );
    assert!(
        out.contains("  team named: 8 to run, no stored cost"),
        "{out}"
    );
    let run = sb.bench(&["apply", "quickstart.toml"]);
    assert!(run.status.success(), "{}", stderr(&run));

    // Two teams with the same cost and rate: their labels in the cost chart do not overlap.
    let html = sb.read("reports/quickstart/report.html");
    let label = |team: &str| -> (f64, f64) {
        let at = html
            .find(&format!("\">{team}</text>"))
            .or_else(|| html.find(&format!("\">{team} ★</text>")))
            .unwrap_or_else(|| panic!("no cost-chart label of {team}"));
        let start = html[..at].rfind("<text x=\"").expect("text element") + 9;
        let attrs = &html[start..at];
        let x: f64 = attrs.split('"').next().unwrap().parse().unwrap();
        let y: f64 = attrs
            .split("y=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap()
            .parse()
            .unwrap();
        (x, y)
    };
    let (fx, fy) = label("fixer");
    let (tx, ty) = label("twin");
    assert!(
        (fy - ty).abs() >= 12.0 || (fx - tx).abs() >= 40.0,
        "labels overlap: fixer at ({fx}, {fy}), twin at ({tx}, {ty})"
    );
    let md = sb.read("reports/quickstart/report.md");
    assert!(md.contains("8 of 8 (free: no model)"), "{md}");
    // The same script with a model named records no cost: unknown, not "≥ $0.00".
    let row = md
        .lines()
        .find(|l| l.starts_with("| named | ") && l.contains(" of 8"))
        .expect("named's cost row");
    assert_eq!(
        row.split(" | ").nth(1),
        Some("unknown"),
        "named's mean cost: {row}"
    );
    assert!(
        row.contains("0 of 8 (none recorded a cost or priced tokens)"),
        "{row}"
    );
    assert!(!md.contains("≥ $0.00"), "{md}");

    // A statement edit: the task and the field are named, old and new shortened, the lines diffed.
    let task = "quickstart/tasks/quickstart__roman-1/task.toml";
    sb.edit(
        task,
        "`to_roman` produces numerals with four repeated symbols where a subtractive",
        "`to_roman` prints numerals with four repeated symbols where a subtractive",
    );
    let explain = stdout(&sb.bench(&["plan", "--explain", "quickstart.toml"]));
    for needle in [
        "      task quickstart__roman-1: problem_statement changed: \"to_roman() never uses the subtractive forms\"… -> \"to_roman() never uses the subtractive forms\"…\n",
        "        - `to_roman` produces numerals with four repeated symbols where a subtractive\n",
        "        + `to_roman` prints numerals with four repeated symbols where a subtractive\n",
    ] {
        assert!(
            explain.contains(needle),
            "explain lacks {needle:?}:\n{explain}"
        );
    }
    assert!(
        !explain.contains("task \""),
        "a digest for a reason:\n{explain}"
    );
}

/// The `summary` line of a plain apply: stage -> (cached, done, shared).
fn summary_counts(err: &str) -> std::collections::BTreeMap<String, [u64; 3]> {
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("summary  "))
        .unwrap_or_else(|| panic!("no summary line in:\n{err}"));
    line.split("; ")
        .map(|part| {
            let (stage, counts) = part.split_once(": ").expect("stage: counts");
            let mut c = [0; 3];
            for item in counts.split(", ") {
                let (n, what) = item.split_once(' ').expect("N what");
                let i = match what {
                    "cached" => 0,
                    "done" => 1,
                    "shared" => 2,
                    _ => continue,
                };
                c[i] = n.parse().expect("a count");
            }
            (stage.to_string(), c)
        })
        .collect()
}

/// Apply's counts against the plan's, for the stages the plan counts exactly.
fn assert_counts_equal_the_plan(plan: &serde_json::Value, err: &str) -> usize {
    let summary = summary_counts(err);
    let mut exact = 0;
    for s in plan["stages"].as_array().expect("stages") {
        let stage = s["stage"].as_str().expect("stage");
        let [cached, done, shared] = summary[stage];
        let want = |k: &str| s[k].as_u64().expect("count");
        if s["estimated"] == true {
            assert!(
                done + shared <= want("to_run") + want("shared"),
                "{stage}: {err}"
            );
            continue;
        }
        exact += 1;
        assert_eq!(
            (cached, done, shared),
            (want("cached"), want("to_run"), want("shared")),
            "{stage}: apply's summary against the plan's counts\n{err}"
        );
    }
    exact
}

#[test]
fn the_quickstart_apply_ends_with_the_headline_table_and_the_plans_counts() {
    let sb = Sandbox::quickstart();
    let plan: serde_json::Value =
        serde_json::from_slice(&sb.bench(&["plan", "--json", "quickstart.toml"]).stdout)
            .expect("plan JSON");
    let o = sb.bench(&["apply", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    // The headline table, then the report's path.
    assert!(
        lines[0].starts_with("team ") && lines[0].contains("resolved"),
        "{out}"
    );
    assert!(
        lines[0].contains("rate [95% CI]") && lines[0].ends_with("cost"),
        "{out}"
    );
    let row = |team: &str| {
        lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(team))
            .unwrap_or_else(|| panic!("no row for {team}:\n{out}"))
            .split_whitespace()
            .nth(1)
            .expect("resolved")
            .to_string()
    };
    assert_eq!(row("oracle"), "8/8");
    assert_eq!(row("nop"), "0/8");
    assert_eq!(row("fixer"), "3/8");
    assert!(lines[1].starts_with("oracle "), "{out}");
    assert!(
        lines[4].starts_with("report: ") && lines[4].ends_with("reports/quickstart/report.md"),
        "{out}"
    );
    // The plan's totals come first; the counts at the end are the plan's.
    let err = stderr(&o);
    let plan_line = err.lines().position(|l| l.starts_with("plan    "));
    let first_start = err.lines().position(|l| l.starts_with("start   "));
    assert!(plan_line.is_some() && plan_line < first_start, "{err}");
    assert!(err.contains("gold 8 to run, 0 cached"), "{err}");
    assert_eq!(assert_counts_equal_the_plan(&plan, &err), 2, "sample, gold");

    // A grading edit: the plan knows every patch, so its grade counts are exact, sharing
    // included, and apply's equal them.
    sb.edit(
        "quickstart.toml",
        "needs = [\"solve\"]\ntimeout = \"2m\"",
        "needs = [\"solve\"]\ntimeout = \"3m\"",
    );
    let plan: serde_json::Value =
        serde_json::from_slice(&sb.bench(&["plan", "--json", "quickstart.toml"]).stdout)
            .expect("plan JSON");
    let grade = plan["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .find(|s| s["stage"] == "grade")
        .expect("grade stage")
        .clone();
    assert_eq!(grade["estimated"], false, "{plan}");
    assert!(grade["shared"].as_u64().expect("shared") > 0, "{plan}");
    let o = sb.bench(&["apply", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(assert_counts_equal_the_plan(&plan, &stderr(&o)), 4);
    assert!(
        stdout(&o)
            .lines()
            .next()
            .is_some_and(|l| l.starts_with("team "))
    );
}

#[test]
fn status_node_shows_a_nodes_state_files_and_inputs() {
    let sb = Sandbox::quickstart();
    assert!(sb.bench(&["apply", "quickstart.toml"]).status.success());
    let address = plan_to_run(&Sandbox::quickstart())
        .into_iter()
        .find(|a| a.starts_with("gold/"))
        .expect("a gold node");
    let o = sb.bench(&["status", "quickstart.toml", "--node", &address]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for needle in [
        format!("node {address} (stage gold)"),
        "state: cached".to_string(),
        "key: ".to_string(),
        "result: resolved".to_string(),
        "inputs:".to_string(),
    ] {
        assert!(out.contains(&needle), "lacks {needle:?}:\n{out}");
    }
    let o = sb.bench(&["status", "quickstart.toml", "--node", &address, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["state"], "cached");
    assert_eq!(v["last_apply"]["status"], "done");
    // The inputs are the job the key was computed from, never null.
    assert!(v["inputs"].is_object(), "{}", v["inputs"]);
    assert!(!out.contains("inputs: null"), "{out}");
    assert!(
        out.contains("\"schema\""),
        "the job's fields are shown:\n{out}"
    );
    for (_, path) in v["files"].as_object().expect("files") {
        assert!(std::path::Path::new(path.as_str().expect("path")).is_file());
    }
    let bad = sb.bench(&["status", "quickstart.toml", "--node", "gold/nope"]);
    assert_eq!(bad.status.code(), Some(1));
    let err = stderr(&bad);
    assert!(err.contains("has no node `gold/nope`"), "{err}");
    assert!(err.contains("gold/quickstart__"), "{err}");
}

#[test]
fn gc_without_arguments_uses_the_store_here_and_exits_0() {
    let sb = Sandbox::quickstart();
    let o = sb.bench(&["gc"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("nothing to collect"), "{}", stdout(&o));
    assert!(sb.bench(&["apply", "quickstart.toml"]).status.success());
    let o = sb.bench(&["gc", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("gc JSON");
    assert_eq!(v["dry_run"], true);
    assert!(
        v["removed_actions"].as_array().expect("list").is_empty(),
        "{v}"
    );
}

#[test]
fn apply_offline_says_what_cannot_be_reached_and_how_to_go_on() {
    let sb = Sandbox::quickstart();
    fs_err::write(
        sb.path("hub.toml"),
        "version = 1\nname = \"hub\"\n\n[backend]\nkind = \"local\"\n\n[datasets.live]\nsource = \"swe-bench-live/multilang\"\nrevision = \"3638632e8153a10ca422c1022bed79023084b5c9\"\n\n[stages.sample]\nkind = \"sample\"\ndataset = \"live\"\nlimit = 5\nseed = 7\n",
    )
    .expect("write");
    let o = bench_env(
        sb.dir.path(),
        &["apply", "hub.toml"],
        &[("HF_ENDPOINT", "http://bench-offline.invalid")],
    );
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    for needle in [
        "bench-offline.invalid cannot be reached (is this machine offline?)",
        "bench tasks FILE",
        "--store DIR",
        "HF_ENDPOINT",
    ] {
        assert!(err.contains(needle), "lacks {needle:?}:\n{err}");
    }
}

/// A reader that closes early (`bench plan --explain FILE | head -1`) ends bench quietly with the
/// exit code of a process killed by SIGPIPE, never a panic.
#[test]
fn stdout_closed_early_is_not_a_panic() {
    let sb = Sandbox::quickstart();
    for args in [
        &["plan", "--explain", "quickstart.toml"][..],
        &["status", "quickstart.toml"][..],
    ] {
        let mut child = std::process::Command::new(bench_bin())
            .args(args)
            .current_dir(sb.dir.path())
            .env_remove("BENCH_STORE")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The reading end is closed before bench writes a byte.
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(o.status.code(), Some(141), "{args:?}: {err}");
    }
}

/// A report that measured nothing says so, on screen and in report.md and report.html, rather
/// than printing `0/0 0.0% [0.0%, 100.0%]` as a result; `--strict` makes it an error. Two ways
/// to measure nothing: a contamination cutoff after every task, and every gold patch invalid.
#[test]
fn an_empty_result_is_a_warning_and_under_strict_an_error() {
    let sb = Sandbox::quickstart();
    sb.edit(
        "quickstart.toml",
        "since = 2026-07-01",
        "since = 2099-01-01",
    );
    let o = sb.bench(&["apply", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("warning:"), "{err}");
    assert!(err.contains("the sample drew no task"), "{err}");
    assert!(err.contains("since 2099-01-01"), "{err}");
    let md = sb.read("reports/quickstart/report.md");
    assert!(md.contains("**Warning: nothing was measured"), "{md}");
    let html = sb.read("reports/quickstart/report.html");
    assert!(html.contains("<strong>Warning:</strong> nothing was measured"));
    // Under --strict, the same (now cached) apply fails, and says why.
    let o = sb.bench(&["apply", "--strict", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--strict"), "{}", stderr(&o));
    let o = sb.bench(&[
        "apply",
        "--strict",
        "--message-format",
        "json",
        "quickstart.toml",
    ]);
    let last: serde_json::Value =
        serde_json::from_str(stdout(&o).lines().last().expect("events")).unwrap();
    assert_eq!(last["exit_code"], 1, "{last}");
    assert!(last["reports"][0]["warnings"][0].is_string(), "{last}");

    // Every gold patch invalid: each task's gold patch is replaced by one that changes nothing
    // the tests look at.
    let sb = Sandbox::quickstart();
    for e in fs_err::read_dir(sb.path("quickstart/tasks"))
        .unwrap()
        .flatten()
    {
        fs_err::write(
            e.path().join("gold.patch"),
            "--- /dev/null\n+++ b/NOTES\n@@ -0,0 +1 @@\n+nothing\n",
        )
        .unwrap();
    }
    let o = sb.bench(&["apply", "--strict", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("no gold patch passed its check (8 of 8 tasks"),
        "{err}"
    );
    // A real result has no warning.
    let sb = Sandbox::quickstart();
    let o = sb.bench(&["apply", "--strict", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning:"), "{}", stderr(&o));
}
