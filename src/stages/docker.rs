//! Grading and solving on the `docker` backend.
//!
//! Grading is the `swe-bench-live` protocol, ported from SWE-bench-Live's `evaluation.py` and
//! RepoLaunch's `apply_patch`: a fresh container of the task's image; the hidden test patch, then
//! the candidate patch, each applied with `git apply --reject --whitespace=nowarn` in /testbed
//! (at the git root when /testbed is not it); `rebuild_cmds`, then `test_cmds`, each joined with
//! " ; "; the log is the output of `print_cmds` (rows without them: the tests run as
//! `bash run_test.sh > testlog.out 2>&1` and `testlog.out` is printed); the row's parser; the
//! verdict. Seed deviations kept: a candidate that does not apply fully is not resolved; a test
//! patch that does not apply, and a parser script that raises or hangs, are grading errors; a
//! run past the budget is unresolved with `timed_out`.
//!
//! Solving: each agent gets a fresh container of its image (the task's, or the agent image built
//! on it) whose repository is stripped of every ref, remote, tag, reflog entry, stash and
//! unreachable object, then checked fail-closed; the patch is everything changed since a start
//! snapshot. The team logic is `solve.rs`'s, shared with the local backend.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::backend::ExecResult;
use crate::backend::docker::{Container, ContainerSpec, DockerHost};
use crate::graph::GradeOutput;
use crate::manifest::{Manifest, Team};
use crate::parsers::{ScriptLimits, Statuses, TestStatus, parse_log, run_script_parser};
use crate::store::Store;
use crate::tasks::{Task, TaskBase};

use super::{WorkError, WorkOutput, verdict};

fn infra(e: impl std::fmt::Display) -> WorkError {
    WorkError::Infra(e.to_string())
}

/// What every docker job of one apply shares.
#[derive(Debug, Clone)]
pub struct DockerRun {
    pub host: DockerHost,
    pub run_id: String,
    /// Identifies the store (label `bench.store`), so an apply holding its lock can sweep.
    pub store_label: String,
}

/// Where bench keeps its own files inside a container.
const STATE: &str = "/tmp/bench";

/// Moves to the repository: /testbed, or the directory holding .git one level below it
/// (RepoLaunch's fallback).
const CD_REPO: &str = "cd /testbed || exit 97\n[ -d .git ] || { g=$(find . -maxdepth 2 -mindepth 2 -type d -name .git -print -quit); [ -n \"$g\" ] && cd \"${g%/.git}\"; }\n";

impl DockerRun {
    async fn container(
        &self,
        m: &Manifest,
        image_id: &str,
        address: &str,
        key: &str,
    ) -> Result<Container, WorkError> {
        let spec = ContainerSpec {
            image: image_id.to_string(),
            name: format!("bench-{}-{}", self.run_id, &key[..12.min(key.len())]),
            labels: ContainerSpec::labels(&self.run_id, address, &self.store_label),
            cpus: m.backend.cpus,
            memory_bytes: m.backend.memory_bytes,
            pids: m.backend.pids,
        };
        Container::start(&self.host, &spec).await.map_err(infra)
    }
}

/// The image ID a docker job runs: resolved before planning (keys hold it).
fn image_of<'a>(m: &'a Manifest, task: &'a Task) -> Result<(&'a str, &'a str), WorkError> {
    let TaskBase::Image { image, base_commit } = &task.base else {
        return Err(infra(format!(
            "task {} has a local base tree; the docker backend runs tasks with an image",
            task.instance_id
        )));
    };
    let id = m.backend.images.get(image).ok_or_else(|| {
        infra(format!(
            "image {image} (task {}) is not on the Docker daemon; build or pull it (bench never pulls)",
            task.instance_id
        ))
    })?;
    Ok((id, base_commit))
}

