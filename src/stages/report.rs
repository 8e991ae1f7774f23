//! The report node: resolve rates per team with Wilson and clustered intervals, the paired
//! difference and McNemar test against the baseline, gold validity, cost and time, written to the report's `out` directory
//! as `report.md`, `report.html`, `report.json`, `results.parquet`, `predictions.jsonl` and
//! `artifacts/<team>/<task>/{patch.diff,eval.log,trajectory.txt}`. Every file is a blob of the
//! report's record, so a cached report is rewritten byte-identically when files are missing.

use std::collections::BTreeMap;
use std::path::Path;

use crate::jobs::{PairArtifacts, ReportInputs, ReportJob, ReportOutput};
use crate::report::document::{Context, PerTask, ReportDocument};
use crate::report::results::NodeRow;
use crate::report::results::{Prediction, TeamColumns, predictions_jsonl, results_parquet};
use crate::report::stats::{PairOutcome, PairState, StatsOptions, team_statistics};
use crate::report::{html, markdown};
use crate::store::{Blobs, Output, Store, write_atomic};

use super::{WorkError, WorkOutput};

/// A path component from a team or task name: no separators, no `..`.
fn component(s: &str) -> String {
    let c: String = s
        .chars()
        .map(|c| {
            if c == '/' || c == '\\' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    if c.is_empty() || c == "." || c == ".." {
        format!("_{c}")
    } else {
        c
    }
}

/// The relative directory of a pair's artifacts.
pub fn artifact_dir(team: &str, task: &str, replicate: u32) -> String {
    let mut d = format!("artifacts/{}/{}", component(team), component(task));
    if replicate > 0 {
        d.push_str(&format!("/replicate-{replicate}"));
    }
    d
}

/// The contents of every report file, by relative path, from the inputs alone (no I/O but
/// reading blobs through `read_blob`): byte-identical for identical inputs.
pub struct RenderedReport {
    pub document: ReportDocument,
    /// Relative path -> bytes, for the files rendered here.
    pub files: BTreeMap<String, Vec<u8>>,
    /// Relative path -> an existing blob digest (artifacts).
    pub linked: BTreeMap<String, String>,
}

/// The report's document (what `report.json` holds) from already priced inputs: the
/// statistics, every table's numbers. `bench view` shows it as the report renders it.
pub fn report_document(inputs: &ReportInputs) -> ReportDocument {
    document_of(inputs, &inputs.pairs)
}

/// The report's document from the inputs with `pairs` (priced) in place of theirs.
fn document_of(inputs: &ReportInputs, pairs: &[PairOutcome]) -> ReportDocument {
    let opts = StatsOptions {
        baseline: inputs.baseline.clone(),
        count_errors_as_failures: inputs.count_errors_as_failures,
    };
    let summary = team_statistics(pairs, &inputs.teams, &opts);
    ReportDocument::new(
        &Context {
            manifest: &inputs.manifest,
            description: inputs.description.as_deref(),
            bench_version: &inputs.bench_version,
            backend: &inputs.backend,
            network: &inputs.network,
            datasets: &inputs.datasets,
            since: inputs.since.as_deref(),
            gold: &inputs.gold,
            gold_reasons: &inputs.gold_reasons,
            promote: inputs.promote.as_ref(),
            audit: &inputs.audit,
            resolutions: &inputs.resolutions,
            scores: &inputs.scores,
            scorer: inputs.scorer.as_deref(),
        },
        &summary,
    )
    .with_halts(&halted_pairs(inputs))
    .with_reruns(&inputs.teams, pairs, &inputs.attempts)
}

/// Pairs whose solve did not run, with why (the budget halted it), from the solve rows.
fn halted_pairs(inputs: &ReportInputs) -> BTreeMap<(String, String, u32), String> {
    inputs
        .rows
        .iter()
        .filter(|r| r.node == "solve" && r.status == "not_run")
        .filter_map(|r| {
            let why = r.error.clone()?;
            Some(((r.task.clone(), r.team.clone(), r.replicate), why))
        })
        .collect()
}

/// The per-task table: each task's first-replicate cell per team, as the pairs' states word it
/// (`partial` from the resolutions, `not run (budget)` for a pair the budget halted).
fn per_task_cells<'a>(inputs: &ReportInputs, pairs: &'a [PairOutcome]) -> PerTask<'a> {
    let halted = halted_pairs(inputs);
    let partial: std::collections::BTreeSet<(&str, &str, u32)> = inputs
        .resolutions
        .iter()
        .filter(|r| r.resolution == crate::jobs::Resolution::Partial)
        .map(|r| (r.task.as_str(), r.team.as_str(), r.replicate))
        .collect();
    let mut per_task = PerTask::default();
    for p in pairs {
        let cell = match &p.state {
            PairState::Resolved => "resolved",
            PairState::Unresolved { timed_out: true } => "timed out",
            PairState::Unresolved { .. }
                if partial.contains(&(p.task.as_str(), p.team.as_str(), p.replicate)) =>
            {
                "partial"
            }
            PairState::Unresolved { .. } => "no",
            PairState::Errored { .. } => "errored",
            PairState::NotRun
                if halted.contains_key(&(p.task.clone(), p.team.clone(), p.replicate)) =>
            {
                "not run (budget)"
            }
            PairState::NotRun => "not run",
        };
        if p.replicate == 0 {
            per_task.insert(&p.task, &p.team, cell);
        }
    }
    per_task
}

