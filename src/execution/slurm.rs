//! A typed client of a Slurm cluster: submit a job ([`Slurm::submit`], `sbatch`), read the
//! states of jobs ([`Slurm::states`], `squeue`, then `sacct`), cancel jobs ([`Slurm::cancel`],
//! `scancel`). It shells out to Slurm's commands, which every cluster has and whose text
//! formats have been stable for a decade; no Rust crate is worth using (the existing ones bind
//! libslurm's C API, which changes with every release and must match the cluster's version, or
//! speak slurmrestd, which most clusters do not run). The commands read their configuration
//! from `SLURM_CONF` and reach slurmctld themselves: [`Slurm::with_env`] sets it,
//! [`Slurm::with_bin_dir`] names where the commands are when they are not on `PATH`.
//!
//! Not here: what a job runs (the worker) nor when to resubmit (the dispatcher, which asks
//! [`JobState::is_lost`]). Every command has a timeout and is killed when it is over.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::str::FromStr;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// How long one Slurm command may run before it is killed (slurmctld answers in milliseconds;
/// `MessageTimeout` defaults to 10 s and a command retries a few times).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// The error squeue prints when the only job it was asked about is unknown to slurmctld.
const UNKNOWN_JOB: &str = "Invalid job id specified";

/// The error sacct prints on a cluster without accounting (no slurmdbd).
const NO_ACCOUNTING: &str = "accounting storage is disabled";

/// The fields [`Slurm::states`] asks squeue for, `|` after each (no padding, no truncation).
/// A task of an array job is named by `ArrayJobID` and `ArrayTaskID` (its `JobID` is a number
/// of its own once it starts, the array's before); any other job by `JobID` (its
/// `ArrayTaskID` is `N/A`).
const SQUEUE_FORMAT: &str =
    "JobID:|,ArrayJobID:|,ArrayTaskID:|,State:|,NodeList:|,Reason:|,exit_code:|";

/// The fields [`Slurm::states`] asks sacct for.
/// `JobID` names a task of an array job `1234_5`, as bench asks for it.
const SACCT_FORMAT: &str = "JobID,State,NodeList,ExitCode";

/// A Slurm job: its numeric id, and for a task of an array job its index (`1234_5`, as
/// squeue, sacct and scancel name it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId {
    job: u64,
    task: Option<u32>,
}

impl JobId {
    /// A job that is not part of an array.
    pub fn single(job: u64) -> JobId {
        JobId { job, task: None }
    }

    /// Task `task` of array job `job`.
    pub fn array_task(job: u64, task: u32) -> JobId {
        JobId {
            job,
            task: Some(task),
        }
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.task {
            None => write!(f, "{}", self.job),
            Some(t) => write!(f, "{}_{t}", self.job),
        }
    }
}

impl FromStr for JobId {
    type Err = std::num::ParseIntError;

    fn from_str(s: &str) -> Result<JobId, Self::Err> {
        Ok(match s.trim().split_once('_') {
            None => JobId::single(s.trim().parse()?),
            Some((job, task)) => JobId::array_task(job.parse()?, task.parse()?),
        })
    }
}

/// As its text (`"1234"`, `"1234_5"`); a bare number (a spool an earlier bench wrote) reads too.
impl serde::Serialize for JobId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for JobId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<JobId, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Either {
            Number(u64),
            Text(String),
        }
        match Either::deserialize(d)? {
            Either::Number(n) => Ok(JobId::single(n)),
            Either::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// How a job's batch script ended: its exit code, or the signal that killed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobExit {
    pub code: u8,
    pub signal: u8,
}

impl JobExit {
    /// From a raw wait status (squeue's `exit_code`).
    fn from_wait_status(status: u32) -> JobExit {
        let signal = (status & 0x7f) as u8;
        if signal == 0 {
            JobExit {
                code: ((status >> 8) & 0xff) as u8,
                signal: 0,
            }
        } else {
            JobExit { code: 0, signal }
        }
    }

    /// From sacct's and scontrol's `code:signal`.
    fn from_pair(s: &str) -> Option<JobExit> {
        let (code, signal) = s.trim().split_once(':')?;
        Some(JobExit {
            code: code.parse().ok()?,
            signal: signal.parse().ok()?,
        })
    }
}

impl fmt::Display for JobExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.signal == 0 {
            write!(f, "exit {}", self.code)
        } else {
            write!(f, "signal {}", self.signal)
        }
    }
}

