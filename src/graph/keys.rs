//! The key structs of every node kind, and the outputs downstream keys read.
//!
//! Each struct holds exactly what determines the node's output; fields that only change speed or
//! location (concurrency, store path, output paths, resource limits) are absent by construction.
//! Bump a kind's `*_VERSION` when the code changes what that kind produces.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::key::{KEY_SCHEMA, Keyed, key_of};
use crate::manifest::{BackendKind, HarnessKind, Manifest, SampleFilters, Team};
use crate::tasks::Task;

pub const SAMPLE_VERSION: u32 = 1;
pub const GRADE_VERSION: u32 = 1;
pub const SOLVE_VERSION: u32 = 1;
pub const REPORT_VERSION: u32 = 2;

#[derive(Serialize)]
struct SampleKey<'a> {
    schema: u32,
    node: &'static str,
    version: u32,
    dataset: DatasetKey<'a>,
    stage: &'a SampleFilters,
}

#[derive(Serialize)]
struct DatasetKey<'a> {
    format: &'a str,
    snapshot: &'a str,
}

pub fn sample_key(format: &str, snapshot: &str, filters: &SampleFilters) -> Keyed {
    key_of(&SampleKey {
        schema: KEY_SCHEMA,
        node: "sample",
        version: SAMPLE_VERSION,
        dataset: DatasetKey { format, snapshot },
        stage: filters,
    })
}

#[derive(Serialize)]
struct BackendKey {
    kind: BackendKind,
    /// docker: the task image's ID (never the tag). Absent for local tasks, so local keys are
    /// unchanged by its introduction.
    #[serde(skip_serializing_if = "Option::is_none")]
    image: Option<String>,
}

/// The backend part of a task's keys: the kind, and on docker the resolved image ID.
fn backend_key(m: &Manifest, task: &Task) -> BackendKey {
    let image = match (&task.base, m.backend.kind) {
        (crate::tasks::TaskBase::Image { image, .. }, BackendKind::Docker) => {
            m.backend.images.get(image).cloned()
        }
        _ => None,
    };
    BackendKey {
        kind: m.backend.kind,
        image,
    }
}

#[derive(Serialize)]
struct TaskKey<'a> {
    id: &'a str,
    digest: String,
}

#[derive(Serialize)]
struct GradeKey<'a> {
    schema: u32,
    node: &'static str,
    version: u32,
    backend: BackendKey,
    task: TaskKey<'a>,
    patch: &'a str,
    stage: GradingKey,
}

#[derive(Serialize)]
struct GradingKey {
    timeout_s: u64,
}

/// The key of grading `patch_digest` on `task`: shared by gold checks and grades, so an
/// identical patch is graded once.
pub fn grade_key(m: &Manifest, task: &Task, patch_digest: &str, timeout_s: u64) -> Keyed {
    key_of(&GradeKey {
        schema: KEY_SCHEMA,
        node: "grade",
        version: GRADE_VERSION,
        backend: backend_key(m, task),
        task: TaskKey {
            id: &task.instance_id,
            digest: task.grading_digest(),
        },
        patch: patch_digest,
        stage: GradingKey { timeout_s },
    })
}

#[derive(Serialize, Clone)]
struct HarnessKey {
    kind: HarnessKind,
    command: Option<String>,
    script: Option<String>,
    env: Vec<String>,
    usage: Option<crate::manifest::UsageFormat>,
    version: Option<String>,
    /// The files the CLI writes for itself (kept out of the patch). Absent when there are none,
    /// so the keys of other harnesses are unchanged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    own_files: Vec<String>,
    /// `predictions`: the predictions file's content digest. Absent otherwise, so the keys of
    /// other harnesses are unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    /// On the docker backend, what the agent image is built from (the agent runs in it). Absent
    /// on the local backend and for harnesses that install nothing, so those keys are unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    install: Option<InstallKey>,
}

#[derive(Serialize, Clone)]
struct InstallKey {
    /// The runtime tarball (URL and sha256); absent without one, so other keys are unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    runtime: Option<crate::manifest::Runtime>,
    commands: Vec<String>,
    /// Digest of the `install_files` (paths, modes, contents).
    files: String,
}

