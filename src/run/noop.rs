//! The no-op memo: how an apply with nothing to run skips expanding the graph.
//!
//! An apply in which every node was cached writes `index/<manifest>.noop`: a fingerprint of
//! everything the graph's expansion reads besides stored records, and every node's stage,
//! address and key with the stat of the key's record file. The next apply of the manifest
//! computes the fingerprint again (after loading the datasets and resolving images, as any
//! apply does); if it matches and every record file still has its stat, the apply is a no-op
//! without building a node: it prints what a no-op prints and writes the run record it writes.
//!
//! Why that is never stale. The expansion is a pure function of the manifest (as loaded, images
//! resolved), the datasets' tasks, the files the jobs read (harness scripts, install and
//! predictions files), the local jail mode, the bench build, and the records of upstream keys.
//! The fingerprint covers all but the records: the manifest's full `Debug` form, each dataset's
//! snapshot (a digest over every task's full content), the team specs' digests (which hash the
//! harness files they read), the predictions files' bytes, the jail mode, and the stat of the
//! running executable. The records are covered by their files' stat, trusted exactly as the
//! packed action index trusts it (`store/action_index.rs`): size, mtime, ctime and inode all
//! equal, and the file older than the racy window when the memo was made. Any write to a record
//! moves its ctime; gc's removal is a miss. So equal fingerprint and stats mean the expansion
//! would build the same nodes with the same keys, all stored: nothing is skipped that would run.
//! Anything else (no memo, a damaged one, a fingerprint or stat that differs) takes the full
//! path, which verifies what it reads and writes a new memo if it turns out a no-op.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::graph::JobBuilder;
use crate::manifest::{BackendKind, HarnessKind, Manifest, StageKind};
use crate::store::{FileStamp, Index, NodeStatus, RACY_NS, RunNode, RunRecord, Store};
use crate::tasks::TaskSet;

const MAGIC: &str = "bench-noop-memo 1";

/// One node of a no-op apply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemoNode {
    pub stage: String,
    pub address: String,
    pub key: String,
    pub stamp: FileStamp,
}

#[derive(Debug, Serialize, Deserialize)]
struct Memo {
    magic: String,
    fingerprint: String,
    nodes: Vec<MemoNode>,
}

fn memo_path(store: &Store, manifest: &Path) -> PathBuf {
    let h = crate::key::digest(manifest.to_string_lossy().as_bytes());
    store
        .root()
        .join("index")
        .join(format!("{}.noop", &h[..32]))
}

