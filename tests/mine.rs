//! `bench mine` and brain bench tasks, through the real binary, on git repositories the tests
//! build: which commits become tasks (and why the others do not), byte-identical reruns, the
//! mined tasks and a brain bench task graded by `bench apply` (gold / oracle resolved, nop
//! unresolved), located errors for bad YAML, and a hostile repository whose tests try to get
//! out of the jail while they are mined.
//!
//! Needs git, python3 and node (the fixture's node:test task); the jail test needs bubblewrap.
//! Under CI=true a missing one fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{bench_in, ci, stderr, stdout};

/// Runs git in `dir` with a fixed identity and the given date, no user config.
fn git(dir: &Path, date: &str, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Dev")
        .env("GIT_AUTHOR_EMAIL", "dev@example.com")
        .env("GIT_COMMITTER_NAME", "Dev")
        .env("GIT_COMMITTER_EMAIL", "dev@example.com")
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .expect("git");
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    stdout(&o).trim().to_string()
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    fs_err::create_dir_all(p.parent().unwrap()).unwrap();
    fs_err::write(p, text).unwrap();
}

fn commit(dir: &Path, day: u32, msg: &str) -> String {
    let date = format!("2026-07-{day:02}T10:00:00Z");
    git(dir, &date, &["add", "-A"]);
    git(dir, &date, &["commit", "-q", "-m", msg]);
    git(dir, &date, &["rev-parse", "HEAD"])
}

const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n";
const TEST_CALC: &str = "import unittest\n\nfrom calc import add\n\n\nclass TestCalc(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";

/// The fixture's commits, by what they are.
struct Fixture {
    initial: String,
    fix_sub: String,
    fix_readme: String,
    add_mul: String,
    fix_already_passing: String,
    fix_tests_only: String,
    fix_total: String,
}

/// A repository whose history holds: a Python fix with a failing test (kept), a "fix" without
/// tests, a non-fix commit with tests, a fix whose new test already passed before it, a fix
/// that changes only tests, and a JavaScript (node:test) fix with failing tests (kept).
fn fixture(dir: &Path) -> Fixture {
    fs_err::create_dir_all(dir).unwrap();
    git(dir, "2026-07-01T10:00:00Z", &["init", "-q", "-b", "main"]);
    write(dir, "calc.py", CALC);
    write(dir, "tests/__init__.py", "");
    write(dir, "tests/test_calc.py", TEST_CALC);
    let initial = commit(dir, 1, "Initial calculator");
    write(
        dir,
        "calc.py",
        &CALC.replace(
            "def sub(a, b):\n    return a + b",
            "def sub(a, b):\n    return a - b",
        ),
    );
    write(
        dir,
        "tests/test_calc.py",
        &format!(
            "{TEST_CALC}\n    def test_sub(self):\n        from calc import sub\n        self.assertEqual(sub(5, 3), 2)\n"
        ),
    );
    let fix_sub = commit(dir, 2, "Fix sub returning the sum\n\nsub(5, 3) gave 8.");
    write(dir, "README.md", "# calc\n");
    let fix_readme = commit(dir, 3, "Fix typo in README");
    let calc = fs_err::read_to_string(dir.join("calc.py")).unwrap();
    write(
        dir,
        "calc.py",
        &format!("{calc}\n\ndef mul(a, b):\n    return a * b\n"),
    );
    let test_mul = "import unittest\n\nfrom calc import mul\n\n\nclass TestMul(unittest.TestCase):\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n";
    write(dir, "tests/test_mul.py", test_mul);
    let add_mul = commit(dir, 4, "Add mul");
    let calc = fs_err::read_to_string(dir.join("calc.py")).unwrap();
    write(
        dir,
        "calc.py",
        &calc.replace("return a * b", "return a * b  # the product"),
    );
    write(
        dir,
        "tests/test_mul.py",
        &format!(
            "{test_mul}\n    def test_mul_zero(self):\n        self.assertEqual(mul(0, 3), 0)\n"
        ),
    );
    let fix_already_passing = commit(dir, 5, "Fix mul's comment, test zero");
    let t = fs_err::read_to_string(dir.join("tests/test_calc.py")).unwrap();
    write(
        dir,
        "tests/test_calc.py",
        &format!(
            "{t}\n    def test_add_negative(self):\n        self.assertEqual(add(-1, -1), -2)\n"
        ),
    );
    let fix_tests_only = commit(dir, 6, "Fix: a test for negatives");
    write(
        dir,
        "sum.mjs",
        "export function total(xs) {\n  return xs.reduce((a, b) => a + b, 1);\n}\n",
    );
    commit(dir, 7, "Add total");
    write(
        dir,
        "sum.mjs",
        "export function total(xs) {\n  return xs.reduce((a, b) => a + b, 0);\n}\n",
    );
    write(
        dir,
        "sum.test.mjs",
        "import test from 'node:test';\nimport assert from 'node:assert';\nimport { total } from './sum.mjs';\n\ntest('total of nothing is zero', () => {\n  assert.strictEqual(total([]), 0);\n});\n\ntest('total of one', () => {\n  assert.strictEqual(total([1]), 1);\n});\n",
    );
    let fix_total = commit(dir, 8, "Fix total starting at one");
    Fixture {
        initial,
        fix_sub,
        fix_readme,
        add_mul,
        fix_already_passing,
        fix_tests_only,
        fix_total,
    }
}

