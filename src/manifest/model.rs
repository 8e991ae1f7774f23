//! The validated manifest: what the rest of bench works with. Every reference in it resolves
//! (stages, teams, harnesses, datasets), durations and sizes are parsed, paths are absolute and
//! the stage order is topological.

pub use super::types::{AuditMode, HarborVerifier, ScoreRule};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

/// A validated experiment.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The manifest file, absolute.
    pub path: PathBuf,
    /// Its directory: relative paths and the default store resolve against it.
    pub dir: PathBuf,
    pub name: String,
    pub description: Option<String>,
    pub backend: Backend,
    pub limits: Limits,
    /// The shared remote cache (placement only: never part of a key).
    pub cache: Cache,
    pub datasets: BTreeMap<String, Dataset>,
    pub stages: BTreeMap<String, Stage>,
    /// Stage names in a topological order (ties by name).
    pub stage_order: Vec<String>,
    pub teams: BTreeMap<String, Team>,
    pub harnesses: BTreeMap<String, Harness>,
    pub prompts: Prompts,
    /// Model -> prices (built-in table plus the manifest's `[pricing]`).
    pub pricing: BTreeMap<String, Price>,
    /// The merged manifest (after `extends`), as written: recorded in the run log.
    pub resolved: toml::Value,
    /// blake3 of the canonical JSON of `resolved`.
    pub hash: String,
    /// Every file read (the manifest and its `extends` chain).
    pub files: Vec<PathBuf>,
}

impl Manifest {
    /// Stage names of a kind, in topological order.
    pub fn stages_of(&self, kind: StageKindName) -> impl Iterator<Item = &Stage> {
        self.stage_order
            .iter()
            .map(|n| &self.stages[n])
            .filter(move |s| s.kind.name() == kind)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Local,
    Docker,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Local => "local",
            BackendKind::Docker => "docker",
        })
    }
}

#[derive(Debug, Clone)]
pub struct Backend {
    pub kind: BackendKind,
    pub cpus: f64,
    pub memory_bytes: u64,
    pub pids: u64,
    pub host: Option<String>,
    /// docker: a pool of daemons (`[backend] hosts`); empty: the single `host`.
    pub hosts: Vec<DockerHostSpec>,
    /// docker: agents reach only their harness's endpoints (through the egress proxy); else
    /// the default bridge.
    pub egress_allowlist: bool,
    /// docker: image reference -> image ID (`sha256:...`) as the daemon resolved it before
    /// planning; keys hold the ID, never the tag. Empty for local manifests.
    pub images: std::collections::BTreeMap<String, String>,
}

/// One daemon of `[backend] hosts`, validated (TLS paths resolved against the manifest).
#[derive(Debug, Clone, PartialEq)]
pub struct DockerHostSpec {
    pub url: String,
    pub containers: Option<usize>,
    pub cpus: Option<f64>,
    pub tls: Option<DockerTls>,
}

/// A tcp daemon's TLS files.
#[derive(Debug, Clone, PartialEq)]
pub struct DockerTls {
    pub ca: std::path::PathBuf,
    pub cert: std::path::PathBuf,
    pub key: std::path::PathBuf,
}

impl Backend {
    /// The facts of this backend that enter the keys of a task's nodes: on docker the task
    /// image's ID and the outcome-changing limits, on local nothing but the kind.
    pub fn facts(&self, base: &crate::tasks::TaskBase) -> crate::jobs::BackendFacts {
        match self.kind {
            BackendKind::Local => crate::jobs::BackendFacts {
                kind: BackendKind::Local,
                image: None,
                memory_bytes: None,
                pids: None,
                isolation: crate::backend::jail::isolation().to_string(),
            },
            BackendKind::Docker => crate::backend::docker_facts(
                &self.images,
                base,
                &crate::backend::Resources {
                    cpus: self.cpus,
                    memory_bytes: self.memory_bytes,
                    pids: self.pids,
                },
            ),
        }
    }

    /// The hardening of grading sandboxes on this backend (docker; none on local).
    pub fn grading_hardening(&self) -> Option<crate::backend::Hardening> {
        (self.kind == BackendKind::Docker).then(crate::backend::Hardening::grading)
    }

    /// Whether agents run in images built from their harness's install (docker); elsewhere an
    /// install changes nothing a solve produces.
    pub fn builds_agent_images(&self) -> bool {
        self.kind == BackendKind::Docker
    }
}

