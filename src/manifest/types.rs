//! The manifest's file format as serde types: exactly what a TOML file may contain, with the
//! documentation that ends up in `schemas/manifest.schema.json`.
//!
//! These types are the single source of truth for the shape of a manifest: the JSON Schema is
//! generated from them, the structural checker walks that schema, and the validator converts them
//! into the [`crate::manifest::Manifest`] model. Nothing outside `manifest/` sees these types.

use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

pub use crate::types::{AuditMode, HarborVerifier};

/// A bench manifest: one experiment, under version control.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "bench manifest")]
pub struct ManifestFile {
    /// Manifest format version; always 1.
    pub version: u32,
    /// Experiment name, shown in plans and reports. Defaults to the file name.
    pub name: Option<String>,
    /// One line on what the experiment measures.
    pub description: Option<String>,
    /// A base manifest (path relative to this file) merged under this one: tables merge key by
    /// key, everything else is replaced.
    pub extends: Option<String>,
    /// Where commands run.
    pub backend: Option<BackendFile>,
    /// Resource pools of the executor (speed only: never part of a node key).
    pub limits: Option<LimitsFile>,
    /// A remote cache shared with other machines (placement only: never part of a node key).
    pub cache: Option<CacheFile>,
    /// Where solves and grades run: here (the default), or as jobs of a cluster engine (Slurm)
    /// that run `bench worker` (placement only: never part of a node key).
    pub execution: Option<ExecutionFile>,
    /// The local store: how much of its history `bench gc` keeps (never part of a node key).
    pub store: Option<StoreFile>,
    /// Task sources, by name.
    #[serde(default)]
    pub datasets: BTreeMap<String, DatasetFile>,
    /// The pipeline's stages, by name; `needs` edges make them a DAG.
    #[serde(default)]
    pub stages: BTreeMap<String, StageFile>,
    /// Agent teams, by name: a table or the shorthand `"solo:worker=harness@model"`.
    #[serde(default)]
    pub teams: BTreeMap<String, TeamEntry>,
    /// Harness definitions added to (or overriding) the built-ins, by name.
    #[serde(default)]
    pub harnesses: BTreeMap<String, HarnessFile>,
    /// Prompt templates (handlebars) around the problem statement.
    pub prompts: Option<PromptsFile>,
    /// Model prices (dollars per million tokens), added to or overriding the built-in table.
    #[serde(default)]
    pub pricing: BTreeMap<String, PriceFile>,
}

/// Backend settings.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BackendFile {
    /// `local` (host processes in throwaway git workspaces) or `docker`.
    pub kind: Option<BackendKindFile>,
    /// CPUs per sandbox (docker). Default 4.
    pub cpus: Option<f64>,
    /// Memory per sandbox, e.g. "16GiB" (docker). Default 16GiB.
    pub memory: Option<String>,
    /// Process limit per sandbox (docker). Default 4096.
    pub pids: Option<u64>,
    /// Docker daemon address; defaults to DOCKER_HOST, then the local socket.
    pub host: Option<String>,
    /// A pool of Docker daemons (instead of `host`): work is spread over them, preferring a
    /// host that already has a node's image; a host that becomes unreachable has its running
    /// nodes retried on the others. Never part of a node key.
    pub hosts: Option<Vec<DockerHostFile>>,
    /// What agents reach (docker): `allowlist` (default: only their harness's `endpoints`,
    /// through bench's egress proxy, on an internal network with no route out) or `open`
    /// (the daemon's default bridge).
    pub egress: Option<String>,
}

