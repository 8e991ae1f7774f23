//! The experiment as its last apply goes: the `live` document, read from the store's event log
//! (`run/event_log.rs`) each time it is asked for. Per stage, how many nodes ended of how many
//! the plan counts and how many run now; per pair known so far (a solve the apply started or
//! found cached), where it is (`solving`, `grading`, ...) or its outcome once its grade ended,
//! read from the grade's stored record as the report reads it; and the task x team grid of
//! those pairs. Whether the apply runs is the store's apply lock's say: a log without
//! `run_finished` whose apply holds no lock and whose run record does not say it ended was
//! killed (`stopped`). Not the report: when the
//! apply finishes, the page shows the report the store then holds.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use serde::Serialize;
use serde_json::{Value, json};

use crate::events::{Event, Outcome, StagePlan, Tally};
use crate::jobs::Resolution;
use crate::manifest::{Manifest, StageKind};
use crate::store::{Lookup, RunRecord, RunStatus, Store, StoreLock};

use super::grid::{Grid, grid};

/// Where a pair is, before its outcome: its solve runs, its solve ended and its grade waits or
/// runs.
const SOLVING: &str = "solving";
const SOLVED: &str = "solved";
const GRADING: &str = "grading";

/// One stage's progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StageProgress {
    pub stage: String,
    pub kind: String,
    /// Nodes that ended (cached, done, shared, failed, not run, cancelled).
    pub done: u64,
    /// The nodes the plan counts (at most that many when `estimated`, exact once the stage
    /// finished).
    pub total: u64,
    pub estimated: bool,
    /// Nodes running now.
    pub running: u64,
    /// Nodes that failed (infrastructure errors).
    pub failed: u64,
}

/// The live document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Live {
    /// `none` (no apply logged), `running`, `stopped` (killed before its end), `finished`.
    pub state: &'static str,
    pub run_id: Option<String>,
    /// `complete`, `failed` or `interrupted`, once finished.
    pub status: Option<String>,
    pub stages: Vec<StageProgress>,
    pub columns: [&'static str; 4],
    /// `[task, team, replicate, outcome or where it is]`, sorted.
    pub pairs: Vec<(String, String, u32, String)>,
    pub grid: Grid,
}

/// The outcomes of grade records already read, by key (records never change).
pub type Outcomes = Mutex<HashMap<String, &'static str>>;

/// Where each pair is, by (task, team, replicate).
type Pairs = BTreeMap<(String, String, u32), &'static str>;

