//! The grading steps the protocols share, over the [`Sandbox`] trait: write the patches beside
//! the repository; apply the hidden test patch (an empty one is skipped) and then the candidate;
//! run `rebuild_cmds` and `test_cmds` in one shell from the task's workdir; print the log
//! (`print_cmds`, or the tests' own output); parse it (a built-in parser, or the task's Python
//! script through [`script_status`](super::script_status)); apply the verdict rule.
//!
//! One budget (the grade's timeout) bounds applying, rebuilding and testing together; printing
//! and a parser script get at most the budget and at most 10 minutes and 2 minutes.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::GradeError;
use crate::backend::{ExecResult, Sandbox};
use crate::jobs::{GradeJob, GradeOutput};
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

/// A grade's outcome and what it stores.
#[derive(Debug, Clone)]
pub struct Graded {
    pub output: GradeOutput,
    pub statuses: Statuses,
    /// Named logs: `log` (what was parsed), `test_output`, `apply_log`.
    pub logs: BTreeMap<String, Vec<u8>>,
}

async fn run(
    s: &dyn Sandbox,
    script: &str,
    limit: Duration,
    cancel: &CancellationToken,
) -> Result<ExecResult, GradeError> {
    Ok(s.exec(script, &[], limit, cancel).await?)
}

/// Runs the steps of `recipe` for `job` with the candidate `patch`.
pub async fn grade(
    recipe: &Recipe,
    job: &GradeJob,
    patch: &[u8],
    s: &dyn Sandbox,
    cancel: &CancellationToken,
) -> Result<Graded, GradeError> {
    let started = Instant::now();
    let budget = job.timeout();
    let left = || {
        budget
            .saturating_sub(started.elapsed())
            .max(Duration::from_millis(100))
    };
    let task = &job.task;
    let state = s.paths().state.clone();
    let workdir = s.paths().workdir.clone();
    let empty = patch.iter().all(u8::is_ascii_whitespace);
    let test_patch_path = format!("{state}/test.patch");
    let candidate_path = format!("{state}/candidate.patch");
    let mut files: Vec<(&str, &[u8], u32)> = vec![(
        test_patch_path.as_str(),
        task.test_patch().as_bytes(),
        0o644,
    )];
    if !empty {
        files.push((candidate_path.as_str(), patch, 0o644));
    }
    s.put_files(&files).await?;

    let mut apply_log = Vec::new();
    apply_log.extend_from_slice(b">>>>> test patch\n");
    if task.test_patch().trim().is_empty() {
        apply_log.extend_from_slice(b"no hidden test patch\n");
    } else {
        let r = run(
            s,
            &format!("{} '{test_patch_path}'", recipe.test_patch_apply),
            left(),
            cancel,
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
    }
    let patch_applied = if empty {
        apply_log.extend_from_slice(b">>>>> candidate patch is empty\n");
        true
    } else {
        let r = run(
            s,
            &format!("{} '{candidate_path}'", recipe.candidate_apply),
            left(),
            cancel,
        )
        .await?;
        apply_log.extend_from_slice(b">>>>> candidate patch\n");
        apply_log.extend_from_slice(&r.output);
        if r.exit_code != Some(0) {
            apply_log.extend_from_slice(b"<<<<<< PATCH FAILED TO APPLY CLEANLY >>>>>>\n");
        }
        r.exit_code == Some(0)
    };

    // One shell for rebuild + tests (state such as cwd carries over, as in upstream's session).
    let mut script = format!("cd '{workdir}'\n");
    let rebuild = task.rebuild_cmds().join(" ; ");
    if !rebuild.trim().is_empty() {
        script.push_str(&rebuild);
        script.push('\n');
    }
    let test = task.test_cmds().join(" ; ");
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
    if print.is_some() {
        script.push_str(&format!("pwd -P > '{state}/cwd'\n"));
    }
    let tests = run(s, &script, left(), cancel).await?;
    let timed_out = tests.timed_out;
    let log = match &print {
        Some(print) => {
            let print_script = format!(
                "cd \"$(cat '{state}/cwd' 2>/dev/null || echo '{workdir}')\" 2>/dev/null || cd '{workdir}'\n{print}\n"
            );
            run(
                s,
                &print_script,
                budget.min(Duration::from_secs(600)),
                cancel,
            )
            .await?
            .output
        }
        None => tests.output.clone(),
    };
    let text = String::from_utf8_lossy(&log).into_owned();
    let statuses = parse(job, text, budget).await?;
    let mut output = super::verdict(
        task.fail_to_pass(),
        task.pass_to_pass(),
        &statuses,
        patch_applied,
        timed_out,
    );
    output.empty_patch = empty;
    output.test_exit_code = tests.exit_code;
    output.duration_ms = started.elapsed().as_millis() as u64;
    let logs = BTreeMap::from([
        ("log".to_string(), log),
        ("test_output".to_string(), tests.output),
        ("apply_log".to_string(), apply_log),
    ]);
    Ok(Graded {
        output,
        statuses,
        logs,
    })
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
