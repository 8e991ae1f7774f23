//! `bench plan`: what would run and why, without running anything.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::graph::{Graph, Mode, NodeKind, NodeState, StageSummary};
use crate::manifest::Manifest;
use crate::store::Store;
use crate::tasks::TaskSet;

/// A node that would run, and why.
#[derive(Debug, Clone, Serialize)]
pub struct PlanEntry {
    pub address: String,
    pub stage: String,
    pub key: Option<String>,
    pub reasons: Vec<String>,
}

/// The plan of a manifest.
#[derive(Debug, Clone, Serialize)]
pub struct PlanReport {
    pub manifest: String,
    pub store: String,
    pub stages: Vec<StageSummary>,
    pub to_run: Vec<PlanEntry>,
    pub orphaned: Vec<String>,
    pub unavailable_datasets: Vec<String>,
    /// Docker: the agent images the solves to run need (harnesses that install a CLI).
    pub agent_images: Vec<AgentImagePlan>,
    /// Docker: the task images the daemon lacks, which apply pulls first (filled by the
    /// caller, which talks to Docker and the registries).
    pub images_to_pull: Vec<super::images::ImageToPull>,
    /// Records that failed verification (removed; their nodes are counted to run).
    pub invalid_records: Vec<String>,
    /// Blobs a cached record needs that are missing or empty (their nodes are counted to run).
    pub bad_blobs: Vec<String>,
    /// The expected spend of the solves to run, per team, from stored costs.
    pub spend: Vec<super::spend::SpendEstimate>,
    /// What the comparison with the baseline can detect (`None` without a baseline).
    pub power: Option<PowerPlan>,
    /// What the remote cache would serve (`[cache] remote`), with its notes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<super::remote::RemoteSummary>,
}

/// What `plan` is asked beside the manifest.
#[derive(Debug, Default)]
pub struct PlanOptions {
    /// Datasets this machine cannot read yet.
    pub unavailable: Vec<String>,
    /// Give each node to run its reasons.
    pub explain: bool,
    pub power: PowerQuery,
    /// `--rerun`: the stored solves that would run again.
    pub rerun: std::collections::HashMap<String, crate::graph::RerunOf>,
}

/// What `bench plan` is asked about power: the baseline's expected resolve rate and,
/// optionally, a difference to detect.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PowerQuery {
    /// Expected resolve rate of the baseline, in [0, 1] (default 0.5).
    pub baseline_rate: f64,
    /// Whether `baseline_rate` was given (else it is the 50% default).
    pub rate_given: bool,
    /// A difference in resolve rate to detect (`--detect 5pts` is 0.05).
    pub detect: Option<f64>,
}

impl Default for PowerQuery {
    fn default() -> PowerQuery {
        PowerQuery {
            baseline_rate: 0.5,
            rate_given: false,
            detect: None,
        }
    }
}

/// The power of the paired comparison with the baseline, for the plan's sample size (see
/// `report::power` for the method and its discordance assumption).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PowerPlan {
    pub baseline: String,
    /// Paired tasks: the tasks the baseline's solves cover (at most the solve stage's limit);
    /// before any task is drawn (datasets not fetched, gold checks pending), the manifest's
    /// limits (`tasks_from_limits`).
    pub tasks: u64,
    /// `tasks` is what the manifest's `limit`s ask for, not tasks drawn yet.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tasks_from_limits: bool,
    /// The baseline's resolve rate assumed, and whether it was given (`--baseline-rate`).
    pub baseline_rate: f64,
    pub baseline_rate_given: bool,
    pub power: f64,
    pub alpha: f64,
    /// The smallest improvement over the baseline detectable with `tasks`, as a fraction.
    pub min_detectable_difference: Option<f64>,
    /// The power of the largest possible improvement (to 100%), said when no improvement
    /// reaches `power`.
    pub max_power: f64,
    /// The test the figures are for (the one the report decides with).
    pub test: String,
    /// With `--detect`: the difference and the paired tasks it needs.
    pub detect: Option<f64>,
    pub tasks_needed: Option<u64>,
    pub method: String,
}

/// How the power is computed, in one line.
pub const POWER_METHOD: &str = "exact enumeration of the discordant pairs and the team's wins \
    under the exact McNemar test the report decides with; the discordant rates assume the teams' \
    outcomes independent given their rates (p10 = p1(1-p0), p01 = p0(1-p1)); teams that agree \
    more on which tasks are easy have fewer discordant pairs, which can raise or lower exact \
    power: an assumption, not a bound";

