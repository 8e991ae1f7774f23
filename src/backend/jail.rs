//! The local backend's sandbox: bubblewrap (`bwrap`, Debian's `bubblewrap` package) puts every
//! command of a local sandbox in its own user, PID, mount, IPC, UTS and cgroup namespaces, and
//! in its own network namespace unless the phase may use the host's network (agents reach their
//! model endpoints; grading and parser scripts never do).
//!
//! Inside, no command has a capability (bench may run as root: its commands then run as a root
//! without privileges), the host's filesystem is read-only, `/proc` shows only the sandbox's
//! processes (so `/proc/<bench pid>/environ` is out of reach), `/tmp` is empty, the store and
//! the manifest's local datasets (hidden tests, gold patches) are hidden behind empty
//! directories, and only the sandbox's own directory is writable. bwrap dies with bench (`--die-with-parent`) and every
//! process of the sandbox dies with it (the PID namespace's init is gone), so a `setsid`
//! background process neither outlives a timeout nor delays Ctrl-C, and a `kill -9` of bench
//! leaves nothing running.
//!
//! Where bwrap is missing or cannot create namespaces (some containers forbid it), commands run
//! unsandboxed, `bench` says so once, and the keys record it (`BackendFacts::isolation`), so a
//! result computed unsandboxed is never taken for a sandboxed one.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// How a local command is confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jail {
    /// The one writable directory (the sandbox's root).
    pub writable: PathBuf,
    /// Directories shown empty inside (the store, local datasets).
    pub hidden: Vec<PathBuf>,
    /// Whether the host's network is shared (agents); else only a private loopback.
    pub network: bool,
    /// Host files or directories shown read-only although under `/tmp` (files a harness's
    /// `env` names, such as a model metadata file, and the directories on the command's
    /// `PATH`, where its program was found); never `/tmp` itself, nor one in or around a
    /// hidden directory or the writable one.
    pub visible: Vec<PathBuf>,
}

/// The isolation local sandboxes get on this machine: `"bwrap"` or `"none"` (part of keys).
pub fn isolation() -> &'static str {
    if bwrap().is_some() { "bwrap" } else { "none" }
}

/// The working `bwrap`, found on PATH and tried once.
pub fn bwrap() -> Option<&'static Path> {
    static BWRAP: OnceLock<Option<PathBuf>> = OnceLock::new();
    BWRAP
        .get_or_init(|| {
            if std::env::var_os("BENCH_NO_BWRAP").is_some() {
                return None;
            }
            let path = std::env::var_os("PATH").unwrap_or_default();
            let found = std::env::split_paths(&path)
                .map(|d| d.join("bwrap"))
                .find(|p| p.is_file())?;
            // The sandbox this machine's commands would get, tried up to three times (a
            // transient failure must not flip the keys' isolation).
            let probe = Jail {
                writable: std::env::temp_dir(),
                hidden: Vec::new(),
                network: false,
                visible: Vec::new(),
            };
            let args = probe.args(Path::new("/"), vec!["true".to_string()]);
            let ok = (0..3).any(|i| {
                if i > 0 {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                std::process::Command::new(&found)
                    .args(&args)
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            });
            ok.then_some(found)
        })
        .as_deref()
}

/// Warns, once per process, that local sandboxes run without namespaces.
pub fn warn_if_unavailable(events: &crate::events::Events) {
    static WARNED: OnceLock<()> = OnceLock::new();
    if bwrap().is_none() {
        WARNED.get_or_init(|| {
            events.warning(
                "bubblewrap (bwrap) is missing or cannot create namespaces here: local sandboxes share bench's processes, network and filesystem (install it: `apt-get install bubblewrap`)",
            );
        });
    }
}

impl Jail {
    /// The program and arguments that run `sh -c script` in `cwd` inside the jail, or `None`
    /// when bwrap is unavailable.
    pub fn command(&self, cwd: &Path, script: &str) -> Option<(PathBuf, Vec<String>)> {
        self.wrap(cwd, ["sh", "-c", script].map(String::from).to_vec())
    }

    /// The program and arguments that run `argv` in `cwd` inside the jail, or `None` when bwrap
    /// is unavailable.
    pub fn wrap(&self, cwd: &Path, argv: Vec<String>) -> Option<(PathBuf, Vec<String>)> {
        self.wrap_with(cwd, argv, &[])
    }