/// Where a job is, as far as Slurm tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    /// Waiting: for resources, its begin time (a requeued job waits a little), a hold; or
    /// suspended. `reason` is Slurm's (`Resources`, `Priority`, `BeginTime`, ...).
    Pending {
        reason: String,
    },
    /// Allocated and running (or starting, or finishing its epilog) on `node`.
    Running {
        node: String,
    },
    /// Its script exited 0.
    Completed {
        node: Option<String>,
    },
    /// Its script exited non-zero or was killed by a signal.
    Failed {
        exit: JobExit,
        node: Option<String>,
    },
    Cancelled,
    /// It ran past its time limit (or its deadline).
    Timeout,
    /// Its node failed (or did not boot) and Slurm did not requeue it.
    NodeFail,
    Preempted,
    OutOfMemory,
    /// slurmctld has forgotten it (`MinJobAge` after it ended) and there is no accounting to
    /// ask: it ended, nobody knows how.
    Gone,
}

impl JobState {
    /// Whether the job will not change state again.
    pub fn is_finished(&self) -> bool {
        !matches!(self, JobState::Pending { .. } | JobState::Running { .. })
    }

    /// Whether the job ended without a verdict of its own, for a reason outside it (a node
    /// lost, preemption, forgotten): worth submitting again.
    pub fn is_lost(&self) -> bool {
        matches!(
            self,
            JobState::NodeFail | JobState::Preempted | JobState::Gone
        )
    }

    /// The state of one job from Slurm's state name (`JOB_STATE_STRING` in Slurm's
    /// `slurm.h`; sacct appends "by UID" to CANCELLED), its node list, its reason and exit.
    fn from_slurm(state: &str, nodes: &str, reason: &str, exit: JobExit) -> Option<JobState> {
        let node = match nodes.trim() {
            "" | "None assigned" | "(null)" => None,
            n => Some(n.to_string()),
        };
        let state = state.split_whitespace().next().unwrap_or("");
        Some(match state {
            "PENDING" | "REQUEUED" | "REQUEUE_FED" | "REQUEUE_HOLD" | "RESV_DEL_HOLD" => {
                JobState::Pending {
                    reason: reason.trim().to_string(),
                }
            }
            "SUSPENDED" | "STOPPED" => JobState::Pending {
                reason: state.to_lowercase(),
            },
            "RUNNING" | "CONFIGURING" | "COMPLETING" | "SIGNALING" | "STAGE_OUT" | "RESIZING" => {
                JobState::Running {
                    node: node.unwrap_or_default(),
                }
            }
            "COMPLETED" => JobState::Completed { node },
            "FAILED" | "SPECIAL_EXIT" => JobState::Failed { exit, node },
            "CANCELLED" | "REVOKED" => JobState::Cancelled,
            "TIMEOUT" | "DEADLINE" => JobState::Timeout,
            "NODE_FAIL" | "BOOT_FAIL" => JobState::NodeFail,
            "PREEMPTED" => JobState::Preempted,
            "OUT_OF_MEMORY" => JobState::OutOfMemory,
            _ => return None,
        })
    }
}

/// One job to submit.
#[derive(Debug, Clone, Default)]
pub struct Submit {
    /// The job's name (`--job-name`).
    pub name: String,
    /// The command the job runs, executed by `/bin/sh` after the exports of `env`.
    pub argv: Vec<String>,
    /// The file that receives the job's stdout and stderr (taken literally: a `%` is not one
    /// of Slurm's patterns).
    pub output: PathBuf,
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    /// The job's time limit, rounded up to whole seconds (Slurm counts minutes).
    pub time_limit: Option<Duration>,
    /// CPUs for the job's one task (`--cpus-per-task`).
    pub cpus: Option<u32>,
    /// Memory for the job, in MB (`--mem`).
    pub mem_mb: Option<u64>,
    /// Whether Slurm may requeue the job itself when its node fails (`--requeue` or
    /// `--no-requeue`; `None`: the cluster's `JobRequeue`, which allows it by default). A
    /// requeued job keeps its id and goes back to pending; a job that may not be requeued ends
    /// [`JobState::NodeFail`].
    pub requeue: Option<bool>,
    /// Extra sbatch options, passed verbatim before the script.
    pub extra: Vec<String>,
    /// Variables exported to the job by its script (on top of the environment sbatch
    /// propagates: the submitter's, by default).
    pub env: Vec<(String, String)>,
}

