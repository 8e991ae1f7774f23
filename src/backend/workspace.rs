//! Throwaway git workspaces for the local backend.
//!
//! A workspace is a fresh repository holding only a task's base tree as one commit: no history,
//! no remotes, no hidden tests. Agents work in one; grading uses another. The directory is
//! removed when the workspace is dropped, on every path.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::exec::{ExecResult, exec};

/// A temporary git workspace.
#[derive(Debug)]
pub struct Workspace {
    /// Parent directory (holds the repository and side files such as prompts and patches).
    root: PathBuf,
    /// The repository.
    pub dir: PathBuf,
}

/// Environment for git commands: no user or system config, fixed identity and dates, so
/// commits and diffs are byte-identical across machines.
pub fn git_env(home: &Path) -> Vec<(String, String)> {
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    [
        ("PATH", path.as_str()),
        ("HOME", &home.to_string_lossy()),
        ("LANG", "C.UTF-8"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_AUTHOR_NAME", "bench"),
        ("GIT_AUTHOR_EMAIL", "bench@localhost"),
        ("GIT_COMMITTER_NAME", "bench"),
        ("GIT_COMMITTER_EMAIL", "bench@localhost"),
        ("GIT_AUTHOR_DATE", "2000-01-01T00:00:00Z"),
        ("GIT_COMMITTER_DATE", "2000-01-01T00:00:00Z"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

impl Workspace {
    /// Creates a workspace under `tmp` from `base` (copied with modes), committed as `base`.
    pub async fn create(
        tmp: &Path,
        base: &Path,
        cancel: &CancellationToken,
    ) -> Result<Workspace, String> {
        let root = tempfile::Builder::new()
            .prefix("ws-")
            .tempdir_in(tmp)
            .map_err(|e| format!("cannot create a workspace in {}: {e}", tmp.display()))?
            .keep();
        let dir = root.join("repo");
        let home = root.join("home");
        for d in [&dir, &home] {
            fs_err::create_dir_all(d).map_err(|e| e.to_string())?;
        }
        let ws = Workspace { root, dir };
        let script = format!(
            "cp -a {}/. . && rm -rf .git && git init -q && git add -A && git commit -q --no-gpg-sign --allow-empty -m base",
            shell_quote(&base.to_string_lossy())
        );
        let r = ws.git(&script, cancel).await?;
        if r.exit_code != Some(0) {
            return Err(format!(
                "cannot prepare a workspace from {}: {}",
                base.display(),
                String::from_utf8_lossy(&r.output)
            ));
        }
        Ok(ws)
    }

    /// The directory beside the repository, for prompts, patches and the agent's home.
    pub fn side(&self) -> &Path {
        &self.root
    }

    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    /// Runs a git-related shell script in the repository with [`git_env`].
    pub async fn git(
        &self,
        script: &str,
        cancel: &CancellationToken,
    ) -> Result<ExecResult, String> {
        exec(
            script,
            &self.dir,
            &git_env(&self.home()),
            Duration::from_secs(300),
            cancel,
        )
        .await
        .map_err(|e| format!("cannot run git in {}: {e}", self.dir.display()))
    }

    /// Writes a side file and returns its path.
    pub fn write_side(&self, name: &str, bytes: &[u8]) -> Result<PathBuf, String> {
        let p = self.root.join(name);
        fs_err::write(&p, bytes).map_err(|e| e.to_string())?;
        Ok(p)
    }

    /// Everything changed since the base commit: commits, edits, new files (.gitignore
    /// honoured), except Python bytecode.
    pub async fn diff(&self, cancel: &CancellationToken) -> Result<Vec<u8>, String> {
        let out = self.root.join("workspace.diff");
        let script = format!(
            "git add -A && git diff --cached --binary $(git rev-list --max-parents=0 HEAD | tail -n 1) -- . ':(exclude)**/__pycache__/**' ':(exclude)**/*.pyc' > {}",
            shell_quote(&out.to_string_lossy())
        );
        let r = self.git(&script, cancel).await?;
        if r.exit_code != Some(0) {
            return Err(format!(
                "cannot read the workspace diff: {}",
                String::from_utf8_lossy(&r.output)
            ));
        }
        fs_err::read(&out).map_err(|e| format!("cannot read the workspace diff: {e}"))
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Single-quotes a string for sh.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
