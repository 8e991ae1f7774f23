//! The no-op memo: how an apply with nothing to run skips expanding the graph.
//!
//! An apply in which every node was cached writes `index/<manifest>.noop` (atomically): a line
//! with the blake3 of the rest; a JSON line with a fingerprint of everything the graph's
//! expansion reads besides stored records, the stat of the manifest's index file, the node
//! count per stage, the report nodes (key, digest of the record's file list) and the stat of
//! every attempts file (`apply --rerun`: a report reads them); one line per
//! distinct key with its record file's stat; `blobs`, then one line per distinct blob the
//! records reference with its size; `nodes`, and the run record's nodes as JSON. The
//! next apply of the manifest computes the fingerprint again (after loading the datasets and
//! resolving images, as any apply does); if it matches, the index is the one the memo was made
//! after, every record file still has its stat and every blob is still a regular file of its
//! size, the apply is a no-op without building a
//! node: it prints what a no-op prints, writes a missing or edited report file again, and
//! writes the run record the full path writes (byte for byte, but the times and id).
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
//! moves its ctime; gc's removal is a miss. A blob a kept result needs that was deleted, emptied
//! or truncated is a miss too (its size is checked by stat; a same-size corruption needs a
//! read: `apply --verify`). So equal fingerprint and stats mean the expansion
//! would build the same nodes with the same keys, all stored: nothing is skipped that would run.
//! Anything else (no memo, a damaged one, a fingerprint or stat that differs) takes the full
//! path, which verifies what it reads and writes a new memo if it turns out a no-op.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::datasets::Snapshots;
use crate::graph::JobBuilder;
use crate::manifest::{HarnessKind, Manifest, StageKind};
use crate::store::{FileStamp, NodeStatus, RACY_NS, RunNode, RunRecord, Store};
use crate::types::Digest;

const MAGIC: &str = "bench-noop-memo 5";

/// The memo's first line after its checksum: everything but the records and the run nodes.
#[derive(Debug, Serialize, Deserialize)]
struct Head {
    magic: String,
    fingerprint: String,
    /// The manifest index file's stat when the memo was made (it then held every node's key).
    index: FileStamp,
    /// Nodes per stage (what the summary line counts).
    counts: BTreeMap<String, usize>,
    /// Report nodes: stage, key, the digest of the record's file list, and the stage's `out`.
    reports: Vec<ReportNode>,
    /// The attempts files (`apply --rerun`) and their stats: a report reads them.
    attempts: Vec<(String, FileStamp)>,
}

/// A report node of the memo: its stage, key, the digest of its record's file list, and the
/// directory its files were written to (the stage's `out` when the memo was made).
#[derive(Debug, Serialize, Deserialize)]
struct ReportNode {
    stage: String,
    key: String,
    list: String,
    /// As UTF-8: a memo is not made for a report written to a path that is not.
    out: String,
}

/// A memo as read, with what could be checked without the manifest: its records' stats, its
/// blobs' sizes and its report files' stamps ([`read`]). [`check`] finishes the check.
pub struct Read {
    head: Head,
    /// Every record file still has its stat and every blob its size.
    fresh: bool,
    /// Per report of the head: whether its files under its `out` are all as stamped.
    intact: Vec<bool>,
    nodes_json: Vec<u8>,
}

/// A memo as read and checked: what a no-op apply from it needs.
pub struct Checked {
    counts: BTreeMap<String, usize>,
    reports: Vec<ReportNode>,
    /// Per report of `reports`: whether its files were all as stamped when checked.
    intact: Vec<bool>,
    /// The run record's `nodes` (every node cached), as JSON, as the full path writes it.
    nodes_json: Vec<u8>,
}

fn memo_path(store: &Store, manifest: &Path) -> PathBuf {
    store.manifest_file(manifest, "noop")
}

/// Whether the store holds a no-op memo of the manifest (checked or not).
pub fn exists(store: &Store, manifest: &Path) -> bool {
    memo_path(store, manifest).is_file()
}