    /// [`Jail::wrap`] with bwrap options `options` first. The jail starts in the prepared
    /// read-only root of its workspace's directory where there is one
    /// ([`super::prepared_root`]), else from the host's tree.
    pub fn wrap_with(
        &self,
        cwd: &Path,
        argv: Vec<String>,
        options: &[&str],
    ) -> Option<(PathBuf, Vec<String>)> {
        let bwrap = bwrap()?;
        let mut args: Vec<String> = options.iter().map(|o| o.to_string()).collect();
        // A prepared root is tried with a jail of this kind running `true`.
        let probe = |work: &Path| {
            Jail {
                writable: work.to_path_buf(),
                hidden: Vec::new(),
                network: false,
                visible: Vec::new(),
            }
            .nested_args(work, vec!["true".to_string()])
        };
        match super::prepared_root::enter(&self.writable, bwrap, &probe) {
            Some((nsenter, mut entry)) => {
                args.extend(self.nested_args(cwd, argv));
                entry.push(bwrap.display().to_string());
                entry.extend(args);
                Some((nsenter, entry))
            }
            None => {
                args.extend(self.args(cwd, argv));
                Some((bwrap.to_path_buf(), args))
            }
        }
    }

    /// bwrap's arguments for `argv` in `cwd`, from the host's tree.
    fn args(&self, cwd: &Path, argv: Vec<String>) -> Vec<String> {
        let mut args = jail_options();
        super::prepared_root::root_binds(Path::new("/"), &mut args);
        self.view(cwd, argv, args)
    }

    /// bwrap's arguments for `argv` in `cwd` inside a prepared root: one recursive bind of it,
    /// and the host's user and group mapped back from the prepared namespace's.
    fn nested_args(&self, cwd: &Path, argv: Vec<String>) -> Vec<String> {
        let mut args = jail_options();
        let (uid, gid) = super::prepared_root::host_ids();
        args.extend([
            "--uid".into(),
            uid.to_string(),
            "--gid".into(),
            gid.to_string(),
        ]);
        args.extend(["--ro-bind", "/", "/"].map(String::from));
        self.view(cwd, argv, args)
    }

    /// `args` (the jail's options and its root) followed by the rest of the jail's view and
    /// `argv` in `cwd`. `/tmp` is an empty writable tmpfs, `/var/tmp` an empty read-only one
    /// (a prepared root holds the host's, the sources of what a jail shows of them).
    fn view(&self, cwd: &Path, argv: Vec<String>, mut args: Vec<String>) -> Vec<String> {
        let s = |p: &Path| p.display().to_string();
        args.extend(["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"].map(String::from));
        let var_tmp = Path::new("/var/tmp").is_dir();
        if var_tmp {
            args.extend(["--tmpfs", "/var/tmp"].map(String::from));
        }
        if self.network {
            args.push("--share-net".into());
        }
        let mut hidden: Vec<&PathBuf> = self.hidden.iter().filter(|p| p.is_dir()).collect();
        hidden.sort();
        hidden.dedup();
        for h in &hidden {
            args.extend(["--tmpfs".into(), s(h)]);
        }
        for v in self.shown(&hidden) {
            args.extend(["--ro-bind".into(), s(v), s(v)]);
        }
        args.extend(["--bind".into(), s(&self.writable), s(&self.writable)]);
        if var_tmp {
            // Read-only last: a bind below it needs its mount point made first.
            args.extend(["--remount-ro", "/var/tmp"].map(String::from));
        }
        args.extend(["--chdir".into(), s(cwd)]);
        // bwrap exports PWD whatever it is told: commands get exactly the environment they
        // are given.
        if Path::new("/usr/bin/env").is_file() {
            args.extend(["/usr/bin/env".into(), "-u".into(), "PWD".into()]);
        }
        args.extend(argv);
        args
    }
}

/// The options every jail starts with. No capability inside, not even when bench runs as
/// root: with them, a command could remount the host's read-only binds writable or unmount
/// what hides the store.
fn jail_options() -> Vec<String> {
    [
        "--die-with-parent",
        "--unshare-all",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]
    .map(String::from)
    .to_vec()
}

impl Jail {
    /// This jail for a command with environment `env`: the absolute paths it names (a
    /// harness's `env`: a metadata file, a config) stay readable inside, and so do the
    /// directories on its PATH, so a program found there before the run (the harness's CLI, in
    /// a checkout under /tmp) is found inside; with each such `bin` (or `node_modules/.bin`)
    /// directory, the prefix holding it (a virtualenv, an npm prefix), where the program's
    /// libraries and its links' targets are. What [`Jail::may_show`] refuses stays hidden.
    pub fn for_env(&self, env: &[(String, String)]) -> Jail {
        let mut j = self.clone();
        j.visible.extend(
            env.iter()
                .filter(|(_, v)| v.starts_with('/') && !v.contains(':'))
                .map(|(_, v)| PathBuf::from(v)),
        );
        for dir in env
            .iter()
            .filter(|(k, _)| k == "PATH")
            .flat_map(|(_, v)| std::env::split_paths(v))
            .filter(|p| p.is_absolute())
        {
            let prefix = dir
                .file_name()
                .is_some_and(|n| n == "bin" || n == ".bin")
                .then(|| dir.parent().map(Path::to_path_buf))
                .flatten();
            j.visible.push(dir);
            j.visible.extend(prefix);
        }
        j
    }

