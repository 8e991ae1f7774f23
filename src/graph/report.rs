//! What a report reads, gathered from the node graph: its settings, the manifest's facts it
//! prints (name, description, backend, datasets with revisions, the samples' filters), and per
//! pair its outcome, rows, artifacts and recorded model use. This is the report job's content,
//! so everything the report prints is in its key. In plan mode (`bench report`), pairs not
//! graded yet count as not run.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::{Graph, NodeKind, NodeState};
use crate::jobs::PairUsage;
use crate::jobs::{PairArtifacts, ReportInputs};
use crate::manifest::{Manifest, StageKind};
use crate::report::document::{AttemptSummary, PairAttempts};
use crate::report::results::NodeRow;
use crate::report::stats::{PairOutcome, PairState};
use crate::tasks::Task;

fn row_status(state: &NodeState) -> &'static str {
    match state {
        NodeState::Cached(_) | NodeState::Done(_) => "ok",
        NodeState::Failed(_) => "failed",
        _ => "not_run",
    }
}

/// A report row of a solve or grade node; the kind-specific fields are the caller's. `error` is
/// the outcome's own error, shown when the node did not fail.
fn row(
    kind: &'static str,
    node: &super::Node,
    task: &Task,
    team: &str,
    replicate: u32,
    error: Option<String>,
) -> NodeRow {
    NodeRow {
        node: kind.into(),
        address: node.address.clone(),
        key: node.state.record().map(|r| r.key.clone()),
        task: task.instance_id.clone(),
        repo: Some(task.repo.clone()),
        language: task.language.clone(),
        team: team.to_string(),
        replicate,
        status: row_status(&node.state).into(),
        errored: matches!(node.state, NodeState::Failed(_)),
        error: match &node.state {
            NodeState::Failed(e) => Some(e.clone()),
            _ => error,
        },
        ..NodeRow::default()
    }
}

fn artifact_entry<'a>(
    artifacts: &'a mut BTreeMap<(String, String, u32), PairArtifacts>,
    task: &Task,
    team: &str,
    replicate: u32,
) -> &'a mut PairArtifacts {
    artifacts
        .entry((task.instance_id.clone(), team.to_string(), replicate))
        .or_insert_with(|| PairArtifacts {
            task: task.instance_id.clone(),
            team: team.to_string(),
            replicate,
            ..Default::default()
        })
}

/// Gathers the report's inputs for a report stage with `needs`.
pub fn report_inputs(
    graph: &Graph<'_>,
    needs: &[String],
    r: &crate::manifest::ReportStage,
) -> ReportInputs {
    let m = graph.manifest;
    let stages = graph.report_input_stages(needs);
    // Solve nodes that have a grade node (whose pair the grade reports).
    let graded: HashSet<usize> = graph
        .nodes
        .iter()
        .filter(|n| !matches!(n.state, NodeState::Retracted))
        .filter_map(|n| match &n.kind {
            NodeKind::Grade { source, .. } => Some(*source),
            _ => None,
        })
        .collect();
    let (since, datasets, filters, teams, models) = manifest_facts(m, &stages);
    let mut g = Gathered::default();
    for s in &stages {
        for id in graph.stage_nodes(s) {
            let node = &graph.nodes[*id];
            match &node.kind {
                NodeKind::Gold { task, empty } => g.gold(graph, s, node, task, *empty),
                NodeKind::Grade {
                    task,
                    source,
                    team,
                    replicate,
                } => g.grade(graph, node, (task, *source, team, *replicate), &r.scorer),
                NodeKind::Solve {
                    task,
                    team,
                    replicate,
                } => g.solve(node, *id, (task, team, *replicate), &graded),
                _ => {}
            }
        }
    }
    g.sort();
    let pricing = models
        .into_iter()
        .filter_map(|mo| m.pricing.get(&mo).map(|p| (mo, *p)))
        .collect();
    let Gathered {
        gold,
        gold_reasons,
        pairs,
        rows,
        usage,
        audit,
        resolutions,
        scores,
        artifacts,
    } = g;
    ReportInputs {
        manifest: m.name.clone(),
        description: m.description.clone(),
        bench_version: env!("CARGO_PKG_VERSION").to_string(),
        backend: m.backend.kind.to_string(),
        network: network_policy(m, &teams),
        datasets,
        filters,
        since,
        teams,
        baseline: r.baseline.clone(),
        count_errors_as_failures: r.count_errors_as_failures,
        gold,
        gold_reasons,
        pairs,
        rows,
        artifacts: artifacts.into_values().collect(),
        promote: r.promote.clone(),
        usage,
        pricing,
        audit,
        resolutions,
        scorer: (!scores.is_empty()).then(|| r.scorer.describe()),
        scores,
        attempts: rerun_attempts(graph, &stages),
    }
}

