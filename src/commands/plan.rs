//! `bench plan`: what an apply would run and why, with the power of the comparison.

use std::path::Path;

use miette::{Report, miette};

use crate::cli::Cli;
use crate::events::Events;
use crate::exit_codes;
use crate::manifest::{self};
use crate::run;
use crate::run::sequence::docker_runtime;

use super::{Loaded, load_for_reading};

/// A number of percent (or percentage points) from the command line: `5pts`, `5pt`, `5%`, `5`.
pub(super) fn percent_arg(flag: &str, text: &str, units: &[&str]) -> Result<f64, Report> {
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
pub(super) fn power_query(
    detect: Option<&str>,
    rate: Option<&str>,
) -> Result<run::PowerQuery, Report> {
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

/// `--rerun` (with `--timeout`): the stored pairs the manifest's last apply left that would run
/// again (none without a store).
fn reruns(
    m: &crate::manifest::Manifest,
    store: Option<&crate::store::Store>,
    rerun: Option<(&str, Option<&str>)>,
) -> Result<std::collections::HashMap<String, crate::graph::RerunOf>, Report> {
    let Some((words, timeout)) = rerun else {
        return Ok(Default::default());
    };
    let spec = run::RerunSpec::parse(words, timeout, m).map_err(|e| miette!("{e}"))?;
    Ok(store
        .map(|s| spec.select(s, &s.load_index(&m.path), m))
        .unwrap_or_default())
}

pub(super) fn plan(
    cli: &Cli,
    file: &Path,
    explain: bool,
    json: bool,
    power: run::PowerQuery,
    rerun: Option<(&str, Option<&str>)>,
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
    let opts = run::PlanOptions {
        unavailable: unavailable.clone(),
        explain,
        power,
        rerun: reruns(m, store.as_ref(), rerun)?,
    };
    let mut report =
        run::plan(m, store.as_ref(), datasets, opts, remote).map_err(|e| miette!("{e}"))?;
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
        print_plan(&report, m, store_root, explain, power);
    }
    Ok(if report.pending() {
        exit_codes::PENDING
    } else {
        exit_codes::OK
    })
}

/// Prints a plan as text: a line per stage with what it would run, what is cached (and served
/// by the remote cache) and what is orphaned; then notes, spend, power and images; with
/// `explain`, each node to run with its reasons and each orphaned record; last, the total.
fn print_plan(
    report: &run::PlanReport,
    m: &manifest::Manifest,
    store_root: &Path,
    explain: bool,
    power: run::PowerQuery,
) {
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
        println!("  note: no power figures: the report stage has no `baseline` to compare with");
    }
    print_images(report);
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

/// Prints the agent images a plan would build (or finds) and the task images it would pull,
/// with their compressed sizes or why the registry could not say.
fn print_images(report: &run::PlanReport) {
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
}
