//! `bench gc`: what the store holds that no kept manifest or run needs, and its removal.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use miette::{Report, miette};

use crate::cli::Cli;
use crate::exit_codes;
use crate::run;
use crate::run::sequence::docker_runtime;
use crate::store::{GcReport, Store, StoreLock, default_store_path};

use super::load;

pub(super) fn gc(
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
        .filter_map(|f| fs_err::canonicalize(f).ok())
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
    print_report(&report, image_report.as_ref(), &notes, delete, json);
    Ok(
        if image_report.as_ref().is_some_and(|i| !i.errors.is_empty()) {
            exit_codes::ERROR
        } else {
            exit_codes::OK
        },
    )
}

/// Prints what `bench gc` removed (or, without `delete`, would remove): the store's records and
/// blobs and, when images were collected, the images. With `json`, one JSON object on stdout;
/// otherwise a line per image and totals, with `notes` and image errors on stderr.
fn print_report(
    report: &GcReport,
    image_report: Option<&run::images::ImageGcReport>,
    notes: &[String],
    delete: bool,
    json: bool,
) {
    if json {
        let mut v = serde_json::to_value(report).expect("json");
        if let Some(i) = image_report {
            v["images"] = serde_json::to_value(i).expect("json");
        }
        println!("{}", serde_json::to_string_pretty(&v).expect("json"));
    } else {
        for n in notes {
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
        if let Some(i) = image_report {
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
}

pub(super) fn short_id(id: &str) -> &str {
    let h = id.strip_prefix("sha256:").unwrap_or(id);
    &h[..12.min(h.len())]
}
