//! Loading a manifest's datasets into task sets (the inputs of sample keys).

use std::collections::BTreeMap;

use crate::manifest::{DatasetFormat, DatasetSource, Manifest};
use crate::tasks::{TaskSet, load_local_dir};

/// Loads every dataset that can be read on this machine. Hub datasets are not fetched by this
/// build: they are reported in the second value, and their sample stays unknown in a plan.
pub fn load_datasets(m: &Manifest) -> Result<(BTreeMap<String, TaskSet>, Vec<String>), String> {
    let mut sets = BTreeMap::new();
    let mut unavailable = Vec::new();
    for (name, ds) in &m.datasets {
        match (&ds.source, ds.format) {
            (DatasetSource::Path(p), DatasetFormat::Local) => {
                let tasks = load_local_dir(p).map_err(|e| format!("dataset `{name}`: {e}"))?;
                sets.insert(name.clone(), TaskSet::new(tasks));
            }
            _ => unavailable.push(name.clone()),
        }
    }
    Ok((sets, unavailable))
}
