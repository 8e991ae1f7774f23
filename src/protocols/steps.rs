//! The grading steps the protocols share, over the [`Sandbox`] trait: strip the repository's
//! history to the base commit and check it fail-closed (`repo::clean`, as for agents: a patch's
//! code runs during grading and must find no other commit); write the patches beside the
//! repository; apply the candidate; reset what the hidden test patch touches (paths it modifies
//! back to the base, paths it creates deleted), stale `.git` locks and Python bytecode; apply the
//! hidden test patch (an empty one is skipped); run `rebuild_cmds` and `test_cmds` in one shell
//! from the task's workdir; print the log (`print_cmds`, or the tests' own output); parse it (a
//! built-in parser, or the task's Python script through [`script_status`](super::script_status));
//! apply the verdict rule.
//!
//! The boundaries bench reads in the output (where the tests' output starts and ends, their exit
//! code, where the printed log starts and ends) are lines carrying a per-grade random nonce
//! (`BENCH-<nonce>-...`), so a patch that prints a marker cannot cut or forge the log.
//!
//! One budget (the grade's timeout) bounds applying, rebuilding and testing together; printing
//! and a parser script get at most the budget and at most 10 minutes and 2 minutes.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use async_trait::async_trait;

use super::GradeError;
use super::grading::{Graded, Grading, Protocol};
use super::paths::{PatchFile, patch_files};
use crate::backend::{ExecResult, Sandbox, shell_quote};
use crate::jobs::GradeJob;
use crate::parsers::{ScriptLimits, Statuses, parse_log, run_script_parser};

/// How a protocol runs the steps.
#[derive(Debug, Clone, Copy)]
pub struct Recipe {
    /// The command applying the hidden test patch (a failure is a grading error).
    pub test_patch_apply: &'static str,
    /// The command applying the candidate (a failure means "not applied", an outcome).
    pub candidate_apply: &'static str,
    /// Without `print_cmds`: run the tests as `bash run_test.sh > testlog.out 2>&1` and print
    /// `testlog.out` (SWE-bench-Live), instead of taking the tests' output as the log.
    pub wrap_tests: bool,
}

/// Runs `script` in the sandbox with no extra environment.
pub(super) async fn run(
    s: &dyn Sandbox,
    script: &str,
    limit: Duration,
    cancel: &CancellationToken,
) -> Result<ExecResult, GradeError> {
    Ok(s.exec(script, &[], limit, cancel).await?)
}

/// A protocol graded by the shared steps with its recipe (`local`, `swe-bench-live`).
pub(crate) struct RecipeProtocol {
    pub version: u32,
    pub recipe: Recipe,
}

#[async_trait]
impl Protocol for RecipeProtocol {
    fn version(&self) -> u32 {
        self.version
    }

    fn audited_commands<'j>(&self, job: &'j GradeJob) -> Vec<&'j str> {
        let task = &job.task;
        [task.rebuild_cmds(), task.test_cmds(), task.print_cmds()]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect()
    }

    async fn steps(&self, g: &Grading<'_>) -> Result<(Graded, String), GradeError> {
        steps(&self.recipe, g).await
    }
}