/// The manifest's facts a report prints: the first `since` of its samples, each sample's dataset
/// (with its revision) and filters, and the teams of the solve stages among `stages` with the
/// models their agents use.
#[expect(
    clippy::type_complexity,
    reason = "five facts, each named where it is destructured"
)]
fn manifest_facts(
    m: &crate::manifest::Manifest,
    stages: &[String],
) -> (
    Option<String>,
    Vec<String>,
    Vec<crate::types::SampleFilters>,
    Vec<String>,
    BTreeSet<String>,
) {
    let mut teams: Vec<String> = Vec::new();
    let mut models = BTreeSet::new();
    let mut since = None;
    let mut datasets = Vec::new();
    let mut filters = Vec::new();
    for s in &m.stage_order {
        match &m.stages[s].kind {
            StageKind::Sample(sample) => {
                since = since.or(sample.filters.since.clone());
                filters.push(sample.filters.clone());
                datasets.push(match &m.datasets[&sample.dataset].source {
                    crate::manifest::DatasetSource::Path(_) => {
                        format!("{} (local)", sample.dataset)
                    }
                    crate::manifest::DatasetSource::Hub { repo, revision, .. } => {
                        format!("{repo}@{revision}")
                    }
                });
            }
            StageKind::Solve(solve) if stages.contains(s) => {
                for t in &solve.teams {
                    if !teams.contains(t) {
                        teams.push(t.clone());
                    }
                    for a in m.teams[t].topology.agents() {
                        if let Some(model) = &a.model {
                            models.insert(model.clone());
                        }
                    }
                }
            }
            _ => {}
        }
    }
    (since, datasets, filters, teams, models)
}

/// What one walk over a report's stages gathers from their nodes, pair by pair.
#[derive(Default)]
struct Gathered {
    gold: BTreeMap<String, Option<bool>>,
    gold_reasons: BTreeMap<String, String>,
    pairs: Vec<PairOutcome>,
    rows: Vec<NodeRow>,
    usage: Vec<PairUsage>,
    audit: Vec<crate::report::AuditedPair>,
    resolutions: Vec<crate::report::PairResolution>,
    scores: Vec<crate::report::document::PairScore>,
    artifacts: BTreeMap<(String, String, u32), PairArtifacts>,
}

impl Gathered {
    /// A gold node of the gold stage `stage`, unless it checks the empty patch: its task's
    /// verdict (none when the node failed) and why the gold check failed.
    fn gold(
        &mut self,
        graph: &Graph<'_>,
        stage: &str,
        node: &super::Node,
        task: &Task,
        empty: bool,
    ) {
        let v = graph.gold_verdict(stage, &task.instance_id);
        let failed = matches!(node.state, NodeState::Failed(_));
        if !empty {
            self.gold
                .insert(task.instance_id.clone(), if failed { None } else { v });
            if let Some(why) = graph.gold_reason(stage, &task.instance_id) {
                self.gold_reasons.insert(task.instance_id.clone(), why);
            }
        }
    }

