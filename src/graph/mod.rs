//! The node DAG: stages expand into nodes as their inputs become known, each node keyed by a
//! content hash of everything that determines its output. `plan` and `apply` share this code:
//! plan stops where outputs are unknown, apply runs them.

mod expand;
mod keys;

pub use expand::{Graph, Mode, Node, NodeKind, NodeState, StageSummary};
pub use keys::{
    GradeOutput, SampleOutput, SolveOutput, grade_key, label_inputs, report_key, sample_key,
    solve_key,
};
