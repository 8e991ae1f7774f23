//! Datasets: the parquet / JSON-lines readers on fixtures written here, pinned Hub datasets
//! served by a real HTTP server on loopback (fetch once, offline reruns, corruption, resume),
//! the sample filters on their tasks, and `limit` on the quickstart.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bench::datasets::fixtures::{Row, Shape, write_jsonl, write_parquet};
use bench::datasets::{read_file, read_files, read_local};
use bench::manifest::{DatasetFormat, SampleFilters};
use bench::tasks::{TaskBase, TaskSet, sample, sample_rank};
use common::{Sandbox, bench_in, plan_to_run, stderr, stdout};

const REV: &str = "3638632e8153a10ca422c1022bed79023084b5c9";

fn rows(prefix: &str, n: usize) -> Vec<Row> {
    (0..n)
        .map(|i| {
            Row::new(
                &format!("{prefix}__proj{}-{}", i % 3, 100 + i),
                &format!("2025-{:02}-{:02}T10:00:00Z", 7 + i % 4, 1 + i % 28),
            )
        })
        .collect()
}

fn err_text<T: std::fmt::Debug>(r: Result<T, bench::datasets::DatasetError>) -> String {
    r.expect_err("should fail").to_string()
}

// ---------------------------------------------------------------- readers

