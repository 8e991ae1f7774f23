//! One jail per local sandbox: the sandbox's commands run, one after another, in a single
//! bubblewrap jail started with its first command and kept until the sandbox goes, instead of a
//! jail (new namespaces, a new mount tree) per command.
//!
//! Inside the jail runs bench itself as a small server ([`serve`], `bench __jail-serve`): it
//! reads one request at a time on its stdin (a JSON line: the script, its working directory, its
//! exact environment, its time limit, and a fresh random token), runs `sh -c script` with
//! exactly that environment in a process group of its own, collects its output, and when the
//! command ends (exit, time limit) kills **every other process in the jail** (the server is
//! the PID namespace's init, bwrap's `--as-pid-1`, and `kill(-1)` spares only itself) before it
//! answers: a JSON line with the exit code, whether the limit struck, the token, and the
//! output's length, then the output's bytes. So nothing a command starts outlives it, a `setsid`
//! daemon that cleared its environment included, exactly as when its jail ended with it.
//!
//! The server is not reachable from its commands: it is not dumpable (its `/proc/<pid>/fd`,
//! `mem` and ptrace are closed to processes of the same user, which have no capability), no
//! other process of the jail holds its stdin and stdout (there is no bwrap init), a namespace's
//! init takes no signal it has no handler for, and an answer must carry the token of the
//! request it answers, so a command that wrote a forged answer somewhere could not have it
//! taken for its own. Whatever goes wrong on
//! the way (the server dies, an answer does not parse, a token differs) fails the command and
//! ends the jail; the sandbox's next command starts a new one.

use std::io::{BufRead, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::exec::{ExecResult, TAG_VAR};
use super::jail::Jail;

/// The argument that makes `bench` a jail's server (see `main.rs`).
pub const SERVE_ARG: &str = "__jail-serve";

/// One command for the server.
#[derive(Debug, Serialize, Deserialize)]
pub struct Request {
    pub script: String,
    pub cwd: String,
    pub env: Vec<(String, String)>,
    pub timeout_ms: u64,
    pub token: String,
}

/// The server's answer to one [`Request`], followed on the stream by `len` bytes of output.
#[derive(Debug, Serialize, Deserialize)]
pub struct Answer {
    pub token: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub len: usize,
}

/// The first line the server writes, once it is ready for requests.
pub const READY: &str = "bench-jail-ready";

/// Serves requests on stdin until it closes (the sandbox is gone): the body of
/// `bench __jail-serve`, run only inside a jail.
pub fn serve() -> std::io::Result<()> {
    // Commands run as the same user: without this, they could open /proc/<server>/fd/1.
    nix::sys::prctl::set_dumpable(false).map_err(std::io::Error::from)?;
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{READY}")?;
    out.flush()?;
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let request: Request = serde_json::from_str(&line).map_err(std::io::Error::other)?;
        let (answer, output) = run(&request)?;
        serde_json::to_writer(&mut out, &answer).map_err(std::io::Error::other)?;
        out.write_all(b"\n")?;
        out.write_all(&output)?;
        out.flush()?;
    }
}

/// Runs one request: its answer and output, with nothing of it left running.
fn run(request: &Request) -> std::io::Result<(Answer, Vec<u8>)> {
    let (mut reader, writer) = std::io::pipe()?;
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg(&request.script)
        .current_dir(&request.cwd)
        .env_clear()
        .envs(request.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .process_group(0)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            let output = format!("bench: cannot start sh in the jail: {e}\n").into_bytes();
            return Ok((answer(request, None, false, &output), output));
        }
    };
    let read = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = reader.read_to_end(&mut buf);
        buf
    });
    // The time limit: a watchdog that ends everything when it passes first.
    let (done, wait) = mpsc::channel::<()>();
    let limit = Duration::from_millis(request.timeout_ms);
    let watchdog = std::thread::spawn(move || {
        let struck = matches!(
            wait.recv_timeout(limit),
            Err(mpsc::RecvTimeoutError::Timeout)
        );
        if struck {
            kill_all_others();
        }
        struck
    });
    let status = child.wait();
    let _ = done.send(());
    let timed_out = watchdog.join().unwrap_or(true);
    // Whatever the command left running goes, so its output's pipe closes too; the server is
    // the jail's init, so the orphans' zombies are its to reap.
    kill_all_others();
    reap();
    let output = read.join().unwrap_or_default();
    let exit_code = status.ok().and_then(|s| s.code());
    Ok((answer(request, exit_code, timed_out, &output), output))
}

fn answer(request: &Request, exit_code: Option<i32>, timed_out: bool, output: &[u8]) -> Answer {
    Answer {
        token: request.token.clone(),
        exit_code,
        timed_out,
        len: output.len(),
    }
}

/// Reaps every child that has ended (orphans of the jail come to its init, the server).
fn reap() {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    while let Ok(status) = waitpid(nix::unistd::Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
        if status == WaitStatus::StillAlive {
            return;
        }
    }
}

