//! `bench status`: the plan's nodes with how they ended, and one node in depth (`--node`).

use std::collections::BTreeMap;
use std::path::Path;

use miette::{Report, miette};

use crate::cli::Cli;
use crate::exit_codes;
use crate::graph::{Graph, Mode, NodeState};
use crate::manifest::StageKind;
use crate::run;
use crate::store::Store;

use super::{load_for_reading, planned};

/// The job a node's key was computed from. A record read for planning is light (its job is
/// null): the job is read whole from the record file, else (no record) taken from the node as
/// it would run.
pub(super) fn node_inputs(
    store: Option<&Store>,
    node: &crate::graph::Node,
) -> Option<serde_json::Value> {
    node.state
        .record()
        .map(|r| r.job.clone())
        .filter(|j| !j.is_null())
        .or_else(|| match store?.get_action(node.key.as_ref()?) {
            crate::store::Lookup::Hit(r) => Some(r.job).filter(|j| !j.is_null()),
            _ => None,
        })
        .or_else(|| node.job.as_ref().map(|j| j.explain()))
}

/// The error of `status --node` for an address the manifest has no node at, with addresses
/// it has (of the same stage when there are).
pub(super) fn no_such_node(graph: &Graph<'_>, file: &Path, address: &str) -> Report {
    let stage = address.split('/').next().unwrap_or(address);
    let mut near: Vec<&str> = graph
        .nodes
        .iter()
        .map(|n| n.address.as_str())
        .filter(|a| a.split('/').next() == Some(stage))
        .take(5)
        .collect();
    if near.is_empty() {
        near = graph
            .nodes
            .iter()
            .map(|n| n.address.as_str())
            .take(5)
            .collect();
    }
    miette!(
        help = format!(
            "addresses look like: {} (`bench plan --explain` lists the nodes to run)",
            near.join(", ")
        ),
        "{} has no node `{address}`",
        file.display()
    )
}

