//! The repository steps every sandbox shares, written once over the [`Sandbox`] trait: strip
//! the history beyond the base commit and check it fail-closed, take the start snapshot, and
//! read everything changed since. Scripts run in the repository with `BENCH_STATE` (bench's own
//! directory in the sandbox) and `BENCH_BASE` (the base commit) set.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::sandbox::{Sandbox, SandboxError};

/// Strips the repository's history beyond the base commit (exit 3 with a reason on failure).
///
/// Files are removed with `gone`, which repeats the removal until the paths are really absent:
/// on fuse-overlayfs a file renamed over a lower-layer file (git rewrites packed-refs that way)
/// comes back after a single `rm`.
pub const STRIP_SCRIPT: &str = r#"fail() { echo "bench: $*" >&2; exit 3; }
gone() { for _ in 1 2 3 4 5; do rm -rf "$@"; left=0; for f in "$@"; do [ -e "$f" ] && left=1; done; [ $left = 0 ] && return 0; done; return 1; }
[ -d .git ] || fail "no git repository at $(pwd)"
head=$(git rev-parse --verify -q HEAD) || fail "the repository has no HEAD"
[ "$head" = "$BENCH_BASE" ] || fail "the image is checked out at $head, not the task's base commit $BENCH_BASE"
git checkout -q --detach || fail "cannot detach HEAD"
git for-each-ref --format='%(refname)' | while IFS= read -r r; do git update-ref -d "$r" || exit 1; done || fail "cannot delete refs"
for r in $(git remote); do git config --remove-section "remote.$r" || fail "cannot remove remote $r"; done
gone .git/packed-refs .git/FETCH_HEAD .git/ORIG_HEAD .git/MERGE_HEAD .git/CHERRY_PICK_HEAD .git/REVERT_HEAD .git/BISECT_LOG .git/COMMIT_EDITMSG .git/MERGE_MSG .git/SQUASH_MSG .git/TAG_EDITMSG .git/gitk.cache .git/logs .git/refs/original .git/objects/info/alternates .git/objects/info/http-alternates .git/worktrees .git/rr-cache .git/rebase-merge .git/rebase-apply .git/sequencer $(find .git -maxdepth 1 -name '*_HEAD' ! -name HEAD) || fail "cannot remove leftover git state"
git reflog expire --expire=now --expire-unreachable=now --all || fail "git reflog expire failed"
git -c gc.auto=0 -c gc.cruftPacks=false gc --prune=now --quiet || fail "git gc --prune=now failed"
git checkout -q -b main || fail "cannot create the branch"
gone .git/logs .git/packed-refs || fail "cannot remove the reflog"
"#;

/// Checks, fail-closed, that nothing beyond the base commit is left (exit 4 with a reason).
/// Run with `BENCH_STATE` and `BENCH_BASE` set, in the repository.
pub const CHECK_SCRIPT: &str = r#"fail() { echo "bench: history check failed: $*" >&2; exit 4; }
[ "$(git rev-parse HEAD)" = "$BENCH_BASE" ] || fail "HEAD is not the base commit"
refs=$(git for-each-ref --format='%(refname)') || fail "cannot list refs"
[ "$refs" = "refs/heads/main" ] || fail "refs other than refs/heads/main remain: $refs"
[ -z "$(git remote)" ] || fail "remotes remain"
for f in packed-refs FETCH_HEAD ORIG_HEAD MERGE_HEAD CHERRY_PICK_HEAD REVERT_HEAD BISECT_LOG COMMIT_EDITMSG MERGE_MSG SQUASH_MSG TAG_EDITMSG gitk.cache objects/info/alternates objects/info/http-alternates logs worktrees rr-cache refs/original rebase-merge rebase-apply sequencer; do [ ! -e ".git/$f" ] || fail ".git/$f remains"; done
[ -z "$(find .git -maxdepth 1 -name '*_HEAD' ! -name HEAD ! -name FETCH_HEAD -print -quit)" ] || fail "a *_HEAD file remains: $(find .git -maxdepth 1 -name '*_HEAD' ! -name HEAD -print | head -3)"
[ -z "$(git stash list)" ] || fail "stash entries remain"
u=$(git fsck --unreachable --no-reflogs --no-progress 2>&1) || fail "git fsck failed: $u"
! printf '%s\n' "$u" | grep -q '^unreachable ' || fail "unreachable objects remain"
git rev-list --all | sort > "$BENCH_STATE/all" && git rev-list HEAD | sort > "$BENCH_STATE/head" || fail "git rev-list failed"
[ -z "$(comm -23 "$BENCH_STATE/all" "$BENCH_STATE/head")" ] || fail "commits outside the base history remain"
echo "history check passed"
"#;

/// Records the start snapshot: untracked (not ignored) files, and the tree of tracked files.
const SNAPSHOT_SCRIPT: &str = r#"set -e
git ls-files --others --exclude-standard -z > "$BENCH_STATE/untracked0"
export GIT_INDEX_FILE="$BENCH_STATE/index0"
git read-tree HEAD
git add -u
git write-tree > "$BENCH_STATE/tree0"
"#;