#[test]
fn multilang_parquet_rows_become_image_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rust-00000-of-00001.parquet");
    write_parquet(&p, Shape::MultiLang, &rows("tokio-rs", 5)).unwrap();
    let tasks = read_file(
        DatasetFormat::SweBenchLive,
        &p,
        "data/rust-00000-of-00001.parquet",
    )
    .unwrap();
    assert_eq!(tasks.len(), 5);
    let t = &tasks[0];
    assert_eq!(t.instance_id, "tokio-rs__proj0-100");
    assert_eq!(t.repo, "tokio-rs/proj0");
    assert_eq!(t.language.as_deref(), Some("rust"));
    assert_eq!(t.created_at, "2025-07-01T10:00:00Z");
    assert_eq!(t.test_cmds, ["cd /testbed && make test 2>&1 | tee t.log"]);
    assert_eq!(t.rebuild_cmds, ["cd /testbed && make"]);
    assert_eq!(t.print_cmds, ["cat /testbed/t.log"]);
    assert!(t.log_parser.contains("def parser"));
    assert_eq!(t.pass_to_pass[1], "tests::\"quoted\" name");
    match &t.base {
        TaskBase::Image { image, base_commit } => {
            assert_eq!(
                image,
                "starryzhang/sweb.eval.x86_64.tokio-rs_1776_proj0-100"
            );
            assert_eq!(base_commit.len(), 40);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn live_python_and_classic_swe_bench_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("full-00000-of-00002.parquet");
    write_parquet(&p, Shape::LivePython, &rows("Aws-Cloud__cfn", 2)).unwrap();
    let t = &read_file(DatasetFormat::SweBenchLivePython, &p, "full.parquet").unwrap()[0];
    assert_eq!(t.language.as_deref(), Some("python"));
    assert_eq!(t.log_parser, "pytest");
    assert!(t.print_cmds.is_empty());
    assert!(matches!(&t.base, TaskBase::Image { image, .. }
        if image == "starryzhang/sweb.eval.x86_64.aws-cloud_1776_cfn_1776_proj0-100"));

    for (name, writer) in [
        (
            "verified.parquet",
            write_parquet as fn(&Path, Shape, &[Row]) -> Result<(), String>,
        ),
        ("verified.jsonl", write_jsonl),
    ] {
        let p = dir.path().join(name);
        writer(&p, Shape::SweBench, &rows("django", 3)).unwrap();
        let tasks = read_file(DatasetFormat::SweBench, &p, name).unwrap();
        let t = &tasks[2];
        assert_eq!(t.instance_id, "django__proj2-102");
        assert_eq!(t.fail_to_pass, ["tests::django__proj2-102_fixed"]);
        assert_eq!(t.pass_to_pass[1], "tests::\"quoted\" name");
        // `django/proj2` is not in the swe-bench specs table: no test command (grading it is an
        // error naming the task), the default SWE-bench parser.
        assert!(t.test_cmds.is_empty());
        assert_eq!(t.log_parser, "swebench-pytest");
        assert!(
            matches!(&t.base, TaskBase::Image { image, .. }
            if image == "swebench/sweb.eval.x86_64.django_1776_proj2-102:latest"),
            "{name}"
        );
    }
    // MultiLang rows as JSON lines (real lists) read the same as parquet.
    let p = dir.path().join("go-00000-of-00001.jsonl");
    write_jsonl(&p, Shape::MultiLang, &rows("golang", 2)).unwrap();
    let t = &read_file(
        DatasetFormat::SweBenchLive,
        &p,
        "data/go-00000-of-00001.jsonl",
    )
    .unwrap()[1];
    assert_eq!(t.language.as_deref(), Some("go"));
    assert_eq!(t.test_cmds.len(), 1);
}

#[test]
fn bad_files_name_file_row_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let name = "data/rust-00000-of-00001.parquet";
    let p = dir.path().join("x.parquet");

    let mut r = rows("tokio-rs", 20);
    r[16].created_at = "yesterday".into();
    write_parquet(&p, Shape::MultiLang, &r).unwrap();
    assert_eq!(
        err_text(read_file(DatasetFormat::SweBenchLive, &p, name)),
        "data/rust-00000-of-00001.parquet: row 17, column created_at: cannot parse \"yesterday\" as a date"
    );

    // Other date spellings are normalized.
    let mut r = rows("tokio-rs", 2);
    r[0].created_at = "2025-09-07 21:34:16".into();
    r[1].created_at = "2025-09-07T23:34:16+02:00".into();
    write_parquet(&p, Shape::MultiLang, &r).unwrap();
    let tasks = read_file(DatasetFormat::SweBenchLive, &p, name).unwrap();
    assert_eq!(tasks[0].created_at, "2025-09-07T21:34:16Z");
    assert_eq!(tasks[1].created_at, "2025-09-07T21:34:16Z");

    // A classic SWE-bench file read as MultiLang lacks its columns.
    write_parquet(&p, Shape::SweBench, &rows("django", 2)).unwrap();
    assert_eq!(
        err_text(read_file(DatasetFormat::SweBenchLive, &p, name)),
        "data/rust-00000-of-00001.parquet: missing column test_cmds"
    );

    // Wrong types, JSON lines.
    let j = dir.path().join("x.jsonl");
    write_jsonl(&j, Shape::SweBench, &rows("django", 3)).unwrap();
    let text = fs_err::read_to_string(&j).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let mut v: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
    v["FAIL_TO_PASS"] = serde_json::json!(3);
    lines[1] = v.to_string();
    fs_err::write(&j, lines.join("\n")).unwrap();
    assert_eq!(
        err_text(read_file(DatasetFormat::SweBench, &j, "test.jsonl")),
        "test.jsonl: row 2, column FAIL_TO_PASS: expected a list of strings, found a number"
    );
    v["FAIL_TO_PASS"] = serde_json::json!("[not json");
    lines[1] = v.to_string();
    fs_err::write(&j, lines.join("\n")).unwrap();
    assert_eq!(
        err_text(read_file(DatasetFormat::SweBench, &j, "test.jsonl")),
        "test.jsonl: row 2, column FAIL_TO_PASS: cannot parse \"[not json\" as a JSON list of strings"
    );

    // Wrong type, parquet: a boolean where a string belongs.
    {
        use arrow_array::{ArrayRef, BooleanArray, RecordBatch};
        let mut cols: Vec<(&str, ArrayRef)> =
            bench::datasets::fixtures::arrays(Shape::SweBench, &rows("django", 1));
        cols.retain(|(n, _)| *n != "repo");
        cols.push(("repo", std::sync::Arc::new(BooleanArray::from(vec![true]))));
        let batch = RecordBatch::try_from_iter(cols).unwrap();
        let f = fs_err::File::create(&p).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(f, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        assert_eq!(
            err_text(read_file(DatasetFormat::SweBench, &p, "t.parquet")),
            "t.parquet: row 1, column repo: expected a string, found Boolean"
        );
    }

    // Duplicate ids across files.
    let a = dir.path().join("a.parquet");
    let b = dir.path().join("b.parquet");
    write_parquet(&a, Shape::MultiLang, &rows("tokio-rs", 3)).unwrap();
    write_parquet(&b, Shape::MultiLang, &rows("tokio-rs", 2)[1..]).unwrap();
    assert_eq!(
        err_text(read_files(
            DatasetFormat::SweBenchLive,
            &[
                ("data/c-0.parquet".into(), a),
                ("data/cpp-0.parquet".into(), b)
            ]
        )),
        "data/cpp-0.parquet: row 1, column instance_id: duplicate instance_id \"tokio-rs__proj1-101\" (first seen in data/c-0.parquet, row 2)"
    );
}

#[test]
fn a_local_directory_of_shards_reads_every_file() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::create_dir(dir.path().join("data")).unwrap();
    write_parquet(
        &dir.path().join("data/full-00000-of-00002.parquet"),
        Shape::LivePython,
        &rows("a", 3),
    )
    .unwrap();
    write_parquet(
        &dir.path().join("data/full-00001-of-00002.parquet"),
        Shape::LivePython,
        &rows("b", 4),
    )
    .unwrap();
    let tasks = read_local(DatasetFormat::SweBenchLivePython, dir.path()).unwrap();
    assert_eq!(tasks.len(), 7);
}

