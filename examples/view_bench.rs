//! Times `bench view` on a synthetic store: `view_bench <bench-binary> <work-dir> [tasks] [teams]`
//! (default 1,000 tasks x 4 teams, one of whose grading logs is 50 MB), against a baseline of
//! 8 tasks x 3 teams written the same way in the same run. Needs chromium and chromedriver.
//! Prints markdown table rows (see scripts/bench-view.sh).
//!
//! The store is written through the library as apply would leave it: a report record whose
//! job holds every pair's outcome, a solve and a grade record per pair with their blobs
//! (patch, Codex-style trajectory, test log, statuses), a gold record per task, and the
//! manifest's index.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bench::jobs::{GradeOutput, ReportJob, ReportOutput, RunUsage, SolveOutput, Tokens};
use bench::store::{ActionRecord, Index, Output, RECORD_SCHEMA, Store};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

const BIG_LOG: usize = 50 << 20;

fn manifest(teams: usize) -> String {
    let names: Vec<String> = (1..=teams).map(|i| format!("\"t{i}\"")).collect();
    let mut m = format!(
        "version = 1\nname = \"synthetic\"\n\n[backend]\nkind = \"local\"\n\n[datasets.syn]\nformat = \"local\"\npath = \"tasks\"\n\n\
[stages.sample]\nkind = \"sample\"\ndataset = \"syn\"\n\n[stages.gold]\nkind = \"gold\"\nneeds = [\"sample\"]\n\n\
[stages.solve]\nkind = \"solve\"\nneeds = [\"gold\"]\nteams = [{}]\n\n[stages.grade]\nkind = \"grade\"\nneeds = [\"solve\"]\n\n\
[stages.report]\nkind = \"report\"\nneeds = [\"grade\"]\nbaseline = \"t1\"\n",
        names.join(", ")
    );
    for i in 1..=teams {
        m.push_str(&format!(
            "\n[teams.t{i}]\ntopology = \"solo\"\nworker = \"nop\"\n"
        ));
    }
    m
}

fn patch(task: usize, team: usize) -> String {
    let mut p = format!(
        "diff --git a/src/mod_{task}.py b/src/mod_{task}.py\n--- a/src/mod_{task}.py\n+++ b/src/mod_{task}.py\n@@ -1,8 +1,9 @@\n"
    );
    for l in 0..8 {
        if l == 3 {
            p.push_str(&format!("-    return value - {team}\n+    return value + {team}  # fixed\n+    # team {team}\n"));
        } else {
            p.push_str(&format!(" def f{l}(value):\n"));
        }
    }
    p
}

fn trajectory(task: usize, team: usize) -> String {
    let mut t = "===== worker: codex@gpt-test =====\n".to_string();
    t.push_str("{\"type\":\"thread.started\",\"thread_id\":\"x\"}\n");
    for step in 0..6 {
        t.push_str(&json!({"type": "item.completed", "item": {"id": format!("c{step}"), "type": "command_execution",
            "command": format!("grep -n value src/mod_{task}.py # {step}"), "aggregated_output": "3:    return value - 1\n",
            "exit_code": 0, "status": "completed"}}).to_string());
        t.push('\n');
        t.push_str(&json!({"type": "turn.completed", "usage": {"input_tokens": 1200 + step, "cached_input_tokens": 800, "output_tokens": 90 + team}}).to_string());
        t.push('\n');
    }
    t
}

fn log(task: usize, big: bool) -> Vec<u8> {
    let mut l = String::new();
    let mut i = 0;
    let target = if big { BIG_LOG } else { 4096 };
    while l.len() < target {
        l.push_str(&format!(
            "tests/test_mod_{task}.py::test_case_{i} PASSED [{:>3}%]\n",
            i % 100
        ));
        i += 1;
    }
    l.into_bytes()
}

