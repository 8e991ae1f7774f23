//! The commands: each loads what it needs, calls the library, prints data on stdout and
//! diagnostics on stderr, and returns an exit code (see `exit_codes.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use miette::{GraphicalReportHandler, GraphicalTheme, IntoDiagnostic, Report, miette};

use crate::cli::{Cli, Command};
use crate::events::{Events, Format, Reporter};
use crate::exit_codes;
use crate::graph::{Graph, Mode, NodeState};
use crate::manifest::{self, Manifest, StageKind};
use crate::run;
use crate::run::sequence::{docker_runtime, fetch_error, prepare_images, resolve_images};
use crate::store::{Store, StoreLock, default_store_path};

mod cache_commands;
mod worker;

/// Prints an error with miette: colours and unicode on a terminal, plain text otherwise.
pub fn print_error(report: &Report) {
    let tty = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let theme = if tty {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let mut out = String::new();
    let handler = GraphicalReportHandler::new_themed(theme).with_width(100);
    if handler.render_report(&mut out, report.as_ref()).is_err() {
        out = format!("{report:?}");
    }
    eprint!("{out}");
}

fn load(file: &Path) -> Result<Manifest, Report> {
    manifest::load(file).map_err(Report::new)
}

fn store_path(cli_store: &Option<PathBuf>, m: &Manifest) -> PathBuf {
    cli_store
        .clone()
        .unwrap_or_else(|| default_store_path(&m.dir))
}

/// Runs a command.
pub fn run(cli: Cli) -> Result<u8, Report> {
    match &cli.command {
        Command::Validate { file } => {
            let m = load(file)?;
            println!(
                "{}: valid ({} stages, {} teams)",
                file.display(),
                m.stages.len(),
                m.teams.len()
            );
            Ok(exit_codes::OK)
        }
        Command::Schema { report, events } => {
            if *events {
                print!("{}", crate::events::events_schema_text());
            } else if *report {
                print!("{}", crate::report::document::report_schema_text());
            } else {
                print!("{}", manifest::manifest_schema_text());
            }
            Ok(exit_codes::OK)
        }
        Command::Report { files, json } => compare_reports(&cli, files, *json),
        Command::Plan {
            file,
            explain,
            json,
            detect,
            baseline_rate,
        } => {
            let power = power_query(detect.as_deref(), baseline_rate.as_deref())?;
            plan(&cli, file, *explain, *json, power)
        }
        Command::Apply {
            file,
            quiet,
            verify,
            strict,
            message_format,
        } => {
            let format = match message_format {
                crate::cli::MessageFormat::Human => Format::Human,
                crate::cli::MessageFormat::Json => Format::Json,
            };
            run::sequence::apply_manifest(
                cli.store.as_deref(),
                file,
                Events::new(Reporter::new(format, *quiet)),
                *verify,
                *strict,
            )
        }
        Command::Verify { file } => verify(&cli, file),
        Command::Status {
            file,
            node: Some(address),
            json,
        } => status_node(&cli, file, address, *json),
        Command::Status { file, json, .. } => status(&cli, file, *json),
        Command::Gc {
            files,
            delete,
            keep_runs,
            images,
            pulled,
            json,
        } => gc(
            &cli,
            files,
            (*delete, *keep_runs),
            (*images, *pulled),
            *json,
        ),
        Command::Pull { file, quiet } => pull(&cli, file, *quiet),
        Command::Tasks { file, json } => tasks(&cli, file, *json),
        Command::Export { file, teams, out } => export(&cli, file, teams, out.as_deref()),
        Command::Clean { file } => clean(file.as_deref()),
        Command::Mine {
            repo,
            since,
            grep,
            out,
            limit,
            timeout,
        } => mine(repo, since.as_deref(), grep, out, *limit, timeout),
        Command::ParseLog {
            parser,
            script,
            file,
        } => parse_log(parser.as_deref(), script.as_deref(), file),
        Command::Cache { action } => cache_commands::run(&cli, action),
        Command::Worker { .. } => worker::run(&cli.command),
        Command::View {
            target,
            port,
            static_dir,
            compare,
        } => crate::view::command(
            cli.store.as_deref(),
            target,
            compare.as_deref(),
            *port,
            static_dir.as_deref(),
        ),
    }
}

/// What every command that reads results works from: the manifest with its backend facts
/// resolved (docker image IDs), its store (if one exists), and its datasets.
struct Loaded {
    m: Manifest,
    store_root: PathBuf,
    store: Option<Store>,
    datasets: BTreeMap<String, crate::tasks::TaskSet>,
    unavailable: Vec<String>,
}

/// Loads a manifest, opens its existing store, reads its datasets (without fetching) and
/// resolves its backend facts: the same for plan, status, report, export and gc, so all of
/// them compute the keys apply computes.
fn load_for_reading(cli_store: &Option<PathBuf>, file: &Path) -> Result<Loaded, Report> {
    let mut m = load(file)?;
    let store_root = store_path(cli_store, &m);
    let store = Store::open_existing(&store_root);
    let (datasets, unavailable) =
        run::load_datasets(&m, store.as_ref(), false).map_err(|e| miette!("{e}"))?;
    resolve_images(&mut m, &datasets, &Events::default())?;
    Ok(Loaded {
        m,
        store_root,
        store,
        datasets,
        unavailable,
    })
}

/// A graph of `l` in plan mode, expanded as far as the store allows.
fn planned<'a>(l: &'a Loaded) -> Result<Graph<'a>, Report> {
    let mut graph =
        Graph::new(&l.m, l.store.as_ref(), &l.datasets, Mode::Plan).map_err(|e| miette!("{e}"))?;
    while !graph.advance().is_empty() {}
    Ok(graph)
}