    /// A grade node, graded from the solve node `source`: its row, its log, its resolution,
    /// audit flags and score when it has them, and its pair's outcome.
    fn grade(
        &mut self,
        graph: &Graph<'_>,
        node: &super::Node,
        (task, source, team, replicate): (&Task, usize, &str, u32),
        scorer: &crate::manifest::Scorer,
    ) {
        let solve_out = graph.nodes[source].state.record().and_then(|r| r.solve());
        let grade_out = node.state.record().and_then(|r| r.grade());
        let solve_timed_out = solve_out.is_some_and(|o| o.timed_out);
        let state = match (&node.state, grade_out) {
            (NodeState::Cached(_) | NodeState::Done(_), Some(g)) => {
                if g.resolved {
                    PairState::Resolved
                } else {
                    PairState::Unresolved {
                        timed_out: g.timed_out || solve_timed_out,
                    }
                }
            }
            // Plan mode (`bench report`): not graded yet.
            (NodeState::NotRun(_) | NodeState::WillRun, _) => PairState::NotRun,
            (NodeState::Failed(e), _) => PairState::Errored {
                reason: format!("grading: {e}"),
            },
            _ => PairState::Errored {
                reason: "not graded".into(),
            },
        };
        let scored = grade_out
            .filter(|g| g.verifier.is_some())
            .map(|g| score_of(scorer, &task.instance_id, g));
        self.rows.push(NodeRow {
            resolved: grade_out.map(|g| g.resolved),
            timed_out: grade_out.map(|g| g.timed_out || solve_timed_out),
            patch_applied: grade_out.map(|g| g.patch_applied),
            resolution: grade_out
                .and_then(|g| g.resolution)
                .map(|r| r.as_str().into()),
            duration_s: grade_out.map(|g| g.duration_ms as f64 / 1000.0),
            reward: grade_out
                .and_then(|g| g.reward.as_ref())
                .and_then(|r| r.get("reward").copied()),
            score: scored.and_then(|s| s.0),
            verifier: grade_out.and_then(|g| g.verifier.clone()),
            ..row("grade", node, task, team, replicate, None)
        });
        if let Some(rec) = node.state.record() {
            artifact_entry(&mut self.artifacts, task, team, replicate).log =
                rec.blobs.get("log").cloned();
        }
        if let Some(r) = grade_out.and_then(|g| g.resolution) {
            self.resolutions.push(crate::report::PairResolution {
                task: task.instance_id.clone(),
                team: team.to_string(),
                replicate,
                resolution: r,
            });
        }
        if let Some(g) = grade_out.filter(|g| !g.audit.is_empty()) {
            self.audit.push(crate::report::AuditedPair {
                task: task.instance_id.clone(),
                team: team.to_string(),
                replicate,
                flags: g.audit.clone(),
            });
        }
        if let (Some(g), Some((score, correctness))) = (grade_out, scored) {
            self.scores.push(crate::report::document::PairScore {
                task: task.instance_id.clone(),
                team: team.to_string(),
                replicate,
                verifier: g.verifier.clone().unwrap_or_default(),
                reward: g.reward.clone(),
                score,
                correctness,
            });
        }
        let (score, correctness) = scored.unwrap_or((None, None));
        self.pairs.push(PairOutcome {
            wall_time_s: solve_out.map(|o| o.duration_ms as f64 / 1000.0),
            score,
            correctness,
            ..pair((task, team, replicate), state)
        });
    }

    /// A solve node (`id`): its row, its patch, trajectory and model use, and the outcome of its
    /// pair when no grade will report it (it failed, was halted, or will run ungraded).
    fn solve(
        &mut self,
        node: &super::Node,
        id: usize,
        (task, team, replicate): (&Task, &str, u32),
        graded: &HashSet<usize>,
    ) {
        let solve_out = node.state.record().and_then(|r| r.solve());
        let tokens = solve_out.map(|o| o.tokens());
        // A solve the budget halted: why, in its row (the report says so).
        let error = match &node.state {
            NodeState::NotRun(why) => Some(why.clone()),
            _ => solve_out.and_then(|o| o.solve_error.clone()),
        };
        self.rows.push(NodeRow {
            timed_out: solve_out.map(|o| o.timed_out),
            input_tokens: tokens.map(|t| t.0),
            output_tokens: tokens.map(|t| t.1),
            patch_bytes: solve_out.map(|o| o.patch_bytes),
            duration_s: solve_out.map(|o| o.duration_ms as f64 / 1000.0),
            ..row("solve", node, task, team, replicate, error)
        });
        if let (Some(rec), Some(out)) = (node.state.record(), solve_out) {
            let a = artifact_entry(&mut self.artifacts, task, team, replicate);
            a.patch = Some(out.patch.clone());
            a.trajectory = rec.blobs.get("trajectory").cloned();
            self.usage.push(PairUsage {
                task: task.instance_id.clone(),
                team: team.to_string(),
                replicate,
                runs: out.runs.clone(),
            });
        }
        let reason = match &node.state {
            NodeState::Failed(e) => Some(PairState::Errored {
                reason: format!("solving: {e}"),
            }),
            NodeState::NotRun(_) => Some(PairState::NotRun),
            NodeState::WillRun if !graded.contains(&id) => Some(PairState::NotRun),
            _ => None,
        };
        if let Some(state) = reason {
            self.pairs.push(pair((task, team, replicate), state));
        }
    }

    /// Sorts what was gathered by task, team and replicate (rows also by node and address):
    /// creation order follows completion order, and the job (and its key) must be stable. The
    /// lists are then cut to their length: they are held until the report is rendered, and a
    /// list grown by doubling holds up to twice its rows.
    fn sort(&mut self) {
        self.sort_lists();
        self.pairs.shrink_to_fit();
        self.rows.shrink_to_fit();
        self.audit.shrink_to_fit();
        self.resolutions.shrink_to_fit();
        self.usage.shrink_to_fit();
        self.scores.shrink_to_fit();
    }

