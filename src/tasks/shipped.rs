//! A task read back from a view's canonical bytes (a shipped job's input root): the worker that
//! runs a job holds exactly the view its key hashes, nothing more. Each reader checks that the
//! task it builds has the view's digest again, so a view that parses into something else (an
//! unknown field, a lossy number) is refused rather than run under the wrong key.
//!
//! Not here: where the bytes come from (`execution/ship.rs`), a local base tree's files (the
//! caller sets [`TaskBase::Dir`]'s path once it has materialized and verified the tree), a
//! build context's bytes ([`Task::with_context`]) or a Harbor task's spec (read by the caller
//! from the digest [`harbor_digest`] finds in the view, and passed in).

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;

use super::Harbor;
use super::task::{GRADING_VIEW, Task, TaskBase};

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
enum ShippedBase {
    Dir { digest: String },
    Image { image: String, base_commit: String },
    Build { digest: String, from: Vec<String> },
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
        "the shipped view of task {instance_id} names Harbor facts {digest}, but {}",
        match found {
            Some(f) => format!("the spec shipped with it has {f}"),
            None => "none were shipped with it".to_string(),
        }
    )]
    Harbor {
        instance_id: String,
        digest: String,
        found: Option<String>,
    },
    #[error(
        "the shipped grading view {digest} is of view version {found}, this bench reads {GRADING_VIEW}"
    )]
    Version { digest: String, found: u32 },
}

fn base(b: ShippedBase) -> TaskBase {
    match b {
        ShippedBase::Dir { digest } => TaskBase::Dir {
            path: PathBuf::new(),
            digest,
        },
        ShippedBase::Image { image, base_commit } => TaskBase::Image { image, base_commit },
        ShippedBase::Build { digest, from } => TaskBase::Build {
            context: Arc::new(Vec::new()),
            digest,
            from,
        },
    }
}

/// The Harbor spec a view names by `digest` (`digest_of` gives the spec's digest of that
/// view): `harbor`, when it has it.
fn harbor_of(
    instance_id: &str,
    named: Option<String>,
    harbor: Option<&Harbor>,
    digest_of: impl Fn(&Harbor) -> String,
) -> Result<Option<Harbor>, ShippedTaskError> {
    let Some(digest) = named else {
        return Ok(None);
    };
    match harbor {
        Some(h) if digest_of(h) == digest => Ok(Some(h.clone())),
        other => Err(ShippedTaskError::Harbor {
            instance_id: instance_id.to_string(),
            digest,
            found: other.map(digest_of),
        }),
    }
}

/// The digest of the Harbor facts a shipped view names (the agent's view in a solver view,
/// the grading view in a grading view), if it names any.
pub fn harbor_digest(bytes: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Named {
        harbor: Option<String>,
    }
    serde_json::from_slice::<Named>(bytes).ok()?.harbor
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
    /// This task with its build context's bytes (`context`, verified by the caller against the
    /// base's digest).
    pub fn with_context(self, context: Vec<u8>) -> Task {
        match self.base {
            TaskBase::Build { digest, from, .. } => Task {
                base: TaskBase::Build {
                    context: Arc::new(context),
                    digest,
                    from,
                },
                ..self
            },
            _ => self,
        }
    }

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
    /// solver digest), with `harbor`, the spec of a Harbor task (whose agent's view the view
    /// names): its other fields are empty.
    pub fn from_solver_view(
        digest: &str,
        bytes: &[u8],
        harbor: Option<&Harbor>,
    ) -> Result<Task, ShippedTaskError> {
        let v: ShippedSolverView = parse("solver", digest, bytes)?;
        let harbor = harbor_of(&v.instance_id, v.harbor, harbor, |h| h.agent_digest())?;
        let task = Task {
            harbor,
            repo: v.repo,
            problem_statement: v.problem_statement,
            repo_dir: v.repo_dir,
            setup_cmds: v.setup_cmds,
            ..Task::blank(v.instance_id, base(v.base))
        };
        check("solver", digest, task.solver_digest())?;
        Ok(task)
    }

    /// The task whose grading view has the canonical bytes `bytes` (stored under `digest`),
    /// with `harbor`, the spec of a Harbor task (whose grading view the view names).
    pub fn from_grading_view(
        digest: &str,
        bytes: &[u8],
        harbor: Option<&Harbor>,
    ) -> Result<Task, ShippedTaskError> {
        let v: ShippedGradingView = parse("grading", digest, bytes)?;
        if v.view != GRADING_VIEW {
            return Err(ShippedTaskError::Version {
                digest: digest.to_string(),
                found: v.view,
            });
        }
        let harbor = harbor_of(&v.instance_id, v.harbor, harbor, |h| h.grading_digest())?;
        let task = Task {
            harbor,
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
            ..Task::blank(v.instance_id, base(v.base))
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
