//! The prepared read-only root of local jails: the host's tree as a jail sees it (the binds
//! of [`super::jail`], without the container runtimes' state), set up once per workspace
//! directory in a user and mount namespace that lives as long as bench. A jail of a workspace
//! in that directory starts inside it (`nsenter` into the two namespaces, then `bwrap`) and
//! makes its view with one recursive bind of the prepared root, instead of some sixty binds of
//! the host's directories: the host's mounts that come and go (a container's layers) are not in
//! the prepared root, so one recursive bind of it is safe where one of the host's `/` is not.
//!
//! Inside the prepared namespace the host's `/proc` is shown (a nested jail may mount a `/proc`
//! of its own only where one is fully visible) and so are `/tmp` and `/var/tmp`, read-only (the
//! sources of what a jail shows of them); the workspace directory is writable. Nothing but
//! bench's own holder process (`cat`, waiting on a pipe bench holds) runs there: a jail's
//! commands run in the nested jail, which hides all of it as before.
//!
//! Where the kernel refuses a nested jail (a setuid bwrap, user namespaces off, a `/proc`
//! partly covered, as in some containers), `nsenter` is missing, or `BENCH_NO_PREPARED_ROOT`
//! is set, jails are made from the host as before: a probe jail decides once per directory.
//! Not responsible for what a jail shows or hides ([`super::jail::Jail`]).

use std::collections::BTreeMap;
use std::io::BufRead;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The user and group the host's user is inside the prepared namespace when it is root: a
/// nested jail may map only its parent's own user, and mapping root needs a capability no
/// process there has. Its commands are root again inside the nested jail.
const OUTER_ROOT_ID: u32 = 1000;

/// How long the holder may take to say it is ready.
const START_LIMIT: Duration = Duration::from_secs(30);

/// A prepared root: its user and mount namespaces, held open by bench, and the `nsenter`
/// command line that enters them.
#[derive(Debug)]
pub struct Prepared {
    _user: fs_err::File,
    _mount: fs_err::File,
    entry: (PathBuf, Vec<String>),
}

type Slot = Arc<OnceLock<Option<Prepared>>>;

/// The workspace directories registered for a prepared root, each prepared on first use.
fn registry() -> &'static Mutex<BTreeMap<PathBuf, Slot>> {
    static DIRS: OnceLock<Mutex<BTreeMap<PathBuf, Slot>>> = OnceLock::new();
    DIRS.get_or_init(Default::default)
}

/// Registers `dir` (an absolute directory whose children are jails' writable roots: the
/// store's `tmp`, where the local backend makes its workspaces) for a prepared root, made when
/// its first jail starts and kept until bench exits. Idempotent.
pub fn register(dir: &Path) {
    if std::env::var_os("BENCH_NO_PREPARED_ROOT").is_some() {
        return;
    }
    let mut dirs = registry().lock().unwrap_or_else(|e| e.into_inner());
    dirs.entry(dir.to_path_buf()).or_default();
}

/// The program and arguments that enter the prepared root of `writable`'s directory (to be
/// followed by bwrap and its arguments), or `None` when jails of `writable` start from the
/// host (no prepared root registered for its directory, or the kernel refused one). A new
/// root is first tried with a jail whose bwrap arguments `nested` gives for a workspace.
pub fn enter(
    writable: &Path,
    bwrap: &Path,
    nested: &dyn Fn(&Path) -> Vec<String>,
) -> Option<(PathBuf, Vec<String>)> {
    let dir = writable.parent()?;
    let slot = {
        let dirs = registry().lock().unwrap_or_else(|e| e.into_inner());
        dirs.get(dir)?.clone()
    };
    let prepared = slot
        .get_or_init(|| Prepared::start(dir, bwrap, nested))
        .as_ref()?;
    Some(prepared.entry.clone())
}

/// `nsenter`, found on PATH.
fn nsenter() -> Option<&'static Path> {
    static NSENTER: OnceLock<Option<PathBuf>> = OnceLock::new();
    NSENTER
        .get_or_init(|| crate::harness::preflight::host_path("nsenter"))
        .as_deref()
}

/// The user and group ids of bench's host user inside the prepared namespace.
fn outer_ids() -> (u32, u32) {
    let (uid, gid) = host_ids();
    if uid == 0 {
        (OUTER_ROOT_ID, OUTER_ROOT_ID)
    } else {
        (uid, gid)
    }
}

/// bench's effective user and group ids on the host: what a nested jail's commands are.
pub(super) fn host_ids() -> (u32, u32) {
    (
        nix::unistd::geteuid().as_raw(),
        nix::unistd::getegid().as_raw(),
    )
}

impl Prepared {
    /// Starts the holder of `dir`'s prepared root and checks that a jail (`nested`'s
    /// arguments) starts inside it; `None` when either fails (jails then start from the host).
    fn start(dir: &Path, bwrap: &Path, nested: &dyn Fn(&Path) -> Vec<String>) -> Option<Prepared> {
        let nsenter = nsenter()?;
        let pid = spawn_holder(bwrap, &holder_args(dir))?;
        let ns = |n: &str| fs_err::File::open(format!("/proc/{pid}/ns/{n}")).ok();
        let (user, mount) = (ns("user")?, ns("mnt")?);
        // Through bench's own descriptors of the namespaces, which no reused process id can
        // redirect.
        let me = std::process::id();
        let fd = |f: &fs_err::File| format!("/proc/{me}/fd/{}", f.file().as_raw_fd());
        let args = vec![
            format!("--user={}", fd(&user)),
            format!("--mount={}", fd(&mount)),
            "--preserve-credentials".to_string(),
            "--".to_string(),
        ];
        let prepared = Prepared {
            _user: user,
            _mount: mount,
            entry: (nsenter.to_path_buf(), args),
        };
        prepared.probe(dir, bwrap, nested).then_some(prepared)
    }

