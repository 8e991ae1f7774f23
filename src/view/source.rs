//! Where a viewed experiment comes from: a manifest (its store, its first report stage) or a
//! report directory (the store beside it or `--store`, whose index names the manifest that
//! wrote the report). The report's record holds every pair's outcome and its files' digests;
//! solve, grade and gold records are read when a page asks for them. Not a reader of anything
//! outside the store but the manifest and its datasets (for task statements and test lists).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::jobs::ReportJob;
use crate::manifest::{Manifest, StageKind};
use crate::report::document::ReportDocument;
use crate::stages::ReportInputs;
use crate::store::{ActionRecord, Lookup, Output, Store, default_store_path};
use crate::tasks::Task;

use super::ViewError;
use crate::types::Digest;

/// One experiment as the viewer shows it.
pub struct Experiment {
    pub store: Store,
    pub manifest: Manifest,
    /// The report stage shown.
    pub report_stage: String,
    /// Where that report's files are.
    pub report_out: PathBuf,
    /// The report's inputs with costs derived from usage and prices.
    pub inputs: ReportInputs,
    pub document: ReportDocument,
    /// Address -> key, as the manifest's last apply left them.
    index: BTreeMap<String, String>,
    /// Whether the store held a report of the manifest when this was opened (without one,
    /// `inputs` has no pair: the page shows the running apply's progress instead).
    pub has_report: bool,
    /// The run whose finished event log this was opened after, if the log was finished then:
    /// a later finished run means a new report to open.
    pub run: Option<String>,
    /// The datasets' tasks by id (empty when they cannot be read now).
    pub tasks: BTreeMap<String, Arc<Task>>,
    /// Why tasks are missing, if they are.
    pub tasks_note: Option<String>,
}

impl Experiment {
    /// Opens what `target` names: a manifest file or a report directory.
    pub fn open(target: &Path, store_override: Option<&Path>) -> Result<Experiment, ViewError> {
        if target.is_dir() {
            if !target.join("report.json").is_file() {
                return Err(ViewError::NotAnExperiment {
                    path: target.to_path_buf(),
                });
            }
            let (manifest_path, store) = find_report(target, store_override)?;
            Experiment::from_manifest(&manifest_path, Some(store.root()))
        } else {
            Experiment::from_manifest(target, store_override)
        }
    }

    fn from_manifest(path: &Path, store_override: Option<&Path>) -> Result<Experiment, ViewError> {
        let manifest = crate::manifest::load(path).map_err(|e| ViewError::Manifest {
            path: path.to_path_buf(),
            source: Box::new(e),
        })?;
        let store_root = store_override
            .map(Path::to_path_buf)
            .unwrap_or_else(|| default_store_path(&manifest.dir));
        let Some((report_stage, out)) =
            manifest
                .stage_order
                .iter()
                .find_map(|s| match &manifest.stages[s].kind {
                    StageKind::Report(r) => Some((s.clone(), r.out.clone())),
                    _ => None,
                })
        else {
            return Err(ViewError::NoReportStage {
                manifest: manifest.path.clone(),
            });
        };
        // No store yet: nothing applied so far; the page waits for the first apply.
        let store = Store::open_existing(&store_root).unwrap_or_else(|| Store::at(&store_root));
        // The log first: a report written after it was read is opened again at the next look.
        let run = finished_run(&store, &manifest.path)?;
        let index = store.load_index(&manifest.path).nodes;
        let record = match index.get(&report_stage).map(|k| (k, store.get_action(k))) {
            Some((key, Lookup::Hit(r))) => Some((key, r)),
            _ => None,
        };
        let (inputs, has_report) = match record {
            Some((key, record)) => {
                let job: ReportJob =
                    serde_json::from_value(record.job).map_err(|e| ViewError::BadRecord {
                        store: store_root.clone(),
                        key: key.clone(),
                        reason: e.to_string(),
                    })?;
                (job.inputs.priced(), true)
            }
            None => (no_pairs_yet(&manifest, &report_stage), false),
        };
        let document = crate::stages::report_document(&inputs);
        let (tasks, tasks_note) = match crate::run::load_datasets(&manifest, Some(&store), false) {
            Ok((sets, unavailable)) => {
                let tasks: BTreeMap<String, Arc<Task>> = sets
                    .into_values()
                    .flat_map(|s| s.tasks.into_iter())
                    .collect();
                let note = (!unavailable.is_empty()).then(|| {
                    format!(
                        "datasets not in the store (statements and test lists of their tasks are not shown): {}",
                        unavailable.join(", ")
                    )
                });
                (tasks, note)
            }
            Err(e) => (
                BTreeMap::new(),
                Some(format!(
                    "the datasets cannot be read ({e}): statements and test lists are not shown"
                )),
            ),
        };
        Ok(Experiment {
            store,
            report_stage,
            report_out: out,
            inputs,
            document,
            index,
            has_report,
            run,
            tasks,
            tasks_note,
            manifest,
        })
    }

    /// The stages of a kind, in manifest order.
    fn stages_of(&self, want: fn(&StageKind) -> bool) -> Vec<&str> {
        self.manifest
            .stage_order
            .iter()
            .filter(|s| want(&self.manifest.stages[*s].kind))
            .map(String::as_str)
            .collect()
    }

    fn record_at(&self, address: &str) -> Option<ActionRecord> {
        match self.store.get_action(self.index.get(address)?) {
            Lookup::Hit(r) => Some(*r),
            _ => None,
        }
    }

    /// The record of a pair's solve, with its address.
    pub fn solve_record(&self, task: &str, team: &str, rep: u32) -> Option<(String, ActionRecord)> {
        self.stages_of(|k| matches!(k, StageKind::Solve(_)))
            .into_iter()
            .find_map(|s| {
                let a = format!("{s}/{task}/{team}/{rep}");
                self.record_at(&a).map(|r| (a, r))
            })
    }