/// `bench status FILE --node ADDRESS`: what one node is, as plan sees it (its state, key and
/// inputs), what the store holds of it, and how it ended in the manifest's last apply.
pub(super) fn status_node(cli: &Cli, file: &Path, address: &str, json: bool) -> Result<u8, Report> {
    let l = load_for_reading(&cli.store, file)?;
    let mut graph =
        Graph::new(&l.m, l.store.as_ref(), &l.datasets, Mode::Plan).map_err(|e| miette!("{e}"))?;
    graph.keep_inputs = true;
    while !graph.advance().is_empty() {}
    let Some(node) = graph.nodes.iter().find(|n| n.address == address) else {
        return Err(no_such_node(&graph, file, address));
    };
    let state = match &node.state {
        NodeState::Cached(_) => "cached",
        NodeState::Done(_) => "done",
        NodeState::Failed(_) => "failed",
        NodeState::NotRun(_) => "not run",
        NodeState::WillRun if node.key.is_some() => "to run",
        NodeState::WillRun => "to run (its key waits for upstream outputs)",
        NodeState::Ready | NodeState::Running => "to run",
        NodeState::Retracted => "withdrawn",
    };
    let last = l.store.as_ref().and_then(|s| {
        s.runs()
            .into_iter()
            .rev()
            .find(|r| r.manifest_path == l.m.path.display().to_string())
            .and_then(|r| r.nodes.get(address).cloned().map(|n| (r.id.clone(), n)))
    });
    // Where the node was last placed by an engine (`[execution]`), live while an apply runs.
    let placement = l.store.as_ref().and_then(|s| {
        s.runs()
            .into_iter()
            .rev()
            .filter(|r| r.manifest_path == l.m.path.display().to_string())
            .find_map(|r| {
                r.placements
                    .get(address)
                    .cloned()
                    .map(|p| (r.id.clone(), p))
            })
    });
    let record = node.state.record();
    let files: BTreeMap<&str, String> = match (record, &l.store) {
        (Some(r), Some(s)) => r
            .blobs
            .iter()
            .map(|(name, d)| {
                let path = crate::types::Digest::parse(d)
                    .map_or_else(|e| e.to_string(), |d| s.blob_path(&d).display().to_string());
                (name.as_str(), path)
            })
            .collect(),
        _ => BTreeMap::new(),
    };
    let inputs = node_inputs(l.store.as_ref(), node);
    let attempts = match (record, &l.store) {
        (Some(r), Some(s)) => attempts_of(s, r),
        _ => None,
    };
    let doc = serde_json::json!({
        "address": node.address,
        "stage": node.stage,
        "state": state,
        "key": node.key,
        "last_apply": last.as_ref().map(|(id, n)| serde_json::json!({
            "run": id, "status": n.status, "error": n.error,
        })),
        "placement": placement.as_ref().map(|(id, p)| serde_json::json!({
            "run": id, "placement": p,
        })),
        "result": record.map(|r| run::describe_record(r)),
        "started_at": record.map(|r| r.started_at.clone()),
        "duration_ms": record.map(|r| r.duration_ms),
        "files": files,
        "attempts": attempts,
        "inputs": inputs,
    });
    if json {
        println!("{}", serde_json::to_string_pretty(&doc).expect("json"));
        return Ok(exit_codes::OK);
    }
    println!("node {} (stage {})", node.address, node.stage);
    println!("  state: {state}");
    if let Some(k) = &node.key {
        println!("  key: {k}");
    }
    if let Some((id, n)) = &last {
        let status = serde_json::to_value(n.status)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        match &n.error {
            Some(e) => println!("  last apply {id}: {status}: {e}"),
            None => println!("  last apply {id}: {status}"),
        }
    }
    if let Some((id, p)) = &placement {
        println!("  placed by apply {id}: {}", p.describe());
    }
    if let Some(r) = record {
        println!(
            "  result: {} (started {}, {:.1} s)",
            run::describe_record(r),
            r.started_at,
            r.duration_ms as f64 / 1000.0
        );
    }
    for (name, path) in &files {
        println!("  {name}: {path}");
    }
    if let Some(a) = &attempts {
        print_attempts(a);
    }
    if let Some(i) = &inputs {
        println!("  inputs:");
        for line in serde_json::to_string_pretty(i).expect("json").lines() {
            println!("    {line}");
        }
    }
    Ok(exit_codes::OK)
}

/// The attempts of a node `apply --rerun` ran again (oldest first, the last its current
/// result), or why they cannot be read; `None` when it ran once.
fn attempts_of(store: &Store, current: &crate::store::ActionRecord) -> Option<serde_json::Value> {
    let all = match store.attempts_before(current) {
        Ok(all) => all?,
        Err(e) => return Some(serde_json::json!({ "error": e.to_string() })),
    };
    let mut list = Vec::new();
    for (i, a) in all.earlier.iter().enumerate() {
        list.push(serde_json::json!({
            "attempt": i + 1,
            "outcome": a.outcome,
            "result": run::describe_record(&a.record),
            "started_at": a.record.started_at,
            "grade_key": a.grade_key,
            "replaced_by": a.replaced_by,
        }));
    }
    list.push(serde_json::json!({
        "attempt": all.earlier.len() + 1,
        "outcome": "counts",
        "result": run::describe_record(current),
        "started_at": current.started_at,
    }));
    Some(serde_json::Value::Array(list))
}

fn print_attempts(a: &serde_json::Value) {
    let Some(list) = a.as_array() else {
        println!("  attempts: {}", a["error"].as_str().unwrap_or_default());
        return;
    };
    println!("  attempts: {} (the latest counts)", list.len());
    for x in list {
        let mut line = format!(
            "    {}: {} ({}, started {})",
            x["attempt"],
            x["outcome"].as_str().unwrap_or_default(),
            x["result"].as_str().unwrap_or_default(),
            x["started_at"].as_str().unwrap_or_default()
        );
        if let Some(r) = x.get("replaced_by") {
            let ms = r["timeout_ms"].as_u64().unwrap_or_default();
            line.push_str(&format!(
                "; rerun by apply {} (--rerun {}, deadline {})",
                r["run_id"].as_str().unwrap_or_default(),
                r["selected_by"].as_str().unwrap_or_default(),
                humantime::format_duration(std::time::Duration::from_millis(ms))
            ));
        }
        println!("{line}");
    }
}

