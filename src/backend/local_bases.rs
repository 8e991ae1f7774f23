//! A local task's base repository, made once per backend (one apply) and copied into each of
//! its workspaces: a task's gold check, solves and grades used to make the same repository
//! (copy the base tree, `git init`, `git add -A`, commit) and run the same fail-closed history
//! check in every workspace, about twenty git processes each time.
//!
//! Now the first workspace of a base tree makes it under the store's `tmp/bases-*` (hidden from
//! every jail, as the whole store is), runs the history check on it once, in a jail, exactly as
//! a workspace's check runs, and every workspace of the task is a `cp -a` of it (reflinks where
//! the filesystem has them). A workspace starts as a byte copy of a checked repository that no
//! command ever ran in, so its own check is that one (as a docker grading sandbox started from
//! its stripped image: [`super::Sandbox::checked_at_start`]). The directory goes with the
//! backend; a dead run's is swept with its workspaces.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use super::exec::exec;
use super::jail::Jail;
use super::sandbox::SandboxError;
use super::workspace::{git_env, shell_quote};

/// The script that makes a workspace's repository from a base tree, run in the (empty)
/// repository directory: one commit on `main` and nothing else (no reflog, no message file, no
/// remote), so the history is what `repo::clean` would strip it to. No automatic maintenance:
/// the commit would start a detached `git maintenance run` beside bench. Prints the commit.
pub fn make_script(base: &Path) -> String {
    format!(
        "cp -a {}/. . && rm -rf .git && git init -q -b main && git add -A && git -c core.logAllRefUpdates=false -c gc.auto=0 -c maintenance.auto=false commit -q --no-gpg-sign --allow-empty -m base && rm -f .git/COMMIT_EDITMSG && git rev-parse HEAD",
        shell_quote(&base.to_string_lossy())
    )
}

/// A base repository made and checked: where it is, its one commit, and its check's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Base {
    pub repo: PathBuf,
    pub commit: String,
    pub report: String,
}

type Slot = Arc<OnceCell<Result<Base, String>>>;

/// The base repositories of one backend, made on first use.
#[derive(Debug)]
pub struct Bases {
    tmp: PathBuf,
    hidden: Vec<PathBuf>,
    /// `tmp/bases-*`, once the first base was made.
    dir: Mutex<Option<PathBuf>>,
    made: Mutex<HashMap<(PathBuf, String), Slot>>,
}

const LIMIT: Duration = Duration::from_secs(1800);

impl Bases {
    /// Bases under `tmp`; their history checks run jailed, seeing none of `hidden`.
    pub fn new(tmp: PathBuf, hidden: Vec<PathBuf>) -> Bases {
        Bases {
            tmp,
            hidden,
            dir: Mutex::new(None),
            made: Mutex::new(HashMap::new()),
        }
    }

    /// The checked base repository of the tree at `path` (whose files and modes hash to
    /// `digest`), made by the first caller; every other waits for it. A failure is every
    /// caller's (the same tree fails the same way).
    pub async fn get(
        &self,
        path: &Path,
        digest: &str,
        cancel: &CancellationToken,
    ) -> Result<Base, SandboxError> {
        let slot = {
            let mut made = self.made.lock().unwrap_or_else(|e| e.into_inner());
            made.entry((path.to_path_buf(), digest.to_string()))
                .or_default()
                .clone()
        };
        let made = slot.get_or_try_init(|| self.make(path, cancel)).await;
        match made {
            Ok(Ok(base)) => Ok(base.clone()),
            Ok(Err(e)) => Err(SandboxError::Failed(e.clone())),
            // Cancelled before it was made: the next caller makes it.
            Err(e) => Err(e),
        }
    }

    fn dir(&self) -> Result<PathBuf, SandboxError> {
        let mut dir = self.dir.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = dir.as_ref() {
            return Ok(d.clone());
        }
        let d = tempfile::Builder::new()
            .prefix("bases-")
            .tempdir_in(&self.tmp)
            .map_err(|e| {
                SandboxError::Failed(format!(
                    "cannot create a directory in {}: {e}",
                    self.tmp.display()
                ))
            })?
            .keep();
        let d = super::jail::absolute(&d);
        *dir = Some(d.clone());
        Ok(d)
    }

    /// Makes and checks one base: `Ok(Err(..))` when the tree cannot be made a repository or
    /// its check fails (final), `Err` when cancelled (not kept).
    async fn make(
        &self,
        path: &Path,
        cancel: &CancellationToken,
    ) -> Result<Result<Base, String>, SandboxError> {
        let root = tempfile::Builder::new()
            .prefix("base-")
            .tempdir_in(self.dir()?)
            .map_err(|e| SandboxError::Failed(e.to_string()))?
            .keep();
        let root = super::jail::absolute(&root);
        for d in ["repo", "state", "home", "tmp"] {
            fs_err::create_dir_all(root.join(d))
                .map_err(|e| SandboxError::Failed(e.to_string()))?;
        }
        let repo = root.join("repo");
        let mut env = git_env(&root.join("home"));
        env.push(("TMPDIR".into(), root.join("tmp").display().to_string()));
        // bench's own copy runs outside the jail: the base tree is in a hidden dataset.
        let r = exec(&make_script(path), &repo, &root, &env, LIMIT, cancel, None)
            .await
            .map_err(|e| SandboxError::Failed(e.to_string()))?;
        if r.cancelled {
            return Err(SandboxError::Cancelled);
        }
        let commit = String::from_utf8_lossy(&r.output).trim().to_string();
        if r.exit_code != Some(0) || commit.len() != 40 {
            return Ok(Err(format!(
                "cannot prepare a workspace from {}: {commit}",
                path.display()
            )));
        }
        // The check every workspace's `repo::clean` would run, in the jail it would run in.
        env.push((
            "BENCH_STATE".into(),
            root.join("state").display().to_string(),
        ));
        env.push(("BENCH_BASE".into(), commit.clone()));
        let jail = Jail {
            writable: root.clone(),
            hidden: self
                .hidden
                .iter()
                .map(|h| super::jail::absolute(h))
                .collect(),
            network: false,
            visible: Vec::new(),
        };
        let r = exec(
            super::repo::CHECK_SCRIPT,
            &repo,
            &root,
            &env,
            LIMIT,
            cancel,
            Some(&jail),
        )
        .await
        .map_err(|e| SandboxError::Failed(e.to_string()))?;
        if r.cancelled {
            return Err(SandboxError::Cancelled);
        }
        let report = String::from_utf8_lossy(&r.output).trim().to_string();
        if r.exit_code != Some(0) {
            return Ok(Err(format!(
                "refusing the workspace of {}: {report}",
                path.display()
            )));
        }
        Ok(Ok(Base {
            repo,
            commit,
            report,
        }))
    }

    /// Removes every base made (the backend's work is done).
    pub fn clear(&self) {
        let dir = self.dir.lock().unwrap_or_else(|e| e.into_inner()).take();
        self.made.lock().unwrap_or_else(|e| e.into_inner()).clear();
        if let Some(d) = dir {
            let _ = fs_err::remove_dir_all(d);
        }
    }
}

impl Drop for Bases {
    fn drop(&mut self) {
        self.clear();
    }
}