/// Runs the steps of `recipe` for the grade `g`, with the verdict rule.
async fn steps(recipe: &Recipe, g: &Grading<'_>) -> Result<(Graded, String), GradeError> {
    let (job, s) = (g.job, g.sandbox);
    // Nothing of the image's history beyond the base is reachable by the patch's code.
    let history_check = g.clean().await?;
    let task = &job.task;
    let empty = write_patches(g).await?;
    let test_files = patch_files(task.test_patch());
    check_base_paths(s, job, &test_files, g.left(), g.cancel).await?;
    let mut apply_log = Vec::new();
    let patch_applied = apply_candidate(recipe, g, empty, &mut apply_log).await?;
    if !reset_test_paths(g, &test_files, &mut apply_log).await? {
        // The base passed the guard: the candidate planted the link. Nothing was deleted, the
        // hidden tests never run, and the patch is not resolved (an outcome, not an error).
        return Ok((outside_outcome(job, apply_log), history_check));
    }
    apply_test_patch(recipe, g, &mut apply_log).await?;

    let nonce = &g.nonce;
    let tests_start = format!("BENCH-{nonce}-TESTS-START");
    let tests_end = format!("BENCH-{nonce}-TESTS-END ");
    let (script, print) = tests_script(recipe, g, &tests_start, &tests_end);
    let tests = run(s, &script, g.left(), g.cancel).await?;
    let timed_out = tests.timed_out;
    let (test_log, test_end) = between(&tests.output, &tests_start, &tests_end);
    let log = match &print {
        Some(print) => printed_log(g, print).await?,
        None => test_log,
    };
    let text = String::from_utf8_lossy(&log).into_owned();
    let statuses = parse(job, text, g.budget).await?;
    let mut output = super::verdict(
        task.fail_to_pass(),
        task.pass_to_pass(),
        &statuses,
        patch_applied,
        timed_out,
    );
    output.empty_patch = empty;
    output.test_exit_code = test_end.and_then(|e| e.trim().parse().ok());
    let logs = BTreeMap::from([
        ("log".to_string(), log),
        ("test_output".to_string(), tests.output),
        ("apply_log".to_string(), apply_log),
    ]);
    Ok((
        Graded {
            output,
            statuses,
            logs,
        },
        history_check,
    ))
}

/// Where the hidden test patch is written in the sandbox `s`.
fn test_patch_path(s: &dyn Sandbox) -> String {
    format!("{}/test.patch", s.paths().state)
}

/// Where the candidate is written in the sandbox `s`.
fn candidate_path(s: &dyn Sandbox) -> String {
    format!("{}/candidate.patch", s.paths().state)
}

/// Writes the hidden test patch and the candidate (unless it is empty) beside the repository.
/// Returns whether the candidate is empty.
async fn write_patches(g: &Grading<'_>) -> Result<bool, GradeError> {
    let (patch, s) = (g.patch, g.sandbox);
    let empty = patch.iter().all(u8::is_ascii_whitespace);
    let test_patch_path = test_patch_path(s);
    let candidate_path = candidate_path(s);
    let mut files: Vec<(&str, &[u8], u32)> = vec![(
        test_patch_path.as_str(),
        g.job.task.test_patch().as_bytes(),
        0o644,
    )];
    if !empty {
        files.push((candidate_path.as_str(), patch, 0o644));
    }
    s.put_files(&files).await?;
    Ok(empty)
}

/// Applies the candidate with the recipe's command, its output added to `apply_log`. Returns
/// whether it applied (an `empty` candidate counts as applied).
async fn apply_candidate(
    recipe: &Recipe,
    g: &Grading<'_>,
    empty: bool,
    apply_log: &mut Vec<u8>,
) -> Result<bool, GradeError> {
    if empty {
        apply_log.extend_from_slice(b">>>>> candidate patch is empty\n");
        return Ok(true);
    }
    let candidate_path = candidate_path(g.sandbox);
    let r = run(
        g.sandbox,
        &format!("{} '{candidate_path}'", recipe.candidate_apply),
        g.left(),
        g.cancel,
    )
    .await?;
    apply_log.extend_from_slice(b">>>>> candidate patch\n");
    apply_log.extend_from_slice(&r.output);
    if r.exit_code != Some(0) {
        apply_log.extend_from_slice(b"<<<<<< PATCH FAILED TO APPLY CLEANLY >>>>>>\n");
    }
    Ok(r.exit_code == Some(0))
}

/// Undoes whatever the candidate did to the hidden tests' paths before they arrive
/// ([`reset_script`]), its output added to `apply_log`. Returns `false` when the candidate
/// made one of them lead out of the workspace (nothing was deleted); a failing reset is a
/// grading error.
async fn reset_test_paths(
    g: &Grading<'_>,
    test_files: &[PatchFile],
    apply_log: &mut Vec<u8>,
) -> Result<bool, GradeError> {
    let r = run(g.sandbox, &reset_script(test_files), g.left(), g.cancel).await?;
    apply_log.extend_from_slice(b">>>>> reset before the test patch\n");
    apply_log.extend_from_slice(&r.output);
    if r.exit_code == Some(OUTSIDE_EXIT) {
        return Ok(false);
    }
    if r.exit_code != Some(0) {
        return Err(GradeError::Task(format!(
            "cannot reset the paths of the hidden test patch of {}: {}",
            g.job.task.instance_id(),
            String::from_utf8_lossy(&r.output).trim()
        )));
    }
    Ok(true)
}

