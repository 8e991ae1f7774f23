//! `bench export`: the trajectories and patches of a manifest's teams.

use std::path::Path;

use miette::{IntoDiagnostic, Report, miette};

use crate::cli::Cli;
use crate::exit_codes;

use super::load_for_reading;

pub(super) fn export(
    cli: &Cli,
    file: &Path,
    teams: &[String],
    out: Option<&Path>,
) -> Result<u8, Report> {
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