/// A Slurm command that did not do its work.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    #[error("could not run {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("{program} failed ({}): {stderr}", match code {
        Some(c) => format!("exit {c}"),
        None => "killed by a signal".to_string(),
    })]
    Failed {
        program: String,
        /// Its exit code; `None` when a signal killed it.
        code: Option<i32>,
        /// Its stderr, lines joined by "; ".
        stderr: String,
    },
    #[error("{program} did not finish within {}s", timeout.as_secs())]
    TimedOut { program: String, timeout: Duration },
    #[error("unexpected output from {program}: {output:?}")]
    Output { program: String, output: String },
    #[error("cannot write the job script of {name}: {problem}")]
    Script { name: String, problem: String },
}

/// A Slurm cluster, reached through its commands.
#[derive(Debug, Clone)]
pub struct Slurm {
    /// Set on every command (`SLURM_CONF`, ...).
    env: Vec<(String, String)>,
    /// Where the commands are; `None`: on `PATH`.
    bin_dir: Option<PathBuf>,
    timeout: Duration,
}

impl Default for Slurm {
    fn default() -> Slurm {
        Slurm::new()
    }
}

impl Slurm {
    /// The cluster the commands on `PATH` reach with the environment bench runs in.
    pub fn new() -> Slurm {
        Slurm {
            env: Vec::new(),
            bin_dir: None,
            timeout: COMMAND_TIMEOUT,
        }
    }

    /// Sets `env` on every command (e.g. `SLURM_CONF`).
    pub fn with_env(mut self, env: Vec<(String, String)>) -> Slurm {
        self.env = env;
        self
    }

    /// Runs the commands from `dir`.
    pub fn with_bin_dir(mut self, dir: impl Into<PathBuf>) -> Slurm {
        self.bin_dir = Some(dir.into());
        self
    }

    /// Kills a command that runs longer than `timeout` (two minutes by default).
    pub fn with_timeout(mut self, timeout: Duration) -> Slurm {
        self.timeout = timeout;
        self
    }

    /// Submits `job` (`sbatch --parsable`, its script on stdin) and returns its id.
    pub async fn submit(&self, job: &Submit) -> Result<JobId, SlurmError> {
        self.sbatch(&sbatch_args(job), &script(job)?).await
    }