/// Computes the statistics and renders every report file.
pub fn render_report(
    inputs: &ReportInputs,
    read_blob: &dyn Fn(&str) -> Result<Vec<u8>, String>,
) -> Result<RenderedReport, String> {
    // Priced beside the inputs: the pairs are copied, the rows are not. The copies, and the
    // per-task table borrowed from them, are dropped once the readable files are rendered:
    // they are not held while the Parquet file is encoded (the render's largest part).
    let costs = inputs.costs();
    let mut files = BTreeMap::new();
    let document = {
        let pairs = costs.priced_pairs(&inputs.pairs);
        let document = document_of(inputs, &pairs);
        let per_task = per_task_cells(inputs, &pairs);
        files.insert(
            "report.md".to_string(),
            markdown::render(&document, &per_task).into_bytes(),
        );
        files.insert(
            "report.html".to_string(),
            html::render(&document, &per_task).into_bytes(),
        );
        document
    };
    files.insert("report.json".to_string(), document.to_json());
    let mut rows: Vec<&NodeRow> = inputs.rows.iter().collect();
    rows.sort_by(|a, b| {
        (&a.task, &a.team, a.replicate, &a.node).cmp(&(&b.task, &b.team, b.replicate, &b.node))
    });
    let team_columns = document
        .teams
        .iter()
        .map(|t| {
            let columns = TeamColumns {
                rate: t.rate,
                wilson_low: t.wilson_low,
                wilson_high: t.wilson_high,
                cluster_low: t.cluster_low,
                cluster_high: t.cluster_high,
            };
            (t.name.clone(), columns)
        })
        .collect();
    files.insert(
        "results.parquet".to_string(),
        results_parquet(&rows, &team_columns, &|r| costs.row_cost(r))?,
    );
    let mut artifacts: Vec<&PairArtifacts> = inputs.artifacts.iter().collect();
    artifacts.sort_by(|a, b| (&a.task, &a.team, a.replicate).cmp(&(&b.task, &b.team, b.replicate)));
    let mut predictions = Vec::new();
    let mut linked = BTreeMap::new();
    for a in artifacts {
        if a.replicate == 0
            && let Some(patch) = &a.patch
        {
            predictions.push(Prediction {
                instance_id: a.task.clone(),
                model_name_or_path: a.team.clone(),
                model_patch: String::from_utf8_lossy(&read_blob(patch)?).into_owned(),
            });
        }
        let dir = artifact_dir(&a.team, &a.task, a.replicate);
        for (name, digest) in [
            ("patch.diff", &a.patch),
            ("eval.log", &a.log),
            ("trajectory.txt", &a.trajectory),
        ] {
            if let Some(d) = digest {
                linked.insert(format!("{dir}/{name}"), d.clone());
            }
        }
    }
    files.insert(
        "predictions.jsonl".to_string(),
        predictions_jsonl(&predictions),
    );
    Ok(RenderedReport {
        document,
        files,
        linked,
    })
}

