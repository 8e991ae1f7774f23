//! The engine's promises, end to end through the binary: a cached result is never stale (every
//! input of a node is in its key, and an edit reruns what it touches), each key runs once per
//! apply, and the store verifies what it reads (an edited record or a corrupt blob is caught
//! and recomputed on the same apply, never a dead end).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use common::*;

/// The quickstart on its first three sampled tasks.
fn small() -> Sandbox {
    let sb = Sandbox::quickstart();
    sb.edit("quickstart.toml", "seed = 7", "seed = 7\nlimit = 3");
    sb
}

fn apply(sb: &Sandbox) -> std::process::Output {
    let o = sb.bench(&["apply", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

fn sampled(sb: &Sandbox) -> Vec<String> {
    let o = sb.bench(&["tasks", "--json", "quickstart.toml"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("tasks json");
    v[0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["instance_id"].as_str().unwrap().to_string())
        .collect()
}

fn store(sb: &Sandbox) -> bench::store::Store {
    bench::store::Store::open_existing(&sb.path(".bench")).expect("a store")
}

/// The key the index holds for an address.
fn key_at(sb: &Sandbox, address: &str) -> String {
    let manifest = fs_err::canonicalize(sb.manifest()).unwrap();
    store(sb).load_index(&manifest).nodes[address].clone()
}

fn record_path(sb: &Sandbox, key: &str) -> PathBuf {
    sb.path(&format!(".bench/actions/{}/{}.json", &key[..2], &key[2..]))
}

#[test]
fn a_gold_edit_reruns_the_gold_check_and_the_oracle_with_the_new_patch() {
    let sb = small();
    apply(&sb);
    let task = sampled(&sb)[0].clone();
    // The same fix, plus a new file: still resolves, but it is another patch.
    let mut gold = sb.read(&format!("quickstart/tasks/{task}/gold.patch"));
    gold.push_str("diff --git a/NOTE.txt b/NOTE.txt\nnew file mode 100644\n--- /dev/null\n+++ b/NOTE.txt\n@@ -0,0 +1 @@\n+edited gold\n");
    fs_err::write(
        sb.path(&format!("quickstart/tasks/{task}/gold.patch")),
        gold,
    )
    .unwrap();
    let to_run = plan_to_run(&sb);
    assert!(to_run.contains(&format!("gold/{task}")), "{to_run:?}");
    assert!(
        to_run.contains(&format!("solve/{task}/oracle/0")),
        "{to_run:?}"
    );
    assert!(
        to_run
            .iter()
            .all(|a| a.contains(&task) || a == "report" || !a.starts_with("solve/")),
        "{to_run:?}"
    );
    apply(&sb);
    let patch = sb.read(&format!(
        "reports/quickstart/artifacts/oracle/{task}/patch.diff"
    ));
    assert!(patch.contains("edited gold"), "{patch}");
    assert!(plan_to_run(&sb).is_empty());
}

#[test]
fn description_and_cutoff_edits_reach_the_report() {
    let sb = small();
    apply(&sb);
    sb.edit(
        "quickstart.toml",
        "description = \"oracle, nop and a scripted fixer on eight bundled local tasks\"",
        "description = \"a new description\"",
    );
    assert_eq!(plan_to_run(&sb), ["report"]);
    apply(&sb);
    assert!(
        sb.read("reports/quickstart/report.md")
            .contains("a new description")
    );
    // An earlier cutoff that admits no new task: only the sample and the report rerun.
    sb.edit(
        "quickstart.toml",
        "since = 2026-07-01",
        "since = 2026-06-01",
    );
    let to_run = plan_to_run(&sb);
    assert_eq!(to_run, ["report", "sample"], "{to_run:?}");
    apply(&sb);
    let md = sb.read("reports/quickstart/report.md");
    assert!(md.contains("2026-06-01"), "{md}");
}

#[test]
fn sub_second_timeouts_are_part_of_keys() {
    let sb = small();
    apply(&sb);
    sb.edit(
        "quickstart.toml",
        "needs = [\"solve\"]\ntimeout = \"2m\"",
        "needs = [\"solve\"]\ntimeout = \"2m 900ms\"",
    );
    let to_run = plan_to_run(&sb);
    assert!(to_run.iter().any(|a| a.starts_with("grade/")), "{to_run:?}");
    assert!(
        !to_run.iter().any(|a| a.starts_with("solve/")),
        "{to_run:?}"
    );
}

const PRICED: &str = r#"
[teams.priced]
topology = "solo"
worker = "priced@m-test"

[harnesses.priced]
kind = "command"
command = "python3 {{script}}"
script = "priced.py"
usage = "codex-jsonl"

[pricing."m-test"]
input = 1.0
cached_input = 0.5
output = 2.0
"#;

/// A team's entry in report.json.
fn team(sb: &Sandbox, name: &str) -> serde_json::Value {
    let r = sb.report_json();
    r["teams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no team {name} in {r}"))
        .clone()
}

fn team_cost(sb: &Sandbox, name: &str) -> f64 {
    team(sb, name)["cost"]["mean_usd"].as_f64().unwrap()
}

#[test]
fn a_price_edit_rerenders_the_report_and_reruns_no_solve() {
    let sb = small();
    fs_err::write(
        sb.path("priced.py"),
        "import json\nprint(json.dumps({'type': 'turn.completed', 'usage': {'input_tokens': 1000, 'cached_input_tokens': 200, 'output_tokens': 500}}))\n",
    )
    .unwrap();
    sb.edit(
        "quickstart.toml",
        "teams = [\"oracle\", \"nop\", \"fixer\"]",
        "teams = [\"oracle\", \"nop\", \"fixer\", \"priced\"]",
    );
    sb.append("quickstart.toml", PRICED);
    apply(&sb);
    let want = (800.0 * 1.0 + 200.0 * 0.5 + 500.0 * 2.0) / 1e6;
    assert!((team_cost(&sb, "priced") - want).abs() < 1e-12);
    sb.edit("quickstart.toml", "input = 1.0", "input = 3.0");
    assert_eq!(plan_to_run(&sb), ["report"]);
    let o = apply(&sb);
    assert_eq!(executed(&o), ["report"]);
    let want = (800.0 * 3.0 + 200.0 * 0.5 + 500.0 * 2.0) / 1e6;
    assert!((team_cost(&sb, "priced") - want).abs() < 1e-12);
}

#[test]
fn a_gold_check_and_the_oracle_grade_share_one_run() {
    let sb = small();
    let o = apply(&sb);
    let ran = executed(&o);
    for t in sampled(&sb) {
        assert!(ran.contains(&format!("gold/{t}")), "{ran:?}");
        // Same patch (the gold one), same task: the oracle's grade reuses the gold check's run.
        assert!(
            !ran.contains(&format!("grade/solve/{t}/oracle/0")),
            "{ran:?}"
        );
        assert_eq!(
            key_at(&sb, &format!("gold/{t}")),
            key_at(&sb, &format!("grade/solve/{t}/oracle/0"))
        );
    }
    // The plan counts distinct keys: an edit of the grade timeout reruns each distinct patch
    // once.
    sb.edit(
        "quickstart.toml",
        "needs = [\"solve\"]\ntimeout = \"2m\"",
        "needs = [\"solve\"]\ntimeout = \"3m\"",
    );
    let plan = sb.bench(&["plan", "quickstart.toml"]);
    assert!(stdout(&plan).contains("sharing a run"), "{}", stdout(&plan));
}

#[test]
fn an_edited_record_is_caught_and_recomputed() {
    let sb = small();
    apply(&sb);
    let t = &sampled(&sb)[0];
    let key = key_at(&sb, &format!("grade/solve/{t}/nop/0"));
    let path = record_path(&sb, &key);
    let text = fs_err::read_to_string(&path).unwrap();
    assert!(text.contains("\"resolved\": false"), "{text}");
    // Flip the verdict into another valid record.
    fs_err::write(
        &path,
        text.replacen("\"resolved\": false", "\"resolved\": true", 1),
    )
    .unwrap();
    let plan = sb.bench(&["plan", "quickstart.toml"]);
    let out = stdout(&plan);
    assert!(out.contains(&path.display().to_string()), "{out}");
    assert!(out.contains("checksum"), "{out}");
    let o = apply(&sb);
    assert!(executed(&o).contains(&format!("grade/solve/{t}/nop/0")));
    let nop = team(&sb, "nop");
    assert_eq!(nop["resolved"], 0, "{nop}");
    assert!(plan_to_run(&sb).is_empty());
}

/// Turns an unresolved grade record into a resolved one of the same size, its mtime set back:
/// only its ctime and its checksum tell.
fn flip_verdict(path: &std::path::Path) {
    let text = fs_err::read_to_string(path).unwrap();
    write_keeping_mtime(
        path,
        &text.replacen("\"resolved\": false", "\"resolved\": true ", 1),
    );
}

/// Rewrites a file in place with its mtime set back (its ctime moves: nothing can set it back).
fn write_keeping_mtime(path: &std::path::Path, text: &str) {
    let mtime = fs_err::metadata(path).unwrap().modified().unwrap();
    fs_err::write(path, text).unwrap();
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
}

#[test]
fn an_edited_record_is_caught_through_the_packed_index() {
    let sb = small();
    apply(&sb);
    // Past the index's racy window, a no-op apply indexes the records (one entry each).
    std::thread::sleep(std::time::Duration::from_millis(2200));
    let o = apply(&sb);
    assert!(executed(&o).is_empty(), "{:?}", executed(&o));
    let idx = sb.path(".bench/index/actions.idx");
    let len = fs_err::metadata(&idx)
        .expect("the apply wrote the index")
        .len();
    assert!(len > 100, "{len}");
    // Indexed: the next no-op apply appends nothing.
    apply(&sb);
    assert_eq!(fs_err::metadata(&idx).unwrap().len(), len);
    let t = &sampled(&sb)[0];
    let key = key_at(&sb, &format!("grade/solve/{t}/nop/0"));
    let path = record_path(&sb, &key);
    // Flip the verdict, the size kept and the mtime set back: the index's entry still holds the
    // honest record, and must not be believed.
    flip_verdict(&path);
    let o = apply(&sb);
    assert!(stderr(&o).contains("checksum"), "{}", stderr(&o));
    assert!(executed(&o).contains(&format!("grade/solve/{t}/nop/0")));
    let nop = team(&sb, "nop");
    assert_eq!(nop["resolved"], 0, "{nop}");
    // A torn tail of the index (a crash mid-append) is ignored and the store stays whole.
    let mut bytes = fs_err::read(&idx).unwrap();
    bytes.extend_from_slice(&[200, 0, 0, 0, 1, 2, 3]);
    fs_err::write(&idx, &bytes).unwrap();
    let o = apply(&sb);
    assert!(executed(&o).is_empty(), "{:?}", executed(&o));
    assert!(plan_to_run(&sb).is_empty());
}

#[test]
fn a_corrupt_blob_is_recomputed_on_the_same_apply() {
    let sb = small();
    apply(&sb);
    // The oracle's patch is not empty: corrupt its blob.
    let t = &sampled(&sb)[0];
    let key = key_at(&sb, &format!("solve/{t}/oracle/0"));
    let bench::store::Lookup::Hit(rec) = store(&sb).get_action(&key) else {
        panic!("no record")
    };
    let digest = rec.solve().unwrap().patch.clone();
    let blob = sb.path(&format!(".bench/objects/{}/{}", &digest[..2], &digest[2..]));
    fs_err::write(&blob, "garbage").unwrap();
    // Grading reruns (a new timeout) and reads the patch: its producer recomputes first.
    sb.edit(
        "quickstart.toml",
        "needs = [\"solve\"]\ntimeout = \"2m\"",
        "needs = [\"solve\"]\ntimeout = \"3m\"",
    );
    let o = apply(&sb);
    let err = stderr(&o);
    assert!(err.contains("corrupt"), "{err}");
    assert!(
        executed(&o).contains(&format!("solve/{t}/oracle/0")),
        "{err}"
    );
    let r = sb.report_json();
    let oracle = r["teams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "oracle")
        .unwrap();
    assert_eq!(oracle["resolved"], 3, "{r}");
    // The next apply succeeds and runs nothing.
    assert!(plan_to_run(&sb).is_empty());
    let o = apply(&sb);
    assert!(executed(&o).is_empty(), "{:?}", executed(&o));

    // A corrupt blob only the report reads (its artifacts): the report is rewritten from a
    // recomputed producer.
    let key = key_at(&sb, &format!("solve/{t}/oracle/0"));
    let bench::store::Lookup::Hit(rec) = store(&sb).get_action(&key) else {
        panic!("no record")
    };
    let traj = rec.blobs["trajectory"].clone();
    fs_err::write(
        sb.path(&format!(".bench/objects/{}/{}", &traj[..2], &traj[2..])),
        "garbage",
    )
    .unwrap();
    fs_err::remove_dir_all(sb.path("reports")).unwrap();
    let o = apply(&sb);
    assert!(
        sb.path("reports/quickstart/report.md").is_file(),
        "{}",
        stderr(&o)
    );
    assert!(
        !sb.read(&format!(
            "reports/quickstart/artifacts/oracle/{t}/trajectory.txt"
        ))
        .contains("garbage")
    );
}

#[test]
fn store_files_follow_the_umask_and_dead_writers_are_swept() {
    let sb = small();
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask 022; exec {} apply quickstart.toml",
            bench_bin().display()
        ))
        .current_dir(sb.dir.path())
        .env_remove("BENCH_STORE")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let key = key_at(&sb, "sample");
    let mode = fs_err::metadata(record_path(&sb, &key))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644, "{mode:o}");

    // A writer killed mid-write leaves a temp file; an apply that died leaves a run record
    // that says "running".
    let tmp = sb.path(&format!(".bench/actions/{}/.tmp-deadbeef", &key[..2]));
    fs_err::write(&tmp, "torn").unwrap();
    let runs = sb.path(".bench/runs");
    let last = fs_err::read_dir(&runs)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    let mut run: serde_json::Value = serde_json::from_slice(&fs_err::read(&last).unwrap()).unwrap();
    run["id"] = "29990101T000000.000Z-dead".into();
    run["status"] = "running".into();
    run["pid"] = 999_999.into();
    run["started_at"] = "2999-01-01T00:00:00Z".into();
    run["ended_at"] = serde_json::Value::Null;
    fs_err::write(runs.join("29990101T000000.000Z-dead.json"), run.to_string()).unwrap();
    // An apply marks its run live before its record first says "running" (the marks are the
    // runs whose heads an apply reads).
    fs_err::write(runs.join("live/29990101T000000.000Z-dead"), "").unwrap();
    // Status tells a dead apply from a running one, and orders applies by start time.
    let s = sb.bench(&["status", "quickstart.toml"]);
    assert!(
        stdout(&s).contains("29990101T000000.000Z-dead died"),
        "{}",
        stdout(&s)
    );
    let o = apply(&sb);
    assert!(!tmp.exists(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("temp files left by a dead writer"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_no_op_apply_rewrites_a_deleted_or_edited_report_file_and_nothing_else() {
    let sb = small();
    apply(&sb);
    let t = &sampled(&sb)[0];
    let patch = sb.path(&format!(
        "reports/quickstart/artifacts/oracle/{t}/patch.diff"
    ));
    let md = sb.path("reports/quickstart/report.md");
    let (patch_bytes, md_bytes) = (fs_err::read(&patch).unwrap(), fs_err::read(&md).unwrap());
    let mtime = |p: &PathBuf| fs_err::metadata(p).unwrap().modified().unwrap();
    let other = sb.path("reports/quickstart/report.json");
    let other_mtime = mtime(&other);
    // A no-op leaves every file alone.
    apply(&sb);
    assert_eq!(mtime(&other), other_mtime);
    // A deleted artifact and an edited report come back; the untouched files stay as they were.
    fs_err::remove_file(&patch).unwrap();
    fs_err::write(&md, b"forged numbers\n").unwrap();
    apply(&sb);
    assert_eq!(fs_err::read(&patch).unwrap(), patch_bytes);
    assert_eq!(fs_err::read(&md).unwrap(), md_bytes);
    assert_eq!(mtime(&other), other_mtime);
    // A later edit (the file one byte longer) is caught as well.
    let mut edited = md_bytes.clone();
    edited.push(b'\n');
    fs_err::write(&md, &edited).unwrap();
    apply(&sb);
    assert_eq!(fs_err::read(&md).unwrap(), md_bytes);
}

/// An apply of the small quickstart with phase timings on; whether it took the no-op memo's
/// path (`run/noop.rs`: no graph built).
fn apply_memo(sb: &Sandbox, env: &[(&str, &str)]) -> (std::process::Output, bool) {
    let mut env = env.to_vec();
    env.push(("BENCH_TIMINGS", "1"));
    let o = bench_env(sb.dir.path(), &["apply", "quickstart.toml"], &env);
    assert!(o.status.success(), "{}", stderr(&o));
    let fast = stderr(&o).contains("no-op applied");
    (o, fast)
}

/// What ran is within the plan, and every solve the plan lists ran (the grades behind them run
/// only if a patch changed).
fn solves_rerun_within_plan(ran: &[String], to_run: &[String]) {
    assert!(ran.iter().all(|a| to_run.contains(a)), "{ran:?} {to_run:?}");
    assert!(
        to_run
            .iter()
            .filter(|a| a.starts_with("solve/"))
            .all(|a| ran.contains(a)),
        "{ran:?} {to_run:?}"
    );
}

/// Past the racy window, an all-cached apply writes the memo and the next one takes it.
fn settle_memo(sb: &Sandbox, env: &[(&str, &str)]) {
    std::thread::sleep(std::time::Duration::from_millis(2200));
    let (o, fast) = apply_memo(sb, env);
    assert!(!fast && executed(&o).is_empty(), "{}", stderr(&o));
    let (o, fast) = apply_memo(sb, env);
    assert!(fast, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("datasets matched by stat"),
        "{}",
        stderr(&o)
    );
    assert!(executed(&o).is_empty(), "{:?}", executed(&o));
}

/// A store that holds a no-op memo of the manifest is locked, and the memo read, while the
/// manifest loads (run/sequence.rs), and only then: a lock another apply holds is still named
/// with its holder and nothing runs; a manifest that no longer loads is refused with its own
/// error, the store left unlocked; put back, the next apply takes the memo.
#[test]
fn the_store_locked_while_the_manifest_loads_names_a_holder_and_yields_to_a_manifest_error() {
    let sb = small();
    apply(&sb);
    settle_memo(&sb, &[]);
    let store = sb.path(".bench");
    {
        let _held = bench::store::StoreLock::acquire(&store, "bench apply other.toml").unwrap();
        let o = sb.bench(&["apply", "quickstart.toml"]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("bench apply other.toml"),
            "{}",
            stderr(&o)
        );
        assert!(executed(&o).is_empty(), "{:?}", executed(&o));
    }
    let manifest = sb.path("quickstart.toml");
    let text = fs_err::read_to_string(&manifest).unwrap();
    fs_err::write(&manifest, format!("{text}\n[stages.sample\n")).unwrap();
    let o = sb.bench(&["apply", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("quickstart.toml"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("in use by pid"), "{}", stderr(&o));
    drop(bench::store::StoreLock::acquire(&store, "test").expect("the store is unlocked"));
    fs_err::write(&manifest, &text).unwrap();
    let (o, fast) = apply_memo(&sb, &[]);
    assert!(fast, "{}", stderr(&o));
    assert!(executed(&o).is_empty(), "{:?}", executed(&o));
}

/// An apply skips the manifest's task checks (every task.toml read and parsed) for a local
/// dataset whose stat signature, taken before them, is the one stored with a clean verdict; a
/// task file edited since, even with its size and mtime kept, is checked again, and a bad field
/// is refused before anything runs.
#[test]
fn the_task_checks_are_skipped_only_for_an_unchanged_dataset() {
    let sb = small();
    apply(&sb);
    settle_memo(&sb, &[]);
    let stamps = files_with_ext(&sb.path(".bench/index"), "tasks");
    assert_eq!(stamps.len(), 1, "{stamps:?}");
    let stamp = fs_err::read_to_string(&stamps[0]).unwrap();
    assert!(stamp.contains("\"checked\":true"), "{stamp}");
    // A log parser's name misspelt (one letter's case), the file's size and mtime kept.
    let t = sampled(&sb)[0].clone();
    let toml = sb.path(&format!("quickstart/tasks/{t}/task.toml"));
    let text = fs_err::read_to_string(&toml).unwrap();
    let at = text.find("log_parser = \"").unwrap() + "log_parser = \"".len();
    let mut edited = text.clone();
    edited.replace_range(at..at + 1, &text[at..at + 1].to_ascii_uppercase());
    assert_eq!(edited.len(), text.len());
    write_keeping_mtime(&toml, &edited);
    let o = sb.bench(&["apply", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not a registered log parser"),
        "{}",
        stderr(&o)
    );
    assert!(executed(&o).is_empty(), "{:?}", executed(&o));
    // Put back: checked again (its stat is new), clean, nothing runs; then the checks are
    // skipped and the memo taken again.
    write_keeping_mtime(&toml, &text);
    std::thread::sleep(std::time::Duration::from_millis(2200));
    let (o, _) = apply_memo(&sb, &[]);
    assert!(executed(&o).is_empty(), "{:?}", executed(&o));
    let (o, fast) = apply_memo(&sb, &[]);
    assert!(fast, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("datasets matched by stat"),
        "{}",
        stderr(&o)
    );
}

/// The summary line an apply prints.
fn summary(o: &std::process::Output) -> String {
    let e = stderr(o);
    e.lines()
        .find(|l| l.starts_with("summary"))
        .unwrap_or_else(|| panic!("no summary in {e}"))
        .to_string()
}

/// The memo skips the graph only when nothing the graph reads changed: after each kind of edit
/// (a task file, a harness script, the jail mode, a record rewritten or flipped or removed, the
/// memo itself damaged) the apply runs exactly what `bench plan` (which never reads the memo)
/// says, and a no-op from the memo reports and records what the full no-op does.
#[test]
fn the_no_op_memo_is_taken_only_when_nothing_changed() {
    let sb = small();
    apply(&sb);
    std::thread::sleep(std::time::Duration::from_millis(2200));
    let (slow, fast) = apply_memo(&sb, &[]);
    assert!(!fast && executed(&slow).is_empty());
    let runs = || files_with_ext(&sb.path(".bench/runs"), "json").len();
    let before = runs();
    let (o, fast) = apply_memo(&sb, &[]);
    assert!(fast, "{}", stderr(&o));
    // The local dataset was matched by its stat signature: no task was read.
    assert!(
        stderr(&o).contains("datasets matched by stat"),
        "{}",
        stderr(&o)
    );
    assert_eq!(summary(&o), summary(&slow));
    assert_eq!(stdout(&o), stdout(&slow));
    // Its run record, like the full no-op's: every node cached, the same keys.
    assert_eq!(runs(), before + 1);
    let last = |n: usize| {
        let s = store(&sb);
        let mut r = s.runs();
        r.sort_by(|a, b| a.started_at.cmp(&b.started_at));
        r[r.len() - n].clone()
    };
    let (fast_run, slow_run) = (last(1), last(2));
    assert_eq!(fast_run.status, bench::store::RunStatus::Complete);
    assert_eq!(fast_run.nodes, slow_run.nodes);
    // A deleted report comes back from the memo's path.
    let md = sb.path("reports/quickstart/report.md");
    let md_bytes = fs_err::read(&md).unwrap();
    fs_err::remove_file(&md).unwrap();
    let (o, fast) = apply_memo(&sb, &[]);
    assert!(fast, "{}", stderr(&o));
    assert_eq!(fs_err::read(&md).unwrap(), md_bytes);
    // So does an edited one (its size kept).
    let forged = String::from_utf8_lossy(&md_bytes).replacen('0', "9", 1);
    assert_eq!(forged.len(), md_bytes.len());
    fs_err::write(&md, &forged).unwrap();
    let (o, fast) = apply_memo(&sb, &[]);
    assert!(fast, "{}", stderr(&o));
    assert_eq!(fs_err::read(&md).unwrap(), md_bytes);
    // The manifest's index rewritten since the memo: the full path (nothing runs).
    let index = files_with_ext(&sb.path(".bench/index"), "noop")
        .pop()
        .expect("a memo")
        .with_extension("json");
    fs_err::write(&index, fs_err::read(&index).unwrap()).unwrap();
    let (o, fast) = apply_memo(&sb, &[]);
    assert!(!fast && executed(&o).is_empty(), "{}", stderr(&o));
    settle_memo(&sb, &[]);

    // A task file edited: its nodes rerun.
    let t = sampled(&sb)[0].clone();
    sb.append(
        &format!("quickstart/tasks/{t}/gold.patch"),
        "diff --git a/NOTE.txt b/NOTE.txt\nnew file mode 100644\n--- /dev/null\n+++ b/NOTE.txt\n@@ -0,0 +1 @@\n+edited gold\n",
    );
    let to_run = plan_to_run(&sb);
    assert!(to_run.contains(&format!("gold/{t}")), "{to_run:?}");
    let (o, fast) = apply_memo(&sb, &[]);
    assert!(!fast);
    assert_eq!(executed(&o), to_run);
    settle_memo(&sb, &[]);

    // The task's statement edited in place, its size and mtime kept: the dataset's stat
    // signature (the file's ctime) misses, the tasks are read, and the task's solves rerun.
    let toml = sb.path(&format!("quickstart/tasks/{t}/task.toml"));
    let text = fs_err::read_to_string(&toml).unwrap();
    let open = "problem_statement = \"\"\"\n";
    let from = text.find(open).unwrap() + open.len();
    let at = from + text[from..].find(|c: char| c.is_ascii_lowercase()).unwrap();
    let mut edited = text.clone();
    edited.replace_range(at..at + 1, &text[at..at + 1].to_ascii_uppercase());
    assert_eq!(edited.len(), text.len());
    write_keeping_mtime(&toml, &edited);
    let to_run = plan_to_run(&sb);
    assert!(
        to_run.iter().any(|a| a.starts_with(&format!("solve/{t}/"))),
        "{to_run:?}"
    );
    let (o, fast) = apply_memo(&sb, &[]);
    assert!(!fast && !stderr(&o).contains("datasets matched by stat"));
    solves_rerun_within_plan(&executed(&o), &to_run);
    settle_memo(&sb, &[]);

    // A harness script edited (the manifest's bytes unchanged): the fixer's solves rerun.
    sb.append("quickstart/agents/fixer.py", "\n# edited\n");
    let to_run = plan_to_run(&sb);
    assert!(to_run.iter().any(|a| a.contains("/fixer/")), "{to_run:?}");
    let (o, fast) = apply_memo(&sb, &[]);
    assert!(!fast);
    // The solves rerun; the plan's grades behind them run only if a patch changed.
    solves_rerun_within_plan(&executed(&o), &to_run);
    settle_memo(&sb, &[]);

    // A record flipped to another valid verdict, its size and mtime kept: caught by its stat,
    // then by its checksum.
    let address = format!("grade/solve/{t}/nop/0");
    flip_verdict(&record_path(&sb, &key_at(&sb, &address)));
    let (o, fast) = apply_memo(&sb, &[]);
    assert!(!fast);
    assert!(stderr(&o).contains("checksum"), "{}", stderr(&o));
    // The report reads the rerun's timing too.
    assert_eq!(executed(&o), [address.clone(), "report".to_string()]);
    assert_eq!(team(&sb, "nop")["resolved"], 0);
    settle_memo(&sb, &[]);

    // A record removed (as gc would): its node reruns.
    let path = record_path(&sb, &key_at(&sb, &address));
    fs_err::remove_file(&path).unwrap();
    let to_run = plan_to_run(&sb);
    assert_eq!(to_run, [address.clone(), "report".to_string()]);
    let (o, fast) = apply_memo(&sb, &[]);
    assert!(!fast);
    assert_eq!(executed(&o), to_run);
    settle_memo(&sb, &[]);

    // The memo damaged: ignored, and nothing reruns.
    let memo = files_with_ext(&sb.path(".bench/index"), "noop")
        .pop()
        .expect("a memo");
    let mut bytes = fs_err::read(&memo).unwrap();
    let at = bytes.len() - 10;
    bytes[at] ^= 1;
    fs_err::write(&memo, &bytes).unwrap();
    let (o, fast) = apply_memo(&sb, &[]);
    assert!(!fast && executed(&o).is_empty(), "{}", stderr(&o));

    // The jail mode, an input of every local key that no file holds: without bwrap every
    // sandboxed node reruns, as the plan under the same environment says.
    let jailed = std::process::Command::new("bwrap")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !jailed && !ci() {
        eprintln!("skipped the jail-mode edit: no bwrap (CI installs it)");
        return;
    }
    let o = bench_env(
        sb.dir.path(),
        &["plan", "--json", "quickstart.toml"],
        &[("BENCH_NO_BWRAP", "1")],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("plan json");
    let mut to_run: Vec<String> = v["to_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["address"].as_str().unwrap().to_string())
        .collect();
    to_run.sort();
    assert!(to_run.len() > 3, "{to_run:?}");
    let (o, fast) = apply_memo(&sb, &[("BENCH_NO_BWRAP", "1")]);
    assert!(!fast);
    // Grades whose key a gold check or another team's identical patch ran are not run twice.
    let ran = executed(&o);
    assert!(ran.iter().all(|a| to_run.contains(a)), "{ran:?} {to_run:?}");
    assert!(
        to_run
            .iter()
            .filter(|a| !a.starts_with("grade/"))
            .all(|a| ran.contains(a)),
        "{ran:?} {to_run:?}"
    );
}
