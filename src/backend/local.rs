//! The `local` backend: sandboxes are throwaway git workspaces on the host under the store's
//! `tmp/`, each a fresh repository holding only the task's base tree as one commit (no history,
//! no remotes, no hidden tests). Commands get exactly the environment they are given (the host's
//! is not inherited) and run in their own process group, killed whole on timeout or cancel.
//!
//! Every command of a sandbox runs in a bubblewrap jail (`jail.rs`) where bwrap works: its own
//! namespaces, no network when grading, the store and local datasets hidden, only the sandbox's
//! directory writable, `TMPDIR` inside it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::exec::{ExecResult, exec};
use super::jail::{Jail, absolute};
use super::sandbox::{Backend, Network, Sandbox, SandboxError, SandboxPaths, SandboxSpec};
use super::workspace::{git_env, shell_quote};
use crate::tasks::TaskBase;
use crate::types::InstallSpec;

/// Local sandboxes under `tmp`; `hidden` are the directories their commands must not see (the
/// store, the manifest's local datasets).
#[derive(Debug, Clone)]
pub struct LocalBackend {
    pub tmp: PathBuf,
    pub hidden: Vec<PathBuf>,
}

/// A throwaway workspace: `repo/`, `state/`, `side/` and `home/` under one temp directory,
/// removed on drop.
#[derive(Debug)]
pub struct LocalSandbox {
    root: PathBuf,
    paths: SandboxPaths,
    jail: Jail,
}

fn failed(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Failed(e.to_string())
}

impl LocalSandbox {
    /// A workspace under `tmp` holding `base` (copied with modes) committed as one commit.
    /// Its commands run jailed, seeing none of `hidden`, with the host's network unless
    /// `network` is [`Network::None`] (the local backend enforces no allowlist: the jail
    /// either shares the host's network or has only a private loopback).
    pub async fn create(
        tmp: &Path,
        base: &Path,
        hidden: &[PathBuf],
        network: &Network,
        cancel: &CancellationToken,
    ) -> Result<LocalSandbox, SandboxError> {
        let root = tempfile::Builder::new()
            .prefix("ws-")
            .tempdir_in(tmp)
            .map_err(|e| {
                failed(format!(
                    "cannot create a workspace in {}: {e}",
                    tmp.display()
                ))
            })?
            .keep();
        let root = absolute(&root);
        let p = |n: &str| root.join(n).display().to_string();
        let sandbox = LocalSandbox {
            paths: SandboxPaths {
                repo: p("repo"),
                workdir: p("repo"),
                state: p("state"),
                side: p("side"),
                home: p("home"),
            },
            root: root.clone(),
            jail: Jail {
                writable: root.clone(),
                hidden: hidden.iter().map(|h| absolute(h)).collect(),
                network: *network != Network::None,
                visible: Vec::new(),
            },
        };
        for d in ["repo", "state", "side", "home", "tmp"] {
            fs_err::create_dir_all(root.join(d)).map_err(failed)?;
        }
        let script = format!(
            "cp -a {}/. . && rm -rf .git && git init -q && git add -A && git commit -q --no-gpg-sign --allow-empty -m base",
            shell_quote(&base.to_string_lossy())
        );
        // bench's own copy runs outside the jail: the base tree is in a hidden dataset.
        let r = exec(
            &script,
            Path::new(&sandbox.paths.repo),
            &sandbox.root,
            &sandbox.base_env(),
            Duration::from_secs(300),
            cancel,
            None,
        )
        .await
        .map_err(failed)?;
        if r.cancelled {
            return Err(SandboxError::Cancelled);
        }
        if r.exit_code != Some(0) {
            return Err(failed(format!(
                "cannot prepare a workspace from {}: {}",
                base.display(),
                String::from_utf8_lossy(&r.output)
            )));
        }
        Ok(sandbox)
    }
}

impl Drop for LocalSandbox {
    fn drop(&mut self) {
        // Each command's processes went when it ended; nothing of the sandbox outlives it.
        let _ = fs_err::remove_dir_all(&self.root);
    }
}

#[async_trait]
impl Sandbox for LocalSandbox {
    fn paths(&self) -> &SandboxPaths {
        &self.paths
    }

    fn base_env(&self) -> Vec<(String, String)> {
        let mut env = git_env(Path::new(&self.paths.home));
        env.push((
            "TMPDIR".to_string(),
            self.root.join("tmp").display().to_string(),
        ));
        env
    }