    /// What of [`Jail::visible`] is shown, sorted, given the `hidden` directories that exist.
    fn shown(&self, hidden: &[&PathBuf]) -> Vec<&PathBuf> {
        let mut visible: Vec<&PathBuf> = self
            .visible
            .iter()
            .filter(|v| self.may_show(v, hidden))
            .collect();
        visible.sort();
        visible.dedup();
        visible
    }

    /// Whether `other` is this jail, as far as its mounts go: same writable directory, hidden
    /// directories, network, and shown files (what `other` asks to see beyond this jail is not
    /// shown anyway). A command of `other` may then run in this jail.
    pub fn same_as(&self, other: &Jail) -> bool {
        let hidden: Vec<&PathBuf> = self.hidden.iter().filter(|p| p.is_dir()).collect();
        self.writable == other.writable
            && self.hidden == other.hidden
            && self.network == other.network
            && self.shown(&hidden) == other.shown(&hidden)
    }

    /// Whether `v`, asked to be visible, is shown: a path under `/tmp` or `/var/tmp` (the rest
    /// of the host is shown anyway) that exists, is neither in nor around the writable
    /// directory, and is neither in nor around a hidden one (binding `/tmp` itself, or a
    /// directory holding the store, would show what the jail hides).
    fn may_show(&self, v: &Path, hidden: &[&PathBuf]) -> bool {
        let under_tmp = ["/tmp", "/var/tmp"]
            .iter()
            .any(|t| v.starts_with(t) && v != Path::new(t));
        under_tmp
            && v.exists()
            && !v.starts_with(&self.writable)
            && !self.writable.starts_with(v)
            && !hidden.iter().any(|h| v.starts_with(h) || h.starts_with(v))
    }
}

/// Whether `program` is found, as `sh` looks it up on `path`, inside a local sandbox of this
/// machine (an agent's jail, with what it shows of `path`): `None` when bwrap is unavailable
/// (commands then see the host as it is) or cannot be run.
pub fn finds(program: &str, path: &str) -> Option<bool> {
    let dir = tempfile::tempdir().ok()?;
    let env = [("PATH".to_string(), path.to_string())];
    let jail = Jail {
        writable: absolute(dir.path()),
        hidden: Vec::new(),
        network: false,
        visible: Vec::new(),
    }
    .for_env(&env);
    let argv = ["sh", "-c", "command -v \"$1\" >/dev/null", "sh", program];
    let (bwrap, args) = jail.wrap(&absolute(dir.path()), argv.map(String::from).to_vec())?;
    let status = std::process::Command::new(bwrap)
        .args(args)
        .env_clear()
        .envs(env)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    Some(status.success())
}

/// An absolute form of `p` (canonical when it exists), so jail mounts and the sweep's `/proc`
/// checks work whatever the store path was given as.
pub fn absolute(p: &Path) -> PathBuf {
    fs_err::canonicalize(p).unwrap_or_else(|_| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir()
                .map(|d| d.join(p))
                .unwrap_or_else(|_| p.to_path_buf())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 49, item 10: a directory under /tmp that is asked to be visible (a harness's CLI on
    /// the command's PATH, in a checkout under /tmp) is bound read-only; /tmp itself, and a
    /// directory holding a hidden one or the writable one, never are.
    #[test]
    fn a_visible_directory_under_tmp_is_bound_unless_it_would_show_what_is_hidden() {
        let tmp = tempfile::tempdir_in("/tmp").unwrap();
        let fakes = tmp.path().join("checkout/tests/fakes");
        let store = tmp.path().join("checkout/.bench");
        let work = store.join("tmp/sandbox");
        for d in [&fakes, &work] {
            fs_err::create_dir_all(d).unwrap();
        }
        let jail = Jail {
            writable: work.clone(),
            hidden: vec![store.clone()],
            network: false,
            visible: vec![
                fakes.clone(),
                PathBuf::from("/tmp"),
                tmp.path().join("checkout"),
                store.join("tmp"),
                tmp.path().join("missing"),
            ],
        };
        let args = jail.args(Path::new("/"), vec!["true".into()]);
        let bound: Vec<&str> = args
            .windows(3)
            .filter(|w| w[0] == "--ro-bind" && w[1].starts_with("/tmp"))
            .map(|w| w[1].as_str())
            .collect();
        assert_eq!(bound, vec![fakes.to_str().unwrap()]);
    }
}