/// One Docker daemon of `[backend] hosts`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DockerHostFile {
    /// `unix:///path/docker.sock`, `tcp://host:port` (TLS with `ca`, `cert` and `key`), or
    /// `ssh://[user@]host[:port][/path/docker.sock]` (bench forwards the remote socket with the
    /// `ssh` client; default socket /var/run/docker.sock).
    pub url: String,
    /// Sandboxes (containers) alive at once on this host. Default: `limits.containers`.
    pub containers: Option<u32>,
    /// CPUs of this host that sandboxes may reserve (the sum of their `cpus`, each capped to
    /// the daemon's CPU count). Default: no CPU bound, only `containers`.
    pub cpus: Option<f64>,
    /// tcp with TLS: the CA certificate (PEM), relative to this manifest.
    pub ca: Option<String>,
    /// tcp with TLS: the client certificate (PEM), relative to this manifest.
    pub cert: Option<String>,
    /// tcp with TLS: the client key (PEM), relative to this manifest.
    pub key: Option<String>,
}

/// Backend kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKindFile {
    Local,
    Docker,
}

/// Executor resource pools.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsFile {
    /// Host CPU slots for local commands (grading, local agents). Default: the number of CPUs.
    pub jobs: Option<u32>,
    /// Containers alive at once (docker backend). Default 8.
    pub containers: Option<u32>,
    /// Agent runs at once across all solve stages. Default 4.
    pub agents: Option<u32>,
    /// Task image pulls at once (docker backend), before anything runs. Default 3.
    pub pulls: Option<u32>,
}

/// The shared remote cache.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CacheFile {
    /// Where it is: `s3://bucket/prefix`, `gs://bucket/prefix`, `az://container/prefix`,
    /// `https://host/path` (WebDAV) or `file:///dir`. Credentials come from the environment the
    /// way each service's tools expect (`AWS_*`, `GOOGLE_*`, `AZURE_*`).
    pub remote: Option<String>,
    /// Public keys (`ed25519:...`, as `bench cache keygen` prints them) whose signed records
    /// this store accepts. A record signed by no key listed here is never used.
    #[serde(default)]
    pub trust: Vec<String>,
    /// Whether `apply` uploads what it computes, signed with this machine's key
    /// (`BENCH_CACHE_KEY_FILE`, `BENCH_CACHE_KEY` or ~/.config/bench/cache.key). Default true.
    pub push: Option<bool>,
    /// The largest object (a signed record or a blob) a fetch downloads, e.g. "1GiB" (the
    /// default). A larger object is refused unread, with a note, and its node runs here:
    /// anyone who can write to the bucket can plant objects, signed or not.
    pub max_object_size: Option<String>,
}

/// `[execution]`: where solves and grades run.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecutionFile {
    /// `local` (the default: every node runs on this machine) or `slurm` (each solve and grade
    /// is a Slurm job running `bench worker`; samples and reports stay here). Slurm needs
    /// `[cache] remote` (the shared cache, e.g. `file:///` on the cluster's shared filesystem)
    /// and the workers' public key in `[cache] trust`.
    pub engine: Option<ExecutionEngineFile>,
    /// Slurm partition (`--partition`). Default: the cluster's.
    pub partition: Option<String>,
    /// Slurm account (`--account`).
    pub account: Option<String>,
    /// Slurm quality of service (`--qos`).
    pub qos: Option<String>,
    /// Extra sbatch options, passed verbatim (e.g. `["--constraint=docker"]`).
    #[serde(default)]
    pub sbatch: Vec<String>,
    /// Jobs in the queue or running at once. Default 64.
    pub max_jobs: Option<u32>,
    /// Submissions of a node whose job is lost (its node died, it was preempted, it hit its time
    /// limit) before the node fails. Default 3.
    pub attempts: Option<u32>,
    /// CPUs per job (`--cpus-per-task`). Default: the cluster's.
    pub cpus: Option<u32>,
    /// Memory per job, e.g. "8GiB" (`--mem`). Default: the cluster's.
    pub memory: Option<String>,
    /// A job's time limit, e.g. "2h". Default: its node's timeout plus 15 minutes.
    pub time_limit: Option<String>,
    /// The bench executable the jobs run, as the cluster's nodes see it. Default: this one.
    pub bench: Option<String>,
    /// Where jobs write their output and reports: a directory the cluster's nodes and this
    /// machine share (relative to the manifest). Default: `slurm/` in the store.
    pub spool: Option<String>,
    /// The worker's store on each node (its job's inputs, its outputs before upload). Default:
    /// `bench-worker` in the node's temp directory.
    pub worker_store: Option<String>,
}