/// A number of percent (or percentage points) from the command line: `5pts`, `5pt`, `5%`, `5`.
fn percent_arg(flag: &str, text: &str, units: &[&str]) -> Result<f64, Report> {
    let trimmed = text.trim();
    let number = units
        .iter()
        .find_map(|u| trimmed.strip_suffix(u))
        .unwrap_or(trimmed)
        .trim();
    match number.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x < 100.0 => Ok(x / 100.0),
        _ => Err(miette::miette!(
            code = "bench::cli::percent",
            help = format!(
                "give a number between 0 and 100, e.g. `{flag} 5{}`",
                units[0]
            ),
            "`{flag} {text}` is not a number of {} between 0 and 100",
            if units[0] == "pts" {
                "percentage points"
            } else {
                "percent"
            }
        )),
    }
}

/// The power question of `bench plan` from `--detect` and `--baseline-rate`.
fn power_query(detect: Option<&str>, rate: Option<&str>) -> Result<run::PowerQuery, Report> {
    let mut q = run::PowerQuery::default();
    if let Some(d) = detect {
        q.detect = Some(percent_arg("--detect", d, &["pts", "pt", "points", "%"])?);
    }
    if let Some(r) = rate {
        q.baseline_rate = percent_arg("--baseline-rate", r, &["%"])?;
        q.rate_given = true;
    }
    Ok(q)
}

