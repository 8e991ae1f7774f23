//! The `Sandbox` seam: where a protocol grades and an agent works, whatever the backend.
//!
//! A [`Backend`] creates sandboxes from a task's base (a directory or an image) with resources
//! and labels; a [`Sandbox`] runs commands in its repository with a timeout, takes and gives
//! files, and is destroyed on every path. History stripping, the start snapshot and the diff
//! since start are written once over the trait (`repo.rs`). Code above this seam never asks
//! which backend it has.
//!
//! Not here: what runs in a sandbox (protocols, teams). The egress proxy behind
//! [`Network::Allowlist`] is `egress.rs`.

use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::ExecResult;
use crate::tasks::TaskBase;
use crate::types::InstallSpec;

/// Why a sandbox operation failed: always an infrastructure error (never an outcome).
#[derive(Debug, Clone, thiserror::Error)]
pub enum SandboxError {
    #[error("{0}")]
    Failed(String),
    #[error("cancelled")]
    Cancelled,
}

impl SandboxError {
    /// A failure with `what` failed in front (`what: error`); a cancel stays a cancel.
    pub fn context(self, what: String) -> SandboxError {
        match self {
            SandboxError::Failed(e) => SandboxError::Failed(format!("{what}: {e}")),
            SandboxError::Cancelled => SandboxError::Cancelled,
        }
    }
}

/// Paths inside a sandbox, as its commands see them.
#[derive(Debug, Clone)]
pub struct SandboxPaths {
    /// The repository (commands run here).
    pub repo: String,
    /// Where a task's own commands start (`/testbed` in SWE-bench images; the repository
    /// elsewhere).
    pub workdir: String,
    /// bench's own files (snapshots, patches): outside the repository.
    pub state: String,
    /// Files beside the repository an agent may read (prompt, scripts).
    pub side: String,
    /// The agent's home directory (its own run logs).
    pub home: String,
}

/// What a sandbox is for: an agent's work (it reaches its model endpoints) or grading (no
/// network).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Agent,
    Grade,
}

/// What a sandbox's commands may reach over the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// Nothing (loopback only): grading, by default.
    None,
    /// Only these endpoints, through bench's egress proxy (docker: an internal network whose
    /// one reachable address is the proxy; no outside DNS). The agent phase, by default.
    Allowlist(Vec<super::egress::Endpoint>),
    /// The host's (local) or the daemon's default bridge (docker) network: a task's opt-in.
    Open,
}