/// Applies the hidden test patch with the recipe's command (an empty one is skipped), its
/// output added to `apply_log`; failing to apply is a grading error.
async fn apply_test_patch(
    recipe: &Recipe,
    g: &Grading<'_>,
    apply_log: &mut Vec<u8>,
) -> Result<(), GradeError> {
    let task = &g.job.task;
    apply_log.extend_from_slice(b">>>>> test patch\n");
    if task.test_patch().trim().is_empty() {
        apply_log.extend_from_slice(b"no hidden test patch\n");
        return Ok(());
    }
    let test_patch_path = test_patch_path(g.sandbox);
    let r = run(
        g.sandbox,
        &format!("{} '{test_patch_path}'", recipe.test_patch_apply),
        g.left(),
        g.cancel,
    )
    .await?;
    apply_log.extend_from_slice(&r.output);
    if r.exit_code != Some(0) {
        return Err(GradeError::Task(format!(
            "the hidden test patch of {} does not apply ({}): {}",
            task.instance_id(),
            if r.timed_out {
                "timed out".to_string()
            } else {
                format!("exit {:?}", r.exit_code)
            },
            String::from_utf8_lossy(&r.output).trim()
        )));
    }
    Ok(())
}

/// The one shell script for rebuild + tests (state such as cwd carries over, as in upstream's
/// session), the tests' output between the lines `tests_start` and `tests_end <exit code>`,
/// and the command that prints the log afterwards (`None`: the tests' own output is the log).
fn tests_script(
    recipe: &Recipe,
    g: &Grading<'_>,
    tests_start: &str,
    tests_end: &str,
) -> (String, Option<String>) {
    let task = &g.job.task;
    let paths = g.sandbox.paths();
    let (state, workdir) = (&paths.state, &paths.workdir);
    let mut script = format!("cd '{workdir}'\n");
    let rebuild = task.rebuild_cmds().join(" ; ");
    if !rebuild.trim().is_empty() {
        script.push_str(&rebuild);
        script.push('\n');
    }
    let test = task.test_cmds().join(" ; ");
    script.push_str(&format!("printf '\\n%s\\n' '{tests_start}'\n"));
    let print = if !task.print_cmds().is_empty() {
        script.push_str(&test);
        script.push('\n');
        Some(task.print_cmds().join(" ; "))
    } else if recipe.wrap_tests {
        script.push_str(&format!(
            "cat > run_test.sh <<'CC_PROMPT'\n{test}\nCC_PROMPT\nbash run_test.sh > testlog.out 2>&1\n"
        ));
        Some("cat testlog.out".to_string())
    } else {
        script.push_str(&test);
        script.push('\n');
        None
    };
    script.push_str(&format!("printf '\\n%s%s\\n' '{tests_end}' \"$?\"\n"));
    if print.is_some() {
        script.push_str(&format!("pwd -P > '{state}/cwd'\n"));
    }
    (script, print)
}

/// The log `print` prints, run from the directory the tests ended in (at most the budget and
/// at most 10 minutes), read between nonce'd markers.
async fn printed_log(g: &Grading<'_>, print: &str) -> Result<Vec<u8>, GradeError> {
    let nonce = &g.nonce;
    let paths = g.sandbox.paths();
    let (state, workdir) = (&paths.state, &paths.workdir);
    let log_start = format!("BENCH-{nonce}-LOG-START");
    let log_end = format!("BENCH-{nonce}-LOG-END");
    let print_script = format!(
        "cd \"$(cat '{state}/cwd' 2>/dev/null || echo '{workdir}')\" 2>/dev/null || cd '{workdir}'\nprintf '%s\\n' '{log_start}'\n{print}\nprintf '\\n%s\\n' '{log_end}'\n"
    );
    let out = run(
        g.sandbox,
        &print_script,
        g.budget.min(Duration::from_secs(600)),
        g.cancel,
    )
    .await?
    .output;
    Ok(between(&out, &log_start, &log_end).0)
}

