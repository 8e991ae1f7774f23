//! Grading facts shared by the manifest, the jobs, the graders and the report: how audit flags
//! count, one audit flag, where a Harbor verifier runs, and SWE-bench's resolution.
//!
//! Not here: how a patch is graded or audited (`protocols/`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a Harbor task's verifier runs (`[stages.grade] harbor`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HarborVerifier {
    /// Harbor's contract: the agent's own container, after the rollout.
    #[default]
    InPlace,
    /// A fresh container of the task image with the agent's changed paths restored.
    Fresh,
}

impl HarborVerifier {
    pub fn name(self) -> &'static str {
        match self {
            HarborVerifier::InPlace => "in-place",
            HarborVerifier::Fresh => "fresh",
        }
    }
}

/// What the patch audit's flags do (`[stages.grade] audit`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AuditMode {
    /// Flags are reported; verdicts are unchanged.
    #[default]
    Flag,
    /// A flagged pair is also counted as unresolved.
    Strict,
}

/// One reason a patch is flagged.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct AuditFlag {
    /// The path the flag is about (a directory for vendored trees).
    pub path: String,
    pub reason: String,
}

/// SWE-bench's `ResolvedStatus`: every FAIL_TO_PASS test passes (FULL), some do (PARTIAL), or
/// neither, with every PASS_TO_PASS test maintained; `resolved` only for FULL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Resolution {
    #[serde(rename = "RESOLVED_FULL")]
    Full,
    #[serde(rename = "RESOLVED_PARTIAL")]
    Partial,
    #[serde(rename = "RESOLVED_NO")]
    No,
}

impl Resolution {
    /// Upstream's value (`RESOLVED_FULL`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Full => "RESOLVED_FULL",
            Resolution::Partial => "RESOLVED_PARTIAL",
            Resolution::No => "RESOLVED_NO",
        }
    }
}