    /// Runs sbatch with `args` and `script` on stdin; the id it prints.
    async fn sbatch(&self, args: &[String], script: &str) -> Result<JobId, SlurmError> {
        let out = self.run("sbatch", args, Some(script.as_bytes())).await?;
        if !out.status.success() {
            return Err(failed("sbatch", &out));
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        // `--parsable` prints "ID" or "ID;CLUSTER".
        let id = stdout.lines().next().unwrap_or("").split(';').next();
        id.and_then(|id| id.parse().ok())
            .ok_or_else(|| SlurmError::Output {
                program: "sbatch".into(),
                output: stdout.into_owned(),
            })
    }

    /// Submits `jobs` as one array job (`sbatch --array=0-N`, the first job's name): task `i`
    /// runs `jobs[i]`'s command, its output in `jobs[i].output`; returns the tasks' ids in
    /// order. The jobs must share their options and variables ([`Submit::options`]; the
    /// caller groups them); one job is submitted as itself.
    pub async fn submit_array(&self, jobs: &[Submit]) -> Result<Vec<JobId>, SlurmError> {
        let [first, rest @ ..] = jobs else {
            return Ok(Vec::new());
        };
        if rest.is_empty() {
            return Ok(vec![self.submit(first).await?]);
        }
        if let Some(other) = rest
            .iter()
            .find(|j| j.options() != first.options() || j.env != first.env)
        {
            return Err(script_problem(
                other,
                format!(
                    "its options differ from those of {}, its array's first job",
                    first.name
                ),
            ));
        }
        let mut args = vec![
            "--parsable".to_string(),
            format!("--job-name={}", first.name),
            format!("--array=0-{}", jobs.len() - 1),
            // Each task sends its output to its own file (the script's branch); this is where
            // a task that never reaches its branch writes.
            "--output=/dev/null".to_string(),
        ];
        args.extend(first.options());
        let script = array_script(jobs)?;
        let job = self.sbatch(&args, &script).await?;
        Ok((0..jobs.len() as u32)
            .map(|task| JobId::array_task(job.job, task))
            .collect())
    }

    /// The state of each job of `ids`: from squeue while slurmctld knows the job (pending,
    /// running, or ended less than `MinJobAge` ago: `--states=all`, which `scontrol show job`
    /// would only repeat), then from sacct when the cluster has accounting, else
    /// [`JobState::Gone`].
    pub async fn states(&self, ids: &[JobId]) -> Result<BTreeMap<JobId, JobState>, SlurmError> {
        let mut states = BTreeMap::new();
        if ids.is_empty() {
            return Ok(states);
        }
        let out = self
            .run(
                "squeue",
                &[
                    "--noheader".into(),
                    // A row per task of an array job, pending ones too (not `1234_[2-5]`).
                    "--array".into(),
                    "--states=all".into(),
                    format!("--jobs={}", join_ids(ids)),
                    format!("--Format={SQUEUE_FORMAT}"),
                ],
                None,
            )
            .await?;
        if out.status.success() {
            states.extend(parse_squeue(&String::from_utf8_lossy(&out.stdout))?);
        } else if !stderr_of(&out).contains(UNKNOWN_JOB) {
            return Err(failed("squeue", &out));
        }
        let missing: Vec<JobId> = ids
            .iter()
            .copied()
            .filter(|id| !states.contains_key(id))
            .collect();
        if !missing.is_empty() {
            states.extend(self.accounted(&missing).await?);
        }
        states.retain(|id, _| ids.contains(id));
        for id in missing {
            states.entry(id).or_insert(JobState::Gone);
        }
        Ok(states)
    }

    /// The states sacct has for `ids` (none on a cluster without accounting).
    async fn accounted(&self, ids: &[JobId]) -> Result<BTreeMap<JobId, JobState>, SlurmError> {
        let out = self
            .run(
                "sacct",
                &[
                    "--noheader".into(),
                    "--parsable2".into(),
                    "--allocations".into(),
                    format!("--jobs={}", join_ids(ids)),
                    format!("--format={SACCT_FORMAT}"),
                ],
                None,
            )
            .await?;
        if out.status.success() {
            parse_sacct(&String::from_utf8_lossy(&out.stdout))
        } else if stderr_of(&out).contains(NO_ACCOUNTING) {
            Ok(BTreeMap::new())
        } else {
            Err(failed("sacct", &out))
        }
    }

    /// Cancels `ids` (`scancel`); a job that has ended or is unknown is not an error.
    pub async fn cancel(&self, ids: &[JobId]) -> Result<(), SlurmError> {
        if ids.is_empty() {
            return Ok(());
        }
        let args: Vec<String> = ids.iter().map(JobId::to_string).collect();
        let out = self.run("scancel", &args, None).await?;
        let stderr = stderr_of(&out);
        let benign = |line: &str| {
            line.contains("already completing or completed") || line.contains(UNKNOWN_JOB)
        };
        if out.status.success() || stderr.lines().all(benign) {
            Ok(())
        } else {
            Err(failed("scancel", &out))
        }
    }

    /// Runs `program` with `args` (and `stdin`), within the timeout; its output whatever its
    /// exit status.
    async fn run(
        &self,
        program: &str,
        args: &[String],
        stdin: Option<&[u8]>,
    ) -> Result<Output, SlurmError> {
        let path = match &self.bin_dir {
            Some(dir) => dir.join(program),
            None => Path::new(program).to_path_buf(),
        };
        let mut cmd = Command::new(&path);
        cmd.args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let spawn_error = |source| SlurmError::Spawn {
            program: path.display().to_string(),
            source,
        };
        let mut child = cmd.spawn().map_err(spawn_error)?;
        // stdin is written while the output is read (a command may write before it has read
        // everything); a command that exits without reading it all (sbatch refusing an option)
        // is judged by its exit status and stderr, not by the broken pipe.
        let pipe = child.stdin.take();
        let feed = async move {
            let (Some(input), Some(mut pipe)) = (stdin, pipe) else {
                return Ok(());
            };
            match pipe.write_all(input).await {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                written => written,
            }
        };
        let work = async {
            let (fed, out) = tokio::join!(feed, child.wait_with_output());
            fed.and(out)
        };
        match tokio::time::timeout(self.timeout, work).await {
            Ok(out) => out.map_err(spawn_error),
            Err(_) => Err(SlurmError::TimedOut {
                program: program.to_string(),
                timeout: self.timeout,
            }),
        }
    }
}

/// sbatch's arguments for `job` (its script comes on stdin).
fn sbatch_args(job: &Submit) -> Vec<String> {
    let mut args = vec![
        "--parsable".to_string(),
        format!("--job-name={}", job.name),
        // Slurm expands `%j` and friends in the path; `%%` is a literal `%`.
        format!(
            "--output={}",
            job.output.display().to_string().replace('%', "%%")
        ),
    ];
    args.extend(job.options());
    args
}

impl Submit {
    /// The sbatch options of the job but its name and output: what the jobs of one array
    /// share.
    pub fn options(&self) -> Vec<String> {
        let mut args = Vec::new();
        let mut opt = |name: &str, value: Option<String>| {
            if let Some(v) = value {
                args.push(format!("--{name}={v}"));
            }
        };
        opt("partition", self.partition.clone());
        opt("account", self.account.clone());
        opt("qos", self.qos.clone());
        opt("time", self.time_limit.map(slurm_time));
        opt("cpus-per-task", self.cpus.map(|c| c.to_string()));
        opt("mem", self.mem_mb.map(|m| format!("{m}M")));
        match self.requeue {
            Some(true) => args.push("--requeue".into()),
            Some(false) => args.push("--no-requeue".into()),
            None => {}
        }
        args.extend(self.extra.iter().cloned());
        args
    }
}

/// A duration as Slurm's `days-hours:minutes:seconds`, rounded up to a second.
fn slurm_time(d: Duration) -> String {
    let s = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    format!(
        "{}-{:02}:{:02}:{:02}",
        s / 86_400,
        s / 3600 % 24,
        s / 60 % 60,
        s % 60
    )
}

/// The batch script of `job`: its exports, then `exec` of its argv, every word shell-quoted.
fn script(job: &Submit) -> Result<String, SlurmError> {
    let mut s = String::from("#!/bin/sh\n");
    s.push_str(&exports(job)?);
    s.push_str(&format!("exec {}\n", command(job)?));
    Ok(s)
}

/// The batch script of an array job whose task `i` runs `jobs[i]`: the first job's exports
/// (the jobs share them), then a branch per task sending its output to its job's file and
/// `exec`ing its command. A task without a branch fails.
fn array_script(jobs: &[Submit]) -> Result<String, SlurmError> {
    let mut s = String::from("#!/bin/sh\n");
    s.push_str(&exports(&jobs[0])?);
    s.push_str("case \"$SLURM_ARRAY_TASK_ID\" in\n");
    for (i, job) in jobs.iter().enumerate() {
        let output = shlex::try_quote(&job.output.to_string_lossy())
            .map_err(|e| script_problem(job, format!("its output: {e}")))?
            .into_owned();
        s.push_str(&format!(
            "{i}) exec >{output} 2>&1; exec {} ;;\n",
            command(job)?
        ));
    }
    s.push_str("esac\necho \"no command for array task $SLURM_ARRAY_TASK_ID\" >&2\nexit 2\n");
    Ok(s)
}

fn script_problem(job: &Submit, problem: String) -> SlurmError {
    SlurmError::Script {
        name: job.name.clone(),
        problem,
    }
}

/// `export` lines for `job`'s variables, values shell-quoted.
fn exports(job: &Submit) -> Result<String, SlurmError> {
    let mut s = String::new();
    for (k, v) in &job.env {
        let valid = k
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(script_problem(job, format!("{k:?} is not a variable name")));
        }
        let v = shlex::try_quote(v).map_err(|e| script_problem(job, format!("${k}: {e}")))?;
        s.push_str(&format!("export {k}={v}\n"));
    }
    Ok(s)
}