/// The task's own tree must not lead a hidden test path out of the workspace (a directory link
/// in its base): a task error, checked before anything of the candidate runs.
async fn check_base_paths(
    s: &dyn Sandbox,
    job: &GradeJob,
    test_files: &[PatchFile],
    limit: Duration,
    cancel: &CancellationToken,
) -> Result<(), GradeError> {
    let r = run(s, &guard_script(&touched(test_files)), limit, cancel).await?;
    if r.exit_code != Some(0) {
        return Err(GradeError::Task(format!(
            "the base tree of {} cannot be graded safely: {}",
            job.task.instance_id(),
            String::from_utf8_lossy(&r.output).trim()
        )));
    }
    Ok(())
}

/// The grade of a candidate that made a hidden test path lead out of the workspace: applied,
/// not resolved, no test run; its audit as for any patch (the epilogue's).
fn outside_outcome(job: &GradeJob, mut apply_log: Vec<u8>) -> Graded {
    let task = &job.task;
    let statuses = Statuses::default();
    let mut output = super::verdict(
        task.fail_to_pass(),
        task.pass_to_pass(),
        &statuses,
        true,
        false,
    );
    output.resolved = false;
    apply_log.extend_from_slice(
        b"<<<<<< the candidate leads a hidden test path out of the workspace: not graded >>>>>>\n",
    );
    Graded {
        output,
        statuses,
        logs: BTreeMap::from([
            ("log".to_string(), Vec::new()),
            ("test_output".to_string(), Vec::new()),
            ("apply_log".to_string(), apply_log),
        ]),
    }
}

/// The part of `out` between the first line that is exactly `start` and the last line that
/// begins with `end` (to the end of `out` when there is none), and the rest of that end line.
/// Without a start line, nothing. Lines that merely contain a marker are ignored.
pub(crate) fn between(out: &[u8], start: &str, end: &str) -> (Vec<u8>, Option<String>) {
    let mut lines = Vec::new();
    let mut at = 0;
    for line in out.split_inclusive(|&b| b == b'\n') {
        lines.push((at, line));
        at += line.len();
    }
    let trim = |l: &[u8]| -> Vec<u8> {
        let l = l.strip_suffix(b"\n").unwrap_or(l);
        l.strip_suffix(b"\r").unwrap_or(l).to_vec()
    };
    let Some(si) = lines.iter().position(|(_, l)| trim(l) == start.as_bytes()) else {
        return (Vec::new(), None);
    };
    let from = lines[si].0 + lines[si].1.len();
    let last_end = lines[si + 1..]
        .iter()
        .rposition(|(_, l)| trim(l).starts_with(end.as_bytes()));
    match last_end {
        Some(i) => {
            let (pos, line) = lines[si + 1 + i];
            let rest = String::from_utf8_lossy(&trim(line)[end.len()..]).into_owned();
            // The marker is printed after a newline of its own: drop that one.
            let mut body = out[from..pos].to_vec();
            if body.ends_with(b"\n") {
                body.pop();
            }
            (body, Some(rest))
        }
        None => (out[from..].to_vec(), None),
    }
}

/// The shell line that ends a step of a grading command: the step's exit code (`$c`) printed
/// as the line `<marker> <code>` after a line break of its own, which [`take_step`] reads.
pub(crate) fn step_end(marker: &str) -> String {
    format!("c=$?; printf '\\n%s %s\\n' '{marker}' \"$c\"")
}

