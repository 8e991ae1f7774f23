//! bench's overhead per docker grade, against a bare bollard loop and the docker CLI doing the
//! same container work. Run with `scripts/bench-docker-overhead.sh` (needs the test images).
//!
//! Each grade, in all three: create + start a container of `bench-test-calc:1` (idle PID 1),
//! copy the two patches in, `git apply` each, run the tests, print the log, remove the container.
//! bench additionally resolves the image, labels and limits the container, parses the log,
//! decides the verdict and writes the store. Grades run one at a time (`limits.jobs = 1`).
//!
//! With a second argument `swe-bench`: the swe-bench protocol on `bench-test-swebench-flask:1`
//! (SWE-rebench-shaped rows, so every row names the same image). The bare loop does upstream's
//! container work: the patch copied in and applied (`git apply --verbose`), the eval script
//! (conda stand-in, `git checkout` of the test file, `git apply -v` of the test patch, `pytest
//! -rA tests/test_helpers.py`, the reset) copied in and run with `/bin/bash`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    CreateContainerOptions, RemoveContainerOptions, UploadToContainerOptions,
};
use futures_util::StreamExt;

const IMAGE: &str = "bench-test-calc:1";
const FIX: &str = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,5 +1,5 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \n \n def mul(a, b):\n";
const TEST_PATCH: &str = "diff --git a/tests/test_add.py b/tests/test_add.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_add.py\n@@ -0,0 +1,8 @@\n+import unittest\n+\n+from calc import add\n+\n+\n+class T(unittest.TestCase):\n+    def test_add(self):\n+        self.assertEqual(add(2, 3), 5)\n";
const TEST: &str =
    "cd /testbed && python3 -m unittest -v tests.test_add tests.test_mul > /tmp/unittest.log 2>&1";
const APPLY_TEST: &str =
    "cd /testbed && git apply --reject --whitespace=nowarn /tmp/bench/test.patch";
const APPLY_CAND: &str =
    "cd /testbed && git apply --reject --whitespace=nowarn /tmp/bench/candidate.patch";
const PRINT: &str = "cd /testbed && cat /tmp/unittest.log";

fn tar_of(files: &[(&str, &str)]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for (p, c) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(c.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut h, p, c.as_bytes()).unwrap();
    }
    tar.into_inner().unwrap()
}

