//! Running a shell command on the host: combined output, exit code, a timeout that kills the
//! command with every process it started (its process group), and cancellation.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio_util::sync::CancellationToken;

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

/// Runs `sh -c script` in `cwd` with exactly `env` (the host environment is not inherited).
pub async fn exec(
    script: &str,
    cwd: &Path,
    env: &[(String, String)],
    timeout: Duration,
    cancel: &CancellationToken,
) -> std::io::Result<ExecResult> {
    let start = Instant::now();
    let (mut reader, writer) = std::io::pipe()?;
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .current_dir(cwd)
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
    let exit_code = status.and_then(|s| s.code());
    Ok(ExecResult {
        exit_code,
        output,
        timed_out,
        cancelled,
        duration: start.elapsed(),
    })
}
