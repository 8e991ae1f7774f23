//! Running a shell command on the host: combined output, exit code, a timeout that kills the
//! command with every process it started, and cancellation.
//!
//! Every process a command starts is found two ways: its process group (the command is the
//! leader of a new one), and a tag in its environment, `BENCH_SANDBOX=<workspace>#<n>`, that
//! every descendant inherits even when it leaves the group and the session (`setsid`) and its
//! working directory. When the command ends (exit, timeout, cancel), bench kills the group and
//! every process carrying the tag, so nothing a command left behind outlives it or holds its
//! output open. A dead bench's processes are found by the tag too ([`sweep_workspaces`]),
//! after its workspaces are gone. A process that clears its own environment and leaves the
//! workspace escapes unjailed; in the jail (`jail.rs`) nothing outlives the sandbox.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio_util::sync::CancellationToken;

use super::jail::Jail;

/// The result of one command.
#[derive(Debug, Clone)]
pub struct ExecResult {
    /// `None` when killed (timeout, cancellation, signal).
    pub exit_code: Option<i32>,
    /// stdout and stderr, interleaved as written.
    pub output: Vec<u8>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub duration: Duration,
}

/// The environment variable that tags every process of a command (see the module's doc).
pub const TAG_VAR: &str = "BENCH_SANDBOX";

/// A fresh tag for one command in the workspace `root`: `<root>#<n>`.
pub(super) fn new_tag(root: &Path) -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}#{}-{n}", root.display(), std::process::id())
}

/// Runs `sh -c script` in `cwd` with exactly `env` (the host environment is not inherited) and
/// the tag of a command in the workspace `root`, inside `jail` when one is given and bwrap works
/// here (see `jail.rs`). When it ends, whatever it left running goes too.
pub async fn exec(
    script: &str,
    cwd: &Path,
    root: &Path,
    env: &[(String, String)],
    timeout: Duration,
    cancel: &CancellationToken,
    jail: Option<&Jail>,
) -> std::io::Result<ExecResult> {
    let start = Instant::now();
    let tag = new_tag(root);
    let (mut reader, writer) = std::io::pipe()?;
    // What the command's environment names stays visible inside (`Jail::for_env`).
    let jail = jail.map(|j| j.for_env(env));
    let mut cmd = match jail.as_ref().and_then(|j| j.command(cwd, script)) {
        Some((bwrap, args)) => {
            let mut c = tokio::process::Command::new(bwrap);
            c.args(args);
            c
        }
        None => {
            let mut c = tokio::process::Command::new("sh");
            c.arg("-c").arg(script);
            c
        }
    };
    cmd.current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env(TAG_VAR, &tag)
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn()?;
    drop(cmd);
    let pgid = child.id().map(|p| Pid::from_raw(p as i32));
    let read = tokio::task::spawn_blocking(move || {
        let mut buf = Vec::new();
        let _ = reader.read_to_end(&mut buf);
        buf
    });
    let kill = || {
        if let Some(p) = pgid {
            let _ = killpg(p, Signal::SIGKILL);
        }
        kill_tagged(&|value| value == tag.as_bytes());
    };
    let (status, timed_out, cancelled) = tokio::select! {
        s = child.wait() => (Some(s?), false, false),
        _ = tokio::time::sleep(timeout) => { kill(); let _ = child.wait().await; (None, true, false) }
        _ = cancel.cancelled() => { kill(); let _ = child.wait().await; (None, false, true) }
    };
    // Whatever the command left running, in its group or not, goes too.
    kill();
    let output = match tokio::time::timeout(Duration::from_secs(10), read).await {
        Ok(Ok(buf)) => buf,
        _ => b"[bench: output stream did not close; a process escaped the command's group]\n"
            .to_vec(),
    };
    let exit_code = status.and_then(|s| s.code());
    Ok(ExecResult {
        exit_code,
        output,
        timed_out,
        cancelled,
        duration: start.elapsed(),
    })
}

