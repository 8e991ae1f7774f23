//! A task read back from a view's canonical bytes (a shipped job's input root): the worker that
//! runs a job holds exactly the view its key hashes, nothing more. Each reader checks that the
//! task it builds has the view's digest again, so a view that parses into something else (an
//! unknown field, a lossy number) is refused rather than run under the wrong key.
//!
//! Not here: where the bytes come from (`execution/ship.rs`), or a local base tree's files (the
//! caller sets [`TaskBase::Dir`]'s path once it has materialized and verified the tree).

use std::path::PathBuf;

use serde::Deserialize;

use super::task::{GRADING_VIEW, Task, TaskBase};

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
enum ShippedBase {
    Dir {
        digest: String,
    },
    Image {
        image: String,
        base_commit: String,
    },
    /// Read to be refused (Harbor's build contexts are not shipped yet).
    #[allow(dead_code)]
    Build {
        digest: String,
        from: Vec<String>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShippedSolverView {
    instance_id: String,
    repo: String,
    problem_statement: String,
    base: ShippedBase,
    #[serde(default)]
    repo_dir: Option<String>,
    #[serde(default)]
    setup_cmds: Vec<String>,
    #[serde(default)]
    harbor: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShippedGradingView {
    view: u32,
    instance_id: String,
    base: ShippedBase,
    test_patch: String,
    rebuild_cmds: Vec<String>,
    #[serde(default)]
    setup_cmds: Vec<String>,
    test_cmds: Vec<String>,
    print_cmds: Vec<String>,
    log_parser: String,
    fail_to_pass: Vec<String>,
    pass_to_pass: Vec<String>,
    #[serde(default)]
    repo_dir: Option<String>,
    #[serde(default)]
    pro: Option<super::ProSpec>,
    #[serde(default)]
    harbor: Option<String>,
}

/// Why a shipped view cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum ShippedTaskError {
    #[error("the shipped {view} view {digest} does not parse: {message}")]
    Parse {
        view: &'static str,
        digest: String,
        message: String,
    },
    #[error("the shipped {view} view {digest} reads back as another view ({actual})")]
    Digest {
        view: &'static str,
        digest: String,
        actual: String,
    },
    #[error(
        "task {instance_id} is a Harbor task: Harbor tasks cannot be shipped to a worker yet (run them with `[execution] engine = \"local\"`)"
    )]
    Harbor { instance_id: String },
    #[error(
        "the shipped grading view {digest} is of view version {found}, this bench reads {GRADING_VIEW}"
    )]
    Version { digest: String, found: u32 },
}

fn base(b: ShippedBase, instance_id: &str) -> Result<TaskBase, ShippedTaskError> {
    match b {
        ShippedBase::Dir { digest } => Ok(TaskBase::Dir {
            path: PathBuf::new(),
            digest,
        }),
        ShippedBase::Image { image, base_commit } => Ok(TaskBase::Image { image, base_commit }),
        ShippedBase::Build { .. } => Err(ShippedTaskError::Harbor {
            instance_id: instance_id.to_string(),
        }),
    }
}

fn parse<'a, T: Deserialize<'a>>(
    view: &'static str,
    digest: &str,
    bytes: &'a [u8],
) -> Result<T, ShippedTaskError> {
    serde_json::from_slice(bytes).map_err(|e| ShippedTaskError::Parse {
        view,
        digest: digest.to_string(),
        message: e.to_string(),
    })
}

fn check(view: &'static str, digest: &str, actual: String) -> Result<(), ShippedTaskError> {
    if actual == digest {
        Ok(())
    } else {
        Err(ShippedTaskError::Digest {
            view,
            digest: digest.to_string(),
            actual,
        })
    }
}

impl Task {
    /// This task with its local base tree at `path` (where a worker materialized it).
    pub fn with_tree(self, path: PathBuf) -> Task {
        match self.base {
            TaskBase::Dir { digest, .. } => Task {
                base: TaskBase::Dir { path, digest },
                ..self
            },
            _ => self,
        }
    }

    /// The task whose solver view has the canonical bytes `bytes` (stored under `digest`, its
    /// solver digest): its other fields are empty.
    pub fn from_solver_view(digest: &str, bytes: &[u8]) -> Result<Task, ShippedTaskError> {
        let v: ShippedSolverView = parse("solver", digest, bytes)?;
        if v.harbor.is_some() {
            return Err(ShippedTaskError::Harbor {
                instance_id: v.instance_id,
            });
        }
        let base = base(v.base, &v.instance_id)?;
        let task = Task {
            repo: v.repo,
            problem_statement: v.problem_statement,
            repo_dir: v.repo_dir,
            setup_cmds: v.setup_cmds,
            ..Task::blank(v.instance_id, base)
        };
        check("solver", digest, task.solver_digest())?;
        Ok(task)
    }

    /// The task whose grading view has the canonical bytes `bytes` (stored under `digest`).
    pub fn from_grading_view(digest: &str, bytes: &[u8]) -> Result<Task, ShippedTaskError> {
        let v: ShippedGradingView = parse("grading", digest, bytes)?;
        if v.view != GRADING_VIEW {
            return Err(ShippedTaskError::Version {
                digest: digest.to_string(),
                found: v.view,
            });
        }
        if v.harbor.is_some() {
            return Err(ShippedTaskError::Harbor {
                instance_id: v.instance_id,
            });
        }
        let base = base(v.base, &v.instance_id)?;
        let task = Task {
            test_patch: v.test_patch,
            rebuild_cmds: v.rebuild_cmds,
            setup_cmds: v.setup_cmds,
            test_cmds: v.test_cmds,
            print_cmds: v.print_cmds,
            log_parser: v.log_parser,
            fail_to_pass: v.fail_to_pass,
            pass_to_pass: v.pass_to_pass,
            repo_dir: v.repo_dir,
            pro: v.pro,
            ..Task::blank(v.instance_id, base)
        };
        check("grading", digest, task.grading_digest())?;
        Ok(task)
    }

    /// The task whose reference patch is `patch` (its gold digest is blake3 of the bytes).
    pub fn from_gold_patch(patch: String) -> Task {
        Task {
            gold_patch: patch,
            ..Task::blank(
                String::new(),
                TaskBase::Image {
                    image: String::new(),
                    base_commit: String::new(),
                },
            )
        }
    }
}