/// `job`'s argv as one shell-quoted command line.
fn command(job: &Submit) -> Result<String, SlurmError> {
    if job.argv.is_empty() {
        return Err(script_problem(job, "no command".into()));
    }
    shlex::try_join(job.argv.iter().map(String::as_str))
        .map_err(|e| script_problem(job, format!("its command: {e}")))
}

fn join_ids(ids: &[JobId]) -> String {
    ids.iter()
        .map(JobId::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// A command's stderr on one line: its lines joined by "; ".
fn stderr_of(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    if stderr.is_empty() {
        "no stderr".into()
    } else {
        stderr
    }
}

fn failed(program: &str, out: &Output) -> SlurmError {
    SlurmError::Failed {
        program: program.to_string(),
        code: out.status.code(),
        stderr: stderr_of(out),
    }
}

/// Rows of `squeue --Format=` [`SQUEUE_FORMAT`].
fn parse_squeue(stdout: &str) -> Result<BTreeMap<JobId, JobState>, SlurmError> {
    let bad = |line: &str| SlurmError::Output {
        program: "squeue".into(),
        output: line.to_string(),
    };
    let mut states = BTreeMap::new();
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('|').collect();
        let [id, array, task, state, nodes, reason, exit, ..] = f[..] else {
            return Err(bad(line));
        };
        let id = match task.trim() {
            "N/A" | "" => id.parse().map_err(|_| bad(line))?,
            task => match task.parse() {
                Ok(task) => JobId::array_task(array.trim().parse().map_err(|_| bad(line))?, task),
                // Tasks of an array job as one row (`2-5`, `[2-5%4]`): not one bench asked for.
                Err(_) => continue,
            },
        };
        let exit = JobExit::from_wait_status(exit.trim().parse().map_err(|_| bad(line))?);
        let state = JobState::from_slurm(state, nodes, reason, exit).ok_or_else(|| bad(line))?;
        states.insert(id, state);
    }
    Ok(states)
}

/// Rows of `sacct --parsable2 --format=` [`SACCT_FORMAT`]; a job's last row wins.
fn parse_sacct(stdout: &str) -> Result<BTreeMap<JobId, JobState>, SlurmError> {
    let bad = |line: &str| SlurmError::Output {
        program: "sacct".into(),
        output: line.to_string(),
    };
    let mut states = BTreeMap::new();
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('|').collect();
        let [id, state, nodes, exit, ..] = f[..] else {
            return Err(bad(line));
        };
        if id.contains('[') {
            continue;
        }
        let id: JobId = id.parse().map_err(|_| bad(line))?;
        let exit = JobExit::from_pair(exit).ok_or_else(|| bad(line))?;
        let state = JobState::from_slurm(state, nodes, "", exit).ok_or_else(|| bad(line))?;
        states.insert(id, state);
    }
    Ok(states)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u64) -> JobId {
        JobId::single(n)
    }

    /// A directory holding a fake Slurm command `name` running `script`.
    fn fake_command(name: &str, script: &str) -> tempfile::TempDir {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        fs_err::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    fn submit() -> Submit {
        Submit {
            name: "n".into(),
            argv: vec!["true".into()],
            output: "/o".into(),
            ..Submit::default()
        }
    }

    #[tokio::test]
    async fn commands_come_from_the_bin_dir_with_the_env_and_the_script_on_stdin() {
        // The fake sbatch checks its environment and its script, and answers as a federated
        // cluster does ("ID;CLUSTER").
        let dir = fake_command(
            "sbatch",
            r#"[ "$SLURM_CONF" = /c/slurm.conf ] || exit 9
grep -qx 'exec true' || exit 8
echo '42;other'"#,
        );
        let slurm = Slurm::new()
            .with_bin_dir(dir.path())
            .with_env(vec![("SLURM_CONF".into(), "/c/slurm.conf".into())]);
        assert_eq!(slurm.submit(&submit()).await.unwrap(), id(42));
    }

    #[tokio::test]
    async fn a_hung_command_times_out_and_a_missing_one_is_named() {
        let dir = fake_command("squeue", "exec sleep 30");
        let slurm = Slurm::new()
            .with_bin_dir(dir.path())
            .with_timeout(Duration::from_millis(300));
        let err = slurm.states(&[id(1)]).await.unwrap_err();
        assert!(matches!(err, SlurmError::TimedOut { .. }), "{err}");
        let err = slurm.submit(&submit()).await.unwrap_err();
        assert!(
            matches!(&err, SlurmError::Spawn { .. }) && err.to_string().contains("sbatch"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn sbatch_output_that_is_no_id_is_an_error() {
        let dir = fake_command("sbatch", "echo 'Submitted batch job 7'");
        let slurm = Slurm::new().with_bin_dir(dir.path());
        let err = slurm.submit(&submit()).await.unwrap_err();
        assert!(matches!(err, SlurmError::Output { .. }), "{err}");
    }

    #[tokio::test]
    async fn a_refusal_before_the_script_is_read_is_the_commands_own_error() {
        let dir = fake_command(
            "sbatch",
            "echo 'sbatch: error: bad option' >&2; echo 'sbatch: error: twice' >&2; exit 1",
        );
        let slurm = Slurm::new().with_bin_dir(dir.path());
        let err = slurm.submit(&submit()).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "sbatch failed (exit 1): sbatch: error: bad option; sbatch: error: twice"
        );
    }

    #[test]
    fn squeue_rows_become_states() {
        // As Slurm 22.05 prints them (tests/slurm.rs runs the real thing).
        let out = "4|4|N/A|FAILED|n2|NonZeroExitCode|768|\n\
                   3|3|N/A|NODE_FAIL|n1|NodeDown|0|\n\
                   5|5|N/A|PENDING||ReqNodeNotAvail, UnavailableNodes:n1|0|\n\
                   6|6|N/A|RUNNING|n1|None|0|\n\
                   7|7|N/A|COMPLETED|n2|None|0|\n\
                   8|8|N/A|FAILED|n1|NonZeroExitCode|9|\n\
                   12|10|1|RUNNING|n2|None|0|\n\
                   10|10|2|PENDING||Resources|0|\n\
                   10|10|3-4|PENDING||Resources|0|\n";
        let s = parse_squeue(out).unwrap();
        assert_eq!(
            s[&JobId::array_task(10, 1)],
            JobState::Running { node: "n2".into() }
        );
        assert_eq!(
            s[&JobId::array_task(10, 2)],
            JobState::Pending {
                reason: "Resources".into()
            }
        );
        assert_eq!(s.len(), 8, "a range of tasks is no job: {s:?}");
        assert_eq!(
            s[&id(4)],
            JobState::Failed {
                exit: JobExit { code: 3, signal: 0 },
                node: Some("n2".into())
            }
        );
        assert_eq!(s[&id(3)], JobState::NodeFail);
        assert_eq!(
            s[&id(5)],
            JobState::Pending {
                reason: "ReqNodeNotAvail, UnavailableNodes:n1".into()
            }
        );
        assert_eq!(s[&id(6)], JobState::Running { node: "n1".into() });
        assert_eq!(
            s[&id(7)],
            JobState::Completed {
                node: Some("n2".into())
            }
        );
        let JobState::Failed { exit, .. } = &s[&id(8)] else {
            panic!("{:?}", s[&id(8)])
        };
        assert_eq!(exit.to_string(), "signal 9");
    }

    #[test]
    fn unknown_states_and_short_rows_are_errors() {
        assert!(parse_squeue("4|4|N/A|SOMETHING_NEW|n1|None|0|\n").is_err());
        assert!(parse_squeue("4|4|N/A|RUNNING\n").is_err());
        assert!(parse_sacct("x|COMPLETED|n1|0:0\n").is_err());
    }

    #[test]
    fn sacct_rows_become_states() {
        let out = "12|CANCELLED by 0|n1|0:15\n\
                   13|COMPLETED|n2|0:0\n\
                   14|FAILED|n1|2:0\n\
                   15|PENDING|None assigned|0:0\n\
                   16|OUT_OF_MEMORY|n1|0:125\n\
                   17_3|TIMEOUT|n2|0:0\n\
                   18_[2-4]|PENDING|None assigned|0:0\n";
        let s = parse_sacct(out).unwrap();
        assert_eq!(s[&JobId::array_task(17, 3)], JobState::Timeout);
        assert_eq!(s.len(), 6, "a range of pending tasks is no job: {s:?}");
        assert_eq!(s[&id(12)], JobState::Cancelled);
        assert_eq!(
            s[&id(13)],
            JobState::Completed {
                node: Some("n2".into())
            }
        );
        assert_eq!(
            s[&id(14)],
            JobState::Failed {
                exit: JobExit { code: 2, signal: 0 },
                node: Some("n1".into())
            }
        );
        assert_eq!(s[&id(15)], JobState::Pending { reason: "".into() });
        assert_eq!(s[&id(16)], JobState::OutOfMemory);
    }

    #[test]
    fn lost_and_finished() {
        let running = JobState::Running { node: "n1".into() };
        assert!(!running.is_finished() && !running.is_lost());
        for lost in [JobState::NodeFail, JobState::Preempted, JobState::Gone] {
            assert!(lost.is_finished() && lost.is_lost(), "{lost:?}");
        }
        for verdict in [
            JobState::Completed { node: None },
            JobState::Cancelled,
            JobState::Timeout,
            JobState::OutOfMemory,
        ] {
            assert!(verdict.is_finished() && !verdict.is_lost(), "{verdict:?}");
        }
    }

    #[test]
    fn the_script_quotes_every_word() {
        let job = Submit {
            name: "n".into(),
            argv: vec!["bench".into(), "worker".into(), "it's $HOME".into()],
            env: vec![("A_1".into(), "x y;z".into())],
            ..Submit::default()
        };
        assert_eq!(
            script(&job).unwrap(),
            "#!/bin/sh\nexport A_1='x y;z'\nexec bench worker \"it's \"'$HOME'\n"
        );
        let bad = Submit {
            env: vec![("1A".into(), "x".into())],
            ..job.clone()
        };
        assert!(script(&bad).is_err());
        let empty = Submit {
            argv: vec![],
            ..job
        };
        assert!(script(&empty).is_err());
    }

    #[test]
    fn sbatch_args_name_every_option() {
        let job = Submit {
            name: "grade".into(),
            argv: vec!["true".into()],
            output: "/o/100%.log".into(),
            partition: Some("p".into()),
            account: Some("a".into()),
            qos: Some("q".into()),
            time_limit: Some(Duration::from_millis(90_061_500)),
            cpus: Some(2),
            mem_mb: Some(512),
            requeue: Some(false),
            extra: vec!["--nodelist=n1".into()],
            env: vec![],
        };
        assert_eq!(
            sbatch_args(&job),
            [
                "--parsable",
                "--job-name=grade",
                "--output=/o/100%%.log",
                "--partition=p",
                "--account=a",
                "--qos=q",
                "--time=1-01:01:02",
                "--cpus-per-task=2",
                "--mem=512M",
                "--no-requeue",
                "--nodelist=n1",
            ]
        );
    }

    #[test]
    fn job_ids_read_and_write_as_slurm_names_them_and_old_spools_still_read() {
        assert_eq!("1234".parse::<JobId>().unwrap(), id(1234));
        assert_eq!(
            "1234_5".parse::<JobId>().unwrap(),
            JobId::array_task(1234, 5)
        );
        assert!("1234_[5-6]".parse::<JobId>().is_err());
        assert_eq!(JobId::array_task(1234, 5).to_string(), "1234_5");
        let json = serde_json::to_string(&JobId::array_task(7, 0)).unwrap();
        assert_eq!(json, r#""7_0""#);
        assert_eq!(
            serde_json::from_str::<JobId>(&json).unwrap(),
            JobId::array_task(7, 0)
        );
        assert_eq!(serde_json::from_str::<JobId>("42").unwrap(), id(42));
    }

    #[test]
    fn an_array_script_runs_each_task_s_own_command_into_its_own_output() {
        let job = |n: &str| Submit {
            name: format!("job-{n}"),
            argv: vec!["bench".into(), "worker".into(), format!("it's {n}")],
            output: format!("/spool/{n}.out").into(),
            env: vec![("A".into(), "1".into())],
            ..Submit::default()
        };
        let s = array_script(&[job("a"), job("b")]).unwrap();
        assert_eq!(
            s,
            "#!/bin/sh\nexport A=1\ncase \"$SLURM_ARRAY_TASK_ID\" in\n\
             0) exec >/spool/a.out 2>&1; exec bench worker \"it's a\" ;;\n\
             1) exec >/spool/b.out 2>&1; exec bench worker \"it's b\" ;;\n\
             esac\necho \"no command for array task $SLURM_ARRAY_TASK_ID\" >&2\nexit 2\n"
        );
        // Run as Slurm runs it: each task its own command into its own file; no other task.
        let dir = tempfile::tempdir().unwrap();
        let echo = |n: &str| Submit {
            argv: vec!["echo".into(), "ran".into(), n.into()],
            output: dir.path().join(format!("{n}.out")),
            ..job(n)
        };
        let s = array_script(&[echo("a"), echo("b")]).unwrap();
        let run = |task: &str| {
            std::process::Command::new("sh")
                .args(["-c", &s])
                .env("SLURM_ARRAY_TASK_ID", task)
                .output()
                .unwrap()
        };
        for (task, n) in [("0", "a"), ("1", "b")] {
            assert!(run(task).status.success());
            let out = fs_err::read_to_string(dir.path().join(format!("{n}.out"))).unwrap();
            assert_eq!(out, format!("ran {n}\n"));
        }
        let unknown = run("2");
        assert_eq!(unknown.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&unknown.stderr).contains("array task 2"));
    }

    #[tokio::test]
    async fn jobs_of_one_array_must_share_their_options() {
        let a = submit();
        let b = Submit {
            partition: Some("other".into()),
            ..submit()
        };
        let err = Slurm::new().submit_array(&[a, b]).await.unwrap_err();
        assert!(err.to_string().contains("options differ"), "{err}");
    }
}