async fn run(
    c: &Container,
    script: &str,
    env: &[(String, String)],
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<ExecResult, WorkError> {
    let r = c
        .exec(script, "/", env, timeout, cancel)
        .await
        .map_err(infra)?;
    if r.cancelled {
        return Err(WorkError::Cancelled);
    }
    Ok(r)
}

/// Whether `log_parser` names a built-in parser (else it is Python source).
fn is_builtin_parser(p: &str) -> bool {
    let t = p.trim();
    !t.contains('\n') && !t.contains("def ")
}

/// Upstream's status rule for script parsers: "pass" in status -> success, "fail" in status ->
/// failure, anything else (skip, error, ...) neither.
fn live_status(raw: &str) -> TestStatus {
    let l = raw.to_lowercase();
    if l.contains("pass") {
        TestStatus::Pass
    } else if l.contains("fail") {
        TestStatus::Fail
    } else {
        TestStatus::Skip
    }
}

/// Grades `patch` on `task` in a fresh container of the task's image.
#[expect(clippy::too_many_arguments, reason = "the grade's whole context")]
pub async fn grade_docker(
    ctx: &DockerRun,
    store: &Store,
    m: &Manifest,
    task: &Task,
    patch: &[u8],
    timeout: Duration,
    address: &str,
    key: &str,
    cancel: &CancellationToken,
) -> Result<WorkOutput, WorkError> {
    let started = Instant::now();
    let (image_id, _) = image_of(m, task)?;
    let c = ctx.container(m, image_id, address, key).await?;
    let result = grade_in(&c, store, task, patch, timeout, started, cancel).await;
    // Normal paths remove explicitly; the guard covers the rest.
    let removed = c.destroy().await;
    let out = result?;
    removed.map_err(infra)?;
    Ok(out)
}

async fn grade_in(
    c: &Container,
    store: &Store,
    task: &Task,
    patch: &[u8],
    budget: Duration,
    started: Instant,
    cancel: &CancellationToken,
) -> Result<WorkOutput, WorkError> {
    let left = || {
        budget
            .saturating_sub(started.elapsed())
            .max(Duration::from_secs(1))
    };
    let empty = patch.iter().all(u8::is_ascii_whitespace);
    let mut files: Vec<(&str, &[u8], u32)> =
        vec![("/tmp/bench/test.patch", task.test_patch.as_bytes(), 0o644)];
    if !empty {
        files.push(("/tmp/bench/candidate.patch", patch, 0o644));
    }
    c.put_files(&files).await.map_err(infra)?;
    let apply = |name: &str| {
        format!("{CD_REPO}git apply --reject --whitespace=nowarn {STATE}/{name}.patch")
    };
    let mut apply_log = Vec::new();
    let test_script = if task.test_patch.trim().is_empty() {
        "echo 'no hidden test patch'".to_string()
    } else {
        apply("test")
    };
    let r = run(c, &test_script, &[], left(), cancel).await?;
    apply_log.extend_from_slice(b">>>>> test patch\n");
    apply_log.extend_from_slice(&r.output);
    if r.exit_code != Some(0) {
        return Err(infra(format!(
            "the hidden test patch of {} does not apply ({}): {}",
            task.instance_id,
            if r.timed_out {
                "timed out".to_string()
            } else {
                format!("exit {:?}", r.exit_code)
            },
            String::from_utf8_lossy(&r.output).trim()
        )));
    }
    let patch_applied = if empty {
        apply_log.extend_from_slice(b">>>>> candidate patch is empty\n");
        true
    } else {
        let r = run(c, &apply("candidate"), &[], left(), cancel).await?;
        apply_log.extend_from_slice(b">>>>> candidate patch\n");
        apply_log.extend_from_slice(&r.output);
        if r.exit_code != Some(0) {
            apply_log.extend_from_slice(b"<<<<<< PATCH FAILED TO APPLY CLEANLY >>>>>>\n");
        }
        r.exit_code == Some(0)
    };
    // One shell for rebuild + tests (state such as cwd carries over, as in upstream's session).
    let mut script = String::from("cd /testbed\n");
    let rebuild = task.rebuild_cmds.join(" ; ");
    if !rebuild.trim().is_empty() {
        script.push_str(&rebuild);
        script.push('\n');
    }
    let test = task.test_cmds.join(" ; ");
    let print = if task.print_cmds.is_empty() {
        script.push_str(&format!(
            "cat > run_test.sh <<'CC_PROMPT'\n{test}\nCC_PROMPT\nbash run_test.sh > testlog.out 2>&1\n"
        ));
        "cat testlog.out".to_string()
    } else {
        script.push_str(&test);
        script.push('\n');
        task.print_cmds.join(" ; ")
    };
    script.push_str(&format!("pwd -P > {STATE}/cwd\n"));
    let tests = run(c, &script, &[], left(), cancel).await?;
    let timed_out = tests.timed_out;
    let print_script = format!(
        "cd \"$(cat {STATE}/cwd 2>/dev/null || echo /testbed)\" 2>/dev/null || cd /testbed\n{print}\n"
    );
    let print_limit = budget.min(Duration::from_secs(600));
    let printed = run(c, &print_script, &[], print_limit, cancel).await?;
    let log = String::from_utf8_lossy(&printed.output).into_owned();
    let statuses: Statuses = if is_builtin_parser(&task.log_parser) {
        parse_log(task.log_parser.trim(), &log).map_err(|e| {
            infra(format!(
                "cannot parse the test log of {}: {e}",
                task.instance_id
            ))
        })?
    } else {
        let source = task.log_parser.clone();
        let limits = ScriptLimits {
            timeout: budget.min(ScriptLimits::default().timeout),
            ..Default::default()
        };
        let log2 = log.clone();
        let raw = tokio::task::spawn_blocking(move || run_script_parser(&source, &log2, &limits))
            .await
            .map_err(infra)?
            .map_err(|e| infra(format!("{} ({})", e, task.instance_id)))?;
        raw.iter()
            .map(|(k, v)| (k.clone(), live_status(v)))
            .collect()
    };
    let mut out: GradeOutput = verdict(task, &statuses, patch_applied, timed_out);
    out.empty_patch = empty;
    out.test_exit_code = tests.exit_code;
    out.duration_ms = started.elapsed().as_millis() as u64;
    let mut blobs = BTreeMap::new();
    let mut put = |name: &str, bytes: &[u8]| -> Result<(), WorkError> {
        blobs.insert(name.to_string(), store.put_blob(bytes).map_err(infra)?);
        Ok(())
    };
    put("log", &printed.output)?;
    put("test_output", &tests.output)?;
    put("apply_log", &apply_log)?;
    put(
        "statuses",
        &serde_json::to_vec_pretty(&statuses).expect("statuses serialize"),
    )?;
    put("patch", patch)?;
    Ok(WorkOutput {
        output: serde_json::to_value(&out).expect("grade outputs serialize"),
        blobs,
    })
}

/// Strips the repository's history beyond the base commit (exit 3 with a reason on failure).
///
/// Files are removed with `gone`, which repeats the removal until the paths are really absent:
/// on fuse-overlayfs a file renamed over a lower-layer file (git rewrites packed-refs that way)
/// comes back after a single `rm`.
pub const STRIP_SCRIPT: &str = r#"fail() { echo "bench: $*" >&2; exit 3; }
gone() { for _ in 1 2 3 4 5; do rm -rf "$@"; left=0; for f in "$@"; do [ -e "$f" ] && left=1; done; [ $left = 0 ] && return 0; done; return 1; }
[ -d .git ] || fail "no git repository at /testbed"
head=$(git rev-parse --verify -q HEAD) || fail "the repository has no HEAD"
[ "$head" = "$BENCH_BASE" ] || fail "the image is checked out at $head, not the task's base commit $BENCH_BASE"
git checkout -q --detach || fail "cannot detach HEAD"
git for-each-ref --format='%(refname)' | while IFS= read -r r; do git update-ref -d "$r" || exit 1; done || fail "cannot delete refs"
for r in $(git remote); do git config --remove-section "remote.$r" || fail "cannot remove remote $r"; done
gone .git/packed-refs .git/FETCH_HEAD .git/ORIG_HEAD .git/MERGE_HEAD .git/CHERRY_PICK_HEAD .git/REVERT_HEAD .git/BISECT_LOG .git/COMMIT_EDITMSG .git/MERGE_MSG .git/SQUASH_MSG .git/TAG_EDITMSG .git/gitk.cache .git/logs .git/refs/original .git/objects/info/alternates .git/worktrees .git/rr-cache || fail "cannot remove leftover git state"
git reflog expire --expire=now --expire-unreachable=now --all || fail "git reflog expire failed"
git -c gc.auto=0 -c gc.cruftPacks=false gc --prune=now --quiet || fail "git gc --prune=now failed"
git checkout -q -b main || fail "cannot create the branch"
gone .git/logs .git/packed-refs || fail "cannot remove the reflog"
pwd -P > /tmp/bench/repo
"#;

/// Checks, fail-closed, that nothing beyond the base commit is left (exit 4 with a reason).
pub const CHECK_SCRIPT: &str = r#"fail() { echo "bench: history check failed: $*" >&2; exit 4; }
[ "$(git rev-parse HEAD)" = "$BENCH_BASE" ] || fail "HEAD is not the base commit"
refs=$(git for-each-ref --format='%(refname)') || fail "cannot list refs"
[ "$refs" = "refs/heads/main" ] || fail "refs other than refs/heads/main remain: $refs"
[ -z "$(git remote)" ] || fail "remotes remain"
for f in packed-refs FETCH_HEAD ORIG_HEAD MERGE_HEAD COMMIT_EDITMSG MERGE_MSG SQUASH_MSG TAG_EDITMSG objects/info/alternates logs; do [ ! -e ".git/$f" ] || fail ".git/$f remains"; done
[ -z "$(git stash list)" ] || fail "stash entries remain"
u=$(git fsck --unreachable --no-reflogs --no-progress 2>&1) || fail "git fsck failed: $u"
! printf '%s\n' "$u" | grep -q '^unreachable ' || fail "unreachable objects remain"
git rev-list --all | sort > /tmp/bench/all && git rev-list HEAD | sort > /tmp/bench/head || fail "git rev-list failed"
[ -z "$(comm -23 /tmp/bench/all /tmp/bench/head)" ] || fail "commits outside the base history remain"
echo "history check passed"
"#;

/// Records the start snapshot: untracked (not ignored) files, and the tree of tracked files.
const SNAPSHOT_SCRIPT: &str = r#"set -e
git ls-files --others --exclude-standard -z > /tmp/bench/untracked0
export GIT_INDEX_FILE=/tmp/bench/index0
git read-tree HEAD
git add -u
git write-tree > /tmp/bench/tree0
"#;

/// Writes the patch: everything changed since the snapshot (commits, edits, new files;
/// .gitignore honoured), without start-untracked files and Python bytecode.
const DIFF_SCRIPT: &str = r#"set -e
export GIT_INDEX_FILE=/tmp/bench/index1
rm -f "$GIT_INDEX_FILE"
git read-tree HEAD
git add -A .
if [ -s /tmp/bench/untracked0 ]; then git rm -r --cached -q --ignore-unmatch --pathspec-from-file=/tmp/bench/untracked0 --pathspec-file-nul; fi
git rm -r --cached -q --ignore-unmatch -- ':(glob)**/__pycache__/**' ':(glob)**/*.pyc'
t=$(git write-tree)
git diff --binary --no-color --no-ext-diff --no-renames "$(cat /tmp/bench/tree0)" "$t" > /tmp/bench/patch.diff
"#;

fn in_repo(script: &str) -> String {
    format!("cd \"$(cat {STATE}/repo)\" || exit 97\n{script}")
}

/// Prepares an agent sandbox: a container of the task's image with its history stripped and
/// checked, and the start snapshot taken. Public for tests.
pub async fn prepare_sandbox(
    host: &DockerHost,
    spec: &ContainerSpec,
    base_commit: &str,
    cancel: &CancellationToken,
) -> Result<Container, WorkError> {
    let c = Container::start(host, spec).await.map_err(infra)?;
    let env = [("BENCH_BASE".to_string(), base_commit.to_string())];
    let limit = Duration::from_secs(1800);
    let r = run(
        &c,
        &format!("mkdir -p {STATE}\n{CD_REPO}{STRIP_SCRIPT}"),
        &env,
        limit,
        cancel,
    )
    .await?;
    if r.exit_code != Some(0) {
        return Err(infra(format!(
            "cannot prepare the agent workspace: {}",
            String::from_utf8_lossy(&r.output).trim()
        )));
    }
    let r = run(&c, &in_repo(CHECK_SCRIPT), &env, limit, cancel).await?;
    if r.exit_code != Some(0) {
        return Err(infra(format!(
            "refusing to start the agent: {}",
            String::from_utf8_lossy(&r.output).trim()
        )));
    }
    let r = run(&c, &in_repo(SNAPSHOT_SCRIPT), &[], limit, cancel).await?;
    if r.exit_code != Some(0) {
        return Err(infra(format!(
            "cannot snapshot the agent workspace: {}",
            String::from_utf8_lossy(&r.output).trim()
        )));
    }
    Ok(c)
}

/// The patch an agent left in a prepared sandbox.
pub async fn collect_patch(
    c: &Container,
    cancel: &CancellationToken,
) -> Result<Vec<u8>, WorkError> {
    let r = run(
        c,
        &in_repo(DIFF_SCRIPT),
        &[],
        Duration::from_secs(1800),
        cancel,
    )
    .await?;
    if r.exit_code != Some(0) {
        return Err(infra(format!(
            "cannot read the agent's changes: {}",
            String::from_utf8_lossy(&r.output).trim()
        )));
    }
    c.get_file(&format!("{STATE}/patch.diff"))
        .await
        .map_err(infra)
}

/// Runs `team` on `task` in prepared containers: each agent in a container of its harness's
/// image (the agent image where the harness installs a CLI), built first if need be.
#[expect(clippy::too_many_arguments, reason = "the solve's whole context")]
pub async fn solve_docker(
    ctx: &DockerRun,
    store: &Store,
    m: &Manifest,
    task: &Task,
    team: &Team,
    timeout: Duration,
    budget_share: Option<f64>,
    address: &str,
    key: &str,
    cancel: &CancellationToken,
) -> Result<WorkOutput, WorkError> {
    let (image_id, base_commit) = image_of(m, task)?;
    let mut images = BTreeMap::new();
    for agent in team.topology.agents() {
        if !images.contains_key(&agent.harness) {
            let harness = &m.harnesses[&agent.harness];
            let image = super::agent_image::image_for(ctx, m, image_id, harness, cancel).await?;
            images.insert(agent.harness.clone(), image);
        }
    }
    let place = super::solve::Place::Docker(DockerPlace {
        run: ctx,
        m,
        images,
        base_commit,
        address,
        key,
        count: std::sync::atomic::AtomicUsize::new(0),
    });
    super::solve::solve_team(store, m, task, team, timeout, budget_share, &place, cancel).await
}

/// Where a docker solve's sandboxes come from.
pub(crate) struct DockerPlace<'a> {
    run: &'a DockerRun,
    m: &'a Manifest,
    /// The image ID each harness runs in.
    images: BTreeMap<String, String>,
    base_commit: &'a str,
    address: &'a str,
    key: &'a str,
    /// Sandboxes made so far (their names are numbered).
    count: std::sync::atomic::AtomicUsize,
}