    async fn exec(
        &self,
        script: &str,
        env: &[(String, String)],
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<ExecResult, SandboxError> {
        let mut all = self.base_env();
        all.extend_from_slice(env);
        let r = exec(
            script,
            Path::new(&self.paths.repo),
            &self.root,
            &all,
            timeout,
            cancel,
            Some(&self.jail),
        )
        .await
        .map_err(|e| failed(format!("cannot run a command in {}: {e}", self.paths.repo)))?;
        if r.cancelled {
            return Err(SandboxError::Cancelled);
        }
        Ok(r)
    }

    async fn put_files(&self, files: &[(&str, &[u8], u32)]) -> Result<(), SandboxError> {
        use std::os::unix::fs::PermissionsExt;
        for (path, bytes, mode) in files {
            let p = Path::new(path);
            if !p.starts_with(&self.root) {
                return Err(failed(format!("{path} is outside the sandbox")));
            }
            if let Some(link) = link_on_the_way(&self.root, p) {
                return Err(failed(format!(
                    "{path}: {} is a symbolic link; bench writes nothing through one",
                    link.display()
                )));
            }
            if let Some(dir) = p.parent() {
                fs_err::create_dir_all(dir).map_err(failed)?;
            }
            fs_err::write(p, bytes).map_err(failed)?;
            fs_err::set_permissions(p, std::fs::Permissions::from_mode(*mode)).map_err(failed)?;
        }
        Ok(())
    }

    async fn get_file(&self, path: &str) -> Result<Vec<u8>, SandboxError> {
        fs_err::read(path).map_err(failed)
    }

    async fn get_dir(
        &self,
        path: &str,
        cap: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, SandboxError> {
        Ok(files_under(Path::new(path), cap))
    }

    async fn destroy(self: Box<Self>) -> Result<(), SandboxError> {
        drop(self);
        Ok(())
    }
}

/// The first path from `root` (exclusive) down to `path` (inclusive) that is a symbolic link,
/// or a `..` component: a write there could land outside the sandbox.
fn link_on_the_way(root: &Path, path: &Path) -> Option<PathBuf> {
    let rel = path.strip_prefix(root).ok()?;
    let mut at = root.to_path_buf();
    for c in rel.components() {
        if c == std::path::Component::ParentDir {
            return Some(at.join(".."));
        }
        at.push(c);
        match fs_err::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Some(at),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// Regular files under `dir`, sorted by relative path, at most `cap` bytes in all (larger ones
/// are noted, not kept).
pub fn files_under(dir: &Path, cap: usize) -> Vec<(String, Vec<u8>)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs_err::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => walk(&p, out),
                Ok(t) if t.is_file() => out.push(p),
                _ => {}
            }
        }
    }
    let mut paths = Vec::new();
    walk(dir, &mut paths);
    paths.sort();
    let mut budget = cap;
    let mut out = Vec::new();
    for p in paths {
        let rel = p.strip_prefix(dir).unwrap_or(&p).display().to_string();
        match fs_err::read(&p) {
            Ok(b) if b.len() <= budget => {
                budget -= b.len();
                out.push((rel, b));
            }
            Ok(b) => out.push((
                rel,
                format!("[bench: {} bytes not kept]", b.len()).into_bytes(),
            )),
            Err(_) => {}
        }
    }
    out
}

#[async_trait]
impl Backend for LocalBackend {
    fn base_commit(&self, _base: &TaskBase) -> Option<String> {
        None
    }

    async fn create(
        &self,
        spec: &SandboxSpec<'_>,
        cancel: &CancellationToken,
    ) -> Result<Box<dyn Sandbox>, SandboxError> {
        let TaskBase::Dir { path, .. } = spec.base else {
            return Err(failed(
                "the local backend runs tasks with a local base tree only; set `[backend] kind = \"docker\"` for image tasks",
            ));
        };
        Ok(Box::new(
            LocalSandbox::create(&self.tmp, path, &self.hidden, &spec.network, cancel).await?,
        ))
    }

    async fn agent_image(
        &self,
        _base: &TaskBase,
        _install: &InstallSpec,
        _cancel: &CancellationToken,
    ) -> Result<Option<String>, SandboxError> {
        Ok(None)
    }

    fn sandbox_cap(&self) -> Option<usize> {
        None
    }

    async fn finish(&self) {}
}
