//! Running a shell command on the host: combined output, exit code, a timeout that kills the
//! command with every process it started (its process group), and cancellation.

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

/// Runs `sh -c script` in `cwd` with exactly `env` (the host environment is not inherited),
/// inside `jail` when one is given and bwrap works here (see `jail.rs`).
pub async fn exec(
    script: &str,
    cwd: &Path,
    env: &[(String, String)],
    timeout: Duration,
    cancel: &CancellationToken,
    jail: Option<&Jail>,
) -> std::io::Result<ExecResult> {
    let start = Instant::now();
    let (mut reader, writer) = std::io::pipe()?;
    // Absolute paths the command's environment names (a harness's `env`: a metadata file, a
    // config) stay readable inside the jail.
    let jail = jail.map(|j| {
        let mut j = j.clone();
        j.visible.extend(
            env.iter()
                .filter(|(_, v)| v.starts_with('/') && !v.contains(':'))
                .map(|(_, v)| std::path::PathBuf::from(v)),
        );
        j
    });
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
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn()?;
    drop(cmd);
    let pgid = child.id().map(|p| Pid::from_raw(p as i32));
    // In a workspace, leave the process group's id beside the repository, so the next apply can
    // kill what a crashed bench left running (see `sweep_workspaces`).
    let marker = match (pgid, cwd.parent()) {
        (Some(p), Some(parent))
            if parent
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("ws-")) =>
        {
            let m = parent.join(format!(".pgid-{p}"));
            let _ = std::fs::write(&m, b"");
            Some(m)
        }
        _ => None,
    };
    let read = tokio::task::spawn_blocking(move || {
        let mut buf = Vec::new();
        let _ = reader.read_to_end(&mut buf);
        buf
    });
    let kill = || {
        if let Some(p) = pgid {
            let _ = killpg(p, Signal::SIGKILL);
        }
    };
    let (status, timed_out, cancelled) = tokio::select! {
        s = child.wait() => (Some(s?), false, false),
        _ = tokio::time::sleep(timeout) => { kill(); let _ = child.wait().await; (None, true, false) }
        _ = cancel.cancelled() => { kill(); let _ = child.wait().await; (None, false, true) }
    };
    // Whatever the command left running in its group goes too.
    kill();
    let output = match tokio::time::timeout(Duration::from_secs(10), read).await {
        Ok(Ok(buf)) => buf,
        _ => b"[bench: output stream did not close; a process escaped the command's group]\n"
            .to_vec(),
    };
    if let Some(m) = marker {
        let _ = std::fs::remove_file(m);
    }
    let exit_code = status.and_then(|s| s.code());
    Ok(ExecResult {
        exit_code,
        output,
        timed_out,
        cancelled,
        duration: start.elapsed(),
    })
}

/// Removes the workspaces under `tmp` left by a dead bench, first killing the process groups
/// they recorded that still run inside them (checked through /proc, so a reused pid is never
/// hit). Call it holding the store's apply lock.
pub fn sweep_workspaces(tmp: &Path) {
    // `/proc/<pid>/cwd` is absolute: so must the workspaces be (a relative `--store`).
    let tmp = super::jail::absolute(tmp);
    for entry in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
        if entry.file_name() == "downloads" {
            continue;
        }
        let ws = entry.path();
        for marker in std::fs::read_dir(&ws).into_iter().flatten().flatten() {
            let name = marker.file_name().to_string_lossy().into_owned();
            let Some(pgid) = name
                .strip_prefix(".pgid-")
                .and_then(|p| p.parse::<i32>().ok())
            else {
                continue;
            };
            let cwd = std::fs::read_link(format!("/proc/{pgid}/cwd")).unwrap_or_default();
            if cwd.starts_with(&ws) {
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            }
        }
        for _ in 0..3 {
            if std::fs::remove_dir_all(&ws).is_ok() || !ws.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = std::fs::remove_file(&ws);
    }
}