fn put(store: &Store, key: &str, output: Output, blobs: BTreeMap<String, String>, job: Value) {
    store
        .put_action(&ActionRecord {
            schema: RECORD_SCHEMA,
            key: key.to_string(),
            job,
            output,
            blobs: blobs.into(),
            bench_version: env!("CARGO_PKG_VERSION").to_string(),
            started_at: "2026-12-04T00:00:00Z".into(),
            duration_ms: 1000,
        })
        .expect("record written");
}

/// Writes the synthetic experiment under `dir`; returns the manifest path and the digest of
/// the big log (if any).
fn write_store(dir: &Path, tasks: usize, teams: usize, big: bool) -> (PathBuf, Option<String>) {
    fs_err::create_dir_all(dir.join("tasks")).unwrap();
    let mpath = dir.join("synthetic.toml");
    fs_err::write(&mpath, manifest(teams)).unwrap();
    let m = bench::manifest::load(&mpath).expect("the synthetic manifest loads");
    let store = Store::open(&dir.join(".bench")).unwrap();
    let key = |s: &str| bench::key::digest(s.as_bytes());
    let mut index = BTreeMap::new();
    let (mut pairs, mut artifacts, mut usage, mut gold) = (vec![], vec![], vec![], BTreeMap::new());
    let mut big_digest = None;
    let langs = ["python", "rust", "go", "typescript"];
    for t in 0..tasks {
        let task = format!("org__repo{}-{t}", t % 40);
        let gk = key(&format!("gold {t}"));
        put(
            &store,
            &gk,
            Output::Grade(GradeOutput {
                resolved: true,
                patch_applied: true,
                ..Default::default()
            }),
            BTreeMap::new(),
            Value::Null,
        );
        index.insert(format!("gold/{task}"), gk);
        gold.insert(task.clone(), Some(true));
        for team in 1..=teams {
            let tname = format!("t{team}");
            let resolved = (t * 7 + team * 3) % 5 < team.min(4);
            let p = store.put_blob(patch(t, team).as_bytes()).unwrap();
            let tr = store.put_blob(trajectory(t, team).as_bytes()).unwrap();
            let is_big = big && t == 0 && team == 1;
            let l = store.put_blob(&log(t, is_big)).unwrap();
            if is_big {
                big_digest = Some(l.clone());
            }
            let failing = vec![format!("tests/test_mod_{t}.py::test_fix")];
            let statuses = store
                .put_blob(
                    json!({ failing[0].clone(): if resolved { "pass" } else { "fail" } })
                        .to_string()
                        .as_bytes(),
                )
                .unwrap();
            let runs = vec![RunUsage {
                role: "worker".into(),
                harness: "codex".into(),
                model: Some("gpt-test".into()),
                tokens: Some(Tokens {
                    input: 7200,
                    cached_input: 4800,
                    cache_write: 0,
                    output: 560,
                }),
                reported_cost_usd: Some(0.01 * team as f64),
                reported_exact: true,
                no_model: false,
                timed_out: false,
            }];
            let sk = key(&format!("solve {t} {team}"));
            put(
                &store,
                &sk,
                Output::Solve(SolveOutput {
                    patch: p.clone(),
                    patch_bytes: 300,
                    runs: runs.clone(),
                    duration_ms: 60_000,
                    ..Default::default()
                }),
                BTreeMap::from([
                    ("patch".into(), p.clone()),
                    ("trajectory".into(), tr.clone()),
                ]),
                Value::Null,
            );
            index.insert(format!("solve/{task}/{tname}/0"), sk);
            let grade = GradeOutput {
                resolved,
                patch_applied: true,
                fail_to_pass_success: if resolved { failing.clone() } else { vec![] },
                fail_to_pass_failure: if resolved { vec![] } else { failing.clone() },
                pass_to_pass_success: (0..20)
                    .map(|i| format!("tests/test_mod_{t}.py::test_case_{i}"))
                    .collect(),
                history_check: "ok: no commit after the base".into(),
                duration_ms: 20_000,
                ..Default::default()
            };
            let rk = key(&format!("grade {t} {team}"));
            put(
                &store,
                &rk,
                Output::Grade(grade),
                BTreeMap::from([
                    ("log".into(), l.clone()),
                    ("statuses".into(), statuses),
                    ("patch".into(), p.clone()),
                ]),
                Value::Null,
            );
            index.insert(format!("grade/solve/{task}/{tname}/0"), rk);
            pairs.push(json!({"task": task, "team": tname, "replicate": 0,
                "state": if resolved { json!({"kind": "resolved"}) } else { json!({"kind": "unresolved", "timed_out": false}) },
                "wall_time_s": 60.0, "language": langs[t % 4], "repo": format!("org/repo{}", t % 40)}));
            artifacts.push(json!({"task": task, "team": tname, "replicate": 0, "patch": p, "trajectory": tr, "log": l}));
            usage.push(json!({"task": task, "team": tname, "replicate": 0, "runs": runs}));
        }
    }
    let inputs = json!({
        "manifest": "synthetic", "description": null, "bench_version": env!("CARGO_PKG_VERSION"),
        "backend": "local", "network": {"agent": "model endpoints only", "grading": "none"},
        "datasets": ["syn"], "filters": [], "since": null,
        "teams": (1..=teams).map(|i| format!("t{i}")).collect::<Vec<_>>(), "baseline": "t1",
        "count_errors_as_failures": false, "gold": gold, "pairs": pairs, "rows": [],
        "artifacts": artifacts, "promote": null, "usage": usage, "pricing": {}, "audit": [],
    });
    let inputs = serde_json::from_value(inputs).expect("report inputs");
    let out = dir.join("reports/synthetic");
    let job = ReportJob::new(inputs, out.clone());
    let rk = key("report");
    put(
        &store,
        &rk,
        Output::Report(ReportOutput {
            out: out.display().to_string(),
            files: vec![],
            artifacts: 0,
            promotion: None,
        }),
        BTreeMap::new(),
        serde_json::to_value(&job).unwrap(),
    );
    index.insert("report".into(), rk);
    store
        .save_index(
            &m.path,
            &Index {
                schema: RECORD_SCHEMA,
                manifest_path: m.path.display().to_string(),
                nodes: index,
            }
            .view(),
        )
        .unwrap();
    (mpath, big_digest)
}

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `bench view`; returns it, its URL and how long it took to print the URL.
fn view(bin: &Path, manifest: &Path) -> (Killed, String, Duration) {
    let start = Instant::now();
    let mut child = Command::new(bin)
        .arg("view")
        .arg(manifest)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let took = start.elapsed();
    let url = line
        .trim()
        .strip_prefix("bench view: ")
        .expect("a URL")
        .to_string();
    (Killed(child), url, took)
}

