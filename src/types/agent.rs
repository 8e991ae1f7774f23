//! Agents and what is read of their runs: the `harness@model` agent, team topologies, harness
//! definitions and kinds, usage formats, runtime tarballs, prices and token counts.
//!
//! Not here: running an agent (`harness/`, `stages/solve`), validating the manifest's harness
//! tables (`manifest/`).

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

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

/// Token counts of one agent run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tokens {
    /// Every input token, cached ones included.
    pub input: u64,
    pub cached_input: u64,
    pub cache_write: u64,
    pub output: u64,
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
