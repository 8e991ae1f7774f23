//! The docker backend against the real Docker Engine of this machine, no mocks. Images come from
//! `scripts/build-test-images.sh` (run by .ci/run): under CI=true a missing daemon or image is a
//! failure; elsewhere these tests print a note and pass.
//!
//! All docker tests run one at a time (`.config/nextest.toml`, group `docker`): `bench clean`
//! removes every bench container on the daemon.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{FAKE_CLAUDE_PRICES, bench_in, ci, everything, executed, stderr, stdout};

const IMAGE: &str = "bench-test-calc:1";

/// Whether the daemon and the fixture image are here (panics under CI when not).
fn docker_ready() -> bool {
    common::docker_ready(&[IMAGE])
}

use common::calc_shas as shas;
use common::{CALC_FIX as FIX, CALC_TEST_PATCH as TEST_PATCH};

/// Names of bench containers on the daemon (optionally of one label filter).
fn bench_containers(filter: &str) -> Vec<String> {
    let out = Command::new("docker")
        .args([
            "ps",
            "-a",
            "--filter",
            "label=bench=1",
            "--filter",
            filter,
            "--format",
            "{{.Names}}",
        ])
        .output()
        .expect("docker ps");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

const FIX_BREAK_MUL: &str = "diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,6 +1,6 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def mul(a, b):
-    return a * b
+    return a * b + 1
";

const NO_FIX: &str = "diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,3 @@
+# calculator
 def add(a, b):
     return a - b
";

/// Fixes calc.py (applies) but its README hunk does not: not fully applied.
const PARTIAL: &str = "diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,5 +1,5 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def mul(a, b):
diff --git a/README.md b/README.md
--- a/README.md
+++ b/README.md
@@ -1,3 +1,3 @@
 calc
 ====
-A calculator that does not exist.
+A calculator.
";

const BAD_TEST_PATCH: &str = "diff --git a/tests/test_mul.py b/tests/test_mul.py
--- a/tests/test_mul.py
+++ b/tests/test_mul.py
@@ -1,3 +1,3 @@
-import pytest
+import unittest
 
 from calc import mul
";

const PARSER: &str = r#"import re
def parser(log):
    out = {}
    for line in log.splitlines():
        m = re.match(r"^(\w+) \(([\w.]+)\) \.\.\. (ok|FAIL|ERROR)", line)
        if m:
            out[m.group(2)] = "pass" if m.group(3) == "ok" else "fail"
    return out
"#;

const RUN_TESTS: &str =
    "cd /testbed && python3 -m unittest -v tests.test_add tests.test_mul > /tmp/unittest.log 2>&1";

struct Fx<'a> {
    id: &'a str,
    gold: &'a str,
    test_patch: &'a str,
    test_cmds: Vec<String>,
    print_cmds: Vec<String>,
    parser: &'a str,
    base: Option<&'a str>,
}

fn fx<'a>(id: &'a str, gold: &'a str) -> Fx<'a> {
    Fx {
        id,
        gold,
        test_patch: TEST_PATCH,
        test_cmds: vec![RUN_TESTS.to_string()],
        print_cmds: vec!["cat /tmp/unittest.log".to_string()],
        parser: PARSER,
        base: None,
    }
}

fn write_task(dir: &Path, image: &str, base: &str, f: &Fx) {
    let d = dir.join(f.id);
    fs_err::create_dir_all(&d).unwrap();
    let list = |v: &[String]| {
        format!(
            "[{}]",
            v.iter()
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let toml = format!(
        "instance_id = {id:?}\nrepo = \"fixture/calc\"\nlanguage = \"python\"\ncreated_at = 2026-08-01T00:00:00Z\n\
problem_statement = \"add() subtracts\"\nimage = {image:?}\nbase_commit = {base:?}\n\
test_cmds = {tc}\nprint_cmds = {pc}\nlog_parser = '''\n{parser}'''\n\
FAIL_TO_PASS = [\"tests.test_add.T.test_add\"]\nPASS_TO_PASS = [\"tests.test_mul.T.test_mul\"]\n",
        id = f.id,
        base = f.base.unwrap_or(base),
        tc = list(&f.test_cmds),
        pc = list(&f.print_cmds),
        parser = f.parser,
    );
    // The builtin parser: its name, and unittest's own test names.
    let toml = if f.parser == "unittest" {
        toml.replace("log_parser = '''\nunittest'''", "log_parser = \"unittest\"")
            .replace(
                "\"tests.test_add.T.test_add\"",
                "\"test_add (tests.test_add.T.test_add)\"",
            )
            .replace(
                "\"tests.test_mul.T.test_mul\"",
                "\"test_mul (tests.test_mul.T.test_mul)\"",
            )
    } else {
        toml
    };
    fs_err::write(d.join("task.toml"), toml).unwrap();
    fs_err::write(d.join("gold.patch"), f.gold).unwrap();
    fs_err::write(d.join("test.patch"), f.test_patch).unwrap();
}

const AGENT: &str = r#"set -e
sed -i 's/return a - b/return a + b/' calc.py
git commit -qam "agent fix"
echo "notes" > NOTES.md
mkdir -p __pycache__ && echo x > __pycache__/calc.cpython-311.pyc
echo "ignored" > debug.log
echo "changed" > build_output.txt
"#;

fn manifest(timeout: &str, teams: bool) -> String {
    let mut m = format!(
        r#"{header}
[stages.gold]
kind = "gold"
needs = ["sample"]
timeout = "{timeout}"
"#,
        header = docker_header("docker-fixtures")
    );
    if teams {
        m.push_str(
            r#"
[stages.solve]
kind = "solve"
needs = ["gold"]
teams = ["oracle", "nop", "agent"]
timeout = "60s"

[stages.grade]
kind = "grade"
needs = ["solve"]
timeout = "20s"

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

[teams.agent]
topology = "solo"
worker = "agent"

[harnesses.agent]
kind = "command"
command = "sh {{script}}"
script = "agent.sh"
"#,
        );
    }
    m
}

/// Every completed node of `dir/m.toml` in the store under `dir/.bench`: its address (from the
/// index; records hold none), kind, key, and output, with a solve's cost derived from its
/// recorded usage and the manifest's prices (as the report derives it).
fn actions(dir: &Path) -> Vec<serde_json::Value> {
    let store = bench::store::Store::open_existing(&dir.join(".bench")).expect("a store");
    let manifest = fs_err::canonicalize(dir.join("m.toml")).unwrap();
    let m = bench::manifest::load(&manifest).unwrap();
    let mut out = Vec::new();
    for (address, key) in store.load_index(&manifest).nodes {
        let bench::store::Lookup::Hit(rec) = store.get_action(&key) else {
            panic!("no valid record for {address}");
        };
        let (node, mut output) = match &rec.output {
            bench::store::Output::Sample(o) => ("sample", serde_json::to_value(o).unwrap()),
            bench::store::Output::Grade(o) => ("grade", serde_json::to_value(o).unwrap()),
            bench::store::Output::Solve(o) => ("solve", serde_json::to_value(o).unwrap()),
            bench::store::Output::Report(o) => ("report", serde_json::to_value(o).unwrap()),
        };
        if let Some(s) = rec.solve() {
            output["cost_usd"] = serde_json::json!(s.cost_usd(&m.pricing));
        }
        out.push(serde_json::json!({
            "address": address,
            "node": node,
            "key": key,
            "output": output,
            "blobs": rec.blobs,
        }));
    }
    out
}

fn blob(dir: &Path, digest: &str) -> String {
    let p = dir
        .join(".bench/objects")
        .join(&digest[..2])
        .join(&digest[2..]);
    String::from_utf8_lossy(&fs_err::read(p).unwrap()).into_owned()
}

fn output_of<'a>(acts: &'a [serde_json::Value], address: &str) -> &'a serde_json::Value {
    acts.iter()
        .find(|a| a["address"] == address)
        .unwrap_or_else(|| panic!("no record for {address}"))
}