fn short(sha: &str) -> &str {
    &sha[..12]
}

/// Every file under `dir` with its relative path and bytes, sorted.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in fs_err::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                out.push((rel, fs_err::read(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn tools_ready() -> bool {
    let ok = |c: &str| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    match ["git", "python3", "node"].into_iter().find(|c| !ok(c)) {
        None => true,
        Some(c) if ci() => panic!("CI=true but `{c}` is missing"),
        Some(c) => {
            eprintln!("note: skipping: `{c}` is missing");
            false
        }
    }
}

fn bwrap_ready() -> bool {
    let ok = Command::new("bwrap")
        .args(["--unshare-all", "--ro-bind", "/", "/", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok && ci() {
        panic!("CI=true but bwrap is missing or cannot create namespaces: install bubblewrap");
    }
    if !ok {
        eprintln!("note: skipping: bwrap unavailable");
    }
    ok
}

/// The real binary with bench's cache (brain bench trees and clones) in `dir/cache`.
fn bench_cached(dir: &Path, args: &[&str]) -> Output {
    Command::new(common::bench_bin())
        .args(args)
        .current_dir(dir)
        .env_remove("BENCH_STORE")
        .env("NO_COLOR", "1")
        .env("BENCH_CACHE_DIR", dir.join("cache"))
        .output()
        .expect("run bench")
}

fn mine(dir: &Path, args: &[&str]) -> Output {
    let mut all = vec!["mine"];
    all.extend_from_slice(args);
    bench_in(dir, &all)
}

#[test]
fn mine_keeps_exactly_the_fixes_whose_tests_fail_before_and_reruns_byte_identical() {
    if !tools_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let f = fixture(&tmp.path().join("calc"));
    let o = mine(tmp.path(), &["calc", "--out", "tasks"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let line = |sha: &str| {
        out.lines()
            .find(|l| l.contains(short(sha)))
            .unwrap_or_else(|| panic!("no line for {sha} in\n{out}"))
            .to_string()
    };
    assert!(line(&f.fix_sub).starts_with("kept"), "{out}");
    assert!(
        line(&f.fix_sub).contains("local__calc-")
            && line(&f.fix_sub).contains("(unittest, FAIL_TO_PASS 1, PASS_TO_PASS 1)"),
        "{out}"
    );
    assert!(line(&f.fix_total).starts_with("kept"), "{out}");
    assert!(
        line(&f.fix_total).contains("(node:test, FAIL_TO_PASS 2, PASS_TO_PASS 0)"),
        "{out}"
    );
    assert!(
        line(&f.fix_readme).starts_with("rejected")
            && line(&f.fix_readme).ends_with("it changes no test file"),
        "{out}"
    );
    assert!(
        line(&f.fix_already_passing).contains(
            "no FAIL_TO_PASS test: every test that passes after the fix already passed before it"
        ),
        "{out}"
    );
    assert!(
        line(&f.fix_tests_only).contains("it changes only tests"),
        "{out}"
    );
    // Commits whose message does not match are not candidates.
    assert!(
        !out.contains(short(&f.add_mul)) && !out.contains(short(&f.initial)),
        "{out}"
    );
    assert!(
        out.ends_with("2 kept, 3 rejected; tasks in tasks\n"),
        "{out}"
    );
    // Progress goes to stderr.
    assert!(stderr(&o).contains("before the fix"), "{}", stderr(&o));

    let mut dirs: Vec<String> = fs_err::read_dir(tmp.path().join("tasks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    let sub_id = format!("local__calc-{}", short(&f.fix_sub));
    let total_id = format!("local__calc-{}", short(&f.fix_total));
    let mut want = vec![sub_id.clone(), total_id.clone()];
    want.sort();
    assert_eq!(dirs, want);
    let task =
        fs_err::read_to_string(tmp.path().join("tasks").join(&sub_id).join("task.toml")).unwrap();
    for expected in [
        format!("instance_id = \"{sub_id}\""),
        "repo = \"local/calc\"".to_string(),
        "language = \"python\"".to_string(),
        "created_at = 2026-07-02T10:00:00Z".to_string(),
        format!("base_commit = \"{}\"", f.initial),
        "test_cmd = \"python3 -m unittest -v tests.test_calc\"".to_string(),
        "log_parser = \"unittest\"".to_string(),
        "FAIL_TO_PASS = [\n    \"test_sub (tests.test_calc.TestCalc.test_sub)\",\n]".to_string(),
        "PASS_TO_PASS = [\n    \"test_add (tests.test_calc.TestCalc.test_add)\",\n]".to_string(),
    ] {
        assert!(task.contains(&expected), "{expected} not in\n{task}");
    }
    let sub = tmp.path().join("tasks").join(&sub_id);
    let test_patch = fs_err::read_to_string(sub.join("test.patch")).unwrap();
    let gold_patch = fs_err::read_to_string(sub.join("gold.patch")).unwrap();
    assert!(
        test_patch.contains("+++ b/tests/test_calc.py")
            && !test_patch.contains("calc.py\n+++ b/calc.py"),
        "{test_patch}"
    );
    assert!(
        gold_patch.contains("+++ b/calc.py") && !gold_patch.contains("tests/"),
        "{gold_patch}"
    );
    // repo/ is the parent's tree: the bug, without the fix's test.
    assert_eq!(
        fs_err::read_to_string(sub.join("repo/calc.py")).unwrap(),
        CALC
    );
    assert_eq!(
        fs_err::read_to_string(sub.join("repo/tests/test_calc.py")).unwrap(),
        TEST_CALC
    );
    assert!(!sub.join("repo/.git").exists());

    // A rerun prints and writes the same bytes, and leaves no staging directory.
    let before = tree(&tmp.path().join("tasks"));
    let again = mine(tmp.path(), &["calc", "--out", "tasks"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(stdout(&again), out);
    assert_eq!(tree(&tmp.path().join("tasks")), before);

    // --since keeps commits from that day on; --grep another pattern; --limit stops early.
    let o = mine(
        tmp.path(),
        &["calc", "--out", "since", "--since", "2026-07-05"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).ends_with("1 kept, 2 rejected; tasks in since\n"),
        "{}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains(short(&f.fix_sub)));
    let o = mine(tmp.path(), &["calc", "--out", "grep", "--grep", "sum"]);
    assert!(
        stdout(&o).ends_with("1 kept, 0 rejected; tasks in grep\n"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains(short(&f.fix_sub)));
    let o = mine(tmp.path(), &["calc", "--out", "limit", "--limit", "1"]);
    assert!(
        stdout(&o).ends_with("1 kept, 0 rejected; tasks in limit\n"),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains(short(&f.fix_total)),
        "newest first: {}",
        stdout(&o)
    );
}

#[test]
fn mine_errors_name_the_problem() {
    let tmp = tempfile::tempdir().unwrap();
    fs_err::create_dir(tmp.path().join("plain")).unwrap();
    let o = mine(tmp.path(), &["plain"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("plain is not a git repository"),
        "{}",
        stderr(&o)
    );
    git(
        &tmp.path().join("plain"),
        "2026-07-01T10:00:00Z",
        &["init", "-q"],
    );
    for (args, want) in [
        (
            vec!["plain", "--since", "yesterday"],
            "bad --since: `yesterday` is not a date",
        ),
        (vec!["plain", "--since", "2026-13-01"], "bad --since"),
        (vec!["plain", "--timeout", "soon"], "bad --timeout `soon`"),
        (vec!["plain", "--limit", "0"], "bad --limit"),
        (vec!["plain", "--grep", " "], "--grep is empty"),
    ] {
        let o = mine(tmp.path(), &args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
    // An empty repository has nothing to mine.
    let o = mine(tmp.path(), &["plain", "--out", "none"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).ends_with("0 kept, 0 rejected; tasks in none\n"),
        "{}",
        stdout(&o)
    );
}

fn manifest(dir: &Path, name: &str, format: &str, path: &str) -> PathBuf {
    let m = dir.join(format!("{name}.toml"));
    fs_err::write(
        &m,
        format!(
            r#"version = 1
name = "{name}"

[backend]
kind = "local"

[datasets.tasks]
format = "{format}"
path = "{path}"

[stages.sample]
kind = "sample"
dataset = "tasks"

[stages.gold]
kind = "gold"
needs = ["sample"]
timeout = "2m"

[stages.solve]
kind = "solve"
needs = ["gold"]
teams = ["oracle", "nop"]
timeout = "2m"

[stages.grade]
kind = "grade"
needs = ["solve"]
timeout = "2m"

[stages.report]
kind = "report"
needs = ["grade"]
baseline = "nop"

[teams.oracle]
topology = "solo"
worker = "oracle"

[teams.nop]
topology = "solo"
worker = "nop"
"#
        ),
    )
    .unwrap();
    m
}

/// (team, resolved) of a report.json, and the gold stage's count of resolved tasks.
fn resolved(dir: &Path, name: &str) -> Vec<(String, u64)> {
    let text = fs_err::read_to_string(dir.join(format!("reports/{name}/report.json"))).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut out: Vec<(String, u64)> = v["teams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["resolved"].as_u64().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn mined_tasks_grade_gold_resolved_and_nop_unresolved() {
    if !tools_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    fixture(&tmp.path().join("calc"));
    let o = mine(tmp.path(), &["calc", "--out", "tasks"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let m = manifest(tmp.path(), "mined", "local", "tasks");
    let o = bench_in(tmp.path(), &["apply", m.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("gold: 0 cached, 2 done, 0 failed"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        resolved(tmp.path(), "mined"),
        vec![("nop".to_string(), 0), ("oracle".to_string(), 2)]
    );
}

fn brain_task(before: &str, fix: &str) -> String {
    format!(
        "id: calc-0001\nrepo: ../calc\ncommit_before: {before}\ncommit_fix: {fix}\nprompt: |\n  sub(5, 3) returns 8 instead of 2.\nsetup: echo configured > .setup-done\ntest_files_from_fix: [tests/test_calc.py]\nverify: test -f .setup-done && python3 -m unittest tests.test_calc\ntimeout_s: 1800\nmax_cost_usd: 0.30\ntags: [python, small]\n"
    )
}

#[test]
fn a_brain_bench_task_grades_oracle_resolved_and_nop_unresolved() {
    if !tools_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let f = fixture(&tmp.path().join("calc"));
    write(
        tmp.path(),
        "brain/calc-0001.yaml",
        &brain_task(short(&f.initial), &f.fix_sub),
    );
    // The same task read through a URL: cloned into bench's cache.
    let url = format!(
        "file://{}",
        fs_err::canonicalize(tmp.path().join("calc"))
            .unwrap()
            .display()
    );
    write(
        tmp.path(),
        "brain/calc-0002.yaml",
        &brain_task(&f.initial, &f.fix_sub)
            .replace("id: calc-0001", "id: calc-0002")
            .replace("repo: ../calc", &format!("repo: {url}")),
    );
    let m = manifest(tmp.path(), "brain", "brain-bench", "brain");
    // An agent that looks for the fix in the repository the task was read from (hidden from
    // agents on the local backend: its history holds the fix).
    let jailed = bwrap_ready();
    let repo = fs_err::canonicalize(tmp.path().join("calc")).unwrap();
    let text = fs_err::read_to_string(&m).unwrap().replace(
        "teams = [\"oracle\", \"nop\"]",
        "teams = [\"oracle\", \"nop\", \"peek\"]",
    );
    fs_err::write(
        &m,
        format!(
            "{text}\n[teams.peek]\ntopology = \"solo\"\nworker = \"peek\"\n\n[harnesses.peek]\nkind = \"command\"\ncommand = \"(git -C {r} show {fix}:calc.py; ls -a {r}) > peeked.txt 2>&1; true\"\n",
            r = repo.display(),
            fix = f.fix_sub,
        ),
    )
    .unwrap();
    let o = bench_cached(tmp.path(), &["tasks", m.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("calc-0001") && stdout(&o).contains("2026-07-02T10:00:00Z"),
        "{}",
        stdout(&o)
    );
    let clones: Vec<_> = fs_err::read_dir(tmp.path().join("cache/git-clones"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".git"))
        .collect();
    assert_eq!(clones.len(), 1);
    let o = bench_cached(tmp.path(), &["apply", m.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        resolved(tmp.path(), "brain"),
        vec![
            ("nop".to_string(), 0),
            ("oracle".to_string(), 2),
            ("peek".to_string(), 0)
        ]
    );
    let peeked = common::stored_patches(&tmp.path().join(".bench"), &m, "peek");
    assert_eq!(peeked.len(), 2);
    assert!(peeked[0].contains("+++ b/peeked.txt"), "{}", peeked[0]);
    if jailed {
        assert!(
            !peeked[0].contains("return a - b") && !peeked[0].contains("+.git"),
            "an agent read the task's repository: {}",
            peeked[0]
        );
    }
    // The setup ran in the agent's workspace before the agent: not part of its patch.
    let patches = common::stored_patches(&tmp.path().join(".bench"), &m, "oracle");
    assert_eq!(patches.len(), 2);
    assert_eq!(patches[0], patches[1]);
    assert!(
        !patches[0].contains(".setup-done") && patches[0].contains("+++ b/calc.py"),
        "{}",
        patches[0]
    );
    assert!(
        !patches[0].contains("tests/test_calc.py"),
        "the hidden test is not the agent's: {}",
        patches[0]
    );
}

#[test]
fn bad_brain_bench_yaml_gets_a_located_error() {
    if !tools_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let f = fixture(&tmp.path().join("calc"));
    let good = brain_task(&f.initial, &f.fix_sub);
    let m = manifest(tmp.path(), "brain", "brain-bench", "brain");
    let remote = good.replace("repo: ../calc", "repo: file:///nonexistent/calc");
    for (text, want) in [
        (
            format!("{good}colour: red\n"),
            "calc-0001.yaml:13:1: unknown field `colour`",
        ),
        (
            good.replace("timeout_s: 1800", "timeout_s: -5"),
            "calc-0001.yaml:10:12: `timeout_s`: -5 is not a positive number of seconds",
        ),
        (
            good.replace("timeout_s: 1800", "timeout_s: soon"),
            "calc-0001.yaml:10:12: timeout_s: invalid type",
        ),
        (
            good.replace("max_cost_usd: 0.30", "max_cost_usd: -1"),
            "calc-0001.yaml:11:15: `max_cost_usd`",
        ),
        (
            good.replace("[tests/test_calc.py]", "[tests/nope.py]"),
            "calc-0001.yaml:8:22: `test_files_from_fix`: `tests/nope.py` is not a file at commit_fix",
        ),
        (
            good.replace("[tests/test_calc.py]", "[]"),
            "calc-0001.yaml:8:22: `test_files_from_fix`: is empty",
        ),
        (
            good.replace(&f.fix_sub, "deadbeef"),
            "calc-0001.yaml:4:13: `commit_fix`: `deadbeef` is not a commit",
        ),
        (
            good.replace("repo: ../calc", "repo: ../nowhere"),
            "calc-0001.yaml:2:7: `repo`:",
        ),
        (
            remote,
            "calc-0001.yaml:2:7: `repo`: cannot clone file:///nonexistent/calc",
        ),
        (
            good.replace("verify: ", "verify: ''\nx: "),
            "unknown field `x`",
        ),
        (
            good.replace("prompt: |", "prompt: [unclosed"),
            "calc-0001.yaml:",
        ),
        (
            good.lines()
                .filter(|l| !l.starts_with("verify"))
                .map(|l| format!("{l}\n"))
                .collect(),
            "missing field `verify`",
        ),
        (
            good.replace("id: calc-0001", "id: 'a b'"),
            "calc-0001.yaml:1:5: `id`: `a b` is not a task id",
        ),
    ] {
        write(tmp.path(), "brain/calc-0001.yaml", &text);
        let o = bench_cached(tmp.path(), &["plan", m.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{text}");
        // miette wraps long lines (also inside words): compare without whitespace.
        let squash = |s: &str| -> String {
            s.chars()
                .filter(|c| !c.is_whitespace() && *c != '│')
                .collect()
        };
        let err = stderr(&o);
        assert!(
            squash(&err).contains(&squash(want)),
            "want {want:?} in\n{err}"
        );
        assert!(err.contains("help:"), "{err}");
    }
    // Two files with one id.
    write(tmp.path(), "brain/calc-0001.yaml", &good);
    write(tmp.path(), "brain/calc-0002.yaml", &good);
    let o = bench_cached(tmp.path(), &["plan", m.to_str().unwrap()]);
    let squashed: String = stderr(&o)
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '│')
        .collect();
    assert!(
        squashed.contains("calc-0002.yaml:1:5:taskid`calc-0001`isalsotheidof"),
        "{}",
        stderr(&o)
    );
}

/// Mined twice: under the target directory, where only the jail's read-only view protects the
/// host, and under /tmp, as from a checkout there (issue 49, item 10).
#[test]
fn a_hostile_mined_repository_cannot_escape_the_jail() {
    if !tools_ready() || !bwrap_ready() {
        return;
    }
    hostile_repository_in(Path::new(env!("CARGO_TARGET_TMPDIR")));
    hostile_repository_in(Path::new("/tmp"));
}

fn hostile_repository_in(root: &Path) {
    let tmp = tempfile::tempdir_in(root).unwrap();
    let repo = tmp.path().join("hostile");
    // In a directory of its own: inside the jail, a checkout under /tmp shows the parents of
    // the workspace as fresh, writable directories of its private /tmp, so a file written
    // beside them would "pass" the probe without reaching the host.
    let outside = tmp.path().join("outside");
    fs_err::create_dir_all(&outside).unwrap();
    let host_file = outside.join("escaped.txt");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    fs_err::create_dir_all(&repo).unwrap();
    git(&repo, "2026-07-01T10:00:00Z", &["init", "-q", "-b", "main"]);
    write(&repo, "app.py", "def value():\n    return 1\n");
    write(&repo, "tests/__init__.py", "");
    let probes = r#"import glob
import os
import socket
import unittest

from app import value


class TestApp(unittest.TestCase):
    def test_value_type(self):
        self.assertIsInstance(value(), int)
"#;
    write(&repo, "tests/test_app.py", probes);
    commit(&repo, 1, "Initial app");
    write(&repo, "app.py", "def value():\n    return 2\n");
    // Each probe passes only if it got out.
    let escapes = format!(
        r#"
    def test_value(self):
        self.assertEqual(value(), 2)

    def test_write_outside_the_workspace(self):
        with open({host:?}, "w") as f:
            f.write("escaped")

    def test_read_the_mined_repository(self):
        with open({git_head:?}) as f:
            self.assertTrue(f.read())

    def test_network(self):
        socket.create_connection(("127.0.0.1", {port}), timeout=2).close()

    def test_bench_secret(self):
        self.assertEqual(os.environ.get("MINE_SECRET_PROBE"), "hunter2-in-env")

    def test_other_processes_secret(self):
        found = False
        for p in glob.glob("/proc/*/environ"):
            try:
                found = found or b"hunter2-in-env" in open(p, "rb").read()
            except OSError:
                pass
        self.assertTrue(found)
"#,
        host = host_file.display().to_string(),
        git_head = repo.join(".git/HEAD").display().to_string(),
    );
    write(&repo, "tests/test_app.py", &format!("{probes}{escapes}"));
    let fix = commit(&repo, 2, "Fix value");
    let o = Command::new(common::bench_bin())
        .args(["mine", "hostile", "--out", "tasks"])
        .current_dir(tmp.path())
        .env("MINE_SECRET_PROBE", "hunter2-in-env")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("(unittest, FAIL_TO_PASS 1, PASS_TO_PASS 1)"),
        "{}",
        stdout(&o)
    );
    let task = fs_err::read_to_string(
        tmp.path()
            .join("tasks")
            .join(format!("local__hostile-{}", short(&fix)))
            .join("task.toml"),
    )
    .unwrap();
    assert!(
        task.contains("test_value (tests.test_app.TestApp.test_value)"),
        "{task}"
    );
    assert!(
        !task.contains("escape")
            && !task.contains("secret")
            && !task.contains("network")
            && !task.contains("mined_repository"),
        "{task}"
    );
    assert!(!host_file.exists(), "a test wrote outside its workspace");
    assert!(
        listener.accept().is_err(),
        "a test reached the host's network"
    );
}