/// An execution engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ExecutionEngineFile {
    Local,
    Slurm,
}

/// The local store's retention.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreFile {
    /// `bench gc` keeps every result the last this-many applies of this manifest used (so an
    /// edit undone is cached again), besides what its current plan uses. Default 3; 0 keeps
    /// only the current plan's. `bench gc --keep-runs` overrides it for one collection.
    pub keep_runs: Option<u32>,
}

/// A task source.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DatasetFile {
    /// A known upstream dataset, e.g. "swe-bench-live/multilang"; sets `format`, `repo` and `files`.
    pub source: Option<String>,
    /// Row format: `local` (bench's task directories), `swe-bench-live`, `swe-bench-live-python`,
    /// `swe-bench`, `swe-bench-multimodal`, `swe-rebench`, `swe-rebench-v2`, `swe-bench-pro`,
    /// `harbor` (Harbor task directories).
    /// `brain-bench`: brain bench's task YAML files (a file or a directory of them).
    pub format: Option<String>,
    /// Local directory or file (relative to this manifest).
    pub path: Option<String>,
    /// Hugging Face dataset repository, e.g. "SWE-bench-Live/MultiLang".
    pub repo: Option<String>,
    /// The exact dataset revision (a commit sha): of the Hub repository, or for `harbor`, of the
    /// git repository at `path`.
    pub revision: Option<String>,
    /// Files of the repository to read.
    pub files: Option<Vec<String>>,
    /// `swe-bench-pro`: a local checkout of scaleapi/SWE-bench_Pro-os (relative to this
    /// manifest) holding `run_scripts/<instance_id>/{run_script.sh, parser.py, instance_info.txt}`.
    pub run_scripts: Option<String>,
    /// Whether grading containers of this dataset's tasks get the network (the daemon's default
    /// bridge; the host's on the local backend). Off by default: a patch's code could fetch the
    /// fix. For tasks whose tests must download something.
    pub grade_network: Option<bool>,
}

/// One stage of the pipeline.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum StageFile {
    /// Draw a seeded sample of tasks from a dataset.
    Sample(SampleFile),
    /// Grade every task's reference patch: only tasks whose gold patch resolves go on.
    Gold(GoldFile),
    /// Run agent teams on the tasks.
    Solve(SolveFile),
    /// Grade every patch of the solve stages it needs.
    Grade(GradeFile),
    /// Compare the teams.
    Report(ReportFile),
}

/// `kind = "sample"`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SampleFile {
    /// Stages this one runs after (none for a sample).
    #[serde(default)]
    pub needs: Vec<String>,
    /// The dataset to draw from (a key of `[datasets]`).
    pub dataset: String,
    /// Keep tasks created on or after this date (a TOML date: `since = 2026-07-01`).
    #[serde(default)]
    #[schemars(schema_with = "date_schema")]
    pub since: Option<TomlDate>,
    /// Keep tasks created before this date (exclusive).
    #[serde(default)]
    #[schemars(schema_with = "date_schema")]
    pub until: Option<TomlDate>,
    /// Keep only these repositories (`owner/name`).
    pub repos: Option<Vec<String>>,
    /// Keep only these languages.
    pub languages: Option<Vec<String>>,
    /// Keep only these instance ids.
    pub instance_ids: Option<Vec<String>>,
    /// At most this many tasks (a prefix of the seeded order: raising it keeps earlier tasks).
    pub limit: Option<u32>,
    /// Seed of the sample order. Default 0.
    pub seed: Option<u64>,
}

/// `kind = "gold"`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoldFile {
    /// The sample stage whose tasks are checked.
    #[serde(default)]
    pub needs: Vec<String>,
    /// Also grade the empty patch, which must leave every task unresolved.
    pub empty: Option<bool>,
    /// Grading budget per task, e.g. "150m". Default 150m.
    pub timeout: Option<String>,
}

