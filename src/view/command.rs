//! `bench view`: opens the experiment, then serves it or writes the static export.

use std::io::Write;
use std::path::Path;

use miette::{Report, miette};

use super::{Experiment, ViewError, Viewer};

fn report(e: ViewError) -> Report {
    match e {
        ViewError::Manifest { source, .. } => Report::new(*source),
        ViewError::NotAnExperiment { .. } => miette!(
            help =
                "name a manifest (`bench view pipelines/x.toml`) or the report directory it wrote",
            "{e}"
        ),
        ViewError::NotAnExport { .. } => miette!(
            help = "name a new or empty folder, or remove this one's content yourself",
            "{e}"
        ),
        other => miette!("{other}"),
    }
}

/// Runs `bench view`.
pub fn command(
    store: Option<&Path>,
    target: &Path,
    compare: Option<&Path>,
    port: Option<u16>,
    static_dir: Option<&Path>,
) -> Result<u8, Report> {
    let exp = Experiment::open(target, store).map_err(report)?;
    if let Some(note) = &exp.tasks_note {
        eprintln!("note: {note}");
    }
    let mut viewer = Viewer::new(exp);
    if let Some(other) = compare {
        // `--store` (`BENCH_STORE`) names the store of both: a shared store holds them both;
        // without it, each manifest's own `.bench`.
        let other = Experiment::open(other, store).map_err(report)?;
        if let Some(note) = &other.tasks_note {
            eprintln!("note: {note}");
        }
        viewer = viewer.compared_with(Viewer::new(other));
    }
    if let Some(dir) = static_dir {
        let done = super::export(&viewer, dir).map_err(report)?;
        println!(
            "wrote {} files ({} bytes) to {}: open {}",
            done.files,
            done.bytes,
            dir.display(),
            dir.join("index.html").display()
        );
        return Ok(crate::exit_codes::OK);
    }
    super::serve(viewer, port, |s| {
        println!("bench view: {}", s.url);
        let _ = std::io::stdout().flush();
        eprintln!("serving read-only on {} (Ctrl-C stops)", s.addr);
    })
    .map_err(report)?;
    Ok(crate::exit_codes::OK)
}