fn plan(
    cli: &Cli,
    file: &Path,
    explain: bool,
    json: bool,
    power: run::PowerQuery,
) -> Result<u8, Report> {
    let loaded = load_for_reading(&cli.store, file)?;
    let Loaded {
        m,
        store_root,
        store,
        datasets,
        unavailable,
    } = &loaded;
    let remote = run::sequence::open_remote(m, false, &Events::default())?;
    let mut report = run::plan(
        m,
        store.as_ref(),
        datasets,
        unavailable.clone(),
        explain,
        power,
        remote.as_deref(),
    )
    .map_err(|e| miette!("{e}"))?;
    if !report.agent_images.is_empty() {
        // An agent image exists when the backend has it (a pool: a reachable host).
        let refs = report
            .agent_images
            .iter()
            .map(|i| i.image.clone())
            .collect();
        let present = docker_runtime()?
            .block_on(crate::backend::images_present(
                &run::backend_config(m),
                &refs,
            ))
            .map_err(|e| miette!("{e}"))?;
        for i in &mut report.agent_images {
            i.exists = present.contains(&i.image);
        }
    }
    if run::backend_config(m).uses_images() {
        // Images the resolution did not find on the daemon: what their registries say.
        let missing: Vec<String> = run::images::image_refs(datasets)
            .into_iter()
            .filter(|r| !m.backend.images.contains_key(r))
            .collect();
        if !missing.is_empty() {
            report.images_to_pull = run::images::describe_pulls(&missing);
        }
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("plans serialize")
        );
    } else {
        println!("plan for {} (store {})", m.name, store_root.display());
        for s in &report.stages {
            let approx = if s.estimated && s.to_run > 0 {
                " (at most; depends on outcomes not known yet)"
            } else if s.estimated && s.to_run == 0 && s.cached == 0 {
                " (depends on upstream results)"
            } else {
                ""
            };
            let shared = if s.shared > 0 {
                format!(" (+{} sharing a run)", s.shared)
            } else {
                String::new()
            };
            let remote = if report.remote.is_some() {
                format!("   remote {:>6}", s.remote)
            } else {
                String::new()
            };
            println!(
                "  {:<12} {:<7} to run {:>6}   cached {:>6}{remote}   orphaned {:>6}{shared}{approx}",
                s.stage, s.kind, s.to_run, s.cached, s.orphaned
            );
        }
        for note in report.remote.iter().flat_map(|r| r.notes()) {
            println!("  {note}");
        }
        for r in &report.invalid_records {
            println!("  note: record {r}; removed, its node will run");
        }
        for b in &report.bad_blobs {
            println!("  note: {b}; the node that wrote it will run");
        }
        for d in &report.unavailable_datasets {
            let pin = match m.datasets.get(d).map(|ds| &ds.source) {
                Some(manifest::DatasetSource::Hub { repo, revision, .. }) => {
                    format!(" ({repo}@{revision})")
                }
                _ => String::new(),
            };
            println!(
                "  note: dataset `{d}`{pin} is not available on this machine; its sample cannot be computed (`bench tasks` or `bench apply` fetches it)"
            );
        }
        for line in run::spend::render(&report.spend) {
            println!("  {line}");
        }
        for line in report.power.iter().flat_map(run::PowerPlan::render) {
            println!("  {line}");
        }
        if report.power.is_none() && (power.detect.is_some() || power.rate_given) {
            println!(
                "  note: no power figures: the report stage has no `baseline` to compare with"
            );
        }
        for i in &report.agent_images {
            let base = i.base.strip_prefix("sha256:").unwrap_or(&i.base);
            println!(
                "  agent image {} (harness `{}` on {}): {}",
                i.image,
                i.harness,
                &base[..12.min(base.len())],
                if i.exists { "exists" } else { "to build" }
            );
        }
        for i in &report.images_to_pull {
            match (&i.digest, &i.error) {
                (_, Some(e)) => println!("  image to pull {}: {e}", i.image),
                (Some(d), None) => println!(
                    "  image to pull {} ({}, {})",
                    i.image,
                    d,
                    i.compressed_bytes
                        .map_or("size unknown".to_string(), |b| format!(
                            "{} compressed",
                            crate::backend::disk::human(b)
                        ))
                ),
                (None, None) => println!("  image to pull {}", i.image),
            }
        }
        if explain {
            for e in &report.to_run {
                println!("  + {}", e.address);
                for r in &e.reasons {
                    println!("      {r}");
                }
            }
            for o in &report.orphaned {
                println!("  - {o}: orphaned (`bench gc --delete` would remove it)");
            }
        }
        let total: usize = report.stages.iter().map(|s| s.to_run).sum();
        let served: usize = report.stages.iter().map(|s| s.remote).sum();
        if total == 0 && served > 0 {
            println!("nothing to run: everything is in the store or the remote cache");
        } else if total == 0 {
            println!("nothing to run: everything is in the store");
        } else {
            println!("{total} nodes to run");
        }
    }
    Ok(if report.pending() {
        exit_codes::PENDING
    } else {
        exit_codes::OK
    })
}