/// The report executor: computes the report and writes its files to `out` (the job's own
/// directory, or the one the manifest names now: the key does not hold it).
pub fn write_report(store: &Store, job: &ReportJob, out: &Path) -> Result<WorkOutput, WorkError> {
    let infra = |e: &dyn std::fmt::Display| WorkError::Infra(e.to_string());
    let corrupt = std::cell::RefCell::new(None);
    let rendered = render_report(&job.inputs, &|d| {
        crate::types::Digest::parse(d)
            .map_err(|e| e.to_string())
            .and_then(|digest| store.get_blob(&digest).map_err(|e| e.to_string()))
            .inspect_err(|_| *corrupt.borrow_mut() = Some(d.to_string()))
    });
    crate::timings::mark("report rendered");
    let rendered = match (rendered, corrupt.into_inner()) {
        (Ok(r), _) => r,
        (Err(message), Some(digest)) => return Err(WorkError::CorruptInput { digest, message }),
        (Err(e), None) => return Err(infra(&e)),
    };
    let mut blobs = BTreeMap::new();
    for (name, bytes) in &rendered.files {
        blobs.insert(name.clone(), store.put_blob(bytes).map_err(|e| infra(&e))?);
    }
    blobs.extend(rendered.linked.clone());
    let blobs = Blobs::from(blobs);
    crate::timings::mark("report stored");
    materialize(store, &blobs, out).map_err(|e| match e {
        MaterializeError::Blob { digest, message } => WorkError::CorruptInput { digest, message },
        MaterializeError::Io(e) => infra(&format!(
            "cannot write the report to {}: {e}",
            out.display()
        )),
    })?;
    crate::timings::mark("report written");
    let promotion = rendered
        .document
        .promotion
        .as_ref()
        .map(|p| p.summary.clone());
    Ok(WorkOutput {
        output: Output::Report(ReportOutput {
            out: out.display().to_string(),
            files: rendered.files.keys().cloned().collect(),
            artifacts: rendered.linked.len(),
            promotion,
        }),
        blobs,
    })
}

/// Why a report's files could not be written.
#[derive(Debug, thiserror::Error)]
pub enum MaterializeError {
    /// A blob of the report is missing or corrupt: whatever produced it recomputes.
    #[error("{message}")]
    Blob { digest: String, message: String },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What was last written to a report's directory: a digest of its files' names and blob
/// digests, and each file's name, digest, size and mtime, in name order.
#[derive(serde::Serialize, serde::Deserialize)]
struct OutStamp<'a> {
    blobs: String,
    #[serde(borrow)]
    files: Vec<(
        std::borrow::Cow<'a, str>,
        std::borrow::Cow<'a, str>,
        u64,
        i128,
    )>,
}

/// The digest of a report's file list (names and blob digests), as its stamp holds it.
pub fn report_list_digest(blobs: &Blobs) -> String {
    let mut h = blake3::Hasher::new();
    for (name, digest) in blobs {
        h.update(name.as_bytes());
        h.update(b"\0");
        h.update(digest.as_bytes());
        h.update(b"\n");
    }
    h.finalize().to_hex().to_string()
}