    fn sort_lists(&mut self) {
        self.pairs
            .sort_by(|a, b| (&a.task, &a.team, a.replicate).cmp(&(&b.task, &b.team, b.replicate)));
        // Creation order follows completion order: sort, so the job (and its key) is stable.
        self.rows.sort_by(|a, b| {
            (&a.task, &a.team, a.replicate, &a.node, &a.address).cmp(&(
                &b.task,
                &b.team,
                b.replicate,
                &b.node,
                &b.address,
            ))
        });
        self.audit.sort_by(|a: &crate::report::AuditedPair, b| {
            (&a.task, &a.team, a.replicate).cmp(&(&b.task, &b.team, b.replicate))
        });
        self.resolutions
            .sort_by(|a: &crate::report::PairResolution, b| {
                (&a.task, &a.team, a.replicate).cmp(&(&b.task, &b.team, b.replicate))
            });
        self.usage
            .sort_by(|a, b| (&a.task, &a.team, a.replicate).cmp(&(&b.task, &b.team, b.replicate)));
        self.scores
            .sort_by(|a, b| (&a.task, &a.team, a.replicate).cmp(&(&b.task, &b.team, b.replicate)));
    }
}

/// The attempts of every solve of `stages` that `apply --rerun` ran again, by task, team and
/// replicate (keys with attempts are found by one directory listing).
fn rerun_attempts(graph: &Graph<'_>, stages: &[String]) -> Vec<PairAttempts> {
    let Some(store) = graph.store else {
        return Vec::new();
    };
    let keys = store.attempt_keys();
    if keys.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<PairAttempts> = stages
        .iter()
        .flat_map(|s| graph.stage_nodes(s))
        .filter_map(|id| {
            let node = &graph.nodes[*id];
            let NodeKind::Solve {
                task,
                team,
                replicate,
            } = &node.kind
            else {
                return None;
            };
            let rec = node.state.record().filter(|r| keys.contains(&r.key))?;
            pair_attempts(graph, &node.stage, rec, task, team, *replicate)
        })
        .collect();
    out.sort_by(|a, b| (&a.task, &a.team, a.replicate).cmp(&(&b.task, &b.team, b.replicate)));
    out
}

/// The attempts of a solve `apply --rerun` ran again (its record is the latest), if its
/// attempts file can be read.
fn pair_attempts(
    graph: &Graph<'_>,
    stage: &str,
    rec: &crate::store::ActionRecord,
    task: &Task,
    team: &str,
    replicate: u32,
) -> Option<PairAttempts> {
    let all = graph.store?.attempts_before(rec).ok()??;
    let StageKind::Solve(s) = &graph.manifest.stages[stage].kind else {
        return None;
    };
    let mut deadline_s = s.timeout.as_secs_f64();
    let mut out = Vec::new();
    let mut by: Option<&crate::store::Replacement> = None;
    for (i, a) in all.earlier.iter().enumerate() {
        out.push(AttemptSummary {
            attempt: i as u32 + 1,
            outcome: Some(a.outcome.clone()),
            deadline_s,
            selected_by: by.map(|r| r.selected_by.clone()),
            run_id: by.map(|r| r.run_id.clone()),
        });
        deadline_s = a.replaced_by.timeout_ms as f64 / 1000.0;
        by = Some(&a.replaced_by);
    }
    out.push(AttemptSummary {
        attempt: all.earlier.len() as u32 + 1,
        outcome: None,
        deadline_s,
        selected_by: by.map(|r| r.selected_by.clone()),
        run_id: by.map(|r| r.run_id.clone()),
    });
    Some(PairAttempts {
        task: task.instance_id.clone(),
        team: team.to_string(),
        replicate,
        attempts: out,
    })
}

/// A scored grade's (score, correctness) under the report's rule: a verifier that timed out
/// scores 0; `reward` takes the reward's `reward` field (correctness: whether it reached 1);
/// `frontier-swe` takes the gated score of the task's name (a task outside Frontier-SWE's 17
/// falls back to `reward`).
fn score_of(
    scorer: &crate::manifest::Scorer,
    task: &str,
    g: &crate::jobs::GradeOutput,
) -> (Option<f64>, Option<f64>) {
    let Some(reward) = &g.reward else {
        return (Some(0.0), Some(0.0));
    };
    let plain = || {
        let r = reward.get("reward").copied();
        (r, r.map(|r| if r >= 1.0 { 1.0 } else { 0.0 }))
    };
    match scorer {
        crate::manifest::Scorer::Reward => plain(),
        crate::manifest::Scorer::FrontierSwe { ssim_threshold } => {
            let doc = g
                .reward_json
                .clone()
                .unwrap_or_else(|| serde_json::to_value(reward).unwrap_or(serde_json::Value::Null));
            match crate::report::frontier::score(&doc, task, *ssim_threshold) {
                Some((s, c)) => (Some(s), Some(c)),
                None => plain(),
            }
        }
    }
}