#[test]
fn fixture_dataset_verdicts_gold_solve_grade_and_cached_rerun() {
    if !docker_ready() {
        return;
    }
    let (base, _) = shas();
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks");
    let hang_parser = "def parser(log):\n    while True:\n        pass\n";
    let raise_parser = "def parser(log):\n    raise ValueError('broken parser')\n";
    let fixtures = vec![
        fx("ok", FIX),
        fx("p2p-broken", FIX_BREAK_MUL),
        fx("f2p-fails", NO_FIX),
        fx("patch-partial", PARTIAL),
        Fx {
            test_patch: BAD_TEST_PATCH,
            ..fx("testpatch-bad", FIX)
        },
        Fx {
            test_cmds: vec!["python3 -m unittest -v tests.test_add tests.test_mul".into()],
            print_cmds: vec![],
            parser: "unittest",
            ..fx("no-print", FIX)
        },
        Fx {
            parser: raise_parser,
            ..fx("parser-raises", FIX)
        },
        Fx {
            parser: hang_parser,
            ..fx("parser-hangs", FIX)
        },
        Fx {
            test_cmds: vec![format!("{RUN_TESTS}; sh -c 'sleep 600 & sleep 600'")],
            ..fx("test-hangs", FIX)
        },
    ];
    for f in &fixtures {
        write_task(&tasks, IMAGE, &base, f);
    }
    fs_err::write(dir.path().join("agent.sh"), AGENT).unwrap();
    fs_err::write(dir.path().join("m.toml"), manifest("20s", true)).unwrap();

    let t0 = Instant::now();
    let out = bench_in(dir.path(), &["apply", "m.toml"]);
    let err = stderr(&out);
    eprintln!("apply took {:?}\n{err}", t0.elapsed());
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        bench_containers("label=bench.run").is_empty(),
        "containers survived"
    );

    let acts = actions(dir.path());
    let gold = |id: &str| output_of(&acts, &format!("gold/{id}"))["output"].clone();
    assert_eq!(gold("ok")["resolved"], true);
    assert_eq!(gold("no-print")["resolved"], true);
    let p2p = gold("p2p-broken");
    assert_eq!(p2p["resolved"], false);
    assert_eq!(p2p["pass_to_pass_failure"][0], "tests.test_mul.T.test_mul");
    let f2p = gold("f2p-fails");
    assert_eq!(f2p["resolved"], false);
    assert_eq!(f2p["fail_to_pass_failure"][0], "tests.test_add.T.test_add");
    let partial = gold("patch-partial");
    assert_eq!(partial["resolved"], false);
    assert_eq!(partial["patch_applied"], false);
    // Its applied hunk fixed add(): only the apply rule makes it unresolved.
    assert_eq!(
        partial["fail_to_pass_success"][0],
        "tests.test_add.T.test_add"
    );
    let hung = gold("test-hangs");
    assert_eq!(hung["resolved"], false);
    assert_eq!(hung["timed_out"], true);
    // Errored (not cached): the bad test patch, the raising and the hanging parser.
    for (id, msg) in [
        ("testpatch-bad", "hidden test patch"),
        ("parser-raises", "ValueError: broken parser"),
        ("parser-hangs", "timed out"),
    ] {
        assert!(
            !acts.iter().any(|a| a["address"] == format!("gold/{id}")),
            "{id} was cached"
        );
        let line = err
            .lines()
            .find(|l| l.contains(&format!("gold/{id}:")))
            .unwrap_or_else(|| panic!("no failure line for {id}"));
        assert!(
            err.contains(msg),
            "{id}: {msg:?} not in the failures: {line}"
        );
    }
    // Blobs: full log, apply log, statuses.
    let rec = output_of(&acts, "gold/ok");
    assert!(blob(dir.path(), rec["blobs"]["log"].as_str().unwrap()).contains("test_add"));
    assert!(
        blob(dir.path(), rec["blobs"]["apply_log"].as_str().unwrap()).contains(">>>>> test patch")
    );
    assert!(
        blob(dir.path(), rec["blobs"]["statuses"].as_str().unwrap())
            .contains("tests.test_add.T.test_add")
    );

    // Gold passes exactly the valid tasks: solves and grades run on `ok` and `no-print` only.
    let solves: Vec<String> = acts
        .iter()
        .filter(|a| a["node"] == "solve")
        .map(|a| a["address"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(solves.len(), 6, "{solves:?}");
    assert!(
        solves
            .iter()
            .all(|s| s.contains("/ok/") || s.contains("/no-print/")),
        "{solves:?}"
    );
    for a in acts
        .iter()
        .filter(|a| a["node"] == "grade" && !a["address"].as_str().unwrap().starts_with("gold/"))
    {
        let addr = a["address"].as_str().unwrap();
        let want = !addr.contains("/nop/");
        assert_eq!(a["output"]["resolved"], want, "{addr}");
    }
    // The command agent's patch: its commit and new file, not bytecode, ignored or
    // start-untracked files.
    let agent = acts
        .iter()
        .find(|a| a["node"] == "solve" && a["address"].as_str().unwrap().contains("/ok/agent"))
        .expect("agent solve");
    let patch = blob(dir.path(), agent["blobs"]["patch"].as_str().unwrap());
    assert!(patch.contains("+    return a + b"), "{patch}");
    assert!(patch.contains("NOTES.md"), "{patch}");
    for absent in ["pyc", "__pycache__", "debug.log", "build_output.txt"] {
        assert!(!patch.contains(absent), "{absent} in {patch}");
    }

    // A rerun runs only the errored nodes again; everything else is cached.
    let out = bench_in(dir.path(), &["plan", "m.toml", "--explain"]);
    let text = stdout(&out);
    let to_run: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("+ "))
        .collect();
    // The three errored gold nodes, and (estimated) what depends on them; nothing of the
    // completed tasks.
    assert_eq!(
        to_run.iter().filter(|l| l.contains("+ gold/")).count(),
        3,
        "{text}"
    );
    assert!(
        !to_run
            .iter()
            .any(|l| l.contains("/ok/") || l.contains("/no-print/")),
        "{text}"
    );
    let out = bench_in(dir.path(), &["apply", "m.toml"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let runs: Vec<_> = fs_err::read_dir(dir.path().join(".bench/runs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    let last = runs.iter().max().unwrap();
    let rec: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(last).unwrap()).unwrap();
    let ran: Vec<&String> = rec["nodes"]
        .as_object()
        .unwrap()
        .iter()
        // The report reads the failures too, so it is rewritten.
        .filter(|(k, n)| n["status"] != "cached" && k.as_str() != "report")
        .map(|(k, _)| k)
        .collect();
    assert_eq!(ran.len(), 3, "{ran:?}");
    assert!(bench_containers("label=bench.run").is_empty());
}

#[test]
fn image_rebuilt_under_the_same_tag_changes_the_key() {
    if !docker_ready() {
        return;
    }
    let (base, _) = shas();
    let tag = format!("bench-test-retag-{}:1", std::process::id());
    let sh = |args: &[&str]| {
        let o = Command::new("docker").args(args).output().unwrap();
        assert!(
            o.status.success(),
            "docker {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    sh(&["tag", IMAGE, &tag]);
    let dir = tempfile::tempdir().unwrap();
    write_task(&dir.path().join("tasks"), &tag, &base, &fx("ok", FIX));
    fs_err::write(dir.path().join("m.toml"), manifest("60s", false)).unwrap();
    let out = bench_in(dir.path(), &["apply", "m.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = bench_in(dir.path(), &["plan", "m.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let old = sh(&["image", "inspect", "-f", "{{.Id}}", &tag]);
    // Rebuild: same tag, different image.
    let cid = sh(&["create", &tag, "true"]);
    sh(&["commit", "-c", "LABEL rebuilt=1", &cid, &tag]);
    sh(&["rm", &cid]);
    let new = sh(&["image", "inspect", "-f", "{{.Id}}", &tag]);
    let out = bench_in(dir.path(), &["plan", "m.toml", "--explain"]);
    let text = stdout(&out);
    let _ = Command::new("docker").args(["rmi", &tag]).output();
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains(&format!("backend: image \"{old}\" -> \"{new}\"")),
        "{text}"
    );
}

#[test]
fn agent_sandbox_reveals_nothing_of_the_fix() {
    if !docker_ready() {
        return;
    }
    let (base, fix) = shas();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use bench::backend::docker::DockerHost;
        use bench::backend::{Backend, DockerBackend, Resources, SandboxSpec, repo};
        let host = DockerHost::connect(None).await.unwrap();
        let id = host.image_id(IMAGE).await.unwrap().expect("test image");
        let backend = DockerBackend::new(
            host,
            "test".into(),
            "test".into(),
            std::collections::BTreeMap::from([(IMAGE.to_string(), id)]),
            Resources {
                cpus: 1.0,
                memory_bytes: 1 << 30,
                pids: 512,
            },
            4,
        );
        let cancel = tokio_util::sync::CancellationToken::new();
        let task_base = bench::tasks::TaskBase::Image {
            image: IMAGE.into(),
            base_commit: base.clone(),
        };
        let key = format!("sandbox{}", std::process::id());
        let spec = SandboxSpec {
            base: &task_base,
            phase: bench::backend::Phase::Agent,
            network: bench::backend::Network::None,
            image: None,
            address: "sandbox",
            key: &key,
            repo_dir: None,
            hardening: None,
            stripped: None,
            before_strip: None,
            task_env: None,
        };
        let c = backend.create(&spec, &cancel).await.unwrap();
        repo::prepare(c.as_ref(), Some(&base), &cancel)
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        let r = c
            .exec(
                &format!(
                    "cd /testbed; git log --all --format='%H %s'; git reflog; git stash list; \
                     git fsck --lost-found; ls .git/lost-found/*/ 2>/dev/null; git show {fix}; \
                     git tag; git branch -a; git remote -v; cat .git/packed-refs; \
                     grep -r SECRET .git 2>/dev/null; git cat-file --batch-all-objects --batch-check"
                ),
                &[],
                Duration::from_secs(60),
                &cancel,
            )
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&r.output).into_owned();
        assert!(text.contains(&format!("fatal: bad object {fix}")), "{text}");
        let text = text.replace(&format!("fatal: bad object {fix}"), "");
        for secret in [&fix[..], &fix[..7], "FIX-SECRET", "STASH-SECRET", "UNREACHABLE-SECRET", "v1-fix", "origin"] {
            assert!(!text.contains(secret), "{secret} revealed:\n{text}");
        }
        assert!(text.contains(&base), "{text}");
        c.destroy().await.unwrap();

        // An image not checked out at the task's base commit is refused.
        let c = backend.create(&spec, &cancel).await.unwrap();
        let err = repo::prepare(c.as_ref(), Some(&fix), &cancel)
            .await
            .expect_err("wrong base accepted");
        drop(c);
        let msg = format!("{err:?}");
        assert!(msg.contains("not the task's base commit"), "{msg}");
    });
    // The guard removed the refused sandbox.
    std::thread::sleep(Duration::from_millis(200));
    assert!(bench_containers("label=bench.run=test").is_empty());
}

fn wait_for_container(run_filter: &str, child: &mut std::process::Child) {
    let t0 = Instant::now();
    while bench_containers(run_filter).is_empty() {
        assert!(child.try_wait().unwrap().is_none(), "bench exited early");
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no container appeared"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Let it get into the test run.
    std::thread::sleep(Duration::from_secs(2));
}

#[test]
fn no_container_survives_ctrl_c_or_kill_9() {
    if !docker_ready() {
        return;
    }
    let (base, _) = shas();
    let dir = tempfile::tempdir().unwrap();
    write_task(
        &dir.path().join("tasks"),
        IMAGE,
        &base,
        &Fx {
            test_cmds: vec!["sleep 600".into()],
            ..fx("hang", FIX)
        },
    );
    fs_err::write(dir.path().join("m.toml"), manifest("10m", false)).unwrap();
    let spawn = || {
        Command::new(common::bench_bin())
            .args(["apply", "m.toml"])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    // Ctrl-C: the apply removes its containers before exiting.
    let mut child = spawn();
    let filter = format!("label=bench.pid={}", child.id());
    wait_for_container(&filter, &mut child);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(bench_containers(&filter).is_empty(), "left after Ctrl-C");

    // kill -9: the container is left behind; the next apply sweeps it (dead pid), and so does
    // `bench clean`.
    let mut child = spawn();
    let filter = format!("label=bench.pid={}", child.id());
    wait_for_container(&filter, &mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !bench_containers(&filter).is_empty(),
        "kill -9 left nothing?"
    );
    let out = bench_in(dir.path(), &["clean"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("bench containers removed"));
    assert!(bench_containers("label=bench=1").is_empty());

    // And the sweep at the start of apply.
    let mut child = spawn();
    let filter = format!("label=bench.pid={}", child.id());
    wait_for_container(&filter, &mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    let mut child = spawn();
    let t0 = Instant::now();
    while !bench_containers(&filter).is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(60), "not swept");
        std::thread::sleep(Duration::from_millis(200));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let out = bench_in(dir.path(), &["clean"]);
    assert!(out.status.success());
}

#[test]
fn unreachable_daemon_is_a_clear_error_and_local_plans_need_no_docker() {
    let dir = tempfile::tempdir().unwrap();
    write_task(&dir.path().join("tasks"), IMAGE, "abc1234", &fx("ok", FIX));
    fs_err::write(dir.path().join("m.toml"), manifest("60s", false)).unwrap();
    let out = Command::new(common::bench_bin())
        .args(["plan", "m.toml"])
        .current_dir(dir.path())
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let flat = common::flat(&err);
    assert!(flat.contains("DOCKER_HOST=unix:///"), "{err}");
    assert!(flat.contains("cannot reach the Docker daemon"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let q = common::Sandbox::quickstart();
    let out = Command::new(common::bench_bin())
        .args(["plan", q.manifest().to_str().unwrap()])
        .current_dir(q.dir.path())
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// The start of the docker manifests: the fixture tasks and their sample.
fn docker_header(name: &str) -> String {
    format!(
        r#"version = 1
name = "{name}"

[backend]
kind = "docker"
cpus = 1
memory = "1GiB"

[datasets.fx]
format = "local"
path = "tasks"

[stages.sample]
kind = "sample"
dataset = "fx"
since = 2026-07-01
seed = 1
"#
    )
}

/// A manifest's `[harnesses.NAME]` installing the fake CLI `tests/fakes/<cli>` into agent images.
fn fake_cli_harness(harness: &str, cli: &str) -> String {
    let fakes = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakes");
    format!(
        "[harnesses.{harness}]\ninstall_files = [\"{}/{cli}\"]\ninstall = [\"install -m 0755 {cli} /usr/local/bin/{cli}\"]\n",
        fakes.display()
    )
}

fn agent_images() -> Vec<String> {
    let out = Command::new("docker")
        .args(["images", "-q", "--no-trunc", "bench-agent"])
        .output()
        .expect("docker images");
    let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v.dedup();
    v
}

const AGENT_SECRET: &str = "sk-ant-test-DOCKERSECRET0123456789";

fn bench_agents(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(common::bench_bin())
        .args(args)
        .current_dir(dir)
        .env_remove("BENCH_STORE")
        .env("NO_COLOR", "1")
        .env("ANTHROPIC_API_KEY", AGENT_SECRET)
        .env("CODEX_API_KEY", "codex-key-value-docker")
        .output()
        .expect("run bench")
}

/// Issue 48: on docker, each harness's program is looked for where its agents will run before
/// any node: in the agent image its `install` commands build (they ran, and did not put it on
/// PATH), or in the task image for a harness without them. Both are named with their fixes and
/// nothing runs; without them the same manifest runs (the program found is no false alarm).
#[test]
fn a_program_missing_from_its_agent_or_task_image_stops_apply_before_any_node() {
    if !docker_ready() {
        return;
    }
    let (base, _) = shas();
    let dir = tempfile::tempdir().unwrap();
    write_task(&dir.path().join("tasks"), IMAGE, &base, &fx("ok", FIX));
    let m = |teams: &str| {
        format!(
            r#"{header}
[stages.solve]
kind = "solve"
needs = ["sample"]
teams = {teams}
timeout = "120s"

[teams.ghost]
topology = "solo"
worker = "ghost"

[teams.bare]
topology = "solo"
worker = "bare"

[teams.fine]
topology = "solo"
worker = "fine"

[harnesses.ghost]
kind = "command"
command = "ghost-agent --task x"
install = ["true"]

[harnesses.bare]
kind = "command"
command = "bare-agent --task x"

[harnesses.fine]
kind = "command"
command = "ls -la"
"#,
            header = docker_header("docker-programs"),
        )
    };
    fs_err::write(dir.path().join("m.toml"), m(r#"["ghost", "bare", "fine"]"#)).unwrap();
    let out = bench_agents(dir.path(), &["apply", "m.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = common::flat(&stderr(&out));
    for needle in [
        "harness `ghost` (run by team `ghost`) starts `ghost-agent`, which is not on PATH in the agent image its `install` commands build on task image",
        "make `[harnesses.ghost] install` put `ghost-agent` on PATH",
        "harness `bare` (run by team `bare`) starts `bare-agent`, which is not on PATH in task image",
        "give `[harnesses.bare]` `install` commands that install `bare-agent`",
        "nothing was run",
    ] {
        assert!(err.contains(needle), "lacks {needle:?}:\n{err}");
    }
    assert!(!err.contains("harness `fine`"), "{err}");
    let actions = dir.path().join(".bench/actions");
    assert!(
        !actions.exists() || fs_err::read_dir(&actions).unwrap().next().is_none(),
        "a node ran"
    );
    // The team whose program the image has runs.
    fs_err::write(dir.path().join("m.toml"), m(r#"["fine"]"#)).unwrap();
    let out = bench_agents(dir.path(), &["apply", "m.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The fake `claude` and `codex` CLIs (tests/fakes/) installed into agent images built on the
/// task image; solo, review and best-of teams, two replicates; usage, scrubbing, a grading
/// environment without keys, images built once and reused, and a reviewer-model edit that
/// reruns only the review team's solves.
#[test]
fn agent_teams_with_fake_clis_in_agent_images() {
    if !docker_ready() {
        return;
    }
    let (base, _) = shas();
    let dir = tempfile::tempdir().unwrap();
    // Grading reports whether its environment holds a key (the marker is not secret-shaped).
    let probe = format!(
        "{RUN_TESTS}; if env | grep -q '_API_KEY='; then echo GRADING_ENV_HAS_A_KEY; else echo GRADING_ENV_CLEAN; fi >> /tmp/unittest.log"
    );
    write_task(
        &dir.path().join("tasks"),
        IMAGE,
        &base,
        &Fx {
            test_cmds: vec![probe],
            ..fx("ok", FIX)
        },
    );
    let m = format!(
        r#"{header}
[stages.solve]
kind = "solve"
needs = ["sample"]
teams = ["solo", "review", "best", "cx"]
replicates = 2
timeout = "120s"

[stages.grade]
kind = "grade"
needs = ["solve"]
timeout = "60s"

[stages.report]
kind = "report"
needs = ["grade"]

[teams]
solo = "solo:worker=claude@claude-haiku-5-5"
review = "review:coder=claude@claude-haiku-5-5,reviewer=claude@claude-sonnet-5-5,rounds=2"
best = "best:workers=claude@m1+claude@m2+claude@m3,judge=claude@judge"
cx = "solo:worker=codex@gpt-6-luna"

{claude}

{codex}
{FAKE_CLAUDE_PRICES}"#,
        header = docker_header("docker-agents"),
        claude = fake_cli_harness("claude-code", "claude"),
        codex = fake_cli_harness("codex", "codex"),
    );
    fs_err::write(dir.path().join("m.toml"), &m).unwrap();
    // Start without agent images, so the first apply builds them.
    for id in agent_images() {
        let _ = Command::new("docker")
            .args(["image", "rm", "-f", &id])
            .output();
    }
    // The plan names the images it needs.
    let out = bench_agents(dir.path(), &["plan", "m.toml"]);
    let text = stdout(&out);
    assert_eq!(text.matches(": to build").count(), 2, "{text}");
    assert!(text.contains("(harness `claude-code` on "), "{text}");
    assert!(text.contains("(harness `codex` on "), "{text}");

    let out = bench_agents(dir.path(), &["apply", "m.toml"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        bench_containers("label=bench.run").is_empty(),
        "containers survived"
    );
    // One agent image per harness, built once although 8 solves started together.
    assert_eq!(err.matches("built agent image").count(), 2, "{err}");
    assert_eq!(agent_images().len(), 2);

    let acts = actions(dir.path());
    let solves: Vec<&serde_json::Value> = acts.iter().filter(|a| a["node"] == "solve").collect();
    assert_eq!(solves.len(), 8, "4 teams x 2 replicates");
    let patch_of = |team: &str| -> Vec<String> {
        let v: Vec<String> = solves
            .iter()
            .filter(|a| {
                a["address"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("/{team}/"))
            })
            .map(|a| blob(dir.path(), a["output"]["patch"].as_str().unwrap()))
            .collect();
        assert_eq!(v.len(), 2, "team {team}: one patch per replicate");
        v
    };
    for p in patch_of("solo") {
        assert!(p.contains("+written by claude-haiku-5-5"), "{p}");
        assert!(!p.contains("fixed after review"), "{p}");
    }
    for p in patch_of("review") {
        assert!(p.contains("+fixed after review"), "{p}");
    }
    for p in patch_of("best") {
        assert!(p.contains("+written by m2"), "{p}");
        assert!(!p.contains("m1") && !p.contains("m3"), "{p}");
    }
    for p in patch_of("cx") {
        assert!(p.contains("+codex gpt-6-luna"), "{p}");
    }
    // Usage: $0.01 per claude call; codex priced by the table.
    let cost = |team: &str| -> Vec<f64> {
        solves
            .iter()
            .filter(|a| {
                a["address"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("/{team}/"))
            })
            .map(|a| a["output"]["cost_usd"].as_f64().unwrap())
            .collect()
    };
    assert!(cost("solo").iter().all(|c| (c - 0.01).abs() < 1e-9));
    // coder, reviewer (changes), fix, reviewer (approve)
    assert!(
        cost("review").iter().all(|c| (c - 0.04).abs() < 1e-9),
        "{:?}",
        cost("review")
    );
    assert!(cost("best").iter().all(|c| (c - 0.04).abs() < 1e-9));
    let codex = (500000.0 * 0.10 + 500000.0 * 0.01 + 100000.0 * 0.50) / 1e6;
    assert!(cost("cx").iter().all(|c| (c - codex).abs() < 1e-9));
    // Replicates are independent nodes with their own keys.
    let keys: std::collections::BTreeSet<&str> =
        solves.iter().map(|a| a["key"].as_str().unwrap()).collect();
    assert_eq!(keys.len(), 8);

    // No key anywhere in the store or the report; the conversation log is in the trajectory.
    let all = [
        everything(&dir.path().join(".bench")),
        everything(&dir.path().join("reports")),
    ]
    .concat();
    let hay = String::from_utf8_lossy(&all);
    assert!(
        !hay.contains(AGENT_SECRET),
        "the API key leaked into the store"
    );
    assert!(
        !hay.contains("codex-key-value-docker"),
        "the codex key leaked"
    );
    assert!(
        !hay.contains("sk-ant-api03-LEAKED"),
        "a key-shaped string leaked"
    );
    assert!(hay.contains("\"redacted\": true"));
    assert!(
        hay.contains(".claude/projects/fake/session.jsonl"),
        "no agent run log kept"
    );
    // Grading containers got no key.
    let grade_logs: Vec<String> = acts
        .iter()
        .filter(|a| a["node"] == "grade")
        .map(|a| blob(dir.path(), a["blobs"]["log"].as_str().unwrap()))
        .collect();
    assert!(!grade_logs.is_empty());
    for log in &grade_logs {
        assert!(log.contains("GRADING_ENV_CLEAN"), "{log}");
    }

    // A rerun runs nothing and builds nothing.
    let out = bench_agents(dir.path(), &["apply", "m.toml"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(executed(&out).is_empty(), "{err}");

    // Changing the reviewer's model reruns only the review team's solves (in the existing
    // agent image), and no grade, since the patches are the same.
    fs_err::write(
        dir.path().join("m.toml"),
        m.replace("reviewer=claude@claude-sonnet-5-5", "reviewer=claude@other"),
    )
    .unwrap();
    let out = bench_agents(dir.path(), &["apply", "m.toml"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("built agent image"), "{err}");
    let ran = executed(&out);
    let solved: Vec<&String> = ran.iter().filter(|a| a.starts_with("solve/")).collect();
    assert_eq!(solved.len(), 2, "{ran:?}");
    assert!(solved.iter().all(|a| a.contains("/review/")), "{ran:?}");
    assert!(!ran.iter().any(|a| a.starts_with("grade/")), "{ran:?}");
    assert_eq!(agent_images().len(), 2);

    // Editing the install commands builds a new image and reruns the team that uses it.
    fs_err::write(
        dir.path().join("m.toml"),
        m.replace(
            "install -m 0755 codex /usr/local/bin/codex",
            "install -m 0755 codex /usr/local/bin/codex && echo v2 > /etc/codex-version",
        ),
    )
    .unwrap();
    let out = bench_agents(dir.path(), &["plan", "--explain", "m.toml"]);
    let text = stdout(&out);
    assert!(text.contains("solve/ok/cx/"), "{text}");
    assert!(!text.contains("solve/ok/solo/"), "{text}");
    assert!(text.contains("(harness `codex` on "), "{text}");
    assert!(text.contains(": to build"), "{text}");
    assert!(!text.contains("(harness `claude-code` on "), "{text}");
    // An image already built shows as existing.
    fs_err::write(dir.path().join("m.toml"), m.replace("rounds=2", "rounds=1")).unwrap();
    let text = stdout(&bench_agents(dir.path(), &["plan", "m.toml"]));
    assert!(text.contains("(harness `claude-code` on "), "{text}");
    assert!(text.contains(": exists"), "{text}");
    assert!(!text.contains(": to build"), "{text}");
}

/// On docker as on local: an agent past the team's timeout is stopped and its solve recorded as
/// `timed_out` with unknown cost (graded on what it left); an agent that never reached its model
/// is an infrastructure error, not recorded, so the next apply retries it.
#[test]
fn agent_timeout_is_an_outcome_and_no_model_is_an_error_on_docker() {
    if !docker_ready() {
        return;
    }
    let (base, _) = shas();
    let dir = tempfile::tempdir().unwrap();
    write_task(&dir.path().join("tasks"), IMAGE, &base, &fx("ok", FIX));
    let m = format!(
        r#"{header}
[stages.solve]
kind = "solve"
needs = ["sample"]
teams = ["slow", "nokey"]
timeout = "6s"

[teams]
slow = "solo:worker=claude@sleep"
nokey = "solo:worker=claude@nokey"

{claude}
"#,
        header = docker_header("docker-agent-failures"),
        claude = fake_cli_harness("claude-code", "claude"),
    );
    fs_err::write(dir.path().join("m.toml"), &m).unwrap();
    let out = bench_agents(dir.path(), &["apply", "m.toml"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("never reached its model"), "{err}");
    assert!(!err.contains(AGENT_SECRET), "{err}");
    assert!(
        bench_containers("label=bench.run").is_empty(),
        "containers survived"
    );
    let acts = actions(dir.path());
    let solves: Vec<&serde_json::Value> = acts.iter().filter(|a| a["node"] == "solve").collect();
    assert_eq!(solves.len(), 1, "only the timed-out solve is recorded");
    let slow = &solves[0];
    assert!(slow["address"].as_str().unwrap().contains("/slow/"));
    assert_eq!(slow["output"]["timed_out"], true);
    assert!(slow["output"]["cost_usd"].is_null());
    // The next apply retries the failed node only.
    let out = bench_agents(dir.path(), &["plan", "--json", "m.toml"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let to_run: Vec<&str> = v["to_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["address"].as_str().unwrap())
        .collect();
    assert_eq!(to_run.len(), 1, "{to_run:?}");
    assert!(to_run[0].contains("/nokey/"), "{to_run:?}");
}

/// A budgeted stage gives each docker solve its even share of what is left, as
/// `{{max_cost_usd}}` and `BENCH_MAX_COST_USD`, as on the local backend.
#[test]
fn budget_shares_reach_docker_agents() {
    if !docker_ready() {
        return;
    }
    let (base, _) = shas();
    let dir = tempfile::tempdir().unwrap();
    write_task(&dir.path().join("tasks"), IMAGE, &base, &fx("ok", FIX));
    let m = docker_header("docker-budget")
        + r#"
[stages.solve]
kind = "solve"
needs = ["sample"]
teams = ["share"]
timeout = "60s"
max_cost_usd = 3.0

[teams.share]
topology = "solo"
worker = "share"

[harnesses.share]
kind = "command"
command = "echo \"template={{max_cost_usd}} env=$BENCH_MAX_COST_USD home=$HOME\" > share.txt"
"#;
    fs_err::write(dir.path().join("m.toml"), &m).unwrap();
    let out = bench_in(dir.path(), &["apply", "m.toml"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let acts = actions(dir.path());
    let solve = acts.iter().find(|a| a["node"] == "solve").unwrap();
    let patch = blob(dir.path(), solve["output"]["patch"].as_str().unwrap());
    assert!(
        patch.contains("+template=3.0000 env=3.0000 home=/tmp/bench/home"),
        "{patch}"
    );
}

/// `limits.containers` counts the two containers a review solve holds while its reviewer runs:
/// with a cap of 2, a solo solve waits for the review solve that started first.
#[test]
fn a_review_solve_counts_two_containers_against_the_limit() {
    if !docker_ready() {
        return;
    }
    let (base, _) = shas();
    let dir = tempfile::tempdir().unwrap();
    write_task(&dir.path().join("tasks"), IMAGE, &base, &fx("ok", FIX));
    let m = format!(
        r#"{header}
[limits]
containers = 2
agents = 4

[stages.solve]
kind = "solve"
needs = ["sample"]
teams = ["review", "solo"]
timeout = "120s"

[teams]
review = "review:coder=claude@claude-haiku-5-5,reviewer=claude@claude-sonnet-5-5,rounds=2"
solo = "solo:worker=claude@claude-haiku-5-5"

{claude}
"#,
        header = docker_header("docker-container-limit"),
        claude = fake_cli_harness("claude-code", "claude"),
    );
    fs_err::write(dir.path().join("m.toml"), &m).unwrap();
    let out = bench_agents(dir.path(), &["apply", "m.toml"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let done: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("done    "))
        .filter(|l| l.starts_with("solve/"))
        .collect();
    assert_eq!(done.len(), 2, "{err}");
    assert!(done[0].starts_with("solve/ok/review/"), "{err}");
    assert!(done[1].starts_with("solve/ok/solo/"), "{err}");
}

/// Runs the docker CLI; its trimmed stdout.
fn docker_cli(args: &[&str]) -> String {
    let o = Command::new("docker").args(args).output().expect("docker");
    assert!(
        o.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// The pipeline of the cross-backend test, for one backend.
fn cross_manifest(backend: &str, dataset: &str) -> String {
    format!(
        r#"version = 1
name = "cross-{backend}"

[backend]
kind = "{backend}"

[datasets.fx]
format = "local"
path = "{dataset}"

[stages.sample]
kind = "sample"
dataset = "fx"
since = 2026-07-01

[stages.gold]
kind = "gold"
needs = ["sample"]
empty = true
timeout = "60s"

[stages.solve]
kind = "solve"
needs = ["gold"]
teams = ["oracle", "nop"]
timeout = "60s"

[stages.grade]
kind = "grade"
needs = ["solve"]
timeout = "60s"

[stages.report]
kind = "report"
needs = ["grade"]
out = "reports-{backend}"

[teams.oracle]
topology = "solo"
worker = "oracle"

[teams.nop]
topology = "solo"
worker = "nop"
"#
    )
}

/// The stored grade of `address` under `manifest`: its output without the duration, and its
/// parsed statuses.
fn stored_grade(dir: &Path, manifest: &str, address: &str) -> (serde_json::Value, String) {
    let store = bench::store::Store::open_existing(&dir.join(".bench")).unwrap();
    let path = fs_err::canonicalize(dir.join(manifest)).unwrap();
    let key = store.load_index(&path).nodes[address].clone();
    let bench::store::Lookup::Hit(rec) = store.get_action(&key) else {
        panic!("no record for {address}")
    };
    let mut out = serde_json::to_value(rec.grade().unwrap()).unwrap();
    out["duration_ms"] = serde_json::Value::Null;
    // Per grade, not an outcome: the log markers' nonce.
    out["nonce"] = serde_json::Value::Null;
    // Where the check ran (docker: when the stripped image was made) differs; that it passed
    // must not.
    let check = out["history_check"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(check.starts_with("history check passed"), "{check}");
    out["history_check"] = "history check passed".into();
    let statuses = String::from_utf8(
        store
            .get_blob(&bench::types::Digest::parse(&rec.blobs["statuses"]).unwrap())
            .unwrap(),
    )
    .unwrap();
    (out, statuses)
}

#[test]
fn local_and_docker_grade_a_task_to_the_same_verdict_and_report_and_export_find_it() {
    if !docker_ready() {
        return;
    }
    let (base, _) = shas();
    let dir = tempfile::tempdir().unwrap();
    // The same repository twice: as the image's /testbed at the base commit, and as a tree.
    let cid = docker_cli(&["create", IMAGE, "true"]);
    let copy = dir.path().join("copy");
    docker_cli(&[
        "cp",
        &format!("{cid}:/testbed"),
        &copy.display().to_string(),
    ]);
    docker_cli(&["rm", &cid]);
    for (kind, with_image) in [("local", false), ("docker", true)] {
        let d = dir.path().join(format!("tasks-{kind}/cross"));
        fs_err::create_dir_all(&d).unwrap();
        if !with_image {
            fs_err::create_dir_all(d.join("repo")).unwrap();
            let st = Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "git -C {} archive {base} | tar -x -C {}",
                    copy.display(),
                    d.join("repo").display()
                ))
                .status()
                .unwrap();
            assert!(st.success());
        }
        let base_line = if with_image {
            format!("image = {IMAGE:?}\nbase_commit = {base:?}\n")
        } else {
            String::new()
        };
        fs_err::write(
            d.join("task.toml"),
            format!(
                "instance_id = \"cross\"\nrepo = \"fixture/calc\"\nlanguage = \"python\"\ncreated_at = 2026-08-01T00:00:00Z\n\
problem_statement = \"add() subtracts\"\n{base_line}\
rebuild_cmds = [\"echo rebuilt > rebuilt.txt\"]\n\
test_cmds = [\"test -f rebuilt.txt && python3 -m unittest -v tests.test_add tests.test_mul > unittest.log 2>&1\"]\n\
print_cmds = [\"cat unittest.log\"]\nlog_parser = '''\n{PARSER}'''\n\
FAIL_TO_PASS = [\"tests.test_add.T.test_add\"]\nPASS_TO_PASS = [\"tests.test_mul.T.test_mul\"]\n"
            ),
        )
        .unwrap();
        fs_err::write(d.join("gold.patch"), FIX).unwrap();
        fs_err::write(d.join("test.patch"), TEST_PATCH).unwrap();
        fs_err::write(
            dir.path().join(format!("{kind}.toml")),
            cross_manifest(kind, &format!("tasks-{kind}")),
        )
        .unwrap();
        let out = bench_in(dir.path(), &["apply", &format!("{kind}.toml")]);
        assert!(out.status.success(), "{kind}: {}", stderr(&out));
    }
    for address in ["gold/cross", "gold/cross/empty", "grade/solve/cross/nop/0"] {
        let local = stored_grade(dir.path(), "local.toml", address);
        let docker = stored_grade(dir.path(), "docker.toml", address);
        assert_eq!(local, docker, "{address}");
    }
    let (gold, statuses) = stored_grade(dir.path(), "docker.toml", "gold/cross");
    assert_eq!(gold["resolved"], true, "{gold}");
    assert!(statuses.contains("tests.test_add.T.test_add"), "{statuses}");

    // `bench report` and `bench export` resolve the docker manifest's keys as apply does.
    let out = bench_in(dir.path(), &["report", "--json", "docker.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("\"common_tasks\""), "{text}");
    assert!(text.contains("cross"), "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["common_tasks"].as_array().unwrap().len(), 1, "{text}");
    let out = bench_in(dir.path(), &["export", "--team", "oracle", "docker.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let preds = stdout(&out);
    assert_eq!(preds.lines().count(), 1, "{preds}");
    assert!(preds.contains("return a + b"), "{preds}");
}

/// A Node.js-based CLI on a task image without Node.js: the harness's `runtime` (a tarball laid
/// out like an official `node-vX-linux-x64.tar.gz`, made from this host's `node` and served on
/// loopback) is downloaded on the host, checksum-verified, unpacked into the agent image, and the
/// fake CLI (tests/fakes/node-agent.js) runs on it. A wrong checksum stops the build, uncached.
#[test]
fn a_node_runtime_tarball_runs_a_node_cli_on_an_image_without_node() {
    if !docker_ready() {
        return;
    }
    let no_node = Command::new("docker")
        .args(["run", "--rm", IMAGE, "sh", "-c", "command -v node"])
        .output()
        .unwrap();
    assert!(
        !no_node.status.success(),
        "the test image must not have node"
    );
    let node = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v node"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let node = node.trim();
    if node.is_empty() {
        assert!(!ci(), "CI=true but no host node to build the tarball from");
        eprintln!("skipped: no host node");
        return;
    }
    let version = String::from_utf8(Command::new(node).arg("--version").output().unwrap().stdout)
        .unwrap()
        .trim()
        .to_string();
    // The tarball, laid out like the official release, and its sha256.
    let www = tempfile::tempdir().unwrap();
    let top = format!("node-{version}-linux-x64");
    fs_err::create_dir_all(www.path().join(&top).join("bin")).unwrap();
    fs_err::copy(node, www.path().join(&top).join("bin/node")).unwrap();
    let tarball = format!("{top}.tar.gz");
    let ok = Command::new("tar")
        .args(["-czf", &tarball, &top])
        .current_dir(www.path())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let sum = String::from_utf8(
        Command::new("sha256sum")
            .arg(www.path().join(&tarball))
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let sha = sum.split_whitespace().next().unwrap().to_string();
    // Served on loopback (bench downloads on the host).
    let port_file = www.path().join("port");
    let mut server = Command::new("python3")
        .args([
            "-c",
            "import http.server, functools, os, sys\n\
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])\n\
s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), h)\n\
open(sys.argv[2] + '.tmp', 'w').write(str(s.server_address[1])); os.replace(sys.argv[2] + '.tmp', sys.argv[2])\n\
s.serve_forever()",
        ])
        .arg(www.path())
        .arg(&port_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let port = loop {
        if let Ok(p) = fs_err::read_to_string(&port_file) {
            break p;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no file server"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let url = format!("http://127.0.0.1:{port}/{tarball}");

    let (base, _) = shas();
    let dir = tempfile::tempdir().unwrap();
    write_task(&dir.path().join("tasks"), IMAGE, &base, &fx("ok", FIX));
    let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakes/node-agent.js");
    let manifest = |sha: &str| {
        format!(
            r#"{header}
[stages.solve]
kind = "solve"
needs = ["sample"]
teams = ["solo"]
timeout = "2m"

[teams]
solo = "solo:worker=nodeagent"

[harnesses.nodeagent]
kind = "command"
command = "node-agent; PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin command -v node || echo image PATH has no node"
runtime = {{ name = "node", url = "{url}", sha256 = "{sha}" }}
own_files = [".node-agent*", ".gitignore"]
install_files = ["{cli}"]
# As `npm install -g` would: into the runtime's bin/.
install = ["install -m 0755 node-agent.js \"$(dirname \"$(command -v node)\")/node-agent\""]
"#,
            header = docker_header("docker-node-runtime"),
            cli = cli.display(),
        )
    };
    // A wrong pin: the build stops before any container, and nothing is cached.
    let wrong = format!("{:0>64}", "0");
    fs_err::write(dir.path().join("m.toml"), manifest(&wrong)).unwrap();
    let out = bench_agents(dir.path(), &["apply", "m.toml"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!("sha256 is {sha}, the pin says {wrong}")),
        "{err}"
    );
    assert!(actions(dir.path()).iter().all(|a| a["node"] != "solve"));

    fs_err::write(dir.path().join("m.toml"), manifest(&sha)).unwrap();
    let out = bench_agents(dir.path(), &["apply", "m.toml"]);
    let _ = server.kill();
    let _ = server.wait();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("built agent image"), "{err}");
    let acts = actions(dir.path());
    let solve = acts.iter().find(|a| a["node"] == "solve").expect("a solve");
    let patch = blob(dir.path(), solve["output"]["patch"].as_str().unwrap());
    assert!(patch.contains("+    return a + b"), "{patch}");
    // The CLI's own files are kept out of the patch (on docker too), and in the trajectory.
    assert!(
        !patch.contains(".node-agent") && !patch.contains(".gitignore"),
        "{patch}"
    );
    let traj = blob(dir.path(), solve["blobs"]["trajectory"].as_str().unwrap());
    assert!(
        traj.contains("own file .node-agent.history (12 bytes, new)"),
        "{traj}"
    );
    assert!(traj.contains("+.node-agent.history"), "{traj}");
    assert!(
        traj.contains(&format!(
            "node-agent on node {version} at /opt/bench/node/bin/node"
        )),
        "{traj}"
    );
}

/// A candidate that, when the tests import `calc`, asks git for the fixed `calc.py` (by the fix's
/// commit, its branch, tag, remote-tracking ref, stash, ORIG_HEAD, notes, and every commit git
/// still lists) and runs it in place of its own code.
fn history_lookup_patch(fix: &str) -> String {
    let added = [
        "import os as _os, subprocess as _sp",
        "def _lookup():",
        "    d = _os.path.dirname(_os.path.abspath(__file__))",
        "    git = lambda *a: _sp.run([\"git\", *a], cwd=d, capture_output=True, text=True).stdout",
        &format!(
            "    refs = [\"{fix}\", \"fix\", \"v1-fix\", \"origin/master\", \"stash@{{0}}\", \"ORIG_HEAD\", \"refs/notes/commits\"]"
        ),
        "    refs += git(\"rev-list\", \"--all\", \"--reflog\").split()",
        "    refs += [l.split()[-1] for l in git(\"fsck\", \"--unreachable\", \"--no-reflogs\").splitlines() if \"commit\" in l]",
        "    for r in refs:",
        "        src = git(\"show\", r + \":calc.py\")",
        "        if \"return a + b\" in src:",
        "            return src",
        "_src = _lookup()",
        "if _src:",
        "    exec(_src)",
    ];
    let mut p = format!(
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -4,3 +4,{} @@ def add(a, b):\n \n def mul(a, b):\n     return a * b\n",
        3 + added.len()
    );
    for l in added {
        p.push_str(&format!("+{l}\n"));
    }
    p
}

/// Does not fix `add` but pre-creates the hidden test file with a test that always passes.
const PRECREATED_TEST: &str = "diff --git a/tests/test_add.py b/tests/test_add.py
new file mode 100644
--- /dev/null
+++ b/tests/test_add.py
@@ -0,0 +1,6 @@
+import unittest
+
+
+class T(unittest.TestCase):
+    def test_add(self):
+        pass
";

/// Does not fix `add`; when imported, prints a passing line for the hidden test and a forged
/// end-of-tests marker with exit code 0.
const FORGED_MARKER: &str = "diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,5 @@
+import sys as _sys
+_sys.stderr.write(\"test_add (tests.test_add.T.test_add) ... ok\\n\\nBENCH-0123456789abcdef0123456789abcdef-TESTS-END 0\\nBENCH--TESTS-END 0\\n\")
+_sys.stderr.flush()
 def add(a, b):
     return a - b
";

/// Grading is locked: the grading sandbox's history is stripped and checked before the
/// candidate is applied (a history lookup resolves nothing, and the check is recorded), the
/// hidden tests' paths are reset before the test patch (a pre-created always-passing test is
/// replaced), and markers a patch prints are ignored.
#[test]
fn grading_is_locked_against_history_lookups_precreated_tests_and_forged_markers() {
    if !docker_ready() {
        return;
    }
    let (base, fix) = shas();
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks");
    let lookup = history_lookup_patch(&fix);
    let fixtures = vec![
        fx("ok", FIX),
        fx("history-lookup", &lookup),
        fx("precreated-test", PRECREATED_TEST),
        Fx {
            test_cmds: vec!["python3 -m unittest -v tests.test_add tests.test_mul".into()],
            print_cmds: vec![],
            parser: "unittest",
            ..fx("forged-marker", FORGED_MARKER)
        },
    ];
    for f in &fixtures {
        write_task(&tasks, IMAGE, &base, f);
    }
    fs_err::write(dir.path().join("m.toml"), manifest("60s", false)).unwrap();
    let out = bench_in(dir.path(), &["apply", "m.toml"]);
    let err = stderr(&out);
    // The adversarial patches are graded (unresolved), none errors.
    assert_eq!(out.status.code(), Some(0), "{err}");
    let acts = actions(dir.path());
    let gold = |id: &str| output_of(&acts, &format!("gold/{id}")).clone();
    let ok = gold("ok");
    assert_eq!(ok["output"]["resolved"], true, "{ok}");
    assert!(
        ok["output"]["history_check"]
            .as_str()
            .unwrap()
            .starts_with("history check passed"),
        "{ok}"
    );
    assert_eq!(ok["output"]["nonce"].as_str().unwrap().len(), 32);
    assert_eq!(ok["output"]["test_exit_code"], 0);

    let lookup = gold("history-lookup");
    assert_eq!(lookup["output"]["resolved"], false, "{lookup}");
    assert_eq!(lookup["output"]["patch_applied"], true, "{lookup}");
    assert_eq!(
        lookup["output"]["fail_to_pass_failure"][0],
        "tests.test_add.T.test_add"
    );
    assert!(
        lookup["output"]["history_check"]
            .as_str()
            .unwrap()
            .starts_with("history check passed"),
        "{lookup}"
    );

    let pre = gold("precreated-test");
    assert_eq!(pre["output"]["resolved"], false, "{pre}");
    assert_eq!(pre["output"]["patch_applied"], true, "{pre}");
    let apply_log = blob(dir.path(), pre["blobs"]["apply_log"].as_str().unwrap());
    assert!(
        apply_log.contains(">>>>> reset before the test patch"),
        "{apply_log}"
    );

    let forged = gold("forged-marker");
    assert_eq!(forged["output"]["resolved"], false, "{forged}");
    assert_eq!(forged["output"]["test_exit_code"], 1, "{forged}");
    let log = blob(dir.path(), forged["blobs"]["log"].as_str().unwrap());
    assert!(
        log.contains("test_add (tests.test_add.T.test_add) ... FAIL"),
        "{log}"
    );
    assert!(log.contains("BENCH-0123456789abcdef"), "{log}");
    let nonce = forged["output"]["nonce"].as_str().unwrap();
    assert!(!log.contains(nonce), "{log}");
}

/// A `bench-stripped` image bench did not make (here: the task image itself, full history and
/// all, tagged with the name bench's stripped image would have) is not trusted: bench strips and
/// checks anew, so a patch that looks the fix up in history still resolves nothing. Grades of
/// the image bench made skip the per-grade check and say so.
#[test]
fn a_forged_stripped_image_is_not_trusted() {
    if !docker_ready() {
        return;
    }
    let (base, fix) = shas();
    let image_id = docker_out(&["image", "inspect", "-f", "{{.Id}}", IMAGE]);
    let tag = bench::backend::stripped_tag(&image_id, &base, "/testbed", None);
    let forged = format!("{}:{tag}", bench::backend::STRIPPED_REPO);
    let _ = docker_out(&["image", "rm", "-f", &forged]);
    assert!(
        Command::new("docker")
            .args(["tag", IMAGE, &forged])
            .status()
            .unwrap()
            .success()
    );
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks");
    write_task(
        &tasks,
        IMAGE,
        &base,
        &fx("history-lookup", &history_lookup_patch(&fix)),
    );
    fs_err::write(dir.path().join("m.toml"), manifest("60s", false)).unwrap();
    let out = bench_in(dir.path(), &["apply", "m.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let acts = actions(dir.path());
    let g = output_of(&acts, "gold/history-lookup");
    assert_eq!(g["output"]["resolved"], false, "{g}");
    assert_eq!(g["output"]["patch_applied"], true, "{g}");
    assert_eq!(
        g["output"]["history_check"],
        "history check passed (when the stripped grading image was made)",
        "{g}"
    );
    // The tag now names the image bench made, labelled with the base its check passed at.
    let labels = docker_out(&["image", "inspect", "-f", "{{json .Config.Labels}}", &forged]);
    assert!(
        labels.contains(&format!("\"bench.history-checked\":\"{base}\"")),
        "{labels}"
    );
    // And with the repository's real path its grading containers start in (no exec of their
    // own to find it).
    assert!(
        labels.contains("\"bench.repo-path\":\"/testbed\""),
        "{labels}"
    );
    assert_ne!(
        docker_out(&["image", "inspect", "-f", "{{.Id}}", &forged]),
        image_id
    );
}

/// A stripped image whose `bench.repo-path` label is empty (as bench makes it when the image
/// declares volumes), here also without bench's directory, is used: its grading containers find
/// the repository and make the directory with an exec of their own, and grade as before.
#[test]
fn a_stripped_image_without_its_repo_path_still_grades() {
    if !docker_ready() {
        return;
    }
    let (base, _) = shas();
    let grade_in = |dir: &Path| {
        let tasks = dir.join("tasks");
        write_task(&tasks, IMAGE, &base, &fx("fix", FIX));
        fs_err::write(dir.join("m.toml"), manifest("60s", false)).unwrap();
        let out = bench_in(dir, &["apply", "m.toml"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let acts = actions(dir);
        let g = output_of(&acts, "gold/fix").clone();
        assert_eq!(g["output"]["resolved"], true, "{g}");
        g
    };
    let first = tempfile::tempdir().unwrap();
    grade_in(first.path());
    let image_id = docker_out(&["image", "inspect", "-f", "{{.Id}}", IMAGE]);
    let tag = bench::backend::stripped_tag(&image_id, &base, "/testbed", None);
    let stripped = format!("{}:{tag}", bench::backend::STRIPPED_REPO);
    // The image with an empty repository path and no /tmp/bench.
    let name = format!("bench-test-old-stripped-{}", std::process::id());
    let made = Command::new("docker")
        .args([
            "run",
            "--name",
            &name,
            "--entrypoint",
            "rm",
            &stripped,
            "-rf",
            "/tmp/bench",
        ])
        .status()
        .unwrap();
    assert!(made.success());
    let committed = Command::new("docker")
        .args([
            "commit",
            "--change",
            "LABEL bench.repo-path=",
            &name,
            &stripped,
        ])
        .status()
        .unwrap();
    let _ = docker_out(&["rm", "-f", &name]);
    assert!(committed.success());
    let second = tempfile::tempdir().unwrap();
    let g = grade_in(second.path());
    assert_eq!(
        g["output"]["history_check"],
        "history check passed (when the stripped grading image was made)",
        "{g}"
    );
    // The next apply strips anew (with the label).
    let _ = docker_out(&["image", "rm", "-f", &stripped]);
}

fn docker_out(args: &[&str]) -> String {
    let out = Command::new("docker").args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Rewrites the test runner (the tests package's `__init__.py` turns every `assertEqual` into a
/// no-op): the hidden test then passes without a fix. Nothing in a fresh grade catches it.
const RUNNER_REWRITE: &str = "diff --git a/tests/__init__.py b/tests/__init__.py
--- a/tests/__init__.py
+++ b/tests/__init__.py
@@ -0,0 +1,2 @@
+import unittest
+unittest.TestCase.assertEqual = lambda self, a, b, msg=None: None
";

/// A runner-rewriting patch resolves under the default `audit = "flag"` (the gold check) but is
/// flagged, and the same patch graded under `audit = "strict"` is unresolved; the flags reach
/// report.md, report.html and report.json.
#[test]
fn a_runner_rewriting_patch_is_flagged_and_unresolved_under_strict() {
    if !docker_ready() {
        return;
    }
    let (base, _) = shas();
    let dir = tempfile::tempdir().unwrap();
    write_task(
        &dir.path().join("tasks"),
        IMAGE,
        &base,
        &fx("rewrite", RUNNER_REWRITE),
    );
    let m = format!(
        r#"{header}
[stages.gold]
kind = "gold"
needs = ["sample"]
timeout = "60s"

[stages.solve]
kind = "solve"
needs = ["gold"]
teams = ["oracle"]
timeout = "60s"

[stages.grade]
kind = "grade"
needs = ["solve"]
timeout = "60s"
audit = "strict"

[stages.report]
kind = "report"
needs = ["grade"]

[teams.oracle]
topology = "solo"
worker = "oracle"
"#,
        header = docker_header("audit")
    );
    fs_err::write(dir.path().join("m.toml"), m).unwrap();
    let out = bench_in(dir.path(), &["apply", "m.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let acts = actions(dir.path());
    let gold = &output_of(&acts, "gold/rewrite")["output"];
    assert_eq!(
        gold["resolved"], true,
        "the exploit works unflagged: {gold}"
    );
    let flags = gold["audit"].as_array().unwrap();
    assert_eq!(flags.len(), 1, "{gold}");
    assert_eq!(flags[0]["path"], "tests/__init__.py");
    assert_eq!(flags[0]["reason"], "changes a test file");
    let grade = acts
        .iter()
        .find(|a| a["node"] == "grade" && a["address"].as_str().unwrap().starts_with("grade/"))
        .expect("a grade");
    assert_eq!(grade["output"]["resolved"], false, "{grade}");
    assert_eq!(grade["output"]["audit"], gold["audit"]);
    let reports = dir.path().join("reports/audit");
    let md = fs_err::read_to_string(reports.join("report.md")).unwrap();
    assert!(
        md.contains("- rewrite × oracle (replicate 0): `tests/__init__.py` changes a test file"),
        "{md}"
    );
    let html = fs_err::read_to_string(reports.join("report.html")).unwrap();
    assert!(html.contains("Audit flags") && html.contains("tests/__init__.py"));
    let json: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(reports.join("report.json")).unwrap())
            .unwrap();
    assert_eq!(json["audit"][0]["flags"][0]["path"], "tests/__init__.py");
    assert_eq!(json["teams"][0]["resolved"], 0);
}

/// Grading has no network: a patch whose code, when the tests import it, fetches a fixed
/// `calc.py` from a server standing for the outside (a container of the test's own) and runs
/// it resolves nothing; the same fetch from a container on the default bridge succeeds, so the
/// test can fail.
#[test]
fn grading_has_no_network_a_patch_fetching_the_fix_resolves_nothing() {
    if !docker_ready() {
        return;
    }
    let (base, _) = shas();
    let server = docker_cli(&[
        "run",
        "-d",
        "--label",
        "bench-test=1",
        "bench-test-base:1",
        "sh",
        "-c",
        "mkdir -p /srv && printf 'def add(a, b):\\n    return a + b\\n\\n\\ndef mul(a, b):\\n    return a * b\\n' > /srv/calc.py && cd /srv && exec python3 -m http.server 8731",
    ]);
    let ip = docker_cli(&["inspect", "-f", "{{.NetworkSettings.IPAddress}}", &server]);
    let url = format!("http://{ip}:8731/calc.py");
    // Reachable from a container with the default network (waiting for the server to listen).
    let probe = format!(
        "import time, urllib.request\nfor _ in range(50):\n    try:\n        print(urllib.request.urlopen('{url}', timeout=2).read().decode()); break\n    except Exception:\n        time.sleep(0.2)\n"
    );
    let reached = docker_cli(&["run", "--rm", "bench-test-base:1", "python3", "-c", &probe]);
    assert!(reached.contains("return a + b"), "{reached}");

    let added = [
        "import urllib.request as _u".to_string(),
        "try:".to_string(),
        format!("    exec(_u.urlopen({url:?}, timeout=5).read().decode())"),
        "    print('NET-OPEN')".to_string(),
        "except Exception as _e:".to_string(),
        "    print('NET-BLOCKED', type(_e).__name__)".to_string(),
    ];
    let mut fetch = format!(
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -4,3 +4,{} @@ def add(a, b):\n \n def mul(a, b):\n     return a * b\n",
        3 + added.len()
    );
    for l in &added {
        fetch.push_str(&format!("+{l}\n"));
    }
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks");
    write_task(&tasks, IMAGE, &base, &fx("fetch-fix", &fetch));
    fs_err::write(dir.path().join("m.toml"), manifest("60s", false)).unwrap();
    let out = bench_in(dir.path(), &["apply", "m.toml"]);
    let _ = Command::new("docker").args(["rm", "-f", &server]).output();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let acts = actions(dir.path());
    let g = output_of(&acts, "gold/fetch-fix");
    assert_eq!(g["output"]["resolved"], false, "{g}");
    assert_eq!(g["output"]["patch_applied"], true, "{g}");
    let log = blob(dir.path(), g["blobs"]["log"].as_str().unwrap());
    let tests = blob(dir.path(), g["blobs"]["test_output"].as_str().unwrap());
    assert!(
        format!("{log}{tests}").contains("NET-BLOCKED"),
        "{log}\n{tests}"
    );
    assert!(!format!("{log}{tests}").contains("NET-OPEN"));
}

/// A scripted model endpoint on the host's loopback (what a harness's model API stands for):
/// answers every GET with `MODEL-OK`. Killed on drop.
struct LoopbackModel {
    child: std::process::Child,
    port: u16,
}

impl LoopbackModel {
    fn start() -> LoopbackModel {
        let script = "import http.server, sys\nclass H(http.server.BaseHTTPRequestHandler):\n    def do_GET(self):\n        b = b'MODEL-OK'\n        self.send_response(200); self.send_header('Content-Length', str(len(b))); self.end_headers(); self.wfile.write(b)\n    def log_message(self, *a): pass\ns = http.server.HTTPServer(('127.0.0.1', 0), H)\nprint(s.server_address[1], flush=True)\ns.serve_forever()\n";
        let mut child = Command::new("python3")
            .args(["-u", "-c", script])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the model server");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        LoopbackModel {
            port: line.trim().parse().expect("the model server's port"),
            child,
        }
    }
}

impl Drop for LoopbackModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Python that prints, one line each, what a URL gives (through the proxy the environment
/// names, or directly) and whether DNS resolves.
fn net_probe(model: &str, outside: &str) -> String {
    format!(
        r#"import socket, urllib.request, urllib.error
def get(url, proxy=True):
    try:
        h = urllib.request.ProxyHandler() if proxy else urllib.request.ProxyHandler({{}})
        return urllib.request.build_opener(h).open(url, timeout=5).read().decode().strip()[:20]
    except urllib.error.HTTPError as e:
        return "HTTP %d" % e.code
    except Exception as e:
        return "blocked"
print("model: " + get("{model}"))
print("outside-via-proxy: " + get("{outside}"))
print("outside-direct: " + get("{outside}", proxy=False))
try:
    socket.getaddrinfo("example.com", 80)
    print("dns: resolved")
except Exception:
    print("dns: blocked")
"#
    )
}

/// The agent phase's egress policy with real containers: a probe agent reaches the scripted
/// model endpoint on the host (through bench's egress proxy) and nothing else: not a server
/// standing for the outside (a container of the test's own, reachable from the default
/// bridge), neither through the proxy nor directly, and no DNS. A probe patch at grade time
/// reaches nothing, not even the model endpoint. With `[backend] egress = "open"` the same
/// agent reaches the outside (so the test can fail); a dataset's `grade_network = true` lets
/// its grading fetch. No network survives the applies, and the report says which policy ran.
#[test]
fn agents_reach_only_their_endpoints_and_grading_nothing() {
    if !docker_ready() {
        return;
    }
    let (base, _) = shas();
    let model = LoopbackModel::start();
    let server = docker_cli(&[
        "run",
        "-d",
        "--label",
        "bench-test=1",
        "bench-test-base:1",
        "sh",
        "-c",
        "mkdir -p /srv && echo OUTSIDE-OK > /srv/x.txt && printf 'def add(a, b):\\n    return a + b\\n\\n\\ndef mul(a, b):\\n    return a * b\\n' > /srv/calc.py && cd /srv && exec python3 -m http.server 8732",
    ]);
    let ip = docker_cli(&["inspect", "-f", "{{.NetworkSettings.IPAddress}}", &server]);
    let outside = format!("http://{ip}:8732/x.txt");
    let model_url = format!("http://127.0.0.1:{}/v1/models", model.port);
    let wait = format!(
        "import time, urllib.request\nfor _ in range(50):\n    try:\n        print(urllib.request.urlopen('{outside}', timeout=2).read().decode()); break\n    except Exception:\n        time.sleep(0.2)\n"
    );
    assert!(
        docker_cli(&["run", "--rm", "bench-test-base:1", "python3", "-c", &wait])
            .contains("OUTSIDE-OK")
    );

    let probe = net_probe(&model_url, &outside);
    // The agent writes what it saw into the repository: it comes back in its patch.
    let agent = format!(
        "set -e\nsed -i 's/return a - b/return a + b/' calc.py\npython3 - > probe.txt 2>&1 <<'PROBE'\n{probe}PROBE\n"
    );
    // The probe patch: the same probe at import time, during grading.
    let mut gold = String::from(FIX);
    let lines: Vec<String> = std::iter::once("import os as _os".to_string())
        .chain(std::iter::once(
            "if _os.environ.get('BENCH_PROBE_DONE') is None:".to_string(),
        ))
        .chain(std::iter::once(
            "    _os.environ['BENCH_PROBE_DONE'] = '1'".to_string(),
        ))
        .chain(probe.lines().map(|l| format!("    {l}")))
        .collect();
    gold.push_str(&format!(
        "diff --git a/netprobe.py b/netprobe.py\nnew file mode 100644\n--- /dev/null\n+++ b/netprobe.py\n@@ -0,0 +1,{} @@\n",
        lines.len()
    ));
    for l in &lines {
        gold.push_str(&format!("+{l}\n"));
    }
    gold.push_str(
        "diff --git a/tests/__init__.py b/tests/__init__.py\n--- a/tests/__init__.py\n+++ b/tests/__init__.py\n@@ -0,0 +1 @@\n+import netprobe\n",
    );
    let dir = tempfile::tempdir().unwrap();
    write_task(&dir.path().join("tasks"), IMAGE, &base, &fx("probe", &gold));
    fs_err::write(dir.path().join("probe.sh"), &agent).unwrap();
    let m = |egress: &str| {
        format!(
            r#"{header}
[stages.solve]
kind = "solve"
needs = ["sample"]
teams = ["prober", "oracle"]
timeout = "90s"

[stages.grade]
kind = "grade"
needs = ["solve"]
timeout = "60s"

[stages.report]
kind = "report"
needs = ["grade"]

[teams.prober]
topology = "solo"
worker = "prober"

[teams.oracle]
topology = "solo"
worker = "oracle"

[harnesses.prober]
kind = "command"
command = "sh {{{{script}}}}"
script = "probe.sh"
endpoints = ["127.0.0.1:{port}"]
"#,
            header = docker_header("egress").replace(
                "memory = \"1GiB\"\n",
                &format!("memory = \"1GiB\"\negress = \"{egress}\"\n")
            ),
            port = model.port
        )
    };
    fs_err::write(dir.path().join("m.toml"), m("allowlist")).unwrap();
    let out = bench_in(dir.path(), &["apply", "m.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let acts = actions(dir.path());
    let solve = output_of(&acts, "solve/probe/prober/0");
    let patch = blob(dir.path(), solve["output"]["patch"].as_str().unwrap());
    assert!(patch.contains("+model: MODEL-OK"), "{patch}");
    assert!(patch.contains("+outside-via-proxy: HTTP 403"), "{patch}");
    assert!(patch.contains("+outside-direct: blocked"), "{patch}");
    assert!(patch.contains("+dns: blocked"), "{patch}");
    // Grading: the probe patch's code ran (the fix resolves the task) and reached nothing.
    let g = output_of(&acts, "grade/solve/probe/oracle/0");
    assert_eq!(g["output"]["resolved"], true, "{g}");
    let tests = blob(dir.path(), g["blobs"]["test_output"].as_str().unwrap());
    let log = blob(dir.path(), g["blobs"]["log"].as_str().unwrap());
    let seen = format!("{log}{tests}");
    assert!(seen.contains("model: blocked"), "{seen}");
    assert!(seen.contains("outside-via-proxy: blocked"), "{seen}");
    assert!(seen.contains("outside-direct: blocked"), "{seen}");
    assert!(seen.contains("dns: blocked"), "{seen}");
    let md = fs_err::read_to_string(dir.path().join("reports/egress/report.md")).unwrap();
    assert!(
        md.contains(&format!(
            "| network (agent) | `oracle`: none; `prober`: allowlist via egress proxy: 127.0.0.1:{} |",
            model.port
        )),
        "{md}"
    );
    assert!(md.contains("| network (grading) | none |"), "{md}");
    let nets = docker_cli(&["network", "ls", "-q", "--filter", "label=bench=1"]);
    assert!(nets.is_empty(), "bench networks left: {nets}");

    // Open egress: the same agent reaches the outside directly (its solve key differs).
    fs_err::write(dir.path().join("m.toml"), m("open")).unwrap();
    let out = bench_in(dir.path(), &["apply", "m.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let acts = actions(dir.path());
    let solve = output_of(&acts, "solve/probe/prober/0");
    let patch = blob(dir.path(), solve["output"]["patch"].as_str().unwrap());
    assert!(patch.contains("+outside-direct: OUTSIDE-OK"), "{patch}");

    // A dataset that opts grading into the network: the probe patch reaches the outside.
    let opted = m("allowlist").replace(
        "path = \"tasks\"\n",
        "path = \"tasks\"\ngrade_network = true\n",
    );
    fs_err::write(dir.path().join("m.toml"), opted).unwrap();
    let out = bench_in(dir.path(), &["apply", "m.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let acts = actions(dir.path());
    let g = output_of(&acts, "grade/solve/probe/oracle/0");
    let tests = blob(dir.path(), g["blobs"]["test_output"].as_str().unwrap());
    let log = blob(dir.path(), g["blobs"]["log"].as_str().unwrap());
    assert!(
        format!("{log}{tests}").contains("outside-direct: OUTSIDE-OK"),
        "{log}{tests}"
    );
    let _ = Command::new("docker").args(["rm", "-f", &server]).output();
    let nets = docker_cli(&["network", "ls", "-q", "--filter", "label=bench=1"]);
    assert!(nets.is_empty(), "bench networks left: {nets}");
}

/// The forgery check (`[stages.grade] confirm = true`): an agent that fixes nothing in the
/// repository but makes the tests pass from outside it (a `.pth` start-up hook in the image's
/// site-packages that imports a fixed `calc.py` as `calc` before the tests do) resolves in its own sandbox
/// and not in clean ones: two more clean grades are taken, the majority (unresolved) counts,
/// and report.md lists the disagreement. An honest agent's verdicts agree, one clean grade.
#[test]
fn confirm_reports_a_forgery_made_outside_the_patch() {
    if !docker_ready() {
        return;
    }
    let (base, _) = shas();
    let dir = tempfile::tempdir().unwrap();
    write_task(&dir.path().join("tasks"), IMAGE, &base, &fx("forge", FIX));
    let forger = r##"set -e
mkdir -p /opt/forge
printf 'def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n' > /opt/forge/calc.py
site=$(python3 -c 'import site; print(site.getsitepackages()[0])')
mkdir -p "$site"
echo "import sys, importlib.util; s = importlib.util.spec_from_file_location('calc', '/opt/forge/calc.py'); m = importlib.util.module_from_spec(s); s.loader.exec_module(m); sys.modules['calc'] = m" > "$site/zz-forge.pth"
echo "# looked at it" >> calc.py
"##;
    fs_err::write(dir.path().join("forger.sh"), forger).unwrap();
    fs_err::write(dir.path().join("agent.sh"), AGENT).unwrap();
    let m = format!(
        r#"{header}
[stages.solve]
kind = "solve"
needs = ["sample"]
teams = ["forger", "honest"]
timeout = "90s"

[stages.grade]
kind = "grade"
needs = ["solve"]
timeout = "60s"
confirm = true

[stages.report]
kind = "report"
needs = ["grade"]

[teams.forger]
topology = "solo"
worker = "forger"

[teams.honest]
topology = "solo"
worker = "honest"

[harnesses.forger]
kind = "command"
command = "sh {{{{script}}}}"
script = "forger.sh"

[harnesses.honest]
kind = "command"
command = "sh {{{{script}}}}"
script = "agent.sh"
"#,
        header = docker_header("confirm")
    );
    fs_err::write(dir.path().join("m.toml"), m).unwrap();
    let out = bench_in(dir.path(), &["apply", "m.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let acts = actions(dir.path());
    let solve = output_of(&acts, "solve/forge/forger/0");
    assert_eq!(solve["output"]["in_sandbox"]["resolved"], true, "{solve}");
    let g = output_of(&acts, "grade/solve/forge/forger/0");
    assert_eq!(g["output"]["resolved"], false, "{g}");
    assert_eq!(
        g["output"]["confirm"],
        serde_json::json!({"in_sandbox": true, "clean": [false, false, false], "disagreement": true}),
        "{g}"
    );
    let honest = output_of(&acts, "grade/solve/forge/honest/0");
    assert_eq!(honest["output"]["resolved"], true, "{honest}");
    assert_eq!(
        honest["output"]["confirm"],
        serde_json::json!({"in_sandbox": true, "clean": [true], "disagreement": false}),
        "{honest}"
    );
    let md = fs_err::read_to_string(dir.path().join("reports/confirm/report.md")).unwrap();
    assert!(
        md.contains("forger") && md.contains("the forgery check disagrees: resolved in the agent's own sandbox, 0 of 3 clean grades resolved"),
        "{md}"
    );
    // Without the check the forgery is invisible: a plain grade says unresolved and nothing
    // more (so the check is what reports it).
    let plain = fs_err::read_to_string(dir.path().join("m.toml"))
        .unwrap()
        .replace("confirm = true\n", "");
    fs_err::write(dir.path().join("m.toml"), plain).unwrap();
    let out = bench_in(dir.path(), &["apply", "m.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let acts = actions(dir.path());
    let solve = output_of(&acts, "solve/forge/forger/0");
    assert!(solve["output"].get("in_sandbox").is_none(), "{solve}");
    let md = fs_err::read_to_string(dir.path().join("reports/confirm/report.md")).unwrap();
    assert!(!md.contains("forgery check"), "{md}");
}

/// address -> key of every node an apply (`--message-format json`) ran or found cached.
fn event_keys(out: &std::process::Output) -> std::collections::BTreeMap<String, String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "node_finished" || e["event"] == "cache_hit")
        .map(|e| {
            (
                e["address"].as_str().unwrap().to_string(),
                format!(
                    "{} {}",
                    e["key"].as_str().unwrap_or(""),
                    e["detail"].as_str().unwrap_or("")
                ),
            )
        })
        .filter(|(a, _)| a != "report")
        .collect()
}

/// Docker tasks placed on Slurm (`[execution] engine = "slurm"`): each worker opens this
/// machine's Docker daemon, checks the task image's ID against the job's, and the nodes end
/// with the keys and verdicts of an apply here; no container survives.
#[test]
fn docker_tasks_placed_on_slurm_have_the_keys_and_verdicts_of_here() {
    if !docker_ready() || !common::slurm::slurm_ready() {
        return;
    }
    let cluster = common::slurm::SlurmCluster::start();
    let (base, _) = shas();
    let shared = tempfile::tempdir().unwrap();
    fs_err::create_dir(shared.path().join("cache")).unwrap();
    let (key_file, public) = common::keygen(shared.path());
    let mut env = cluster.env();
    env.push(("BENCH_CACHE_KEY_FILE".into(), key_file));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let apply = |extra: &str| {
        let dir = tempfile::tempdir().unwrap();
        let tasks = dir.path().join("tasks");
        for f in [
            fx("ok", FIX),
            fx("p2p-broken", FIX_BREAK_MUL),
            fx("f2p-fails", NO_FIX),
        ] {
            write_task(&tasks, IMAGE, &base, &f);
        }
        fs_err::write(dir.path().join("agent.sh"), AGENT).unwrap();
        fs_err::write(dir.path().join("m.toml"), manifest("20s", true) + extra).unwrap();
        let out = common::bench_env(
            dir.path(),
            &["apply", "m.toml", "--message-format", "json"],
            &env,
        );
        (dir, out)
    };
    let (_here_dir, here) = apply("");
    assert_eq!(here.status.code(), Some(0), "{}", stderr(&here));
    let placed = format!(
        "\n[cache]\nremote = \"file://{}\"\ntrust = [\"{public}\"]\n\n[execution]\nengine = \"slurm\"\nworker_store = \"{}\"\n",
        shared.path().join("cache").display(),
        shared.path().join("worker-store").display()
    );
    let (_dir, there) = apply(&placed);
    assert_eq!(
        there.status.code(),
        Some(0),
        "{}\n{}",
        stderr(&there),
        cluster.log_tails()
    );
    assert!(String::from_utf8_lossy(&there.stdout).contains("\"node_placed\""));
    assert_eq!(event_keys(&there), event_keys(&here));
    assert!(
        bench_containers("label=bench.run").is_empty(),
        "containers survived"
    );
}
