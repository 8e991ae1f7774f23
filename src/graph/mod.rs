//! The node DAG: stages expand into nodes as their inputs become known, each node carrying its
//! typed job (`jobs.rs` builds them from the manifest) whose hash is its key. `plan` and `apply`
//! share this code: plan stops where outputs are unknown, apply runs them. `report.rs` gathers
//! what a report reads from the graph; `export.rs` what `bench export` writes from it.

mod expand;
pub mod export;
mod jobs;
mod report;

pub use expand::{Graph, Mode, Node, NodeJob, NodeKind, NodeState, StageSummary};
pub use jobs::{JobBuilder, protocol_of};
pub use report::report_inputs;

/// Human labels for the top-level groups of job fields, given the node's context
/// (`team` -> `team review`).
pub fn label_inputs(path: &str, stage: &str, team: Option<&str>) -> String {
    let (head, rest) = path.split_once('.').unwrap_or((path, ""));
    let head = match head {
        "team" => format!("team {}", team.unwrap_or("?")),
        "filters" => format!("stage {stage}"),
        other => other.to_string(),
    };
    // A team's topology fields read as the manifest writes them (`team review: reviewer`).
    let rest = rest.strip_prefix("topology.").unwrap_or(rest);
    if rest.is_empty() {
        head
    } else {
        format!("{head}: {rest}")
    }
}