/// `[cache]`: where the shared remote cache is and whose records it accepts.
#[derive(Debug, Clone, Default)]
pub struct Cache {
    /// The remote's URL; `None`: no remote cache.
    pub remote: Option<String>,
    /// Trusted public keys, as written (`ed25519:...`), each checked to be one.
    pub trust: Vec<String>,
    /// Whether apply uploads what it computes.
    pub push: bool,
}

#[derive(Debug, Clone)]
pub struct Limits {
    pub jobs: usize,
    pub containers: usize,
    pub agents: usize,
    /// Task image pulls at once.
    pub pulls: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DatasetFormat {
    Local,
    SweBenchLive,
    SweBenchLivePython,
    SweBench,
    SweBenchPro,
    /// SWE-rebench rows (nebius/SWE-rebench): SWE-bench fields plus `install_config`.
    SweRebench,
    /// brain bench's task YAML files (seed 004), read from a `path`.
    BrainBench,
    /// Harbor task directories (Terminal-Bench 2, Frontier-SWE): `task.toml`, `instruction.md`,
    /// `environment/`, `tests/`, `solution/`.
    Harbor,
}

impl DatasetFormat {
    pub const NAMES: [&'static str; 8] = [
        "local",
        "swe-bench-live",
        "swe-bench-live-python",
        "swe-bench",
        "swe-bench-pro",
        "swe-rebench",
        "brain-bench",
        "harbor",
    ];

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "local" => DatasetFormat::Local,
            "swe-bench-live" => DatasetFormat::SweBenchLive,
            "swe-bench-live-python" => DatasetFormat::SweBenchLivePython,
            "swe-bench" => DatasetFormat::SweBench,
            "swe-bench-pro" => DatasetFormat::SweBenchPro,
            "swe-rebench" => DatasetFormat::SweRebench,
            "brain-bench" => DatasetFormat::BrainBench,
            "harbor" => DatasetFormat::Harbor,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone)]
pub enum DatasetSource {
    /// A directory (local tasks) or file on this machine.
    Path(PathBuf),
    /// A pinned Hugging Face dataset revision.
    Hub {
        repo: String,
        revision: String,
        files: Vec<String>,
        /// The sha256 each file must have when fetched (a preset's own pin; empty otherwise).
        sha256: std::collections::BTreeMap<String, String>,
    },
}

#[derive(Debug, Clone)]
pub struct Dataset {
    pub name: String,
    pub format: DatasetFormat,
    pub source: DatasetSource,
    /// `swe-bench-pro`: the SWE-bench_Pro-os checkout holding `run_scripts/<instance_id>/`.
    pub run_scripts: Option<PathBuf>,
    /// Grading of its tasks may use the network (`grade_network = true`).
    pub grade_network: bool,
    /// `harbor`: the commit of the git repository at `path` whose tree is read (`revision`);
    /// `None`: the directory as it is.
    pub commit: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StageKindName {
    Sample,
    Gold,
    Solve,
    Grade,
    Report,
}

impl fmt::Display for StageKindName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StageKindName::Sample => "sample",
            StageKindName::Gold => "gold",
            StageKindName::Solve => "solve",
            StageKindName::Grade => "grade",
            StageKindName::Report => "report",
        })
    }
}

#[derive(Debug, Clone)]
pub struct Stage {
    pub name: String,
    pub needs: Vec<String>,
    pub kind: StageKind,
}

#[derive(Debug, Clone)]
pub enum StageKind {
    Sample(SampleStage),
    Gold(GoldStage),
    Solve(SolveStage),
    Grade(GradeStage),
    Report(ReportStage),
}

impl StageKind {
    pub fn name(&self) -> StageKindName {
        match self {
            StageKind::Sample(_) => StageKindName::Sample,
            StageKind::Gold(_) => StageKindName::Gold,
            StageKind::Solve(_) => StageKindName::Solve,
            StageKind::Grade(_) => StageKindName::Grade,
            StageKind::Report(_) => StageKindName::Report,
        }
    }
}

/// Filters and order of a sample; all of it is part of the sample's key.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct SampleFilters {
    /// Inclusive lower bound on `created_at`, RFC 3339.
    pub since: Option<String>,
    /// Exclusive upper bound on `created_at`, RFC 3339.
    pub until: Option<String>,
    pub repos: BTreeSet<String>,
    pub languages: BTreeSet<String>,
    pub instance_ids: BTreeSet<String>,
    pub limit: Option<u32>,
    pub seed: u64,
}

#[derive(Debug, Clone)]
pub struct SampleStage {
    pub dataset: String,
    pub filters: SampleFilters,
}

#[derive(Debug, Clone)]
pub struct GoldStage {
    pub empty: bool,
    pub timeout: Duration,
}

