//! Hostile task files and damaged stores, end to end through the binary: a FIFO or a device
//! anywhere bench reads a task is an error naming the task and the file (nothing hangs, nothing
//! reads until memory runs out), a task that cannot be read is never dropped, a directory link
//! in a task's `repo/` (or planted by a candidate) never makes grading touch a file outside the
//! workspace, with or without the jail, a report killed mid-write leaves no temp file, and a
//! deleted, emptied or flipped blob is found and recomputed in one apply with a right report.

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
    let old = std::fs::read(path).unwrap();
    std::fs::remove_file(path).unwrap();
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
                std::fs::remove_file(&path).unwrap();
                std::fs::write(&path, old).unwrap();
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
            std::fs::remove_file(&path).unwrap();
            std::fs::write(&path, old).unwrap();
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
    std::fs::remove_file(task_dir(&sb).join("task.toml")).unwrap();
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
    std::fs::create_dir_all(sb.path("quickstart/tasks/.git/objects")).unwrap();
    std::fs::write(sb.path("quickstart/tasks/README.md"), "tasks\n").unwrap();
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
    std::fs::create_dir_all(&tests).unwrap();
    let mut files = Vec::new();
    for name in ["__init__.py", "test_roman.py"] {
        let bytes = std::fs::read(task_dir(sb).join("repo/tests").join(name)).unwrap();
        std::fs::write(tests.join(name), &bytes).unwrap();
        files.push((tests.join(name), bytes));
    }
    (outside, files)
}

fn untouched(files: &[(PathBuf, Vec<u8>)], mode: &str) {
    for (p, bytes) in files {
        assert_eq!(
            std::fs::read(p).ok().as_ref(),
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
        std::fs::remove_dir_all(&repo_tests).unwrap();
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
        std::fs::write(
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
    let manifest = std::fs::canonicalize(sb.manifest()).unwrap();
    let index = store.load_index(&manifest);
    let (_, key) = index
        .nodes
        .iter()
        .find(|(a, _)| a.starts_with("grade/") && a.contains(&format!("/{team}/")))
        .expect("a grade");
    let bench::store::Lookup::Hit(rec) = store.get_action(key) else {
        panic!("no record for {key}")
    };
    String::from_utf8_lossy(&store.get_blob(&rec.blobs[name]).unwrap()).into_owned()
}