fn get(url: &str) -> (Duration, usize) {
    let start = Instant::now();
    let mut r = ureq::get(url).call().expect("served");
    let n = r.body_mut().read_to_vec().unwrap().len();
    (start.elapsed(), n)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Loads `url` in the browser until the route rendered; the page's own clock at that moment.
async fn page_ms(c: &Client, url: &str) -> f64 {
    c.goto("about:blank").await.unwrap();
    c.goto(url).await.unwrap();
    c.wait()
        .at_most(Duration::from_secs(60))
        .for_element(Locator::Css("body[data-ready]"))
        .await
        .unwrap();
    let v = c
        .execute(
            "return Number(document.body.getAttribute('data-ready-ms'))",
            vec![],
        )
        .await
        .unwrap();
    v.as_f64().unwrap_or(f64::NAN)
}

/// Selects a team in the filter; the time until the table is rendered again, by the page's clock.
async fn filter_ms(c: &Client, team: &str) -> f64 {
    let before = c
        .execute("return performance.now()", vec![])
        .await
        .unwrap()
        .as_f64()
        .unwrap();
    c.find(Locator::Css("#f-team"))
        .await
        .unwrap()
        .select_by_value(team)
        .await
        .unwrap();
    c.wait()
        .at_most(Duration::from_secs(60))
        .for_element(Locator::Css("body[data-ready]"))
        .await
        .unwrap();
    let after = c
        .execute(
            "return Number(document.body.getAttribute('data-ready-ms'))",
            vec![],
        )
        .await
        .unwrap()
        .as_f64()
        .unwrap();
    after - before
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: view_bench <bench-binary> <work-dir> [tasks] [teams]");
        std::process::exit(2);
    }
    let bin = PathBuf::from(&args[1]);
    let work = PathBuf::from(&args[2]);
    let tasks: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let teams: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(4);
    let _ = fs_err::remove_dir_all(&work);
    let t = Instant::now();
    let (big_m, big_log) = write_store(&work.join("big"), tasks, teams, true);
    eprintln!(
        "wrote the {tasks} x {teams} store in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let (small_m, _) = write_store(&work.join("small"), 8, 3, false);
    let big_log = big_log.expect("the big log");

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _driver = Killed(
        Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver"),
    );
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(50));
    }
    let profile = tempfile::tempdir().unwrap();
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".into(), json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", format!("--user-data-dir={}", profile.path().display())]}));
    let mut b = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
    b.capabilities(caps);
    let c = b
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("chromium");

    let rounds = 5;
    let mut rows = Vec::new();
    for (name, m) in [
        ("baseline 8 x 3", &small_m),
        (&*format!("{tasks} x {teams}"), &big_m),
    ] {
        let (_server, url, startup) = view(&bin, m);
        let (json_t, json_n) = get(&format!("{url}data/experiment.js"));
        let mut page = Vec::new();
        let mut filter = Vec::new();
        for _ in 0..rounds {
            page.push(page_ms(&c, &url).await);
            filter.push(filter_ms(&c, "t2").await);
        }
        rows.push((
            name.to_string(),
            startup.as_secs_f64() * 1000.0,
            json_t.as_secs_f64() * 1000.0,
            json_n,
            median(page),
            median(filter),
        ));
        if m == &big_m {
            // The 50 MB log: its first page over HTTP, the pair page showing it, and reading the
            // whole blob (verified) as the baseline.
            let mut first = Vec::new();
            for _ in 0..rounds {
                first.push(
                    get(&format!("{url}data/blob/{big_log}/0.js"))
                        .0
                        .as_secs_f64()
                        * 1000.0,
                );
            }
            let store = Store::open_existing(&work.join("big/.bench")).unwrap();
            let mut whole = Vec::new();
            for _ in 0..rounds {
                let s = Instant::now();
                let n = store
                    .get_blob(&bench::types::Digest::parse(&big_log).unwrap())
                    .unwrap()
                    .len();
                assert_eq!(n, BIG_LOG.max(n));
                whole.push(s.elapsed().as_secs_f64() * 1000.0);
            }
            let mut pair = Vec::new();
            for _ in 0..rounds {
                pair.push(page_ms(&c, &format!("{url}#/pair/org__repo0-0/t1/0")).await);
            }
            println!(
                "| 50 MB grading log: first page over HTTP (median of {rounds}) | {:.1} ms |",
                median(first.clone())
            );
            println!(
                "| 50 MB grading log: pair page rendered with it (page clock) | {:.0} ms |",
                median(pair)
            );
            println!(
                "| baseline: the whole blob read and verified | {:.1} ms (first page = {:.3}x) |",
                median(whole.clone()),
                median(first) / median(whole)
            );
        }
    }
    println!(
        "| store | viewer start (URL printed) | experiment data (HTTP) | experiment page interactive (page clock, median of {rounds}) | filter to one team |"
    );
    println!("|---|---|---|---|---|");
    let base_page = rows[0].4;
    for (name, start, jt, jn, page, filter) in &rows {
        println!(
            "| {name} | {start:.0} ms | {jt:.1} ms, {} KiB | {page:.0} ms ({:.2}x baseline) | {filter:.0} ms |",
            jn / 1024,
            page / base_page
        );
    }
    c.close().await.unwrap();
}
