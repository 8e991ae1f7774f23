//! Test helpers: a copy of the quickstart in a temp dir, and running the real binary.

#![allow(dead_code)]

pub mod slurm;

use std::path::{Path, PathBuf};
use std::process::Output;

pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    /// A temp dir holding `quickstart.toml` and `quickstart/` copied from examples/.
    pub fn quickstart() -> Sandbox {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let status = std::process::Command::new("cp")
            .arg("-a")
            .arg(root.join("quickstart"))
            .arg(root.join("quickstart.toml"))
            .arg(dir.path())
            .status()
            .expect("cp");
        assert!(status.success());
        Sandbox { dir }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn manifest(&self) -> PathBuf {
        self.path("quickstart.toml")
    }

    pub fn read(&self, rel: &str) -> String {
        fs_err::read_to_string(self.path(rel)).expect("read")
    }

    pub fn edit(&self, rel: &str, from: &str, to: &str) {
        let text = self.read(rel);
        assert!(text.contains(from), "{rel} does not contain {from:?}");
        fs_err::write(self.path(rel), text.replacen(from, to, 1)).expect("write");
    }

    pub fn append(&self, rel: &str, extra: &str) {
        let mut text = self.read(rel);
        text.push_str(extra);
        fs_err::write(self.path(rel), text).expect("write");
    }

    pub fn bench(&self, args: &[&str]) -> Output {
        bench_in(self.dir.path(), args)
    }

    pub fn report_json(&self) -> serde_json::Value {
        serde_json::from_str(&self.read("reports/quickstart/report.json")).expect("report.json")
    }
}

pub fn bench_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_bench"))
}

pub fn bench_in(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(bench_bin())
        .args(args)
        .current_dir(dir)
        .env_remove("BENCH_STORE")
        .env("NO_COLOR", "1")
        .output()
        .expect("run bench")
}

/// Runs the real binary like [`bench_in`], with extra environment variables.
pub fn bench_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    std::process::Command::new(bench_bin())
        .args(args)
        .current_dir(dir)
        .env_remove("BENCH_STORE")
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .output()
        .expect("run bench")
}

/// The files directly in `dir` whose extension is `ext`, sorted (none if `dir` is missing).
pub fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs_err::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    out.sort();
    out
}

