//! The viewer's data: one JSON document per page path, the same for the server and the
//! static export. Paths (each also a file `data/<path>.js`):
//!
//! - `experiment`: the report's document, one compact row per pair and the task x team grid;
//! - `live`: the last apply as its event log tells it so far (progress per stage, every pair
//!   known yet and where it is, their grid): what the page polls while an apply runs;
//! - `task/<task>`: its statement, gold verdict, test lists and every team's pairs;
//! - `pair/<task>/<team>/<replicate>`: solve, grade, tests, diff, logs, trajectory summary;
//! - `blob/<digest>/<page>`: a page of a stored log or raw trajectory;
//! - `traj/<digest>` and `traj/<digest>/<run>/<page>`: the normalised trajectory and its steps.
//!
//! Names are encoded with [`super::encode`]. Not where anything is fetched or run.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::jobs::{GradeOutput, Resolution};
use crate::report::stats::PairState;
use crate::store::ActionRecord;

use super::highlight::Highlighter;
use super::trajectory::{self, Trajectory};
use super::{Experiment, decode, encode};
use crate::types::Digest;

/// Steps per trajectory page.
pub const STEPS_PER_PAGE: usize = 100;

/// How many parsed trajectories the server keeps.
const TRAJECTORY_CACHE: usize = 16;

/// An experiment with the caches its pages share.
pub struct Viewer {
    pub exp: Experiment,
    highlighter: Highlighter,
    trajectories: Mutex<HashMap<String, Arc<Trajectory>>>,
    /// The experiment page's document, built once (every pair's row).
    experiment: std::sync::OnceLock<Value>,
    /// The experiment compared with this one (`--compare`), answered under `b/`.
    other: Option<Box<Viewer>>,
    /// The outcomes of the grade records the live document has read.
    outcomes: super::live::Outcomes,
    /// The last apply's event log, read as it grows.
    log: Mutex<crate::run::EventLogReader>,
}

/// The outcome word of a pair, as the report's per-task table writes it.
pub fn outcome(state: &PairState, partial: bool) -> &'static str {
    match state {
        PairState::Resolved => "resolved",
        PairState::Unresolved { timed_out: true } => "timed out",
        PairState::Unresolved { .. } if partial => "partial",
        PairState::Unresolved { .. } => "unresolved",
        PairState::Errored { .. } => "errored",
        PairState::NotRun => "not run",
    }
}

type PairKey = (String, String, u32);

impl Viewer {
    pub fn new(exp: Experiment) -> Viewer {
        let log = crate::run::event_log_path(&exp.store, &exp.manifest.path);
        Viewer {
            log: Mutex::new(crate::run::EventLogReader::new(log)),
            exp,
            highlighter: Highlighter::new(),
            trajectories: Mutex::new(HashMap::new()),
            experiment: std::sync::OnceLock::new(),
            other: None,
            outcomes: Default::default(),
        }
    }

    /// This viewer comparing its experiment with `other` (pages under `b/`, and `compare`).
    pub fn compared_with(mut self, other: Viewer) -> Viewer {
        self.other = Some(Box::new(other));
        self
    }

    /// The experiments shown: this one, then the one compared with it.
    pub fn experiments(&self) -> Vec<&Experiment> {
        let mut out = vec![&self.exp];
        if let Some(other) = &self.other {
            out.push(&other.exp);
        }
        out
    }

