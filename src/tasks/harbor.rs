//! What a Harbor task (Terminal-Bench 2, Frontier-SWE) carries beyond the common task fields:
//! its `task.toml` as read (every field of the current schema, aliases and deprecated sizes
//! resolved), the tests and solution directories as deterministic tarballs, and where its
//! environment image comes from. Its digests enter keys by views: the agent's view (environment,
//! agent settings, workdir) in the solver digest, everything but the solution in the grading
//! digest.
//!
//! Not here: reading task directories (`datasets/harbor.rs`) or running them
//! (`protocols/harbor.rs`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::types::Blob;

/// The directory an agent works in when the environment names none (Harbor's convention).
pub const HARBOR_WORKDIR: &str = "/app";

/// A phase's network policy (Harbor's `NetworkMode` with its hosts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "kebab-case")]
pub enum NetworkPolicy {
    Public,
    NoNetwork,
    Allowlist { hosts: Vec<String> },
}

impl NetworkPolicy {
    pub fn describe(&self) -> String {
        match self {
            NetworkPolicy::Public => "public".into(),
            NetworkPolicy::NoNetwork => "no-network".into(),
            NetworkPolicy::Allowlist { hosts } => format!("allowlist ({})", hosts.join(", ")),
        }
    }
}

/// `[task]`: the package identity of newer task files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackageInfo {
    pub name: String,
    pub description: String,
    pub authors: Vec<(String, Option<String>)>,
    pub keywords: Vec<String>,
}

/// `[[environment.mcp_servers]]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    pub name: String,
    pub transport: String,
    pub url: Option<String>,
    pub command: Option<String>,
    pub args: Vec<String>,
}

/// `[environment.healthcheck]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Healthcheck {
    pub command: String,
    pub interval_sec: f64,
    pub timeout_sec: f64,
    pub start_period_sec: f64,
    pub start_interval_sec: f64,
    pub retries: i64,
}

/// `[verifier]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifierConfig {
    pub timeout_sec: f64,
    pub env: BTreeMap<String, String>,
    pub user: Option<String>,
    /// The verifier's own policy, when the file sets one (else the environment's applies).
    pub network: Option<NetworkPolicy>,
}

/// `[agent]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// `None`: no limit of the task's own (the solve stage's timeout applies).
    pub timeout_sec: Option<f64>,
    pub user: Option<String>,
    pub network: Option<NetworkPolicy>,
}

/// `[environment]`, sizes in MB after the deprecated `memory`/`storage` strings are applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentConfig {
    pub build_timeout_sec: f64,
    pub docker_image: Option<String>,
    pub cpus: i64,
    pub memory_mb: i64,
    pub storage_mb: i64,
    pub gpus: i64,
    pub gpu_types: Option<Vec<String>>,
    /// The baseline policy: `network_mode` if set, else `allow_internet`.
    pub network: NetworkPolicy,
    pub mcp_servers: Vec<McpServer>,
    pub env: BTreeMap<String, String>,
    pub skills_dir: Option<String>,
    pub healthcheck: Option<Healthcheck>,
    pub os: Option<String>,
}

/// A `task.toml`, resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarborConfig {
    /// `schema_version` (or its alias `version`).
    pub schema_version: String,
    pub task: Option<PackageInfo>,
    /// Free-form `[metadata]`, as JSON.
    pub metadata: serde_json::Value,
    pub verifier: VerifierConfig,
    pub agent: AgentConfig,
    pub environment: EnvironmentConfig,
    pub solution_env: BTreeMap<String, String>,
    pub source: Option<String>,
    pub artifacts: serde_json::Value,
}

impl HarborConfig {
    /// The verifier's effective policy: its own, else the environment's.
    pub fn verifier_network(&self) -> &NetworkPolicy {
        self.verifier
            .network
            .as_ref()
            .unwrap_or(&self.environment.network)
    }

    /// The agent's effective policy: its own, else the environment's.
    pub fn agent_network(&self) -> &NetworkPolicy {
        self.agent
            .network
            .as_ref()
            .unwrap_or(&self.environment.network)
    }
}

/// How a service's image is built: a directory of the task's `environment/` (relative, `""`
/// for `environment/` itself) and the Dockerfile in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceBuild {
    pub context: String,
    pub dockerfile: String,
}

/// A service's health check (compose's `healthcheck`), its durations in milliseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceHealth {
    /// Docker's form: `["CMD", prog, args..]` or `["CMD-SHELL", script]`.
    pub test: Vec<String>,
    pub interval_ms: u64,
    pub timeout_ms: u64,
    pub start_period_ms: u64,
    pub retries: u64,
}

