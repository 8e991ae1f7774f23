//! Harbor tasks end to end through the real binary on the real Docker daemon: the fixture
//! dataset of `tests/fixtures/harbor/` (environments built from Dockerfiles `FROM
//! bench-test-base:1`, nothing pulled), in both verifier modes; and the dataset reader on a
//! pinned git repository and on bad `task.toml` files (no Docker).

mod common;

use std::path::Path;
use std::process::Command;

use common::{bench_in, bench_timed, executed, stderr, stdout};
use serde_json::Value;

const BASE_IMAGE: &str = "bench-test-base:1";

fn fixture_copy() -> tempfile::TempDir {
    fixture_copy_of("harbor")
}

/// A copy of `tests/fixtures/<name>`.
fn fixture_copy_of(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let ok = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", src.display()))
        .arg(dir.path())
        .status()
        .expect("cp")
        .success();
    assert!(ok);
    dir
}

fn report(dir: &Path) -> Value {
    serde_json::from_str(
        &fs_err::read_to_string(dir.join("reports/harbor/report.json")).expect("report.json"),
    )
    .expect("report.json parses")
}

/// The score row of (task, team).
fn score<'a>(r: &'a Value, task: &str, team: &str) -> &'a Value {
    r["scores"]
        .as_array()
        .expect("scores")
        .iter()
        .find(|s| s["task"] == task && s["team"] == team)
        .unwrap_or_else(|| panic!("no score for {task} x {team}: {}", r["scores"]))
}

fn errored_reason<'a>(r: &'a Value, task: &str, team: &str) -> &'a str {
    r["errored"]
        .as_array()
        .expect("errored")
        .iter()
        .find(|e| e["task"] == task && e["team"] == team)
        .and_then(|e| e["reason"].as_str())
        .unwrap_or_else(|| panic!("{task} x {team} is not errored: {}", r["errored"]))
}

fn team<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["teams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap()
}

fn apply(dir: &Path) -> std::process::Output {
    apply_manifest(dir, "harbor.toml")
}

fn apply_manifest(dir: &Path, manifest: &str) -> std::process::Output {
    bench_timed(
        dir,
        &["apply", manifest],
        std::time::Duration::from_secs(900),
    )
}

/// Switches a manifest's grade stage to `harbor = "fresh"`.
fn to_fresh(path: &Path) {
    let text = fs_err::read_to_string(path).unwrap();
    let fresh = text.replacen(
        "[stages.grade]\nkind = \"grade\"\n",
        "[stages.grade]\nkind = \"grade\"\nharbor = \"fresh\"\n",
        1,
    );
    assert_ne!(fresh, text, "the grade stage is switched");
    fs_err::write(path, fresh).unwrap();
}

/// No container of the store under `dir` is left behind.
fn no_containers_left(dir: &Path) {
    let root = fs_err::canonicalize(dir.join(".bench")).unwrap();
    let label = bench::key::digest(root.display().to_string().as_bytes())[..16].to_string();
    let left = Command::new("docker")
        .args(["ps", "-aq", "--filter", "label=bench=1"])
        .args(["--filter", &format!("label=bench.store={label}")])
        .output()
        .unwrap();
    assert!(left.status.success());
    assert_eq!(
        String::from_utf8_lossy(&left.stdout).trim(),
        "",
        "containers left"
    );
}