/// The network policy each phase ran under, as the report prints it: what agents of the
/// reported teams reached, and what grading reached (per dataset when one opted in).
pub fn network_policy(m: &Manifest, teams: &[String]) -> BTreeMap<String, String> {
    let mut agent: Vec<String> = Vec::new();
    let mut harnesses: BTreeSet<&str> = BTreeSet::new();
    for t in teams {
        if let Some(team) = m.teams.get(t) {
            for a in team.topology.agents() {
                harnesses.insert(a.harness.as_str());
            }
        }
    }
    for name in harnesses {
        let Some(h) = m.harnesses.get(name) else {
            continue;
        };
        let policy = m.backend.agent_network_policy(h);
        agent.push(format!("`{name}`: {policy}"));
    }
    let open: Vec<&str> = m
        .datasets
        .values()
        .filter(|d| d.grade_network)
        .map(|d| d.name.as_str())
        .collect();
    let grading = if open.is_empty() {
        "none".to_string()
    } else {
        format!(
            "none, except datasets with grade_network = true: {}",
            open.join(", ")
        )
    };
    let mut out = BTreeMap::new();
    if !agent.is_empty() {
        out.insert("agent".to_string(), agent.join("; "));
    }
    out.insert("grading".to_string(), grading);
    out
}

/// The outcome of (task, team, replicate) in `state`, with no time, score or cost yet (the
/// cost is derived from `usage` and the prices when the report renders).
fn pair((task, team, replicate): (&Task, &str, u32), state: PairState) -> PairOutcome {
    PairOutcome {
        task: task.instance_id.clone(),
        team: team.to_string(),
        replicate,
        state,
        cost_usd: None,
        wall_time_s: None,
        language: task.language.clone(),
        repo: Some(task.repo.clone()),
        score: None,
        correctness: None,
        cost_basis: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row_of(task: &str, team: &str, node: &'static str) -> NodeRow {
        NodeRow {
            node: node.into(),
            address: format!("{node}/{task}/{team}/0"),
            key: None,
            task: task.into(),
            repo: None,
            language: None,
            team: team.into(),
            replicate: 0,
            status: "ok".into(),
            ..NodeRow::default()
        }
    }

    /// The gathered lists are sorted and hold no spare room once sorted, for every length
    /// from none to past a doubling (a list grown one push at a time keeps room for up to as
    /// many rows again until the report renders).
    #[test]
    fn gathered_lists_are_sorted_and_cut_to_their_length() {
        for n in 0..40usize {
            let mut g = Gathered::default();
            for i in (0..n).rev() {
                let task = format!("task-{:02}", i / 2);
                let team = ["b", "a"][i % 2];
                g.rows.push(row_of(&task, team, "solve"));
                g.rows.push(row_of(&task, team, "grade"));
                g.pairs.push(pair_of(&task, team));
                g.usage.push(PairUsage {
                    task: task.clone(),
                    team: team.into(),
                    replicate: 0,
                    runs: Vec::new(),
                });
            }
            g.sort();
            assert_eq!((g.rows.len(), g.rows.capacity()), (2 * n, 2 * n), "{n}");
            assert_eq!((g.pairs.len(), g.pairs.capacity()), (n, n), "{n}");
            assert_eq!((g.usage.len(), g.usage.capacity()), (n, n), "{n}");
            let order: Vec<_> = g.rows.iter().map(|r| (&r.task, &r.team, &r.node)).collect();
            assert!(order.is_sorted(), "{n}: {order:?}");
            assert!(g.pairs.iter().map(|p| (&p.task, &p.team)).is_sorted());
            assert!(g.usage.iter().map(|u| (&u.task, &u.team)).is_sorted());
        }
    }

    fn pair_of(task: &str, team: &str) -> PairOutcome {
        PairOutcome {
            task: task.into(),
            team: team.into(),
            replicate: 0,
            state: PairState::NotRun,
            cost_usd: None,
            wall_time_s: None,
            language: None,
            repo: None,
            score: None,
            correctness: None,
            cost_basis: Default::default(),
        }
    }
}