/// The power figures for the first report stage with a baseline, from the plan's solve nodes.
fn power_plan(m: &Manifest, graph: &Graph<'_>, query: PowerQuery) -> Option<PowerPlan> {
    let baseline = m.stages.values().find_map(|s| match &s.kind {
        crate::manifest::StageKind::Report(r) => r.baseline.clone(),
        _ => None,
    })?;
    let tasks: std::collections::BTreeSet<&str> = graph
        .nodes
        .iter()
        .filter_map(|n| match &n.kind {
            NodeKind::Solve { task, team, .. } if *team == baseline => {
                Some(task.instance_id.as_str())
            }
            _ => None,
        })
        .collect();
    let limit = m.stages.values().find_map(|s| match &s.kind {
        crate::manifest::StageKind::Solve(solve) if solve.teams.contains(&baseline) => solve.limit,
        _ => None,
    });
    // No solve is known yet (the sample or the gold checks have not run): power before a run
    // is most useful exactly then, so the manifest's own limits stand in for the count.
    let sample_limit = m.stages.values().find_map(|s| match &s.kind {
        crate::manifest::StageKind::Sample(sample) => sample.filters.limit,
        _ => None,
    });
    let from_limits = tasks.is_empty() && (limit.is_some() || sample_limit.is_some());
    let tasks = if from_limits {
        u64::from(limit.into_iter().chain(sample_limit).min().unwrap_or(0))
    } else {
        limit.map_or(tasks.len() as u64, |l| {
            (tasks.len() as u64).min(u64::from(l))
        })
    };
    let p0 = query.baseline_rate;
    let tasks_needed = query
        .detect
        .and_then(|d| crate::report::power::tasks_needed(p0, d));
    Some(PowerPlan {
        baseline,
        tasks,
        tasks_from_limits: from_limits,
        baseline_rate: p0,
        baseline_rate_given: query.rate_given,
        power: crate::report::power::POWER,
        alpha: crate::report::power::ALPHA,
        min_detectable_difference: crate::report::power::min_detectable_difference(tasks, p0),
        max_power: crate::report::power::max_power(tasks, p0),
        test: crate::report::power::TEST.to_string(),
        detect: query.detect,
        tasks_needed,
        method: POWER_METHOD.to_string(),
    })
}

impl PowerPlan {
    /// The plan's power lines, for people.
    pub fn render(&self) -> Vec<String> {
        let rate = format!(
            "baseline rate {:.0}%{}",
            self.baseline_rate * 100.0,
            if self.baseline_rate_given {
                ""
            } else {
                " assumed; set it with --baseline-rate"
            }
        );
        let head = format!(
            "power vs baseline `{}` ({} paired tasks{}, {rate}; {}, {:.0}% power)",
            self.baseline,
            self.tasks,
            if self.tasks_from_limits {
                " as the manifest's `limit` asks (none drawn yet)"
            } else {
                ""
            },
            self.test,
            self.power * 100.0
        );
        let mut lines = vec![match self.min_detectable_difference {
            Some(d) => format!(
                "{head}: smallest detectable difference +{:.1} pts",
                d * 100.0
            ),
            None if self.tasks == 0 => format!("{head}: no tasks known yet"),
            None => format!(
                "{head}: too few tasks: no improvement on a {:.0}% baseline reaches {:.0}% power (even +{:.1} pts has {:.1}%)",
                self.baseline_rate * 100.0,
                self.power * 100.0,
                (1.0 - self.baseline_rate) * 100.0,
                self.max_power * 100.0
            ),
        }];
        if let Some(d) = self.detect {
            lines.push(match self.tasks_needed {
                Some(n) => format!(
                    "power: detecting {:+.1} pts needs {n} paired tasks (the plan has {})",
                    d * 100.0,
                    self.tasks
                ),
                None if (0.0..=1.0).contains(&(self.baseline_rate + d)) && d != 0.0 => format!(
                    "power: detecting {:+.1} pts needs more than {} paired tasks",
                    d * 100.0,
                    crate::report::power::MAX_TASKS
                ),
                None => format!(
                    "power: {:+.1} pts from a {:.0}% baseline leaves 0-100%",
                    d * 100.0,
                    self.baseline_rate * 100.0
                ),
            });
        }
        lines.push(format!("power method: {}", self.method));
        lines
    }
}