/// `bench verify`: the graph as `plan` expands it, every blob of every cached record it reaches
/// re-hashed.
fn verify(cli: &Cli, file: &Path) -> Result<u8, Report> {
    let l = load_for_reading(&cli.store, file)?;
    let Some(store) = l.store.as_ref() else {
        println!("no store at {}: nothing to verify", l.store_root.display());
        return Ok(exit_codes::OK);
    };
    let mut graph =
        Graph::new(&l.m, Some(store), &l.datasets, Mode::Plan).map_err(|e| miette!("{e}"))?;
    graph.verify_blobs = true;
    while !graph.advance().is_empty() {}
    let checked: std::collections::BTreeSet<crate::types::Digest> = graph
        .nodes
        .iter()
        .filter_map(|n| n.state.record())
        .flat_map(|r| r.blob_digests().unwrap_or_default())
        .collect();
    for (path, reason) in &graph.invalid {
        println!("record {}: {reason}; removed", path.display());
    }
    // One line per bad blob, however many cached results use it (the first to check it finds
    // what is wrong; it is removed, so the others find it missing).
    let mut bad_blobs: BTreeMap<&Path, (&str, usize)> = BTreeMap::new();
    for bad in &graph.bad_blobs {
        bad_blobs.entry(&bad.path).or_insert((&bad.problem, 0)).1 += 1;
    }
    for (path, (problem, users)) in &bad_blobs {
        let users = if *users > 1 {
            format!(" (used by {users} cached results)")
        } else {
            String::new()
        };
        println!("blob {} is {problem}{users}", path.display());
    }
    let bad = graph.invalid.len() + bad_blobs.len();
    println!(
        "{} blobs of cached results verified, {bad} bad{}",
        checked.len(),
        if bad > 0 {
            ": `bench apply` recomputes the nodes that wrote them"
        } else {
            ""
        }
    );
    Ok(if bad > 0 {
        exit_codes::PENDING
    } else {
        exit_codes::OK
    })
}