/// The live document of `manifest`'s last apply on `store`, from its `events` (`None`: no log).
pub fn live(
    manifest: &Manifest,
    store: &Store,
    events: Option<&[Event]>,
    teams: &[String],
    outcomes: &Outcomes,
) -> Live {
    let events = events.unwrap_or_default();
    let mut plans: Vec<StagePlan> = Vec::new();
    let mut run_id = None;
    let mut status = None;
    let mut tally = Tally::default();
    let mut running: BTreeMap<&str, (&str, u64)> = BTreeMap::new();
    let mut stage_ended: BTreeMap<&str, u64> = BTreeMap::new();
    let mut pairs = Pairs::new();
    let mut solve_keys: HashMap<(String, String, u32), &str> = HashMap::new();
    for e in events {
        tally.observe(e);
        match e {
            Event::RunStarted(s) => {
                plans = s.stages.clone();
                run_id = Some(s.run_id.clone());
            }
            Event::RunFinished(f) => status = Some(format!("{:?}", f.status).to_lowercase()),
            Event::StageFinished(c) => {
                stage_ended.insert(&c.stage, c.total());
            }
            Event::NodeStarted(n) => {
                running.insert(&n.address, (&n.stage, 1));
            }
            Event::NodeShared(n) => {
                running.insert(&n.address, (&n.stage, 1));
            }
            _ => {}
        }
        let (stage, address, key, outcome) = match e {
            Event::NodeStarted(n) => (&n.stage, &n.address, Some(&n.key), None),
            Event::NodeShared(n) => (&n.stage, &n.address, Some(&n.key), None),
            Event::CacheHit(h) => (&h.stage, &h.address, Some(&h.key), Some(Outcome::Done)),
            Event::NodeFinished(f) => {
                running.remove(f.address.as_str());
                (&f.stage, &f.address, f.key.as_ref(), Some(f.outcome))
            }
            _ => continue,
        };
        let Some(kind) = manifest.stages.get(stage).map(|s| &s.kind) else {
            continue;
        };
        match kind {
            StageKind::Solve(_) => {
                let Some(pair) = pair_of(address, stage) else {
                    continue;
                };
                if let Some(k) = key {
                    solve_keys.insert(pair.clone(), k);
                }
                let at = match outcome {
                    None => SOLVING,
                    Some(Outcome::Done) => SOLVED,
                    Some(Outcome::Failed) => "errored",
                    Some(Outcome::NotRun | Outcome::Cancelled) => "not run",
                };
                pairs.insert(pair, at);
            }
            StageKind::Grade(_) => {
                let Some(pair) = grade_pair(manifest, stage, address) else {
                    continue;
                };
                let at = match (outcome, key) {
                    (None, _) => GRADING,
                    (Some(Outcome::Done), Some(k)) => {
                        let solve = solve_keys.get(&pair).copied();
                        graded(store, k, solve, outcomes)
                    }
                    (Some(Outcome::Done | Outcome::Failed), _) => "errored",
                    (Some(Outcome::NotRun | Outcome::Cancelled), _) => "not run",
                };
                pairs.insert(pair, at);
            }
            _ => {}
        }
    }
    let stages = progress(&plans, &tally, &stage_ended, &running);
    let state = match (&run_id, &status) {
        (None, _) => "none",
        (Some(_), Some(_)) => "finished",
        (Some(id), None) if StoreLock::holder(store.root()).is_some() || ending(store, id) => {
            "running"
        }
        (Some(_), None) => "stopped",
    };
    let pairs: Vec<(String, String, u32, String)> = pairs
        .into_iter()
        .map(|((t, team, r), o)| (t, team, r, o.to_string()))
        .collect();
    Live {
        state,
        run_id,
        status,
        stages,
        columns: ["task", "team", "replicate", "outcome"],
        grid: grid(
            teams,
            pairs
                .iter()
                .map(|(t, team, r, o)| (t.as_str(), team.as_str(), *r, o.as_str())),
        ),
        pairs,
    }
}

/// Per stage of the plan, its progress: the nodes ended (exactly the stage's nodes once it
/// finished), those running.
fn progress(
    plans: &[StagePlan],
    tally: &Tally,
    stage_ended: &BTreeMap<&str, u64>,
    running: &BTreeMap<&str, (&str, u64)>,
) -> Vec<StageProgress> {
    let mut per_stage_running: BTreeMap<&str, u64> = BTreeMap::new();
    for (stage, n) in running.values() {
        *per_stage_running.entry(stage).or_default() += n;
    }
    plans
        .iter()
        .map(|p| {
            let c = tally.get(&p.stage);
            let ended = stage_ended.get(p.stage.as_str()).copied();
            StageProgress {
                stage: p.stage.clone(),
                kind: p.kind.clone(),
                done: c.total(),
                total: ended.unwrap_or(p.to_run + p.cached + p.shared),
                estimated: p.estimated && ended.is_none(),
                running: per_stage_running
                    .get(p.stage.as_str())
                    .copied()
                    .unwrap_or(0),
                failed: c.failed,
            }
        })
        .collect()
}

/// Whether the run `id` recorded its end (the apply released the store's lock and is about to
/// log `run_finished`), rather than dying while it ran.
fn ending(store: &Store, id: &str) -> bool {
    fs_err::read(store.run_path(id))
        .ok()
        .and_then(|b| serde_json::from_slice::<RunRecord>(&b).ok())
        .is_some_and(|r| r.status != RunStatus::Running)
}

/// The live document as the page reads it.
pub fn document(live: &Live) -> Value {
    serde_json::to_value(live).unwrap_or_else(|e| json!({"error": e.to_string()}))
}