    /// Every pair's outcome word.
    fn outcomes(&self) -> BTreeMap<PairKey, &'static str> {
        let partial = self.partial();
        self.exp
            .inputs
            .pairs
            .iter()
            .map(|p| {
                let key = (p.task.clone(), p.team.clone(), p.replicate);
                let o = outcome(&p.state, partial.contains(&key));
                (key, o)
            })
            .collect()
    }

    /// The two experiments side by side: each team's numbers, and every pair's outcome in
    /// both, the pairs whose outcome changed first.
    fn compare(&self) -> Option<Value> {
        let other = self.other.as_deref()?;
        let (a, b) = (self.outcomes(), other.outcomes());
        let keys: BTreeSet<&PairKey> = a.keys().chain(b.keys()).collect();
        let mut rows: Vec<(bool, &PairKey)> = keys
            .into_iter()
            .map(|k| (a.get(k) != b.get(k), k))
            .collect();
        rows.sort_by(|x, y| y.0.cmp(&x.0).then_with(|| x.1.cmp(y.1)));
        let changed = rows.iter().filter(|r| r.0).count();
        let team = |v: &Viewer, name: &str| {
            v.exp
                .document
                .teams
                .iter()
                .find(|t| t.name == name)
                .map(|t| json!({"tasks": t.tasks, "resolved": t.resolved, "rate": t.rate}))
        };
        let mut names: Vec<&str> = self.exp.inputs.teams.iter().map(String::as_str).collect();
        for t in &other.exp.inputs.teams {
            if !names.contains(&t.as_str()) {
                names.push(t);
            }
        }
        let side = |v: &Viewer| json!({"name": v.exp.manifest.name, "manifest": v.exp.manifest.path.display().to_string()});
        Some(json!({
            "a": side(self),
            "b": side(other),
            "teams": names.iter().map(|n| json!({"name": n, "a": team(self, n), "b": team(other, n)})).collect::<Vec<_>>(),
            "changed": changed,
            "pairs": rows.iter().map(|(c, k)| json!([k.0, k.1, k.2, a.get(*k), b.get(*k), c])).collect::<Vec<_>>(),
        }))
    }

    fn partial(&self) -> BTreeSet<PairKey> {
        self.exp
            .inputs
            .resolutions
            .iter()
            .filter(|r| r.resolution == Resolution::Partial)
            .map(|r| (r.task.clone(), r.team.clone(), r.replicate))
            .collect()
    }

    fn flags(&self) -> BTreeMap<PairKey, Vec<&crate::protocols::AuditFlag>> {
        let mut out: BTreeMap<PairKey, Vec<_>> = BTreeMap::new();
        for a in &self.exp.inputs.audit {
            out.entry((a.task.clone(), a.team.clone(), a.replicate))
                .or_default()
                .extend(a.flags.iter());
        }
        out
    }

    /// The document at `path`, if there is one.
    pub fn data(&self, path: &str) -> Option<Value> {
        let parts: Vec<&str> = path.split('/').collect();
        match parts.as_slice() {
            ["experiment"] => Some(self.experiment.get_or_init(|| self.experiment()).clone()),
            ["compare"] => self.compare(),
            ["live"] => Some(self.live()),
            ["b", rest @ ..] => self.other.as_ref()?.data(&rest.join("/")),
            ["task", t] => self.task(&decode(t)?),
            ["pair", t, team, rep] => self.pair(&decode(t)?, &decode(team)?, rep.parse().ok()?),
            ["blob", d, page] => self.blob_page(d, page.parse().ok()?),
            ["traj", d] => self.trajectory_summary(d),
            ["traj", d, run, page] => {
                self.trajectory_page(d, run.parse().ok()?, page.parse().ok()?)
            }
            _ => None,
        }
    }

    /// Every path the pages can reach, for the static export (blob pages and trajectory
    /// pages included).
    pub fn all_paths(&self) -> Vec<String> {
        let mut out = vec!["experiment".to_string(), "live".to_string()];
        if let Some(other) = &self.other {
            out.push("compare".to_string());
            out.extend(other.all_paths().into_iter().map(|p| format!("b/{p}")));
        }
        let tasks: BTreeSet<&str> = self
            .exp
            .inputs
            .pairs
            .iter()
            .map(|p| p.task.as_str())
            .chain(self.exp.inputs.gold.keys().map(String::as_str))
            .collect();
        for t in tasks {
            out.push(format!("task/{}", encode(t)));
        }
        let mut blobs = BTreeSet::new();
        let mut trajectories = BTreeSet::new();
        for p in &self.exp.inputs.pairs {
            out.push(format!(
                "pair/{}/{}/{}",
                encode(&p.task),
                encode(&p.team),
                p.replicate
            ));
            if let Some((_, r)) = self.exp.solve_record(&p.task, &p.team, p.replicate) {
                blobs.extend(r.blobs.values().cloned());
                if let Some(t) = r.blobs.get("trajectory") {
                    trajectories.insert(t.clone());
                }
            }
            if let Some((_, r)) = self.exp.grade_record(&p.task, &p.team, p.replicate) {
                blobs.extend(r.blobs.values().cloned());
            }
        }
        blobs.extend(self.exp.known_blobs());
        for d in blobs {
            let Some(path) = self.exp.blob_path(&d) else {
                continue;
            };
            let total = fs_err::metadata(&path).map(|m| m.len()).unwrap_or(0);
            for k in 0..super::paging::page_count(total) {
                out.push(format!("blob/{d}/{k}"));
            }
        }
        for d in trajectories {
            let Some(t) = self.parsed_trajectory(&d) else {
                continue;
            };
            out.push(format!("traj/{d}"));
            for (i, run) in t.runs.iter().enumerate() {
                for k in 0..run.steps.len().div_ceil(STEPS_PER_PAGE).max(1) {
                    out.push(format!("traj/{d}/{i}/{k}"));
                }
            }
        }
        out
    }

    fn experiment(&self) -> Value {
        let inputs = &self.exp.inputs;
        let partial = self.partial();
        let flags = self.flags();
        let mut flag_names = BTreeSet::new();
        let pairs: Vec<Value> = inputs
            .pairs
            .iter()
            .map(|p| {
                let key = (p.task.clone(), p.team.clone(), p.replicate);
                let f: Vec<&str> = flags
                    .get(&key)
                    .map(|v| v.iter().map(|f| f.reason.as_str()).collect())
                    .unwrap_or_default();
                flag_names.extend(f.iter().map(|s| s.to_string()));
                json!([
                    p.task,
                    p.team,
                    p.replicate,
                    outcome(&p.state, partial.contains(&key)),
                    p.cost_usd,
                    p.wall_time_s,
                    p.repo,
                    p.language,
                    f,
                ])
            })
            .collect();
        let grid = super::grid::grid(
            &inputs.teams,
            inputs.pairs.iter().map(|p| {
                let key = (p.task.clone(), p.team.clone(), p.replicate);
                (
                    p.task.as_str(),
                    p.team.as_str(),
                    p.replicate,
                    outcome(&p.state, partial.contains(&key)),
                )
            }),
        );
        json!({
            "name": self.exp.manifest.name,
            "description": self.exp.manifest.description,
            "manifest": self.exp.manifest.path.display().to_string(),
            "store": self.exp.store.root().display().to_string(),
            "report_stage": self.exp.report_stage,
            "report_out": self.exp.report_out.display().to_string(),
            "document": self.exp.document,
            "gold": inputs.gold,
            "network": inputs.network,
            "columns": ["task", "team", "replicate", "outcome", "cost_usd", "wall_time_s", "repo", "language", "flags"],
            "pairs": pairs,
            "grid": grid,
            "flags": flag_names,
            "tasks_note": self.exp.tasks_note,
            "compare": self.other.as_ref().map(|o| o.exp.manifest.name.clone()),
            "has_report": self.exp.has_report,
            "run": self.exp.run,
        })
    }

    /// The last apply as its event log tells it so far (see `live.rs`).
    pub fn live_now(&self) -> Result<super::live::Live, super::ViewError> {
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        let events = log.read()?;
        Ok(super::live::live(
            &self.exp.manifest,
            &self.exp.store,
            events,
            &self.exp.inputs.teams,
            &self.outcomes,
        ))
    }

    fn live(&self) -> Value {
        match self.live_now() {
            Ok(l) => super::live::document(&l),
            Err(e) => json!({"state": "error", "error": e.to_string()}),
        }
    }

    fn task(&self, task: &str) -> Option<Value> {
        let inputs = &self.exp.inputs;
        let pairs: Vec<_> = inputs.pairs.iter().filter(|p| p.task == task).collect();
        if pairs.is_empty() && !inputs.gold.contains_key(task) {
            return None;
        }
        let partial = self.partial();
        let flags = self.flags();
        let t = self.exp.tasks.get(task);
        let rows: Vec<Value> = pairs
            .iter()
            .map(|p| {
                let key = (p.task.clone(), p.team.clone(), p.replicate);
                let usage = inputs
                    .usage
                    .iter()
                    .find(|u| u.task == p.task && u.team == p.team && u.replicate == p.replicate);
                let tokens = usage.and_then(|u| {
                    let counted: Vec<_> = u.runs.iter().filter_map(|r| r.tokens).collect();
                    (!counted.is_empty()).then(|| {
                        counted
                            .iter()
                            .fold((0, 0), |(i, o), t| (i + t.input, o + t.output))
                    })
                });
                json!({
                    "team": p.team,
                    "replicate": p.replicate,
                    "outcome": outcome(&p.state, partial.contains(&key)),
                    "reason": match &p.state { PairState::Errored { reason } => Some(reason), _ => None },
                    "cost_usd": p.cost_usd,
                    "wall_time_s": p.wall_time_s,
                    "input_tokens": tokens.map(|t| t.0),
                    "output_tokens": tokens.map(|t| t.1),
                    "runs": usage.map(|u| u.runs.len()),
                    "flags": flags.get(&key).map(|v| v.len()).unwrap_or(0),
                })
            })
            .collect();
        let gold = self
            .exp
            .gold_record(task)
            .and_then(|(_, r)| r.grade().cloned());
        Some(json!({
            "task": task,
            "repo": t.map(|t| t.repo.clone()).or_else(|| pairs.first().and_then(|p| p.repo.clone())),
            "language": t.and_then(|t| t.language.clone()).or_else(|| pairs.first().and_then(|p| p.language.clone())),
            "created_at": t.map(|t| t.created_at.clone()),
            "statement": t.map(|t| t.problem_statement.clone()),
            "fail_to_pass": t.map(|t| t.fail_to_pass.clone()),
            "pass_to_pass": t.map(|t| t.pass_to_pass.clone()),
            "gold": inputs.gold.get(task),
            "gold_grade": gold.map(|g| json!({
                "resolved": g.resolved,
                "duration_ms": g.duration_ms,
                "fail_to_pass_failure": g.fail_to_pass_failure,
                "pass_to_pass_failure": g.pass_to_pass_failure,
            })),
            "teams": inputs.teams,
            "pairs": rows,
            "tasks_note": self.exp.tasks_note,
        }))
    }

    /// Blob descriptors: name, digest, size, pages.
    fn blob_entries(&self, r: &ActionRecord) -> Vec<Value> {
        r.blobs
            .iter()
            .map(|(name, d)| {
                let size = Digest::parse(d)
                    .ok()
                    .and_then(|d| self.exp.store.blob_size(&d));
                json!({
                    "name": name,
                    "digest": d,
                    "bytes": size,
                    "pages": size.map(super::paging::page_count),
                })
            })
            .collect()
    }

    fn pair(&self, task: &str, team: &str, rep: u32) -> Option<Value> {
        let inputs = &self.exp.inputs;
        let p = inputs
            .pairs
            .iter()
            .find(|p| p.task == task && p.team == team && p.replicate == rep)?;
        let key = (p.task.clone(), p.team.clone(), p.replicate);
        let solve = self.exp.solve_record(task, team, rep);
        let grade = self.exp.grade_record(task, team, rep);
        let g: Option<&GradeOutput> = grade.as_ref().and_then(|(_, r)| r.grade());
        let statuses: BTreeMap<String, Value> = grade
            .as_ref()
            .and_then(|(_, r)| r.blobs.get("statuses"))
            .and_then(|d| self.exp.blob(d))
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let tests = g.map(|g| tests_table(g, &statuses)).unwrap_or_default();
        let patch_digest = solve
            .as_ref()
            .and_then(|(_, r)| r.solve().map(|s| s.patch.clone()));
        let diff = patch_digest
            .as_deref()
            .and_then(|d| self.exp.blob(d))
            .map(|b| super::diff::parse(&String::from_utf8_lossy(&b), &self.highlighter));
        let trajectory = solve
            .as_ref()
            .and_then(|(_, r)| r.blobs.get("trajectory").cloned());
        let flags: Vec<Value> = self
            .flags()
            .get(&key)
            .map(|v| {
                v.iter()
                    .map(|f| json!({"path": f.path, "reason": f.reason}))
                    .collect()
            })
            .unwrap_or_default();
        let usage = inputs
            .usage
            .iter()
            .find(|u| u.task == task && u.team == team && u.replicate == rep);
        let runs: Vec<Value> = usage
            .map(|u| {
                u.runs
                    .iter()
                    .map(|r| {
                        json!({
                            "role": r.role,
                            "harness": r.harness,
                            "model": r.model,
                            "tokens": r.tokens,
                            "cost_usd": r.cost_usd(&inputs.pricing),
                            "cost_basis": r.cost_basis(&inputs.pricing).name(),
                            "timed_out": r.timed_out,
                            "no_model": r.no_model,
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let partial = self.partial().contains(&key);
        let artifact_dir = crate::stages::artifact_dir(team, task, rep);
        Some(json!({
            "task": task,
            "team": team,
            "replicate": rep,
            "outcome": outcome(&p.state, partial),
            "reason": match &p.state { PairState::Errored { reason } => Some(reason), _ => None },
            "cost_usd": p.cost_usd,
            "cost_basis": p.cost_basis,
            "wall_time_s": p.wall_time_s,
            "repo": p.repo,
            "language": p.language,
            "network": inputs.network,
            "solve": solve.as_ref().map(|(a, r)| json!({
                "address": a,
                "key": r.key,
                "started_at": r.started_at,
                "duration_ms": r.duration_ms,
                "output": r.output,
                "blobs": self.blob_entries(r),
            })),
            "grade": grade.as_ref().map(|(a, r)| json!({
                "address": a,
                "key": r.key,
                "started_at": r.started_at,
                "duration_ms": r.duration_ms,
                "output": r.grade(),
                "blobs": self.blob_entries(r),
            })),
            "tests": tests,
            "flags": flags,
            "runs": runs,
            // `apply --rerun`: every attempt, oldest first (the last counts).
            "attempts": inputs.attempts.iter()
                .find(|a| a.task == task && a.team == team && a.replicate == rep)
                .map(|a| &a.attempts),
            "patch": patch_digest,
            "diff": diff,
            "trajectory": trajectory,
            "artifact_dir": artifact_dir,
            "teams": inputs.teams,
            "replicates": inputs.pairs.iter().filter(|q| q.task == task && q.team == team).map(|q| q.replicate).collect::<Vec<_>>(),
        }))
    }

    fn blob_page(&self, digest: &str, page: u64) -> Option<Value> {
        let path = self.exp.blob_path(digest)?;
        let page = super::paging::read_page(&path, page).ok()??;
        let mut v = serde_json::to_value(page).ok()?;
        v["digest"] = json!(digest);
        Some(v)
    }

    /// The parsed trajectory of a stored blob (cached).
    fn parsed_trajectory(&self, digest: &str) -> Option<Arc<Trajectory>> {
        if let Some(t) = self
            .trajectories
            .lock()
            .ok()
            .and_then(|c| c.get(digest).cloned())
        {
            return Some(t);
        }
        let path = self.exp.blob_path(digest)?;
        let t = Arc::new(trajectory::read_file(&path, &self.exp.inputs.pricing).ok()?);
        if let Ok(mut c) = self.trajectories.lock() {
            if c.len() >= TRAJECTORY_CACHE {
                c.clear();
            }
            c.insert(digest.to_string(), t.clone());
        }
        Some(t)
    }

    fn trajectory_summary(&self, digest: &str) -> Option<Value> {
        let t = self.parsed_trajectory(digest)?;
        let total = Digest::parse(digest)
            .ok()
            .and_then(|d| self.exp.store.blob_size(&d));
        Some(json!({
            "digest": digest,
            "bytes": total,
            "raw_pages": total.map(super::paging::page_count),
            "runs": t.runs.iter().map(|r| json!({
                "role": r.role,
                "agent": r.agent,
                "format": r.format,
                "steps": r.steps.len(),
                "pages": r.steps.len().div_ceil(STEPS_PER_PAGE).max(1),
                "tokens": r.totals(),
                "cost_usd": r.cost_usd(),
                "files": r.files,
                "left_out": r.left_out,
                "raw_start": r.raw_start,
                "raw_end": r.raw_end,
            })).collect::<Vec<_>>(),
        }))
    }

    fn trajectory_page(&self, digest: &str, run: usize, page: usize) -> Option<Value> {
        let t = self.parsed_trajectory(digest)?;
        let r = t.runs.get(run)?;
        let pages = r.steps.len().div_ceil(STEPS_PER_PAGE).max(1);
        if page >= pages {
            return None;
        }
        let steps = r
            .steps
            .iter()
            .skip(page * STEPS_PER_PAGE)
            .take(STEPS_PER_PAGE)
            .collect::<Vec<_>>();
        Some(json!({
            "digest": digest,
            "run": run,
            "role": r.role,
            "page": page,
            "pages": pages,
            "first": page * STEPS_PER_PAGE,
            "steps": steps,
        }))
    }
}

/// The per-test table: every FAIL_TO_PASS and PASS_TO_PASS test, what the grade expects
/// (each passes after the patch) and what the log gave (the parser's status, or missing).
fn tests_table(g: &GradeOutput, statuses: &BTreeMap<String, Value>) -> Vec<Value> {
    let got = |name: &str, passed: bool| -> String {
        match statuses.get(name) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None if passed => "pass".into(),
            None => "missing".into(),
        }
    };
    let mut rows = Vec::new();
    for (list, kind, passed) in [
        (&g.fail_to_pass_failure, "FAIL_TO_PASS", false),
        (&g.fail_to_pass_success, "FAIL_TO_PASS", true),
        (&g.pass_to_pass_failure, "PASS_TO_PASS", false),
        (&g.pass_to_pass_missing, "PASS_TO_PASS", false),
        (&g.pass_to_pass_success, "PASS_TO_PASS", true),
    ] {
        for name in list {
            let missing = std::ptr::eq(list, &g.pass_to_pass_missing);
            rows.push(json!({
                "name": name,
                "kind": kind,
                "expected": "pass",
                "got": if missing { "missing".to_string() } else { got(name, passed) },
                "ok": passed,
            }));
        }
    }
    rows
}
