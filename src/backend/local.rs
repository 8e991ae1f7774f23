//! The `local` backend: sandboxes are throwaway git workspaces on the host under the store's
//! `tmp/`, each a fresh repository holding only the task's base tree as one commit (no history,
//! no remotes, no hidden tests). Commands get exactly the environment they are given (the host's
//! is not inherited) and run in their own process group, killed whole on timeout or cancel.
//!
//! Every command of a sandbox runs in a bubblewrap jail (`jail.rs`) where bwrap works: its own
//! namespaces, no network when grading, the store and local datasets hidden, only the sandbox's
//! directory writable, `TMPDIR` inside it. A sandbox's commands share one jail, started with
//! the first and ended with the sandbox (`jail_server.rs`), which kills everything a command
//! started when it ends; a command that must see more of the host (a harness's files under
//! `/tmp`), or that comes while another runs, gets a jail of its own.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::exec::{ExecResult, TAG_VAR, exec, new_tag};
use super::jail::{Jail, absolute, bwrap};
use super::jail_server::Served;
use super::local_bases::{Base, Bases};
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
    /// The tasks' base repositories, made once and copied into each workspace.
    bases: Arc<Bases>,
}

impl LocalBackend {
    /// Sandboxes under `tmp` whose commands see none of `hidden`.
    pub fn new(tmp: PathBuf, hidden: Vec<PathBuf>) -> LocalBackend {
        LocalBackend {
            bases: Arc::new(Bases::new(tmp.clone())),
            tmp,
            hidden,
        }
    }
}

/// A throwaway workspace: `repo/`, `state/`, `side/` and `home/` under one temp directory,
/// removed on drop.
#[derive(Debug)]
pub struct LocalSandbox {
    root: PathBuf,
    paths: SandboxPaths,
    jail: Jail,
    /// The sandbox's one jail, once its first command started it.
    served: tokio::sync::Mutex<Option<Served>>,
    /// Whether to use (or start) that jail: false once it could not start here.
    serving: AtomicBool,
    /// The program that jail runs as its server: bench itself.
    server: PathBuf,
    /// The one commit bench made the repository with.
    made: String,
    /// The report of the history check its base repository passed when it was made, while
    /// the sandbox is still a copy of it (no command has run, no file was written): see
    /// [`Sandbox::checked_at_start`].
    checked: Option<String>,
    fresh: AtomicBool,
    /// Left in place when dropped (a base repository the backend keeps).
    kept: bool,
    /// The jail every command with no more than the sandbox's own environment gets (the shared
    /// one's mounts), worked out once.
    shared: Jail,
}

/// The script that makes a workspace's repository from a base tree, run in the (empty)
/// repository directory: one commit on `main` and nothing else (no reflog, no message file, no
/// remote), so the history is what `repo::clean` would strip it to. No automatic maintenance:
/// the commit would start a detached `git maintenance run` beside bench. Prints the commit.
fn make_script(base: &Path) -> String {
    format!(
        "cp -a {}/. . && rm -rf .git && git init -q -b main && git add -A && git -c core.logAllRefUpdates=false -c gc.auto=0 -c maintenance.auto=false commit -q --no-gpg-sign --allow-empty -m base && rm -f .git/COMMIT_EDITMSG && git rev-parse HEAD",
        shell_quote(&base.to_string_lossy())
    )
}

/// Makes the base repository of the tree at `path` under `dir`: a workspace made as every
/// [`LocalSandbox::create`] makes one, checked by `repo::clean` in its jail, and kept.
async fn make_base(
    dir: PathBuf,
    path: &Path,
    hidden: &[PathBuf],
    cancel: &CancellationToken,
) -> Result<Base, SandboxError> {
    let sandbox = LocalSandbox::create(&dir, path, hidden, &Network::None, cancel).await?;
    let what = format!("workspace of {}", path.display());
    let (commit, report) = super::repo::clean(&sandbox, Some(&sandbox.made), &what, cancel).await?;
    let repo = PathBuf::from(&sandbox.paths.repo);
    sandbox.keep();
    Ok(Base {
        repo,
        commit,
        report,
        bytes: 0,
    })
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
        let mut sandbox = LocalSandbox::empty(tmp, hidden, network)?;
        // One commit on `main` and nothing else: the history is what `repo::clean` would strip
        // it to, so only its check runs.
        let what = || format!("cannot prepare a workspace from {}", base.display());
        let head = sandbox
            .fill(&make_script(base), cancel)
            .await
            .map_err(|e| e.context(what()))?;
        if head.len() != 40 {
            return Err(failed(format!("{}: {head}", what())));
        }
        sandbox.made = head;
        Ok(sandbox)
    }

    /// A workspace under `tmp` that is a copy (`cp -a`, reflinks where the filesystem has them)
    /// of the checked base repository `base`: until a command runs or a file is written in it,
    /// its history check is the one `base` passed. Jailed as [`LocalSandbox::create`]'s.
    pub async fn from_base(
        tmp: &Path,
        base: &Base,
        hidden: &[PathBuf],
        network: &Network,
        cancel: &CancellationToken,
    ) -> Result<LocalSandbox, SandboxError> {
        let mut sandbox = LocalSandbox::empty(tmp, hidden, network)?;
        let script = format!("cp -a {}/. .", shell_quote(&base.repo.to_string_lossy()));
        sandbox.fill(&script, cancel).await.map_err(|e| {
            e.context(format!(
                "cannot copy the base repository {} into a workspace",
                base.repo.display()
            ))
        })?;
        sandbox.made = base.commit.clone();
        sandbox.checked = Some(base.report.clone());
        Ok(sandbox)
    }

    /// A workspace's directories under `tmp`, its repository still empty.
    fn empty(
        tmp: &Path,
        hidden: &[PathBuf],
        network: &Network,
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
        let mut sandbox = LocalSandbox {
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
            served: tokio::sync::Mutex::new(None),
            serving: AtomicBool::new(!NO_SERVER.load(Ordering::Relaxed)),
            server: std::env::current_exe().unwrap_or_default(),
            made: String::new(),
            checked: None,
            fresh: AtomicBool::new(true),
            kept: false,
            shared: Jail {
                writable: root.clone(),
                hidden: Vec::new(),
                network: false,
                visible: Vec::new(),
            },
        };
        for d in ["repo", "state", "side", "home", "tmp"] {
            fs_err::create_dir_all(root.join(d)).map_err(failed)?;
        }
        sandbox.shared = sandbox.jail.for_env(&sandbox.base_env());
        Ok(sandbox)
    }

    /// Runs bench's own `script` in the empty repository, outside the jail (the base tree is in
    /// a hidden dataset, a base repository in the hidden store): its trimmed output.
    async fn fill(&self, script: &str, cancel: &CancellationToken) -> Result<String, SandboxError> {
        let r = exec(
            script,
            Path::new(&self.paths.repo),
            &self.root,
            &self.base_env(),
            Duration::from_secs(300),
            cancel,
            None,
        )
        .await
        .map_err(failed)?;
        if r.cancelled {
            return Err(SandboxError::Cancelled);
        }
        let out = String::from_utf8_lossy(&r.output).trim().to_string();
        if r.exit_code != Some(0) {
            return Err(failed(out));
        }
        Ok(out)
    }
}

