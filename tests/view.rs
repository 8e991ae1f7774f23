//! `bench view` over the quickstart: the HTTP server (pages, data, what it refuses), the static
//! export, and a real browser (headless Chromium through chromedriver, driven with fantoccini)
//! clicking from the experiment to a failed pair's diff, failing test and first tool call, and
//! following a running apply until its last outcome.
//! Under CI=true a missing chromium or chromedriver fails the browser test.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// The quickstart with its fixer's output recorded as Codex-style JSONL events (the fixer's
/// own run wrapped as one `command_execution` item), so the trajectory has a tool call.
fn quickstart_applied() -> Sandbox {
    let sb = Sandbox::quickstart();
    let fixer = sb.read("quickstart/agents/fixer.py");
    let main = "if __name__ == \"__main__\":\n    sys.exit(main())\n";
    assert!(fixer.contains(main));
    let wrapped = fixer.replace(
        main,
        r#"if __name__ == "__main__":
    import contextlib, io, json
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main()
    for event in [
        {"type": "thread.started", "thread_id": "fixer"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "item_0", "type": "command_execution",
         "command": "python3 fixer.py", "aggregated_output": buf.getvalue(), "exit_code": code,
         "status": "completed"}},
        {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": "fixer finished"}},
        {"type": "turn.completed", "usage": {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0}},
    ]:
        print(json.dumps(event))
    sys.exit(code)
"#,
    );
    fs_err::write(sb.path("quickstart/agents/fixer_events.py"), wrapped).unwrap();
    sb.edit(
        "quickstart.toml",
        "script = \"quickstart/agents/fixer.py\"",
        "script = \"quickstart/agents/fixer_events.py\"",
    );
    let o = sb.bench(&["apply", "-q", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    sb
}

/// `bench view` running in the background, killed on drop.
struct Viewer {
    child: Child,
    url: String,
}

impl Viewer {
    fn start(dir: &Path, args: &[&str]) -> Viewer {
        let mut child = Command::new(bench_bin())
            .arg("view")
            .args(args)
            .current_dir(dir)
            .env_remove("BENCH_STORE")
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("bench view starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("bench view: ")
            .unwrap_or_else(|| panic!("no URL printed: {line:?}"))
            .to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        Viewer { child, url }
    }

    fn get(&self, path: &str) -> (u16, String) {
        let agent = ureq::Agent::new_with_config(
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build(),
        );
        let mut r = agent
            .get(&format!("{}{path}", self.url))
            .call()
            .expect("the viewer answers");
        (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JSON a data script hands to the page.
fn data_of(script: &str) -> serde_json::Value {
    let start = script.find(',').unwrap() + 1;
    let end = script.rfind(");").unwrap();
    serde_json::from_str(&script[start..end]).unwrap()
}

fn enc(s: &str) -> String {
    bench::view::encode(s)
}

const SLUGIFY: &str = "quickstart__slugify-1";

#[test]
fn the_server_answers_pages_from_the_store_and_refuses_what_it_should() {
    let sb = quickstart_applied();
    let v = Viewer::start(sb.dir.path(), &["quickstart.toml"]);
    let (status, html) = v.get("");
    assert_eq!(status, 200);
    assert!(html.contains("<script src=\"app.js\">"), "{html}");
    // No page loads anything from a network: every URL in the page and its script is local.
    let (_, js) = v.get("app.js");
    for asset in [&html, &js] {
        assert!(
            !asset.contains("http://") && !asset.contains("https://")
                || asset.contains("http://www.w3.org/2000/svg")
        );
    }

    let (status, exp) = v.get("data/experiment.js");
    assert_eq!(status, 200);
    let exp = data_of(&exp);
    assert_eq!(exp["name"], "quickstart");
    assert_eq!(exp["pairs"].as_array().unwrap().len(), 24);
    let teams: Vec<&str> = exp["document"]["teams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(teams, ["oracle", "nop", "fixer"]);

    // The fixer's wrong slugify fix: a diff, a failing FAIL_TO_PASS test, the tool call.
    let (status, pair) = v.get(&format!("data/pair/{}/fixer/0.js", enc(SLUGIFY)));
    assert_eq!(status, 200);
    let pair = data_of(&pair);
    assert_eq!(pair["outcome"], "unresolved");
    assert!(!pair["diff"]["files"].as_array().unwrap().is_empty());
    let tests = pair["tests"].as_array().unwrap();
    assert!(
        tests
            .iter()
            .any(|t| t["kind"] == "FAIL_TO_PASS" && t["ok"] == false && t["got"] != "pass"),
        "{tests:?}"
    );
    assert_eq!(pair["network"]["grading"], "none", "{}", pair["network"]);
    let traj = pair["trajectory"].as_str().unwrap();
    let (_, summary) = v.get(&format!("data/traj/{traj}.js"));
    let summary = data_of(&summary);
    assert_eq!(summary["runs"][0]["format"], "codex");
    let (_, steps) = v.get(&format!("data/traj/{traj}/0/0.js"));
    let steps = data_of(&steps);
    let call = steps["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == "tool_call")
        .expect("a tool call");
    assert_eq!(call["tool"], "command_execution");
    // The grading log's first page.
    let log = pair["grade"]["blobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "log")
        .unwrap();
    let (status, page) = v.get(&format!(
        "data/blob/{}/0.js",
        log["digest"].as_str().unwrap()
    ));
    assert_eq!(status, 200);
    assert_eq!(data_of(&page)["page"], 0);

    // Unknown pages, other methods and other hosts are refused.
    assert_eq!(v.get("data/pair/nope/fixer/0.js").0, 404);
    assert_eq!(v.get("data/blob/../../etc/passwd/0.js").0, 404);
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build(),
    );
    let r = agent
        .post(&format!("{}data/experiment.js", v.url))
        .send("")
        .unwrap();
    assert_eq!(r.status().as_u16(), 405);
    let r = agent
        .get(&format!("{}data/experiment.js", v.url))
        .header("Host", "evil.example:80")
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
}

#[test]
fn the_report_directory_opens_the_same_experiment_and_the_static_export_has_every_page() {
    let sb = quickstart_applied();
    let v = Viewer::start(sb.dir.path(), &["reports/quickstart"]);
    let exp = data_of(&v.get("data/experiment.js").1);
    assert_eq!(exp["name"], "quickstart");
    drop(v);

    let out = sb.path("site");
    let o = sb.bench(&["view", "--static", out.to_str().unwrap(), "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["index.html", "app.js", "app.css", "data/experiment.js"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let pair = out.join(format!("data/pair/{}/fixer/0.js", enc(SLUGIFY)));
    let pair = data_of(&fs_err::read_to_string(pair).unwrap());
    let traj = pair["trajectory"].as_str().unwrap();
    assert!(out.join(format!("data/traj/{traj}/0/0.js")).is_file());
    for b in pair["grade"]["blobs"].as_array().unwrap() {
        let d = b["digest"].as_str().unwrap();
        assert!(out.join(format!("data/blob/{d}/0.js")).is_file(), "{b}");
    }
    // A second export writes the same bytes.
    let before = everything(&out);
    let o = sb.bench(&["view", "--static", out.to_str().unwrap(), "quickstart.toml"]);
    assert!(o.status.success());
    assert_eq!(everything(&out), before);

    let bad = sb.bench(&["view", "quickstart"]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("neither a manifest nor a report directory"),
        "{}",
        stderr(&bad)
    );
}

// --- the browser -----------------------------------------------------------------------------

fn tool(name: &str) -> bool {
    let ok = Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok && ci() {
        panic!("{name} is missing (CI installs chromium and chromium-driver in .ci/run)");
    }
    if !ok {
        eprintln!("skipped: {name} is missing");
    }
    ok
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// chromedriver on a free loopback port, killed on drop.
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start() -> Driver {
        let port = free_port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "chromedriver did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Driver { child, port }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

use fantoccini::{Client, ClientBuilder, Locator};

async fn browser(driver: &Driver, profile: &Path) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--allow-file-access-from-files", "--window-size=1280,900",
            format!("--user-data-dir={}", profile.display())]}),
    );
    let mut builder = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
    builder.capabilities(caps);
    builder
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a chromium session")
}

/// Waits until the page has rendered its route (`body[data-ready]`), then returns its text.
async fn ready(c: &Client) -> String {
    // `data-ready` holds the fragment the page last rendered: the route is rendered when it is
    // the current one (a click that changed the fragment has not rendered yet otherwise).
    let started = Instant::now();
    loop {
        let done = c
            .execute(
                "var r = document.body.getAttribute('data-ready'); \
                 return r === 'error' || r === (location.hash || '#/');",
                vec![],
            )
            .await
            .unwrap();
        if done.as_bool() == Some(true) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the page did not render {}",
            c.current_url().await.unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let err = c.find_all(Locator::Css("#error")).await.unwrap();
    if let Some(e) = err.first() {
        panic!("the page failed: {}", e.text().await.unwrap());
    }
    c.find(Locator::Css("main"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

async fn pair_page_shows_the_evidence(c: &Client) {
    // Grading: the failing FAIL_TO_PASS test.
    ready(c).await;
    let bad = c
        .find_all(Locator::Css("#tests tr.test.bad"))
        .await
        .unwrap();
    assert!(!bad.is_empty(), "no failing test shown");
    let row = bad[0].text().await.unwrap();
    assert!(row.contains("FAIL_TO_PASS"), "{row}");
    // The diff.
    c.find(Locator::Css("#tab-diff"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    ready(c).await;
    let files = c.find_all(Locator::Css(".diff .file")).await.unwrap();
    assert!(!files.is_empty(), "no diff shown");
    let added = c.find_all(Locator::Css(".diff tr.add")).await.unwrap();
    assert!(!added.is_empty());
    // The trajectory's first tool call.
    c.find(Locator::Css("#tab-trajectory"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    ready(c).await;
    let call = c
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css(".step.tool_call"))
        .await
        .expect("a tool call shown");
    let text = call.text().await.unwrap();
    assert!(
        text.contains("command_execution") && text.contains("python3 fixer.py"),
        "{text}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_browser_goes_from_the_experiment_to_a_failed_pairs_diff_test_and_tool_call() {
    if !tool("chromium") || !tool("chromedriver") {
        return;
    }
    let sb = quickstart_applied();
    let v = Viewer::start(sb.dir.path(), &["quickstart.toml"]);
    let driver = Driver::start();
    let profile = tempfile::tempdir().unwrap();
    let c = browser(&driver, profile.path()).await;

    c.goto(&v.url).await.unwrap();
    let text = ready(&c).await;
    assert!(
        text.contains("oracle") && text.contains("24 of 24 pairs"),
        "{text}"
    );
    // Filter to one team.
    let select = c.find(Locator::Css("#f-team")).await.unwrap();
    select.select_by_value("fixer").await.unwrap();
    let text = ready(&c).await;
    assert!(text.contains("8 of 24 pairs"), "{text}");
    for row in c.find_all(Locator::Css("#pairs tr.pair")).await.unwrap() {
        assert_eq!(
            row.attr("data-team").await.unwrap().as_deref(),
            Some("fixer")
        );
    }
    // Sortable: by outcome, then the other way (the filter stays).
    let mut firsts = Vec::new();
    for _ in 0..2 {
        c.find(Locator::Css("#pairs th[data-key='outcome']"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        ready(&c).await;
        let rows = c.find_all(Locator::Css("#pairs tr.pair")).await.unwrap();
        assert_eq!(rows.len(), 8);
        firsts.push(rows[0].attr("data-outcome").await.unwrap().unwrap());
    }
    assert_eq!(firsts, ["resolved", "unresolved"]);
    assert!(
        c.current_url()
            .await
            .unwrap()
            .as_str()
            .contains("team=fixer")
    );
    // An outcome looks like the link it is, and its row opens the pair too.
    let looks = c
        .execute(
            "var a = document.querySelector('#pairs tr.pair a.o'), s = getComputedStyle(a); \
             return [s.cursor, s.textDecorationLine, getComputedStyle(a.closest('tr')).cursor];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        looks,
        serde_json::json!(["pointer", "underline", "pointer"])
    );
    // Click the failed task that has a patch.
    let link = c
        .find(Locator::XPath(&format!(
            "//tr[contains(@class,'pair')][td/a[text()='{SLUGIFY}']]//a[contains(@class,'o-unresolved')]"
        )))
        .await
        .expect("slugify is a failed fixer pair");
    link.click().await.unwrap();
    pair_page_shows_the_evidence(&c).await;
    // Previous and next failure in the list it was opened from (the fixer's pairs by outcome,
    // descending), computed here from the data.
    let exp = data_of(&v.get("data/experiment.js").1);
    let (prev, next) = failures_beside(&exp, SLUGIFY);
    assert!(prev.is_some() || next.is_some(), "no other failure");
    for (id, want) in [("prev-failure", &prev), ("next-failure", &next)] {
        let found = c.find_all(Locator::Css(&format!("a#{id}"))).await.unwrap();
        match (want, found.first()) {
            (Some(task), Some(a)) => {
                let href = a.attr("href").await.unwrap().unwrap();
                let path = format!("#/pair/{}/fixer/0?", enc(task));
                assert!(
                    href.starts_with(&path) && href.contains("team=fixer"),
                    "{href}"
                );
            }
            (None, None) => {
                c.find(Locator::Css(&format!("span#{id}"))).await.unwrap();
            }
            (want, found) => panic!("{id}: want {want:?}, found a link: {}", found.is_some()),
        }
    }
    let (id, task) = match (&next, &prev) {
        (Some(t), _) => ("next-failure", t),
        (None, Some(t)) => ("prev-failure", t),
        _ => unreachable!(),
    };
    c.find(Locator::Css(&format!("a#{id}")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    ready(&c).await;
    let h1 = c
        .find(Locator::Css("h1"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(h1.starts_with(&format!("{task} · fixer")), "{h1}");

    // A pasted pair URL opens that pair directly.
    let pasted = format!("{}#/pair/{}/fixer/0?tab=diff", v.url, enc(SLUGIFY));
    c.goto(&pasted).await.unwrap();
    ready(&c).await;
    assert!(
        !c.find_all(Locator::Css(".diff .file"))
            .await
            .unwrap()
            .is_empty()
    );
    c.goto(&format!("{}#/pair/{}/fixer/0", v.url, enc(SLUGIFY)))
        .await
        .unwrap();
    pair_page_shows_the_evidence(&c).await;

    // The static export opens from disk.
    let out = sb.path("site");
    let o = sb.bench(&["view", "--static", out.to_str().unwrap(), "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let file_url = format!("file://{}/index.html", out.display());
    c.goto(&file_url).await.unwrap();
    let text = ready(&c).await;
    assert!(text.contains("24 of 24 pairs"), "{text}");
    // A click anywhere on a row (here its team cell) opens its pair.
    c.find(Locator::XPath(&format!(
        "//tr[contains(@class,'pair')][td/a[text()='{SLUGIFY}']][@data-team='fixer']/td[2]"
    )))
    .await
    .unwrap()
    .click()
    .await
    .unwrap();
    ready(&c).await;
    let url = c.current_url().await.unwrap();
    assert!(
        url.as_str()
            .ends_with(&format!("#/pair/{}/fixer/0", enc(SLUGIFY))),
        "{url}"
    );
    pair_page_shows_the_evidence(&c).await;
    c.goto(&format!("{file_url}#/task/{}", enc(SLUGIFY)))
        .await
        .unwrap();
    let text = ready(&c).await;
    assert!(
        text.contains("Statement") && text.contains("resolves (valid)"),
        "{text}"
    );
    c.close().await.unwrap();
}

/// The tasks of the previous and the next fixer pair not resolved around `task`'s, in the
/// fixer's pairs sorted by outcome, descending (the page's order: outcome, then task, team and
/// replicate, the whole order reversed).
fn failures_beside(exp: &serde_json::Value, task: &str) -> (Option<String>, Option<String>) {
    let mut rows: Vec<(String, String)> = exp["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p[1] == "fixer")
        .map(|p| (p[3].as_str().unwrap().into(), p[0].as_str().unwrap().into()))
        .collect();
    rows.sort();
    rows.reverse();
    let i = rows.iter().position(|r| r.1 == task).unwrap();
    let failed = |r: &&(String, String)| r.0 != "resolved";
    let prev = rows[..i].iter().rev().find(failed).map(|r| r.1.clone());
    let next = rows[i + 1..].iter().find(failed).map(|r| r.1.clone());
    (prev, next)
}

#[test]
fn two_experiments_side_by_side_list_the_changed_outcomes_first() {
    let a = quickstart_applied();
    let b = Sandbox::quickstart();
    b.edit(
        "quickstart.toml",
        "[teams.nop]                   # changes nothing: the floor\ntopology = \"solo\"\nworker = \"nop\"",
        "[teams.nop]\ntopology = \"solo\"\nworker = \"oracle\"",
    );
    let o = b.bench(&["apply", "-q", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = a.path("site");
    let other = b.manifest();
    let o = a.bench(&[
        "view",
        "--static",
        out.to_str().unwrap(),
        "quickstart.toml",
        "--compare",
        other.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let cmp = data_of(&fs_err::read_to_string(out.join("data/compare.js")).unwrap());
    assert_eq!(cmp["changed"], 8, "{cmp}");
    let pairs = cmp["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 24);
    for p in &pairs[..8] {
        assert_eq!(
            (&p[1], &p[3], &p[4], &p[5]),
            (
                &"nop".into(),
                &"unresolved".into(),
                &"resolved".into(),
                &true.into()
            ),
            "{p}"
        );
    }
    assert!(pairs[8..].iter().all(|p| p[5] == false && p[3] == p[4]));
    let nop = cmp["teams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "nop")
        .unwrap();
    assert_eq!(
        (&nop["a"]["resolved"], &nop["b"]["resolved"]),
        (&0.into(), &8.into())
    );
    // The other experiment's pages are there under b/, from its own store.
    let pair = data_of(
        &fs_err::read_to_string(out.join(format!("data/b/pair/{}/nop/0.js", enc(SLUGIFY))))
            .unwrap(),
    );
    assert_eq!(pair["outcome"], "resolved");
    let exp = data_of(&fs_err::read_to_string(out.join("data/experiment.js")).unwrap());
    assert_eq!(exp["compare"], "quickstart");
}

/// `--store` (or `BENCH_STORE`) names the store of both experiments: two manifests applied
/// into one shared store compare from it.
#[test]
fn compare_reads_the_other_experiment_from_the_store_given() {
    let shared = tempfile::tempdir().unwrap();
    let store = shared.path().to_str().unwrap();
    let (a, b) = (Sandbox::quickstart(), Sandbox::quickstart());
    b.edit(
        "quickstart.toml",
        "[teams.nop]                   # changes nothing: the floor\ntopology = \"solo\"\nworker = \"nop\"",
        "[teams.nop]\ntopology = \"solo\"\nworker = \"oracle\"",
    );
    for sb in [&a, &b] {
        let o = sb.bench(&["--store", store, "apply", "-q", "quickstart.toml"]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let out = a.path("site");
    let other = b.manifest();
    let o = a.bench(&[
        "--store",
        store,
        "view",
        "--static",
        out.to_str().unwrap(),
        "quickstart.toml",
        "--compare",
        other.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let cmp = data_of(&fs_err::read_to_string(out.join("data/compare.js")).unwrap());
    assert_eq!(cmp["changed"], 8, "{cmp}");
}

/// Every exported file's path (relative to `dir`) and text.
fn exported_files(dir: &Path) -> Vec<(String, String)> {
    common::files_under(dir)
        .into_iter()
        .map(|(rel, bytes)| (rel, String::from_utf8(bytes).unwrap()))
        .collect()
}

/// The static export is made to be shared: no file of it holds an absolute path of this
/// machine (the experiment's directory, a store outside it, the home directory), in the logs of
/// local runs (their workspaces are in the store) or in the pages, a comparison's included.
#[test]
fn the_static_export_holds_no_absolute_path_of_this_machine() {
    let a = quickstart_applied();
    let b = Sandbox::quickstart();
    let shared = tempfile::tempdir().unwrap();
    let store = shared.path().to_str().unwrap();
    let o = b.bench(&["--store", store, "apply", "-q", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // `a` with its store beside it; `b` from a store elsewhere, compared with itself.
    let (site_a, site_b) = (a.path("site"), a.path("site-b"));
    let o = a.bench(&[
        "view",
        "--static",
        site_a.to_str().unwrap(),
        "quickstart.toml",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let other = b.manifest();
    let other = other.to_str().unwrap();
    let o = a.bench(&[
        "--store",
        store,
        "view",
        "--static",
        site_b.to_str().unwrap(),
        other,
        "--compare",
        other,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));

    let mut forbidden = Vec::new();
    for p in [a.dir.path(), b.dir.path(), shared.path()] {
        forbidden.push(p.display().to_string());
        forbidden.push(fs_err::canonicalize(p).unwrap().display().to_string());
    }
    if let Some(home) = std::env::var_os("HOME").filter(|h| h.len() > 1) {
        forbidden.push(home.to_string_lossy().trim_end_matches('/').to_string());
    }
    for (site, workspaces) in [(&site_a, ".bench/tmp/ws-"), (&site_b, "<store>/tmp/ws-")] {
        let files = exported_files(site);
        assert!(files.len() > 100, "{}", files.len());
        // The local runs' logs held such paths (tracebacks name files in the workspace).
        assert!(
            files.iter().any(|(_, text)| text.contains(workspaces)),
            "no workspace path in {}",
            site.display()
        );
        for (rel, text) in &files {
            for f in &forbidden {
                assert!(!text.contains(f.as_str()), "{rel} holds {f}");
            }
        }
    }
    let exp = data_of(&fs_err::read_to_string(site_a.join("data/experiment.js")).unwrap());
    assert_eq!(
        (&exp["manifest"], &exp["store"], &exp["report_out"]),
        (
            &"quickstart.toml".into(),
            &".bench".into(),
            &"reports/quickstart".into()
        )
    );
    let cmp = data_of(&fs_err::read_to_string(site_b.join("data/compare.js")).unwrap());
    assert_eq!(cmp["b"]["manifest"], "quickstart.toml");
    let b_exp = data_of(&fs_err::read_to_string(site_b.join("data/b/experiment.js")).unwrap());
    assert_eq!(b_exp["store"], "<store>");
}

/// Exporting again into the same folder replaces the earlier export whole: a comparison
/// exported before is gone when the new export has none. A folder that is not an export is
/// refused and left as it was.
#[test]
fn exporting_again_replaces_the_earlier_export_and_other_folders_are_refused() {
    let sb = quickstart_applied();
    let site = sb.path("site");
    let export = |dir: &Path, compare: bool| {
        let mut args = vec!["view", "--static", dir.to_str().unwrap(), "quickstart.toml"];
        if compare {
            args.extend(["--compare", "quickstart.toml"]);
        }
        sb.bench(&args)
    };
    let o = export(&site, true);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(site.join("data/compare.js").is_file());
    assert!(site.join("data/b/experiment.js").is_file());

    let o = export(&site, false);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!site.join("data/compare.js").exists());
    assert!(!site.join("data/b").exists());
    let exp = data_of(&fs_err::read_to_string(site.join("data/experiment.js")).unwrap());
    assert_eq!(exp["compare"], serde_json::Value::Null);
    // Exactly what an export into a new (here: empty) folder holds, and nothing left beside.
    let fresh = sb.path("fresh");
    fs_err::create_dir(&fresh).unwrap();
    let o = export(&fresh, false);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(exported_files(&site), exported_files(&fresh));
    let mut beside: Vec<String> = fs_err::read_dir(sb.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("bench-view"))
        .collect();
    beside.sort();
    assert!(beside.is_empty(), "{beside:?}");

    // Not an export: refused, untouched.
    let mine = sb.path("mine");
    fs_err::create_dir(&mine).unwrap();
    fs_err::write(mine.join("notes.txt"), "mine").unwrap();
    let o = export(&mine, false);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("is not empty and not an export of `bench view --static`"),
        "{}",
        stderr(&o)
    );
    assert_eq!(exported_files(&mine), [("notes.txt".into(), "mine".into())]);
    let o = export(&mine.join("notes.txt"), false);
    assert!(!o.status.success());
    assert_eq!(
        fs_err::read_to_string(mine.join("notes.txt")).unwrap(),
        "mine"
    );
}

/// The experiment page's task x team grid, in the static export: a row per task (sorted), a
/// column per team in the manifest's order, each cell the outcome of its replicate, as
/// examples/quickstart/EXPECTED.md says (the fixer resolves three tasks, the oracle all, nop
/// none), and the same outcomes as the pairs list.
#[test]
fn the_grid_holds_every_tasks_outcome_per_team() {
    let sb = Sandbox::quickstart();
    let o = sb.bench(&["apply", "-q", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let site = sb.path("site");
    let o = sb.bench(&[
        "view",
        "--static",
        site.to_str().unwrap(),
        "quickstart.toml",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let exp = data_of(&fs_err::read_to_string(site.join("data/experiment.js")).unwrap());
    let grid = &exp["grid"];
    assert_eq!(grid["teams"], serde_json::json!(["oracle", "nop", "fixer"]));
    let tasks: Vec<&str> = grid["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let mut dirs: Vec<String> = fs_err::read_dir(sb.path("quickstart/tasks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    assert_eq!(tasks, dirs);
    let fixed = [
        "quickstart__leapyear-1",
        "quickstart__linecount-1",
        "quickstart__roman-1",
    ];
    for (i, task) in tasks.iter().enumerate() {
        let fixer = if fixed.contains(task) {
            "resolved"
        } else {
            "unresolved"
        };
        assert_eq!(
            grid["cells"][i],
            serde_json::json!([[[0, "resolved"]], [[0, "unresolved"]], [[0, fixer]]]),
            "{task}"
        );
    }
    // Every pair of the list is in its cell.
    let pairs = exp["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 24);
    for p in pairs {
        let row = tasks.iter().position(|t| p[0] == *t).unwrap();
        let col = ["oracle", "nop", "fixer"]
            .iter()
            .position(|t| p[1] == *t)
            .unwrap();
        assert_eq!(grid["cells"][row][col][0], serde_json::json!([p[2], p[3]]));
    }
}

// --- following a running apply -----------------------------------------------------------------

/// A `bench apply` running in the background, killed on drop.
struct Applying(Child);

impl Drop for Applying {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What the experiment page shows now, read in one go (the page redraws as it polls): the live
/// state (`report` once it shows the report), the grid's marks by team as (task, outcome), and
/// the pairs count line.
async fn page_now(c: &Client) -> serde_json::Value {
    c.execute(
        "var s = document.getElementById('live-state'); \
         var marks = Array.prototype.map.call(document.querySelectorAll('#grid [data-outcome]'), function (e) { \
           return [e.closest('tr').getAttribute('data-task'), e.closest('td').getAttribute('data-team'), \
                   e.getAttribute('data-outcome'), e.tagName.toLowerCase()]; }); \
         var count = document.getElementById('count') || document.getElementById('live-count'); \
         return { state: s ? s.getAttribute('data-state') : (document.getElementById('teams') ? 'report' : null), \
                  marks: marks, count: count ? count.textContent : null, \
                  progress: Array.prototype.map.call(document.querySelectorAll('#progress tr[data-stage]'), function (r) { \
                    return [r.getAttribute('data-stage'), +r.getAttribute('data-done'), +r.getAttribute('data-total')]; }) };",
        vec![],
    )
    .await
    .unwrap()
}

const OUTCOMES: [&str; 2] = ["resolved", "unresolved"];

/// How many marks of `page` hold an outcome (not where a pair still is).
fn outcomes_shown(page: &serde_json::Value) -> usize {
    page["marks"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|x| OUTCOMES.contains(&x[2].as_str().unwrap_or("")))
                .count()
        })
        .unwrap_or(0)
}

/// `bench view` opened while `bench apply` runs follows it: the experiment page shows each
/// stage's progress and the pairs that ended (the oracle's and nop's) while the fixer's solves
/// wait for a file the test creates, then every outcome as it appears, and when the apply
/// ends the report, its grid linking each pair's page.
#[tokio::test(flavor = "current_thread")]
async fn a_browser_follows_a_running_apply_until_its_last_outcome() {
    if !tool("chromium") || !tool("chromedriver") {
        return;
    }
    let sb = Sandbox::quickstart();
    // The fixer waits for the gate (outside /tmp, which the local jail hides; at most 120 s).
    let gate_dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let gate = gate_dir.path().join("go");
    let fixer = sb.read("quickstart/agents/fixer.py");
    let waits = format!(
        "import os as _os, time as _time\n_end = _time.time() + 120\nwhile not _os.path.exists({:?}) and _time.time() < _end:\n    _time.sleep(0.1)\n",
        gate.display().to_string()
    );
    fs_err::write(
        sb.path("quickstart/agents/fixer_gated.py"),
        format!("{waits}{fixer}"),
    )
    .unwrap();
    sb.edit(
        "quickstart.toml",
        "script = \"quickstart/agents/fixer.py\"",
        "script = \"quickstart/agents/fixer_gated.py\"",
    );
    // Room for the eight waiting fixers beside everything else.
    sb.append("quickstart.toml", "\n[limits]\nagents = 8\njobs = 12\n");
    let mut apply = Applying(
        Command::new(bench_bin())
            .args(["apply", "-q", "quickstart.toml"])
            .current_dir(sb.dir.path())
            .env_remove("BENCH_STORE")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("bench apply starts"),
    );
    // The store exists once the apply has locked it.
    let started = Instant::now();
    while files_with_ext(&sb.path(".bench/index"), "jsonl").is_empty() {
        assert!(started.elapsed() < Duration::from_secs(60), "no event log");
        std::thread::sleep(Duration::from_millis(50));
    }
    let v = Viewer::start(sb.dir.path(), &["quickstart.toml"]);
    let driver = Driver::start();
    let profile = tempfile::tempdir().unwrap();
    let c = browser(&driver, profile.path()).await;
    c.goto(&v.url).await.unwrap();
    ready(&c).await;

    // While the fixer waits: the oracle's and nop's 16 outcomes, the fixer's 8 pairs solving.
    let started = Instant::now();
    let waiting = loop {
        let page = page_now(&c).await;
        let fixer_solving = page["marks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m[1] == "fixer" && m[2] == "solving")
            .count();
        if page["state"] == "running" && outcomes_shown(&page) == 16 && fixer_solving == 8 {
            break page;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the page did not show the oracle's and nop's outcomes: {page}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for m in waiting["marks"].as_array().unwrap() {
        let want = match m[1].as_str().unwrap() {
            "oracle" => "resolved",
            "nop" => "unresolved",
            _ => "solving",
        };
        assert_eq!(m[2], want, "{m}");
        // No pair page yet.
        assert_eq!(m[3], "span", "{m}");
    }
    let solve = waiting["progress"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s[0] == "solve")
        .unwrap()
        .clone();
    assert_eq!(solve[1], 16, "{waiting}");
    assert!(solve[2].as_u64().unwrap() >= 24, "{waiting}");
    let text = c
        .find(Locator::Css("main"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("is running"), "{text}");

    // A static export now is a snapshot of the apply as it is: opened from disk, it shows it.
    let snap = sb.path("snapshot");
    let o = sb.bench(&[
        "view",
        "--static",
        snap.to_str().unwrap(),
        "quickstart.toml",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let live = data_of(&fs_err::read_to_string(snap.join("data/live.js")).unwrap());
    assert_eq!(live["state"], "running", "{live}");
    c.goto(&format!("file://{}/index.html", snap.display()))
        .await
        .unwrap();
    let text = ready(&c).await;
    assert!(
        text.contains("as it was when this export was written"),
        "{text}"
    );
    assert_eq!(outcomes_shown(&page_now(&c).await), 16);
    c.goto(&v.url).await.unwrap();
    ready(&c).await;

    // Let the fixer go: its outcomes appear until the last one, then the report.
    fs_err::write(&gate, "").unwrap();
    let started = Instant::now();
    let mut seen = vec![16];
    let last = loop {
        let page = page_now(&c).await;
        let n = outcomes_shown(&page);
        if seen.last() != Some(&n) {
            seen.push(n);
        }
        if page["state"] == "report" {
            break page;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the page did not show the report: {page} (outcomes seen: {seen:?})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(apply.0.wait().unwrap().success());
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert_eq!(seen.last(), Some(&24), "{seen:?}");
    assert_eq!(last["count"], "24 of 24 pairs", "{last}");
    let fixed = [
        "quickstart__leapyear-1",
        "quickstart__linecount-1",
        "quickstart__roman-1",
    ];
    for m in last["marks"].as_array().unwrap() {
        let want = match m[1].as_str().unwrap() {
            "oracle" => "resolved",
            "fixer" if fixed.contains(&m[0].as_str().unwrap()) => "resolved",
            _ => "unresolved",
        };
        assert_eq!(m[2], want, "{m}");
        assert_eq!(m[3], "a", "{m}");
    }
    // A mark of the grid opens its pair.
    c.find(Locator::Css(&format!(
        "#grid tr[data-task='{SLUGIFY}'] td[data-team='fixer'] a.g"
    )))
    .await
    .unwrap()
    .click()
    .await
    .unwrap();
    ready(&c).await;
    pair_page_shows_the_evidence_of_a_plain_fixer(&c).await;
    c.close().await.unwrap();
}

/// The slugify pair's page, of a fixer that records no trajectory: its failing test and diff.
async fn pair_page_shows_the_evidence_of_a_plain_fixer(c: &Client) {
    let h1 = c
        .find(Locator::Css("h1"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        h1.contains(SLUGIFY) && h1.contains("fixer") && h1.contains("unresolved"),
        "{h1}"
    );
    let bad = c
        .find_all(Locator::Css("#tests tr.test.bad"))
        .await
        .unwrap();
    assert!(!bad.is_empty(), "no failing test shown");
}

/// `bench view` opened before anything was applied writes nothing, serves a page that waits
/// (`live` says no apply yet), and once an apply has finished serves its report: the next
/// look at `live` opens the experiment again.
#[test]
fn the_viewer_opened_before_the_first_apply_shows_its_report_once_it_ends() {
    let sb = Sandbox::quickstart();
    let v = Viewer::start(sb.dir.path(), &["quickstart.toml"]);
    let live = data_of(&v.get("data/live.js").1);
    assert_eq!(live["state"], "none", "{live}");
    assert_eq!(live["pairs"], serde_json::json!([]));
    let exp = data_of(&v.get("data/experiment.js").1);
    assert_eq!(
        (&exp["has_report"], &exp["run"]),
        (&false.into(), &serde_json::Value::Null)
    );
    assert!(!sb.path(".bench").exists(), "the viewer made a store");

    let o = sb.bench(&["apply", "-q", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let live = data_of(&v.get("data/live.js").1);
    assert_eq!(
        (&live["state"], &live["status"]),
        (&"finished".into(), &"complete".into())
    );
    assert_eq!(live["pairs"].as_array().unwrap().len(), 24);
    let done: Vec<u64> = live["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert_eq!(s["done"], s["total"], "{s}");
            s["done"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(done, [1, 8, 24, 24, 1]);
    let exp = data_of(&v.get("data/experiment.js").1);
    assert_eq!(exp["has_report"], true);
    assert_eq!(exp["run"], live["run_id"]);
    assert_eq!(exp["pairs"].as_array().unwrap().len(), 24);
    // The live grid and the report's agree.
    assert_eq!(exp["grid"], live["grid"]);
    let (status, _) = v.get(&format!("data/pair/{}/fixer/0.js", enc(SLUGIFY)));
    assert_eq!(status, 200);
    // A log that is not one is said, with the file and line.
    let log = files_with_ext(&sb.path(".bench/index"), "jsonl").remove(0);
    let bad_line = fs_err::read_to_string(&log).unwrap().lines().count() + 1;
    let mut f = fs_err::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut f, b"not an event\n").unwrap();
    let live = data_of(&v.get("data/live.js").1);
    assert_eq!(live["state"], "error", "{live}");
    let error = live["error"].as_str().unwrap();
    assert!(
        error.contains("events.jsonl") && error.contains(&format!("line {bad_line} ")),
        "{error}"
    );
}
