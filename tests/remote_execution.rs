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
use common::slurm::{SlurmCluster, slurm_ready};

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

/// A signing key in `dir`, and its public key.
fn keygen(dir: &Path) -> (String, String) {
    let key = dir.join("worker.key");
    let out = common::bench_in(dir, &["cache", "keygen", "--out", key.to_str().unwrap()]);
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
    std::fs::create_dir(&cache).unwrap();
    let (key_file, public) = keygen(shared.path());
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
