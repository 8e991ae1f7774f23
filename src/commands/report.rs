//! `bench report`: reports compared side by side.

use std::path::PathBuf;

use miette::{Report, miette};

use crate::cli::Cli;
use crate::exit_codes;
use crate::manifest::StageKind;

use super::{load_for_reading, planned};

/// `bench report A.toml B.toml ...`: stored results side by side (plan mode: runs nothing).
pub(super) fn compare_reports(cli: &Cli, files: &[PathBuf], json: bool) -> Result<u8, Report> {
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