/// `kind = "solve"`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SolveFile {
    /// A sample stage, or a gold stage (then only tasks whose gold patch resolves).
    #[serde(default)]
    pub needs: Vec<String>,
    /// Teams to run (keys of `[teams]`).
    pub teams: Vec<String>,
    /// Independent attempts per task and team. Default 1.
    pub replicates: Option<u32>,
    /// At most this many tasks, a prefix of the incoming order.
    pub limit: Option<u32>,
    /// Time budget of one team on one task, e.g. "90m". Default 60m.
    pub timeout: Option<String>,
    /// Stop launching solves once the recorded priced spend reaches this many dollars.
    pub max_cost_usd: Option<f64>,
    /// Let runs of unknown cost count as zero against the budget.
    pub allow_unpriced: Option<bool>,
    /// Solves of this stage running at once (speed only).
    pub concurrency: Option<u32>,
}

/// `kind = "grade"`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GradeFile {
    /// The solve stages whose patches are graded.
    #[serde(default)]
    pub needs: Vec<String>,
    /// Grading budget per patch, e.g. "150m". Default 150m.
    pub timeout: Option<String>,
    /// What the patch audit's flags do: `flag` (default) reports them, `strict` also counts a
    /// flagged pair as unresolved.
    pub audit: Option<AuditMode>,
    /// The forgery check: each patch is also graded in the agent's own sandbox, right after
    /// the agent (solo teams); when that verdict and the clean grade differ, two more clean
    /// grades are taken, the majority counts, and the disagreement is flagged. Turning it on
    /// reruns the solves it covers (the check needs the agent's live sandbox).
    pub confirm: Option<bool>,
    /// Where Harbor tasks are verified: `in-place` (default, Harbor's contract: in the agent's
    /// own container after its run) or `fresh` (the agent's end state restored in a fresh
    /// container of the task image, `/tests` uploaded only then).
    pub harbor: Option<HarborVerifier>,
}

/// `kind = "report"`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportFile {
    /// The grade (and gold) stages reported on.
    #[serde(default)]
    pub needs: Vec<String>,
    /// The team every other team is compared with.
    pub baseline: Option<String>,
    /// Output directory (relative to this manifest). Default `reports/<manifest name>`.
    pub out: Option<String>,
    /// Count errored pairs as unresolved instead of excluding them.
    pub count_errors_as_failures: Option<bool>,
    /// Promotion rule: a verdict on whether `candidate` may replace `baseline`, printed in the
    /// report and at the end of `apply`.
    pub promote: Option<PromoteFile>,
    /// How a scored pair's score is computed from its reward: `reward` (default: the raw
    /// `reward` field) or `frontier-swe` (Frontier-SWE's gated score, by task name).
    pub score: Option<ScoreRule>,
    /// `score = "frontier-swe"`: revideo-perf-opt's SSIM threshold (default 0.95, the reference
    /// CLI's).
    pub ssim_threshold: Option<f64>,
}

/// `[stages.report] score`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ScoreRule {
    /// The reward's `reward` field.
    #[default]
    Reward,
    /// Frontier-SWE's gated score (implementation / performance / ML-research rules).
    FrontierSwe,
}

/// `promote = { candidate = "cheap", baseline = "solo", max_drop_points = 2.0,
/// min_cost_saving_percent = 10.0 }`: promote the candidate when its resolve rate (pass@1) is at
/// least the baseline's minus `max_drop_points` percentage points and its mean cost per task is
/// at most the baseline's minus `min_cost_saving_percent` percent.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromoteFile {
    /// The team that may replace the baseline.
    pub candidate: String,
    /// The team it would replace. Default: the report's `baseline`.
    pub baseline: Option<String>,
    /// Largest allowed drop in resolve rate, in percentage points. Default 2.0.
    pub max_drop_points: Option<f64>,
    /// Smallest required saving in mean cost per task, in percent. Default 10.0.
    pub min_cost_saving_percent: Option<f64>,
}

