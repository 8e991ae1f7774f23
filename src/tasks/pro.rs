//! What grading a SWE-bench Pro task reads beyond the common task fields: the row's
//! `before_repo_set_cmd` and `selected_test_files_to_run`, and the task's harness files from
//! the SWE-bench_Pro-os checkout (`run_scripts/<instance_id>/{run_script.sh, parser.py,
//! instance_info.txt}`). All of it is part of the task's grading digest, so editing one task's
//! run script reruns exactly that task's grades.
//!
//! Not here: reading them (`datasets/swe_bench_pro.rs`) or running them
//! (`protocols/swe_bench_pro.rs`).

use serde::Serialize;

/// The repository directory of SWE-bench Pro images.
pub const PRO_REPO_DIR: &str = "/app";

/// A SWE-bench Pro task's grading inputs. Fields are declared in sorted order: the task's fast
/// digest serializes them as they are declared (see `Task::digest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProSpec {
    /// The row's `before_repo_set_cmd`, whole (the protocol runs its last line).
    pub before_repo_set_cmd: String,
    /// `run_scripts/<id>/instance_info.txt` (kept for provenance; grading does not read it).
    pub instance_info: String,
    /// `run_scripts/<id>/parser.py`.
    pub parser_py: String,
    /// `run_scripts/<id>/run_script.sh`.
    pub run_script: String,
    /// The row's `selected_test_files_to_run`, parsed.
    pub selected_test_files: Vec<String>,
}
