//! Garbage collection: remove the action records and blobs that no recorded manifest reaches.
//! The caller decides what is reachable (the keys of the current plans of the manifests in the
//! run log) and which blobs are pinned inputs (the files of pinned Hub datasets); this module only computes the closure over blobs and deletes, or reports what it
//! would delete. Deleting also compacts the store's caches (the packed action index).

use std::collections::BTreeSet;

use serde::Serialize;

use super::layout::{Store, StoreError};
use crate::types::Digest;

/// What gc found (and removed, unless it was a dry run).
#[derive(Debug, Default, Serialize)]
pub struct GcReport {
    pub dry_run: bool,
    pub kept_actions: usize,
    pub kept_blobs: usize,
    pub removed_actions: Vec<String>,
    pub removed_blobs: Vec<String>,
    pub removed_bytes: u64,
}

/// Removes every action not in `reachable` and every blob neither a kept action nor `pinned`
/// refers to.
pub fn gc(
    store: &Store,
    reachable: &BTreeSet<String>,
    pinned: Vec<String>,
    dry_run: bool,
) -> Result<GcReport, StoreError> {
    let mut report = GcReport {
        dry_run,
        ..Default::default()
    };
    let mut live_blobs = BTreeSet::new();
    // A reachable solve's earlier attempts (`apply --rerun`) are kept with it: their records'
    // blobs, and the records of their grades. Attempts of unreachable keys go with their keys.
    let mut reachable = reachable.clone();
    let mut dead_attempts = Vec::new();
    for key in store.attempt_keys() {
        if !reachable.contains(&key) {
            dead_attempts.push(key);
            continue;
        }
        if let Ok(Some(all)) = store.filed_attempts(&key) {
            for a in &all.earlier {
                live_blobs.extend(a.record.blob_digests().unwrap_or_default());
                reachable.extend(a.grade_key.clone());
            }
        }
    }
    let reachable = &reachable;
    for key in store.action_keys() {
        if reachable.contains(&key) {
            if let super::Lookup::Hit(rec) = store.get_action_light(&key) {
                // Every blob it references (a solve's patch too), checked as a read checks it.
                live_blobs.extend(rec.blob_digests().unwrap_or_default());
            }
            report.kept_actions += 1;
        } else {
            report.removed_actions.push(key);
        }
    }
    // What the caller pins (the files of pinned Hub datasets) are inputs, not results: kept.
    live_blobs.extend(pinned.into_iter().filter_map(|d| Digest::parse(&d).ok()));
    let mut removed = Vec::new();
    for digest in store.blob_digests() {
        if live_blobs.contains(&digest) {
            report.kept_blobs += 1;
        } else {
            report.removed_bytes +=
                fs_err::metadata(store.blob_path(&digest)).map_or(0, |m| m.len());
            report.removed_blobs.push(digest.to_string());
            removed.push(digest);
        }
    }
    if !dry_run {
        for k in &report.removed_actions {
            store.remove_action(k)?;
        }
        for d in &removed {
            store.remove_blob(d)?;
        }
        for k in &dead_attempts {
            store.remove_attempts(k)?;
        }
        // The caches: the action index keeps the kept keys' entries only (rewritten whole,
        // atomically); the file-digest cache is dropped and rebuilt by the next apply.
        let kept: BTreeSet<String> = store
            .action_keys()
            .into_iter()
            .filter(|k| reachable.contains(k))
            .collect();
        store.compact_action_index(&kept)?;
        match fs_err::remove_file(store.file_digests_path()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        }
    }
    Ok(report)
}
