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

/// The experiment of `target` (compared with `compare`'s), saying why tasks are missing when
/// `notes`.
fn open(
    store: Option<&Path>,
    target: &Path,
    compare: Option<&Path>,
    notes: bool,
) -> Result<Viewer, ViewError> {
    let exp = Experiment::open(target, store)?;
    if let Some(note) = exp.tasks_note.as_ref().filter(|_| notes) {
        eprintln!("note: {note}");
    }
    let mut viewer = Viewer::new(exp);
    if let Some(other) = compare {
        // `--store` (`BENCH_STORE`) names the store of both: a shared store holds them both;
        // without it, each manifest's own `.bench`.
        let other = Experiment::open(other, store)?;
        if let Some(note) = other.tasks_note.as_ref().filter(|_| notes) {
            eprintln!("note: {note}");
        }
        viewer = viewer.compared_with(Viewer::new(other));
    }
    Ok(viewer)
}

/// Runs `bench view`.
pub fn command(
    store: Option<&Path>,
    target: &Path,
    compare: Option<&Path>,
    port: Option<u16>,
    static_dir: Option<&Path>,
) -> Result<u8, Report> {
    let viewer = open(store, target, compare, true).map_err(report)?;
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
    let (store, target, compare) = (
        store.map(Path::to_path_buf),
        target.to_path_buf(),
        compare.map(Path::to_path_buf),
    );
    let reopen: super::server::Reopen =
        Box::new(move || open(store.as_deref(), &target, compare.as_deref(), false));
    super::serve(viewer, reopen, port, |s| {
        println!("bench view: {}", s.url);
        let _ = std::io::stdout().flush();
        eprintln!("serving read-only on {} (Ctrl-C stops)", s.addr);
    })
    .map_err(report)?;
    Ok(crate::exit_codes::OK)
}