/// An agent image a plan needs.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct AgentImagePlan {
    /// `bench-agent:<tag>`.
    pub image: String,
    pub harness: String,
    /// The task image it is built on (ID).
    pub base: String,
    /// Whether it is on the daemon already (filled by the caller, which talks to Docker).
    pub exists: bool,
}

impl PlanReport {
    pub fn pending(&self) -> bool {
        self.stages.iter().any(|s| s.to_run > 0)
    }
}

/// Plans `m` against `store` (`None`: an empty store).
pub fn plan(
    m: &Manifest,
    store: Option<&Store>,
    datasets: &BTreeMap<String, TaskSet>,
    opts: PlanOptions,
    remote: Option<std::sync::Arc<dyn crate::cache::RemoteCache>>,
) -> Result<PlanReport, String> {
    let PlanOptions {
        unavailable,
        explain,
        power,
        rerun,
    } = opts;
    let mut graph = Graph::new(m, store, datasets, Mode::Plan)?;
    graph.keep_inputs = explain;
    graph.rerun = rerun;
    let remote = expand(&mut graph, remote)?;
    let index = store.map(|s| s.load_index(&m.path)).unwrap_or_default();
    let mut stages = graph.summaries(&index.nodes);
    let orphaned = store.map_or_else(Vec::new, |s| orphaned_records(m, &graph, s, &mut stages));
    let mut to_run = Vec::new();
    let mut agent_images = std::collections::BTreeSet::new();
    // (task image, harness) pairs already looked at: the tag reads the install files, once.
    let mut seen = std::collections::HashSet::new();
    let mut pending_solves: BTreeMap<String, u64> = BTreeMap::new();
    // The budgets, with the spend the store records: a halted stage's solves would not run, and
    // what is left of a budget caps the expected spend.
    let budgets = store
        .map(|s| super::Budgets::load(m, s))
        .unwrap_or_default();
    let mut caps = BTreeMap::new();
    for node in &graph.nodes {
        if !matches!(node.state, NodeState::WillRun) {
            continue;
        }
        if let NodeKind::Solve { team, .. } = &node.kind {
            *pending_solves.entry(team.clone()).or_default() += 1;
            if let Some(b) = budgets.get(&node.stage) {
                caps.entry(team.clone())
                    .or_insert_with(|| b.cap_of(&node.stage));
            }
        }
        if let NodeKind::Solve { task, team, .. } = &node.kind
            && let crate::tasks::TaskBase::Image { image, .. } = &task.base
            && let Some(base) = m.backend.images.get(image)
        {
            for agent in m.teams[team].topology.agents() {
                if !seen.insert((base.as_str(), agent.harness.as_str())) {
                    continue;
                }
                let install = graph
                    .jobs()
                    .team(team)
                    .and_then(|t| t.get().harnesses.get(&agent.harness))
                    .and_then(|h| h.install.as_ref());
                if let Some(install) = install {
                    let tag = crate::backend::agent_tag(base, install);
                    agent_images.insert(AgentImagePlan {
                        image: format!("{}:{tag}", crate::backend::AGENT_REPO),
                        harness: agent.harness.clone(),
                        base: base.clone(),
                        exists: false,
                    });
                }
            }
        }
        let halted = match node.kind {
            NodeKind::Solve { .. } => budgets.halt_reason(&node.stage),
            _ => None,
        };
        let reasons = if let (true, Some(why)) = (explain, halted) {
            vec![why]
        } else if let (true, Some(r)) = (explain, graph.rerunning.get(&node.id)) {
            vec![rerun_reason(r)]
        } else if explain {
            reasons(&graph, node, store, &index.nodes, &unavailable)
        } else {
            Vec::new()
        };
        to_run.push(PlanEntry {
            address: node.address.clone(),
            stage: node.stage.clone(),
            key: node.key.clone(),
            reasons,
        });
    }
    let bad_blobs = std::mem::take(&mut graph.bad_blobs)
        .iter()
        .map(ToString::to_string)
        .collect();
    // Planning ends the process: skip freeing the node graph, node by node.
    let power = power_plan(m, &graph, power);
    let invalid = std::mem::take(&mut graph.invalid)
        .into_iter()
        .map(|(p, r)| format!("{}: {r}", p.display()))
        .collect();
    std::mem::forget(graph);
    Ok(PlanReport {
        manifest: m.path.display().to_string(),
        store: store
            .map(|s| s.root().display().to_string())
            .unwrap_or_default(),
        stages,
        to_run,
        orphaned,
        unavailable_datasets: unavailable,
        agent_images: agent_images.into_iter().collect(),
        images_to_pull: Vec::new(),
        invalid_records: invalid,
        bad_blobs,
        spend: super::spend::estimate(m, store, &pending_solves, &caps),
        power,
        remote,
    })
}