/// Writes the patch: everything changed since the snapshot (commits, edits, new files;
/// .gitignore honoured), without start-untracked files and Python bytecode.
const DIFF_SCRIPT: &str = r#"set -e
export GIT_INDEX_FILE="$BENCH_STATE/index1"
rm -f "$GIT_INDEX_FILE"
git read-tree HEAD
git add -A .
if [ -s "$BENCH_STATE/untracked0" ]; then git rm -r --cached -q --ignore-unmatch --pathspec-from-file="$BENCH_STATE/untracked0" --pathspec-file-nul; fi
git rm -r --cached -q --ignore-unmatch -- ':(glob)**/__pycache__/**' ':(glob)**/*.pyc'
t=$(git write-tree)
git diff --binary --no-color --no-ext-diff --no-renames "$(cat "$BENCH_STATE/tree0")" "$t" > "$BENCH_STATE/patch.diff"
"#;

const LIMIT: Duration = Duration::from_secs(1800);

fn state_env(s: &dyn Sandbox, base: &str) -> Vec<(String, String)> {
    vec![
        ("BENCH_STATE".to_string(), s.paths().state.clone()),
        ("BENCH_BASE".to_string(), base.to_string()),
    ]
}

async fn step(
    s: &dyn Sandbox,
    script: &str,
    env: &[(String, String)],
    what: &str,
    cancel: &CancellationToken,
) -> Result<(), SandboxError> {
    let r = s.exec(script, env, LIMIT, cancel).await?;
    if r.exit_code != Some(0) {
        return Err(SandboxError::Failed(format!(
            "{what}: {}",
            String::from_utf8_lossy(&r.output).trim()
        )));
    }
    Ok(())
}

/// Strips the repository's history to `base` (the current HEAD when `None`) and checks it
/// fail-closed: the check's report (`history check passed`), or an error naming what remains.
/// Agent workspaces and grading sandboxes (before the candidate is applied) both go through it.
pub async fn clean(
    s: &dyn Sandbox,
    base: Option<&str>,
    what: &str,
    cancel: &CancellationToken,
) -> Result<(String, String), SandboxError> {
    let base = match (base, s.checked_at_start()) {
        (Some(b), _) => b.to_string(),
        // Untouched since it was made: its HEAD is the base it was checked at.
        (None, Some((head, _))) => head.to_string(),
        (None, None) => {
            let r = s.exec("git rev-parse HEAD", &[], LIMIT, cancel).await?;
            String::from_utf8_lossy(&r.output).trim().to_string()
        }
    };
    if let Some((checked, report)) = s.checked_at_start()
        && checked == base
    {
        return Ok((base, report.to_string()));
    }
    let env = state_env(s, &base);
    // A repository stripped when its image was made is only checked; any other is stripped
    // here.
    if s.stripped_to() != Some(base.as_str()) {
        step(
            s,
            &format!("mkdir -p \"$BENCH_STATE\"\n{STRIP_SCRIPT}"),
            &env,
            &format!("cannot strip the history of the {what}"),
            cancel,
        )
        .await?;
    }
    let r = s.exec(CHECK_SCRIPT, &env, LIMIT, cancel).await?;
    let report = String::from_utf8_lossy(&r.output).trim().to_string();
    if r.exit_code != Some(0) {
        return Err(SandboxError::Failed(format!(
            "refusing the {what}: {report}"
        )));
    }
    Ok((base, report))
}

/// Prepares an agent's repository: history stripped to `base` (the current HEAD when `None`)
/// and checked fail-closed, then the start snapshot taken.
pub async fn prepare(
    s: &dyn Sandbox,
    base: Option<&str>,
    cancel: &CancellationToken,
) -> Result<(), SandboxError> {
    let (base, _) = clean(s, base, "agent workspace", cancel).await?;
    let env = state_env(s, &base);
    step(
        s,
        SNAPSHOT_SCRIPT,
        &env,
        "cannot snapshot the agent workspace",
        cancel,
    )
    .await
}

/// The patch: everything changed in the repository since [`prepare`].
pub async fn diff(s: &dyn Sandbox, cancel: &CancellationToken) -> Result<Vec<u8>, SandboxError> {
    let env = state_env(s, "");
    step(
        s,
        DIFF_SCRIPT,
        &env,
        "cannot read the agent's changes",
        cancel,
    )
    .await?;
    s.get_file(&format!("{}/patch.diff", s.paths().state)).await
}

/// Applies a patch in the repository with `git apply` (the oracle, a predictions file, the
/// coder's diff for a reviewer): exit code and output.
pub async fn apply(
    s: &dyn Sandbox,
    name: &str,
    patch: &[u8],
    cancel: &CancellationToken,
) -> Result<(Option<i32>, Vec<u8>), SandboxError> {
    let path = format!("{}/{name}", s.paths().state);
    s.put_files(&[(path.as_str(), patch, 0o644)]).await?;
    let r = s
        .exec(
            &format!("git apply --whitespace=nowarn '{path}'"),
            &[],
            Duration::from_secs(300),
            cancel,
        )
        .await?;
    Ok((r.exit_code, r.output))
}
