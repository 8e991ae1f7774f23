//! `bench pull`: the task images a manifest needs, pulled before an apply.

use std::path::Path;

use miette::{Report, miette};

use crate::cli::Cli;
use crate::events::{Events, Format, Reporter};
use crate::exit_codes;
use crate::run;
use crate::run::sequence::{fetch_error, prepare_images};
use crate::store::{Store, StoreLock};

use super::{load, store_path};

pub(super) fn pull(cli: &Cli, file: &Path, quiet: bool) -> Result<u8, Report> {
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
