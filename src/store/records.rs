//! The records the store keeps: action records (one per completed node key), the run log (one
//! per apply) and the per-manifest index (address -> key).
//!
//! An action record is keyed by its key alone and holds no address: several addresses may share
//! a key (a gold check and the oracle's grade), and the index maps each to it. Its output is
//! typed by node kind. On disk a record is a header line carrying the blake3 of the JSON body
//! after it, so an edited record (a flipped verdict) is detected on read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::blobs::Blobs;
use crate::jobs::{GradeOutput, Kind, ReportOutput, SampleOutput, SolveOutput};
use crate::types::{BadDigest, Digest};

/// Version of the record formats.
pub const RECORD_SCHEMA: u32 = 2;

/// A node's typed output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Output {
    Sample(SampleOutput),
    Grade(GradeOutput),
    Solve(SolveOutput),
    Report(ReportOutput),
}

impl Output {
    pub fn kind(&self) -> Kind {
        match self {
            Output::Sample(_) => Kind::Sample,
            Output::Grade(_) => Kind::Grade,
            Output::Solve(_) => Kind::Solve,
            Output::Report(_) => Kind::Report,
        }
    }
}

/// The cached result of one node key. Only outcomes are recorded here; infrastructure errors are
/// kept in the run log and retried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    pub schema: u32,
    pub key: String,
    /// The job (what `plan --explain` compares); `Null` when read without it.
    pub job: Value,
    pub output: Output,
    /// Named blobs of this result (logs, patches, trajectories): name -> digest.
    pub blobs: Blobs,
    pub bench_version: String,
    pub started_at: String,
    pub duration_ms: u64,
}

/// An [`ActionRecord`] as written with its job serialized straight from the job's own type
/// (the fields and their order of `ActionRecord`; the record's `job` is not read): a report's
/// job holds a row per node, whose JSON tree would be several times the job's size.
#[derive(Serialize)]
pub struct RecordWithJob<'a, J: Serialize> {
    schema: u32,
    key: &'a str,
    job: &'a J,
    output: &'a Output,
    blobs: &'a Blobs,
    bench_version: &'a str,
    started_at: &'a str,
    duration_ms: u64,
}

impl<J: Serialize> RecordWithJob<'_, J> {
    pub fn key(&self) -> &str {
        self.key
    }
}

impl ActionRecord {
    /// This record with `job` as its job, to be written (`Store::put_action_with`).
    pub fn with_job<'a, J: Serialize>(&'a self, job: &'a J) -> RecordWithJob<'a, J> {
        RecordWithJob {
            schema: self.schema,
            key: &self.key,
            job,
            output: &self.output,
            blobs: &self.blobs,
            bench_version: &self.bench_version,
            started_at: &self.started_at,
            duration_ms: self.duration_ms,
        }
    }

    pub fn kind(&self) -> Kind {
        self.output.kind()
    }

    /// Every blob this result references by digest (its named blobs, a solve's patch and a
    /// Harbor trial's snapshot and verification record), sorted and deduplicated: what a cached
    /// use of it needs in the store, and what must travel with the record. Each is checked as a
    /// digest: a record that names a blob by anything else (a path in disguise) is refused
    /// whole, with the first bad one.
    pub fn blob_digests(&self) -> Result<Vec<Digest>, BadDigest> {
        self.blob_refs().into_iter().map(Digest::parse).collect()
    }

    /// That each blob reference is a digest (what reading a record checks), without building
    /// the digests.
    pub fn check_blob_refs(&self) -> Result<(), BadDigest> {
        self.blob_refs().into_iter().try_for_each(Digest::check)
    }

    /// The blob references as written, sorted and deduplicated, unchecked.
    fn blob_refs(&self) -> Vec<&str> {
        let mut all: Vec<&str> = self.blobs.values().map(String::as_str).collect();
        if let Some(s) = self.solve() {
            all.push(s.patch.as_str());
            if let Some(h) = &s.harbor {
                all.push(h.snapshot.as_str());
                all.push(h.verification.as_str());
            }
        }
        all.retain(|d| !d.is_empty());
        all.sort_unstable();
        all.dedup();
        all
    }

    pub fn grade(&self) -> Option<&GradeOutput> {
        match &self.output {
            Output::Grade(g) => Some(g),
            _ => None,
        }
    }

    pub fn solve(&self) -> Option<&SolveOutput> {
        match &self.output {
            Output::Solve(s) => Some(s),
            _ => None,
        }
    }

    pub fn sample(&self) -> Option<&SampleOutput> {
        match &self.output {
            Output::Sample(s) => Some(s),
            _ => None,
        }
    }
}

/// What an apply did with a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    Cached,
    Done,
    Failed,
    NotRun,
    Interrupted,
}

/// One node of a run, as the run log records it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunNode {
    pub key: Option<String>,
    pub status: NodeStatus,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// How an apply ended (`Running` while it runs, and forever if it died).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    Complete,
    Failed,
    Interrupted,
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
    /// RFC 3339 with sub-second precision: runs are ordered by it.
    pub started_at: String,
    pub ended_at: Option<String>,
    pub status: RunStatus,
    pub nodes: BTreeMap<String, RunNode>,
    /// Where each shipped node ran or waits (`[execution]`), as its engine last told: node
    /// address -> placement.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub placements: BTreeMap<String, crate::events::Placement>,
}

/// Per manifest: logical node address -> the key last seen there.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Index {
    pub schema: u32,
    pub manifest_path: String,
    pub nodes: BTreeMap<String, String>,
}

/// An [`Index`] made of borrowed strings, serialized to the same bytes: an apply saves its
/// index as it stands every few seconds, and building an owned copy of every address and key
/// for each save cost more than writing it.
#[derive(Debug, PartialEq, Eq, Serialize)]
pub struct IndexView<'a> {
    pub schema: u32,
    pub manifest_path: &'a str,
    pub nodes: BTreeMap<&'a str, &'a str>,
}

impl Index {
    /// The index borrowed, as [`Store::save_index`](super::Store::save_index) writes it.
    pub fn view(&self) -> IndexView<'_> {
        IndexView {
            schema: self.schema,
            manifest_path: &self.manifest_path,
            nodes: self
                .nodes
                .iter()
                .map(|(a, k)| (a.as_str(), k.as_str()))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_view_serializes_as_the_index_it_borrows() {
        let index = Index {
            schema: RECORD_SCHEMA,
            manifest_path: "/m/bench \"x\".toml".into(),
            nodes: [
                ("solve/t\u{e9}/a/0", "k1"),
                ("gold/t", "k2"),
                ("report", "k3"),
            ]
            .into_iter()
            .map(|(a, k)| (a.to_string(), k.to_string()))
            .collect(),
        };
        let view = index.view();
        for pretty in [false, true] {
            let (a, b) = if pretty {
                (
                    serde_json::to_vec_pretty(&index).unwrap(),
                    serde_json::to_vec_pretty(&view).unwrap(),
                )
            } else {
                (
                    serde_json::to_vec(&index).unwrap(),
                    serde_json::to_vec(&view).unwrap(),
                )
            };
            assert_eq!(String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap());
        }
    }
}