fn out_stamp_path(store: &Store, out: &Path) -> std::path::PathBuf {
    store.root().join("index").join(format!(
        "out-{}.json",
        &crate::key::digest(out.to_string_lossy().as_bytes())[..32]
    ))
}

fn file_stat(p: &Path) -> Option<(u64, i128)> {
    fs_err::metadata(p).ok().map(|m| {
        let mtime = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        (m.len(), mtime)
    })
}

/// Whether `out` holds exactly what its stamp says was last written there, for the file list
/// of digest `list_digest` (every file's size and mtime as stamped; checked on two threads):
/// what [`materialize`] would leave alone, without reading the report's record.
pub fn report_files_intact(store: &Store, list_digest: &str, out: &Path) -> bool {
    fs_err::read(out_stamp_path(store, out))
        .ok()
        .and_then(|bytes| {
            serde_json::from_slice::<OutStamp>(&bytes)
                .ok()
                .map(|stamp| stamp_intact(&stamp, list_digest, out))
        })
        .unwrap_or(false)
}

/// Whether `stamp` is of the file list `list_digest` and every file under `out` still has the
/// size and mtime it stamps (statted on two threads: a report links thousands of artifacts), as
/// [`file_stat`] gives them.
fn stamp_intact(stamp: &OutStamp, list_digest: &str, out: &Path) -> bool {
    if stamp.blobs != list_digest {
        return false;
    }
    let half = stamp.files.len().div_ceil(2).max(1);
    // Each file statted relative to the open `out` (opened once, shared by both threads): no
    // walk of `out`'s own path per file.
    let under = &crate::files::StatUnder::new(out);
    std::thread::scope(|s| {
        let parts: Vec<_> = stamp
            .files
            .chunks(half)
            .map(|part| {
                s.spawn(move || {
                    part.iter().all(|(name, _, size, mtime)| {
                        under
                            .stat(Path::new(name.as_ref()), true)
                            .map(|s| (s.size, s.mtime_ns.max(0)))
                            == Some((*size, *mtime))
                    })
                })
            })
            .collect();
        parts.into_iter().all(|h| h.join().unwrap_or(false))
    })
}

/// Report files written at once.
const WRITERS: usize = 16;

/// Writes one report file at `path` from the blob `digest` (unless it holds those bytes
/// already). Returns its size and mtime.
fn write_report_file(
    store: &Store,
    path: &Path,
    digest: &str,
) -> Result<(u64, i128), MaterializeError> {
    let bytes = crate::types::Digest::parse(digest)
        .map_err(|e| e.to_string())
        .and_then(|d| store.get_blob(&d).map_err(|e| e.to_string()))
        .map_err(|message| MaterializeError::Blob {
            digest: digest.to_string(),
            message,
        })?;
    if fs_err::read(path).ok().as_deref() != Some(&bytes[..]) {
        write_atomic(path, &bytes)?;
    }
    Ok(file_stat(path).unwrap_or((0, 0)))
}

