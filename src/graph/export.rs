//! What `bench export` writes: the stored patches of a manifest's solve stages as SWE-bench
//! predictions, read from the graph the manifest expands to.
//!
//! Not here: the predictions file format and the `predictions` harness's reading of it
//! (`datasets/predictions.rs`).

use std::collections::BTreeMap;

use super::{Graph, Mode, NodeKind};
use crate::datasets::predictions::Prediction;
use crate::manifest::Manifest;
use crate::store::Store;
use crate::tasks::TaskSet;

/// Every stored patch of the manifest's solve stages (replicate 0), as predictions named by
/// team, sorted by team then instance id. Solves not in the store are skipped.
pub fn export_predictions(
    m: &Manifest,
    store: &Store,
    datasets: &BTreeMap<String, TaskSet>,
) -> Result<Vec<Prediction>, String> {
    let mut graph = Graph::new(m, Some(store), datasets, Mode::Plan)?;
    while !graph.advance().is_empty() {}
    let mut out = std::collections::BTreeSet::new();
    for n in &graph.nodes {
        let NodeKind::Solve {
            task,
            team,
            replicate: 0,
        } = &n.kind
        else {
            continue;
        };
        let Some(rec) = n.state.record() else {
            continue;
        };
        let Some(digest) = rec.blobs.get("patch") else {
            continue;
        };
        let bytes = crate::types::Digest::parse(digest)
            .map_err(|e| e.to_string())
            .and_then(|d| store.get_blob(&d).map_err(|e| e.to_string()))
            .map_err(|e| format!("{}: {e}", n.address))?;
        out.insert(Prediction {
            instance_id: task.instance_id.clone(),
            model_name_or_path: team.clone(),
            model_patch: String::from_utf8_lossy(&bytes).into_owned(),
        });
    }
    // Sorted by (instance_id, team) in the set; order by team first.
    let mut v: Vec<Prediction> = out.into_iter().collect();
    v.sort_by(|a, b| {
        (&a.model_name_or_path, &a.instance_id).cmp(&(&b.model_name_or_path, &b.instance_id))
    });
    v.dedup_by(|a, b| {
        a.model_name_or_path == b.model_name_or_path && a.instance_id == b.instance_id
    });
    Ok(v)
}