#[derive(Debug, Clone)]
pub struct SolveStage {
    pub teams: Vec<String>,
    pub replicates: u32,
    pub limit: Option<u32>,
    pub timeout: Duration,
    pub max_cost_usd: Option<f64>,
    pub allow_unpriced: bool,
    pub concurrency: Option<u32>,
}

#[derive(Debug, Clone)]
pub struct GradeStage {
    pub timeout: Duration,
    pub audit: AuditMode,
    /// `confirm = true`: the in-sandbox forgery check.
    pub confirm: bool,
    /// Where Harbor tasks are verified (`[stages.grade] harbor`).
    pub harbor: HarborVerifier,
}

#[derive(Debug, Clone)]
pub struct ReportStage {
    pub baseline: Option<String>,
    pub out: PathBuf,
    pub count_errors_as_failures: bool,
    /// The promotion rule, if any.
    pub promote: Option<Promote>,
    /// How scores are computed from rewards.
    pub scorer: Scorer,
}

/// How a pair's score is computed from its reward (part of the report's key through the
/// scores it computes).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum Scorer {
    Reward,
    FrontierSwe { ssim_threshold: f64 },
}

impl Scorer {
    pub fn describe(&self) -> String {
        match self {
            Scorer::Reward => "reward".into(),
            Scorer::FrontierSwe { ssim_threshold } => {
                format!("frontier-swe (SSIM threshold {ssim_threshold})")
            }
        }
    }
}

/// A resolved promotion rule (`promote` of a report stage).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Promote {
    pub candidate: String,
    pub baseline: String,
    pub max_drop_points: f64,
    pub min_cost_saving_percent: f64,
}

/// An agent: a harness and, for model-driven harnesses, a model.
/// Encoded as the manifest writes it: `harness@model`, or `harness` alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    pub harness: String,
    pub model: Option<String>,
}

impl Serialize for Agent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Agent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(match s.split_once('@') {
            Some((h, m)) => Agent {
                harness: h.to_string(),
                model: Some(m.to_string()),
            },
            None => Agent {
                harness: s,
                model: None,
            },
        })
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.model {
            Some(m) => write!(f, "{}@{m}", self.harness),
            None => f.write_str(&self.harness),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "topology", rename_all = "kebab-case")]
pub enum Topology {
    Solo {
        worker: Agent,
    },
    Review {
        coder: Agent,
        reviewer: Agent,
        rounds: u32,
    },
    BestOf {
        workers: Vec<Agent>,
        judge: Agent,
    },
}

