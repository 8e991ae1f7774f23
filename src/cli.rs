//! Command-line arguments (clap types only).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// bench: declarative, cached pipelines for coding-agent benchmarks.
#[derive(Debug, Parser)]
#[command(name = "bench", version, about, long_about = None)]
pub struct Cli {
    /// The store to use instead of `.bench` beside the manifest.
    #[arg(long, env = "BENCH_STORE", global = true)]
    pub store: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a manifest and report every problem at once; runs nothing.
    Validate { file: PathBuf },
    /// Show what `apply` would run and why (exit 0: nothing to run, 2: work pending).
    Plan {
        file: PathBuf,
        /// Give each node to run its reason: new, or the inputs that changed (old -> new).
        #[arg(long)]
        explain: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Also show the paired tasks needed to detect this difference in resolve rate against
        /// the baseline, in percentage points (`5pts`, `5`).
        #[arg(long, value_name = "POINTS")]
        detect: Option<String>,
        /// The baseline's expected resolve rate for the power figures, in percent (`40%`, `40`;
        /// default 50%).
        #[arg(long, value_name = "PERCENT")]
        baseline_rate: Option<String>,
        /// The stored pairs `apply --rerun` would run again (`timed-out`, `errored`, `failed`
        /// or a team, comma-separated): shown to run, with why.
        #[arg(long, value_name = "OUTCOMES|TEAMS")]
        rerun: Option<String>,
        /// With --rerun: the reruns' deadline, as `apply --timeout` takes it.
        #[arg(long, value_name = "DURATION", requires = "rerun")]
        timeout: Option<String>,
    },
    /// Run what the store does not hold, then write the reports.
    Apply {
        file: PathBuf,
        /// No progress output.
        #[arg(long, short)]
        quiet: bool,
        /// Re-hash every blob a cached result needs; a corrupt one is removed and the node
        /// that wrote it recomputes in this apply (without it, blobs are checked by stat).
        #[arg(long)]
        verify: bool,
        /// Fail (exit 1) when a report measured nothing (no task drawn, every gold patch
        /// invalid, no task with a result of every team); without it that is a warning.
        #[arg(long)]
        strict: bool,
        /// `human`: bars or lines on stderr, the headline on stdout; `json`: one event per
        /// line on stdout (schemas/events.schema.json, docs/events.md).
        #[arg(long, value_enum, default_value_t = MessageFormat::Human)]
        message_format: MessageFormat,
        /// Run these stored pairs again as a new attempt: `timed-out`, `errored` (the agent
        /// crashed), `failed` (graded unresolved, timed-out and errored ones included) or a
        /// team's name, comma-separated. Earlier attempts are kept; the latest counts.
        #[arg(long, value_name = "OUTCOMES|TEAMS")]
        rerun: Option<String>,
        /// With --rerun: the rerun solves' deadline (`30m`, `2h`) instead of their stage's
        /// `timeout` (their keys do not change; the report names each attempt's deadline).
        #[arg(long, value_name = "DURATION", requires = "rerun")]
        timeout: Option<String>,
    },
    /// Re-hash every blob the manifest's cached results need; remove the corrupt ones (the
    /// next apply recomputes their nodes). Exit 0 when all verify, 2 when some did not.
    Verify { file: PathBuf },
    /// Per stage: what is done, failed and pending, and where the report is (`--node`: one
    /// node's state, key, last error, stored files and inputs).
    Status {
        file: PathBuf,
        /// Show this node (an address as `plan --explain` and apply print it).
        #[arg(long, value_name = "ADDRESS")]
        node: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Remove store entries that no manifest's current plan or last applies reach (dry run
    /// unless --delete).
    Gc {
        /// Manifests whose store to collect (default: the store given by --store).
        files: Vec<PathBuf>,
        /// Really delete.
        #[arg(long)]
        delete: bool,
        /// Keep what the last N applies of each manifest used (default: each manifest's
        /// `[store] keep_runs`, 3 unless set; 0 keeps only what the current plans use).
        #[arg(long, value_name = "N")]
        keep_runs: Option<usize>,
        /// Also the Docker images bench built (agent and stripped images) on the task images
        /// this store knows.
        #[arg(long)]
        images: bool,
        /// With --images: also the task images bench pulled that no recorded manifest uses,
        /// least recently used first.
        #[arg(long, requires = "images")]
        pulled: bool,
        #[arg(long)]
        json: bool,
    },
    /// Pull the task images a docker manifest needs that the daemon lacks (with the Docker
    /// config's credentials), without running anything.
    Pull {
        file: PathBuf,
        /// No progress output.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Remove every container bench created (label bench=1) on the Docker daemon: leftovers of
    /// runs that were killed. Running applies lose their containers too.
    Clean {
        /// A manifest whose `[backend] host` to use (default: DOCKER_HOST, else the local socket).
        file: Option<PathBuf>,
    },
    /// Print the manifest's JSON Schema (`--report`: the schema of `report.json`; `--events`:
    /// of a line of `apply --message-format json`).
    Schema {
        /// Print the schema of `report.json` instead.
        #[arg(long)]
        report: bool,
        /// Print the schema of the events of `apply --message-format json` instead.
        #[arg(long, conflicts_with = "report")]
        events: bool,
    },
    /// Several experiments side by side on their common tasks, from the store (runs nothing):
    /// the manifest fields that differ, each team's numbers, deltas and McNemar tests.
    Report {
        /// The manifests to compare; the first is the reference.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// A local web viewer of an experiment's results, served from the store on 127.0.0.1
    /// (read-only; prints its URL, opens nothing): the report's tables, each task, each pair's
    /// diff, grading and trajectory. `--static DIR` writes it as files that open from disk.
    View {
        /// A manifest, or the report directory it wrote (default: the current directory).
        #[arg(default_value = ".")]
        target: PathBuf,
        /// Listen on this port (default: a free one).
        #[arg(long)]
        port: Option<u16>,
        /// Write the viewer to DIR as self-contained files instead of serving it.
        #[arg(long = "static", value_name = "DIR", conflicts_with = "port")]
        static_dir: Option<PathBuf>,
        /// Also show this experiment (a manifest or report directory) side by side with the
        /// first, the pairs whose outcome changed first.
        #[arg(long, value_name = "OTHER")]
        compare: Option<PathBuf>,
    },
    /// List the sampled tasks, with counts per language and month.
    Tasks {
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Write teams' patches (from the store) as SWE-bench predictions JSON lines
    /// (`model_name_or_path` = team name), sorted by instance id: one team to one file (or
    /// stdout), several teams to one file per team, so an evaluator sees one prediction per
    /// instance.
    Export {
        file: PathBuf,
        /// Export only this team (repeatable; default: every team with stored patches).
        #[arg(long = "team", value_name = "NAME")]
        teams: Vec<String>,
        /// One team: the output file (default: stdout). Several: the directory that gets
        /// `<team>.jsonl` each (default: `predictions/<manifest name>/` beside the manifest).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Mine tasks from a git repository's history: commits that fix something and change tests,
    /// kept when their tests fail before the fix and pass after it (run in the local jail),
    /// written as local task directories.
    Mine {
        /// The git repository.
        repo: PathBuf,
        /// Only commits committed at or after this date (2026-07-01, midnight UTC) or instant
        /// (2026-07-01T09:30:00Z).
        #[arg(long)]
        since: Option<String>,
        /// Commits whose message matches this pattern (case-insensitive, as `git log --grep`).
        #[arg(long, default_value = "fix")]
        grep: String,
        /// Where the task directories go.
        #[arg(long, default_value = "mined-tasks")]
        out: PathBuf,
        /// Stop after this many kept tasks (newest commits first).
        #[arg(long)]
        limit: Option<usize>,
        /// How long one run of a candidate's tests may take.
        #[arg(long, default_value = "10m")]
        timeout: String,
    },
    /// The shared remote cache of `[cache]`: keys, uploads, downloads, what it holds.
    Cache {
        #[command(subcommand)]
        action: CacheCommand,
    },
    /// Parse a test log with a built-in parser (or a dataset's Python parser script) and print
    /// the statuses as JSON.
    ParseLog {
        /// A built-in parser: pytest, unittest, cargo, go, jest, vitest, node-test, tap, junit-xml, ...
        /// (an unknown name lists the closest one)
        #[arg(long, conflicts_with = "script")]
        parser: Option<String>,
        /// A Python file defining `parser(log) -> dict`, run isolated.
        #[arg(long)]
        script: Option<PathBuf>,
        /// The log file.
        file: PathBuf,
    },
    /// Run one shipped node here (what an `[execution]` engine's job runs on a cluster node)
    ///
    /// Rebuilds the job from its key and the shared cache (every part verified), refuses it if
    /// this machine's backend differs from the job's, runs it here and uploads its signed record.
    Worker {
        /// The node's kind.
        #[arg(long, value_enum)]
        kind: WorkerKind,
        /// The node's key (its job is stored under it in the cache).
        #[arg(long)]
        key: String,
        /// The shared cache's URL (`file:///shared/cache`, `s3://bucket/prefix`, ...).
        #[arg(long)]
        cache: String,
        /// The node's address in the apply that shipped it (for labels and logs).
        #[arg(long, default_value = "")]
        address: String,
        /// This machine's store (default: `bench-worker` under the temp directory).
        #[arg(long)]
        store: Option<PathBuf>,
        /// A solve's share of its stage's remaining budget, in dollars.
        #[arg(long)]
        budget_share: Option<f64>,
        /// CPUs of a container (docker backend).
        #[arg(long, default_value_t = 2.0)]
        cpus: f64,
        /// Where to write how the worker ended (JSON), for the apply that shipped the job.
        #[arg(long)]
        report: Option<PathBuf>,
        /// The largest object downloaded from the cache.
        #[arg(long, default_value = "1GiB")]
        max_object_size: String,
    },
}

/// The kinds of node a worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WorkerKind {
    Solve,
    Grade,
}

/// How `apply` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MessageFormat {
    Human,
    Json,
}

/// `bench cache ...`.
#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Make this machine's signing key (a file, mode 0600) and print its public key, the line
    /// other machines add to their `[cache] trust`.
    Keygen {
        /// Where to write it (default: BENCH_CACHE_KEY_FILE, else ~/.config/bench/cache.key).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Upload what the manifest's store holds that the remote lacks, signed with this
    /// machine's key.
    Push {
        file: PathBuf,
        /// No progress output.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Fetch from the remote what the manifest's plan needs, verified, without running anything.
    Pull {
        file: PathBuf,
        /// No progress output.
        #[arg(long, short)]
        quiet: bool,
    },
    /// What the remote holds (entries per signer, blobs), and this machine's key.
    Status {
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
}