/// The stored results this manifest's applies recorded that `bench gc` would remove (see
/// `retention.rs`), counted in each stage's `orphaned` by the stage of the address they had (a
/// stage no longer in the manifest gets a row of its own, kind `removed`); listed as
/// `address (record KEY)`, sorted.
fn orphaned_records(
    m: &Manifest,
    graph: &Graph<'_>,
    store: &Store,
    stages: &mut Vec<StageSummary>,
) -> Vec<String> {
    use super::retention::{KeepRuns, kept_by_runs, orphaned, plan_keys};
    let runs = store.runs();
    let this = m.path.display().to_string();
    let kept = kept_by_runs(&runs, &mut |p| {
        if p == this {
            m.keep_runs
        } else {
            KeepRuns::PerManifest.of(std::path::Path::new(p))
        }
    });
    let records = orphaned(&runs, &this, &plan_keys(graph), &kept, &|k| {
        store.has_action(k)
    });
    for s in stages.iter_mut() {
        s.orphaned = 0;
    }
    let mut listed = Vec::with_capacity(records.len());
    for (key, address) in &records {
        let stage = address.split('/').next().unwrap_or(address);
        match stages.iter_mut().find(|s| s.stage == stage) {
            Some(s) => s.orphaned += 1,
            None => stages.push(StageSummary {
                stage: stage.to_string(),
                kind: "removed".to_string(),
                orphaned: 1,
                ..Default::default()
            }),
        }
        listed.push(format!("{address} (record {})", &key[..12.min(key.len())]));
    }
    listed.sort();
    listed
}

/// Expands the plan's graph as far as the store (and, with one, the remote cache) allow: what
/// the remote holds is read (records only, verified) as a pipeline, since a served node's
/// outputs give the keys downstream of it. Returns what the remote did.
fn expand(
    graph: &mut Graph<'_>,
    remote: Option<std::sync::Arc<dyn crate::cache::RemoteCache>>,
) -> Result<Option<super::remote::RemoteSummary>, String> {
    let Some(r) = remote else {
        while !graph.advance().is_empty() {}
        return Ok(None);
    };
    let mut summary = super::remote::RemoteSummary::new(r.as_ref());
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the remote cache's runtime: {e}"))?
        .block_on(super::remote::expand_with_remote(
            graph,
            r,
            None,
            &mut summary,
        ));
    Ok(Some(summary))
}

/// Why a stored solve runs again (`--rerun`).
fn rerun_reason(r: &crate::graph::RerunOf) -> String {
    let deadline = r
        .timeout
        .map(|t| format!(", with a deadline of {}", humantime::format_duration(t)))
        .unwrap_or_default();
    format!(
        "rerun (--rerun {}): its stored attempt {}; kept as an earlier attempt{deadline}",
        r.selected_by, r.outcome
    )
}

fn reasons(
    graph: &Graph<'_>,
    node: &crate::graph::Node,
    store: Option<&Store>,
    index: &BTreeMap<String, String>,
    unavailable: &[String],
) -> Vec<String> {
    let (Some(key), Some(job)) = (&node.key, &node.job) else {
        return vec![match &node.kind {
            NodeKind::Sample { dataset } if unavailable.contains(dataset) => {
                format!("dataset `{dataset}` is not available on this machine yet")
            }
            NodeKind::Grade { source, .. } => {
                format!("waits for the patch of {}", graph.nodes[*source].address)
            }
            NodeKind::Report => "waits for the nodes it reports on".to_string(),
            _ => "waits for upstream outputs".to_string(),
        }];
    };
    let Some(old_key) = index.get(&node.address) else {
        return vec!["new".to_string()];
    };
    if old_key == key {
        return vec!["not completed before (interrupted or failed)".to_string()];
    }
    let Some(crate::store::Lookup::Hit(old)) = store.map(|s| s.get_action(old_key)) else {
        return vec![format!(
            "inputs changed (the previous result {} is gone)",
            &old_key[..12]
        )];
    };
    crate::graph::explain_changes(&old.job, &job.explain(), &node.stage, node.kind.team())
}
