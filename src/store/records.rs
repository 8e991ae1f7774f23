//! The records the store keeps: action records (one per completed node key), the run log (one
//! per apply) and the per-manifest index.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Version of the record formats.
pub const RECORD_SCHEMA: u32 = 1;

/// The cached result of one node key. Only outcomes are recorded here; infrastructure errors are
/// kept in the run log and retried.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActionRecord {
    pub schema: u32,
    pub key: String,
    /// Node kind: sample, grade, solve, report.
    pub node: String,
    /// The address of the node that first produced this result.
    pub address: String,
    /// The key inputs (what `plan --explain` compares).
    pub inputs: Value,
    /// Kind-specific result (verdict, usage, patch digest, ...).
    pub output: Value,
    /// Named blobs of this result (logs, patches, trajectories): name -> digest.
    pub blobs: BTreeMap<String, String>,
    pub bench_version: String,
    pub started_at: String,
    pub duration_ms: u64,
}

/// One node of a run, as the run log records it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunNode {
    pub key: Option<String>,
    /// cached, done, failed, skipped, interrupted.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// The provenance of one apply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    pub schema: u32,
    pub id: String,
    pub manifest_path: String,
    pub manifest_hash: String,
    pub resolved_manifest: Value,
    pub bench_version: String,
    pub command: String,
    pub host: String,
    pub pid: u32,
    pub started_at: String,
    pub ended_at: Option<String>,
    /// running, complete, failed, interrupted.
    pub status: String,
    pub nodes: BTreeMap<String, RunNode>,
}

/// Per manifest: logical node address -> the key last seen there.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Index {
    pub schema: u32,
    pub manifest_path: String,
    pub nodes: BTreeMap<String, String>,
}