/// The output of one step of the grading command that starts at `from`: everything up to the
/// first line `<marker> <code>` (less the line break printed before the marker), the step's
/// exit code, and where the next step's output starts. `None` when the marker is missing (the
/// command stopped or timed out before the step ended).
pub(crate) fn take_step<'o>(
    out: &'o [u8],
    from: usize,
    marker: &str,
) -> Option<(&'o [u8], i32, usize)> {
    let mut at = from;
    for line in out[from..].split_inclusive(|&b| b == b'\n') {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        if let Some(rest) = text
            .strip_prefix(marker.as_bytes())
            .and_then(|r| r.strip_prefix(b" "))
        {
            let code = std::str::from_utf8(rest).ok()?.trim().parse().ok()?;
            let body = &out[from..at];
            let body = body.strip_suffix(b"\n").unwrap_or(body);
            return Some((body, code, at + line.len()));
        }
        at += line.len();
    }
    None
}

/// The exit code of [`guard_script`] (and of [`reset_script`]) when a path leads out of the
/// workspace.
pub(crate) const OUTSIDE_EXIT: i32 = 86;

/// The paths a test patch touches (old and new names), sorted and deduplicated.
fn touched(files: &[PatchFile]) -> Vec<&str> {
    let mut paths: Vec<&str> = files
        .iter()
        .flat_map(|f| [f.old.as_deref(), f.new.as_deref()])
        .flatten()
        .collect();
    paths.sort_unstable();
    paths.dedup();
    paths
}

