//! Remote execution on a real Slurm cluster (tests/common/slurm.rs: slurmctld, two one-CPU
//! slurmd `n1` and `n2`, munged): the quickstart placed on Slurm (`[execution] engine =
//! "slurm"`) resolves exactly as on local (same keys, same verdicts) with its solves and
//! grades run by `bench worker` jobs spread over both nodes; a second apply runs nothing; a
//! laptop-style apply of the same manifest sharing the cache runs nothing either.
//!
//! Every wait polls against a generous deadline; no test asserts a duration.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::Sandbox;
use common::slurm::{SlurmCluster, URGENT, slurm_ready};

/// The events of an apply (`--message-format json`), one JSON value per line.
fn events(out: &std::process::Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn of_type<'a>(events: &'a [serde_json::Value], t: &str) -> Vec<&'a serde_json::Value> {
    events.iter().filter(|e| e["event"] == t).collect()
}

/// address -> (key, outcome detail) of every node that ended, run or cached, but the report
/// (whose key holds its records' durations: another run, another report).
fn verdicts(events: &[serde_json::Value]) -> BTreeMap<String, (String, String)> {
    let mut v = all_verdicts(events);
    let report = v.remove("report").expect("a report node");
    assert_eq!(report.1, "written");
    v
}

/// address -> (key, outcome detail) of every node that ended, run or cached.
fn all_verdicts(events: &[serde_json::Value]) -> BTreeMap<String, (String, String)> {
    of_type(events, "node_finished")
        .into_iter()
        .map(|e| {
            (
                e["address"].as_str().unwrap().to_string(),
                (
                    e["key"].as_str().unwrap_or("").to_string(),
                    e["detail"].as_str().unwrap_or("").to_string(),
                ),
            )
        })
        .collect()
}

/// address -> key of every node, run or cached, but the report.
fn keys(events: &[serde_json::Value]) -> BTreeMap<String, String> {
    events
        .iter()
        .filter(|e| e["event"] == "node_finished" || e["event"] == "cache_hit")
        .map(|e| {
            (
                e["address"].as_str().unwrap().to_string(),
                e["key"].as_str().unwrap_or("").to_string(),
            )
        })
        .filter(|(a, _)| a != "report")
        .collect()
}

/// The files in `dir`, sorted, with their bytes.
fn files(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out: Vec<_> = fs_err::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let bytes = fs_err::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    out.sort();
    out
}

/// The quickstart with `[cache]` on `cache` trusting `public`, and `extra` appended.
fn quickstart_on(cache: &Path, public: &str, extra: &str) -> Sandbox {
    let s = Sandbox::quickstart();
    s.append(
        "quickstart.toml",
        &format!(
            "\n[cache]\nremote = \"file://{}\"\ntrust = [\"{public}\"]\n{extra}",
            cache.display()
        ),
    );
    s
}