/// The fingerprint of everything an apply's expansion reads except stored records, with the
/// team specs of `jobs` (the builder the expansion used, or a new one: the files it read) and
/// the predictions as this process read them. `None` when an input cannot be read (the full
/// path then reports it).
pub fn fingerprint(
    m: &Manifest,
    datasets: &BTreeMap<String, TaskSet>,
    jobs: &JobBuilder<'_>,
) -> Option<String> {
    let mut h = blake3::Hasher::new();
    let mut part = |label: &str, bytes: &[u8]| {
        h.update(label.as_bytes());
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part("magic", MAGIC.as_bytes());
    part("version", env!("CARGO_PKG_VERSION").as_bytes());
    // Another build of bench may derive keys differently: its memo is not this one's.
    let exe = std::fs::metadata("/proc/self/exe").ok()?;
    part("exe", format!("{:?}", FileStamp::of(&exe)).as_bytes());
    part("manifest", format!("{m:?}").as_bytes());
    for (name, set) in datasets {
        part("dataset", name.as_bytes());
        part("snapshot", set.snapshot.as_bytes());
        part("tasks", &(set.tasks.len() as u64).to_le_bytes());
    }
    for name in m.teams.keys() {
        part("team", name.as_bytes());
        part("spec", jobs.team(name)?.digest().as_bytes());
    }
    for h in m.harnesses.values() {
        if h.kind == HarnessKind::Predictions {
            part("harness", h.name.as_bytes());
            let d = crate::datasets::predictions::predictions_digest(h).ok()?;
            part("predictions", d.as_bytes());
        }
    }
    if m.backend.kind == BackendKind::Local {
        part("isolation", crate::backend::jail::isolation().as_bytes());
    }
    Some(h.finalize().to_hex().to_string())
}

/// Writes the memo of an apply in which every node in `nodes` was cached. Nothing is written
/// if a record file cannot be statted or is too fresh to trust its stat (the next no-op then
/// takes the full path and writes it). Failing to write costs speed, never correctness.
pub fn save(
    store: &Store,
    manifest: &Path,
    fingerprint: &str,
    nodes: Vec<(String, String, String)>,
) {
    let now = crate::store::now_ns();
    let mut out = Vec::with_capacity(nodes.len());
    for (stage, address, key) in nodes {
        let Some(stamp) = store.record_stamp(&key) else {
            return;
        };
        if !stamp.settled(now, RACY_NS) {
            return;
        }
        out.push(MemoNode {
            stage,
            address,
            key,
            stamp,
        });
    }
    let memo = Memo {
        magic: MAGIC.to_string(),
        fingerprint: fingerprint.to_string(),
        nodes: out,
    };
    let body = serde_json::to_vec(&memo).expect("memos serialize");
    let mut bytes = format!("{}\n", crate::key::digest(&body)).into_bytes();
    bytes.extend_from_slice(&body);
    let _ = crate::store::write_atomic(&memo_path(store, manifest), &bytes);
}

/// The memo's nodes if it exists, verifies, was made with `fingerprint`, and every record file
/// still has its stat (checked on two threads).
pub fn check(store: &Store, manifest: &Path, fingerprint: &str) -> Option<Vec<MemoNode>> {
    let bytes = std::fs::read(memo_path(store, manifest)).ok()?;
    let nl = bytes.iter().position(|&b| b == b'\n')?;
    let (sum, body) = (&bytes[..nl], &bytes[nl + 1..]);
    if sum != crate::key::digest(body).as_bytes() {
        return None;
    }
    let memo: Memo = serde_json::from_slice(body).ok()?;
    if memo.magic != MAGIC || memo.fingerprint != fingerprint || memo.nodes.is_empty() {
        return None;
    }
    let half = memo.nodes.len().div_ceil(2);
    let same = |part: &[MemoNode]| {
        part.iter()
            .all(|n| store.record_stamp(&n.key) == Some(n.stamp))
    };
    let fresh = std::thread::scope(|s| {
        let (a, b) = memo.nodes.split_at(half);
        let other = s.spawn(|| same(b));
        same(a) && other.join().unwrap_or(false)
    });
    fresh.then_some(memo.nodes)
}

/// What a no-op apply from a memo did: the run record it saved and the reports it wrote.
pub struct NoopRun {
    pub run: RunRecord,
    pub reports: Vec<PathBuf>,
}

/// The no-op apply of `nodes` (from [`check`]): a cached report's files are written again if
/// they are missing or differ (as the full path does), the manifest's index is brought up to
/// date, and the run record is saved with every node cached. `None` if a report cannot be
/// written from its record (the full path then recomputes it); nothing was changed then.
pub fn apply(
    m: &Manifest,
    store: &Store,
    nodes: &[MemoNode],
    index: &Index,
    mut run: RunRecord,
    progress: &mut super::Progress,
) -> Result<Option<NoopRun>, String> {
    let mut reports = Vec::new();
    for n in nodes {
        if let StageKind::Report(r) = &m.stages[&n.stage].kind {
            let crate::store::Lookup::Hit(rec) = store.get_action_light(&n.key) else {
                return Ok(None);
            };
            if crate::stages::materialize(store, &rec.blobs, &r.out).is_err() {
                return Ok(None);
            }
            reports.push(r.out.join("report.md"));
        }
    }
    let mut changed: Option<Index> = None;
    for n in nodes {
        progress.added(&n.stage, true);
        if index.nodes.get(&n.address) != Some(&n.key) {
            changed
                .get_or_insert_with(|| index.clone())
                .nodes
                .insert(n.address.clone(), n.key.clone());
        }
        run.nodes.insert(
            n.address.clone(),
            RunNode {
                key: Some(n.key.clone()),
                status: NodeStatus::Cached,
                error: None,
            },
        );
    }
    progress.finish();
    if let Some(index) = changed {
        store
            .save_index(&m.path, &index)
            .map_err(|e| e.to_string())?;
    }
    run.ended_at = Some(jiff::Timestamp::now().to_string());
    run.status = crate::store::RunStatus::Complete;
    store.save_run(&run).map_err(|e| e.to_string())?;
    Ok(Some(NoopRun { run, reports }))
}
