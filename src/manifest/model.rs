//! The validated manifest: what the rest of bench works with. Every reference in it resolves
//! (stages, teams, harnesses, datasets), durations and sizes are parsed, paths are absolute and
//! the stage order is topological.

pub use super::types::ScoreRule;
pub use crate::types::{
    Agent, AuditMode, BackendKind, DatasetFormat, DockerHostSpec, DockerTls, HarborVerifier,
    Harness, HarnessKind, Price, Promote, Runtime, SampleFilters, Topology, UsageFormat,
};
use std::collections::BTreeMap;
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
    /// Where solves and grades run (placement only: never part of a key).
    pub execution: Execution,
    /// `[store] keep_runs`: gc keeps what the last this-many applies used (never in a key).
    pub keep_runs: usize,
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

    /// The endpoints the agents of harness `h` may reach when this backend holds them to an
    /// allowlist (docker with `egress = "allowlist"`, command harnesses): the harness's
    /// `endpoints` and its base URL's endpoint, sorted. `None`: no allowlist is enforced.
    pub fn agent_egress(&self, h: &Harness) -> Option<Vec<String>> {
        if self.kind != BackendKind::Docker
            || !self.egress_allowlist
            || h.kind != HarnessKind::Command
        {
            return None;
        }
        let mut set: std::collections::BTreeSet<String> = h.endpoints.iter().cloned().collect();
        // The base URL's endpoint joins the allowlist (validated already).
        if let Some(e) = h
            .base_url
            .as_deref()
            .and_then(|u| crate::backend::egress::Endpoint::of_url(u).ok())
        {
            set.insert(e.to_string());
        }
        Some(set.into_iter().collect())
    }

    /// What the agents of harness `h` could reach on this backend, as the report prints it:
    /// nothing for a harness that runs no command; on docker its `endpoints` through the egress
    /// proxy (`egress = "allowlist"`) or the default bridge, on local the host network.
    pub fn agent_network_policy(&self, h: &Harness) -> String {
        if h.kind != HarnessKind::Command {
            return "none".to_string();
        }
        match (self.kind, self.egress_allowlist) {
            (BackendKind::Docker, true) => {
                let set: std::collections::BTreeSet<&str> =
                    h.endpoints.iter().map(String::as_str).collect();
                if set.is_empty() {
                    "allowlist via egress proxy: nothing".to_string()
                } else {
                    format!(
                        "allowlist via egress proxy: {}",
                        set.into_iter().collect::<Vec<_>>().join(", ")
                    )
                }
            }
            (BackendKind::Docker, false) => "open (default bridge; egress = \"open\")".into(),
            (BackendKind::Local, _) => {
                "host network (local backend: no allowlist is enforced)".into()
            }
        }
    }
}

/// `[cache]`: where the shared remote cache is and whose records it accepts.
#[derive(Debug, Clone)]
pub struct Cache {
    /// The remote's URL; `None`: no remote cache.
    pub remote: Option<String>,
    /// Trusted public keys, as written (`ed25519:...`), each checked to be one.
    pub trust: Vec<String>,
    /// Whether apply uploads what it computes.
    pub push: bool,
    /// The largest object a fetch downloads (bytes).
    pub max_object_bytes: u64,
}

/// `[execution]`: where solves and grades run.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Execution {
    /// On this machine.
    #[default]
    Local,
    /// As Slurm jobs running `bench worker`.
    Slurm(Box<SlurmExecution>),
}

/// `[execution] engine = "slurm"`.
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmExecution {
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    pub sbatch: Vec<String>,
    pub max_jobs: usize,
    pub attempts: u32,
    pub cpus: Option<u32>,
    pub memory_mb: Option<u64>,
    pub time_limit: Option<Duration>,
    /// The executable the jobs run (`None`: this one).
    pub bench: Option<PathBuf>,
    /// Absolute (`None`: `slurm/` in the store).
    pub spool: Option<PathBuf>,
    pub worker_store: Option<PathBuf>,
}

/// The default of `store.keep_runs`: gc keeps what the last three applies of a manifest used.
pub const DEFAULT_KEEP_RUNS: usize = 3;

/// The default of `cache.max_object_size`: far above any real record or blob (a 50 MB test
/// log, a trajectory), far below what planted objects would need to do harm.
pub const DEFAULT_MAX_OBJECT_BYTES: u64 = 1024 * 1024 * 1024;

impl Default for Cache {
    fn default() -> Cache {
        Cache {
            remote: None,
            trust: Vec::new(),
            push: false,
            max_object_bytes: DEFAULT_MAX_OBJECT_BYTES,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Limits {
    pub jobs: usize,
    pub containers: usize,
    pub agents: usize,
    /// Task image pulls at once.
    pub pulls: usize,
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

#[derive(Debug, Clone)]
pub struct Team {
    pub name: String,
    pub topology: Topology,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn backend(kind: BackendKind, egress_allowlist: bool) -> Backend {
        Backend {
            kind,
            cpus: 1.0,
            memory_bytes: 0,
            pids: 0,
            host: None,
            hosts: Vec::new(),
            egress_allowlist,
            images: BTreeMap::new(),
        }
    }

    fn harness(kind: HarnessKind, endpoints: &[&str]) -> Harness {
        Harness {
            name: "h".into(),
            kind,
            command: None,
            script: None,
            files: None,
            env: Vec::new(),
            usage: None,
            install: Vec::new(),
            install_files: Vec::new(),
            version: None,
            own_files: Vec::new(),
            endpoints: endpoints.iter().map(|e| e.to_string()).collect(),
            base_url: Some("https://api.example:443/v1".into()),
            caches: Vec::new(),
            runtime: None,
            path: None,
        }
    }

    /// The report's line per harness, for every backend the manifest can name: the allowlist
    /// lists the harness's endpoints sorted (its base URL is not among them).
    #[test]
    fn each_backend_describes_its_agents_network() {
        let command = harness(HarnessKind::Command, &["b.example:443", "a.example:443"]);
        let docker = backend(BackendKind::Docker, true);
        assert_eq!(
            docker.agent_network_policy(&command),
            "allowlist via egress proxy: a.example:443, b.example:443"
        );
        assert_eq!(
            docker.agent_network_policy(&harness(HarnessKind::Command, &[])),
            "allowlist via egress proxy: nothing"
        );
        assert_eq!(
            docker.agent_network_policy(&harness(HarnessKind::Oracle, &["a.example:443"])),
            "none"
        );
        assert_eq!(
            backend(BackendKind::Docker, false).agent_network_policy(&command),
            "open (default bridge; egress = \"open\")"
        );
        assert_eq!(
            backend(BackendKind::Local, false).agent_network_policy(&command),
            "host network (local backend: no allowlist is enforced)"
        );
    }
}
