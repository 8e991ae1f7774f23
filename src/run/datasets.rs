//! Loading a manifest's datasets into task sets (the inputs of sample keys).

use std::collections::BTreeMap;

use crate::datasets::hub::{HubConfig, ensure_files};
use crate::datasets::read_local;
use crate::manifest::{DatasetFormat, DatasetSource, Manifest};
use crate::store::Store;
use crate::tasks::{TaskSet, load_local_dir};

/// Loads every dataset that can be read on this machine.
///
/// Local paths are read directly. A Hub dataset (`repo` + `revision`) is read from the store;
/// with `fetch` its missing files are downloaded first (`apply`, `tasks`); without (`plan`,
/// `status`, `gc`) a dataset not fully stored is reported in the second value and its sample
/// stays unknown. The snapshot of a Hub dataset covers `repo@revision` as well as its rows.
pub fn load_datasets(
    m: &Manifest,
    store: Option<&Store>,
    fetch: bool,
) -> Result<(BTreeMap<String, TaskSet>, Vec<String>), String> {
    let mut sets = BTreeMap::new();
    let mut unavailable = Vec::new();
    for (name, ds) in &m.datasets {
        match (&ds.source, ds.format) {
            (DatasetSource::Path(p), DatasetFormat::Local) => {
                let tasks = load_local_dir(p).map_err(|e| format!("dataset `{name}`: {e}"))?;
                sets.insert(name.clone(), TaskSet::new(tasks));
            }
            (DatasetSource::Path(p), format) => {
                let tasks = read_local(format, p).map_err(|e| format!("dataset `{name}`: {e}"))?;
                sets.insert(name.clone(), TaskSet::new(tasks));
            }
            (
                DatasetSource::Hub {
                    repo,
                    revision,
                    files,
                },
                format,
            ) => {
                if files.is_empty() {
                    return Err(format!(
                        "dataset `{name}`: name the files of {repo} to read, e.g. `files = [\"data/test-00000-of-00001.parquet\"]`"
                    ));
                }
                let Some(store) = store else {
                    unavailable.push(name.clone());
                    continue;
                };
                let cfg = HubConfig::from_env();
                match ensure_files(store, &cfg, repo, revision, files, fetch)
                    .map_err(|e| format!("dataset `{name}`: {e}"))?
                {
                    Some(paths) => {
                        let tasks = crate::datasets::read_files(format, &paths)
                            .map_err(|e| format!("dataset `{name}` ({repo}@{revision}): {e}"))?;
                        sets.insert(
                            name.clone(),
                            TaskSet::new(tasks).with_origin(&format!("{repo}@{revision}")),
                        );
                    }
                    None => unavailable.push(name.clone()),
                }
            }
        }
    }
    Ok((sets, unavailable))
}