    /// The record of a pair's grade, with its address.
    pub fn grade_record(&self, task: &str, team: &str, rep: u32) -> Option<(String, ActionRecord)> {
        let solves = self.stages_of(|k| matches!(k, StageKind::Solve(_)));
        self.stages_of(|k| matches!(k, StageKind::Grade(_)))
            .into_iter()
            .flat_map(|g| {
                solves
                    .iter()
                    .map(move |s| format!("{g}/{s}/{task}/{team}/{rep}"))
            })
            .find_map(|a| self.record_at(&a).map(|r| (a, r)))
            .filter(|(_, r)| matches!(r.output, Output::Grade(_)))
    }

    /// The record of a task's gold check.
    pub fn gold_record(&self, task: &str) -> Option<(String, ActionRecord)> {
        self.stages_of(|k| matches!(k, StageKind::Gold(_)))
            .into_iter()
            .find_map(|s| {
                let a = format!("{s}/{task}");
                self.record_at(&a).map(|r| (a, r))
            })
    }

    /// The path of a blob, when the store holds it.
    /// The path of a blob, when `digest` (from a URL or a record) is a digest and the store
    /// holds it.
    pub fn blob_path(&self, digest: &str) -> Option<PathBuf> {
        let digest = Digest::parse(digest).ok()?;
        self.store
            .has_blob(&digest)
            .then(|| self.store.blob_path(&digest))
    }

    /// A blob's bytes, verified against its digest.
    pub fn blob(&self, digest: &str) -> Option<Vec<u8>> {
        let digest = Digest::parse(digest).ok()?;
        self.store.get_blob(&digest).ok()
    }

    /// The digest of every blob a page may show: what the report links and what the pairs'
    /// solve and grade records name (a static export writes their pages).
    pub fn known_blobs(&self) -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        for a in &self.inputs.artifacts {
            out.extend(a.patch.iter().cloned());
            out.extend(a.trajectory.iter().cloned());
            out.extend(a.log.iter().cloned());
        }
        out
    }
}

/// The run of the manifest's event log if that log is finished.
fn finished_run(store: &Store, manifest: &Path) -> Result<Option<String>, ViewError> {
    let path = crate::run::event_log_path(store, manifest);
    let events = crate::run::read_event_log(&path)?.unwrap_or_default();
    Ok(events.iter().rev().find_map(|e| match e {
        crate::events::Event::RunFinished(f) => Some(f.run_id.clone()),
        _ => None,
    }))
}

/// The report's inputs before there is a report: the manifest's facts, its teams, no pair.
fn no_pairs_yet(m: &Manifest, report_stage: &str) -> ReportInputs {
    let mut teams: Vec<String> = Vec::new();
    for s in &m.stage_order {
        if let StageKind::Solve(solve) = &m.stages[s].kind {
            for t in &solve.teams {
                if !teams.contains(t) {
                    teams.push(t.clone());
                }
            }
        }
    }
    let (baseline, count_errors_as_failures) = match &m.stages[report_stage].kind {
        StageKind::Report(r) => (r.baseline.clone(), r.count_errors_as_failures),
        _ => (None, false),
    };
    ReportInputs {
        manifest: m.name.clone(),
        description: m.description.clone(),
        bench_version: env!("CARGO_PKG_VERSION").to_string(),
        backend: m.backend.kind.to_string(),
        network: BTreeMap::new(),
        datasets: m.datasets.keys().cloned().collect(),
        filters: Vec::new(),
        since: None,
        teams,
        baseline,
        count_errors_as_failures,
        gold: BTreeMap::new(),
        gold_reasons: BTreeMap::new(),
        pairs: Vec::new(),
        rows: Vec::new(),
        artifacts: Vec::new(),
        promote: None,
        usage: Vec::new(),
        pricing: BTreeMap::new(),
        audit: Vec::new(),
        resolutions: Vec::new(),
        scores: Vec::new(),
        scorer: None,
        attempts: Vec::new(),
    }
}

/// The manifest that wrote the report in `dir`, and its store: `--store`, or a `.bench`
/// store in `dir` or one of its ancestors whose index has a report written to `dir`.
fn find_report(dir: &Path, store_override: Option<&Path>) -> Result<(PathBuf, Store), ViewError> {
    let want = fs_err::canonicalize(dir)?;
    let candidates: Vec<PathBuf> = match store_override {
        Some(s) => vec![s.to_path_buf()],
        None => want.ancestors().map(|a| a.join(".bench")).collect(),
    };
    for root in &candidates {
        let Some(store) = Store::open_existing(root) else {
            continue;
        };
        let mut indexes: Vec<PathBuf> = fs_err::read_dir(root.join("index"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.extension().is_some_and(|x| x == "json")
                    && !p
                        .file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("out-"))
            })
            .collect();
        indexes.sort();
        for p in indexes {
            let Ok(index) = fs_err::read(&p).map_err(|e| e.to_string()).and_then(|b| {
                serde_json::from_slice::<crate::store::Index>(&b).map_err(|e| e.to_string())
            }) else {
                continue;
            };
            // Report nodes' addresses are their stage's name (no slash).
            for (address, key) in index.nodes.iter().filter(|(a, _)| !a.contains('/')) {
                let Lookup::Hit(r) = store.get_action_light(key) else {
                    continue;
                };
                if let Output::Report(out) = &r.output
                    && fs_err::canonicalize(&out.out).ok().as_deref() == Some(want.as_path())
                {
                    let _ = address;
                    return Ok((PathBuf::from(&index.manifest_path), store));
                }
            }
        }
    }
    Err(ViewError::ReportNotInStore {
        dir: dir.to_path_buf(),
        looked: candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}