/// A team: a table, or the shorthand string `"solo:worker=codex@gpt-6-luna"`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum TeamEntry {
    /// `"solo:worker=h@m"`, `"review:coder=h@m,reviewer=h@m,rounds=1"`, `"best:workers=a+b+c,judge=h@m"`.
    Shorthand(String),
    /// A team table.
    Table(TeamFile),
}

/// A team table, by topology.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "topology", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TeamFile {
    /// One worker.
    Solo {
        /// The agent, `harness@model` or `harness`.
        worker: AgentFile,
    },
    /// A coder, and a reviewer who approves or asks for changes, for up to `rounds` rounds.
    Review {
        /// The coder agent.
        coder: AgentFile,
        /// The reviewer agent.
        reviewer: AgentFile,
        /// Review rounds. Default 3.
        rounds: Option<u32>,
    },
    /// n workers from the same start; a judge picks one patch.
    BestOf {
        /// The workers.
        workers: Vec<AgentFile>,
        /// The judge agent.
        judge: AgentFile,
    },
}

/// An agent: `"harness@model"`, `"harness"`, or a table.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum AgentFile {
    /// `harness@model`.
    Shorthand(String),
    /// `{ harness = "codex", model = "gpt-6-luna" }`.
    Table(AgentTableFile),
}

/// An agent as a table.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentTableFile {
    /// A built-in harness or a key of `[harnesses]`.
    pub harness: String,
    /// The model the harness drives.
    pub model: Option<String>,
}

/// A harness definition.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HarnessFile {
    /// What kind of harness this is: `command`, `oracle`, `nop`, `predictions`. Required for a
    /// new harness; a table named like a built-in (`codex`, `claude-code`, ...) overrides its
    /// fields.
    pub kind: Option<String>,
    /// For `command`: the shell command, run with `sh -c` in the workspace. A handlebars
    /// template of `{{script}}`, `{{prompt_file}}`, `{{model}}`, `{{workdir}}`, `{{side_dir}}`,
    /// `{{max_cost_usd}}`, `{{base_url}}` and `{{provider}}`; any other variable is an error.
    pub command: Option<String>,
    /// A script file (relative to this manifest) the command can run as `{{script}}`; its content
    /// is part of every key that uses the harness.
    pub script: Option<String>,
    /// Files or directories (relative to this manifest) the script reads, such as the modules it
    /// imports: copied beside it into the agent's side directory (a directory with its files
    /// below it), their content part of every key that uses the harness. Without `files`, the
    /// files beside the script in its directory (not in subdirectories, not hidden) are copied
    /// and keyed, unless that directory holds the manifest (then the script alone).
    pub files: Option<Vec<String>>,
    /// Environment variables passed to the agent by name (never on a command line).
    pub env: Option<Vec<String>>,
    /// How to read usage and cost from the agent's output: `claude-json`, `codex-jsonl`,
    /// `aider`, `mini-swe-agent`, or `none`.
    pub usage: Option<String>,
    /// Shell commands that install the agent CLI on top of a task image (docker backend). They
    /// run once per task image, with `sh -e` in `/tmp/bench-install` as root; the container is
    /// committed as an agent image `bench-agent:<digest>` that later solves reuse.
    pub install: Option<Vec<String>>,
    /// Files or directories (relative to this manifest) copied into `/tmp/bench-install/<name>`
    /// before the `install` commands run, e.g. a locally built agent CLI. Their content is part
    /// of the agent image's digest and of every docker key that uses the harness.
    pub install_files: Option<Vec<String>>,
    /// A version pin of the agent CLI; part of every key that uses the harness.
    pub version: Option<String>,
    /// Files the agent CLI writes in the repository for itself (git glob patterns relative to
    /// the repository root, e.g. `.aider*`, `.gitignore`): after each run they are kept in the
    /// trajectory and taken out of the workspace (new files removed, edits reverted), so the
    /// patch is the agent's change only.
    pub own_files: Option<Vec<String>>,
    /// The model endpoints (`host:port`) the agent may reach on the docker backend under
    /// `[backend] egress = "allowlist"`, replacing the built-in list. A custom base URL
    /// (e.g. `OPENAI_API_BASE` passed in `env`) needs its `host:port` here.
    pub endpoints: Option<Vec<String>>,
    /// The model API's base URL (`http://` or `https://`), for a gateway or a local server. The
    /// command gets it as `{{base_url}}` (each built-in sets its CLI's own variable or flag with
    /// it: README); on docker under the allowlist its `host:port` joins `endpoints`. Part of
    /// every key that uses the harness.
    pub base_url: Option<String>,
    /// Files under the agent's home directory that are the CLI's caches, not its logs (globs
    /// relative to the home: `*` within a name, `**` across directories, e.g. `.codex/skills/**`,
    /// `**/*.sqlite*`): the trajectory lists them by name and size and leaves their content out.
    pub caches: Option<Vec<String>>,
    /// A self-contained runtime unpacked into the agent image before the `install` commands
    /// (docker backend): a release tarball by URL and sha256, e.g. Node.js
    /// `{ name = "node", url = "https://nodejs.org/dist/v22.12.0/node-v22.12.0-linux-x64.tar.gz",
    /// sha256 = "..." }`. bench downloads and verifies it on the host; its `bin/` is first on the
    /// install commands' PATH and linked into `/usr/local/bin`.
    pub runtime: Option<RuntimeFile>,
    /// For `predictions`: a SWE-bench predictions file (relative to this manifest) whose
    /// `model_patch` for each task is the team's patch: a JSON list, a JSON object keyed by
    /// instance id, or JSON lines, with `instance_id` and `model_patch`. Its content is part of
    /// every key that uses the harness.
    pub path: Option<String>,
}