/// Kills (SIGKILL, with its process group unless that is bench's own) every process whose
/// environment holds a [`TAG_VAR`] whose value `matches`. Returns how many it found.
fn kill_tagged(matches: &dyn Fn(&[u8]) -> bool) -> usize {
    let own_group = nix::unistd::getpgrp();
    let prefix = format!("{TAG_VAR}=");
    let mut found = 0;
    // Twice: a process forked by one that was being killed may appear between the passes.
    for _ in 0..2 {
        let mut this_pass = 0;
        for (pid, dir) in other_processes() {
            let Ok(environ) = fs_err::read(dir.join("environ")) else {
                continue;
            };
            let tagged = environ
                .split(|&b| b == 0)
                .filter_map(|kv| kv.strip_prefix(prefix.as_bytes()))
                .any(matches);
            if !tagged {
                continue;
            }
            this_pass += 1;
            kill_with_group(pid, own_group);
        }
        found += this_pass;
        if this_pass == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    found
}

/// Removes the workspaces under `tmp` left by a dead bench, first killing every process that
/// still runs inside one of them or carries the tag of a command in one (even one whose
/// workspace is gone: an interrupted run removes its workspaces), with its process group.
/// Processes are found by their working directory and their environment in /proc, so nothing
/// has to be written before an agent starts (a bench killed the instant after a spawn leaves no
/// trace to miss) and a reused pid is never hit. Call it holding the store's apply lock: then
/// every workspace under `tmp` belongs to a dead run.
pub fn sweep_workspaces(tmp: &Path) {
    // `/proc/<pid>/cwd` is absolute: so must the workspaces be (a relative `--store`).
    let tmp = super::jail::absolute(tmp);
    let under = format!("{}/", tmp.display()).into_bytes();
    kill_tagged(&|value| value.starts_with(&under));
    let workspaces: Vec<_> = fs_err::read_dir(&tmp)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name() != "downloads")
        .map(|e| e.path())
        .collect();
    if workspaces.is_empty() {
        return;
    }
    // Twice: a process forked by one that was being killed may appear between the passes.
    for _ in 0..2 {
        if kill_processes_inside(&workspaces) == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    for ws in &workspaces {
        for _ in 0..3 {
            if fs_err::remove_dir_all(ws).is_ok() || !ws.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = fs_err::remove_file(ws);
    }
}

/// Kills (SIGKILL) every process whose working directory is inside one of `dirs`, and its process
/// group unless that is bench's own. Returns how many processes it found.
fn kill_processes_inside(dirs: &[std::path::PathBuf]) -> usize {
    let own_group = nix::unistd::getpgrp();
    let mut found = 0;
    for (pid, dir) in other_processes() {
        let Ok(cwd) = fs_err::read_link(dir.join("cwd")) else {
            continue;
        };
        if !dirs.iter().any(|d| cwd.starts_with(d)) {
            continue;
        }
        found += 1;
        kill_with_group(pid, own_group);
    }
    found
}

/// Every process in /proc but bench itself: its pid and its /proc directory.
fn other_processes() -> impl Iterator<Item = (i32, std::path::PathBuf)> {
    let own_pid = std::process::id();
    fs_err::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(move |entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            (pid as u32 != own_pid).then(|| (pid, entry.path()))
        })
}

/// SIGKILL to `pid` and to its process group, unless that group is bench's own (`own_group`).
fn kill_with_group(pid: i32, own_group: Pid) {
    if let Some(pgid) = process_group(pid).filter(|g| *g > 1 && Pid::from_raw(*g) != own_group) {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
    let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
}

/// The process group of `pid`, from /proc/<pid>/stat (the fifth field; the second, the command
/// name in parentheses, may itself hold spaces and parentheses).
fn process_group(pid: i32) -> Option<i32> {
    let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    fn running(marker: &str) -> Vec<String> {
        fs_err::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| fs_err::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.contains(marker))
            .collect()
    }

    /// A command that leaves a process in a session of its own, outside its directory and
    /// holding its output open: the command returns at once, and the process is gone.
    #[tokio::test]
    async fn what_a_command_leaves_running_goes_when_it_ends() {
        let tmp = tempfile::tempdir().unwrap();
        let env = vec![("PATH".to_string(), std::env::var("PATH").unwrap())];
        let r = exec(
            "(cd / && setsid sleep 1235.5 &)\necho started",
            tmp.path(),
            tmp.path(),
            &env,
            Duration::from_secs(60),
            &CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
        assert_eq!(r.exit_code, Some(0));
        assert_eq!(String::from_utf8_lossy(&r.output), "started\n");
        assert!(r.duration < Duration::from_secs(5), "{:?}", r.duration);
        assert!(running("1235.5").is_empty(), "{:?}", running("1235.5"));
    }

    /// A process started in a workspace the instant before bench died (nothing written for it)
    /// is found and killed by the sweep, with the process it forked; the workspace goes.
    #[test]
    fn the_sweep_kills_what_runs_in_a_dead_workspace() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("ws-dead").join("repo");
        fs_err::create_dir_all(&repo).unwrap();
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("sleep 1234.5 & wait")
            .current_dir(&repo)
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        // Time for the shell to fork its sleep.
        std::thread::sleep(Duration::from_millis(200));
        sweep_workspaces(tmp.path());
        let status = child.wait().unwrap();
        assert!(status.code().is_none(), "the leader was killed: {status:?}");
        let left: Vec<i32> = fs_err::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|p| process_group(*p) == Some(pid))
            .filter(|p| fs_err::read_link(format!("/proc/{p}/cwd")).is_ok())
            .collect();
        assert!(left.is_empty(), "still in the group: {left:?}");
        assert!(!tmp.path().join("ws-dead").exists());
    }
}
