//! `bench mine`: tasks from a repository's own history. Commits whose message matches a pattern
//! (`fix` by default) and that change tests and code are candidates; each one's tests run before
//! and after the fix in the local backend's jail, and those with at least one FAIL_TO_PASS test
//! become task directories in bench's local format.
//!
//! - `git.rs`: reading the repository (commits, diffs, trees);
//! - `detect.rs`: which files are tests, and the framework that runs them;
//! - `candidate.rs`: judging one commit (the runs, FAIL_TO_PASS / PASS_TO_PASS);
//! - `write.rs`: writing a task directory atomically.
//!
//! Not here: grading mined tasks (they are local tasks: `protocols/local.rs`).

mod candidate;
pub mod detect;
pub mod git;
mod write;

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use candidate::{Mined, Outcome};
pub use git::{Commit, GitError, Repo};

/// Why mining stopped.
#[derive(Debug, thiserror::Error)]
pub enum MineError {
    /// The repository cannot be read (not a repository, a git failure).
    #[error(transparent)]
    Git(#[from] GitError),
    /// An option the user must fix.
    #[error("{0}")]
    Options(String),
    /// A candidate's tests could not be run (the sandbox, the parser, a diff that does not
    /// apply to its own parent).
    #[error("cannot run the tests of {sha}: {message}")]
    Run { sha: String, message: String },
    /// A task or the scratch space could not be written.
    #[error("{0}")]
    Write(String),
}

/// What to mine.
#[derive(Debug, Clone)]
pub struct MineOptions {
    pub repo: PathBuf,
    /// Only commits committed at or after this instant (RFC 3339).
    pub since: Option<jiff::Timestamp>,
    /// The message pattern (`git log -i --grep`).
    pub grep: String,
    pub out: PathBuf,
    /// Stop after this many kept tasks (newest first).
    pub limit: Option<usize>,
    /// How long one run of a candidate's tests may take.
    pub timeout: Duration,
}

/// One candidate's line of the summary.
#[derive(Debug, Clone)]
pub struct Judged {
    pub sha: String,
    pub subject: String,
    /// The task's id when kept.
    pub kept: Option<KeptTask>,
    /// Why not, when rejected.
    pub rejected: Option<String>,
}

#[derive(Debug, Clone)]
pub struct KeptTask {
    pub instance_id: String,
    pub framework: &'static str,
    pub fail_to_pass: usize,
    pub pass_to_pass: usize,
}

/// Parses `--since`: a date (`2026-07-01`, midnight UTC) or an RFC 3339 instant.
pub fn parse_since(s: &str) -> Result<jiff::Timestamp, String> {
    if let Ok(ts) = s.parse::<jiff::Timestamp>() {
        return Ok(ts);
    }
    if let Ok(d) = s.parse::<jiff::civil::Date>() {
        return d
            .to_zoned(jiff::tz::TimeZone::UTC)
            .map(|z| z.timestamp())
            .map_err(|e| e.to_string());
    }
    Err(format!(
        "`{s}` is not a date: give a day such as 2026-07-01 (midnight UTC) or an instant such as 2026-07-01T09:30:00Z"
    ))
}

/// The id of a task mined from `sha` of the repository `name` (`owner/name`).
pub fn instance_id(name: &str, sha: &str) -> String {
    let (owner, repo) = name.split_once('/').unwrap_or(("local", name));
    format!("{owner}__{repo}-{}", &sha[..12.min(sha.len())])
}

/// Mines `opts.repo`; `progress` gets a line per step (stderr). Returns every candidate's
/// outcome, newest first.
pub fn mine(opts: &MineOptions, progress: &dyn Fn(&str)) -> Result<Vec<Judged>, MineError> {
    let repo = Repo::open(&opts.repo)?;
    if opts.grep.trim().is_empty() {
        return Err(MineError::Options(
            "--grep is empty: give a pattern such as `fix`".into(),
        ));
    }
    let out = crate::backend::jail::absolute(&opts.out);
    if out.starts_with(&repo.path) && !out.starts_with(repo.path.join(".git")) {
        // Allowed, but the output would then be part of the repository's work tree: warn.
        progress(&format!(
            "note: the output {} is inside the repository's work tree",
            out.display()
        ));
    }
    let name = repo.name();
    let mut commits = repo.commits(&opts.grep)?;
    if let Some(since) = opts.since {
        commits.retain(|c| c.date.parse::<jiff::Timestamp>().is_ok_and(|d| d >= since));
    }
    crate::backend::jail::warn_if_unavailable(&crate::events::Events::default());
    let tmp = tempfile::Builder::new()
        .prefix("bench-mine-")
        .tempdir()
        .map_err(|e| MineError::Write(format!("cannot create a scratch directory: {e}")))?;
    let hidden = vec![repo.path.clone(), out.clone()];
    let cancel = CancellationToken::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| MineError::Run {
            sha: String::new(),
            message: format!("cannot start the runtime: {e}"),
        })?;
    let env = candidate::RunEnv {
        tmp: tmp.path(),
        hidden: &hidden,
        timeout: opts.timeout,
        cancel: &cancel,
    };
    let total = commits.len();
    progress(&format!(
        "{total} commits of {} match `{}`{}",
        repo.path.display(),
        opts.grep,
        opts.since
            .map(|s| format!(" since {s}"))
            .unwrap_or_default()
    ));
    let mut judged = Vec::new();
    let mut kept = 0;
    for (i, c) in commits.iter().enumerate() {
        if opts.limit.is_some_and(|l| kept >= l) {
            break;
        }
        let short = &c.sha[..12.min(c.sha.len())];
        let subject = c.message.lines().next().unwrap_or("").to_string();
        let step = |what: &str| progress(&format!("[{}/{total}] {short} {what}", i + 1));
        step(&subject);
        let outcome = runtime.block_on(candidate::judge(&repo, c, &env, &step))?;
        let line = match outcome {
            Outcome::Kept(m) => {
                let id = instance_id(&name, &c.sha);
                write::write_task(&out, &id, &name, &repo, &m).map_err(MineError::Write)?;
                kept += 1;
                step(&format!("kept as {id}"));
                Judged {
                    sha: c.sha.clone(),
                    subject,
                    kept: Some(KeptTask {
                        instance_id: id,
                        framework: m.plan.framework.name(),
                        fail_to_pass: m.fail_to_pass.len(),
                        pass_to_pass: m.pass_to_pass.len(),
                    }),
                    rejected: None,
                }
            }
            Outcome::Rejected(why) => {
                step(&format!("rejected: {why}"));
                Judged {
                    sha: c.sha.clone(),
                    subject,
                    kept: None,
                    rejected: Some(why),
                }
            }
        };
        judged.push(line);
    }
    Ok(judged)
}

/// The summary printed on stdout: one line per candidate, then the counts.
pub fn summary(judged: &[Judged], out: &Path) -> String {
    let mut s = String::new();
    for j in judged {
        let short = &j.sha[..12.min(j.sha.len())];
        match (&j.kept, &j.rejected) {
            (Some(k), _) => s.push_str(&format!(
                "kept      {short}  {}: {} ({}, FAIL_TO_PASS {}, PASS_TO_PASS {})\n",
                j.subject, k.instance_id, k.framework, k.fail_to_pass, k.pass_to_pass
            )),
            (None, why) => s.push_str(&format!(
                "rejected  {short}  {}: {}\n",
                j.subject,
                why.as_deref().unwrap_or("")
            )),
        }
    }
    let kept = judged.iter().filter(|j| j.kept.is_some()).count();
    s.push_str(&format!(
        "{kept} kept, {} rejected; tasks in {}\n",
        judged.len() - kept,
        out.display()
    ));
    s
}
