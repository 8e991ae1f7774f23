//! What a backend is and what of it enters a key: its kind, a docker pool's hosts, the facts
//! that can change a node's output, and an agent image's install recipe.
//!
//! Not here: how a backend runs anything (`backend/`), how the manifest spells these
//! (`manifest/`).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{Blob, Runtime};

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

/// Facts of the backend that can change a node's output: the kind, the image a task runs in
/// (its ID, never a tag), and the limits that can change outcomes (memory: OOM kills; pids: fork
/// limits). CPU shares only change speed and are not here. Local sandboxes have no limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackendFacts {
    pub kind: BackendKind,
    pub image: Option<String>,
    pub memory_bytes: Option<u64>,
    pub pids: Option<u64>,
    /// How commands are confined: `container` (docker), `bwrap` or `none` (local: see
    /// `backend/jail.rs`); a result computed less confined is never reused as a confined one.
    pub isolation: String,
}

/// An agent image's recipe: commands run as root over the task image, with files copied in
/// first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstallSpec {
    /// A runtime tarball (by URL and sha256, so by content) unpacked before the commands.
    pub runtime: Option<Runtime>,
    pub commands: Vec<String>,
    pub files: Vec<InstallFile>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstallFile {
    /// Path relative to the install directory.
    pub path: String,
    pub mode: u32,
    pub content: Blob,
}