/// Set once a sandbox's jail could not start in this process (bench's binary is out of the
/// jail's sight, a test harness runs the library): later sandboxes give each command a jail of
/// its own from the start.
static NO_SERVER: AtomicBool = AtomicBool::new(false);

impl LocalSandbox {
    /// This sandbox with `exe` as its jail's server (a `bench` binary; the default is the
    /// running one, which a test harness is not).
    pub fn with_server(mut self, exe: PathBuf) -> LocalSandbox {
        self.server = exe;
        self.serving = AtomicBool::new(true);
        self
    }

    /// Ends the sandbox's jail and leaves its directory in place.
    fn keep(mut self) {
        self.kept = true;
    }

    /// Runs `script` with exactly `env` in the sandbox's one jail, starting it if need be:
    /// `None` when the command must get a jail of its own (bwrap is unavailable, the command
    /// must see more of the host, another command is running, the jail cannot start here).
    async fn exec_served(
        &self,
        script: &str,
        env: &[(String, String)],
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Option<Result<ExecResult, SandboxError>> {
        if !self.serving.load(Ordering::Relaxed)
            || bwrap().is_none()
            || !self.shared.same_as(&self.jail.for_env(env))
        {
            return None;
        }
        let mut slot = self.served.try_lock().ok()?;
        if slot.is_none() {
            match Served::start(&self.server, &self.shared, &self.root, &new_tag(&self.root)).await
            {
                Ok(s) => *slot = Some(s),
                Err(_) => {
                    // Jails of their own still confine every command: slower, not weaker.
                    self.serving.store(false, Ordering::Relaxed);
                    NO_SERVER.store(true, Ordering::Relaxed);
                    return None;
                }
            }
        }
        let served = slot.as_mut()?;
        let mut env = env.to_vec();
        env.push((TAG_VAR.to_string(), new_tag(&self.root)));
        let r = served
            .exec(script, Path::new(&self.paths.repo), env, timeout, cancel)
            .await;
        Some(match r {
            Ok(r) if r.cancelled => {
                *slot = None;
                Err(SandboxError::Cancelled)
            }
            Ok(r) => Ok(r),
            Err(e) => {
                *slot = None;
                Err(failed(format!(
                    "cannot run a command in {}: {e}",
                    self.paths.repo
                )))
            }
        })
    }
}

impl Drop for LocalSandbox {
    fn drop(&mut self) {
        // Each command's processes went when it ended; nothing of the sandbox outlives it.
        drop(self.served.get_mut().take());
        if !self.kept {
            let _ = fs_err::remove_dir_all(&self.root);
        }
    }
}

#[async_trait]
impl Sandbox for LocalSandbox {
    fn paths(&self) -> &SandboxPaths {
        &self.paths
    }

    /// The repository holds the one commit bench made it with: there is nothing to strip, and
    /// `repo::clean` checks it, fail-closed, as any other.
    fn stripped_to(&self) -> Option<&str> {
        Some(&self.made)
    }

    /// A copy of a checked base repository that nothing has touched yet: its check is the
    /// base's.
    fn checked_at_start(&self) -> Option<(&str, &str)> {
        let report = self.checked.as_deref()?;
        self.fresh
            .load(Ordering::SeqCst)
            .then_some((self.made.as_str(), report))
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
        self.fresh.store(false, Ordering::SeqCst);
        let mut all = self.base_env();
        all.extend_from_slice(env);
        if let Some(r) = self.exec_served(script, &all, timeout, cancel).await {
            return r;
        }
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
        self.fresh.store(false, Ordering::SeqCst);
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
        let TaskBase::Dir { path, digest } = spec.base else {
            return Err(failed(
                "the local backend runs tasks with a local base tree only; set `[backend] kind = \"docker\"` for image tasks",
            ));
        };
        // The store's workspaces: their jails start from a prepared root, made once.
        super::prepared_root::register(&absolute(&self.tmp));
        let base = self
            .bases
            .get(path, digest, |dir| {
                make_base(dir, path, &self.hidden, cancel)
            })
            .await?;
        Ok(Box::new(
            LocalSandbox::from_base(&self.tmp, &base, &self.hidden, &spec.network, cancel).await?,
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

    async fn finish(&self) {
        self.bases.clear();
    }
}