#[test]
fn filters_and_seed_work_on_dataset_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rust-00000-of-00001.parquet");
    let all = rows("tokio-rs", 40);
    write_parquet(&p, Shape::MultiLang, &all).unwrap();
    let set =
        TaskSet::new(read_file(DatasetFormat::SweBenchLive, &p, "data/rust-0.parquet").unwrap());
    let f = |edit: &dyn Fn(&mut SampleFilters)| {
        let mut f = SampleFilters {
            since: None,
            until: None,
            repos: Default::default(),
            languages: Default::default(),
            instance_ids: Default::default(),
            limit: None,
            seed: 7,
        };
        edit(&mut f);
        sample(&set, &f)
    };
    // since inclusive, until exclusive: row 1 is created exactly at `since`, row 2 exactly
    // at `until`.
    let (since, until) = ("2025-08-02T10:00:00Z", "2025-09-03T10:00:00Z");
    assert_eq!(all[1].created_at, since);
    assert_eq!(all[2].created_at, until);
    let got = f(&|f| {
        f.since = Some(since.into());
        f.until = Some(until.into());
    });
    let mut want: Vec<&Row> = all
        .iter()
        .filter(|r| r.created_at.as_str() >= since && r.created_at.as_str() < until)
        .collect();
    want.sort_by_key(|r| sample_rank(7, &r.instance_id));
    assert_eq!(
        got,
        want.iter()
            .map(|r| r.instance_id.clone())
            .collect::<Vec<_>>()
    );
    assert!(got.contains(&all[1].instance_id));
    assert!(!got.contains(&all[2].instance_id));
    // repos, languages, instance ids.
    assert!(
        f(&|f| f.repos = ["tokio-rs/proj2".to_string()].into())
            .iter()
            .all(|i| i.contains("proj2"))
    );
    assert_eq!(f(&|f| f.languages = ["go".to_string()].into()).len(), 0);
    assert_eq!(f(&|f| f.languages = ["rust".to_string()].into()).len(), 40);
    assert_eq!(
        f(&|f| f.instance_ids = ["tokio-rs__proj0-103".to_string()].into()),
        ["tokio-rs__proj0-103"]
    );
    // limit is a prefix; another seed is another order.
    let ten = f(&|f| f.limit = Some(10));
    let twenty = f(&|f| f.limit = Some(20));
    assert_eq!(ten[..], twenty[..10]);
    assert_ne!(
        ten,
        f(&|f| {
            f.limit = Some(10);
            f.seed = 8;
        })
    );
}

#[test]
fn another_revision_is_another_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rust-00000-of-00001.parquet");
    write_parquet(&p, Shape::MultiLang, &rows("t", 3)).unwrap();
    let load = || TaskSet::new(read_file(DatasetFormat::SweBenchLive, &p, "x.parquet").unwrap());
    let a = load().with_origin(&format!("SWE-bench-Live/MultiLang@{REV}"));
    let b = load().with_origin("SWE-bench-Live/MultiLang@1111111111111111111111111111111111111111");
    assert_eq!(
        a.snapshot,
        load()
            .with_origin(&format!("SWE-bench-Live/MultiLang@{REV}"))
            .snapshot
    );
    assert_ne!(a.snapshot, b.snapshot);
}