/// `(task, team, replicate)` of a solve's address (`<stage>/<task>/<team>/<replicate>`; a task
/// id may hold a `/`, a team name may not).
fn pair_of(address: &str, stage: &str) -> Option<(String, String, u32)> {
    let rest = address.strip_prefix(stage)?.strip_prefix('/')?;
    let mut parts = rest.rsplitn(3, '/');
    let rep = parts.next()?.parse().ok()?;
    let team = parts.next()?;
    let task = parts.next()?;
    Some((task.to_string(), team.to_string(), rep))
}

/// The pair of a grade's address (`<stage>/<solve stage>/<task>/<team>/<replicate>`).
fn grade_pair(m: &Manifest, stage: &str, address: &str) -> Option<(String, String, u32)> {
    let rest = address.strip_prefix(stage)?.strip_prefix('/')?;
    m.stage_order
        .iter()
        .filter(|s| matches!(m.stages[*s].kind, StageKind::Solve(_)))
        .find_map(|s| pair_of(rest, s))
}

/// The outcome of a stored grade, as the report words it (a grade of a timed-out solve that
/// does not resolve is `timed out`).
fn graded(store: &Store, key: &str, solve: Option<&str>, outcomes: &Outcomes) -> &'static str {
    if let Some(o) = outcomes.lock().ok().and_then(|c| c.get(key).copied()) {
        return o;
    }
    let Lookup::Hit(r) = store.get_action_light(key) else {
        return "errored";
    };
    let Some(g) = r.grade() else {
        return "errored";
    };
    let solve_timed_out = solve.is_some_and(|k| match store.get_action_light(k) {
        Lookup::Hit(s) => s.solve().is_some_and(|s| s.timed_out),
        _ => false,
    });
    let o = if g.resolved {
        "resolved"
    } else if g.timed_out || solve_timed_out {
        "timed out"
    } else if g.resolution == Some(Resolution::Partial) {
        "partial"
    } else {
        "unresolved"
    };
    if let Ok(mut c) = outcomes.lock() {
        c.insert(key.to_string(), o);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::events::{
        CacheHit, NodeFinished, NodeStarted, RunFinished, RunStarted, RunStatus, StagePlan,
    };

    fn quickstart() -> Manifest {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/quickstart.toml");
        crate::manifest::load(&path).expect("the quickstart loads")
    }

    fn plan(stage: &str, to_run: u64, cached: u64, estimated: bool) -> StagePlan {
        StagePlan {
            stage: stage.into(),
            kind: stage.into(),
            to_run,
            cached,
            shared: 0,
            estimated,
        }
    }

    fn started(address: &str) -> Event {
        Event::NodeStarted(NodeStarted {
            stage: address.split('/').next().unwrap().into(),
            address: address.into(),
            key: format!("k-{address}"),
        })
    }

    fn finished(address: &str, outcome: Outcome) -> Event {
        Event::NodeFinished(NodeFinished {
            stage: address.split('/').next().unwrap().into(),
            address: address.into(),
            key: Some(format!("k-{address}")),
            outcome,
            detail: String::new(),
            shared_with: None,
            duration_ms: Some(1),
        })
    }

    fn run_started() -> Event {
        Event::RunStarted(RunStarted {
            format: crate::events::EVENTS_FORMAT,
            run_id: "r1".into(),
            manifest: "m".into(),
            store: "s".into(),
            stages: vec![
                plan("gold", 0, 2, false),
                plan("solve", 4, 0, true),
                plan("grade", 4, 0, true),
            ],
        })
    }

    fn teams() -> Vec<String> {
        vec!["oracle".into(), "nop".into()]
    }

    #[test]
    fn a_running_apply_shows_each_stages_progress_and_where_each_pair_is() {
        let m = quickstart();
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let events = vec![
            run_started(),
            Event::CacheHit(CacheHit {
                stage: "gold".into(),
                address: "gold/a".into(),
                key: "g".into(),
                remote: false,
            }),
            started("solve/a/oracle/0"),
            started("solve/a/nop/0"),
            started("solve/b/nop/0"),
            started("solve/b/oracle/0"),
            finished("solve/a/oracle/0", Outcome::Done),
            finished("solve/a/nop/0", Outcome::Done),
            finished("solve/b/nop/0", Outcome::Failed),
            started("grade/solve/a/oracle/0"),
            started("grade/solve/a/nop/0"),
            // Its record is not in the store: an error, not an outcome.
            finished("grade/solve/a/nop/0", Outcome::Done),
        ];
        let outcomes = Outcomes::default();
        let l = live(&m, &store, Some(&events), &teams(), &outcomes);
        // No apply holds the store's lock: the apply that wrote this log is gone.
        assert_eq!(l.state, "stopped");
        assert_eq!(l.run_id.as_deref(), Some("r1"));
        let row = |s: &str| l.stages.iter().find(|x| x.stage == s).unwrap().clone();
        assert_eq!(
            (row("gold").done, row("gold").total, row("gold").running),
            (1, 2, 0)
        );
        let solve = row("solve");
        assert_eq!(
            (
                solve.done,
                solve.total,
                solve.running,
                solve.failed,
                solve.estimated
            ),
            (3, 4, 1, 1, true)
        );
        assert_eq!((row("grade").done, row("grade").running), (1, 1));
        let pairs: Vec<(&str, &str, u32, &str)> = l
            .pairs
            .iter()
            .map(|(t, team, r, o)| (t.as_str(), team.as_str(), *r, o.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("a", "nop", 0, "errored"),
                ("a", "oracle", 0, "grading"),
                ("b", "nop", 0, "errored"),
                ("b", "oracle", 0, "solving"),
            ]
        );
        assert_eq!(l.grid.tasks, ["a", "b"]);
        assert_eq!(l.grid.teams, ["oracle", "nop"]);
        assert_eq!(l.grid.cells[1][0], [(0, "solving".to_string())]);
        // An apply holds the store's lock: it runs.
        let lock = StoreLock::acquire(store.root(), "bench apply").unwrap();
        assert_eq!(
            live(&m, &store, Some(&events), &teams(), &outcomes).state,
            "running"
        );
        drop(lock);
        // Its run record says it ended: it released the lock and is about to log its end.
        let mut run = crate::run::new_run_record(&m, "r1", "bench apply");
        store.save_run(&run).unwrap();
        assert_eq!(
            live(&m, &store, Some(&events), &teams(), &outcomes).state,
            "stopped"
        );
        run.status = crate::store::RunStatus::Complete;
        store.save_run(&run).unwrap();
        assert_eq!(
            live(&m, &store, Some(&events), &teams(), &outcomes).state,
            "running"
        );
    }

    #[test]
    fn a_finished_apply_says_so_and_its_stages_counts_are_exact() {
        let m = quickstart();
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let outcomes = Outcomes::default();
        let none = live(&m, &store, None, &teams(), &outcomes);
        assert_eq!(
            (none.state, none.stages.len(), none.pairs.len()),
            ("none", 0, 0)
        );
        let mut events = vec![
            run_started(),
            started("solve/a/oracle/0"),
            finished("solve/a/oracle/0", Outcome::Done),
        ];
        let mut counts = crate::events::StageCounts {
            stage: "solve".into(),
            done: 1,
            ..Default::default()
        };
        events.push(Event::StageFinished(counts.clone()));
        counts.stage = "grade".into();
        counts.done = 0;
        events.push(Event::StageFinished(counts));
        events.push(Event::RunFinished(RunFinished {
            run_id: "r1".into(),
            status: RunStatus::Complete,
            exit_code: 0,
            stages: vec![],
            reports: vec![],
            failures: vec![],
            remote: None,
        }));
        let l = live(&m, &store, Some(&events), &teams(), &outcomes);
        assert_eq!(
            (l.state, l.status.as_deref()),
            ("finished", Some("complete"))
        );
        let solve = l.stages.iter().find(|x| x.stage == "solve").unwrap();
        assert_eq!((solve.done, solve.total, solve.estimated), (1, 1, false));
        let grade = l.stages.iter().find(|x| x.stage == "grade").unwrap();
        assert_eq!((grade.done, grade.total, grade.estimated), (0, 0, false));
    }

    #[test]
    fn addresses_name_their_pairs() {
        assert_eq!(
            pair_of("solve/org/repo-1/solo/2", "solve"),
            Some(("org/repo-1".into(), "solo".into(), 2))
        );
        assert_eq!(pair_of("solve/t/solo/x", "solve"), None);
        assert_eq!(pair_of("solver/t/solo/0", "solve"), None);
    }
}
