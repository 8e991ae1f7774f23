//! The task model every dataset reader produces, and the digests that enter node keys: the
//! solver-visible digest (what an agent may see) and the grading digest (what grading reads).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

/// Where a task's base tree comes from.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum TaskBase {
    /// A directory on this machine (local tasks); `digest` hashes its files and modes.
    Dir {
        #[serde(skip)]
        path: PathBuf,
        digest: String,
    },
    /// A container image holding the repository at its base commit.
    Image { image: String, base_commit: String },
}

/// One benchmark task.
#[derive(Debug, Clone, Serialize)]
pub struct Task {
    pub instance_id: String,
    pub repo: String,
    pub language: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    pub problem_statement: String,
    pub base: TaskBase,
    /// The reference patch.
    pub gold_patch: String,
    /// The hidden tests.
    pub test_patch: String,
    /// Commands run after both patches and before the tests, joined with " ; ".
    pub rebuild_cmds: Vec<String>,
    /// Commands run after both patches, joined with " ; " (local tasks: one command).
    pub test_cmds: Vec<String>,
    /// Commands whose output is the test log (SWE-bench-Live); empty: the test output itself.
    pub print_cmds: Vec<String>,
    /// A built-in parser name (`pytest`, `unittest`, ...) or Python source defining `parser(log)`.
    pub log_parser: String,
    pub fail_to_pass: Vec<String>,
    pub pass_to_pass: Vec<String>,
    /// Memoized digests (computed on first use).
    #[serde(skip)]
    pub digests: TaskDigests,
}

/// Memoized digests of a task. A clone starts empty, so an edited copy of a task never carries
/// the original's digests.
#[derive(Debug, Default)]
pub struct TaskDigests {
    solver: std::sync::OnceLock<String>,
    grading: std::sync::OnceLock<String>,
}

impl Clone for TaskDigests {
    fn clone(&self) -> Self {
        TaskDigests::default()
    }
}

#[derive(Serialize)]
struct SolverView<'a> {
    instance_id: &'a str,
    repo: &'a str,
    problem_statement: &'a str,
    base: &'a TaskBase,
}

#[derive(Serialize)]
struct GradingView<'a> {
    instance_id: &'a str,
    base: &'a TaskBase,
    test_patch: &'a str,
    rebuild_cmds: &'a [String],
    test_cmds: &'a [String],
    print_cmds: &'a [String],
    log_parser: &'a str,
    fail_to_pass: &'a [String],
    pass_to_pass: &'a [String],
}

impl Task {
    /// Digest of what an agent may see: never tests, test lists or the gold patch.
    pub fn solver_digest(&self) -> String {
        self.digests
            .solver
            .get_or_init(|| self.compute_solver_digest())
            .clone()
    }

    fn compute_solver_digest(&self) -> String {
        crate::key::digest_of(&SolverView {
            instance_id: &self.instance_id,
            repo: &self.repo,
            problem_statement: &self.problem_statement,
            base: &self.base,
        })
    }

    /// Digest of what grading reads.
    pub fn grading_digest(&self) -> String {
        self.digests
            .grading
            .get_or_init(|| self.compute_grading_digest())
            .clone()
    }

    fn compute_grading_digest(&self) -> String {
        crate::key::digest_of(&GradingView {
            instance_id: &self.instance_id,
            base: &self.base,
            test_patch: &self.test_patch,
            rebuild_cmds: &self.rebuild_cmds,
            test_cmds: &self.test_cmds,
            print_cmds: &self.print_cmds,
            log_parser: &self.log_parser,
            fail_to_pass: &self.fail_to_pass,
            pass_to_pass: &self.pass_to_pass,
        })
    }

    /// Digest of the whole record.
    pub fn digest(&self) -> String {
        crate::key::digest_of(self)
    }
}

/// A dataset's tasks by id, and the snapshot digest that enters the sample key.
#[derive(Debug, Clone)]
pub struct TaskSet {
    pub tasks: BTreeMap<String, Arc<Task>>,
    pub snapshot: String,
}

impl TaskSet {
    /// Builds a set and its snapshot digest (over every task's full digest, by id).
    pub fn new(tasks: Vec<Task>) -> TaskSet {
        let tasks: BTreeMap<String, Arc<Task>> = tasks
            .into_iter()
            .map(|t| (t.instance_id.clone(), Arc::new(t)))
            .collect();
        let digests: BTreeMap<&str, String> = tasks
            .iter()
            .map(|(k, t)| (k.as_str(), t.digest()))
            .collect();
        TaskSet {
            snapshot: crate::key::digest_of(&digests),
            tasks,
        }
    }
}