/// A shell script (run in the repository) that exits [`OUTSIDE_EXIT`], naming the path, when
/// some path of `paths` would lead out of the repository: an absolute path, `..` components, or
/// a directory on the way that is a symbolic link (or a dangling one) resolving outside. The
/// path's last component is not followed: `rm -rf` and `git checkout` act on a link itself.
/// It changes nothing, so it runs before anything is deleted.
pub(crate) fn guard_script(paths: &[&str]) -> String {
    let mut script = String::from(
        r#"bench_root=$(pwd -P)
bench_inside() {
  case "$1" in /*) return 1 ;; esac
  d=$(dirname -- "$1")
  while [ ! -d "$d" ]; do
    if [ -L "$d" ]; then return 1; fi
    d=$(dirname -- "$d")
  done
  r=$(cd -P -- "$d" && pwd -P) || return 1
  case "$r/" in "$bench_root"/*) return 0 ;; esac
  return 1
}
"#,
    );
    for p in paths {
        let q = shell_quote(p);
        script.push_str(&format!(
            "bench_inside {q} || {{ printf 'bench: %s leads out of the workspace (a symbolic link or ..): it is not touched\\n' {q} >&2; exit {OUTSIDE_EXIT}; }}\n"
        ));
    }
    script
}

/// Before the hidden test patch: every path it touches back to the base (`HEAD`, the stripped
/// base commit) and every path it creates removed, whatever the candidate did to them; stale
/// `.git` lock files and Python bytecode removed. First, every path is checked to stay inside
/// the repository ([`guard_script`]): nothing is deleted through a link that leads out.
pub(crate) fn reset_script(files: &[PatchFile]) -> String {
    let paths = touched(files);
    let mut script = String::from("set -e\n");
    script.push_str(&guard_script(&paths));
    for p in paths {
        let q = shell_quote(p);
        script.push_str(&format!(
            "rm -rf -- {q}\nif git cat-file -e HEAD:{q} 2>/dev/null; then git checkout -q HEAD -- {q}; fi\n"
        ));
    }
    script.push_str(
        "find .git -name '*.lock' -type f -delete\n\
         find . -path ./.git -prune -o -type d -name __pycache__ -prune -exec rm -rf {} + \n\
         find . -path ./.git -prune -o -type f -name '*.pyc' -exec rm -f {} + \n",
    );
    script
}

/// Parses a test log with the task's parser.
async fn parse(job: &GradeJob, log: String, budget: Duration) -> Result<Statuses, GradeError> {
    let task = &job.task;
    let parser = task.log_parser();
    if crate::parsers::is_builtin(parser) {
        return parse_log(parser.trim(), &log).map_err(|e| {
            GradeError::Task(format!(
                "cannot parse the test log of {}: {e}",
                task.instance_id()
            ))
        });
    }
    let source = parser.to_string();
    let limits = ScriptLimits {
        timeout: budget.min(ScriptLimits::default().timeout),
        ..Default::default()
    };
    let raw = tokio::task::spawn_blocking(move || run_script_parser(&source, &log, &limits))
        .await
        .map_err(|e| GradeError::Task(e.to_string()))?
        .map_err(|e| GradeError::Task(format!("{e} ({})", task.instance_id())))?;
    Ok(raw
        .iter()
        .map(|(k, v)| (k.clone(), super::script_status(v)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::grading::nonce;

    #[test]
    fn only_exact_nonced_markers_bound_the_log() {
        let out = b"build\nBENCH-n1-TESTS-START\nBENCH-xx-TESTS-END 0\nreal\nBENCH-n1-TESTS-START\nmore\n\nBENCH-n1-TESTS-END 1\n";
        let (log, end) = between(out, "BENCH-n1-TESTS-START", "BENCH-n1-TESTS-END ");
        assert_eq!(
            String::from_utf8_lossy(&log),
            "BENCH-xx-TESTS-END 0\nreal\nBENCH-n1-TESTS-START\nmore\n"
        );
        assert_eq!(end.as_deref(), Some("1"));
        // A forged end line after the real one that only contains the marker does not count.
        let out = b"BENCH-n1-TESTS-START\nok\n\nBENCH-n1-TESTS-END 1\necho BENCH-n1-TESTS-END 0\n";
        let (log, end) = between(out, "BENCH-n1-TESTS-START", "BENCH-n1-TESTS-END ");
        assert_eq!(String::from_utf8_lossy(&log), "ok\n");
        assert_eq!(end.as_deref(), Some("1"));
        // Killed before the end: everything after the start; never started: nothing.
        let (log, end) = between(b"x\nBENCH-n-S\npartial", "BENCH-n-S", "BENCH-n-E");
        assert_eq!((log, end), (b"partial".to_vec(), None));
        assert_eq!(between(b"no markers\n", "S", "E"), (Vec::new(), None));
    }

    #[test]
    fn nonces_differ() {
        let (a, b) = (nonce(), nonce());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }

    /// The guard, run by `sh` in a repository: which paths stay inside.
    #[test]
    fn the_guard_lets_only_paths_inside_the_repository_through() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("repo");
        let outside = d.path().join("outside");
        fs_err::create_dir_all(repo.join("src/tests")).unwrap();
        fs_err::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, repo.join("out")).unwrap();
        std::os::unix::fs::symlink("src/tests", repo.join("tests")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/dir", repo.join("dangling")).unwrap();
        let passes = |p: &str| {
            std::process::Command::new("sh")
                .arg("-c")
                .arg(guard_script(&[p]))
                .current_dir(&repo)
                .output()
                .unwrap()
                .status
                .code()
                == Some(0)
        };
        for p in [
            "a.py",
            "src/tests/t.py",
            "new/dir/t.py",
            "tests/t.py",
            "out",
            "src/../a.py",
        ] {
            assert!(passes(p), "{p} is inside");
        }
        for p in [
            "/etc/passwd",
            "../x",
            "src/../../x",
            "out/t.py",
            "out/sub/t.py",
            "dangling/t.py",
        ] {
            assert!(!passes(p), "{p} leads out");
        }
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(guard_script(&["a.py", "out/t.py"]))
            .current_dir(&repo)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(OUTSIDE_EXIT));
        assert!(String::from_utf8_lossy(&out.stderr).contains("out/t.py leads out"));
    }

    #[test]
    fn reset_restores_modified_and_removes_created_paths() {
        let files = patch_files(
            "diff --git a/tests/test_add.py b/tests/test_add.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_add.py\n@@ -0,0 +1 @@\n+x\ndiff --git a/tests/it's.py b/tests/it's.py\n--- a/tests/it's.py\n+++ b/tests/it's.py\n@@ -1 +1 @@\n-a\n+b\n",
        );
        let s = reset_script(&files);
        assert!(s.contains("rm -rf -- 'tests/test_add.py'"), "{s}");
        assert!(
            s.contains("git checkout -q HEAD -- 'tests/it'\\''s.py'"),
            "{s}"
        );
        assert!(s.contains("__pycache__") && s.contains("*.lock"), "{s}");
    }
}
