//! What `bench gc` keeps of a store's history, and what `bench plan` counts as orphaned, from one
//! rule so the two agree: a result is kept when a current plan uses it or when one of the last N
//! applies of its manifest (the run log, by manifest path) recorded it, N being that manifest's
//! `[store] keep_runs` (or `gc --keep-runs`). Undoing an edit is then served from the store.
//! Not here: planning the manifests (gc and plan do that) and deleting (`store::gc`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use miette::{Report, miette};

use crate::events::Events;
use crate::graph::{Graph, Mode};
use crate::manifest::DEFAULT_KEEP_RUNS;
use crate::store::{RunRecord, Store};

/// How many applies of each manifest keep their results: one number for all (`gc --keep-runs`),
/// or each manifest's own `[store] keep_runs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepRuns {
    All(usize),
    PerManifest,
}

impl KeepRuns {
    /// N for the manifest at `path`: its `[store] keep_runs`, or the default when it no longer
    /// loads (gone, or it does not validate).
    pub fn of(self, path: &Path) -> usize {
        match self {
            KeepRuns::All(n) => n,
            KeepRuns::PerManifest => {
                crate::manifest::load(path).map_or(DEFAULT_KEEP_RUNS, |m| m.keep_runs)
            }
        }
    }
}

/// What gc keeps: the results and task images the manifests reach.
#[derive(Debug, Default)]
pub struct Reachable {
    /// Record keys: the current plans' and the last N applies' of each manifest.
    pub keys: BTreeSet<String>,
    /// Image IDs the manifests' tasks start from (`gc --images --pulled` keeps them).
    pub images: BTreeSet<String>,
    /// The first docker manifest's `[backend] host`.
    pub docker_host: Option<String>,
    /// What could not be planned, and what that means for its results.
    pub notes: Vec<String>,
}

/// Plans each of `manifests` against `store` and adds what the last N runs of each manifest in
/// `runs` recorded (N from `keep`): everything gc keeps. A manifest that is gone or does not
/// validate keeps only what its runs recorded.
pub fn reachable(
    store: &Store,
    manifests: &BTreeSet<PathBuf>,
    runs: &[RunRecord],
    keep: KeepRuns,
) -> Result<Reachable, Report> {
    let mut out = Reachable {
        keys: kept_by_runs(runs, &mut |p| keep.of(Path::new(p))),
        ..Default::default()
    };
    for path in manifests {
        if !path.exists() {
            out.notes.push(format!(
                "{} no longer exists: only what its last applies recorded is kept",
                path.display()
            ));
            continue;
        }
        let Ok(mut m) = crate::manifest::load(path) else {
            out.notes.push(format!(
                "{} does not validate: keeping what its last applies recorded",
                path.display()
            ));
            continue;
        };
        let (datasets, _) =
            super::load_datasets(&m, Some(store), false).map_err(|e| miette!("{e}"))?;
        if let Err(e) = super::sequence::resolve_images(&mut m, &datasets, &Events::default()) {
            out.notes.push(format!(
                "{}: cannot resolve its images ({e}); its docker results count as unreachable",
                path.display()
            ));
        }
        out.images.extend(m.backend.images.values().cloned());
        if out.docker_host.is_none() {
            out.docker_host = m.backend.host.clone();
        }
        let mut graph =
            Graph::new(&m, Some(store), &datasets, Mode::Plan).map_err(|e| miette!("{e}"))?;
        while !graph.advance().is_empty() {}
        out.keys.extend(plan_keys(&graph));
    }
    Ok(out)
}

/// The keys of the stored results a manifest's current plan uses (every node with a record).
pub fn plan_keys(graph: &crate::graph::Graph<'_>) -> BTreeSet<String> {
    graph
        .nodes
        .iter()
        .filter_map(|n| n.state.record().map(|r| r.key.clone()))
        .collect()
}

