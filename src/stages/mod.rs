//! The work of each node kind: what runs when a node is not in the store.

mod agent_image;
mod docker;
mod grade;
mod report;
mod solve;

pub use agent_image::{AGENT_REPO, agent_tag};
pub use docker::{
    CHECK_SCRIPT, DockerRun, STRIP_SCRIPT, collect_patch, grade_docker, prepare_sandbox,
    solve_docker,
};
pub use grade::{grade_local, verdict};
pub use report::{
    PairArtifacts, RenderedReport, ReportInputs, artifact_dir, materialize, render_report,
    write_report,
};
pub use solve::solve_local;

use std::collections::BTreeMap;

/// Why a node's work did not produce a result.
#[derive(Debug, Clone)]
pub enum WorkError {
    /// An infrastructure failure: not cached, retried on the next apply.
    Infra(String),
    /// Cancelled (Ctrl-C): not cached.
    Cancelled,
}

/// What a node's work produced: its output and named blobs.
#[derive(Debug, Clone)]
pub struct WorkOutput {
    pub output: serde_json::Value,
    pub blobs: BTreeMap<String, String>,
}
