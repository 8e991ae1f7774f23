//! `bench tasks`: the tasks each sample stage draws.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use miette::{IntoDiagnostic, Report, miette};

use crate::cli::Cli;
use crate::exit_codes;
use crate::manifest::{self, StageKind};
use crate::run;
use crate::run::sequence::fetch_error;
use crate::store::Store;

use super::{load, store_path};

/// One sample stage as `bench tasks` lists it (fields in the order of the JSON output).
#[derive(serde::Serialize)]
pub(super) struct StageListing<'a> {
    by_language: BTreeMap<&'a str, usize>,
    by_month: BTreeMap<&'a str, usize>,
    dataset: &'a str,
    stage: &'a str,
    tasks: Vec<TaskListing<'a>>,
}

#[derive(serde::Serialize)]
pub(super) struct TaskListing<'a> {
    created_at: &'a str,
    instance_id: &'a str,
    language: Option<&'a str>,
    repo: &'a str,
}

pub(super) fn tasks(cli: &Cli, file: &Path, json: bool) -> Result<u8, Report> {
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