/// The job a node's key was computed from. A record read for planning is light (its job is
/// null): the job is read whole from the record file, else (no record) taken from the node as
/// it would run.
fn node_inputs(store: Option<&Store>, node: &crate::graph::Node) -> Option<serde_json::Value> {
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
fn no_such_node(graph: &Graph<'_>, file: &Path, address: &str) -> Report {
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
fn status_node(cli: &Cli, file: &Path, address: &str, json: bool) -> Result<u8, Report> {
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
    if let Some(i) = &inputs {
        println!("  inputs:");
        for line in serde_json::to_string_pretty(i).expect("json").lines() {
            println!("    {line}");
        }
    }
    Ok(exit_codes::OK)
}

fn status(cli: &Cli, file: &Path, json: bool) -> Result<u8, Report> {
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

fn gc(
    cli: &Cli,
    files: &[PathBuf],
    (delete, keep_runs): (bool, Option<usize>),
    (images, pulled): (bool, bool),
    json: bool,
) -> Result<u8, Report> {
    let store_root = match (&cli.store, files.first()) {
        (Some(s), _) => s.clone(),
        (None, Some(f)) => default_store_path(&load(f)?.dir),
        // No manifest: the store of the manifests in this directory.
        (None, None) => default_store_path(Path::new(".")),
    };
    let Some(store) = Store::open_existing(&store_root) else {
        if cli.store.is_none() && files.is_empty() {
            // Nothing to collect is not an error (the README's table: gc exits 0).
            if json {
                println!(
                    "{}",
                    serde_json::json!({"store": store_root.display().to_string(), "exists": false})
                );
            } else {
                println!(
                    "no store at {}: nothing to collect (name a manifest, or pass --store)",
                    store_root.display()
                );
            }
            return Ok(exit_codes::OK);
        }
        return Err(miette!("{} is not a bench store", store_root.display()));
    };
    let _lock = if delete {
        Some(StoreLock::acquire(&store_root, "bench gc --delete").map_err(|e| miette!("{e}"))?)
    } else {
        None
    };
    let mut manifests: BTreeSet<PathBuf> = files
        .iter()
        .filter_map(|f| std::fs::canonicalize(f).ok())
        .collect();
    let runs = store.runs();
    manifests.extend(runs.iter().map(|r| PathBuf::from(&r.manifest_path)));
    let keep = keep_runs.map_or(run::retention::KeepRuns::PerManifest, |n| {
        run::retention::KeepRuns::All(n)
    });
    let run::retention::Reachable {
        keys: reachable,
        images: reachable_images,
        docker_host,
        notes,
    } = run::retention::reachable(&store, &manifests, &runs, keep)?;
    // Files of pinned Hub datasets (datasets/*.json) are inputs, not results: kept.
    let pinned = crate::datasets::hub::pinned_blobs(&store);
    let report =
        crate::store::gc(&store, &reachable, pinned, !delete).map_err(|e| miette!("{e}"))?;
    let image_report = if images {
        Some(
            docker_runtime()?
                .block_on(async {
                    let d = crate::backend::docker::DockerHost::connect(docker_host.as_deref())
                        .await
                        .map_err(run::images::PrepareError::Docker)?;
                    run::images::gc_images(&d, Some(&store), &reachable_images, pulled, !delete)
                        .await
                })
                .map_err(|e| miette!("{e}"))?,
        )
    } else {
        None
    };
    if json {
        let mut v = serde_json::to_value(&report).expect("json");
        if let Some(i) = &image_report {
            v["images"] = serde_json::to_value(i).expect("json");
        }
        println!("{}", serde_json::to_string_pretty(&v).expect("json"));
    } else {
        for n in &notes {
            eprintln!("note: {n}");
        }
        let verb = if delete { "removed" } else { "would remove" };
        println!(
            "{verb} {} action records and {} blobs ({} bytes); keeping {} records and {} blobs",
            report.removed_actions.len(),
            report.removed_blobs.len(),
            report.removed_bytes,
            report.kept_actions,
            report.kept_blobs
        );
        let mut images_pending = false;
        if let Some(i) = &image_report {
            for (kind, list) in [("built", &i.built), ("pulled", &i.pulled)] {
                for img in list {
                    println!(
                        "{verb} {kind} image {} ({}, {})",
                        img.references.join(" "),
                        short_id(&img.id),
                        crate::backend::disk::human(img.size_bytes)
                    );
                }
            }
            for id in &i.kept_pulled {
                println!(
                    "keeping pulled image {} (a recorded manifest uses it)",
                    short_id(id)
                );
            }
            for e in &i.errors {
                eprintln!("note: {e}");
            }
            println!(
                "{verb} {} built and {} pulled images ({})",
                i.built.len(),
                i.pulled.len(),
                crate::backend::disk::human(i.removed_bytes)
            );
            images_pending = !(i.built.is_empty() && i.pulled.is_empty());
        }
        if !delete
            && (images_pending
                || !(report.removed_actions.is_empty() && report.removed_blobs.is_empty()))
        {
            println!("dry run: pass --delete to remove them");
        }
    }
    Ok(
        if image_report.as_ref().is_some_and(|i| !i.errors.is_empty()) {
            exit_codes::ERROR
        } else {
            exit_codes::OK
        },
    )
}

fn short_id(id: &str) -> &str {
    let h = id.strip_prefix("sha256:").unwrap_or(id);
    &h[..12.min(h.len())]
}

fn pull(cli: &Cli, file: &Path, quiet: bool) -> Result<u8, Report> {
    let m = load(file)?;
    if !run::backend_config(&m).uses_images() {
        println!(
            "{}: the local backend uses no images; nothing to pull",
            file.display()
        );
        return Ok(exit_codes::OK);
    }
    let store_root = store_path(&cli.store, &m);
    let store = Store::open(&store_root)
        .map_err(|e| miette!("cannot open the store {}: {e}", store_root.display()))?;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let _lock = StoreLock::acquire(&store_root, &command).map_err(|e| {
        miette!(
            help = "wait for it to finish, or use another store with --store",
            "{e}"
        )
    })?;
    let (datasets, unavailable) =
        run::load_datasets(&m, Some(&store), true).map_err(fetch_error)?;
    if !unavailable.is_empty() {
        return Err(miette!(
            "datasets {} could not be loaded: their tasks' images are unknown",
            unavailable.join(", ")
        ));
    }
    let p = prepare_images(
        &m,
        &datasets,
        &store,
        run::images::DiskScope::PullsOnly,
        &Events::new(Reporter::new(Format::Human, quiet)),
    )?;
    for x in &p.pulled {
        println!(
            "pulled {} ({}) as {}: {} downloaded",
            x.reference,
            x.digest,
            x.id,
            crate::backend::disk::human(x.downloaded)
        );
    }
    println!(
        "{} images pulled, {} already on the daemon",
        p.pulled.len(),
        p.present
    );
    Ok(exit_codes::OK)
}

// ---- docker backend (issue 3) ----

fn clean(file: Option<&Path>) -> Result<u8, Report> {
    let (host, hosts) = match file {
        Some(f) => {
            let m = load(f)?;
            (m.backend.host, m.backend.hosts)
        }
        None => (None, Vec::new()),
    };
    if !hosts.is_empty() {
        let (removed, errors) = docker_runtime()?
            .block_on(crate::backend::pool::clean(&hosts))
            .map_err(|e| miette!("{e}"))?;
        for n in &removed {
            println!("removed {n}");
        }
        println!(
            "{} bench containers and networks removed on {} hosts",
            removed.len(),
            hosts.len() - errors.len()
        );
        if !errors.is_empty() {
            return Err(miette!(
                "some hosts could not be cleaned:\n  {}",
                errors.join("\n  ")
            ));
        }
        return Ok(exit_codes::OK);
    }
    let removed = docker_runtime()?.block_on(async {
        let d = crate::backend::docker::DockerHost::connect(host.as_deref()).await?;
        let mut removed = Vec::new();
        for (id, name, _) in d.list(&[]).await? {
            d.remove(&id).await?;
            removed.push(name);
        }
        Ok::<_, String>(removed)
    });
    let removed = removed.map_err(|e| miette!("{e}"))?;
    for n in &removed {
        println!("removed {n}");
    }
    println!("{} bench containers removed", removed.len());
    Ok(exit_codes::OK)
}

// ---- end docker backend ----

/// One sample stage as `bench tasks` lists it (fields in the order of the JSON output).
#[derive(serde::Serialize)]
struct StageListing<'a> {
    by_language: BTreeMap<&'a str, usize>,
    by_month: BTreeMap<&'a str, usize>,
    dataset: &'a str,
    stage: &'a str,
    tasks: Vec<TaskListing<'a>>,
}

#[derive(serde::Serialize)]
struct TaskListing<'a> {
    created_at: &'a str,
    instance_id: &'a str,
    language: Option<&'a str>,
    repo: &'a str,
}

fn tasks(cli: &Cli, file: &Path, json: bool) -> Result<u8, Report> {
    let m = load(file)?;
    // Hub datasets are fetched into the store (no Docker, no credentials needed for public ones).
    let needs_store = m
        .datasets
        .values()
        .any(|d| matches!(d.source, manifest::DatasetSource::Hub { .. }));
    let store_root = store_path(&cli.store, &m);
    let store = if needs_store {
        Some(
            Store::open(&store_root)
                .map_err(|e| miette!("cannot open the store {}: {e}", store_root.display()))?,
        )
    } else {
        None
    };
    let samples: Vec<(&str, &manifest::SampleStage)> = m
        .stages_of(crate::manifest::StageKindName::Sample)
        .filter_map(|stage| match &stage.kind {
            StageKind::Sample(s) => Some((stage.name.as_str(), s)),
            _ => None,
        })
        .collect();
    // Only the listing fields are read, and only of rows some sample stage keeps: nothing
    // here is keyed, so no task set (digests, snapshot) is built.
    let mut filters: BTreeMap<&str, Vec<crate::tasks::Filter<'_>>> = BTreeMap::new();
    for (_, s) in &samples {
        filters
            .entry(s.dataset.as_str())
            .or_default()
            .push(crate::tasks::Filter::new(&s.filters));
    }
    let keep = |dataset: &str, row: &crate::tasks::SampleRow<'_>| {
        filters
            .get(dataset)
            .is_some_and(|fs| fs.iter().any(|f| f.keeps(row)))
    };
    let (datasets, unavailable) =
        run::load_summaries(&m, store.as_ref(), true, &keep).map_err(fetch_error)?;
    let mut out = Vec::new();
    for (stage, s) in samples {
        let Some(rows) = datasets.get(&s.dataset) else {
            return Err(miette!(
                "dataset `{}` is not available on this machine ({})",
                s.dataset,
                unavailable.join(", ")
            ));
        };
        let by_id: std::collections::HashMap<&str, &crate::datasets::TaskSummary> =
            rows.iter().map(|t| (t.instance_id.as_str(), t)).collect();
        let ids = crate::tasks::sample_rows(rows.iter().map(|t| t.row()), &s.filters);
        let mut listing = StageListing {
            by_language: BTreeMap::new(),
            by_month: BTreeMap::new(),
            dataset: &s.dataset,
            stage,
            tasks: Vec::with_capacity(ids.len()),
        };
        for id in ids {
            let t = by_id[id];
            *listing
                .by_language
                .entry(t.language.as_deref().unwrap_or("(none)"))
                .or_default() += 1;
            let month = t
                .created_at
                .char_indices()
                .nth(7)
                .map_or(t.created_at.as_str(), |(i, _)| &t.created_at[..i]);
            *listing.by_month.entry(month).or_default() += 1;
            listing.tasks.push(TaskListing {
                created_at: &t.created_at,
                instance_id: &t.instance_id,
                language: t.language.as_deref(),
                repo: &t.repo,
            });
        }
        out.push(listing);
    }
    let mut stdout = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    if json {
        // Written as it renders: a listing of every row of a big dataset is never one string.
        serde_json::to_writer_pretty(&mut stdout, &out)
            .map_err(std::io::Error::from)
            .into_diagnostic()?;
        writeln!(stdout).into_diagnostic()?;
    } else {
        for s in &out {
            writeln!(
                stdout,
                "stage {} (dataset {}): {} tasks",
                s.stage,
                s.dataset,
                s.tasks.len()
            )
            .into_diagnostic()?;
            for t in &s.tasks {
                writeln!(
                    stdout,
                    "  {:<40} {:<28} {:<10} {}",
                    t.instance_id,
                    t.repo,
                    t.language.unwrap_or("-"),
                    t.created_at
                )
                .into_diagnostic()?;
            }
            let langs: Vec<String> = s
                .by_language
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            let months: Vec<String> = s.by_month.iter().map(|(k, v)| format!("{k} {v}")).collect();
            writeln!(stdout, "  per language: {}", langs.join(", ")).into_diagnostic()?;
            writeln!(stdout, "  per month: {}", months.join(", ")).into_diagnostic()?;
        }
    }
    stdout.flush().into_diagnostic()?;
    Ok(exit_codes::OK)
}