// ---------------------------------------------------------------- a Hub on loopback

/// A minimal HTTP/1.1 file server in the Hub's URL layout
/// (`/datasets/{repo}/resolve/{revision}/{path}`), honouring `Range: bytes=N-`, counting
/// requests, and able to cut a response short once.
struct LoopbackHub {
    url: String,
    requests: Arc<AtomicUsize>,
    ranges: Arc<Mutex<Vec<String>>>,
    auth: Arc<Mutex<Vec<String>>>,
    cut_next: Arc<AtomicUsize>,
}

impl LoopbackHub {
    fn start(files: HashMap<String, Vec<u8>>) -> LoopbackHub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let hub = LoopbackHub {
            url,
            requests: Arc::default(),
            ranges: Arc::default(),
            auth: Arc::default(),
            cut_next: Arc::default(),
        };
        let (requests, ranges, auth, cut) = (
            hub.requests.clone(),
            hub.ranges.clone(),
            hub.auth.clone(),
            hub.cut_next.clone(),
        );
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                serve(stream, &files, &requests, &ranges, &auth, &cut);
            }
        });
        hub
    }

    fn count(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

fn serve(
    mut s: TcpStream,
    files: &HashMap<String, Vec<u8>>,
    requests: &AtomicUsize,
    ranges: &Mutex<Vec<String>>,
    auth: &Mutex<Vec<String>>,
    cut: &AtomicUsize,
) {
    let mut reader = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut range = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("range") {
                range = Some(v.trim().to_string());
            }
            if k.eq_ignore_ascii_case("authorization") {
                auth.lock().unwrap().push(v.trim().to_string());
            }
        }
    }
    requests.fetch_add(1, Ordering::SeqCst);
    let Some(body) = files.get(&path) else {
        let _ = s
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    };
    let start = match &range {
        Some(r) => {
            ranges.lock().unwrap().push(r.clone());
            r.trim_start_matches("bytes=")
                .trim_end_matches('-')
                .parse::<usize>()
                .unwrap_or(0)
        }
        None => 0,
    };
    let head = if range.is_some() {
        format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {start}-{}/{}\r\nConnection: close\r\n\r\n",
            body.len() - start,
            body.len() - 1,
            body.len()
        )
    } else {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
    };
    let _ = s.write_all(head.as_bytes());
    let rest = &body[start..];
    if cut.load(Ordering::SeqCst) > 0 {
        cut.fetch_sub(1, Ordering::SeqCst);
        let _ = s.write_all(&rest[..rest.len() / 2]);
        let _ = s.flush();
        return; // connection closes early
    }
    let _ = s.write_all(rest);
    let _ = s.flush();
    let mut sink = Vec::new();
    let _ = s.set_read_timeout(Some(std::time::Duration::from_millis(50)));
    let _ = s.read_to_end(&mut sink);
}

const FILES: [&str; 2] = [
    "data/go-00000-of-00001.parquet",
    "data/rust-00000-of-00001.parquet",
];

/// A served MultiLang revision (rust + go) and a manifest pinned to it.
fn hub_sandbox() -> (tempfile::TempDir, LoopbackHub, Vec<Row>) {
    let dir = tempfile::tempdir().unwrap();
    let mut all = Vec::new();
    let mut files = HashMap::new();
    for (f, prefix) in FILES.iter().zip(["golang", "tokio-rs"]) {
        let r = rows(prefix, 30);
        let p = dir.path().join("fixture.parquet");
        write_parquet(&p, Shape::MultiLang, &r).unwrap();
        files.insert(
            format!("/datasets/SWE-bench-Live/MultiLang/resolve/{REV}/{f}"),
            fs_err::read(&p).unwrap(),
        );
        all.extend(r);
    }
    fs_err::remove_file(dir.path().join("fixture.parquet")).unwrap();
    fs_err::write(
        dir.path().join("hub.toml"),
        format!(
            r#"version = 1
name = "hub"

[backend]
kind = "local"

[datasets.live]
source = "swe-bench-live/multilang"
revision = "{REV}"
files = ["{}", "{}"]

[stages.sample]
kind = "sample"
dataset = "live"
since = 2025-08-01
until = 2025-10-01
languages = ["rust", "go"]
limit = 5
seed = 7
"#,
            FILES[0], FILES[1]
        ),
    )
    .unwrap();
    (dir, LoopbackHub::start(files), all)
}