/// Writes a cached report's files again if they are missing or differ.
pub fn materialize(store: &Store, blobs: &Blobs, out: &Path) -> Result<(), MaterializeError> {
    // A stamp in the store records what was last written to `out` (digest, size, mtime): a file
    // whose size and mtime still match its stamp and whose digest is the record's is left alone
    // without reading it. Anything else (missing, edited, another digest) is rewritten. When
    // the file list is the stamp's (its digest matches), the stats are compared in order
    // ([`stamp_intact`]) and nothing else is built.
    let stamp_path = out_stamp_path(store, out);
    let stamp_bytes = fs_err::read(&stamp_path).unwrap_or_default();
    let old: Option<OutStamp> = serde_json::from_slice(&stamp_bytes).ok();
    let list_digest = report_list_digest(blobs);
    if old
        .as_ref()
        .is_some_and(|o| stamp_intact(o, &list_digest, out))
    {
        return Ok(());
    }
    let old_files: std::collections::HashMap<&str, (&str, u64, i128)> = old
        .as_ref()
        .map(|o| {
            o.files
                .iter()
                .map(|(n, d, s, m)| (n.as_ref(), (d.as_ref(), *s, *m)))
                .collect()
        })
        .unwrap_or_default();
    // The files missing or differing are written side by side: each write ends in a sync,
    // whose wait (not the disk's bandwidth) is the cost, and the disk commits concurrent
    // syncs together (a report of 2,405 files took 17 s one by one on a busy disk).
    let listed: Vec<(&String, &String)> = blobs.iter().collect();
    let stats: Vec<Option<(u64, i128)>> = listed
        .iter()
        .map(|(name, digest)| {
            let current = file_stat(&out.join(name));
            match (old_files.get(name.as_str()), current) {
                (Some((d, size, mtime)), Some((s, m)))
                    if d == digest && *size == s && *mtime == m =>
                {
                    current
                }
                _ => None,
            }
        })
        .collect();
    let todo: Vec<usize> = (0..listed.len()).filter(|&i| stats[i].is_none()).collect();
    let written = crate::parsers::in_pieces(todo.len(), WRITERS.min(todo.len()), |j| {
        let (name, digest) = listed[todo[j]];
        write_report_file(store, &out.join(name), digest)
    })?;
    let mut written = written.into_iter();
    let mut files = Vec::with_capacity(blobs.len());
    for ((name, digest), stat) in listed.into_iter().zip(stats) {
        let (size, mtime) = match stat {
            Some(s) => s,
            None => written.next().expect("one write per file to write"),
        };
        files.push((
            std::borrow::Cow::Borrowed(name.as_str()),
            std::borrow::Cow::Borrowed(digest.as_str()),
            size,
            mtime,
        ));
    }
    let stamp = OutStamp {
        blobs: list_digest,
        files,
    };
    let bytes = serde_json::to_vec(&stamp).expect("stamps serialize");
    write_atomic(&stamp_path, &bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_reports_files_are_written_side_by_side_and_only_where_needed() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::open(&d.path().join("store")).unwrap();
        let out = d.path().join("reports");
        // More files than writers, in nested directories, some sharing one blob.
        let (mut blobs, mut texts) = (BTreeMap::new(), BTreeMap::new());
        for i in 0..50 {
            let (name, text) = (
                format!("artifacts/t{}/f{i}.txt", i % 5),
                format!("file {}\n", i % 7),
            );
            blobs.insert(name.clone(), store.put_blob(text.as_bytes()).unwrap());
            texts.insert(name, text);
        }
        materialize(&store, &Blobs::from(blobs.clone()), &out).unwrap();
        for (name, text) in &texts {
            assert_eq!(&fs_err::read_to_string(out.join(name)).unwrap(), text);
        }
        // An edited and a deleted file are written again; the others are left alone.
        let (edited, deleted) = ("artifacts/t0/f10.txt", "artifacts/t1/f11.txt");
        fs_err::write(out.join(edited), "edited").unwrap();
        fs_err::remove_file(out.join(deleted)).unwrap();
        let untouched = out.join("artifacts/t2/f12.txt");
        let before = file_stat(&untouched);
        materialize(&store, &Blobs::from(blobs.clone()), &out).unwrap();
        assert_eq!(
            fs_err::read_to_string(out.join(edited)).unwrap(),
            "file 3\n"
        );
        assert_eq!(
            fs_err::read_to_string(out.join(deleted)).unwrap(),
            "file 4\n"
        );
        assert_eq!(file_stat(&untouched), before);
        // A blob the store lacks is the error, whichever writer met it.
        fs_err::remove_file(out.join(deleted)).unwrap();
        blobs.insert(deleted.to_string(), crate::key::digest(b"not stored"));
        let e = materialize(&store, &Blobs::from(blobs), &out).unwrap_err();
        assert!(matches!(e, MaterializeError::Blob { .. }), "{e}");
    }
}
