//! The node DAG: stages expand into nodes as their inputs become known, each node carrying its
//! typed job (`jobs.rs` builds them from the manifest) whose hash is its key. `plan` and `apply`
//! share this code: plan stops where outputs are unknown, apply runs them. `report.rs` gathers
//! what a report reads from the graph; `export.rs` what `bench export` writes from it;
//! `explain.rs` words what changed for `plan --explain`.

mod expand;
mod explain;
pub mod export;
mod jobs;
mod report;

pub use expand::{Graph, Mode, Node, NodeJob, NodeKind, NodeState, RerunOf, StageSummary};
pub use explain::{changes as explain_changes, label_inputs};
pub use jobs::{JobBuilder, protocol_of};
pub use report::report_inputs;