/// A runtime tarball.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuntimeFile {
    /// Its name: it is unpacked under `/opt/bench/<name>`.
    pub name: String,
    /// The release tarball (`https://`, `http://` or `file://`), one top directory holding `bin/`.
    pub url: String,
    /// Its sha256, hex.
    pub sha256: String,
}

/// Prompt templates (handlebars). Each reads only its own variables; any other is an error.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptsFile {
    /// The instruction around the problem statement (`{{problem_statement}}`, `{{repo}}`).
    pub instruction: Option<String>,
    /// The reviewer's prompt (`{{problem_statement}}`, `{{diff}}`); the reviewer answers
    /// APPROVE or REQUEST_CHANGES.
    pub review: Option<String>,
    /// The coder's prompt after a review (`{{problem_statement}}`, `{{review}}`).
    pub fix: Option<String>,
    /// The judge's prompt (`{{problem_statement}}`, `{{candidates}}`); the judge answers
    /// `PICK: <n>`.
    pub judge: Option<String>,
}

/// Prices of a model, in dollars per million tokens.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PriceFile {
    /// Input tokens.
    pub input: f64,
    /// Cached input tokens, read from the provider's prompt cache (defaults to `input`).
    pub cached_input: Option<f64>,
    /// Input tokens written to the provider's prompt cache (defaults to `input`).
    pub cache_write: Option<f64>,
    /// Output tokens.
    pub output: f64,
}

fn date_schema(_generator: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "format": "date",
        "description": "A TOML date, written without quotes: 2026-07-01"
    })
}

/// A TOML date or date-time. Deserializes through serde's buffering of tagged enums, where a
/// TOML datetime arrives as a one-entry map, as well as directly.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct TomlDate(pub toml::value::Datetime);

impl<'de> Deserialize<'de> for TomlDate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = TomlDate;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a TOML date")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<TomlDate, E> {
                v.parse().map(TomlDate).map_err(E::custom)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<TomlDate, A::Error> {
                let (_, v): (String, String) = map
                    .next_entry()?
                    .ok_or_else(|| serde::de::Error::custom("an empty date"))?;
                v.parse().map(TomlDate).map_err(serde::de::Error::custom)
            }
        }
        d.deserialize_any(V)
    }
}