#[derive(Serialize, Clone)]
struct TeamKey {
    #[serde(flatten)]
    topology: BTreeMap<String, serde_json::Value>,
    harnesses: BTreeMap<String, HarnessKey>,
}

#[derive(Serialize)]
struct SolveKey<'a> {
    schema: u32,
    node: &'static str,
    version: u32,
    backend: BackendKey,
    task: TaskKey<'a>,
    team: TeamKey,
    /// Digests of the prompt templates the team's topology uses (none when no agent reads one).
    prompt: BTreeMap<&'static str, String>,
    stage: SolveStageKey,
    replicate: u32,
}

#[derive(Serialize)]
struct SolveStageKey {
    timeout_s: u64,
}

/// The team as key inputs: topology fields with agents as `harness@model` strings, and the
/// definition of every harness used (script content by digest).
fn team_key(m: &Manifest, team: &Team) -> (TeamKey, bool) {
    let value = serde_json::to_value(&team.topology).expect("topologies serialize");
    let mut topology = BTreeMap::new();
    if let serde_json::Value::Object(map) = value {
        for (k, v) in map {
            let v = match v {
                serde_json::Value::Object(a) if a.contains_key("harness") => {
                    serde_json::Value::String(agent_string(&a))
                }
                serde_json::Value::Array(items) => serde_json::Value::Array(
                    items
                        .into_iter()
                        .map(|i| match i {
                            serde_json::Value::Object(a) => {
                                serde_json::Value::String(agent_string(&a))
                            }
                            other => other,
                        })
                        .collect(),
                ),
                other => other,
            };
            topology.insert(k, v);
        }
    }
    let mut harnesses = BTreeMap::new();
    let mut reads_prompt = false;
    for agent in team.topology.agents() {
        let h = &m.harnesses[&agent.harness];
        reads_prompt |= h.kind.reads_prompt();
        harnesses.insert(
            agent.harness.clone(),
            HarnessKey {
                kind: h.kind,
                command: h.command.clone(),
                script: h.script.as_ref().map(|p| {
                    std::fs::read(p)
                        .map_or_else(|e| format!("unreadable: {e}"), |b| crate::key::digest(&b))
                }),
                env: h.env.clone(),
                usage: h.usage,
                version: h.version.clone(),
                own_files: h.own_files.clone(),
                path: h.path.as_ref().map(|p| {
                    std::fs::read(p)
                        .map_or_else(|e| format!("unreadable: {e}"), |b| crate::key::digest(&b))
                }),
                install: (m.backend.kind == crate::manifest::BackendKind::Docker && h.installs())
                    .then(|| InstallKey {
                        runtime: h.runtime.clone(),
                        commands: h.install.clone(),
                        files: crate::harness::install::install_files(&h.install_files)
                            .map_or_else(
                                |e| format!("unreadable: {e}"),
                                |f| crate::harness::install::files_digest(&f),
                            ),
                    }),
            },
        );
    }
    (
        TeamKey {
            topology,
            harnesses,
        },
        reads_prompt,
    )
}

fn agent_string(a: &serde_json::Map<String, serde_json::Value>) -> String {
    let h = a.get("harness").and_then(|v| v.as_str()).unwrap_or("");
    match a.get("model").and_then(|v| v.as_str()) {
        Some(m) => format!("{h}@{m}"),
        None => h.to_string(),
    }
}

/// A team's part of its solve keys, computed once per team.
#[derive(Clone)]
pub struct TeamKeyed {
    team: TeamKey,
    prompt: BTreeMap<&'static str, String>,
}

