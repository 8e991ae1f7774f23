//! bench's overhead per SWE-bench Pro grade on docker, against a bare bollard loop running
//! upstream's entry script. Run with `scripts/bench-docker-overhead.sh` (needs the test images).
//!
//! Each grade, bare: create + start a container of `bench-test-pro:1` (idle PID 1), copy
//! patch.diff, run_script.sh and parser.py to /workspace, run upstream's entry script (`cd
//! /app`, `git reset --hard`, `git checkout`, `git apply -v`, the hidden-test checkout,
//! `bash run_script.sh ... > stdout.log 2> stderr.log`, `python parser.py ...`), read
//! output.json, remove the container. bench does the same through `bench apply` (a gold stage,
//! `limits.jobs = 1`, N tasks) plus its locked protocol: the history strip and fail-closed
//! check, the capture of the hidden tests before it, the hardened container, nonce'd markers,
//! the verdict and the store writes.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    CreateContainerOptions, DownloadFromContainerOptions, RemoveContainerOptions,
    UploadToContainerOptions,
};
use futures_util::StreamExt;

const IMAGE: &str = "bench-test-pro:1";
const SELECTED: &str = "tests/test_add.py,tests/test_calc.py";

fn tar_of(files: &[(&str, &str)]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for (p, c) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(c.len() as u64);
        h.set_mode(0o755);
        h.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut h, p, c.as_bytes()).unwrap();
    }
    tar.into_inner().unwrap()
}

async fn exec(d: &Docker, id: &str, script: &str) -> i64 {
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
    if let StartExecResults::Attached { mut output, .. } = d.start_exec(&e.id, None).await.unwrap()
    {
        while let Some(Ok(_)) = output.next().await {}
    }
    d.inspect_exec(&e.id).await.unwrap().exit_code.unwrap_or(-1)
}

struct Fixture {
    base: String,
    fix: String,
    gold: String,
    test_patch: String,
    run_script: String,
    parser: String,
}

async fn bare_grade(d: &Docker, i: usize, f: &Fixture) {
    let id = d
        .create_container(
            Some(CreateContainerOptions {
                name: Some(format!("bench-overhead-pro-{i}")),
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
                ("workspace/patch.diff", &f.gold),
                ("workspace/run_script.sh", &f.run_script),
                ("workspace/parser.py", &f.parser),
            ])
            .into(),
        ),
    )
    .await
    .unwrap();
    let entry = format!(
        "cd /app\ngit reset --hard {b}\ngit checkout {b}\ngit apply -v /workspace/patch.diff\ngit checkout {fix} -- tests/test_add.py\nbash /workspace/run_script.sh {SELECTED} > /workspace/stdout.log 2> /workspace/stderr.log\npython /workspace/parser.py /workspace/stdout.log /workspace/stderr.log /workspace/output.json\n",
        b = f.base,
        fix = f.fix
    );
    assert_eq!(exec(d, &id, &entry).await, 0);
    let mut stream = d.download_from_container(
        &id,
        Some(DownloadFromContainerOptions {
            path: "/workspace/output.json".into(),
        }),
    );
    let mut data = Vec::new();
    while let Some(Ok(c)) = stream.next().await {
        data.extend_from_slice(&c);
    }
    assert!(String::from_utf8_lossy(&data).contains("PASSED"));
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
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn id_of(i: usize) -> String {
    format!("instance_bench__calcpro-{i:040}-vnan")
}

fn bench_apply(n: usize, bin: &Path, f: &Fixture) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let mut rows = String::new();
    for i in 0..n {
        let id = id_of(i);
        sh(&[
            "tag",
            IMAGE,
            &format!("jefzda/sweap-images:bench.calcpro-bench__calcpro-{i:040}"),
        ]);
        rows.push_str(
            &serde_json::json!({
                "repo": "bench/calcpro", "instance_id": id, "base_commit": f.base,
                "patch": f.gold, "test_patch": f.test_patch,
                "problem_statement": "add", "requirements": "", "interface": "",
                "before_repo_set_cmd": format!("git checkout {} -- tests/test_add.py", f.fix),
                "selected_test_files_to_run": "['tests/test_add.py', 'tests/test_calc.py']",
                "fail_to_pass": "['tests/test_add.py | T.test_add']",
                "pass_to_pass": "['tests/test_calc.py | T.test_mul']",
            })
            .to_string(),
        );
        rows.push('\n');
        let d = dir.path().join("harness/run_scripts").join(&id);
        fs_err::create_dir_all(&d).unwrap();
        fs_err::write(d.join("run_script.sh"), &f.run_script).unwrap();
        fs_err::write(d.join("parser.py"), &f.parser).unwrap();
        fs_err::write(d.join("instance_info.txt"), format!("Instance ID: {id}\n")).unwrap();
    }
    fs_err::create_dir_all(dir.path().join("data")).unwrap();
    fs_err::write(dir.path().join("data/rows.jsonl"), rows).unwrap();
    fs_err::write(
        dir.path().join("m.toml"),
        "version = 1\nname = \"overhead\"\n[backend]\nkind = \"docker\"\n[limits]\njobs = 1\n\
[datasets.d]\nformat = \"swe-bench-pro\"\npath = \"data\"\nrun_scripts = \"harness\"\n\
[stages.sample]\nkind = \"sample\"\ndataset = \"d\"\n\
[stages.gold]\nkind = \"gold\"\nneeds = [\"sample\"]\n",
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
    let cat = |p: &str| sh(&["run", "--rm", "--entrypoint", "cat", IMAGE, p]);
    let shas = cat("/fixture/shas");
    let sha = |k: &str| {
        shas.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")).map(str::to_string))
            .unwrap()
    };
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/swe_bench_pro");
    let f = Fixture {
        base: sha("base"),
        fix: sha("fix_a"),
        gold: cat("/fixture/gold-a.patch"),
        test_patch: cat("/fixture/test-a.patch"),
        run_script: fs_err::read_to_string(fixtures.join("run_script.sh")).unwrap(),
        parser: fs_err::read_to_string(fixtures.join("parser.py")).unwrap(),
    };
    let d = Docker::connect_with_defaults().unwrap();
    bare_grade(&d, 9999, &f).await;
    bench_apply(1, &bin, &f);
    let mut rows = Vec::new();
    for round in 0..2 {
        let t = Instant::now();
        for i in 0..n {
            bare_grade(&d, round * 1000 + i, &f).await;
        }
        let bare = t.elapsed();
        let bench = bench_apply(n, &bin, &f);
        rows.push((bare, bench));
    }
    for i in 0..n {
        let _ = Command::new("docker")
            .args([
                "rmi",
                &format!("jefzda/sweap-images:bench.calcpro-bench__calcpro-{i:040}"),
            ])
            .output();
    }
    let per = |d: Duration| d.as_secs_f64() * 1000.0 / n as f64;
    println!("SWE-bench Pro: {n} grades per run, one at a time; ms per grade");
    println!("| round | bare bollard (upstream entry script) | bench apply | bench / bare |");
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