async fn exec(d: &Docker, id: &str, script: &str) -> (i64, Vec<u8>) {
    let e = d
        .create_exec(
            id,
            CreateExecOptions {
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                cmd: Some(vec!["bash", "-c", script]),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let mut out = Vec::new();
    if let StartExecResults::Attached { mut output, .. } = d.start_exec(&e.id, None).await.unwrap()
    {
        while let Some(Ok(c)) = output.next().await {
            out.extend_from_slice(&c.into_bytes());
        }
    }
    let code = d.inspect_exec(&e.id).await.unwrap().exit_code.unwrap_or(-1);
    (code, out)
}

const FLASK: &str = "bench-test-swebench-flask:1";

fn fixture(name: &str) -> String {
    fs_err::read_to_string(format!("tests/fixtures/swebench/{name}.diff")).unwrap()
}

fn flask_eval(base: &str) -> String {
    format!(
        "#!/bin/bash\nset -uxo pipefail\nsource /opt/miniconda3/bin/activate\nconda activate testbed\n\
cd /testbed\ngit status\ngit show\ngit -c core.fileMode=false diff {base}\n\
git checkout {base} tests/test_helpers.py\ngit apply -v /tmp/bench/test.patch\n\
: '>>>>> Start Test Output'\npytest -rA tests/test_helpers.py\n: '>>>>> End Test Output'\n\
git checkout {base} tests/test_helpers.py\n"
    )
}

async fn bare_swe_grade(d: &Docker, i: usize, base: &str) {
    let id = d
        .create_container(
            Some(CreateContainerOptions {
                name: Some(format!("bench-overhead-swe-{i}")),
                ..Default::default()
            }),
            ContainerCreateBody {
                image: Some(FLASK.into()),
                entrypoint: Some(vec!["sleep".into(), "infinity".into()]),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .id;
    d.start_container(&id, None).await.unwrap();
    let (gold, test, eval) = (
        fixture("flask-gold"),
        fixture("flask-test"),
        flask_eval(base),
    );
    d.upload_to_container(
        &id,
        Some(UploadToContainerOptions {
            path: "/".into(),
            ..Default::default()
        }),
        bollard::body_full(
            tar_of(&[
                ("tmp/bench/test.patch", &test),
                ("tmp/bench/candidate.patch", &gold),
                ("tmp/bench/eval.sh", &eval),
            ])
            .into(),
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        exec(
            d,
            &id,
            "cd /testbed && git apply --verbose /tmp/bench/candidate.patch"
        )
        .await
        .0,
        0
    );
    let (_, log) = exec(d, &id, "/bin/bash /tmp/bench/eval.sh 2>&1").await;
    assert!(
        String::from_utf8_lossy(&log)
            .contains("PASSED tests/test_helpers.py::test_url_quote_spaces")
    );
    d.remove_container(
        &id,
        Some(RemoveContainerOptions {
            force: true,
            ..Default::default()
        }),
    )
    .await
    .unwrap();
}

fn bench_swe_apply(n: usize, bin: &Path, base: &str) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let mut rows = String::new();
    for i in 0..n {
        let row = serde_json::json!({
            "repo": "pallets/flask", "instance_id": format!("pallets__flask-{}", 80000 + i),
            "base_commit": base, "patch": fixture("flask-gold"), "test_patch": fixture("flask-test"),
            "problem_statement": "p", "created_at": "2026-08-01T00:00:00Z", "version": "2.0",
            "FAIL_TO_PASS": "[\"tests/test_helpers.py::test_url_quote_spaces\"]",
            "PASS_TO_PASS": "[\"tests/test_helpers.py::test_root_path_main\"]",
            "install_config": {"test_cmd": "pytest -rA", "log_parser": "parse_log_pytest"},
            "docker_image": FLASK,
        });
        rows.push_str(&format!("{row}\n"));
    }
    fs_err::write(dir.path().join("tasks.jsonl"), rows).unwrap();
    fs_err::write(
        dir.path().join("m.toml"),
        "version = 1\nname = \"overhead\"\n[backend]\nkind = \"docker\"\n[limits]\njobs = 1\n\
[datasets.d]\nformat = \"swe-rebench\"\npath = \"tasks.jsonl\"\n[stages.sample]\nkind = \"sample\"\ndataset = \"d\"\n\
since = 2026-07-01\nseed = 1\n[stages.gold]\nkind = \"gold\"\nneeds = [\"sample\"]\n",
    )
    .unwrap();
    let t = Instant::now();
    let o = Command::new(bin)
        .args(["apply", "m.toml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let took = t.elapsed();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    took
}

async fn swe_bench_main(n: usize, bin: &Path) {
    let d = Docker::connect_with_defaults().unwrap();
    let base = sh(&["run", "--rm", "--entrypoint", "cat", FLASK, "/fixture-shas"])
        .lines()
        .find_map(|l| l.strip_prefix("base=").map(str::to_string))
        .unwrap();
    bare_swe_grade(&d, 9999, &base).await;
    bench_swe_apply(1, bin, &base);
    let mut rows = Vec::new();
    for round in 0..2 {
        let t = Instant::now();
        for i in 0..n {
            bare_swe_grade(&d, round * 1000 + i, &base).await;
        }
        let bare = t.elapsed();
        let bench = bench_swe_apply(n, bin, &base);
        rows.push((bare, bench));
    }
    let per = |d: Duration| d.as_secs_f64() * 1000.0 / n as f64;
    println!("swe-bench protocol, {n} gold grades per run, one at a time; ms per grade");
    println!("| round | bare bollard | bench apply | bench / bare |");
    println!("|---|---|---|---|");
    for (i, (bare, bench)) in rows.iter().enumerate() {
        println!(
            "| {} | {:.0} | {:.0} | {:.2}x |",
            i + 1,
            per(*bare),
            per(*bench),
            per(*bench) / per(*bare)
        );
    }
}

async fn bare_grade(d: &Docker, i: usize) {
    let name = format!("bench-overhead-bare-{i}");
    let id = d
        .create_container(
            Some(CreateContainerOptions {
                name: Some(name),
                ..Default::default()
            }),
            ContainerCreateBody {
                image: Some(IMAGE.into()),
                entrypoint: Some(vec!["sleep".into(), "infinity".into()]),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .id;
    d.start_container(&id, None).await.unwrap();
    d.upload_to_container(
        &id,
        Some(UploadToContainerOptions {
            path: "/".into(),
            ..Default::default()
        }),
        bollard::body_full(
            tar_of(&[
                ("tmp/bench/test.patch", TEST_PATCH),
                ("tmp/bench/candidate.patch", FIX),
            ])
            .into(),
        ),
    )
    .await
    .unwrap();
    assert_eq!(exec(d, &id, APPLY_TEST).await.0, 0);
    assert_eq!(exec(d, &id, APPLY_CAND).await.0, 0);
    exec(d, &id, TEST).await;
    let (_, log) = exec(d, &id, PRINT).await;
    assert!(String::from_utf8_lossy(&log).contains("test_add"));
    d.remove_container(
        &id,
        Some(RemoveContainerOptions {
            force: true,
            ..Default::default()
        }),
    )
    .await
    .unwrap();
}

fn sh(args: &[&str]) -> String {
    let o = Command::new("docker").args(args).output().unwrap();
    assert!(o.status.success(), "docker {args:?}");
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn cli_grade(i: usize, dir: &Path) {
    let id = sh(&[
        "run",
        "-d",
        "--name",
        &format!("bench-overhead-cli-{i}"),
        "--entrypoint",
        "sleep",
        IMAGE,
        "infinity",
    ]);
    sh(&["exec", &id, "mkdir", "-p", "/tmp/bench"]);
    sh(&[
        "cp",
        dir.join("test.patch").to_str().unwrap(),
        &format!("{id}:/tmp/bench/test.patch"),
    ]);
    sh(&[
        "cp",
        dir.join("candidate.patch").to_str().unwrap(),
        &format!("{id}:/tmp/bench/candidate.patch"),
    ]);
    sh(&["exec", &id, "bash", "-c", APPLY_TEST]);
    sh(&["exec", &id, "bash", "-c", APPLY_CAND]);
    sh(&["exec", &id, "bash", "-c", TEST]);
    assert!(sh(&["exec", &id, "bash", "-c", PRINT]).contains("test_add"));
    sh(&["rm", "-f", &id]);
}

fn bench_apply(n: usize, bin: &Path) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let base = sh(&["run", "--rm", "--entrypoint", "cat", IMAGE, "/fixture-shas"])
        .lines()
        .find_map(|l| l.strip_prefix("base=").map(str::to_string))
        .unwrap();
    for i in 0..n {
        let d = dir.path().join(format!("tasks/t{i}"));
        fs_err::create_dir_all(&d).unwrap();
        fs_err::write(
            d.join("task.toml"),
            format!(
                "instance_id = \"t{i}\"\nrepo = \"fixture/calc\"\ncreated_at = 2026-08-01T00:00:00Z\n\
problem_statement = \"add\"\nimage = \"{IMAGE}\"\nbase_commit = \"{base}\"\n\
test_cmds = [{TEST:?}]\nprint_cmds = [{PRINT:?}]\nlog_parser = \"unittest\"\n\
FAIL_TO_PASS = [\"test_add (tests.test_add.T.test_add)\"]\nPASS_TO_PASS = [\"test_mul (tests.test_mul.T.test_mul)\"]\n"
            ),
        )
        .unwrap();
        fs_err::write(d.join("gold.patch"), FIX).unwrap();
        fs_err::write(d.join("test.patch"), TEST_PATCH).unwrap();
    }
    fs_err::write(
        dir.path().join("m.toml"),
        "version = 1\nname = \"overhead\"\n[backend]\nkind = \"docker\"\n[limits]\njobs = 1\n\
[datasets.d]\nformat = \"local\"\npath = \"tasks\"\n[stages.sample]\nkind = \"sample\"\ndataset = \"d\"\n\
since = 2026-07-01\nseed = 1\n[stages.gold]\nkind = \"gold\"\nneeds = [\"sample\"]\n",
    )
    .unwrap();
    let t = Instant::now();
    let o = Command::new(bin)
        .args(["apply", "m.toml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let took = t.elapsed();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    took
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let bin = std::env::var("BENCH_BIN").unwrap_or_else(|_| "target/release/bench".into());
    let bin = fs_err::canonicalize(&bin).expect("the bench binary (BENCH_BIN)");
    if std::env::args().nth(2).as_deref() == Some("swe-bench") {
        swe_bench_main(n, &bin).await;
        return;
    }
    let d = Docker::connect_with_defaults().unwrap();
    // Warm-up: one of each.
    bare_grade(&d, 9999).await;
    let tmp = tempfile::tempdir().unwrap();
    fs_err::write(tmp.path().join("test.patch"), TEST_PATCH).unwrap();
    fs_err::write(tmp.path().join("candidate.patch"), FIX).unwrap();
    cli_grade(9999, tmp.path());
    bench_apply(1, Path::new(&bin));

    let mut rows = Vec::new();
    for round in 0..2 {
        let t = Instant::now();
        for i in 0..n {
            bare_grade(&d, round * 1000 + i).await;
        }
        let bare = t.elapsed();
        let t = Instant::now();
        for i in 0..n {
            cli_grade(round * 1000 + i, tmp.path());
        }
        let cli = t.elapsed();
        let bench = bench_apply(n, Path::new(&bin));
        rows.push((bare, cli, bench));
    }
    let per = |d: Duration| d.as_secs_f64() * 1000.0 / n as f64;
    println!("{n} grades per run, one at a time; ms per grade");
    println!("| round | bare bollard | docker CLI | bench apply | bench / bare | bench / CLI |");
    println!("|---|---|---|---|---|---|");
    for (i, (bare, cli, bench)) in rows.iter().enumerate() {
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.2}x | {:.2}x |",
            i + 1,
            per(*bare),
            per(*cli),
            per(*bench),
            per(*bench) / per(*bare),
            per(*bench) / per(*cli)
        );
    }
}