impl TeamKeyed {
    pub fn new(m: &Manifest, team: &Team) -> TeamKeyed {
        let (team_key, reads_prompt) = team_key(m, team);
        let prompt = if reads_prompt {
            let d = |t: &str| crate::key::digest(t.as_bytes());
            let mut p = BTreeMap::from([("instruction", d(&m.prompts.instruction))]);
            match &team.topology {
                crate::manifest::Topology::Solo { .. } => {}
                crate::manifest::Topology::Review { .. } => {
                    p.insert("review", d(&m.prompts.review));
                    p.insert("fix", d(&m.prompts.fix));
                }
                crate::manifest::Topology::BestOf { .. } => {
                    p.insert("judge", d(&m.prompts.judge));
                }
            }
            p
        } else {
            BTreeMap::new()
        };
        TeamKeyed {
            team: team_key,
            prompt,
        }
    }
}

pub fn solve_key(m: &Manifest, task: &Task, team: &Team, timeout_s: u64, replicate: u32) -> Keyed {
    solve_key_with(m, task, &TeamKeyed::new(m, team), timeout_s, replicate)
}

/// [`solve_key`] with the team's part computed beforehand.
pub fn solve_key_with(
    m: &Manifest,
    task: &Task,
    team: &TeamKeyed,
    timeout_s: u64,
    replicate: u32,
) -> Keyed {
    key_of(&SolveKey {
        schema: KEY_SCHEMA,
        node: "solve",
        version: SOLVE_VERSION,
        backend: backend_key(m, task),
        task: TaskKey {
            id: &task.instance_id,
            digest: task.solver_digest(),
        },
        team: team.team.clone(),
        prompt: team.prompt.clone(),
        stage: SolveStageKey { timeout_s },
        replicate,
    })
}

#[derive(Serialize)]
struct ReportKey<'a> {
    schema: u32,
    node: &'static str,
    version: u32,
    stage: ReportStageKey<'a>,
    inputs: &'a BTreeMap<String, String>,
}

#[derive(Serialize)]
struct ReportStageKey<'a> {
    baseline: Option<&'a str>,
    count_errors_as_failures: bool,
    manifest: &'a str,
    promote: Option<&'a crate::manifest::Promote>,
}

/// The report's key: its settings and every input node's address -> key (or failure).
pub fn report_key(
    baseline: Option<&str>,
    count_errors_as_failures: bool,
    manifest_name: &str,
    promote: Option<&crate::manifest::Promote>,
    inputs: &BTreeMap<String, String>,
) -> Keyed {
    key_of(&ReportKey {
        schema: KEY_SCHEMA,
        node: "report",
        version: REPORT_VERSION,
        stage: ReportStageKey {
            baseline,
            count_errors_as_failures,
            manifest: manifest_name,
            promote,
        },
        inputs,
    })
}

/// Output of a sample node.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SampleOutput {
    /// Task ids in sample order.
    pub tasks: Vec<String>,
}

/// Output of a grade (or gold) node.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GradeOutput {
    pub resolved: bool,
    pub patch_applied: bool,
    pub empty_patch: bool,
    pub timed_out: bool,
    pub fail_to_pass_success: Vec<String>,
    pub fail_to_pass_failure: Vec<String>,
    pub pass_to_pass_success: Vec<String>,
    pub pass_to_pass_failure: Vec<String>,
    pub pass_to_pass_missing: Vec<String>,
    pub test_exit_code: Option<i32>,
    pub duration_ms: u64,
}

/// Output of a solve node.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SolveOutput {
    /// Digest of the patch blob (possibly empty).
    pub patch: String,
    pub patch_bytes: u64,
    pub timed_out: bool,
    /// Set when the agent crashed (non-zero exit): an outcome, not an error.
    pub solve_error: Option<String>,
    pub exit_code: Option<i32>,
    /// Dollars; `None` when unknown.
    pub cost_usd: Option<f64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub redacted: bool,
    pub duration_ms: u64,
}

/// Human labels for the top-level groups of key inputs, given the node's context
/// (`team` -> `team review`, `stage` -> `stage sample`).
pub fn label_inputs(path: &str, stage: &str, team: Option<&str>) -> String {
    let (head, rest) = path.split_once('.').unwrap_or((path, ""));
    let head = match head {
        "team" => format!("team {}", team.unwrap_or("?")),
        "stage" => format!("stage {stage}"),
        other => other.to_string(),
    };
    if rest.is_empty() {
        head
    } else {
        format!("{head}: {rest}")
    }
}