impl Network {
    /// How reports name the policy.
    pub fn describe(&self) -> String {
        match self {
            Network::None => "none".into(),
            Network::Open => "open".into(),
            Network::Allowlist(list) => format!(
                "allowlist via proxy ({})",
                list.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// What a sandbox is made from.
#[derive(Debug, Clone)]
pub struct SandboxSpec<'a> {
    pub base: &'a TaskBase,
    pub phase: Phase,
    /// What its commands may reach (the local backend shares the host's network for anything
    /// but [`Network::None`]: see `jail.rs`).
    pub network: Network,
    /// Docker: the image to start (an agent image built on the task's), else the task's.
    pub image: Option<String>,
    /// The node it serves (labels, names).
    pub address: &'a str,
    pub key: &'a str,
    /// The repository directory in the image when not the backend's default (`/testbed`),
    /// e.g. `/app` for SWE-bench Pro.
    pub repo_dir: Option<&'a str>,
    /// Restrictions on the sandbox (grading on docker); `None`: none beyond the limits.
    pub hardening: Option<&'a super::Hardening>,
    /// The base commit whose history the sandbox's repository may start stripped to (a
    /// backend may start it from an image stripped once, see [`Sandbox::stripped_to`]);
    /// `None`: the repository starts as the image holds it.
    pub stripped: Option<&'a str>,
    /// A script run in the repository (with `BENCH_STATE` set) before the strip, when a backend
    /// makes the stripped image: what it leaves outside the repository is in every sandbox of
    /// that image (SWE-bench Pro's hidden tests, read from the history the strip removes).
    pub before_strip: Option<&'a str>,
    /// A task that defines its own environment (Harbor): its resources replace
    /// the backend's defaults, and its workdir is used as it is (created when missing; no git
    /// repository is looked for).
    pub task_env: Option<TaskEnv>,
}

/// A task's own resources, as a sandbox applies them (its network is the spec's `network`).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskEnv {
    pub cpus: f64,
    pub memory_bytes: u64,
    /// Recorded; enforced only where the backend can (see the docker backend).
    pub storage_bytes: u64,
    pub gpus: u32,
    /// Services started beside the sandbox, in this order, on a network of its own where
    /// each is reachable by its name, and removed with it (a Harbor trial's compose services;
    /// backends without containers refuse them).
    pub services: Vec<crate::tasks::ServiceSpec>,
}

/// A place to run commands in a task's repository.
#[async_trait]
pub trait Sandbox: Send + Sync {
    fn paths(&self) -> &SandboxPaths;

    /// The base commit the repository's history was already stripped to when the sandbox
    /// was made (docker: grading containers of an image stripped once per task image), so
    /// `repo::clean` only checks it, fail-closed, as for any other sandbox.
    fn stripped_to(&self) -> Option<&str> {
        None
    }

    /// The base of [`Sandbox::stripped_to`] while the sandbox is still exactly its image (nothing
    /// has run in it or been copied into it), with the report of the fail-closed history check
    /// that image passed when it was made: `repo::clean` need not run it again.
    fn checked_at_start(&self) -> Option<(&str, &str)> {
        None
    }

    /// The environment every command gets besides its own (PATH, HOME, LANG, git identity).
    fn base_env(&self) -> Vec<(String, String)>;

    /// Runs `sh -c script` in the repository with `env` added to [`Sandbox::base_env`].
    /// A timeout kills the command and everything it started; cancellation too.
    async fn exec(
        &self,
        script: &str,
        env: &[(String, String)],
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<ExecResult, SandboxError>;

    /// Writes files (absolute paths inside the sandbox) with modes.
    async fn put_files(&self, files: &[(&str, &[u8], u32)]) -> Result<(), SandboxError>;

    async fn get_file(&self, path: &str) -> Result<Vec<u8>, SandboxError>;

    /// Regular files under `path` (relative names, sorted), at most `cap` bytes in all.
    async fn get_dir(&self, path: &str, cap: usize)
    -> Result<Vec<(String, Vec<u8>)>, SandboxError>;

    /// Removes the sandbox and everything running in it.
    async fn destroy(self: Box<Self>) -> Result<(), SandboxError>;

    /// The filesystem's changes since the sandbox was created (the image's state): a tarball of
    /// the added and modified paths (paths relative to `/`) whose first entry, `.bench-deleted`,
    /// lists the deleted paths as JSON; paths under `exclude` are left out. Backends without
    /// whole-filesystem sandboxes refuse.
    async fn snapshot(&self, exclude: &[&str]) -> Result<Vec<u8>, SandboxError> {
        let _ = exclude;
        Err(SandboxError::Failed(
            "this backend cannot snapshot a sandbox's filesystem; use the docker backend".into(),
        ))
    }

    /// Applies a [`Sandbox::snapshot`]: deletes what it deleted, writes what it wrote.
    async fn restore(&self, snapshot: &[u8]) -> Result<(), SandboxError> {
        let _ = snapshot;
        Err(SandboxError::Failed(
            "this backend cannot restore a filesystem snapshot; use the docker backend".into(),
        ))
    }

    /// Ends every process the sandbox's commands left running (a background process of an
    /// agent), from outside the sandbox so nothing inside can resist it; files stay as they
    /// are. Backends without whole-sandbox process control refuse.
    async fn end_processes(&self) -> Result<(), SandboxError> {
        Err(SandboxError::Failed(
            "this backend cannot end a sandbox's processes; use the docker backend".into(),
        ))
    }

    /// Connects the sandbox to its network or cuts it off (between phases of one sandbox).
    async fn set_network(&self, on: bool) -> Result<(), SandboxError> {
        let _ = on;
        Err(SandboxError::Failed(
            "this backend cannot change a sandbox's network; use the docker backend".into(),
        ))
    }

    /// As [`Sandbox::set_network`], for the network of its policy only: its services' network
    /// ([`TaskEnv::services`]) stays as it is.
    async fn set_policy_network(&self, on: bool) -> Result<(), SandboxError> {
        self.set_network(on).await
    }
}

/// Where sandboxes come from.
#[async_trait]
pub trait Backend: Send + Sync {
    /// The commit a fresh sandbox of `base` is checked out at (what history is stripped to).
    fn base_commit(&self, base: &TaskBase) -> Option<String>;

    /// A fresh sandbox; its repository holds the base exactly.
    async fn create(
        &self,
        spec: &SandboxSpec<'_>,
        cancel: &CancellationToken,
    ) -> Result<Box<dyn Sandbox>, SandboxError>;

    /// The image an agent whose harness installs `install` runs in on `base` (built now unless
    /// it exists); `None` where the backend runs agents on the host's tools (local).
    async fn agent_image(
        &self,
        base: &TaskBase,
        install: &InstallSpec,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, SandboxError>;

    /// How many sandboxes a node may hold at once is capped here (`None`: no cap).
    fn sandbox_cap(&self) -> Option<usize>;

    /// Removes what this apply's nodes left behind (a crash of a node's task).
    async fn finish(&self);

    /// Whether the node of `key`, failed with the infrastructure error `error`, runs again in
    /// this apply, and why (a pool: its host became unreachable, others remain). `None`: the
    /// failure stands.
    fn retry(&self, key: &str, error: &str) -> Option<String> {
        let _ = (key, error);
        None
    }

    /// A line of the backend's current load (a pool: sandboxes per host), for progress.
    fn load(&self) -> Option<String> {
        None
    }
}