/// Kills every process of the jail but the server (its init), until none is left (a process
/// forking while the first signal went round is caught by the next).
fn kill_all_others() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let me = std::process::id();
    for _ in 0..100 {
        let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
        // A zombie counts as gone: the server reaps them all once the command's `sh` is
        // waited for.
        if !others_alive(me) {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Whether a process other than the server (`me`, the jail's init) is alive in the jail's
/// `/proc` (a zombie is dead, waiting for the server to reap it).
fn others_alive(me: u32) -> bool {
    let Ok(entries) = fs_err::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            return false;
        };
        if pid == 1 || pid == me {
            return false;
        }
        let stat = fs_err::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat"));
        // The state follows the command name's closing parenthesis.
        stat.ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, rest)| rest.trim_start().to_string())
            })
            .is_some_and(|rest| !rest.starts_with('Z'))
    })
}

/// bench's end of a sandbox's jail: the bwrap process running [`serve`], its stdin and stdout.
#[derive(Debug)]
pub struct Served {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::BufReader<tokio::process::ChildStdout>,
}

/// How long a new jail may take to say it is ready.
const START_LIMIT: Duration = Duration::from_secs(60);

/// What the server takes beyond a command's own limit before bench ends the jail itself.
const GRACE: Duration = Duration::from_secs(30);

impl Served {
    /// Starts `jail`'s server `exe` (a bench binary, shown read-only inside) in `cwd`, tagged
    /// `tag` like a command, and waits until it is ready.
    pub async fn start(exe: &Path, jail: &Jail, cwd: &Path, tag: &str) -> std::io::Result<Served> {
        use tokio::io::AsyncBufReadExt;
        let mut jail = jail.clone();
        jail.visible.push(exe.to_path_buf());
        let argv = vec![exe.display().to_string(), SERVE_ARG.to_string()];
        // The server is the jail's init: no bwrap init beside it holds (dumpable) copies of
        // its stdin and stdout, and no command can signal it.
        let Some((program, args)) = jail.wrap_with(cwd, argv, &["--as-pid-1"]) else {
            return Err(std::io::Error::other("bwrap is unavailable"));
        };
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .current_dir(cwd)
            .env_clear()
            .env(TAG_VAR, tag)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("the jail's pipes are missing"));
        };
        let mut served = Served {
            child,
            stdin,
            stdout: tokio::io::BufReader::new(stdout),
        };
        let mut line = String::new();
        let ready = tokio::time::timeout(START_LIMIT, served.stdout.read_line(&mut line)).await;
        match ready {
            Ok(Ok(_)) if line.trim_end() == READY => Ok(served),
            Ok(Err(e)) => Err(e),
            _ => {
                served.end();
                Err(std::io::Error::other(format!(
                    "the jail's server did not start (it said {:?})",
                    line.trim_end()
                )))
            }
        }
    }

    /// Runs `script` in `cwd` with exactly `env` and the limit `timeout`; `Err` when the jail
    /// failed (it is then ended and must not be used again). Cancellation ends the jail too.
    pub async fn exec(
        &mut self,
        script: &str,
        cwd: &Path,
        env: Vec<(String, String)>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> std::io::Result<ExecResult> {
        let start = std::time::Instant::now();
        let request = Request {
            script: script.to_string(),
            cwd: cwd.display().to_string(),
            env,
            timeout_ms: timeout.as_millis().min(u64::MAX as u128) as u64,
            token: token()?,
        };
        let answered = tokio::select! {
            a = self.ask(&request) => a,
            _ = tokio::time::sleep(timeout.saturating_add(GRACE)) => {
                Err(std::io::Error::other("the jail's server did not answer in time"))
            }
            _ = cancel.cancelled() => {
                self.end();
                return Ok(ExecResult {
                    exit_code: None,
                    output: Vec::new(),
                    timed_out: false,
                    cancelled: true,
                    duration: start.elapsed(),
                });
            }
        };
        let (answer, output) = answered.inspect_err(|_| self.end())?;
        Ok(ExecResult {
            exit_code: answer.exit_code,
            output,
            timed_out: answer.timed_out,
            cancelled: false,
            duration: start.elapsed(),
        })
    }

    /// Sends `request` and reads its answer, which must carry its token.
    async fn ask(&mut self, request: &Request) -> std::io::Result<(Answer, Vec<u8>)> {
        use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
        let mut line = serde_json::to_vec(request).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.stdin.write_all(&line).await?;
        self.stdin.flush().await?;
        let mut head = String::new();
        if self.stdout.read_line(&mut head).await? == 0 {
            return Err(std::io::Error::other("the jail ended"));
        }
        let answer: Answer = serde_json::from_str(&head)
            .map_err(|e| std::io::Error::other(format!("the jail's answer does not parse: {e}")))?;
        if answer.token != request.token {
            return Err(std::io::Error::other(
                "the jail's answer is not for this command",
            ));
        }
        let mut output = vec![0; answer.len];
        self.stdout.read_exact(&mut output).await?;
        Ok((answer, output))
    }

    /// Ends the jail and everything in it (its PID namespace dies with bwrap's init).
    pub fn end(&mut self) {
        if let Some(pid) = self.child.id() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.child.start_kill();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.end();
    }
}

/// A fresh random token (128 bits, hex), or an error without the system's randomness.
fn token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