/// The agent's home directory in a sandbox; its files are the run's own logs.
const AGENT_HOME: &str = "/tmp/bench/home";
/// Files beside the repository: prompts, patches, scripts.
const SIDE: &str = "/tmp/bench/side";

impl DockerPlace<'_> {
    /// A prepared container of `harness`'s image.
    pub(crate) async fn sandbox(
        &self,
        harness: &str,
        cancel: &CancellationToken,
    ) -> Result<DockerSandbox, WorkError> {
        let n = self
            .count
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let spec = ContainerSpec {
            image: self.images[harness].clone(),
            name: format!(
                "bench-{}-{}-{n}",
                self.run.run_id,
                &self.key[..12.min(self.key.len())]
            ),
            labels: ContainerSpec::labels(&self.run.run_id, self.address, &self.run.store_label),
            cpus: self.m.backend.cpus,
            memory_bytes: self.m.backend.memory_bytes,
            pids: self.m.backend.pids,
        };
        let c = prepare_sandbox(&self.run.host, &spec, self.base_commit, cancel).await?;
        let repo = match c.get_file(&format!("{STATE}/repo")).await {
            Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_string(),
            Err(e) => {
                let _ = c.destroy().await;
                return Err(infra(e));
            }
        };
        let made = run(
            &c,
            &format!("mkdir -p {AGENT_HOME} {SIDE}"),
            &[],
            Duration::from_secs(60),
            cancel,
        )
        .await;
        if let Err(e) = made {
            let _ = c.destroy().await;
            return Err(e);
        }
        Ok(DockerSandbox { c, repo })
    }
}