#[test]
fn the_quickstart_on_slurm_resolves_as_on_local_and_its_results_are_shared() {
    if !slurm_ready() {
        return;
    }
    let cluster = SlurmCluster::start();
    let shared = tempfile::tempdir().unwrap();
    let cache = shared.path().join("cache");
    fs_err::create_dir(&cache).unwrap();
    let (key_file, public) = common::keygen(shared.path());
    let mut env: Vec<(String, String)> = cluster.env();
    env.push(("BENCH_CACHE_KEY_FILE".into(), key_file));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let json = ["apply", "quickstart.toml", "--message-format", "json"];

    // The same experiment on local, its own store and no cache: the reference.
    let local = Sandbox::quickstart();
    let out = common::bench_env(local.dir.path(), &json, &env);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference = verdicts(&events(&out));

    let worker_store = shared.path().join("worker-store");
    let placed = quickstart_on(
        &cache,
        &public,
        &format!(
            "\n[execution]\nengine = \"slurm\"\nworker_store = \"{}\"\n",
            worker_store.display()
        ),
    );
    let out = common::bench_env(placed.dir.path(), &json, &env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", cluster.log_tails());
    let first = events(&out);
    assert_eq!(
        verdicts(&first),
        reference,
        "same keys, same verdicts as on local"
    );
    let placed_events = of_type(&first, "node_placed");
    let nodes: BTreeSet<&str> = placed_events
        .iter()
        .filter(|e| e["placement"]["state"] == "running")
        .map(|e| e["placement"]["node"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, BTreeSet::from(["n1", "n2"]), "{placed_events:?}");
    let shipped: BTreeSet<&str> = placed_events
        .iter()
        .map(|e| e["address"].as_str().unwrap())
        .collect();
    let started: BTreeSet<&str> = of_type(&first, "node_started")
        .iter()
        .map(|e| e["address"].as_str().unwrap())
        .collect();
    for a in &started {
        let here = a.starts_with("sample") || a.starts_with("report");
        assert_eq!(
            !here,
            shipped.contains(a),
            "{a}: samples and reports stay here"
        );
    }
    assert!(shipped.len() > 4, "{shipped:?}");
    // Nodes ready together went out together, as the tasks of array jobs: fewer sbatch calls
    // than jobs.
    let jobs: BTreeSet<&str> = placed_events
        .iter()
        .map(|e| e["placement"]["job_id"].as_str().unwrap())
        .collect();
    let arrays: BTreeSet<&str> = jobs.iter().map(|j| j.split('_').next().unwrap()).collect();
    assert!(jobs.iter().any(|j| j.contains('_')), "{jobs:?}");
    assert!(arrays.len() < jobs.len(), "{jobs:?}");
    // `status --node` says where a shipped node ran.
    let out = common::bench_env(
        placed.dir.path(),
        &[
            "status",
            "quickstart.toml",
            "--node",
            "solve/quickstart__roman-1/oracle/0",
            "--json",
        ],
        &env,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &doc["placement"]["placement"];
    assert_eq!(p["engine"], "slurm", "{doc}");
    assert!(
        ["n1", "n2"].contains(&p["node"].as_str().unwrap_or("")),
        "{doc}"
    );

    // Again: nothing runs, nothing is submitted.
    let out = common::bench_env(placed.dir.path(), &json, &env);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let second = events(&out);
    assert!(of_type(&second, "node_started").is_empty(), "{second:?}");
    assert!(of_type(&second, "node_placed").is_empty());

    // A laptop: the same experiment without `[execution]`, a store of its own, the same cache.
    let laptop = quickstart_on(&cache, &public, "");
    let out = common::bench_env(laptop.dir.path(), &json, &env);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let third = events(&out);
    assert!(
        of_type(&third, "node_started").is_empty(),
        "the laptop fetched everything: {:?}",
        of_type(&third, "node_started")
    );
    let hits = of_type(&third, "cache_hit");
    let keys: BTreeMap<String, String> = hits
        .iter()
        .map(|e| {
            (
                e["address"].as_str().unwrap().to_string(),
                e["key"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let first_keys: BTreeMap<String, String> = all_verdicts(&first)
        .into_iter()
        .map(|(a, (k, _))| (a, k))
        .collect();
    assert_eq!(
        keys, first_keys,
        "every node, the report too, from the cache"
    );
    assert!(hits.iter().all(|e| e["remote"] == true), "{hits:?}");
    assert!(cluster.squeue_ids().is_empty());
}

/// A cluster, a shared cache directory and a worker key, as the fault tests share them.
struct Rig {
    cluster: SlurmCluster,
    shared: tempfile::TempDir,
    public: String,
    env: Vec<(String, String)>,
}

impl Rig {
    fn start() -> Rig {
        let cluster = SlurmCluster::start();
        let shared = tempfile::tempdir().unwrap();
        fs_err::create_dir(shared.path().join("cache")).unwrap();
        let (key_file, public) = common::keygen(shared.path());
        let mut env = cluster.env();
        env.push(("BENCH_CACHE_KEY_FILE".into(), key_file));
        Rig {
            cluster,
            shared,
            public,
            env,
        }
    }

    fn cache(&self) -> std::path::PathBuf {
        self.shared.path().join("cache")
    }

    /// The quickstart placed on this cluster; the fixer sleeps `sleep` seconds first.
    fn placed(&self, sleep: u32) -> Sandbox {
        let s = quickstart_on(
            &self.cache(),
            &self.public,
            &format!(
                "\n[execution]\nengine = \"slurm\"\nworker_store = \"{}\"\n",
                self.shared.path().join("worker-store").display()
            ),
        );
        if sleep > 0 {
            s.edit(
                "quickstart.toml",
                "command = \"python3 {{script}}\"",
                &format!("command = \"sleep {sleep}; python3 {{{{script}}}}\""),
            );
        }
        s
    }

    fn env(&self) -> Vec<(&str, &str)> {
        self.env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    /// `bench apply --message-format json` in `dir`, running: each event is handed to `on`
    /// as it comes (it may act on the cluster or the process); returns the exit status and
    /// every event.
    fn apply_watching(
        &mut self,
        dir: &Path,
        mut on: impl FnMut(&mut Rig, &serde_json::Value, &std::process::Child),
    ) -> (std::process::ExitStatus, Vec<serde_json::Value>) {
        use std::io::BufRead;
        let mut child = std::process::Command::new(common::bench_bin())
            .args(["apply", "quickstart.toml", "--message-format", "json"])
            .current_dir(dir)
            .env_remove("BENCH_STORE")
            .envs(self.env.clone())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut seen = Vec::new();
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(e) = serde_json::from_str::<serde_json::Value>(&line.unwrap()) else {
                continue;
            };
            on(self, &e, &child);
            seen.push(e);
        }
        (child.wait().unwrap(), seen)
    }
}

#[test]
fn a_job_whose_node_dies_is_submitted_again_and_the_apply_ends_right() {
    if !slurm_ready() {
        return;
    }
    let mut rig = Rig::start();
    let placed = rig.placed(6);
    let mut killed = None;
    let (status, events) = rig.apply_watching(placed.dir.path(), |rig, e, _| {
        let p = &e["placement"];
        if killed.is_none()
            && e["event"] == "node_placed"
            && p["state"] == "running"
            && e["address"].as_str().unwrap().ends_with("/fixer/0")
        {
            let node = p["node"].as_str().unwrap().to_string();
            rig.cluster.kill_node(&node);
            killed = Some((e["address"].as_str().unwrap().to_string(), node));
        }
    });
    let (address, node) = killed.expect("a fixer solve ran on a node");
    assert!(status.success(), "{status:?}\n{}", rig.cluster.log_tails());
    let again: Vec<&serde_json::Value> = of_type(&events, "node_placed")
        .into_iter()
        .filter(|e| e["address"] == address.as_str())
        .collect();
    let resubmitted = again
        .iter()
        .find(|e| e["placement"]["state"] == "resubmitted")
        .unwrap_or_else(|| panic!("{address} was not submitted again: {again:?}"));
    assert_eq!(resubmitted["placement"]["attempt"], 2);
    let ran_after: Vec<&str> = again
        .iter()
        .filter(|e| e["placement"]["state"] == "running" && e["placement"]["attempt"] == 2)
        .map(|e| e["placement"]["node"].as_str().unwrap())
        .collect();
    assert!(
        !ran_after.is_empty() && !ran_after.contains(&node.as_str()),
        "{again:?}"
    );
    // The verdicts are the local run's.
    assert_eq!(verdicts(&events), local_verdicts(&rig, 6));
}

/// The verdicts of the quickstart applied locally (a store of its own, no cache) with the
/// fixer sleeping `sleep` seconds first, as [`Rig::placed`] makes it on the cluster.
fn local_verdicts(rig: &Rig, sleep: u32) -> BTreeMap<String, (String, String)> {
    let local = Sandbox::quickstart();
    local.edit(
        "quickstart.toml",
        "command = \"python3 {{script}}\"",
        &format!("command = \"sleep {sleep}; python3 {{{{script}}}}\""),
    );
    let json = ["apply", "quickstart.toml", "--message-format", "json"];
    let out = common::bench_env(local.dir.path(), &json, &rig.env());
    assert!(out.status.success());
    verdicts(&events(&out))
}

/// The events placing `address`'s jobs.
fn placements_of<'a>(events: &'a [serde_json::Value], address: &str) -> Vec<&'a serde_json::Value> {
    of_type(events, "node_placed")
        .into_iter()
        .filter(|e| e["address"] == address)
        .collect()
}

#[test]
fn a_preempted_job_is_submitted_again_and_the_apply_ends_right() {
    if !slurm_ready() {
        return;
    }
    let mut rig = Rig::start();
    let placed = rig.placed(6);
    let mut preempted = None;
    let (status, events) = rig.apply_watching(placed.dir.path(), |rig, e, _| {
        if preempted.is_none()
            && e["event"] == "node_placed"
            && e["placement"]["state"] == "running"
            && e["address"].as_str().unwrap().ends_with("/fixer/0")
        {
            // A job of a higher priority tier takes both nodes: Slurm cancels what runs there.
            let out = rig
                .cluster
                .command("sbatch")
                .args([
                    "--parsable",
                    &format!("--partition={URGENT}"),
                    "--nodes=2",
                    "--time=1",
                    "--output=/dev/null",
                    "--wrap=sleep 3",
                ])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            preempted = Some(e["address"].as_str().unwrap().to_string());
        }
    });
    let address = preempted.expect("a fixer solve ran");
    assert!(status.success(), "{status:?}\n{}", rig.cluster.log_tails());
    let again = placements_of(&events, &address);
    let resubmitted = again
        .iter()
        .find(|e| e["placement"]["state"] == "resubmitted")
        .unwrap_or_else(|| panic!("{address} was not submitted again: {again:?}"));
    assert_eq!(resubmitted["placement"]["lost"], "preempted", "{again:?}");
    assert_eq!(resubmitted["placement"]["attempt"], 2);
    // The verdicts are the local run's.
    assert_eq!(verdicts(&events), local_verdicts(&rig, 6));
    assert!(rig.cluster.squeue_ids().is_empty());
}

#[test]
fn a_job_past_its_time_limit_is_submitted_again_until_its_attempts_are_spent() {
    if !slurm_ready() {
        return;
    }
    let mut rig = Rig::start();
    let placed = rig.placed(0);
    // One task's fixer runs for ten minutes; its jobs may run one (Slurm counts minutes).
    placed.edit(
        "quickstart.toml",
        "command = \"python3 {{script}}\"",
        "command = \"if grep -qi roman {{prompt_file}}; then sleep 600; fi; python3 {{script}}\"",
    );
    placed.append("quickstart.toml", "time_limit = \"1m\"\nattempts = 2\n");
    let (status, events) = rig.apply_watching(placed.dir.path(), |_, _, _| {});
    assert!(!status.success(), "the timed-out node fails the apply");
    let address = "solve/quickstart__roman-1/fixer/0";
    let placements = placements_of(&events, address);
    let lost: Vec<&serde_json::Value> = placements
        .iter()
        .filter(|e| e["placement"]["state"] == "resubmitted")
        .copied()
        .collect();
    assert_eq!(lost.len(), 1, "{placements:?}");
    assert_eq!(lost[0]["placement"]["lost"], "at its time limit");
    let finished = |address: &str| {
        of_type(&events, "node_finished")
            .into_iter()
            .find(|e| e["address"] == address)
            .unwrap_or_else(|| panic!("{address} did not finish: {events:?}"))
            .clone()
    };
    let failed = finished(address);
    assert_eq!(failed["outcome"], "failed", "{failed}");
    let error = failed["detail"].as_str().unwrap_or_default();
    assert!(
        error.contains("at its time limit") && error.contains("lost 2 times"),
        "{failed}"
    );
    // Every other fixer solve ran to its result on the cluster.
    for task in [
        "csvsum",
        "leapyear",
        "linecount",
        "pathname",
        "semver",
        "slugify",
        "wordwrap",
    ] {
        let other = finished(&format!("solve/quickstart__{task}-1/fixer/0"));
        assert_eq!(other["outcome"], "done", "{other}");
    }
    assert!(rig.cluster.squeue_ids().is_empty());
}

#[test]
fn ctrl_c_cancels_every_job_of_the_apply() {
    if !slurm_ready() {
        return;
    }
    let mut rig = Rig::start();
    let placed = rig.placed(60);
    let mut sent = false;
    let (status, _) = rig.apply_watching(placed.dir.path(), |_, e, child| {
        if !sent && e["event"] == "node_placed" && e["placement"]["state"] == "running" {
            sent = true;
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGINT,
            )
            .unwrap();
        }
    });
    assert!(sent, "a job ran");
    assert_eq!(status.code(), Some(130), "{status:?}");
    // scancel has run for every job; Slurm may take a moment to forget a completing one.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !rig.cluster.squeue_ids().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "jobs left: {:?}",
            rig.cluster.squeue_ids()
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

#[test]
fn a_tampered_result_is_refused_and_recomputed_and_a_worker_of_another_backend_refuses() {
    if !slurm_ready() {
        return;
    }
    let mut rig = Rig::start();
    let placed = rig.placed(0);
    let (status, first) = rig.apply_watching(placed.dir.path(), |_, _, _| {});
    assert!(status.success());
    let solve = of_type(&first, "node_finished")
        .into_iter()
        .find(|e| e["address"] == "solve/quickstart__roman-1/fixer/0")
        .unwrap()["key"]
        .as_str()
        .unwrap()
        .to_string();

    // A worker whose jail differs (no bubblewrap: isolation `none`) refuses the job and
    // uploads nothing.
    let entries = rig.cache().join("bench-cache-v1/ac").join(&solve);
    let before = files(&entries);
    let report = rig.shared.path().join("refused.json");
    let url = format!("file://{}", rig.cache().display());
    let worker = |extra: &[(&str, &str)]| {
        let mut env = rig.env();
        env.extend_from_slice(extra);
        common::bench_env(
            rig.shared.path(),
            &[
                "worker",
                "--kind",
                "solve",
                "--key",
                &solve,
                "--cache",
                &url,
                "--store",
                rig.shared.path().join("other-store").to_str().unwrap(),
                "--report",
                report.to_str().unwrap(),
            ],
            &env,
        )
    };
    let out = worker(&[("BENCH_NO_BWRAP", "1")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("backend differs from the job's"),
        "{stderr}"
    );
    assert!(
        stderr.contains("isolation `none` here, `bwrap` in the job"),
        "{stderr}"
    );
    let r: serde_json::Value = serde_json::from_slice(&fs_err::read(&report).unwrap()).unwrap();
    assert_eq!(r["outcome"], "refused");
    assert_eq!(before, files(&entries), "nothing uploaded");
    // The same worker with this machine's jail runs it.
    let out = worker(&[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Tamper with the solve's signed entry: a fresh store on the cluster refuses it and the
    // node runs again; afterwards the cache holds a valid entry.
    for f in fs_err::read_dir(&entries).unwrap() {
        let f = f.unwrap().path();
        let mut bytes = fs_err::read(&f).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 1;
        fs_err::write(&f, bytes).unwrap();
    }
    fs_err::remove_dir_all(placed.path(".bench")).unwrap();
    let (status, second) = rig.apply_watching(placed.dir.path(), |_, _, _| {});
    assert!(status.success());
    let started: Vec<&str> = of_type(&second, "node_started")
        .iter()
        .map(|e| e["address"].as_str().unwrap())
        .collect();
    assert!(
        started.contains(&"solve/quickstart__roman-1/fixer/0"),
        "the tampered node runs again: {started:?}"
    );
    assert_eq!(keys(&second), keys(&first));
    let laptop = quickstart_on(&rig.cache(), &rig.public, "");
    let out = common::bench_env(
        laptop.dir.path(),
        &["apply", "quickstart.toml", "--message-format", "json"],
        &rig.env(),
    );
    assert!(out.status.success());
    assert!(of_type(&events(&out), "node_started").is_empty());
}

#[test]
fn a_killed_apply_loses_nothing_the_next_follows_its_jobs_and_submits_only_the_rest() {
    if !slurm_ready() {
        return;
    }
    let mut rig = Rig::start();
    let placed = rig.placed(8);
    // Kill the apply (SIGKILL: no cleanup at all) once a fixer solve has finished on the
    // cluster and another is running.
    let mut finished = BTreeSet::new();
    let mut running: BTreeMap<String, String> = BTreeMap::new();
    let mut killed = false;
    let (status, _) = rig.apply_watching(placed.dir.path(), |_, e, child| {
        let address = e["address"].as_str().unwrap_or("").to_string();
        if !address.contains("/fixer/") || killed {
            return;
        }
        if e["event"] == "node_finished" {
            finished.insert(address.clone());
            running.remove(&address);
        } else if e["event"] == "node_placed" && e["placement"]["state"] == "running" {
            running.insert(
                address,
                e["placement"]["job_id"].as_str().unwrap().to_string(),
            );
        }
        if !finished.is_empty() && !running.is_empty() {
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            )
            .unwrap();
            killed = true;
        }
    });
    assert!(killed && !status.success(), "{status:?}");
    let (status, events) = rig.apply_watching(placed.dir.path(), |_, _, _| {});
    assert!(status.success(), "{}", rig.cluster.log_tails());
    for a in &finished {
        let placed_again = of_type(&events, "node_placed")
            .into_iter()
            .any(|e| e["address"] == a.as_str());
        assert!(!placed_again, "{a} had landed: it is not submitted again");
    }
    for (a, job) in &running {
        let jobs: BTreeSet<&str> = of_type(&events, "node_placed")
            .into_iter()
            .filter(|e| e["address"] == a.as_str())
            .map(|e| e["placement"]["job_id"].as_str().unwrap())
            .collect();
        assert!(
            jobs.is_empty() || jobs == BTreeSet::from([job.as_str()]),
            "{a}: the running job {job} is followed, not submitted again: {jobs:?}"
        );
    }
    let local = Sandbox::quickstart();
    local.edit(
        "quickstart.toml",
        "command = \"python3 {{script}}\"",
        "command = \"sleep 8; python3 {{script}}\"",
    );
    let out = common::bench_env(
        local.dir.path(),
        &["apply", "quickstart.toml", "--message-format", "json"],
        &rig.env(),
    );
    assert!(out.status.success());
    assert_eq!(keys(&events), keys(&self::events(&out)));
    assert!(rig.cluster.squeue_ids().is_empty());
}

/// Every file under `dir` whose bytes hold `needle`.
fn files_holding(dir: &Path, needle: &[u8]) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in walkdir(dir) {
        let bytes = fs_err::read(&e).unwrap_or_default();
        if bytes.windows(needle.len()).any(|w| w == needle) {
            out.push(e);
        }
    }
    out
}

fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in fs_err::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walkdir(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_job_cancelled_by_hand_fails_its_node_by_name_and_workers_scrub_their_secrets() {
    if !slurm_ready() {
        return;
    }
    let mut rig = Rig::start();
    // The fixer prints a secret its harness passes from the environment (the worker's).
    let placed = rig.placed(0);
    placed.edit(
        "quickstart.toml",
        "command = \"python3 {{script}}\"",
        "command = \"echo token=$BENCH_TEST_SECRET; sleep 8; python3 {{script}}\"\nenv = [\"BENCH_TEST_SECRET\"]",
    );
    let secret = "sEcr3t-v4lue-of-a-test-9f8e7d";
    rig.env.push(("BENCH_TEST_SECRET".into(), secret.into()));
    let mut cancelled: Option<(String, String)> = None;
    let (status, events) = rig.apply_watching(placed.dir.path(), |rig, e, _| {
        if cancelled.is_none()
            && e["event"] == "node_placed"
            && e["placement"]["state"] == "running"
            && e["address"].as_str().unwrap().ends_with("/fixer/0")
        {
            let job = e["placement"]["job_id"].as_str().unwrap().to_string();
            let out = rig.cluster.command("scancel").arg(&job).output().unwrap();
            assert!(out.status.success());
            cancelled = Some((e["address"].as_str().unwrap().to_string(), job));
        }
    });
    let (address, job) = cancelled.expect("a fixer ran");
    assert_eq!(status.code(), Some(3), "the node failed: {status:?}");
    let failed = of_type(&events, "node_finished")
        .into_iter()
        .find(|e| e["address"] == address.as_str())
        .unwrap();
    assert_eq!(failed["outcome"], "failed", "{failed}");
    let detail = failed["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("Slurm job {job} was cancelled outside bench")),
        "{detail}"
    );
    // What the other fixers printed was stored, and the secret nowhere: not in the shared
    // cache, not in the worker's store, not in the apply's store.
    assert!(
        !files_holding(&rig.cache(), b"token=").is_empty(),
        "the fixers' output is stored"
    );
    for dir in [rig.shared.path(), placed.dir.path()] {
        let leaks = files_holding(dir, secret.as_bytes());
        assert!(leaks.is_empty(), "the secret leaked into {leaks:?}");
    }
}

#[test]
fn harbor_tasks_travel_to_slurm_workers_with_their_environment_and_score_as_on_local() {
    if !slurm_ready() || !common::docker_ready(&["bench-test-base:1"]) {
        return;
    }
    let rig = Rig::start();
    // The Harbor fixture's two scored tasks, oracle and nop: a build context (a Dockerfile
    // FROM the test base image), tests, a solution.
    let copy = |placed: &str| {
        let dir = tempfile::tempdir().unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harbor");
        let ok = std::process::Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", src.display()))
            .arg(dir.path())
            .status()
            .unwrap()
            .success();
        assert!(ok);
        for t in ["noreward", "online", "slow"] {
            fs_err::remove_dir_all(dir.path().join("tasks").join(t)).unwrap();
        }
        let path = dir.path().join("harbor.toml");
        let text = fs_err::read_to_string(&path).unwrap().replace(
            "teams = [\"oracle\", \"nop\", \"tamper\"]",
            "teams = [\"oracle\", \"nop\"]",
        );
        fs_err::write(&path, format!("{text}{placed}")).unwrap();
        dir
    };
    let json = ["apply", "harbor.toml", "--message-format", "json"];
    let local = copy("");
    let out = common::bench_env(local.path(), &json, &rig.env());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference = verdicts(&events(&out));
    let placed = copy(&format!(
        "\n[cache]\nremote = \"file://{}\"\ntrust = [\"{}\"]\n\n[execution]\nengine = \"slurm\"\nworker_store = \"{}\"\n",
        rig.cache().display(),
        rig.public,
        rig.shared.path().join("worker-store").display()
    ));
    let out = common::bench_env(placed.path(), &json, &rig.env());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{stderr}\n{}",
        rig.cluster.log_tails()
    );
    let events = events(&out);
    // Same keys for what the manifest determines (a grade's key follows its trial's record,
    // which holds the run's own logs), same verdicts for all.
    let (ours, theirs) = (verdicts(&events), reference);
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (address, (key, verdict)) in &ours {
        assert_eq!(verdict, &theirs[address].1, "{address}");
        if !address.starts_with("grade/") {
            assert_eq!(key, &theirs[address].0, "{address}");
        }
    }
    let shipped: BTreeSet<&str> = of_type(&events, "node_placed")
        .iter()
        .map(|e| e["address"].as_str().unwrap())
        .collect();
    for a in [
        "solve/answer/oracle/0",
        "solve/answer/nop/0",
        "grade/solve/answer/oracle/0",
        "solve/partial/oracle/0",
    ] {
        assert!(shipped.contains(a), "{a} ran on Slurm: {shipped:?}");
    }
    let r: serde_json::Value = serde_json::from_str(
        &fs_err::read_to_string(placed.path().join("reports/harbor/report.json")).unwrap(),
    )
    .unwrap();
    let score = |task: &str, team: &str| {
        r["scores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["task"] == task && s["team"] == team)
            .unwrap_or_else(|| panic!("{task} x {team}: {}", r["scores"]))["score"]
            .clone()
    };
    assert_eq!(score("answer", "oracle"), 1.0);
    assert_eq!(score("answer", "nop"), 0.0);
    assert_eq!(score("partial", "oracle"), 0.5);
    assert!(rig.cluster.squeue_ids().is_empty());
}