fn export(cli: &Cli, file: &Path, teams: &[String], out: Option<&Path>) -> Result<u8, Report> {
    use crate::datasets::predictions::{by_team, to_jsonl};
    use crate::graph::export::export_predictions;
    let loaded = load_for_reading(&cli.store, file)?;
    let m = &loaded.m;
    if let Some(t) = teams.iter().find(|t| !m.teams.contains_key(*t)) {
        return Err(miette!(
            help = format!(
                "teams of {}: {}",
                file.display(),
                m.teams.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            "no team `{t}` in {}",
            file.display()
        ));
    }
    let store = loaded.store.as_ref().ok_or_else(|| {
        miette!(
            "{} is not a bench store: apply first",
            loaded.store_root.display()
        )
    })?;
    let preds = export_predictions(m, store, &loaded.datasets).map_err(|e| miette!("{e}"))?;
    let mut groups = by_team(preds);
    if !teams.is_empty() {
        groups.retain(|t, _| teams.contains(t));
        for t in teams {
            groups.entry(t.clone()).or_default();
        }
    }
    if groups.len() <= 1 {
        let preds = groups.into_values().next().unwrap_or_default();
        let text = to_jsonl(&preds);
        match out {
            Some(p) => {
                crate::store::write_atomic(p, text.as_bytes()).into_diagnostic()?;
                eprintln!("wrote {} predictions to {}", preds.len(), p.display());
            }
            None => print!("{text}"),
        }
        return Ok(exit_codes::OK);
    }
    // Several teams: one file each (an evaluator keeps one prediction per instance).
    let dir = match out {
        Some(d) => d.to_path_buf(),
        None => m
            .path
            .parent()
            .unwrap_or(Path::new("."))
            .join("predictions")
            .join(&m.name),
    };
    fs_err::create_dir_all(&dir).into_diagnostic()?;
    for (team, preds) in &groups {
        let p = dir.join(format!("{team}.jsonl"));
        crate::store::write_atomic(&p, to_jsonl(preds).as_bytes()).into_diagnostic()?;
        println!("{}", p.display());
        eprintln!(
            "wrote {} predictions of team {team} to {}",
            preds.len(),
            p.display()
        );
    }
    Ok(exit_codes::OK)
}

fn parse_log(parser: Option<&str>, script: Option<&Path>, file: &Path) -> Result<u8, Report> {
    crate::timings::mark("start");
    match (parser, script) {
        (Some(p), None) => {
            // Line-local parsers read the file in chunks (a big one in a piece per core); the
            // JSON is written as it renders.
            let f = fs_err::File::open(file).into_diagnostic()?;
            let size = f.metadata().map_or(0, |m| m.len());
            let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            crate::parsers::write_log_json(p, f.file(), size, None, &mut out).map_err(
                |e| match e {
                    crate::parsers::ReadLogError::Parser(_) => miette!(
                        help = format!(
                            "built-in parsers: {}",
                            crate::parsers::builtin_parser_names().join(", ")
                        ),
                        "{e}"
                    ),
                    _ => miette!("{e}"),
                },
            )?;
            std::io::Write::flush(&mut out).into_diagnostic()?;
        }
        (None, Some(s)) => {
            let bytes = fs_err::read(file).into_diagnostic()?;
            // Valid UTF-8 (the usual case) is taken as is, without the slower lossy pass.
            let log = match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            };
            let source = fs_err::read_to_string(s).into_diagnostic()?;
            let raw = crate::parsers::run_script_parser(&source, &log, &Default::default())
                .map_err(|e| miette!("parser script {} failed: {e}", s.display()))?;
            let statuses = raw
                .iter()
                .map(|(k, v)| (k.clone(), crate::protocols::script_status(v)))
                .collect();
            println!("{}", crate::parsers::statuses_to_json(&statuses));
        }
        _ => {
            return Err(miette!(
                help = "e.g. bench parse-log --parser pytest test.log",
                "give --parser NAME or --script FILE"
            ));
        }
    }
    Ok(exit_codes::OK)
}