/// The fingerprint of everything an apply's expansion reads except stored records, with the
/// team specs of `jobs` (the builder the expansion used, or a new one: the files it read) and
/// the predictions as this process read them. `None` when an input cannot be read (the full
/// path then reports it).
pub fn fingerprint(m: &Manifest, datasets: &Snapshots, jobs: &JobBuilder<'_>) -> Option<String> {
    let mut h = blake3::Hasher::new();
    let mut part = |label: &str, bytes: &[u8]| {
        h.update(label.as_bytes());
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part("magic", MAGIC.as_bytes());
    part("version", env!("CARGO_PKG_VERSION").as_bytes());
    // Another build of bench may derive keys differently: its memo is not this one's.
    part("exe", crate::store::exe_stamp()?.as_bytes());
    part("manifest", format!("{m:?}").as_bytes());
    for (name, (snapshot, tasks)) in datasets {
        part("dataset", name.as_bytes());
        part("snapshot", snapshot.as_bytes());
        part("tasks", &(*tasks as u64).to_le_bytes());
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
    if let Some(fact) = crate::backend::machine_fact(&super::backend_config(m)) {
        part("isolation", fact.as_bytes());
    }
    Some(h.finalize().to_hex().to_string())
}

/// One node of an apply in which every node was cached: its stage, address, key, and (report
/// nodes) the digest of the record's file list.
pub struct CachedNode {
    pub stage: String,
    pub address: String,
    pub key: String,
    pub report_list: Option<String>,
    /// The blobs its record references.
    pub blobs: Vec<String>,
}

/// Writes the memo of an apply in which every node in `nodes` was cached, after the manifest's
/// index was saved. Nothing is written if a record file or the index cannot be statted or is
/// too fresh to trust its stat (the next no-op then takes the full path and writes it).
/// Failing to write costs speed, never correctness.
pub fn save(store: &Store, m: &Manifest, fingerprint: &str, nodes: Vec<CachedNode>) {
    let manifest = m.path.as_path();
    let now = crate::store::now_ns();
    let settled = |stamp: Option<FileStamp>| stamp.filter(|s| s.settled(now, RACY_NS));
    let Some(index) = settled(store.index_stamp(manifest)) else {
        return;
    };
    let Some(attempts) = store
        .attempts_stamps()
        .into_iter()
        .map(|(k, st)| Some((k, settled(st)?)))
        .collect::<Option<Vec<_>>>()
    else {
        return;
    };
    let mut keys: Vec<&str> = nodes.iter().map(|n| n.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut records = String::with_capacity(keys.len() * 120);
    for key in keys {
        let Some(st) = settled(store.record_stamp(key)) else {
            return;
        };
        use std::fmt::Write;
        let _ = writeln!(
            records,
            "{key} {} {} {} {}",
            st.size, st.mtime_ns, st.ctime_ns, st.ino
        );
    }
    let mut blobs: Vec<&str> = nodes
        .iter()
        .flat_map(|n| n.blobs.iter().map(String::as_str))
        .collect();
    blobs.sort_unstable();
    blobs.dedup();
    records.push_str("blobs\n");
    for digest in blobs {
        let Some(size) = Digest::parse(digest).ok().and_then(|d| store.blob_size(&d)) else {
            return;
        };
        use std::fmt::Write;
        let _ = writeln!(records, "{digest} {size}");
    }
    let mut counts = BTreeMap::new();
    let mut reports = Vec::new();
    let mut run_nodes = BTreeMap::new();
    for n in nodes {
        *counts.entry(n.stage.clone()).or_insert(0) += 1;
        if let Some(list) = n.report_list {
            let Some(StageKind::Report(r)) = m.stages.get(&n.stage).map(|s| &s.kind) else {
                return;
            };
            let Some(out) = r.out.to_str() else {
                return;
            };
            reports.push(ReportNode {
                stage: n.stage.clone(),
                key: n.key.clone(),
                list,
                out: out.to_string(),
            });
        }
        run_nodes.insert(
            n.address,
            RunNode {
                key: Some(n.key),
                status: NodeStatus::Cached,
                error: None,
            },
        );
    }
    let head = Head {
        magic: MAGIC.to_string(),
        fingerprint: fingerprint.to_string(),
        index,
        counts,
        reports,
        attempts,
    };
    let mut body = serde_json::to_vec(&head).expect("memos serialize");
    body.push(b'\n');
    body.extend_from_slice(records.as_bytes());
    body.extend_from_slice(b"nodes\n");
    body.extend_from_slice(&serde_json::to_vec(&run_nodes).expect("run nodes serialize"));
    let mut bytes = format!("{}\n", crate::key::digest(&body)).into_bytes();
    bytes.extend_from_slice(&body);
    let path = memo_path(store, manifest);
    // The same memo again (a full no-op after one): no write.
    if fs_err::read(&path).is_ok_and(|old| old == bytes) {
        return;
    }
    let _ = crate::store::write_atomic(&path, &bytes);
}

/// The memo of the manifest at `manifest` (its canonical path), if it exists and verifies, with
/// what can be checked of it without the manifest: every record file's stat and every blob's
/// size (on two threads), and, on threads of their own at the same time, every report file's
/// stamp (all stat-bound: together they keep the cores busier than one after the other). The
/// caller holds the store's lock; an apply does this while its manifest loads.
pub fn read(store: &Store, manifest: &Path) -> Option<Read> {
    let bytes = fs_err::read(memo_path(store, manifest)).ok()?;
    let nl = bytes.iter().position(|&b| b == b'\n')?;
    let (sum, body) = (&bytes[..nl], &bytes[nl + 1..]);
    if sum != crate::key::digest(body).as_bytes() {
        return None;
    }
    let nl = body.iter().position(|&b| b == b'\n')?;
    let head: Head = serde_json::from_slice(&body[..nl]).ok()?;
    if head.magic != MAGIC {
        return None;
    }
    let rest = std::str::from_utf8(&body[nl + 1..]).ok()?;
    let (records, nodes_json) = rest.split_once("nodes\n")?;
    let (records, blobs) = records.split_once("blobs\n")?;
    let lines: Vec<&str> = records.lines().collect();
    let blob_lines: Vec<&str> = blobs.lines().collect();
    let (fresh, intact) = std::thread::scope(|s| {
        let reports = s.spawn(|| {
            head.reports
                .iter()
                .map(|r| crate::stages::report_files_intact(store, &r.list, Path::new(&r.out)))
                .collect::<Vec<bool>>()
        });
        let fresh = stored(store, &lines, &blob_lines);
        (fresh, reports.join().unwrap_or_default())
    });
    crate::timings::mark("no-op memo read");
    Some(Read {
        fresh: fresh && !lines.is_empty(),
        intact,
        nodes_json: nodes_json.as_bytes().to_vec(),
        head,
    })
}

/// Whether every record line (`key size mtime ctime ino`) still has its stat and every blob line
/// (`digest size`) its size, each list checked on two threads.
fn stored(store: &Store, lines: &[&str], blob_lines: &[&str]) -> bool {
    // Stats relative to the store's `actions/` and `objects/` (`Store::stats`, opened once and
    // shared by both threads): no walk of the store's own path per file.
    let stats = store.stats();
    let blobs_there = |part: &[&str]| {
        part.iter().all(|line| {
            let (digest, size) = line.split_once(' ').unwrap_or_default();
            let there = Digest::parse(digest).ok().and_then(|d| stats.blob_size(&d));
            there.is_some() && size.parse::<u64>().ok() == there
        })
    };
    let same = |part: &[&str]| {
        part.iter().all(|line| {
            let mut f = line.split(' ');
            let key = f.next().unwrap_or_default();
            let mut num = || f.next().and_then(|v| v.parse::<i128>().ok());
            let stamp = (|| {
                Some(FileStamp {
                    size: u64::try_from(num()?).ok()?,
                    mtime_ns: num()?,
                    ctime_ns: num()?,
                    ino: u64::try_from(num()?).ok()?,
                })
            })();
            stamp.is_some() && stats.record_stamp(key) == stamp
        })
    };
    let halves = |all: &[&str], check: &(dyn Fn(&[&str]) -> bool + Sync)| {
        let half = all.len().div_ceil(2).max(1);
        std::thread::scope(|s| {
            let mut parts = all.chunks(half);
            let (a, b) = (
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
            );
            let other = s.spawn(|| check(b));
            check(a) && other.join().unwrap_or(false)
        })
    };
    halves(lines, &same) && halves(blob_lines, &blobs_there)
}

/// The memo of `m` checked: `read` (the memo as [`read`] gave it while the manifest loaded, or
/// `None` to read it now) was made with `fingerprint`, the manifest's index is the one it was
/// made after, the attempts files are as they were, every record file still has its stat and
/// every blob its size, and every report node is of a report stage of `m` writing to the same
/// `out`. The caller holds the store's lock, and held it when `read` was taken.
pub fn check(
    store: &Store,
    m: &Manifest,
    fingerprint: &str,
    read: Option<Read>,
) -> Option<Checked> {
    let read = match read {
        Some(read) => read,
        None => self::read(store, &m.path)?,
    };
    let head = read.head;
    let same_outs = head.reports.iter().all(|r| {
        matches!(m.stages.get(&r.stage).map(|s| &s.kind),
            Some(StageKind::Report(stage)) if stage.out == Path::new(&r.out))
    });
    if !read.fresh
        || !same_outs
        || head.fingerprint != fingerprint
        || store.index_stamp(&m.path) != Some(head.index)
        || store
            .attempts_stamps()
            .into_iter()
            .map(|(k, st)| Some((k, st?)))
            .collect::<Option<Vec<_>>>()
            != Some(head.attempts)
    {
        return None;
    }
    Some(Checked {
        counts: head.counts,
        reports: head.reports,
        intact: read.intact,
        nodes_json: read.nodes_json,
    })
}

/// What a no-op apply from a memo did: the reports it wrote, and its counts per stage (every
/// node cached).
pub struct NoopRun {
    pub reports: Vec<PathBuf>,
    pub stages: Vec<crate::events::StageCounts>,
}

/// The no-op apply of a checked memo: a cached report's files are written again if they are
/// missing or differ (as the full path does), and the run record is saved with every node
/// cached. `None` if a report cannot be written from its record (the full path then
/// recomputes it); nothing was changed then.
pub fn apply(
    m: &Manifest,
    store: &Store,
    memo: Checked,
    mut run: RunRecord,
    events: &crate::events::Events,
) -> Result<Option<NoopRun>, String> {
    let mut reports = Vec::new();
    for (r, intact) in memo.reports.iter().zip(&memo.intact) {
        if !intact {
            let crate::store::Lookup::Hit(rec) = store.get_action_light(&r.key) else {
                return Ok(None);
            };
            if crate::stages::materialize(store, &rec.blobs, Path::new(&r.out)).is_err() {
                return Ok(None);
            }
        }
        reports.push(Path::new(&r.out).join("report.md"));
    }
    crate::timings::mark("no-op reports written");
    emit_cached(m, store, &run, &memo, events);
    run.ended_at = Some(jiff::Timestamp::now().to_string());
    run.status = crate::store::RunStatus::Complete;
    store
        .save_run_with_nodes(&run, &memo.nodes_json)
        .map_err(|e| e.to_string())?;
    let stages = m
        .stage_order
        .iter()
        .map(|s| crate::events::StageCounts {
            stage: s.clone(),
            cached: memo.counts.get(s).copied().unwrap_or(0) as u64,
            ..Default::default()
        })
        .collect();
    Ok(Some(NoopRun { reports, stages }))
}

/// The events of an apply whose every node is cached: the plan, a cache hit per node (only
/// for a JSON stream: reading the nodes back costs what the memo saves, and people see the
/// counts), and each stage's counts.
fn emit_cached(
    m: &Manifest,
    store: &Store,
    run: &RunRecord,
    memo: &Checked,
    events: &crate::events::Events,
) {
    use crate::events::{CacheHit, Event, RunStarted, StageCounts, StagePlan};
    let count = |s: &str| memo.counts.get(s).copied().unwrap_or(0) as u64;
    events.emit(Event::RunStarted(RunStarted {
        format: crate::events::EVENTS_FORMAT,
        run_id: run.id.clone(),
        manifest: m.path.display().to_string(),
        store: store.root().display().to_string(),
        stages: m
            .stage_order
            .iter()
            .map(|s| StagePlan {
                stage: s.clone(),
                kind: m.stages[s].kind.name().to_string(),
                to_run: 0,
                cached: count(s),
                shared: 0,
                estimated: false,
            })
            .collect(),
    }));
    if events.is_json()
        && let Ok(nodes) = serde_json::from_slice::<BTreeMap<String, RunNode>>(&memo.nodes_json)
    {
        for (address, node) in nodes {
            // An address is its stage's name, or starts with it (`gold/<task>`).
            let stage = m
                .stage_order
                .iter()
                .filter(|s| {
                    address == **s
                        || address
                            .strip_prefix(s.as_str())
                            .is_some_and(|r| r.starts_with('/'))
                })
                .max_by_key(|s| s.len())
                .cloned()
                .unwrap_or_default();
            events.emit(Event::CacheHit(CacheHit {
                stage,
                key: node.key.unwrap_or_default(),
                address,
                remote: false,
            }));
        }
    }
    for s in &m.stage_order {
        events.emit(Event::StageFinished(StageCounts {
            stage: s.clone(),
            cached: count(s),
            ..Default::default()
        }));
    }
}
