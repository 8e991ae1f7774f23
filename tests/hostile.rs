//! Hostile task files and damaged stores, end to end through the binary: a FIFO or a device
//! anywhere bench reads a task is an error naming the task and the file (nothing hangs, nothing
//! reads until memory runs out), a task that cannot be read is never dropped, a directory link
//! in a task's `repo/` (or planted by a candidate) never makes grading touch a file outside the
//! workspace, with or without the jail, a report killed mid-write leaves no temp file, and a
//! deleted, emptied or flipped blob is found and recomputed in one apply with a right report.
//! And two inputs that were in no key: the order of a task's test lists (now a set, in no key)
//! and the module a harness script imports (now in its key).

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use common::*;

const TASK: &str = "quickstart__roman-1";

fn timed(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = assert_cmd::Command::new(bench_bin());
    c.args(args)
        .current_dir(sb.dir.path())
        .env_remove("BENCH_STORE")
        .env("NO_COLOR", "1")
        .timeout(Duration::from_secs(120));
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run bench")
}

/// A diagnostic as one line: miette's wrapping and gutters removed.
fn flat(err: &str) -> String {
    err.replace(['│', '×', '╭', '╰', '─'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn task_dir(sb: &Sandbox) -> PathBuf {
    sb.path(&format!("quickstart/tasks/{TASK}"))
}

/// The quickstart on one task, with the nop team only (its gold check and one solve).
fn one_task() -> Sandbox {
    let sb = Sandbox::quickstart();
    sb.edit(
        "quickstart.toml",
        "seed = 7",
        &format!("seed = 7\ninstance_ids = [\"{TASK}\"]"),
    );
    sb.edit(
        "quickstart.toml",
        "teams = [\"oracle\", \"nop\", \"fixer\"]",
        "teams = [\"nop\"]",
    );
    sb
}

/// Replaces `path` by a FIFO or a symbolic link to a device; returns what to restore.
fn make_hostile(path: &Path, kind: &str) -> Vec<u8> {
    let old = fs_err::read(path).unwrap();
    fs_err::remove_file(path).unwrap();
    match kind {
        "fifo" => nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap(),
        dev => std::os::unix::fs::symlink(dev, path).unwrap(),
    }
    old
}

#[test]
fn a_fifo_or_a_device_in_any_task_file_is_an_error_naming_it_and_nothing_hangs() {
    let sb = Sandbox::quickstart();
    let dir = task_dir(&sb);
    let positions = [
        ("task.toml", "task.toml"),
        ("test.patch", "test.patch"),
        ("gold.patch", "gold.patch"),
        ("repo/roman.py", "repo/roman.py"),
        ("repo/tests/test_roman.py", "repo/tests/test_roman.py"),
    ];
    for (rel, named) in positions {
        for kind in ["fifo", "/dev/zero", "/dev/urandom"] {
            let path = dir.join(rel);
            let old = make_hostile(&path, kind);
            let what = if kind == "fifo" {
                "a FIFO"
            } else {
                "a character device"
            };
            if rel.starts_with("repo/") && kind != "fifo" {
                // A link in `repo/` is part of the tree as a link (its target's text), never
                // followed by bench: the task plans as any other.
                let o = timed(&sb, &["plan", "quickstart.toml"], &[]);
                assert_eq!(o.status.code(), Some(2), "{rel} = {kind}: {}", stderr(&o));
                fs_err::remove_file(&path).unwrap();
                fs_err::write(&path, old).unwrap();
                continue;
            }
            for cmd in ["plan", "tasks", "apply"] {
                let o = timed(&sb, &[cmd, "quickstart.toml"], &[]);
                let err = flat(&stderr(&o));
                assert_eq!(o.status.code(), Some(1), "{cmd} with {rel} = {kind}: {err}");
                for needle in [TASK, named, what] {
                    assert!(
                        err.contains(needle),
                        "{cmd} with {rel} = {kind}: no {needle:?} in {err}"
                    );
                }
            }
            fs_err::remove_file(&path).unwrap();
            fs_err::write(&path, old).unwrap();
        }
    }
    // Restored, everything runs.
    let o = timed(&sb, &["tasks", "quickstart.toml"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn every_kind_of_task_file_has_a_settable_size_limit() {
    let sb = Sandbox::quickstart();
    for (var, file) in [
        ("BENCH_MAX_TASK_TOML", "task.toml"),
        ("BENCH_MAX_PATCH", "gold.patch"),
        ("BENCH_MAX_REPO_FILE", "repo/"),
    ] {
        let o = timed(&sb, &["tasks", "quickstart.toml"], &[(var, "64")]);
        let err = flat(&stderr(&o));
        assert_eq!(o.status.code(), Some(1), "{var}: {err}");
        assert!(err.contains("too large"), "{var}: {err}");
        assert!(err.contains(file), "{var}: {err}");
        assert!(err.contains("over the limit of 64 bytes"), "{var}: {err}");
    }
    let o = timed(
        &sb,
        &["tasks", "quickstart.toml"],
        &[("BENCH_MAX_PATCH", "big")],
    );
    assert!(stderr(&o).contains("BENCH_MAX_PATCH=`big` is not a size"));
    // Defaults hold real tasks.
    let o = timed(
        &sb,
        &["tasks", "quickstart.toml"],
        &[("BENCH_MAX_PATCH", "1MiB")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_task_directory_without_a_task_toml_is_an_error_not_a_shorter_list() {
    let sb = Sandbox::quickstart();
    fs_err::remove_file(task_dir(&sb).join("task.toml")).unwrap();
    for cmd in ["tasks", "plan", "apply"] {
        let o = timed(&sb, &[cmd, "quickstart.toml"], &[]);
        let err = flat(&stderr(&o));
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert!(
            err.contains(TASK) && err.contains("without a task.toml"),
            "{cmd}: {err}"
        );
    }
    // Hidden directories (`.git`) and plain files beside the tasks are not tasks.
    let sb = Sandbox::quickstart();
    fs_err::create_dir_all(sb.path("quickstart/tasks/.git/objects")).unwrap();
    fs_err::write(sb.path("quickstart/tasks/README.md"), "tasks\n").unwrap();
    let o = timed(&sb, &["tasks", "--json", "quickstart.toml"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["tasks"].as_array().unwrap().len(), 8);
}

fn bwrap_ready() -> bool {
    let ok = std::process::Command::new("bwrap")
        .args(["--die-with-parent", "--unshare-all", "--ro-bind", "/", "/"])
        .args(["--proc", "/proc", "--dev", "/dev", "true"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok || std::env::var("CI").is_err(),
        "bwrap is missing or cannot create namespaces, and CI=true: install bubblewrap"
    );
    ok
}

/// A directory outside every workspace holding a copy of the task's `tests/`, and its files'
/// contents (what must still be there after grading).
fn outside_tests(sb: &Sandbox) -> (tempfile::TempDir, Vec<(PathBuf, Vec<u8>)>) {
    // Not under /tmp: the jail shows the host's /tmp empty, and the point is a real file.
    let base =
        std::env::var("CARGO_TARGET_TMPDIR").map_or_else(|_| PathBuf::from("."), PathBuf::from);
    let outside = tempfile::tempdir_in(base).unwrap();
    let tests = outside.path().join("tests");
    fs_err::create_dir_all(&tests).unwrap();
    let mut files = Vec::new();
    for name in ["__init__.py", "test_roman.py"] {
        let bytes = fs_err::read(task_dir(sb).join("repo/tests").join(name)).unwrap();
        fs_err::write(tests.join(name), &bytes).unwrap();
        files.push((tests.join(name), bytes));
    }
    (outside, files)
}

fn untouched(files: &[(PathBuf, Vec<u8>)], mode: &str) {
    for (p, bytes) in files {
        assert_eq!(
            fs_err::read(p).ok().as_ref(),
            Some(bytes),
            "{mode}: {} was touched",
            p.display()
        );
    }
}

#[test]
fn a_directory_link_out_of_a_tasks_repo_is_refused_and_nothing_outside_is_touched() {
    let mut modes = vec![("unjailed", vec![("BENCH_NO_BWRAP", "1")])];
    if bwrap_ready() {
        modes.push(("jailed", vec![]));
    }
    for (mode, env) in modes {
        let sb = one_task();
        let (_outside, files) = outside_tests(&sb);
        let repo_tests = task_dir(&sb).join("repo/tests");
        fs_err::remove_dir_all(&repo_tests).unwrap();
        std::os::unix::fs::symlink(files[0].0.parent().unwrap(), &repo_tests).unwrap();
        let o = timed(&sb, &["apply", "quickstart.toml"], &env);
        let err = stderr(&o);
        assert_eq!(
            o.status.code(),
            Some(3),
            "{mode}: the gold check fails: {err}"
        );
        assert!(
            err.contains(TASK) && err.contains("leads out of the workspace"),
            "{mode}: {err}"
        );
        untouched(&files, mode);
    }
}

#[test]
fn a_candidate_that_plants_a_link_out_is_unresolved_and_nothing_outside_is_touched() {
    let mut modes = vec![("unjailed", vec![("BENCH_NO_BWRAP", "1")])];
    if bwrap_ready() {
        modes.push(("jailed", vec![]));
    }
    for (mode, env) in modes {
        let sb = one_task();
        let (_outside, files) = outside_tests(&sb);
        let target = files[0].0.parent().unwrap().display().to_string();
        fs_err::write(
            sb.path("quickstart/agents/planter.sh"),
            format!("rm -rf tests && ln -s '{target}' tests\n"),
        )
        .unwrap();
        sb.edit(
            "quickstart.toml",
            "teams = [\"nop\"]",
            "teams = [\"nop\", \"planter\"]",
        );
        sb.append(
            "quickstart.toml",
            "\n[teams.planter]\ntopology = \"solo\"\nworker = \"planter\"\n\n[harnesses.planter]\nkind = \"command\"\ncommand = \"sh {{script}}\"\nscript = \"quickstart/agents/planter.sh\"\n",
        );
        let o = timed(&sb, &["apply", "quickstart.toml"], &env);
        let err = stderr(&o);
        assert!(o.status.success(), "{mode}: {err}");
        untouched(&files, mode);
        let r = sb.report_json();
        let team = r["teams"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "planter")
            .expect("the team")
            .clone();
        assert_eq!(team["resolved"], 0, "{mode}: {r}");
        let log = grade_blob(&sb, "planter", "apply_log");
        assert!(log.contains("out of the workspace"), "{mode}: {log}");
    }
}

/// A named blob of the grade of `team`'s solve of [`TASK`].
fn grade_blob(sb: &Sandbox, team: &str, name: &str) -> String {
    let store = bench::store::Store::open_existing(&sb.path(".bench")).expect("a store");
    let manifest = fs_err::canonicalize(sb.manifest()).unwrap();
    let index = store.load_index(&manifest);
    let (_, key) = index
        .nodes
        .iter()
        .find(|(a, _)| a.starts_with("grade/") && a.contains(&format!("/{team}/")))
        .expect("a grade");
    let bench::store::Lookup::Hit(rec) = store.get_action(key) else {
        panic!("no record for {key}")
    };
    String::from_utf8_lossy(
        &store
            .get_blob(&bench::types::Digest::parse(&rec.blobs[name]).unwrap())
            .unwrap(),
    )
    .into_owned()
}

/// The quickstart on two tasks, applied, then no-op applies until the memo is taken.
fn applied_with_memo() -> Sandbox {
    let sb = Sandbox::quickstart();
    sb.edit("quickstart.toml", "seed = 7", "seed = 7\nlimit = 2");
    let o = timed(&sb, &["apply", "quickstart.toml"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    sb
}

/// Past the racy window, an all-cached apply writes the memo; the next one takes it.
fn settle_memo(sb: &Sandbox) {
    std::thread::sleep(Duration::from_millis(2200));
    for _ in 0..2 {
        let o = timed(sb, &["apply", "quickstart.toml"], &[("BENCH_TIMINGS", "1")]);
        assert!(
            o.status.success() && executed(&o).is_empty(),
            "{}",
            stderr(&o)
        );
        if stderr(&o).contains("no-op applied") {
            return;
        }
    }
    panic!("the no-op memo is never taken");
}

fn store_of(sb: &Sandbox) -> bench::store::Store {
    bench::store::Store::open_existing(&sb.path(".bench")).expect("a store")
}

/// Picks node addresses.
type AddressFilter = dyn Fn(&str) -> bool;

/// The first address (in the index) matching `pred`, its key, and its record's blob `name`.
fn blob_at(sb: &Sandbox, pred: &AddressFilter, name: &str) -> (String, String) {
    let store = store_of(sb);
    let manifest = fs_err::canonicalize(sb.manifest()).unwrap();
    let index = store.load_index(&manifest);
    let (address, key) = index
        .nodes
        .iter()
        .find(|(a, _)| pred(a))
        .unwrap_or_else(|| panic!("no node in {:?}", index.nodes.keys()));
    let bench::store::Lookup::Hit(rec) = store.get_action(key) else {
        panic!("no record for {address}")
    };
    (address.clone(), rec.blobs[name].clone())
}

/// The teams' numbers without their wall times (a recomputed solve takes another time).
fn numbers(teams: &serde_json::Value) -> serde_json::Value {
    let mut t = teams.clone();
    for team in t.as_array_mut().expect("teams") {
        team.as_object_mut()
            .expect("a team")
            .remove("wall_time_median_s");
    }
    t
}

/// The report is the one the store's current records give: its teams' numbers as before the
/// damage, its own file the report record's blob, and every solve's artifacts (patch and
/// trajectory) the blobs of that solve's current record, never of a result it replaced.
fn report_is_right(sb: &Sandbox, teams: &serde_json::Value, what: &str) {
    let r = sb.report_json();
    assert_eq!(
        numbers(&r["teams"]),
        numbers(teams),
        "{what}: the report's teams changed"
    );
    let store = store_of(sb);
    let (_, md) = blob_at(sb, &|a| a.starts_with("report"), "report.md");
    assert_eq!(
        fs_err::read(sb.path("reports/quickstart/report.md")).unwrap(),
        store
            .get_blob(&bench::types::Digest::parse(&md).unwrap())
            .unwrap(),
        "{what}"
    );
    let manifest = fs_err::canonicalize(sb.manifest()).unwrap();
    for (address, key) in store.load_index(&manifest).nodes {
        let Some(rest) = address.strip_prefix("solve/") else {
            continue;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        let bench::store::Lookup::Hit(rec) = store.get_action(&key) else {
            panic!("{what}: no record for {address}")
        };
        let dir = sb.path(&format!(
            "reports/quickstart/artifacts/{}/{}",
            parts[1], parts[0]
        ));
        for (file, blob) in [("trajectory.txt", "trajectory"), ("patch.diff", "patch")] {
            let Some(d) = rec.blobs.get(blob) else {
                continue;
            };
            assert_eq!(
                fs_err::read(dir.join(file)).ok(),
                store
                    .get_blob(&bench::types::Digest::parse(d).unwrap())
                    .ok(),
                "{what}: {address}: {file} is not its record's"
            );
        }
    }
}

/// Every kind of blob (a solve's patch and trajectory, a grade's log, the report's own file),
/// deleted, emptied or flipped: found on the no-op path, its producer and what is built on it
/// recomputed in one apply, the report right, and the next apply runs nothing.
#[test]
fn a_deleted_emptied_or_flipped_blob_of_each_kind_is_recomputed_in_one_apply() {
    let sb = applied_with_memo();
    let teams = sb.report_json()["teams"].clone();
    let oracle_solve = |a: &str| a.starts_with("solve/") && a.contains("/oracle/");
    let oracle_grade = |a: &str| a.starts_with("grade/") && a.contains("/oracle/");
    let report = |a: &str| a.starts_with("report");
    let kinds: [(&str, &AddressFilter, &str); 4] = [
        ("solve patch", &oracle_solve, "patch"),
        ("solve trajectory", &oracle_solve, "trajectory"),
        ("grade log", &oracle_grade, "log"),
        ("report file", &report, "report.md"),
    ];
    for (kind, pred, name) in kinds {
        for damage in ["deleted", "emptied", "flipped"] {
            let what = format!("{kind} {damage}");
            settle_memo(&sb);
            let (address, digest) = blob_at(&sb, pred, name);
            let path = sb.path(&format!(".bench/objects/{}/{}", &digest[..2], &digest[2..]));
            let mut bytes = fs_err::read(&path).unwrap();
            match damage {
                "deleted" => fs_err::remove_file(&path).unwrap(),
                "emptied" => fs_err::write(&path, b"").unwrap(),
                _ => {
                    bytes[0] ^= 0x20;
                    fs_err::write(&path, &bytes).unwrap();
                    // A same-size flip is found by reading: `bench verify` names and removes it.
                    let o = timed(&sb, &["verify", "quickstart.toml"], &[]);
                    assert_eq!(o.status.code(), Some(2), "{what}: {}", stdout(&o));
                    assert!(
                        stdout(&o).contains(&digest[2..]) && stdout(&o).contains("corrupt"),
                        "{what}: {}",
                        stdout(&o)
                    );
                }
            }
            // The plan sees it (a node that wrote the blob runs: `address`, or another that
            // wrote the same bytes, such as the gold check of the oracle's patch).
            let to_run = plan_to_run(&sb);
            assert!(!to_run.is_empty(), "{what}: {address}: plan runs nothing");
            let o = timed(&sb, &["apply", "quickstart.toml"], &[]);
            assert!(o.status.success(), "{what}: {}", stderr(&o));
            let ran = executed(&o);
            assert!(!ran.is_empty(), "{what}: {}", stderr(&o));
            assert!(
                ran.iter().all(|a| to_run.contains(a)),
                "{what}: {ran:?} {to_run:?}"
            );
            assert!(stderr(&o).contains(&digest[2..]), "{what}: {}", stderr(&o));
            // The node's current record (the same result, or the one that replaced it: a log
            // holds a fresh nonce) has its blob.
            let (_, now) = blob_at(&sb, pred, name);
            assert!(
                store_of(&sb)
                    .get_blob(&bench::types::Digest::parse(&now).unwrap())
                    .is_ok(),
                "{what}: not restored"
            );
            report_is_right(&sb, &teams, &what);
            let o = timed(&sb, &["apply", "quickstart.toml"], &[]);
            assert!(executed(&o).is_empty(), "{what}: {}", stderr(&o));
            let o = timed(&sb, &["verify", "quickstart.toml"], &[]);
            assert_eq!(o.status.code(), Some(0), "{what}: {}", stdout(&o));
        }
    }
}

/// `apply --verify` finds a flipped patch itself and converges in that one apply.
#[test]
fn apply_verify_recomputes_a_flipped_patch_in_the_same_apply() {
    let sb = applied_with_memo();
    let teams = sb.report_json()["teams"].clone();
    let (address, digest) = blob_at(
        &sb,
        &|a| a.starts_with("solve/") && a.contains("/oracle/"),
        "patch",
    );
    let path = sb.path(&format!(".bench/objects/{}/{}", &digest[..2], &digest[2..]));
    let mut bytes = fs_err::read(&path).unwrap();
    bytes[0] ^= 0x20;
    fs_err::write(&path, &bytes).unwrap();
    let o = timed(&sb, &["apply", "--verify", "quickstart.toml"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!executed(&o).is_empty(), "{address}: {}", stderr(&o));
    assert!(stderr(&o).contains("corrupt"), "{}", stderr(&o));
    assert!(
        store_of(&sb)
            .get_blob(&bench::types::Digest::parse(&digest).unwrap())
            .is_ok(),
        "not restored"
    );
    report_is_right(&sb, &teams, "apply --verify");
    let o = timed(&sb, &["export", "quickstart.toml"], &[]);
    assert!(o.status.success(), "export: {}", stderr(&o));
    let o = timed(&sb, &["verify", "quickstart.toml"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

/// A flipped blob only the report reads, found when the report renders (no `--verify`): the
/// solve that wrote it reruns and the report is built from its new result in the same apply,
/// not rerun with the rows it had.
#[test]
fn a_corrupt_blob_found_by_the_report_gives_a_right_report_in_one_apply() {
    let sb = applied_with_memo();
    let teams = sb.report_json()["teams"].clone();
    let (_, digest) = blob_at(
        &sb,
        &|a| a.starts_with("solve/") && a.contains("/fixer/"),
        "trajectory",
    );
    let path = sb.path(&format!(".bench/objects/{}/{}", &digest[..2], &digest[2..]));
    let mut bytes = fs_err::read(&path).unwrap();
    bytes[0] ^= 0x20;
    fs_err::write(&path, &bytes).unwrap();
    // The report reruns (its description is printed) and, its files gone, reads the trajectory.
    fs_err::remove_dir_all(sb.path("reports")).unwrap();
    sb.edit(
        "quickstart.toml",
        "description = \"",
        "description = \"edited: ",
    );
    let o = timed(&sb, &["apply", "quickstart.toml"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("corrupt"), "{}", stderr(&o));
    report_is_right(&sb, &teams, "found by the report");
    let o = timed(&sb, &["apply", "quickstart.toml"], &[]);
    assert!(executed(&o).is_empty(), "{}", stderr(&o));
}

/// A report writer killed mid-write leaves `.tmp-*` files in the report's directories (as the
/// store's writers do in the store): the next apply after the dead run sweeps them too.
#[test]
fn temp_files_a_killed_report_writer_left_are_swept() {
    let sb = one_task();
    let o = timed(&sb, &["apply", "quickstart.toml"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    // What a kill -9 inside `write_atomic` leaves beside the files it was replacing.
    let torn = [
        sb.path("reports/quickstart/.tmp-dead01"),
        sb.path(&format!(
            "reports/quickstart/artifacts/nop/{TASK}/.tmp-dead02"
        )),
    ];
    for t in &torn {
        fs_err::write(t, "torn").unwrap();
    }
    // The apply that wrote them died: a slow agent's apply, killed.
    fs_err::write(sb.path("quickstart/agents/slow.sh"), "sleep 600\n").unwrap();
    sb.edit(
        "quickstart.toml",
        "teams = [\"nop\"]",
        "teams = [\"nop\", \"slow\"]",
    );
    sb.append(
        "quickstart.toml",
        "\n[teams.slow]\ntopology = \"solo\"\nworker = \"slow\"\n\n[harnesses.slow]\nkind = \"command\"\ncommand = \"sh {{script}}\"\nscript = \"quickstart/agents/slow.sh\"\n",
    );
    let mut child = std::process::Command::new(bench_bin())
        .args(["apply", "quickstart.toml"])
        .current_dir(sb.dir.path())
        .env_remove("BENCH_STORE")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    child.kill().unwrap();
    child.wait().unwrap();
    sb.edit(
        "quickstart.toml",
        "teams = [\"nop\", \"slow\"]",
        "teams = [\"nop\"]",
    );
    let o = timed(&sb, &["apply", "quickstart.toml"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    for t in &torn {
        assert!(!t.exists(), "{} is left: {}", t.display(), stderr(&o));
    }
    assert!(sb.path("reports/quickstart/report.md").is_file());
}

/// A harness script that imports a module beside it: the module is copied with the script (the
/// import works), and editing it reruns that team's solves, and only those.
#[test]
fn a_module_beside_a_harness_script_is_copied_with_it_and_in_its_key() {
    let sb = one_task();
    fs_err::create_dir_all(sb.path("quickstart/agents/imp")).unwrap();
    fs_err::write(
        sb.path("quickstart/agents/imp/imp.py"),
        "import helper\nopen('HELPED.txt', 'w').write(helper.WORD + '\\n')\n",
    )
    .unwrap();
    fs_err::write(sb.path("quickstart/agents/imp/helper.py"), "WORD = 'one'\n").unwrap();
    sb.edit(
        "quickstart.toml",
        "teams = [\"nop\"]",
        "teams = [\"nop\", \"imp\"]",
    );
    sb.append(
        "quickstart.toml",
        "\n[teams.imp]\ntopology = \"solo\"\nworker = \"imp\"\n\n[harnesses.imp]\nkind = \"command\"\ncommand = \"python3 {{script}}\"\nscript = \"quickstart/agents/imp/imp.py\"\n",
    );
    let o = timed(&sb, &["apply", "quickstart.toml"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let patches = stored_patches(&sb.path(".bench"), &sb.manifest(), "imp");
    assert!(patches[0].contains("+one"), "{patches:?}");
    fs_err::write(sb.path("quickstart/agents/imp/helper.py"), "WORD = 'two'\n").unwrap();
    let to_run = plan_to_run(&sb);
    assert!(
        !to_run.is_empty() && to_run.iter().all(|a| a.contains("/imp/") || a == "report"),
        "{to_run:?}"
    );
    let o = timed(&sb, &["apply", "quickstart.toml"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        executed(&o).contains(&format!("solve/{TASK}/imp/0")),
        "{}",
        stderr(&o)
    );
    let patches = stored_patches(&sb.path(".bench"), &sb.manifest(), "imp");
    assert!(patches.iter().any(|p| p.contains("+two")), "{patches:?}");
}

/// Reordering a task's `PASS_TO_PASS` and `FAIL_TO_PASS` (or repeating a test) reruns nothing:
/// the lists are sets.
#[test]
fn reordering_a_tasks_test_lists_reruns_nothing() {
    let sb = one_task();
    let o = timed(&sb, &["apply", "quickstart.toml"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let toml = task_dir(&sb).join("task.toml");
    let text = fs_err::read_to_string(&toml).unwrap();
    let swap = |text: &str, key: &str| {
        let at = text.find(&format!("{key} = [")).unwrap();
        let end = at + text[at..].find("]\n").unwrap();
        let body = &text[at..end];
        let mut lines: Vec<&str> = body.lines().skip(1).collect();
        lines.reverse();
        let dup = lines[0].to_string();
        format!(
            "{}{key} = [\n{}\n{dup}\n{}",
            &text[..at],
            lines.join("\n"),
            &text[end..]
        )
    };
    let edited = swap(&swap(&text, "PASS_TO_PASS"), "FAIL_TO_PASS");
    assert_ne!(edited, text);
    fs_err::write(&toml, edited).unwrap();
    assert_eq!(plan_to_run(&sb), Vec::<String>::new());
    let o = timed(&sb, &["apply", "quickstart.toml"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(executed(&o).is_empty(), "{}", stderr(&o));
}

/// `bench verify` counts a corrupt blob once, however many cached results share it (the nop
/// team's trajectory is the same bytes for every task).
#[test]
fn verify_counts_a_shared_corrupt_blob_once() {
    let sb = applied_with_memo();
    let (_, digest) = blob_at(
        &sb,
        &|a| a.starts_with("solve/") && a.contains("/nop/"),
        "trajectory",
    );
    let path = sb.path(&format!(".bench/objects/{}/{}", &digest[..2], &digest[2..]));
    let mut bytes = fs_err::read(&path).unwrap();
    bytes[0] ^= 0x20;
    fs_err::write(&path, &bytes).unwrap();
    let o = timed(&sb, &["verify", "quickstart.toml"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let out = stdout(&o);
    assert_eq!(
        out.lines().filter(|l| l.contains(&digest[2..])).count(),
        1,
        "{out}"
    );
    assert!(out.contains("cached results)"), "{out}");
    assert!(out.contains(", 1 bad"), "{out}");
}