fn bench_hub(dir: &Path, hub: &LoopbackHub, args: &[&str]) -> std::process::Output {
    std::process::Command::new(common::bench_bin())
        .args(args)
        .current_dir(dir)
        .env_remove("BENCH_STORE")
        .env_remove("HF_TOKEN")
        .env("HF_ENDPOINT", &hub.url)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn expected_sample(all: &[Row]) -> Vec<String> {
    let mut want: Vec<&Row> = all
        .iter()
        .filter(|r| r.created_at.as_str() >= "2025-08-01" && r.created_at.as_str() < "2025-10-01")
        .collect();
    want.sort_by_key(|r| sample_rank(7, &r.instance_id));
    want.iter().take(5).map(|r| r.instance_id.clone()).collect()
}

fn tasks_ids(o: &std::process::Output) -> Vec<String> {
    assert!(o.status.success(), "{}", stderr(o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v[0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["instance_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn pinned_hub_dataset_samples_fetches_once_and_reruns_offline() {
    let (dir, hub, all) = hub_sandbox();
    let d = dir.path();
    let want = expected_sample(&all);
    assert_eq!(want.len(), 5);

    // Before any fetch, plan does not download: the sample is unknown.
    let plan = bench_hub(d, &hub, &["plan", "hub.toml"]);
    assert!(
        stdout(&plan).contains("dataset `live` (SWE-bench-Live/MultiLang@"),
        "{}",
        stdout(&plan)
    );
    assert_eq!(hub.count(), 0);

    // `bench tasks` fetches both files and samples exactly the expected tasks.
    let o = bench_hub(d, &hub, &["tasks", "--json", "hub.toml"]);
    assert_eq!(tasks_ids(&o), want);
    assert_eq!(hub.count(), 2);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v[0]["by_language"]
            .as_object()
            .unwrap()
            .keys()
            .all(|k| k == "rust" || k == "go")
    );

    // plan now reads the stored files: the sample is computed, nothing fetched.
    let plan = bench_hub(d, &hub, &["plan", "--json", "hub.toml"]);
    let pv: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    assert_eq!(pv["stages"][0]["to_run"], 1, "{pv}");
    assert!(
        pv["unavailable_datasets"]
            .as_array()
            .is_none_or(|a| a.is_empty()),
        "{pv}"
    );

    // apply runs the sample without any request; so does a second apply.
    let a = bench_hub(d, &hub, &["apply", "hub.toml"]);
    assert!(a.status.success(), "{}", stderr(&a));
    let a = bench_hub(d, &hub, &["apply", "hub.toml"]);
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(hub.count(), 2);
    let plan = bench_hub(d, &hub, &["plan", "hub.toml"]);
    assert!(
        stdout(&plan).contains("nothing to run"),
        "{}",
        stdout(&plan)
    );

    // Offline: with the endpoint unreachable, everything still works from the store.
    let offline = std::process::Command::new(common::bench_bin())
        .args(["tasks", "--json", "hub.toml"])
        .current_dir(d)
        .env_remove("BENCH_STORE")
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .output()
        .unwrap();
    assert_eq!(tasks_ids(&offline), want);

    // Changing seed or since shows in the explanation.
    let text = fs_err::read_to_string(d.join("hub.toml")).unwrap();
    fs_err::write(d.join("hub.toml"), text.replace("seed = 7", "seed = 8")).unwrap();
    let e = bench_hub(d, &hub, &["plan", "--explain", "hub.toml"]);
    assert!(
        stdout(&e).contains("stage sample: seed 7 -> 8"),
        "{}",
        stdout(&e)
    );
    fs_err::write(
        d.join("hub.toml"),
        text.replace("since = 2025-08-01", "since = 2025-08-15"),
    )
    .unwrap();
    let e = bench_hub(d, &hub, &["plan", "--explain", "hub.toml"]);
    assert!(stdout(&e).contains("stage sample: since"), "{}", stdout(&e));
    // Another revision is another snapshot (and is fetched anew).
    fs_err::write(d.join("hub.toml"), text.replace(REV, &"a".repeat(40))).unwrap();
    let e = bench_hub(d, &hub, &["plan", "--explain", "hub.toml"]);
    assert!(
        stdout(&e).contains("dataset `live` (SWE-bench-Live/MultiLang@"),
        "{}",
        stdout(&e)
    );
    assert_eq!(hub.count(), 2);
}

#[test]
fn a_corrupt_stored_file_is_detected_fetched_again_and_never_used() {
    let (dir, hub, all) = hub_sandbox();
    let d = dir.path();
    let want = expected_sample(&all);
    assert_eq!(
        tasks_ids(&bench_hub(d, &hub, &["tasks", "--json", "hub.toml"])),
        want
    );
    assert_eq!(hub.count(), 2);
    // Corrupt the stored rust file (same length, other bytes).
    let pins: Vec<_> = fs_err::read_dir(d.join(".bench/datasets"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(pins.len(), 1);
    let pin: serde_json::Value =
        serde_json::from_slice(&fs_err::read(pins[0].path()).unwrap()).unwrap();
    let digest = pin["files"][FILES[1]].as_str().unwrap().to_string();
    let blob = d
        .join(".bench/objects")
        .join(&digest[..2])
        .join(&digest[2..]);
    let mut bytes = fs_err::read(&blob).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    fs_err::write(&blob, &bytes).unwrap();

    // plan does not fetch: it notices, removes the copy, and reports the dataset unavailable.
    let plan = bench_hub(d, &hub, &["plan", "hub.toml"]);
    assert!(stderr(&plan).contains("corrupt"), "{}", stderr(&plan));
    assert!(stdout(&plan).contains("not available"), "{}", stdout(&plan));
    assert!(!blob.exists());
    assert_eq!(hub.count(), 2);

    // Corrupt it again through a fresh fetch then a flip, and let `tasks` repair it.
    assert_eq!(
        tasks_ids(&bench_hub(d, &hub, &["tasks", "--json", "hub.toml"])),
        want
    );
    assert_eq!(hub.count(), 3);
    fs_err::write(&blob, &bytes).unwrap();
    let o = bench_hub(d, &hub, &["tasks", "--json", "hub.toml"]);
    assert!(stderr(&o).contains("corrupt"), "{}", stderr(&o));
    assert_eq!(tasks_ids(&o), want);
    assert_eq!(hub.count(), 4, "only the corrupt file is fetched again");
    assert_ne!(fs_err::read(&blob).unwrap(), bytes);
}

#[test]
fn an_interrupted_download_resumes_with_a_range_request() {
    let (dir, hub, all) = hub_sandbox();
    let d = dir.path();
    hub.cut_next.store(1, Ordering::SeqCst);
    let o = bench_hub(d, &hub, &["tasks", "--json", "hub.toml"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot fetch"), "{}", stderr(&o));
    let parts = || common::files_with_ext(&d.join(".bench/tmp/downloads"), "part").len();
    assert_eq!(parts(), 1);
    let o = bench_hub(d, &hub, &["tasks", "--json", "hub.toml"]);
    assert_eq!(tasks_ids(&o), expected_sample(&all));
    let ranges = hub.ranges.lock().unwrap().clone();
    assert_eq!(ranges.len(), 1, "{ranges:?}");
    assert!(
        ranges[0].starts_with("bytes=") && ranges[0] != "bytes=0-",
        "{ranges:?}"
    );
    assert_eq!(parts(), 0);
}

#[test]
fn a_local_parquet_dataset_lists_its_tasks() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::create_dir(dir.path().join("data")).unwrap();
    write_parquet(
        &dir.path().join("data/rust-00000-of-00001.parquet"),
        Shape::MultiLang,
        &rows("tokio-rs", 6),
    )
    .unwrap();
    fs_err::write(
        dir.path().join("m.toml"),
        "version = 1\n[datasets.d]\nformat = \"swe-bench-live\"\npath = \"data\"\n[stages.sample]\nkind = \"sample\"\ndataset = \"d\"\nlimit = 4\n",
    )
    .unwrap();
    let o = bench_in(dir.path(), &["tasks", "--json", "m.toml"]);
    assert_eq!(tasks_ids(&o).len(), 4);
    let o = bench_in(dir.path(), &["tasks", "m.toml"]);
    assert!(
        stdout(&o).contains("per language: rust 4"),
        "{}",
        stdout(&o)
    );
    assert!(
        !dir.path().join(".bench").exists(),
        "a local dataset needs no store"
    );
}

// ---------------------------------------------------------------- limits on the quickstart

fn sampled(sb: &Sandbox) -> Vec<String> {
    tasks_ids(&sb.bench(&["tasks", "--json", "quickstart.toml"]))
}

#[test]
fn raising_limits_keeps_the_first_tasks_and_their_work() {
    let sb = Sandbox::quickstart();
    sb.edit("quickstart.toml", "seed = 7", "seed = 7\nlimit = 2");
    let first = sampled(&sb);
    assert_eq!(first.len(), 2);
    assert!(sb.bench(&["apply", "quickstart.toml"]).status.success());

    // Sample limit 2 -> 3: the sample reruns (it is cheap); only the new task's nodes run.
    sb.edit("quickstart.toml", "limit = 2", "limit = 3");
    let now = sampled(&sb);
    assert_eq!(now[..2], first[..]);
    let new = &now[2];
    for a in plan_to_run(&sb) {
        assert!(
            a == "sample" || a == "report" || a.contains(new.as_str()),
            "{a} reruns though its task was already sampled"
        );
    }
    assert!(sb.bench(&["apply", "quickstart.toml"]).status.success());

    // Solve-stage limit: 3 sampled tasks, solve only 1, then 2: the first task's work is reused.
    sb.edit("quickstart.toml", "teams = [", "limit = 1\nteams = [");
    let to_run = plan_to_run(&sb);
    assert!(to_run.iter().all(|a| a == "report"), "{to_run:?}");
    assert!(sb.bench(&["apply", "quickstart.toml"]).status.success());
    sb.edit("quickstart.toml", "limit = 1\nteams", "limit = 2\nteams");
    let to_run = plan_to_run(&sb);
    assert!(to_run.iter().all(|a| a == "report"), "{to_run:?}");
}

#[test]
fn apply_refuses_to_grade_image_tasks_without_docker_before_fetching() {
    let (dir, hub, _) = hub_sandbox();
    let d = dir.path();
    let mut text = fs_err::read_to_string(d.join("hub.toml")).unwrap();
    text.push_str("\n[stages.gold]\nkind = \"gold\"\nneeds = [\"sample\"]\n");
    fs_err::write(d.join("hub.toml"), text).unwrap();
    let o = bench_hub(d, &hub, &["apply", "hub.toml"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("container-image tasks"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        hub.count(),
        0,
        "nothing is fetched for a run that cannot go ahead"
    );
}

#[test]
fn hf_token_is_sent_never_stored_and_gc_keeps_pinned_files() {
    let (dir, hub, all) = hub_sandbox();
    let d = dir.path();
    let o = std::process::Command::new(common::bench_bin())
        .args(["tasks", "--json", "hub.toml"])
        .current_dir(d)
        .env_remove("BENCH_STORE")
        .env("HF_ENDPOINT", &hub.url)
        .env("HF_TOKEN", "hf_secret_token_123")
        .output()
        .unwrap();
    assert_eq!(tasks_ids(&o), expected_sample(&all));
    assert_eq!(
        hub.auth.lock().unwrap().clone(),
        ["Bearer hf_secret_token_123", "Bearer hf_secret_token_123"]
    );
    let grep = std::process::Command::new("grep")
        .args(["-r", "-l", "hf_secret_token_123", ".bench"])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(grep.stdout.is_empty(), "{}", stdout(&grep));

    // gc keeps the pinned files: nothing is fetched again afterwards.
    assert!(bench_hub(d, &hub, &["apply", "hub.toml"]).status.success());
    let gc = bench_hub(d, &hub, &["gc", "--delete", "hub.toml"]);
    assert!(gc.status.success(), "{}", stderr(&gc));
    assert_eq!(
        tasks_ids(&bench_hub(d, &hub, &["tasks", "--json", "hub.toml"])),
        expected_sample(&all)
    );
    assert_eq!(hub.count(), 2);
}

/// A preset's own pin: with no `revision`, `swe-bench/lite` reads its pinned commit's test
/// split, and a file whose sha256 is not the pinned one is refused and nothing is stored;
/// a manifest that names its own `files` reads those bytes unchecked.
#[test]
fn a_preset_pin_refuses_other_bytes_and_an_own_pin_reads_them() {
    const LITE_REV: &str = "b0dde1093fe417d83b7184254edf8199c1f0dff5";
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let p = d.join("fixture.parquet");
    write_parquet(&p, Shape::SweBench, &rows("django", 4)).unwrap();
    let bytes = fs_err::read(&p).unwrap();
    fs_err::remove_file(&p).unwrap();
    let hub = LoopbackHub::start(HashMap::from([(
        format!(
            "/datasets/SWE-bench/SWE-bench_Lite/resolve/{LITE_REV}/data/test-00000-of-00001.parquet"
        ),
        bytes.clone(),
    )]));
    let manifest = |pin: &str| {
        format!(
            "version = 1\nname = \"lite\"\n[backend]\nkind = \"local\"\n[datasets.lite]\nsource = \"swe-bench/lite\"\n{pin}\n[stages.sample]\nkind = \"sample\"\ndataset = \"lite\"\nseed = 1\n"
        )
    };
    fs_err::write(d.join("m.toml"), manifest("")).unwrap();
    let v = bench_hub(d, &hub, &["validate", "m.toml"]);
    assert!(v.status.success(), "{}", stderr(&v));
    let o = bench_hub(d, &hub, &["tasks", "--json", "m.toml"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    // The message as one line (miette wraps it in a box).
    let flat: String = err
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '│')
        .collect();
    for want in [
        "sha256",
        "438e281d80587aa7be470896ce410557002fde02d2ceee3e099331d308f62dd3",
        &format!("SWE-bench/SWE-bench_Lite@{LITE_REV}/data/test-00000-of-00001.parquet"),
        "nothingwasstored",
    ] {
        assert!(flat.contains(want), "{want:?} not in {err}");
    }
    assert_eq!(hub.count(), 1);
    let stored = |d: &Path| {
        fs_err::read_dir(d.join(".bench/datasets"))
            .map(|r| r.flatten().count())
            .unwrap_or(0)
    };
    assert_eq!(stored(d), 0, "a refused file leaves no pin record");

    // The same commit with the manifest's own `files`: read as served.
    fs_err::write(
        d.join("m.toml"),
        manifest(&format!(
            "revision = \"{LITE_REV}\"\nfiles = [\"data/test-00000-of-00001.parquet\"]"
        )),
    )
    .unwrap();
    let o = bench_hub(d, &hub, &["tasks", "--json", "m.toml"]);
    let ids = tasks_ids(&o);
    assert_eq!(ids.len(), 4, "{ids:?}");
    assert_eq!(stored(d), 1);
}

/// The fetch check itself: the served bytes' sha256 is accepted, any other is refused.
#[test]
fn a_fetched_file_is_checked_against_its_sha256() {
    use sha2::Digest;
    let dir = tempfile::tempdir().unwrap();
    let body = b"rows".to_vec();
    let hub = LoopbackHub::start(HashMap::from([(
        format!("/datasets/o/r/resolve/{REV}/f.jsonl"),
        body.clone(),
    )]));
    let store = bench::store::Store::open(&dir.path().join("store")).unwrap();
    let cfg = bench::datasets::hub::HubConfig {
        endpoint: hub.url.clone(),
        token: None,
    };
    let files = ["f.jsonl".to_string()];
    let good: String = sha2::Sha256::digest(&body)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let bad = "0".repeat(64);
    let check = |h: &str| {
        let sha = std::collections::BTreeMap::from([("f.jsonl".to_string(), h.to_string())]);
        bench::datasets::hub::ensure_files(&store, &cfg, "o/r", REV, &files, &sha, true)
    };
    let e = check(&bad).unwrap_err();
    assert!(e.contains(&good) && e.contains(&bad), "{e}");
    let got = check(&good).unwrap().unwrap();
    assert_eq!(fs_err::read(&got[0].1).unwrap(), body);
    assert_eq!(hub.count(), 2);
}