/// The keys the last N runs of each manifest recorded, N from `keep` (asked once per manifest;
/// runs come oldest first, as `Store::runs` returns them).
pub fn kept_by_runs(runs: &[RunRecord], keep: &mut dyn FnMut(&str) -> usize) -> BTreeSet<String> {
    let mut by_manifest: BTreeMap<&str, Vec<&RunRecord>> = BTreeMap::new();
    for r in runs {
        by_manifest.entry(&r.manifest_path).or_default().push(r);
    }
    let mut kept = BTreeSet::new();
    for (path, runs) in by_manifest {
        let n = keep(path);
        for r in runs.iter().rev().take(n) {
            kept.extend(r.nodes.values().filter_map(|n| n.key.clone()));
        }
    }
    kept
}

/// The stored records (`stored` says which keys have one) the runs of the manifest at
/// `manifest_path` recorded that gc would remove (neither in `current`, the keys its plan uses
/// now, nor in `kept`), each with the first address it had (in run order, then address
/// order): key -> address.
pub fn orphaned(
    runs: &[RunRecord],
    manifest_path: &str,
    current: &BTreeSet<String>,
    kept: &BTreeSet<String>,
    stored: &dyn Fn(&str) -> bool,
) -> BTreeMap<String, String> {
    let mut out: HashMap<&str, &str> = HashMap::new();
    for r in runs.iter().filter(|r| r.manifest_path == manifest_path) {
        for (address, node) in &r.nodes {
            if let Some(k) = &node.key
                && !current.contains(k)
                && !kept.contains(k)
            {
                out.entry(k).or_insert(address);
            }
        }
    }
    out.into_iter()
        .filter(|(k, _)| stored(k))
        .map(|(k, a)| (k.to_string(), a.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{NodeStatus, RunNode, RunStatus};

    fn run(manifest: &str, at: &str, keys: &[(&str, &str)]) -> RunRecord {
        RunRecord {
            schema: 1,
            id: at.into(),
            manifest_path: manifest.into(),
            manifest_hash: String::new(),
            resolved_manifest: serde_json::Value::Null,
            bench_version: String::new(),
            command: String::new(),
            host: String::new(),
            pid: 0,
            started_at: at.into(),
            ended_at: None,
            status: RunStatus::Complete,
            nodes: keys
                .iter()
                .map(|(a, k)| {
                    let node = RunNode {
                        key: Some(k.to_string()),
                        status: NodeStatus::Done,
                        error: None,
                    };
                    (a.to_string(), node)
                })
                .collect(),
            placements: Default::default(),
        }
    }

    #[test]
    fn the_last_n_runs_of_each_manifest_keep_their_keys() {
        let runs = [
            run("a.toml", "1", &[("grade/x", "k1")]),
            run("b.toml", "2", &[("grade/x", "b1")]),
            run("a.toml", "3", &[("grade/x", "k2")]),
            run("a.toml", "4", &[("grade/x", "k3")]),
        ];
        let keys = |n: usize| kept_by_runs(&runs, &mut |_| n);
        assert_eq!(keys(1), BTreeSet::from(["k3".into(), "b1".into()]));
        assert_eq!(
            keys(2),
            BTreeSet::from(["k2".into(), "k3".into(), "b1".into()])
        );
        assert_eq!(keys(0), BTreeSet::new());
        let stored: BTreeSet<String> = ["k1", "k2", "k3", "b1"].map(String::from).into();
        let current = BTreeSet::from(["k3".to_string()]);
        let has = |k: &str| stored.contains(k);
        let orphans = orphaned(&runs, "a.toml", &current, &keys(1), &has);
        assert_eq!(
            orphans,
            BTreeMap::from([
                ("k1".to_string(), "grade/x".to_string()),
                ("k2".to_string(), "grade/x".to_string())
            ])
        );
        // A record gone from the store is not counted.
        let has = |k: &str| k != "k1";
        assert_eq!(orphaned(&runs, "a.toml", &current, &keys(1), &has).len(), 1);
    }
}