/// One service of a task's `environment/docker-compose.yaml` besides `main` (the agent's
/// container): started before the agent's run on a network of the trial's own, reachable by
/// its name (`datasets/harbor_compose.rs` reads and checks the file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceSpec {
    pub name: String,
    /// A prebuilt image (resolved, and pulled when missing, before the run), when not built.
    pub image: Option<String>,
    pub build: Option<ServiceBuild>,
    pub entrypoint: Option<Vec<String>>,
    pub command: Option<Vec<String>>,
    /// `KEY=value`, sorted.
    pub environment: Vec<String>,
    pub working_dir: Option<String>,
    pub user: Option<String>,
    pub healthcheck: Option<ServiceHealth>,
    /// The services it starts after (sorted).
    pub depends_on: Vec<String>,
}

/// A Harbor task's inputs beyond the common fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HarborSpec {
    pub config: HarborConfig,
    /// Where the agent works (the Dockerfile's last `WORKDIR`, else `/app`).
    pub workdir: String,
    /// `tests/` as a deterministic tarball (uploaded to `/tests` at verify time).
    pub tests: Blob,
    /// `solution/` as a deterministic tarball (the oracle runs its `solve.sh`).
    pub solution: Option<Blob>,
    /// The services of `environment/docker-compose.yaml` beside the main container, in the
    /// order they start (empty: a single-container task, whose digests are as before).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<ServiceSpec>,
}

/// What an agent's run depends on: the environment and agent settings, never the tests.
#[derive(Serialize)]
struct AgentView<'a> {
    agent: &'a AgentConfig,
    environment: &'a EnvironmentConfig,
    workdir: &'a str,
    #[serde(skip_serializing_if = "<[ServiceSpec]>::is_empty")]
    services: &'a [ServiceSpec],
}

/// What verification depends on: everything but the solution.
#[derive(Serialize)]
struct GradingView<'a> {
    config: &'a HarborConfig,
    tests: &'a Blob,
    workdir: &'a str,
    #[serde(skip_serializing_if = "<[ServiceSpec]>::is_empty")]
    services: &'a [ServiceSpec],
}

/// A [`GradingView`] read back (a shipped job's input root): the tests by their digest.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShippedGradingView {
    pub config: HarborConfig,
    pub tests: String,
    pub workdir: String,
    #[serde(default)]
    pub services: Vec<ServiceSpec>,
}

impl ShippedGradingView {
    /// The spec of these grading facts with the tests' bytes, `None` when it does not hash to
    /// `digest` again (a view that reads back as another). A shipped spec holds no solution:
    /// no grading digest covers it (an oracle's comes as its gold patch).
    pub fn into_spec(self, tests: Vec<u8>, digest: &str) -> Option<HarborSpec> {
        let spec = HarborSpec {
            config: self.config,
            workdir: self.workdir,
            tests: Blob::new(tests),
            solution: None,
            services: self.services,
        };
        (spec.tests.digest() == self.tests && spec.grading_digest() == digest).then_some(spec)
    }
}

impl HarborSpec {
    pub fn agent_digest(&self) -> String {
        crate::key::digest_of(&AgentView {
            agent: &self.config.agent,
            environment: &self.config.environment,
            workdir: &self.workdir,
            services: &self.services,
        })
    }

    /// The canonical bytes [`HarborSpec::grading_digest`] hashes (what a shipped job carries).
    pub fn grading_view_bytes(&self) -> Vec<u8> {
        crate::key::canonical_bytes(&GradingView {
            config: &self.config,
            tests: &self.tests,
            workdir: &self.workdir,
            services: &self.services,
        })
    }

    pub fn grading_digest(&self) -> String {
        crate::key::digest_of(&GradingView {
            config: &self.config,
            tests: &self.tests,
            workdir: &self.workdir,
            services: &self.services,
        })
    }

    /// The whole spec's digest (the task record's).
    pub fn digest(&self) -> String {
        crate::key::digest_of(self)
    }
}

/// A task's Harbor spec enters the task record by its digest.
#[derive(Debug, Clone, PartialEq)]
pub struct Harbor(pub std::sync::Arc<HarborSpec>);

impl Serialize for Harbor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.digest())
    }
}

impl std::ops::Deref for Harbor {
    type Target = HarborSpec;
    fn deref(&self) -> &HarborSpec {
        &self.0
    }
}