pub(super) fn status(cli: &Cli, file: &Path, json: bool) -> Result<u8, Report> {
    let loaded = load_for_reading(&cli.store, file)?;
    let graph = planned(&loaded)?;
    let (m, store_root, store) = (&loaded.m, &loaded.store_root, &loaded.store);
    let last_run = store.as_ref().and_then(|s| {
        s.runs()
            .into_iter()
            .rev()
            .find(|r| r.manifest_path == m.path.display().to_string())
    });
    // A run still marked running is either the apply holding the store's lock, or dead.
    let live = store
        .as_ref()
        .and_then(|s| crate::store::StoreLock::holder(s.root()));
    let run_state = |r: &crate::store::RunRecord| -> String {
        match r.status {
            crate::store::RunStatus::Running
                if live
                    .as_ref()
                    .is_some_and(|h| h.pid == r.pid && h.host == r.host) =>
            {
                "running".into()
            }
            crate::store::RunStatus::Running => {
                "died (killed before it finished; its completed work is kept)".into()
            }
            other => serde_json::to_value(other)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
        }
    };
    let mut rows = Vec::new();
    for stage in &m.stage_order {
        let (mut done, mut failed, mut pending) = (0, 0, 0);
        let mut failures = Vec::new();
        for id in graph.stage_nodes(stage) {
            let n = &graph.nodes[*id];
            match &n.state {
                NodeState::Cached(_) | NodeState::Done(_) => done += 1,
                _ => {
                    let f = last_run
                        .as_ref()
                        .and_then(|r| r.nodes.get(&n.address))
                        .filter(|rn| rn.status == crate::store::NodeStatus::Failed);
                    match f {
                        Some(rn) => {
                            failed += 1;
                            failures
                                .push(serde_json::json!({"address": n.address, "error": rn.error}));
                        }
                        None => pending += 1,
                    }
                }
            }
        }
        let report = match &m.stages[stage].kind {
            StageKind::Report(r) if r.out.join("report.md").is_file() => {
                Some(r.out.join("report.md").display().to_string())
            }
            _ => None,
        };
        rows.push(serde_json::json!({
            "stage": stage, "kind": m.stages[stage].kind.name(),
            "done": done, "failed": failed, "pending": pending,
            "failures": failures, "report": report,
        }));
    }
    let doc = serde_json::json!({
        "manifest": m.path.display().to_string(),
        "store": store_root.display().to_string(),
        "last_run": last_run.as_ref().map(|r| serde_json::json!({"id": r.id, "status": run_state(r), "started_at": r.started_at, "ended_at": r.ended_at})),
        "stages": rows,
    });
    if json {
        println!("{}", serde_json::to_string_pretty(&doc).expect("json"));
    } else {
        println!("status of {} (store {})", m.name, store_root.display());
        if let Some(r) = &last_run {
            println!("  last apply {} {} ({})", r.id, run_state(r), r.started_at);
        } else {
            println!("  never applied on this store");
        }
        for row in doc["stages"].as_array().expect("rows") {
            println!(
                "  {:<12} {:<7} done {:>6}   failed {:>6}   pending {:>6}",
                row["stage"].as_str().unwrap_or(""),
                row["kind"].as_str().unwrap_or(""),
                row["done"].as_u64().unwrap_or(0),
                row["failed"].as_u64().unwrap_or(0),
                row["pending"].as_u64().unwrap_or(0)
            );
            for f in row["failures"].as_array().into_iter().flatten() {
                println!(
                    "      failed {}: {}",
                    f["address"].as_str().unwrap_or(""),
                    f["error"].as_str().unwrap_or("")
                );
            }
            if let Some(r) = row["report"].as_str() {
                println!("      report: {r}");
            }
        }
    }
    Ok(exit_codes::OK)
}