    /// Whether a jail of a workspace in `dir` runs a command inside this root.
    fn probe(&self, dir: &Path, bwrap: &Path, nested: &dyn Fn(&Path) -> Vec<String>) -> bool {
        let Ok(work) = tempfile::Builder::new().prefix("probe-").tempdir_in(dir) else {
            return false;
        };
        let (program, mut args) = self.entry.clone();
        args.push(bwrap.display().to_string());
        args.extend(nested(work.path()));
        Command::new(program)
            .args(args)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

/// bwrap's arguments for the holder of `dir`'s prepared root.
fn holder_args(dir: &Path) -> Vec<String> {
    let s = |p: &Path| p.display().to_string();
    let (uid, gid) = outer_ids();
    // Its own user namespace (so jails nested in it map their user from it) and mount
    // namespace; the host's PID namespace, whose `/proc` it shows.
    let mut args: Vec<String> = [
        "--die-with-parent",
        "--unshare-user",
        "--unshare-ipc",
        "--unshare-uts",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]
    .map(String::from)
    .to_vec();
    args.extend([
        "--uid".into(),
        uid.to_string(),
        "--gid".into(),
        gid.to_string(),
    ]);
    root_binds(Path::new("/"), &mut args);
    args.extend(["--dev", "/dev", "--bind", "/proc", "/proc"].map(String::from));
    for t in ["/tmp", "/var/tmp"] {
        if Path::new(t).is_dir() {
            args.extend(["--ro-bind".into(), t.into(), t.into()]);
        }
    }
    args.extend([
        "--bind".into(),
        s(dir),
        s(dir),
        "--chdir".into(),
        "/".into(),
    ]);
    args.extend(["sh", "-c", "echo $$ && exec cat >/dev/null"].map(String::from));
    args
}

/// Starts the holder on a thread of its own that lives as long as it does (bwrap's
/// `--die-with-parent` follows the thread that started it), and returns its process id.
fn spawn_holder(bwrap: &Path, args: &[String]) -> Option<u32> {
    let mut cmd = Command::new(bwrap);
    cmd.args(args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("bench-prepared-root".into())
        .spawn(move || {
            let Ok(mut child) = cmd.spawn() else {
                let _ = tx.send(None);
                return;
            };
            let mut line = String::new();
            let read = child
                .stdout
                .take()
                .map(|o| std::io::BufReader::new(o).read_line(&mut line));
            let pid = matches!(read, Some(Ok(n)) if n > 0)
                .then(|| line.trim().parse::<u32>().ok())
                .flatten();
            let _ = tx.send(pid);
            // Holds the holder's stdin (its `cat` ends when bench does: `wait` would close
            // it) and reaps the holder.
            let _stdin = child.stdin.take();
            let _ = child.wait();
        })
        .ok()?;
    rx.recv_timeout(START_LIMIT).ok().flatten()
}

/// Paths of the host never shown inside: the pseudo filesystems bwrap makes anew, `/tmp`
/// (empty inside), the container runtimes' state (their mounts come and go while a sandbox
/// starts, which makes a recursive bind fail) and their sockets (root on the host).
const NOT_SHOWN: &[&str] = &[
    "/dev",
    "/proc",
    "/tmp",
    "/var/tmp",
    "/var/lib/docker",
    "/var/lib/containerd",
    "/run/docker",
    "/run/docker.sock",
    "/run/containerd",
    "/run/netns",
    "/var/run/docker.sock",
    "/var/run/docker",
];

/// Read-only binds of the host's tree under `dir`, leaving out [`NOT_SHOWN`]: a directory
/// that holds a left-out path is descended into, anything else is bound whole (symlinks are
/// recreated as symlinks).
pub(super) fn root_binds(dir: &Path, args: &mut Vec<String>) {
    let mut entries: Vec<PathBuf> = match fs_err::read_dir(dir) {
        Ok(rd) => rd.flatten().map(|e| e.path()).collect(),
        Err(_) => return,
    };
    entries.sort();
    for p in entries {
        let shown = p.display().to_string();
        if NOT_SHOWN.contains(&shown.as_str()) {
            continue;
        }
        let Ok(meta) = fs_err::symlink_metadata(&p) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            if let Ok(target) = fs_err::read_link(&p) {
                args.extend(["--symlink".into(), target.display().to_string(), shown]);
            }
            continue;
        }
        let holds_hidden = NOT_SHOWN
            .iter()
            .any(|n| Path::new(n).starts_with(&p) && Path::new(n) != p);
        if meta.is_dir() && holds_hidden {
            args.extend(["--dir".into(), shown]);
            root_binds(&p, args);
        } else {
            args.extend(["--ro-bind".into(), shown.clone(), shown]);
        }
    }
}