#[test]
fn harbor_tasks_end_to_end_in_place_then_fresh() {
    if !common::docker_ready(&[BASE_IMAGE]) {
        return;
    }
    let sb = fixture_copy();
    let dir = sb.path();
    let o = bench_in(dir, &["validate", "harbor.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));

    // Default: Harbor's contract, the verifier in the agent's own container.
    let o = apply(dir);
    // Failed nodes (the missing reward, the network the policy blocks) make it exit 3.
    assert_eq!(o.status.code(), Some(3), "{}\n{}", stdout(&o), stderr(&o));
    let r = report(dir);
    assert_eq!(r["verifier_modes"], serde_json::json!(["in-place"]));
    assert_eq!(r["scorer"], "reward");
    // pass: the oracle's solve.sh earns 1, nop 0.
    assert_eq!(score(&r, "answer", "oracle")["score"], 1.0);
    assert_eq!(score(&r, "answer", "nop")["score"], 0.0);
    // The tampering agent wrote a wrong answer and planted /tests/json.py; Harbor's upload
    // merges tests/ into /tests, so in Harbor the planted module makes the checker compare the
    // answer with itself. bench empties /tests first: it wins nothing, in place too.
    assert_eq!(score(&r, "answer", "tamper")["score"], 0.0);
    assert_eq!(score(&r, "answer", "tamper")["verifier"], "in-place");
    // partial: reward.json's fields, typed, the score its `reward`.
    let p = score(&r, "partial", "oracle");
    assert_eq!(p["score"], 0.5);
    assert_eq!(p["reward"]["tests_passed"], 1.0);
    assert_eq!(p["reward"]["tests_total"], 2.0);
    assert!(
        p["reward"].get("note").is_none(),
        "non-numbers are not fields"
    );
    // The verifier past its timeout: an outcome without a reward, scored 0.
    let s = score(&r, "slow", "oracle");
    assert!(s["reward"].is_null());
    assert_eq!(s["score"], 0.0);
    // A missing reward is an error, not a zero; a verifier that needs the network the
    // policy blocks fails before anything runs.
    for t in ["oracle", "nop", "tamper"] {
        assert!(
            errored_reason(&r, "noreward", t).contains("RewardFileNotFoundError"),
            "{}",
            r["errored"]
        );
        assert!(
            errored_reason(&r, "online", t).contains("needs the network"),
            "{}",
            r["errored"]
        );
    }
    let oracle = team(&r, "oracle");
    assert_eq!(oracle["scored_tasks"], 3);
    assert!((oracle["mean_score"].as_f64().unwrap() - 0.5).abs() < 1e-12);
    assert_eq!(oracle["score_interval"], "bootstrap");
    assert_eq!(team(&r, "nop")["score_interval"], "wilson");
    assert_eq!(team(&r, "tamper")["mean_score"], 0.0);
    let md = fs_err::read_to_string(dir.join("reports/harbor/report.md")).unwrap();
    assert!(
        md.contains("## Scores") && md.contains("Verifier: in-place"),
        "{md}"
    );
    let html = fs_err::read_to_string(dir.join("reports/harbor/report.html")).unwrap();
    assert!(
        html.contains("<h2>Scores</h2>"),
        "report.html has the scores"
    );

    // A rerun runs nothing that succeeded.
    let o = apply(dir);
    assert_eq!(o.status.code(), Some(3));
    let ran = executed(&o);
    assert!(
        ran.iter()
            .all(|a| a.contains("noreward") || a.contains("online") || a == "report"),
        "{ran:?}"
    );

    // Fresh: the end state restored in a new container, /tests uploaded only then. Only the
    // grades rerun: the solves (rollout, snapshot, in-place verification) are cached.
    to_fresh(&dir.join("harbor.toml"));
    let o = apply(dir);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let ran = executed(&o);
    assert!(
        ran.iter().any(|a| a.starts_with("grade/")),
        "the grades rerun: {ran:?}"
    );
    assert!(
        !ran.iter()
            .any(|a| a.starts_with("solve/") && !a.contains("online")),
        "no solve reruns: {ran:?}"
    );
    let r = report(dir);
    assert_eq!(r["verifier_modes"], serde_json::json!(["fresh"]));
    // The planted module is not in the snapshot either: the tampering agent wins nothing.
    assert_eq!(score(&r, "answer", "tamper")["score"], 0.0);
    assert_eq!(score(&r, "answer", "tamper")["verifier"], "fresh");
    // What the agent did legitimately carries over.
    assert_eq!(score(&r, "answer", "oracle")["score"], 1.0);
    assert_eq!(score(&r, "partial", "oracle")["score"], 0.5);
    assert!(score(&r, "slow", "nop")["reward"].is_null());
    assert!(errored_reason(&r, "noreward", "nop").contains("RewardFileNotFoundError"));
    assert!(errored_reason(&r, "online", "nop").contains("needs the network"));
    let md = fs_err::read_to_string(dir.join("reports/harbor/report.md")).unwrap();
    assert!(md.contains("Verifier: fresh"), "{md}");
    parquet_scores_agree(dir);

    no_containers_left(dir);
}

/// Hostile agents (`tests/fixtures/harbor-hostile/`), each with a wrong answer, on a task whose
/// test.sh writes only `reward.json` (`json`), one whose test.sh writes no reward (`silent`), and
/// one whose checker reads its expected answer from `/tests` (`check`): `forger` writes
/// `reward.txt` and `reward.json` into `/logs/verifier`; `planter` replaces `/tests/test.sh`,
/// the checker and its expected answer, plants a module the checker imports, and turns `/logs`
/// into a link to a directory whose `verifier/reward.txt` says 1; `daemon` leaves a background
/// loop writing `reward.txt` while the verifier runs; `fakerm` plants a reward and replaces
/// `rm` with a program that removes nothing. In Harbor's own contract each of them scores 1
/// somewhere. In bench, in place and fresh alike, none scores anything, a missing
/// reward stays an error, and the oracle still resolves.
#[test]
fn hostile_agents_earn_nothing_in_either_mode_and_the_oracle_still_resolves() {
    if !common::docker_ready(&[BASE_IMAGE]) {
        return;
    }
    let sb = fixture_copy_of("harbor-hostile");
    let dir = sb.path();
    let hostile = ["forger", "planter", "daemon"];
    let check = |mode: &str| {
        let r = report(dir);
        assert_eq!(r["verifier_modes"], serde_json::json!([mode]));
        for task in ["json", "check"] {
            let s = score(&r, task, "oracle");
            assert_eq!(s["score"], 1.0, "{mode}: the oracle resolves {task}: {s}");
            assert_eq!(s["verifier"], mode);
            for t in hostile {
                let s = score(&r, task, t);
                assert_eq!(s["score"], 0.0, "{mode}: {t} on {task}: {s}");
                assert_eq!(s["verifier"], mode);
            }
        }
        for t in ["oracle", "forger", "planter", "daemon"] {
            let why = errored_reason(&r, "silent", t);
            assert!(
                why.contains("RewardFileNotFoundError"),
                "{mode}: {t} on silent: {why}"
            );
        }
        // `fakerm` replaced `rm`, so in place the reset leaves its reward.txt: the check through
        // the file API refuses to verify (an error, never a reward). Fresh, its planted reward
        // is not in the snapshot and its wrong answer scores 0.
        for task in ["json", "check", "silent"] {
            if mode == "in-place" {
                let why = errored_reason(&r, task, "fakerm");
                assert!(
                    why.contains("/logs/verifier still holds reward.txt"),
                    "{mode}: fakerm on {task}: {why}"
                );
            } else if task == "silent" {
                let why = errored_reason(&r, task, "fakerm");
                assert!(why.contains("RewardFileNotFoundError"), "{why}");
            } else {
                assert_eq!(score(&r, task, "fakerm")["score"], 0.0, "{mode}: {task}");
            }
        }
    };
    // In place (the default): the verifier in the agent's own container.
    let o = apply_manifest(dir, "hostile.toml");
    // `silent`'s missing rewards are failed nodes: exit 3.
    assert_eq!(o.status.code(), Some(3), "{}\n{}", stdout(&o), stderr(&o));
    check("in-place");
    // Fresh: the end state restored in a new container.
    to_fresh(&dir.join("hostile.toml"));
    let o = apply_manifest(dir, "hostile.toml");
    assert_eq!(o.status.code(), Some(3), "{}\n{}", stdout(&o), stderr(&o));
    check("fresh");
    no_containers_left(dir);
}

/// results.parquet's grade rows carry the reward, score and verifier of report.json's scores.
fn parquet_scores_agree(dir: &Path) {
    let probe = Command::new("python3")
        .args(["-c", "import pyarrow"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !probe {
        assert!(!common::ci(), "CI=true but pyarrow is missing");
        eprintln!("note: skipping the results.parquet check: no pyarrow");
        return;
    }
    let script = r#"
import json, sys, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1]).to_pylist()
r = json.load(open(sys.argv[2]))
rows = {(x["task"], x["team"]): x for x in t if x["node"] == "grade" and x["status"] == "ok"}
for s in r["scores"]:
    row = rows[(s["task"], s["team"])]
    assert row["score"] == s["score"], (row, s)
    assert row["verifier"] == s["verifier"], (row, s)
    assert row["reward"] == (s["reward"] or {}).get("reward"), (row, s)
print(len(r["scores"]))
"#;
    let o = Command::new("python3")
        .args(["-c", script])
        .arg(dir.join("reports/harbor/results.parquet"))
        .arg(dir.join("reports/harbor/report.json"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "9");
}

#[test]
fn gold_checks_run_the_oracle_and_verify_in_its_container() {
    if !common::docker_ready(&[BASE_IMAGE]) {
        return;
    }
    let sb = fixture_copy();
    let dir = sb.path();
    let text = fs_err::read_to_string(dir.join("harbor.toml")).unwrap();
    let text = text
        .replacen(
            "dataset = \"tasks\"\n",
            "dataset = \"tasks\"\ninstance_ids = [\"answer\", \"partial\"]\n\n[stages.gold]\nkind = \"gold\"\nneeds = [\"sample\"]\n",
            1,
        )
        .replacen("needs = [\"sample\"]\nteams", "needs = [\"gold\"]\nteams", 1)
        .replacen("teams = [\"oracle\", \"nop\", \"tamper\"]", "teams = [\"nop\"]", 1)
        .replacen("baseline = \"nop\"", "", 1);
    fs_err::write(dir.join("harbor.toml"), text).unwrap();
    let o = apply(dir);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let r = report(dir);
    // The oracle's full solution passes; the partial one's (0.5) does not resolve.
    assert_eq!(r["gold"]["valid"], serde_json::json!(["answer"]));
    assert_eq!(r["gold"]["invalid"], serde_json::json!(["partial"]));
    // Only the valid task is solved.
    assert_eq!(team(&r, "nop")["tasks"], 1);
}

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .expect("git");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn a_git_repository_of_tasks_is_read_at_its_pinned_commit() {
    let sb = fixture_copy();
    let dir = sb.path();
    let repo = dir.join("repo");
    fs_err::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    Command::new("cp")
        .arg("-a")
        .arg(dir.join("tasks/answer"))
        .arg(dir.join("tasks/partial"))
        .arg(&repo)
        .status()
        .unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "two tasks"]);
    let pinned = git(&repo, &["rev-parse", "HEAD"]);
    // Later: a third task committed, a fourth only in the work tree.
    Command::new("cp")
        .arg("-a")
        .arg(dir.join("tasks/slow"))
        .arg(&repo)
        .status()
        .unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "a third"]);
    Command::new("cp")
        .arg("-a")
        .arg(dir.join("tasks/online"))
        .arg(&repo)
        .status()
        .unwrap();
    let manifest = |rev: &str| {
        format!(
            "version = 1\nname = \"git\"\n\n[backend]\nkind = \"docker\"\n\n[datasets.tasks]\nformat = \"harbor\"\npath = \"repo\"\nrevision = \"{rev}\"\n\n[stages.sample]\nkind = \"sample\"\ndataset = \"tasks\"\n"
        )
    };
    fs_err::write(dir.join("git.toml"), manifest(&pinned)).unwrap();
    let o = bench_in(dir, &["tasks", "--json", "git.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut ids: Vec<&str> = v[0]["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|t| t["instance_id"].as_str().unwrap())
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        vec!["answer", "partial"],
        "the pinned commit's tasks only"
    );
    // Without a pin, the directory as it is (four tasks).
    fs_err::write(
        dir.join("git.toml"),
        manifest(&pinned).replace(&format!("revision = \"{pinned}\"\n"), ""),
    )
    .unwrap();
    let o = bench_in(dir, &["tasks", "git.toml"]);
    assert!(
        stdout(&o).contains("4 tasks"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    // A commit the repository does not have: an error naming it.
    fs_err::write(dir.join("git.toml"), manifest(&"0".repeat(40))).unwrap();
    let o = bench_in(dir, &["tasks", "git.toml"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("cannot read commit") && stderr(&o).contains(&"0".repeat(40)),
        "{}",
        stderr(&o)
    );
    // A revision that is not a commit sha is a manifest error.
    fs_err::write(dir.join("git.toml"), manifest("main")).unwrap();
    let o = bench_in(dir, &["validate", "git.toml"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("is not a commit sha"), "{}", stderr(&o));
}

#[test]
fn bad_task_files_are_reported_with_file_and_line_all_at_once() {
    let sb = fixture_copy();
    let dir = sb.path();
    let t = dir.join("tasks");
    fs_err::write(
        t.join("answer/task.toml"),
        "version = \"1.0\"\n\n[verifier]\ntimeout_sec = 60.0\ntimeuot_sec = 5\n",
    )
    .unwrap();
    fs_err::write(
        t.join("partial/task.toml"),
        "[environment]\nmemory = \"lots\"\n",
    )
    .unwrap();
    fs_err::remove_file(t.join("slow/instruction.md")).unwrap();
    let o = bench_in(dir, &["tasks", "harbor.toml"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    // (miette wraps long lines)
    assert!(
        e.contains("answer/task.toml: line 5, column 1: unknown field")
            && e.contains("`timeuot_sec`"),
        "{e}"
    );
    assert!(
        e.contains("partial/task.toml: line 2: environment.memory: invalid size \"lots\""),
        "{e}"
    );
    assert!(e.contains("slow: no instruction.md"), "{e}");
}

/// `network_mode = "allowlist"`: the agent reaches its `allowed_hosts` (a server on the
/// host's loopback standing for the allowed endpoint) through bench's egress proxy and
/// nothing else (another loopback server gets 403, direct connections and DNS fail); the
/// verifier, run after the network is cut, reaches nothing. The verifier turns what the agent
/// saw into its reward, so the reward is 1 only if all of that held.
#[test]
fn an_allowlisted_agent_reaches_its_hosts_and_nothing_else() {
    if !common::docker_ready(&[BASE_IMAGE]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let www = dir.path().join("www");
    fs_err::create_dir_all(&www).unwrap();
    fs_err::write(www.join("model.txt"), "MODEL-OK").unwrap();
    // Port 80 on two loopback addresses: Harbor's allowed_hosts carry no port.
    let serve = |addr: &str| {
        let child = Command::new("python3")
            .args(["-m", "http.server", "80", "--bind", addr])
            .current_dir(&www)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("python3 serves");
        for _ in 0..50 {
            if std::net::TcpStream::connect((addr, 80)).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        child
    };
    let mut servers = [serve("127.0.0.1"), serve("127.0.0.2")];
    let task = dir.path().join("tasks/allow");
    for d in ["environment", "tests"] {
        fs_err::create_dir_all(task.join(d)).unwrap();
    }
    fs_err::write(
        task.join("task.toml"),
        "version = \"1.0\"\n\n[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 120.0\n\n[environment]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"127.0.0.1\"]\n",
    )
    .unwrap();
    fs_err::write(task.join("instruction.md"), "Probe the network.\n").unwrap();
    fs_err::write(
        task.join("environment/Dockerfile"),
        "FROM bench-test-base:1\nWORKDIR /app\n",
    )
    .unwrap();
    let probe = r#"import socket, urllib.request, urllib.error
def get(url, proxy=True):
    try:
        h = urllib.request.ProxyHandler() if proxy else urllib.request.ProxyHandler({})
        return urllib.request.build_opener(h).open(url, timeout=5).read().decode().strip()
    except urllib.error.HTTPError as e:
        return "HTTP %d" % e.code
    except Exception:
        return "blocked"
print("model: " + get("http://127.0.0.1/model.txt"))
print("other: " + get("http://127.0.0.2/model.txt"))
print("direct: " + get("http://127.0.0.2/model.txt", proxy=False))
try:
    socket.getaddrinfo("example.com", 80)
    print("dns: resolved")
except Exception:
    print("dns: blocked")
"#;
    fs_err::write(
        task.join("tests/test.sh"),
        format!(
            "#!/bin/bash\ncat > /tmp/probe.py <<'PROBE'\n{probe}PROBE\npython3 /tmp/probe.py > /tmp/verifier-probe.txt\ncat /app/probe.txt /tmp/verifier-probe.txt\nif grep -qx 'model: MODEL-OK' /app/probe.txt && grep -qx 'other: HTTP 403' /app/probe.txt && grep -qx 'direct: blocked' /app/probe.txt && grep -qx 'dns: blocked' /app/probe.txt && grep -qx 'model: blocked' /tmp/verifier-probe.txt; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
        ),
    )
    .unwrap();
    fs_err::write(
        dir.path().join("probe.sh"),
        format!(
            "cat > /tmp/probe.py <<'PROBE'\n{probe}PROBE\npython3 /tmp/probe.py > /app/probe.txt\n"
        ),
    )
    .unwrap();
    fs_err::write(
        dir.path().join("harbor.toml"),
        "version = 1\nname = \"harbor\"\n\n[backend]\nkind = \"docker\"\n\n[datasets.tasks]\nformat = \"harbor\"\npath = \"tasks\"\n\n[stages.sample]\nkind = \"sample\"\ndataset = \"tasks\"\n\n[stages.solve]\nkind = \"solve\"\nneeds = [\"sample\"]\nteams = [\"prober\"]\ntimeout = \"5m\"\n\n[stages.grade]\nkind = \"grade\"\nneeds = [\"solve\"]\n\n[stages.report]\nkind = \"report\"\nneeds = [\"grade\"]\n\n[teams.prober]\ntopology = \"solo\"\nworker = \"prober\"\n\n[harnesses.prober]\nkind = \"command\"\ncommand = \"sh {{script}}\"\nscript = \"probe.sh\"\n",
    )
    .unwrap();
    let out = apply(dir.path());
    for s in &mut servers {
        let _ = s.kill();
        let _ = s.wait();
    }
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = report(dir.path());
    let s = score(&r, "allow", "prober");
    assert_eq!(s["reward"]["reward"], 1.0, "{s}");
}

/// The label of the store under `dir` (its containers' and networks' `bench.store`).
fn store_label(dir: &Path) -> String {
    let root = fs_err::canonicalize(dir.join(".bench")).unwrap();
    bench::key::digest(root.display().to_string().as_bytes())[..16].to_string()
}

/// What of bench's (containers of any state, networks) carries `filter`, as names.
fn left_with(filter: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (what, format) in [
        (&["ps", "-a"][..], "{{.Names}}"),
        (&["network", "ls"][..], "{{.Name}}"),
    ] {
        let o = Command::new("docker")
            .args(what)
            .args(["--format", format, "--filter", "label=bench=1"])
            .args(["--filter", filter])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out.extend(
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| !l.is_empty())
                .map(String::from),
        );
    }
    out
}

/// A copy of `tests/fixtures/harbor-compose` whose probing agent tries the host's listener
/// on `port`, with `query-public`: `query` under the public policy (the agent's container on
/// the default bridge and on its services' network).
fn compose_fixture(port: u16) -> tempfile::TempDir {
    let sb = fixture_copy_of("harbor-compose");
    let dir = sb.path();
    let prober = dir.join("agents/prober.sh");
    let text = fs_err::read_to_string(&prober).unwrap();
    fs_err::write(&prober, text.replace("@PORT@", &port.to_string())).unwrap();
    let ok = Command::new("cp")
        .arg("-a")
        .arg(dir.join("tasks/query"))
        .arg(dir.join("tasks/query-public"))
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let toml = dir.join("tasks/query-public/task.toml");
    let text = fs_err::read_to_string(&toml).unwrap();
    let public = text.replace("network_mode = \"no-network\"", "network_mode = \"public\"");
    assert_ne!(public, text);
    fs_err::write(&toml, public).unwrap();
    sb
}

/// An HTTP server on every address of the host (so the default bridge's gateway reaches it),
/// on a free port: the "outside" a probing agent must not reach.
fn host_listener() -> (std::process::Child, u16) {
    let port = std::net::TcpListener::bind("0.0.0.0:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("python3")
        .args(["-m", "http.server", &port.to_string(), "--bind", "0.0.0.0"])
        .current_dir(std::env::temp_dir())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("python3 serves");
    for _ in 0..50 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    (child, port)
}

/// The compose fixture's scores under the verifier mode `mode`: the oracle (which queries the
/// service) resolves, nop does not; the prober reaches the service during its run, not the
/// host's listener (unless its task's policy is public, which proves the probe can), and not
/// the service from the verifier, in place or fresh.
fn compose_scores_hold(r: &Value, mode: &str) {
    for task in ["query", "query-public"] {
        assert_eq!(score(r, task, "oracle")["score"], 1.0, "{task}");
        assert_eq!(score(r, task, "oracle")["verifier"], mode, "{task}");
        assert_eq!(score(r, task, "nop")["score"], 0.0, "{task}");
        let p = &score(r, task, "prober")["reward"];
        assert_eq!(p["reward"], 0.0, "{task}: {p}");
        assert_eq!(
            p["service_run"], 1.0,
            "{task}: the service serves the agent: {p}"
        );
        assert_eq!(
            p["service_grading"], 0.0,
            "{task}: no network in grading: {p}"
        );
        let outside = if task == "query-public" { 1.0 } else { 0.0 };
        assert_eq!(p["outside_run"], outside, "{task}: {p}");
    }
}

/// A Harbor task with `environment/docker-compose.yaml` (`tests/fixtures/harbor-compose`: `main`
/// in Harbor's shape and a server built from its own directory with a healthcheck) runs as
/// Harbor runs it: the server starts first on the trial's own network, the oracle's solve.sh
/// queries it by name and resolves (gold check, solve, in place and fresh), nop does not. A
/// probing agent reaches the server during its run but not the host's listener, and a hook it
/// plants to query the server from the verifier's python finds no network. Nothing of the
/// trials (containers, networks) is left behind, and an edit of the compose file reruns the
/// task's nodes.
#[test]
fn compose_services_run_beside_the_agent_and_nowhere_else() {
    if !common::docker_ready(&[BASE_IMAGE]) {
        return;
    }
    let (mut listener, port) = host_listener();
    let sb = compose_fixture(port);
    let dir = sb.path();
    let o = bench_in(dir, &["validate", "harbor.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = apply(dir);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let r = report(dir);
    assert_eq!(
        r["gold"]["valid"],
        serde_json::json!(["query", "query-public"]),
        "{}",
        r["gold"]
    );
    compose_scores_hold(&r, "in-place");
    let label = format!("label=bench.store={}", store_label(dir));
    assert_eq!(left_with(&label), Vec::<String>::new(), "left after apply");

    to_fresh(&dir.join("harbor.toml"));
    let o = apply(dir);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let ran = executed(&o);
    assert!(
        ran.iter().any(|a| a.starts_with("grade/")) && !ran.iter().any(|a| a.starts_with("solve/")),
        "only the grades rerun: {ran:?}"
    );
    compose_scores_hold(&report(dir), "fresh");
    assert_eq!(left_with(&label), Vec::<String>::new(), "left after fresh");
    let _ = listener.kill();
    let _ = listener.wait();

    // The compose file is part of the task's environment: an edit reruns what ran in it.
    let compose = dir.join("tasks/query/environment/docker-compose.yaml");
    let text = fs_err::read_to_string(&compose).unwrap();
    fs_err::write(&compose, format!("{text}# edited\n")).unwrap();
    let o = bench_in(dir, &["plan", "harbor.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // `query`'s gold check, solves and grades rerun; `query-public`'s stay cached.
    let plan = common::flat(&stdout(&o));
    for want in [
        "gold gold to run 1 cached 1",
        "solve solve to run 3 cached 3",
        "grade grade to run 3 cached 3",
    ] {
        assert!(plan.contains(want), "{want}: {plan}");
    }
}

/// Every other path removes a compose task's services and network too: a service that exits
/// fails its trial with the service's own words; Ctrl-C during a run removes everything before
/// bench exits; after kill -9 `bench clean` does.
#[test]
fn compose_services_are_removed_on_failure_ctrl_c_and_by_clean_after_kill_9() {
    if !common::docker_ready(&[BASE_IMAGE]) {
        return;
    }
    let sb = fixture_copy_of("harbor-compose");
    let dir = sb.path();
    let compose = dir.join("tasks/query/environment/docker-compose.yaml");
    let text = fs_err::read_to_string(&compose).unwrap();
    let broken = text.replace(
        "command: [\"python3\", \"/srv/serve.py\"]",
        "command: [\"sh\", \"-c\", \"echo the database is gone; exit 3\"]",
    );
    assert_ne!(broken, text);
    fs_err::write(&compose, broken).unwrap();
    let manifest = fs_err::read_to_string(dir.join("harbor.toml"))
        .unwrap()
        .replacen(
            "[stages.gold]\nkind = \"gold\"\nneeds = [\"sample\"]\n",
            "",
            1,
        )
        .replacen("needs = [\"gold\"]", "needs = [\"sample\"]", 1)
        .replacen(
            "teams = [\"oracle\", \"nop\", \"prober\"]",
            "teams = [\"nop\"]",
            1,
        );
    fs_err::write(dir.join("harbor.toml"), &manifest).unwrap();
    let o = apply(dir);
    assert_eq!(o.status.code(), Some(3), "{}\n{}", stdout(&o), stderr(&o));
    let reason = errored_reason(&report(dir), "query", "nop").to_string();
    assert!(
        reason.contains("service server exited (code 3)")
            && reason.contains("the database is gone"),
        "{reason}"
    );
    let label = format!("label=bench.store={}", store_label(dir));
    assert_eq!(
        left_with(&label),
        Vec::<String>::new(),
        "left after a failure"
    );

    // A healthy server and an agent that waits: interrupted while the services run.
    fs_err::write(&compose, &text).unwrap();
    fs_err::write(dir.join("sleep.sh"), "sleep 600\n").unwrap();
    let manifest = manifest
        .replacen("teams = [\"nop\"]", "teams = [\"sleeper\"]", 1)
        .replacen("baseline = \"nop\"", "", 1)
        + "\n[teams.sleeper]\ntopology = \"solo\"\nworker = \"sleeper\"\n\n[harnesses.sleeper]\nkind = \"command\"\ncommand = \"sh {{script}}\"\nscript = \"sleep.sh\"\n";
    fs_err::write(dir.join("harbor.toml"), manifest).unwrap();
    let spawn = || {
        Command::new(common::bench_bin())
            .args(["apply", "harbor.toml"])
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let running = |child: &mut std::process::Child| {
        let pid = format!("label=bench.pid={}", child.id());
        let t0 = std::time::Instant::now();
        // The services and the agent's container (which starts after them) all up.
        while left_with(&pid).len() < 3 {
            assert!(child.try_wait().unwrap().is_none(), "the apply ended");
            assert!(
                t0.elapsed().as_secs() < 300,
                "no trial started: {:?}",
                left_with(&pid)
            );
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        std::thread::sleep(std::time::Duration::from_secs(2));
        pid
    };
    let mut child = spawn();
    let pid = running(&mut child);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_eq!(left_with(&pid), Vec::<String>::new(), "left after Ctrl-C");

    let mut child = spawn();
    let pid = running(&mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    let left = left_with(&pid);
    assert!(
        left.iter()
            .any(|n| n.contains("-svc") && n.ends_with("-server")),
        "kill -9 leaves the services: {left:?}"
    );
    let o = bench_in(dir, &["clean"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        left_with(&pid),
        Vec::<String>::new(),
        "left after bench clean"
    );
}

/// A task may let its verifier reach its services, and only them (`[verifier] allowed_hosts`
/// naming services): a test.sh that checks a service's state. The oracle marks the server
/// (a POST from its solve.sh) and resolves in the gold check and in place; nop, whose server
/// was never marked, scores 0 in its empty check's fresh services and in place. A fresh grade
/// cannot see the state the trial left in the server: it is an error that says to grade in
/// place, not a zero.
#[test]
fn a_verifier_may_reach_its_task_s_services_when_the_task_opts_in() {
    if !common::docker_ready(&[BASE_IMAGE]) {
        return;
    }
    let sb = fixture_copy_of("harbor-compose");
    let dir = sb.path();
    let task = dir.join("tasks/query");
    let toml = fs_err::read_to_string(task.join("task.toml")).unwrap();
    let toml = toml.replace(
        "[verifier]\ntimeout_sec = 60.0\n",
        "[verifier]\ntimeout_sec = 60.0\nallowed_hosts = [\"server\"]\n",
    );
    fs_err::write(task.join("task.toml"), toml).unwrap();
    fs_err::write(
        task.join("solution/solve.sh"),
        "#!/bin/bash\npython3 -c \"import urllib.request; urllib.request.urlopen(urllib.request.Request('http://server:8000/mark', method='POST'), timeout=10)\"\n",
    )
    .unwrap();
    fs_err::write(
        task.join("tests/test.sh"),
        "#!/bin/bash\nm=$(python3 -c \"import urllib.request; print(urllib.request.urlopen('http://server:8000/marked', timeout=10).read().decode().strip())\")\necho \"marked: $m\"\nif [ \"$m\" = yes ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
    )
    .unwrap();
    let manifest = fs_err::read_to_string(dir.join("harbor.toml"))
        .unwrap()
        .replacen(
            "[stages.gold]\nkind = \"gold\"\nneeds = [\"sample\"]\n",
            "[stages.gold]\nkind = \"gold\"\nneeds = [\"sample\"]\nempty = true\n",
            1,
        )
        .replacen(
            "teams = [\"oracle\", \"nop\", \"prober\"]",
            "teams = [\"oracle\", \"nop\"]",
            1,
        );
    fs_err::write(dir.join("harbor.toml"), manifest).unwrap();
    let o = apply(dir);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let r = report(dir);
    assert_eq!(
        r["gold"]["valid"],
        serde_json::json!(["query"]),
        "{}",
        r["gold"]
    );
    assert_eq!(score(&r, "query", "oracle")["score"], 1.0);
    assert_eq!(score(&r, "query", "nop")["score"], 0.0);
    to_fresh(&dir.join("harbor.toml"));
    let o = apply(dir);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let r = report(dir);
    for t in ["oracle", "nop"] {
        let why = errored_reason(&r, "query", t);
        assert!(why.contains("grade it in place"), "{why}");
    }
    let label = format!("label=bench.store={}", store_label(dir));
    assert_eq!(left_with(&label), Vec::<String>::new(), "left behind");
}
