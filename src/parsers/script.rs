//! Runs a dataset-supplied Python log parser (SWE-bench-Live MultiLang's `log_parser` field:
//! source text defining `parser(log: str) -> dict[str, str]`) in an isolated subprocess.
//!
//! # Isolation
//!
//! * The interpreter is `python3` found on the **parent's** `PATH` and resolved once to its
//!   real executable (`sys.executable`, which also sees through pyenv-style shims); the child
//!   is then started by absolute path with `-I` (isolated mode: no `PYTHON*` variables, no
//!   user site-packages, no script directory on `sys.path`) and an **empty environment** —
//!   no `HOME`, no `PATH`, no secrets.
//! * Its working directory is a fresh temporary directory, deleted afterwards. The parser
//!   source, the log and a small wrapper are written there as files; the log is never put on
//!   the command line. stdin is `/dev/null`.
//! * Before the script is compiled the wrapper sets `RLIMIT_AS` (address space; default
//!   2 GiB) with `resource.setrlimit`, plus `RLIMIT_CORE = 0` and `RLIMIT_FSIZE` (1 GiB) so a
//!   runaway script cannot fill the disk. An allocation beyond the limit raises `MemoryError`
//!   in the script (→ [`ScriptError::Raised`]) or kills the interpreter (→
//!   [`ScriptError::Crashed`]).
//! * The child leads its own process group; when the time limit (default 120 s) expires the
//!   whole group is killed with `SIGKILL` (→ [`ScriptError::TimedOut`]). The group is also
//!   killed after a normal exit, so no helper process outlives the call.
//!
//! This protects against accidents (hangs, runaway memory, stray output, environment
//! leaks), not against a hostile script: it runs as the calling user, can read that user's
//! files and, as root, could raise its own limits.
//!
//! # Protocol
//!
//! The wrapper runs the script in a fresh namespace with `__name__ = "log_parser"` (so an
//! `if __name__ == "__main__":` block does not run), calls `parser(log)` and writes a single
//! JSON object to its original stdout, which is a file in the temporary directory:
//! `{"ok": {name: status}}` or `{"error": "<traceback>"}`. Everything the script itself
//! prints (to `sys.stdout`, `sys.stderr` or file descriptor 1) goes to the stderr file,
//! which is reported (its last 64 KiB) when the interpreter crashes. Keys and values of the
//! returned dict are converted with `str()`; values are returned as the raw strings — use
//! [`normalize_live_status`](super::normalize_live_status) to grade them.

use fs_err as fs;
use std::collections::BTreeMap;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Resource limits for [`run_script_parser`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptLimits {
    /// Wall-clock limit for the whole subprocess, interpreter start-up included.
    pub timeout: Duration,
    /// Address-space limit (`RLIMIT_AS`) in bytes.
    pub memory_bytes: u64,
}

impl Default for ScriptLimits {
    /// 120 seconds and 2 GiB.
    fn default() -> Self {
        ScriptLimits {
            timeout: Duration::from_secs(120),
            memory_bytes: 2 << 30,
        }
    }
}

/// Why a parser script produced no result.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The script raised an exception (while being loaded or in `parser`), did not define a
    /// callable `parser`, or `parser` returned something other than a dict.
    #[error("log parser script failed:\n{traceback}")]
    Raised {
        /// Python's formatted traceback (or an explanation for a missing `parser`).
        traceback: String,
    },
    /// The time limit expired; the interpreter and its process group were killed.
    #[error("log parser script timed out after {after:?}")]
    TimedOut {
        /// The limit that expired.
        after: Duration,
    },
    /// The interpreter ended without reporting a result, e.g. killed at the memory limit,
    /// by a signal, or through `os._exit`.
    #[error("log parser script crashed ({status}){}", stderr_suffix(.stderr))]
    Crashed {
        /// How the interpreter ended.
        status: ExitStatus,
        /// The end of what it wrote to stderr (at most 64 KiB).
        stderr: String,
    },
    /// The interpreter could not be found or started, or the temporary files could not be
    /// written or read.
    #[error("could not run the log parser script: {0}")]
    Spawn(#[from] io::Error),
}

fn stderr_suffix(stderr: &str) -> String {
    let trimmed = stderr.trim();
    if trimmed.is_empty() {
        String::new()
    } else {
        format!(":\n{trimmed}")
    }
}

/// The wrapper executed by the interpreter. argv: memory limit in bytes.
const WRAPPER: &str = r#"
import os, sys
_out = os.dup(1)
os.dup2(2, 1)
def _emit(obj):
    import json
    data = json.dumps(obj, ensure_ascii=True).encode("ascii")
    while data:
        data = data[os.write(_out, data):]
try:
    import resource
    _mem = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (_mem, _mem))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 30, 1 << 30))
except BaseException:
    import traceback
    _emit({"error": "could not set resource limits:\n" + traceback.format_exc()})
    os._exit(0)