impl Topology {
    /// Every agent of the team.
    pub fn agents(&self) -> Vec<&Agent> {
        match self {
            Topology::Solo { worker } => vec![worker],
            Topology::Review {
                coder, reviewer, ..
            } => vec![coder, reviewer],
            Topology::BestOf { workers, judge } => {
                workers.iter().chain(std::iter::once(judge)).collect()
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Team {
    pub name: String,
    pub topology: Topology,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HarnessKind {
    Oracle,
    Nop,
    Command,
    /// Patches read from a SWE-bench predictions file (`path`).
    Predictions,
}

impl HarnessKind {
    pub const NAMES: [&'static str; 4] = ["oracle", "nop", "command", "predictions"];

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "oracle" => HarnessKind::Oracle,
            "nop" => HarnessKind::Nop,
            "command" => HarnessKind::Command,
            "predictions" => HarnessKind::Predictions,
            _ => return None,
        })
    }

    /// Whether the harness reads the prompt (so the prompt template is part of its key).
    pub fn reads_prompt(self) -> bool {
        !matches!(
            self,
            HarnessKind::Oracle | HarnessKind::Nop | HarnessKind::Predictions
        )
    }
}

/// How a harness reports usage and cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UsageFormat {
    /// `claude -p --output-format json`: `total_cost_usd` and `usage`.
    ClaudeJson,
    /// `codex exec --json`: token counts, priced by the pricing table.
    CodexJsonl,
    /// aider's `Tokens: ... Cost: $x message, $y session.` lines.
    Aider,
    /// mini-swe-agent's trajectory `info.model_stats.instance_cost`.
    MiniSweAgent,
}

impl UsageFormat {
    /// Whether the CLI's own dollar figure is exact (kept as reported); otherwise cost is
    /// derived from its token counts and the pricing table where the model is priced.
    pub fn reports_exact_cost(self) -> bool {
        matches!(self, UsageFormat::ClaudeJson)
    }

    /// Version of bench's reader of this format (part of the keys of the solves it reads).
    pub fn version(self) -> u32 {
        // 2: per-call tokens with cache reads and writes, exact-only reported cost, the
        // agent's own error message (issue 13).
        // 3: a refusal (auth, quota, rate limit) under bench's timeout is an error; claude's
        // figure exact only for a model it priced, its transcript read when it was killed;
        // codex's cache writes (issue 31).
        match self {
            UsageFormat::ClaudeJson => 3,
            UsageFormat::CodexJsonl => 3,
            UsageFormat::Aider => 3,
            UsageFormat::MiniSweAgent => 3,
        }
    }

    pub const NAMES: [&'static str; 5] = [
        "claude-json",
        "codex-jsonl",
        "aider",
        "mini-swe-agent",
        "none",
    ];

    /// `Ok(None)` for "none"; `Err` holds the unknown name.
    pub fn parse(s: &str) -> Result<Option<Self>, String> {
        Ok(Some(match s {
            "claude-json" => UsageFormat::ClaudeJson,
            "codex-jsonl" => UsageFormat::CodexJsonl,
            "aider" => UsageFormat::Aider,
            "mini-swe-agent" => UsageFormat::MiniSweAgent,
            "none" => return Ok(None),
            other => return Err(other.to_string()),
        }))
    }
}

/// A harness definition (built-in or from the manifest).
#[derive(Debug, Clone)]
pub struct Harness {
    pub name: String,
    pub kind: HarnessKind,
    pub command: Option<String>,
    pub script: Option<PathBuf>,
    /// The files the script reads (absolute), as declared; `None`: the files beside the script.
    pub files: Option<Vec<PathBuf>>,
    pub env: Vec<String>,
    pub usage: Option<UsageFormat>,
    pub install: Vec<String>,
    /// Files and directories copied into the install container, absolute.
    pub install_files: Vec<PathBuf>,
    pub version: Option<String>,
    /// Git glob patterns of the files the CLI writes for itself (kept out of the patch).
    pub own_files: Vec<String>,
    /// Model endpoints (`host:port`, validated) the agent may reach under the allowlist.
    pub endpoints: Vec<String>,
    /// The model API's base URL (validated `http(s)://host[:port][/path]`), `{{base_url}}`.
    pub base_url: Option<String>,
    /// Globs (relative to the agent's home) of the CLI's caches, left out of the trajectory.
    pub caches: Vec<String>,
    /// A runtime tarball unpacked into the agent image before `install`.
    pub runtime: Option<Runtime>,
    /// `predictions`: the predictions file, absolute.
    pub path: Option<PathBuf>,
}

impl Harness {
    /// Whether the harness builds an agent image on the docker backend.
    pub fn installs(&self) -> bool {
        !(self.install.is_empty() && self.install_files.is_empty() && self.runtime.is_none())
    }
}

/// A runtime tarball for agent images (see `harness::runtime`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Runtime {
    pub name: String,
    pub url: String,
    pub sha256: String,
}

/// Prices in dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Price {
    /// Uncached input tokens.
    pub input: f64,
    /// Input tokens served from the provider's prompt cache.
    pub cached_input: f64,
    /// Input tokens written to the provider's prompt cache.
    pub cache_write: f64,
    pub output: f64,
}

/// The default instruction around the problem statement.
pub const DEFAULT_INSTRUCTION: &str = "You are working in a git repository. Resolve the issue below by editing the \
repository's files. Do not add or modify tests unless the issue asks for it.\n\n\
<issue>\n{{problem_statement}}\n</issue>\n";

/// The default reviewer prompt.
pub const DEFAULT_REVIEW: &str = "You are reviewing a proposed fix for the issue below. Read the diff against the issue. \
If the diff resolves the issue correctly and completely, answer with a line `APPROVE`. Otherwise answer \
with a line `REQUEST_CHANGES` followed by what must change.\n\n<issue>\n{{problem_statement}}\n</issue>\n\n\
<diff>\n{{diff}}\n</diff>\n";

/// The default fixer prompt (the coder's turn after a review).
pub const DEFAULT_FIX: &str = "A reviewer asked for changes to your fix of the issue below. Address the review \
by editing the repository's files.\n\n<issue>\n{{problem_statement}}\n</issue>\n\n<review>\n{{review}}\n</review>\n";

/// The default judge prompt.
pub const DEFAULT_JUDGE: &str = "Several candidate fixes for the issue below follow. Pick the one most likely to \
resolve the issue correctly. Answer with a line `PICK: <number>`.\n\n<issue>\n{{problem_statement}}\n</issue>\n\n\
{{candidates}}\n";

#[derive(Debug, Clone)]
pub struct Prompts {
    pub instruction: String,
    pub review: String,
    pub fix: String,
    pub judge: String,
}
