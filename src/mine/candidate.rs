//! One candidate commit, judged: its changed files split into tests and the fix, its tests run
//! before and after the fix in the local backend's jail (`backend/jail.rs`: no network, the host
//! read-only, the mined repository and the output directory hidden), and FAIL_TO_PASS /
//! PASS_TO_PASS derived as SWE-bench-Live's validation does: a test passes after the fix only if
//! it passed in both runs after it; FAIL_TO_PASS = passes after and not before, PASS_TO_PASS =
//! passes before and after.
//!
//! Not here: listing commits (`mod.rs`) and writing tasks (`write.rs`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::MineError;
use super::detect::{TestPlan, is_test_file, plan};
use super::git::{Commit, Repo};
use crate::backend::{LocalSandbox, Sandbox, shell_quote};
use crate::parsers::{TestStatus, parse_log};

/// A commit that becomes a task.
#[derive(Debug, Clone)]
pub struct Mined {
    pub commit: Commit,
    pub base: String,
    pub plan: TestPlan,
    pub test_patch: String,
    pub gold_patch: String,
    pub fail_to_pass: Vec<String>,
    pub pass_to_pass: Vec<String>,
}

/// What became of a candidate.
#[derive(Debug, Clone)]
pub enum Outcome {
    Kept(Box<Mined>),
    Rejected(String),
}

/// Where and how a candidate's tests run.
pub struct RunEnv<'a> {
    /// Scratch space (trees and workspaces), removed by the caller.
    pub tmp: &'a Path,
    /// Directories the tests must not see.
    pub hidden: &'a [PathBuf],
    pub timeout: Duration,
    pub cancel: &'a CancellationToken,
}

/// The result of one run of the tests.
struct Run {
    passed: BTreeSet<String>,
    seen: usize,
    exit_code: Option<i32>,
    timed_out: bool,
    tail: String,
}

/// Judges `commit` of `repo`; `progress` reports the step being run.
pub async fn judge(
    repo: &Repo,
    commit: &Commit,
    env: &RunEnv<'_>,
    progress: &dyn Fn(&str),
) -> Result<Outcome, MineError> {
    let reject = |r: &str| Ok(Outcome::Rejected(r.to_string()));
    let base = match commit.parents.as_slice() {
        [p] => p.clone(),
        [] => return reject("a root commit has no parent to be the base"),
        _ => return reject("a merge commit"),
    };
    let changed = repo.changed_files(&base, &commit.sha)?;
    let (tests, source): (Vec<String>, Vec<String>) =
        changed.into_iter().partition(|p| is_test_file(p));
    if tests.is_empty() {
        return reject("it changes no test file");
    }
    if source.is_empty() {
        return reject("it changes only tests (no fix to be the gold patch)");
    }
    let plan = match plan(repo, &commit.sha, &tests) {
        Ok(p) => p,
        Err(why) => return Ok(Outcome::Rejected(why)),
    };
    let test_patch = repo.diff(&base, &commit.sha, &tests)?;
    let gold_patch = repo.diff(&base, &commit.sha, &source)?;
    let failed = |message: String| MineError::Run {
        sha: commit.sha.clone(),
        message,
    };
    let tree = env
        .tmp
        .join(format!("tree-{}", &base[..12.min(base.len())]));
    if !tree.exists() {
        repo.write_tree(&base, &tree)?;
    }
    progress(&format!("{}: before the fix", plan.framework.name()));
    let before = run(env, &tree, &[&test_patch], &plan)
        .await
        .map_err(failed)?;
    if before.timed_out {
        return reject(&format!(
            "its tests timed out before the fix (after {}s)",
            env.timeout.as_secs()
        ));
    }
    let mut after = Vec::new();
    for i in 1..=2 {
        progress(&format!("{}: after the fix ({i}/2)", plan.framework.name()));
        let r = run(env, &tree, &[&test_patch, &gold_patch], &plan)
            .await
            .map_err(failed)?;
        if r.timed_out {
            return reject(&format!(
                "its tests timed out after the fix (after {}s)",
                env.timeout.as_secs()
            ));
        }
        after.push(r);
    }
    let passed_after: BTreeSet<&String> = after[0].passed.intersection(&after[1].passed).collect();
    let flaky = after[0]
        .passed
        .symmetric_difference(&after[1].passed)
        .count();
    if after[0].seen == 0 {
        return reject(&format!(
            "no test result after the fix (the `{}` parser read nothing; exit code {}): {}",
            plan.framework.parser(),
            after[0]
                .exit_code
                .map_or("none".to_string(), |c| c.to_string()),
            after[0].tail
        ));
    }
    let fail_to_pass: Vec<String> = passed_after
        .iter()
        .filter(|t| !before.passed.contains(**t))
        .map(|t| t.to_string())
        .collect();
    let pass_to_pass: Vec<String> = passed_after
        .iter()
        .filter(|t| before.passed.contains(**t))
        .map(|t| t.to_string())
        .collect();
    if fail_to_pass.is_empty() {
        return reject(&if passed_after.is_empty() {
            format!(
                "no test passes after the fix{}",
                if flaky > 0 { " (flaky tests)" } else { "" }
            )
        } else {
            "no FAIL_TO_PASS test: every test that passes after the fix already passed before it"
                .to_string()
        });
    }
    Ok(Outcome::Kept(Box::new(Mined {
        commit: commit.clone(),
        base,
        plan,
        test_patch,
        gold_patch,
        fail_to_pass,
        pass_to_pass,
    })))
}

/// Runs the plan's tests once in a fresh jailed workspace of `tree` with `patches` applied.
async fn run(
    env: &RunEnv<'_>,
    tree: &Path,
    patches: &[&str],
    plan: &TestPlan,
) -> Result<Run, String> {
    let s = LocalSandbox::create(
        env.tmp,
        tree,
        env.hidden,
        &crate::backend::Network::None,
        env.cancel,
    )
    .await
    .map_err(|e| e.to_string())?;
    let state = s.paths().state.clone();
    let mut script = String::from("set -e\n");
    let mut files = Vec::new();
    for (i, p) in patches.iter().enumerate() {
        if p.trim().is_empty() {
            continue;
        }
        let path = format!("{state}/patch-{i}.diff");
        script.push_str(&format!(
            "git apply --whitespace=nowarn {}\n",
            shell_quote(&path)
        ));
        files.push((path, p.as_bytes().to_vec()));
    }
    let refs: Vec<(&str, &[u8], u32)> = files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice(), 0o644))
        .collect();
    s.put_files(&refs).await.map_err(|e| e.to_string())?;
    let applied = s
        .exec(&script, &[], Duration::from_secs(120), env.cancel)
        .await
        .map_err(|e| e.to_string())?;
    if applied.exit_code != Some(0) {
        return Err(format!(
            "the commit's own diff does not apply to its parent: {}",
            String::from_utf8_lossy(&applied.output).trim()
        ));
    }
    let r = s
        .exec(&plan.test_cmd, &[], env.timeout, env.cancel)
        .await
        .map_err(|e| e.to_string())?;
    let log = String::from_utf8_lossy(&r.output).into_owned();
    let statuses = parse_log(plan.framework.parser(), &log).map_err(|e| e.to_string())?;
    let passed = statuses
        .sorted()
        .into_iter()
        .filter(|(_, st)| *st == TestStatus::Pass)
        .map(|(n, _)| n.to_string())
        .collect();
    let tail = log
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(200)
        .collect();
    Ok(Run {
        passed,
        seen: statuses.len(),
        exit_code: r.exit_code,
        timed_out: r.timed_out,
        tail,
    })
}