def _run():
    with open("log_parser.py", encoding="utf-8") as f:
        source = f.read()
    with open("log.txt", encoding="utf-8", newline="") as f:
        log = f.read()
    namespace = {"__name__": "log_parser"}
    exec(compile(source, "log_parser.py", "exec"), namespace)
    parser = namespace.get("parser")
    if not callable(parser):
        raise TypeError("the script does not define a callable `parser(log)`")
    result = parser(log)
    if not isinstance(result, dict):
        raise TypeError("parser(log) returned %s, not a dict" % type(result).__name__)
    return {str(k): str(v) for k, v in result.items()}
try:
    _result = {"ok": _run()}
except BaseException:
    import traceback
    _result = {"error": traceback.format_exc()}
try:
    sys.stdout.flush()
    sys.stderr.flush()
except BaseException:
    pass
_emit(_result)
os._exit(0)
"#;

/// Runs `script`'s `parser(log)` in an isolated `python3` subprocess (see the module docs)
/// and returns the dict it returned, with keys and values as strings.
pub fn run_script_parser(
    script: &str,
    log: &str,
    limits: &ScriptLimits,
) -> Result<BTreeMap<String, String>, ScriptError> {
    let python = python3()?;
    let dir = tempfile::Builder::new()
        .prefix("bench-log-parser-")
        .tempdir()?;
    fs::write(dir.path().join("log_parser.py"), script)?;
    fs::write(dir.path().join("log.txt"), log)?;
    fs::write(dir.path().join("wrapper.py"), WRAPPER)?;
    let stdout_path = dir.path().join("stdout.json");
    let stderr_path = dir.path().join("stderr.txt");
    let stdout = fs::File::create(&stdout_path)?;
    let stderr = fs::File::create(&stderr_path)?;

    // In a jail where bwrap works (no network, its own PID namespace: bench's environment in
    // /proc is out of reach), else a plain subprocess.
    let argv = vec![
        python.display().to_string(),
        "-I".to_string(),
        "wrapper.py".to_string(),
        limits.memory_bytes.to_string(),
    ];
    let here = crate::backend::jail::absolute(dir.path());
    let jail = crate::backend::jail::Jail {
        writable: here.clone(),
        hidden: Vec::new(),
        network: false,
        visible: Vec::new(),
    };
    let mut cmd = match jail.wrap(&here, argv.clone()) {
        Some((bwrap, args)) => {
            let mut c = Command::new(bwrap);
            c.args(args);
            c
        }
        None => {
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..]);
            c
        }
    };
    let mut child = cmd
        .current_dir(dir.path())
        .env_clear()
        .stdin(Stdio::null())
        .stdout(std::fs::File::from(stdout))
        .stderr(std::fs::File::from(stderr))
        .process_group(0)
        .spawn()?;
    let group = Pid::from_raw(i32::try_from(child.id()).map_err(io::Error::other)?);

    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        let elapsed = started.elapsed();
        if elapsed >= limits.timeout {
            break None;
        }
        std::thread::sleep(pause.min(limits.timeout - elapsed));
        pause = (pause * 2).min(Duration::from_millis(25));
    };
    // Whether it finished or not, nothing started by the script may outlive the call. The
    // group may already be gone (ESRCH); that is fine.
    let _ = killpg(group, Signal::SIGKILL);
    let Some(status) = status else {
        let _ = child.wait();
        return Err(ScriptError::TimedOut {
            after: limits.timeout,
        });
    };

    let output = fs::read(&stdout_path)?;
    if status.success()
        && let Ok(envelope) = serde_json::from_slice::<Envelope>(&output)
    {
        return match envelope {
            Envelope::Ok(map) => Ok(map),
            Envelope::Error(traceback) => Err(ScriptError::Raised { traceback }),
        };
    }
    Err(ScriptError::Crashed {
        status,
        stderr: read_tail(&stderr_path, 64 * 1024)?,
    })
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum Envelope {
    Ok(BTreeMap<String, String>),
    Error(String),
}

fn read_tail(path: &Path, max: u64) -> io::Result<String> {
    let mut file = fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len > max {
        file.seek(SeekFrom::Start(len - max))?;
    }
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The real `python3` executable, resolved once per process.
fn python3() -> Result<PathBuf, ScriptError> {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PYTHON
        .get_or_init(resolve_python3)
        .clone()
        .map_err(|msg| ScriptError::Spawn(io::Error::new(io::ErrorKind::NotFound, msg)))
}

fn resolve_python3() -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .map(|dir| dir.join("python3"))
        .find(|p| fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
        .ok_or_else(|| String::from("python3 not found on PATH"))?;
    // Ask the interpreter for its real executable; this runs with the parent's environment
    // so that shims (pyenv, asdf) can do their work.
    let out = Command::new(&found)
        .args(["-I", "-c", "import sys; sys.stdout.write(sys.executable)"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("could not run {}: {e}", found.display()))?;
    let real = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() && !real.is_empty() && Path::new(&real).is_absolute() {
        Ok(PathBuf::from(real))
    } else {
        Ok(found)
    }
}
