//! Content-addressed parts of jobs: values that enter a key by their digest (a Merkle link)
//! while the executor reads the content itself. A job that holds one of these hashes exactly
//! what its executor can read, without re-serializing large content for every node.
//!
//! Not here: where the content lives on disk (a task's base tree is located by path, which is
//! never keyed; its content digest is).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::tasks::{Task, TaskBase};
pub use crate::types::Blob;

/// A value that enters a key by the digest of its canonical encoding (computed once).
pub struct Digested<T> {
    /// Shared by the clones (a team's spec is in every one of its jobs).
    digest: Arc<str>,
    value: Option<Arc<T>>,
}

impl<T: Serialize> Digested<T> {
    pub fn new(value: T) -> Digested<T> {
        Digested {
            digest: crate::key::digest_of(&value).into(),
            value: Some(Arc::new(value)),
        }
    }

    pub fn digest(&self) -> &str {
        &self.digest
    }

    pub fn get(&self) -> &T {
        self.value
            .as_deref()
            .expect("jobs built for execution hold their content")
    }

    /// The value's own encoding (what `plan --explain` compares field by field).
    pub fn expanded(&self) -> serde_json::Value {
        match &self.value {
            Some(v) => serde_json::to_value(&**v).expect("job parts serialize"),
            None => serde_json::Value::String(self.digest.to_string()),
        }
    }
}

impl<T> Clone for Digested<T> {
    fn clone(&self) -> Self {
        Digested {
            digest: self.digest.clone(),
            value: self.value.clone(),
        }
    }
}

impl<T> PartialEq for Digested<T> {
    fn eq(&self, other: &Self) -> bool {
        self.digest == other.digest
    }
}

impl<T> fmt::Debug for Digested<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digested({})", self.digest)
    }
}

impl<T> Serialize for Digested<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.digest)
    }
}

impl<'de, T> Deserialize<'de> for Digested<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Digested {
            digest: String::deserialize(d)?.into(),
            value: None,
        })
    }
}

/// Declares a view of a task that exposes only some of its fields and enters keys by the
/// task's memoized digest of exactly those fields.
macro_rules! task_view {
    ($(#[$doc:meta])* $name:ident, $digest:ident) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name {
            /// The task's memoized digest, shared by every job of the task.
            digest: Arc<str>,
            task: Option<Arc<Task>>,
        }

        impl $name {
            pub fn new(task: &Arc<Task>) -> $name {
                $name {
                    digest: task.$digest(),
                    task: Some(task.clone()),
                }
            }

            pub fn digest(&self) -> &str {
                &self.digest
            }

            fn task(&self) -> &Task {
                self.task
                    .as_deref()
                    .expect("jobs built for execution hold their task")
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.digest == other.digest
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.digest)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.digest)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                Ok($name {
                    digest: String::deserialize(d)?.into(),
                    task: None,
                })
            }
        }
    };
}

task_view!(
    /// What grading reads of a task (`Task::grading_digest`): never the problem statement or
    /// the gold patch.
    GradingTask,
    grading_digest_shared
);

impl GradingTask {
    /// What `plan --explain` compares: the view's fields by name (its digest alone when the job
    /// was read back from a record).
    pub fn explain(&self) -> serde_json::Value {
        match &self.task {
            Some(t) => t.grading_explain(),
            None => serde_json::Value::String(self.digest.to_string()),
        }
    }

    /// The view's canonical bytes, stored under its digest when the job is shipped.
    pub fn view_bytes(&self) -> Vec<u8> {
        self.task().grading_view_bytes()
    }

    pub fn instance_id(&self) -> &str {
        &self.task().instance_id
    }
    pub fn base(&self) -> &TaskBase {
        &self.task().base
    }
    pub fn test_patch(&self) -> &str {
        &self.task().test_patch
    }
    pub fn rebuild_cmds(&self) -> &[String] {
        &self.task().rebuild_cmds
    }
    /// Commands run first in a fresh repository of the task (brain bench's `setup`).
    pub fn setup_cmds(&self) -> &[String] {
        &self.task().setup_cmds
    }
    pub fn test_cmds(&self) -> &[String] {
        &self.task().test_cmds
    }
    pub fn print_cmds(&self) -> &[String] {
        &self.task().print_cmds
    }
    pub fn log_parser(&self) -> &str {
        &self.task().log_parser
    }
    pub fn fail_to_pass(&self) -> &[String] {
        &self.task().fail_to_pass
    }
    pub fn pass_to_pass(&self) -> &[String] {
        &self.task().pass_to_pass
    }
    /// The repository directory in the image, when not the backend's default.
    pub fn repo_dir(&self) -> Option<&str> {
        self.task().repo_dir.as_deref()
    }
    /// SWE-bench Pro's grading inputs.
    pub fn pro(&self) -> Option<&crate::tasks::ProSpec> {
        self.task().pro.as_ref()
    }
    /// A Harbor task's inputs.
    pub fn harbor(&self) -> Option<&crate::tasks::HarborSpec> {
        self.task().harbor.as_deref()
    }
    /// The commit the task's repository is at (image tasks).
    pub fn base_commit(&self) -> Option<&str> {
        match &self.task().base {
            TaskBase::Image { base_commit, .. } => Some(base_commit),
            TaskBase::Dir { .. } | TaskBase::Build { .. } => None,
        }
    }
}

task_view!(
    /// What an agent may see of a task (`Task::solver_digest`): never tests, test lists or the
    /// gold patch.
    SolverTask,
    solver_digest_shared
);

impl SolverTask {
    /// What `plan --explain` compares: the view's fields by name (its digest alone when the job
    /// was read back from a record).
    pub fn explain(&self) -> serde_json::Value {
        match &self.task {
            Some(t) => t.solver_explain(),
            None => serde_json::Value::String(self.digest.to_string()),
        }
    }

    /// The view's canonical bytes, stored under its digest when the job is shipped.
    pub fn view_bytes(&self) -> Vec<u8> {
        self.task().solver_view_bytes()
    }

    pub fn instance_id(&self) -> &str {
        &self.task().instance_id
    }
    pub fn repo(&self) -> &str {
        &self.task().repo
    }
    pub fn problem_statement(&self) -> &str {
        &self.task().problem_statement
    }
    /// Commands run in the agent's fresh workspace before the agent (brain bench's `setup`).
    pub fn setup_cmds(&self) -> &[String] {
        &self.task().setup_cmds
    }
    pub fn base(&self) -> &TaskBase {
        &self.task().base
    }
    /// The repository directory in the image, when not the backend's default.
    pub fn repo_dir(&self) -> Option<&str> {
        self.task().repo_dir.as_deref()
    }
}

task_view!(
    /// A task's reference patch (`Task::gold_digest`), for the oracle harness only.
    GoldPatch,
    gold_digest_shared
);

impl GoldPatch {
    pub fn text(&self) -> &str {
        &self.task().gold_patch
    }
}

/// Where something is written or read from: never part of a key, and equal to any other
/// location (so a job's equality is its key's).
#[derive(Debug, Clone, Default)]
pub struct Location(pub std::path::PathBuf);

impl PartialEq for Location {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
