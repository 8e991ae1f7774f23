//! Loading a manifest's datasets: into task sets (the inputs of sample keys, for plan and
//! apply), or into the listing fields of the rows some filter keeps (`bench tasks`).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::datasets::hub::{HubConfig, ensure_files};
use crate::datasets::{TaskSummary, local_files, read_summaries};
use crate::manifest::{Dataset, DatasetFormat, DatasetSource, Manifest};
use crate::store::Store;
use crate::tasks::dir_stamp::{self, DirSnapshot};
use crate::tasks::{DigestCache, SampleRow, TaskSet, load_local_dir, load_local_dir_cached};

/// Where a dataset's rows are on this machine.
enum Rows {
    /// A directory of local task directories.
    TaskDirs(PathBuf),
    /// brain bench task files (a YAML file or a directory of them).
    BrainBench(PathBuf),
    /// Harbor tasks: a task directory or a directory of them, at a git commit or as they are.
    Harbor(PathBuf, Option<String>),
    /// Dataset files; `origin` is the Hub `repo@revision` they were fetched from.
    Files {
        format: DatasetFormat,
        files: Vec<(String, PathBuf)>,
        origin: Option<String>,
    },
}

impl Rows {
    /// The prefix of an error about these rows.
    fn context(&self, name: &str) -> String {
        match self {
            Rows::Files {
                origin: Some(origin),
                ..
            } => format!("dataset `{name}` ({origin})"),
            _ => format!("dataset `{name}`"),
        }
    }
}

/// Finds a dataset's rows; `None`: a Hub dataset not (fully) stored, and not fetched.
fn locate(
    name: &str,
    ds: &Dataset,
    store: Option<&Store>,
    fetch: bool,
) -> Result<Option<Rows>, String> {
    match (&ds.source, ds.format) {
        (DatasetSource::Path(p), DatasetFormat::Local) => Ok(Some(Rows::TaskDirs(p.clone()))),
        (DatasetSource::Path(p), DatasetFormat::BrainBench) => {
            Ok(Some(Rows::BrainBench(p.clone())))
        }
        (DatasetSource::Path(p), DatasetFormat::Harbor) => {
            Ok(Some(Rows::Harbor(p.clone(), ds.commit.clone())))
        }
        (DatasetSource::Path(p), format) => Ok(Some(Rows::Files {
            format,
            files: local_files(p).map_err(|e| format!("dataset `{name}`: {e}"))?,
            origin: None,
        })),
        (
            DatasetSource::Hub {
                repo,
                revision,
                files,
                sha256,
            },
            format,
        ) => {
            if files.is_empty() {
                return Err(format!(
                    "dataset `{name}`: name the files of {repo} to read, e.g. `files = [\"data/test-00000-of-00001.parquet\"]`"
                ));
            }
            let Some(store) = store else {
                return Ok(None);
            };
            let cfg = HubConfig::from_env();
            Ok(
                ensure_files(store, &cfg, repo, revision, files, sha256, fetch)
                    .map_err(|e| format!("dataset `{name}`: {e}"))?
                    .map(|paths| Rows::Files {
                        format,
                        files: paths,
                        origin: Some(format!("{repo}@{revision}")),
                    }),
            )
        }
    }
}

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
    load_datasets_taken(m, store, fetch, None)
}