/// `bench report A.toml B.toml ...`: stored results side by side (plan mode: runs nothing).
fn compare_reports(cli: &Cli, files: &[PathBuf], json: bool) -> Result<u8, Report> {
    use crate::report::compare::{Experiment, compare, render};
    let mut experiments = Vec::new();
    for file in files {
        let loaded = load_for_reading(&cli.store, file)?;
        let graph = planned(&loaded)?;
        let m = &loaded.m;
        let Some((stage, r)) = m.stage_order.iter().find_map(|s| match &m.stages[s].kind {
            StageKind::Report(r) => Some((&m.stages[s], r)),
            _ => None,
        }) else {
            return Err(miette!("{} has no report stage", file.display()));
        };
        let inputs = crate::graph::report_inputs(&graph, &stage.needs, r).priced();
        experiments.push(Experiment {
            label: m.name.clone(),
            path: file.display().to_string(),
            resolved: m.resolved.clone(),
            teams: inputs.teams,
            baseline: inputs.baseline,
            count_errors_as_failures: inputs.count_errors_as_failures,
            pairs: inputs.pairs,
        });
    }
    // Distinct labels: the manifest name, or the path when names repeat.
    let names: Vec<String> = experiments.iter().map(|e| e.label.clone()).collect();
    for e in &mut experiments {
        if names.iter().filter(|n| **n == e.label).count() > 1 {
            e.label = e.path.clone();
        }
    }
    let c = compare(&experiments);
    if c.common_tasks.is_empty() {
        eprintln!(
            "note: no task has a stored result for every team of every manifest (run `bench apply` on each first)"
        );
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&c).expect("json"));
    } else {
        print!("{}", render(&c));
    }
    Ok(exit_codes::OK)
}

/// `bench mine`: progress on stderr, the summary of every candidate on stdout.
fn mine(
    repo: &Path,
    since: Option<&str>,
    grep: &str,
    out: &Path,
    limit: Option<usize>,
    timeout: &str,
) -> Result<u8, Report> {
    let since = since
        .map(crate::mine::parse_since)
        .transpose()
        .map_err(|e| miette!("bad --since: {e}"))?;
    let timeout = humantime::parse_duration(timeout)
        .map_err(|e| miette!("bad --timeout `{timeout}`: {e} (e.g. `10m`, `90s`)"))?;
    if limit == Some(0) {
        return Err(miette!("bad --limit: 0 keeps no task; give 1 or more"));
    }
    let opts = crate::mine::MineOptions {
        repo: repo.to_path_buf(),
        since,
        grep: grep.to_string(),
        out: out.to_path_buf(),
        limit,
        timeout,
    };
    let judged =
        crate::mine::mine(&opts, &|line| eprintln!("{line}")).map_err(|e| miette!("{e}"))?;
    print!("{}", crate::mine::summary(&judged, out));
    Ok(exit_codes::OK)
}