/// A prepared container: history stripped and checked, start snapshot taken.
pub(crate) struct DockerSandbox {
    c: Container,
    /// The repository's path (/testbed, or the git root below it).
    repo: String,
}

impl DockerSandbox {
    pub(crate) async fn apply(
        &self,
        name: &str,
        patch: &[u8],
        cancel: &CancellationToken,
    ) -> Result<(Option<i32>, Vec<u8>), WorkError> {
        let (code, out, _) =
            apply_patch_in(&self.c, name, patch, Duration::from_secs(300), cancel).await?;
        Ok((code, out))
    }

    pub(crate) async fn diff(&self, cancel: &CancellationToken) -> Result<Vec<u8>, WorkError> {
        collect_patch(&self.c, cancel).await
    }

    pub(crate) async fn write_side(
        &self,
        name: &str,
        bytes: &[u8],
        mode: u32,
    ) -> Result<String, WorkError> {
        let path = format!("{SIDE}/{name}");
        self.c
            .put_files(&[(path.as_str(), bytes, mode)])
            .await
            .map_err(infra)?;
        Ok(path)
    }

    pub(crate) fn layout(&self) -> (String, String, Vec<(String, String)>) {
        let env = [
            ("HOME", AGENT_HOME),
            ("GIT_AUTHOR_NAME", "bench"),
            ("GIT_AUTHOR_EMAIL", "bench@localhost"),
            ("GIT_COMMITTER_NAME", "bench"),
            ("GIT_COMMITTER_EMAIL", "bench@localhost"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        (self.repo.clone(), SIDE.to_string(), env)
    }

    pub(crate) async fn exec(
        &self,
        command: &str,
        env: &[(String, String)],
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<ExecResult, WorkError> {
        run(&self.c, &in_repo(command), env, timeout, cancel).await
    }

    pub(crate) async fn home_files(&self, cap: usize) -> Vec<(String, Vec<u8>)> {
        self.c.get_dir(AGENT_HOME, cap).await.unwrap_or_else(|e| {
            vec![(
                "[bench]".to_string(),
                format!("cannot read the agent's home: {e}").into_bytes(),
            )]
        })
    }

    pub(crate) async fn close(self) -> Result<(), WorkError> {
        self.c.destroy().await.map_err(infra)
    }
}

/// An "agent" that applies a given patch in the repository (the oracle, a predictions file).
async fn apply_patch_in(
    c: &Container,
    name: &str,
    patch: &[u8],
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<(Option<i32>, Vec<u8>, bool), WorkError> {
    let path = format!("/tmp/bench/{name}");
    c.put_files(&[(path.as_str(), patch, 0o644)])
        .await
        .map_err(infra)?;
    let r = run(
        c,
        &in_repo(&format!("git apply --whitespace=nowarn {path}")),
        &[],
        timeout,
        cancel,
    )
    .await?;
    Ok((r.exit_code, r.output, r.timed_out))
}