/// [`load_datasets`] with the signatures an apply took before its manifest's task checks
/// ([`TakenSignatures`]): stored with the snapshots, and marked as checked.
pub fn load_datasets_taken(
    m: &Manifest,
    store: Option<&Store>,
    fetch: bool,
    taken: Option<&TakenSignatures>,
) -> Result<(BTreeMap<String, TaskSet>, Vec<String>), String> {
    let mut sets = BTreeMap::new();
    let mut unavailable = Vec::new();
    // Local task files are hashed through the store's file-digest cache (see
    // tasks/digest_cache.rs); only `apply` (`fetch`, under the store's lock) writes it.
    let cache_path = store.map(Store::file_digests_path);
    let cache = cache_path
        .as_deref()
        .map_or_else(DigestCache::empty, DigestCache::load);
    for (name, ds) in &m.datasets {
        let Some(rows) = locate(name, ds, store, fetch)? else {
            unavailable.push(name.clone());
            continue;
        };
        let set = match &rows {
            Rows::TaskDirs(p) => {
                // `apply` stores the directory's stat signature, taken before its tasks are
                // read, with their snapshot: the next no-op apply with a memo takes the
                // snapshot from it without reading a task (see `local_snapshots`). One taken
                // before the manifest's task checks (which passed) is stored as checked.
                let stamp = store.filter(|_| fetch).and_then(|s| {
                    let (signature, checked) = match taken.and_then(|t| t.get(p)) {
                        Some(signature) => (signature, true),
                        None => (dir_stamp::signature(p)?, false),
                    };
                    Some((s.dataset_stamp_path(p), signature, checked))
                });
                let set = TaskSet::new(
                    load_local_dir_cached(p, &cache)
                        .map_err(|e| format!("{}: {e}", rows.context(name)))?,
                );
                if let Some((path, signature, checked)) = stamp {
                    let d =
                        DirSnapshot::new(signature, set.snapshot.clone(), set.tasks.len(), checked);
                    dir_stamp::save(&path, &d);
                }
                set
            }
            Rows::BrainBench(p) => TaskSet::new(
                crate::datasets::brain_bench::read(p)
                    .map_err(|e| format!("{}: {e}", rows.context(name)))?,
            ),
            Rows::Harbor(p, commit) => {
                let tasks = crate::datasets::harbor::load(p, commit.as_deref())
                    .map_err(|e| format!("{}: {e}", rows.context(name)))?;
                match commit {
                    Some(c) => TaskSet::new(tasks).with_origin(&format!("git:{c}")),
                    None => TaskSet::new(tasks),
                }
            }
            Rows::Files {
                format,
                files,
                origin,
            } => {
                let mut tasks = crate::datasets::read_files(*format, files)
                    .map_err(|e| format!("{}: {e}", rows.context(name)))?;
                if let Some(dir) = &ds.run_scripts {
                    crate::datasets::swe_bench_pro::attach_harness(&mut tasks, dir)
                        .map_err(|e| format!("{}: {e}", rows.context(name)))?;
                }
                match origin {
                    Some(origin) => TaskSet::new(tasks).with_origin(origin),
                    None => TaskSet::new(tasks),
                }
            }
        };
        sets.insert(name.clone(), set);
    }
    if let (true, Some(p)) = (fetch, &cache_path) {
        // A cache: failing to write it costs speed only.
        let _ = cache.save(p);
    }
    Ok((sets, unavailable))
}

/// Each dataset's snapshot and task count, by name.
pub type Snapshots = BTreeMap<String, (String, usize)>;

/// Each dataset's snapshot and task count without reading a task: `Some` only when every
/// dataset of the manifest is a directory of local tasks whose stat signature, taken now, is
/// the one `apply` stored with its snapshot (see `tasks/dir_stamp.rs`); else `None`, and the
/// datasets must be loaded.
pub fn local_snapshots(m: &Manifest, store: &Store, taken: &TakenSignatures) -> Option<Snapshots> {
    if m.datasets.is_empty() {
        return None;
    }
    let mut out = Snapshots::new();
    for (name, ds) in &m.datasets {
        let DatasetSource::Path(p) = &ds.source else {
            return None;
        };
        if ds.format != DatasetFormat::Local {
            return None;
        }
        let stored = dir_stamp::load(&store.dataset_stamp_path(p))?;
        let now = match taken.get(p) {
            Some(signature) => signature,
            None => dir_stamp::signature(p)?,
        };
        if now != stored.signature {
            return None;
        }
        out.insert(name.clone(), (stored.snapshot, stored.tasks));
    }
    Some(out)
}

/// Stat signatures of local dataset directories an apply takes before its manifest's task
/// checks, once each: with the stamp stored in the store they tell the checks which directories
/// need none (`manifest::load_trusting`), and they are the signatures the apply then matches
/// ([`local_snapshots`]) or stores, as checked ([`load_datasets_taken`]). Taken before the
/// store's lock: a task file is no more bound by the lock than by the moment of a signature.
pub struct TakenSignatures {
    /// The store whose stamps vouch for a directory (`None`: no directory is vouched for).
    store_root: Option<PathBuf>,
    taken: RefCell<BTreeMap<PathBuf, Option<String>>>,
}

impl TakenSignatures {
    pub fn new(store_root: Option<PathBuf>) -> TakenSignatures {
        TakenSignatures {
            store_root,
            taken: RefCell::default(),
        }
    }

    /// Whether the tasks in `dir` need no check: its signature, taken now, is the one stored
    /// with a verdict of no problem (`DirSnapshot::checked`).
    pub fn checked(&self, dir: &Path) -> bool {
        let signature = dir_stamp::signature(dir);
        self.taken
            .borrow_mut()
            .insert(dir.to_path_buf(), signature.clone());
        let (Some(root), Some(signature)) = (&self.store_root, signature) else {
            return false;
        };
        dir_stamp::load(&Store::dataset_stamp_path_in(root, dir))
            .is_some_and(|d| d.checked && d.signature == signature)
    }