/// Runs the real binary like [`bench_in`], killed after `timeout` (a hang fails the test instead
/// of stalling the suite: the exit status is then a signal, not a code).
pub fn bench_timed(dir: &Path, args: &[&str], timeout: std::time::Duration) -> Output {
    assert_cmd::Command::new(bench_bin())
        .args(args)
        .current_dir(dir)
        .env_remove("BENCH_STORE")
        .env("NO_COLOR", "1")
        .timeout(timeout)
        .output()
        .expect("run bench")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Node addresses a plan would run.
pub fn plan_to_run(sb: &Sandbox) -> Vec<String> {
    let o = sb.bench(&["plan", "--json", "quickstart.toml"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("plan json");
    let mut out: Vec<String> = v["to_run"]
        .as_array()
        .expect("to_run")
        .iter()
        .map(|e| e["address"].as_str().expect("address").to_string())
        .collect();
    out.sort();
    out
}

/// Addresses that a run actually executed (not cached), from its progress lines.
pub fn executed(o: &Output) -> Vec<String> {
    let mut v: Vec<String> = stderr(o)
        .lines()
        .filter_map(|l| l.strip_prefix("done    "))
        .filter(|l| !l.contains("(same key as"))
        .map(|l| l.split("  ").next().unwrap_or("").to_string())
        .collect();
    v.sort();
    v
}

/// Every file under `dir`, concatenated.
pub fn everything(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = fs_err::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.extend(everything(&p));
        } else {
            out.extend(fs_err::read(&p).unwrap_or_default());
        }
    }
    out
}

/// The patches the store holds for `team`'s solves of the manifest `manifest` (records hold no
/// address: the index maps addresses to keys).
pub fn stored_patches(store_dir: &Path, manifest: &Path, team: &str) -> Vec<String> {
    let store = bench::store::Store::open_existing(store_dir).expect("a store");
    let manifest = fs_err::canonicalize(manifest).expect("the manifest");
    let mut out = Vec::new();
    for (address, key) in store.load_index(&manifest).nodes {
        if address.starts_with("solve/") && address.contains(&format!("/{team}/")) {
            let bench::store::Lookup::Hit(rec) = store.get_action(&key) else {
                panic!("no record for {address}");
            };
            let d = &rec.solve().expect("a solve").patch;
            out.push(
                String::from_utf8(
                    store
                        .get_blob(&bench::types::Digest::parse(d).unwrap())
                        .unwrap(),
                )
                .unwrap(),
            );
        }
    }
    out
}

/// Whether the tests run under CI (`CI=true`), where a missing tool or daemon is a failure.
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Whether the Docker daemon and the fixture `images` are here: under CI a missing one panics,
/// elsewhere the test is skipped with a note.
pub fn docker_ready(images: &[&str]) -> bool {
    use std::process::{Command, Stdio};
    let quiet = |c: &mut Command| {
        c.stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let problem = if !quiet(Command::new("docker").arg("info")) {
        Some("no Docker daemon".to_string())
    } else {
        images
            .iter()
            .find(|i| !quiet(Command::new("docker").args(["image", "inspect", i])))
            .map(|i| format!("image {i} missing: run scripts/build-test-images.sh"))
    };
    match problem {
        None => true,
        Some(p) if ci() => panic!("CI=true but {p}"),
        Some(p) => {
            eprintln!("note: skipping a docker test: {p}");
            false
        }
    }
}

/// The calc fixture image of `scripts/build-test-images.sh`: its repository at `/testbed`,
/// whose history holds the base commit and the fix.
pub const CALC_IMAGE: &str = "bench-test-calc:1";

/// The calc fixture's fix of `add` (its gold patch).
pub const CALC_FIX: &str = "diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,5 +1,5 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def mul(a, b):
";

/// The calc fixture's hidden test of `add`.
pub const CALC_TEST_PATCH: &str = "diff --git a/tests/test_add.py b/tests/test_add.py
new file mode 100644
--- /dev/null
+++ b/tests/test_add.py
@@ -0,0 +1,8 @@
+import unittest
+
+from calc import add
+
+
+class T(unittest.TestCase):
+    def test_add(self):
+        self.assertEqual(add(2, 3), 5)
";

/// The calc fixture's (base, fix) commits, as the image records them in `/fixture-shas`.
pub fn calc_shas() -> (String, String) {
    let out = std::process::Command::new("docker")
        .args([
            "run",
            "--rm",
            "--entrypoint",
            "cat",
            CALC_IMAGE,
            "/fixture-shas",
        ])
        .output()
        .expect("docker run");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .expect("sha")
            .to_string()
    };
    (get("base"), get("fix"))
}

/// A manifest gold-grading every task of the local dataset `tasks/` on docker (1 CPU, 1 GiB):
/// `backend` holds more `[backend]` lines, `limits` the `[limits]` lines.
pub fn docker_gold_manifest(name: &str, backend: &str, limits: &str) -> String {
    format!(
        r#"version = 1
name = "{name}"

[backend]
kind = "docker"
cpus = 1
memory = "1GiB"
{backend}

[limits]
{limits}

[datasets.fx]
format = "local"
path = "tasks"

[stages.sample]
kind = "sample"
dataset = "fx"
since = 2026-07-01
seed = 1

[stages.gold]
kind = "gold"
needs = ["sample"]
timeout = "60s"
"#
    )
}

/// `actual` against `expected`, recursively: the same keys in the same order, exact integers and
/// strings, other numbers within `tol` (relative above 1). Every difference is pushed to `errors`
/// with its JSON path.
pub fn compare_json(
    path: &str,
    actual: &serde_json::Value,
    expected: &serde_json::Value,
    tol: f64,
    errors: &mut Vec<String>,
) {
    use serde_json::Value;
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => {
            let ak: Vec<_> = a.keys().collect();
            let ek: Vec<_> = e.keys().collect();
            if ak != ek {
                errors.push(format!("{path}: keys {ak:?} != {ek:?}"));
            }
            for (k, v) in e {
                if let Some(x) = a.get(k) {
                    compare_json(&format!("{path}.{k}"), x, v, tol, errors);
                }
            }
        }
        (Value::Array(a), Value::Array(e)) => {
            if a.len() != e.len() {
                errors.push(format!("{path}: length {} != {}", a.len(), e.len()));
            }
            for (i, (x, y)) in a.iter().zip(e).enumerate() {
                compare_json(&format!("{path}[{i}]"), x, y, tol, errors);
            }
        }
        (Value::Number(a), Value::Number(e)) => {
            let same = match (a.as_u64(), e.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => {
                    let (x, y) = (
                        a.as_f64().unwrap_or(f64::NAN),
                        e.as_f64().unwrap_or(f64::NAN),
                    );
                    x == y || (x - y).abs() <= tol * x.abs().max(y.abs()).max(1.0)
                }
            };
            if !same {
                errors.push(format!("{path}: {a} != {e}"));
            }
        }
        _ if actual == expected => {}
        _ => errors.push(format!("{path}: {actual} != {expected}")),
    }
}

/// The pricing table's entries for the fake claude's models, at which its 1000 input and 100
/// output tokens a call cost $0.01, its own printed total (the table wins for a model it
/// prices, so tests that count $0.01 a call price them).
pub const FAKE_CLAUDE_PRICES: &str = r#"
[pricing."claude-haiku-5-5"]
input = 9.0
output = 10.0

[pricing."claude-sonnet-5-5"]
input = 9.0
output = 10.0
"#;

/// A cache signing key written in `dir` (`bench cache keygen --out`), and its public key.
pub fn keygen(dir: &Path) -> (String, String) {
    let key = dir.join("worker.key");
    let out = bench_in(dir, &["cache", "keygen", "--out", key.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let public = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.starts_with("ed25519:"))
        .expect("a public key")
        .to_string();
    (key.display().to_string(), public)
}

/// miette wraps messages at 100 columns: stderr with each run of whitespace (and the `│` that
/// starts a continued line) made one space, so a test can look for a whole message.
pub fn flat(text: &str) -> String {
    text.split_whitespace()
        .filter(|w| *w != "│")
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every file under `dir`: its path relative to `dir`, and its bytes, sorted by path.
pub fn files_under(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs_err::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, fs_err::read(&p).unwrap());
            }
        }
    }
    out
}