    /// The signature taken of `dir`, if one was (and could be).
    fn get(&self, dir: &Path) -> Option<String> {
        self.taken.borrow().get(dir).cloned().flatten()
    }
}

/// The snapshot and task count of each loaded dataset.
pub fn snapshots_of(datasets: &BTreeMap<String, TaskSet>) -> Snapshots {
    datasets
        .iter()
        .map(|(name, set)| (name.clone(), (set.snapshot.clone(), set.tasks.len())))
        .collect()
}

/// Each loaded dataset's listing rows, and the names of the datasets not available here.
pub type Summaries = (BTreeMap<String, Vec<TaskSummary>>, Vec<String>);

/// Loads the listing fields of the rows of each dataset that `keep(dataset, row)` accepts,
/// reading only those columns of dataset files (see [`read_summaries`]); fetching and
/// unavailable datasets as in [`load_datasets`]. No task set is built: nothing is keyed.
pub fn load_summaries(
    m: &Manifest,
    store: Option<&Store>,
    fetch: bool,
    keep: &dyn Fn(&str, &SampleRow<'_>) -> bool,
) -> Result<Summaries, String> {
    let mut out = BTreeMap::new();
    let mut unavailable = Vec::new();
    for (name, ds) in &m.datasets {
        let Some(rows) = locate(name, ds, store, fetch)? else {
            unavailable.push(name.clone());
            continue;
        };
        let keep_row = |r: &SampleRow<'_>| keep(name, r);
        let summaries = match &rows {
            Rows::TaskDirs(p) => load_local_dir(p)
                .map_err(|e| format!("{}: {e}", rows.context(name)))?
                .iter()
                .map(TaskSummary::of)
                .filter(|s| keep_row(&s.row()))
                .collect(),
            Rows::BrainBench(p) => crate::datasets::brain_bench::read(p)
                .map_err(|e| format!("{}: {e}", rows.context(name)))?
                .iter()
                .map(TaskSummary::of)
                .filter(|s| keep_row(&s.row()))
                .collect(),
            Rows::Harbor(p, commit) => crate::datasets::harbor::load(p, commit.as_deref())
                .map_err(|e| format!("{}: {e}", rows.context(name)))?
                .iter()
                .map(TaskSummary::of)
                .filter(|s| keep_row(&s.row()))
                .collect(),
            Rows::Files { format, files, .. } => read_summaries(*format, files, &keep_row)
                .map_err(|e| format!("{}: {e}", rows.context(name)))?,
        };
        out.insert(name.clone(), summaries);
    }
    Ok((out, unavailable))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of one settled task file, and a store root.
    fn dataset() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("tasks");
        fs_err::create_dir_all(dir.join("t1")).unwrap();
        fs_err::write(dir.join("t1/task.toml"), "x = 1\n").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2100));
        let root = d.path().join("store");
        fs_err::create_dir_all(root.join("index")).unwrap();
        (d, dir, root)
    }

    #[test]
    fn only_a_stamp_with_a_clean_verdict_and_the_same_signature_vouches_for_a_dataset() {
        let (_d, dir, root) = dataset();
        let stamp = Store::dataset_stamp_path_in(&root, &dir);
        let signature = dir_stamp::signature(&dir).unwrap();
        let store = |checked: bool, signature: &str| {
            let d = DirSnapshot::new(signature.to_string(), "snap".into(), 1, checked);
            dir_stamp::save(&stamp, &d);
        };
        let vouched = |root: Option<&Path>| {
            let taken = TakenSignatures::new(root.map(Path::to_path_buf));
            let yes = taken.checked(&dir);
            assert_eq!(taken.get(&dir).as_deref(), Some(signature.as_str()));
            yes
        };
        assert!(!vouched(Some(&root)), "no stamp");
        store(false, &signature);
        assert!(!vouched(Some(&root)), "not checked");
        store(true, "another");
        assert!(!vouched(Some(&root)), "another signature");
        store(true, &signature);
        assert!(vouched(Some(&root)));
        assert!(!vouched(None), "no store");
        // A task file edited, its size and mtime kept: its ctime moves the signature.
        crate::files::write_keeping_mtime(&dir.join("t1/task.toml"), "x = 2\n");
        std::thread::sleep(std::time::Duration::from_millis(2100));
        let taken = TakenSignatures::new(Some(root.clone()));
        assert!(!taken.checked(&dir));
        assert_ne!(taken.get(&dir), Some(signature));
    }
}
