//! The official SWE-bench harness's grading (swebench 5.0.2 `run_evaluation.py` and
//! `grading.py`; the eval scripts of 4.x's `make_eval_script_list_py` and
//! `make_eval_script_list_common`), for SWE-bench full, Verified, Lite, Multilingual,
//! Multimodal and SWE-rebench rows, inside bench's locked protocol (the steps are shared with
//! SWE-rebench V2's protocol, `swe_rebench_v2.rs`, through a `Flavor`: its apply chain, test
//! patch command and reward):
//!
//! 1. the grading sandbox's history stripped to the base and checked fail-closed;
//! 2. the candidate applied by upstream's chain (`git apply --verbose`, `--3way`, `--reject`,
//!    `patch --batch --forward --fuzz=5 -p1 -i`, the tree reset with `git checkout -- . ;
//!    git clean -fd` between attempts, then `git apply --check --reverse`); none applies: not
//!    applied, unresolved, no tests run (upstream's `>>>>> Patch Apply Failed`);
//! 3. the hidden test patch's paths reset (`steps::reset_script`: modified paths back to the
//!    base, created ones removed, `.git` locks and bytecode cleared);
//! 4. the eval script: the setup lines the dataset reader built from the specs table
//!    (`rebuild_cmds`: conda activation, eval commands, install; for the other languages `cd`
//!    and `git config`), `git checkout <base> <test files>`, the test patch (`git apply -v`; failing is a grading error), upstream's
//!    `>>>>> Start Test Output` / `>>>>> End Test Output` / `>>>>> Test Exit Code` lines for the
//!    official grader's sake, the test command with its directives, the reset again. The
//!    boundaries and the exit code bench reads are nonce'd lines around them;
//! 5. `get_logs_eval`: a log holding an error marker, or without the (nonce'd) markers, has no
//!    statuses; the section between the markers is parsed by the row's parser, the whole log
//!    when that gives nothing; nothing parsed and no sign a suite ran (`SUITE_RAN`): no
//!    statuses; a non-zero exit with no FAILED/ERROR status: no statuses;
//! 6. `get_eval_tests_report` and `get_resolution_status`: PASSED/XFAIL pass; a missing, FAILED,
//!    ERROR or SKIPPED FAIL_TO_PASS test fails; a SKIPPED PASS_TO_PASS test is maintained;
//!    truncated parametrized ids match by prefix when the candidates agree; FAIL_ONLY_REPOS
//!    count only an explicit FAILED; rates are 1 when empty; FULL, PARTIAL or NO, resolved only
//!    for FULL.
//!
//! Not here: the specs table and directives (`swe_bench/specs.rs`), the parsers
//! (`parsers/swebench/`).

pub mod specs;

use std::sync::OnceLock;
use std::time::Duration;

use async_trait::async_trait;
use regex::Regex;
use tokio_util::sync::CancellationToken;

use super::GradeError;
use super::grading::{Graded, Grading, Protocol, nonce};
use super::paths::{PatchFile, patch_files};
use super::steps::{between, reset_script, run, step_end, take_step};
use crate::backend::{ExecResult, Sandbox, shell_quote};
use crate::jobs::{GradeJob, GradeOutput, GradingTask, Resolution};
use crate::parsers::Statuses;
use crate::parsers::swebench::{RawStatuses, raw_parser};
use crate::tasks::TaskBase;

pub const VERSION: u32 = 1;

/// Upstream's `GIT_APPLY_CMDS` (5.x), tried in order.
pub const APPLY_CHAIN: [&str; 4] = [
    "git apply --verbose",
    "git apply --verbose --3way",
    "git apply --verbose --reject",
    "patch --batch --forward --fuzz=5 -p1 -i",
];

/// What differs between the graders this module ports: the apply chain, how the hidden test
/// patch is applied, and which rule turns statuses into a verdict.
pub(crate) struct Flavor {
    /// The commands tried in order on the candidate (the tree reset between attempts), then
    /// `git apply --check --reverse`.
    pub apply_chain: &'static [&'static str],
    /// The command that applies the hidden test patch (its path appended).
    pub test_patch_apply: &'static str,
    /// `true`: resolved iff every FAIL_TO_PASS and PASS_TO_PASS test is `PASSED` (SWE-rebench
    /// V2's reward); `false`: upstream's `get_eval_tests_report` and `get_resolution_status`.
    pub all_passed: bool,
}

impl Flavor {
    /// The tests report and the verdict of `sm` under this flavour's rule (`fail_only`: the
    /// instance's repository is one of upstream's FAIL_ONLY_REPOS; SWE-bench's rule only).
    fn report(
        &self,
        sm: &RawStatuses,
        fail_to_pass: &[String],
        pass_to_pass: &[String],
        fail_only: bool,
    ) -> (TestsReport, Resolution) {
        if self.all_passed {
            let r = all_passed_report(sm, fail_to_pass, pass_to_pass);
            let res = all_passed_resolution(&r);
            (r, res)
        } else {
            let r = tests_report(sm, fail_to_pass, pass_to_pass, fail_only);
            let res = resolution(&r);
            (r, res)
        }
    }
}

/// The official SWE-bench harness (5.0.2).
pub(crate) const SWE_BENCH: Flavor = Flavor {
    apply_chain: &APPLY_CHAIN,
    test_patch_apply: "git apply -v",
    all_passed: false,
};

/// The error markers that void a log (`get_logs_eval`).
const BAD_CODES: [&str; 4] = [
    ">>>>> Patch Apply Failed",
    ">>>>> Reset Failed",
    ">>>>> Tests Errored",
    ">>>>> Tests Timed Out",
];

/// `grading.SUITE_RAN`: evidence a test runner executed.
fn suite_ran(log: &str) -> bool {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(concat!(
            r"(?m)Executed [1-9]\d* of \d+",
            r"|TOTAL: [1-9]\d* (?:SUCCESS|FAILED)",
            r"|[1-9]\d* passing",
            r"|Tests:\s+[1-9]\d*",
            r"|Test Suites:\s+(?:\d+ \w+, )*[1-9]\d* total",
            r"|^# tests [1-9]\d*",
            r"|[1-9]\d* specs?, \d+ failures?",
            r"|': ok$",
        ))
        .expect("valid pattern")
    })
    .is_match(log)
}

/// What `get_logs_eval` found in a test output.
#[derive(Debug, Clone, PartialEq)]
pub struct LogsEval {
    pub statuses: RawStatuses,
    pub found: bool,
}

/// `get_logs_eval` over bench's nonce'd markers: `output` is the eval script's whole output,
/// `start`/`end` the nonce'd marker lines (the end line carries the test exit code).
pub fn logs_eval(parser: &str, output: &[u8], start: &str, end: &str) -> LogsEval {
    let none = LogsEval {
        statuses: RawStatuses::default(),
        found: false,
    };
    let content = String::from_utf8_lossy(output);
    if BAD_CODES.iter().any(|c| content.contains(c)) {
        return none;
    }
    let (section, exit) = between(output, start, end);
    let Some(exit) = exit else {
        return none;
    };
    let section = String::from_utf8_lossy(&section);
    let Some(mut map) = parse_raw(parser, &section) else {
        return none;
    };
    if map.is_empty() {
        map = parse_raw(parser, &content).unwrap_or_default();
    }
    if map.is_empty() && !suite_ran(&content) {
        return none;
    }
    let exit: Option<i32> = exit.trim().parse().ok();
    if exit.is_some_and(|c| c != 0)
        && !map.is_empty()
        && !map.iter().any(|(_, s)| s == "FAILED" || s == "ERROR")
    {
        return none;
    }
    LogsEval {
        statuses: map,
        found: true,
    }
}

/// `_resolve_case`: the key of `case`, or for a truncated parametrized id (more `[` than `]`)
/// the first key it prefixes when all such keys agree on pass-vs-not.
fn resolve<'a>(case: &str, sm: &'a RawStatuses) -> Option<&'a str> {
    if let Some(k) = sm.key(case) {
        return Some(k);
    }
    if case.matches('[').count() > case.matches(']').count() {
        let matches: Vec<(&str, &str)> = sm.iter().filter(|(k, _)| k.starts_with(case)).collect();
        let passing = |s: &str| s == "PASSED" || s == "XFAIL";
        if let Some(first) = matches.first()
            && matches.iter().all(|(_, s)| passing(s) == passing(first.1))
        {
            return Some(first.0);
        }
    }
    None
}

fn passed(case: &str, sm: &RawStatuses) -> bool {
    resolve(case, sm).is_some_and(|k| matches!(sm.get(k), Some("PASSED" | "XFAIL")))
}

fn maintained(case: &str, sm: &RawStatuses) -> bool {
    passed(case, sm) || resolve(case, sm).is_some_and(|k| sm.get(k) == Some("SKIPPED"))
}

fn failed(case: &str, sm: &RawStatuses) -> bool {
    match resolve(case, sm) {
        None => true,
        Some(k) => matches!(sm.get(k), Some("FAILED" | "ERROR" | "SKIPPED")),
    }
}

/// Success and failure lists of FAIL_TO_PASS and PASS_TO_PASS (`get_eval_tests_report`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TestsReport {
    pub f2p_success: Vec<String>,
    pub f2p_failure: Vec<String>,
    pub p2p_success: Vec<String>,
    pub p2p_failure: Vec<String>,
}

pub fn tests_report(
    sm: &RawStatuses,
    fail_to_pass: &[String],
    pass_to_pass: &[String],
    fail_only: bool,
) -> TestsReport {
    let mut r = TestsReport::default();
    let only_failed = |t: &str| sm.get(t) == Some("FAILED");
    for t in fail_to_pass {
        if fail_only {
            if only_failed(t) {
                r.f2p_failure.push(t.clone());
            } else {
                r.f2p_success.push(t.clone());
            }
        } else if passed(t, sm) {
            r.f2p_success.push(t.clone());
        } else if failed(t, sm) {
            r.f2p_failure.push(t.clone());
        }
    }
    for t in pass_to_pass {
        if fail_only {
            if only_failed(t) {
                r.p2p_failure.push(t.clone());
            } else {
                r.p2p_success.push(t.clone());
            }
        } else if maintained(t, sm) {
            r.p2p_success.push(t.clone());
        } else if failed(t, sm) {
            r.p2p_failure.push(t.clone());
        }
    }
    r
}

/// SWE-rebench V2's reward, `F2P ∪ P2P ⊆ PASSED`, as a tests report: a test succeeds only
/// when its status is exactly `PASSED` (XFAIL, SKIPPED and a missing test fail, in either list).
pub fn all_passed_report(
    sm: &RawStatuses,
    fail_to_pass: &[String],
    pass_to_pass: &[String],
) -> TestsReport {
    let mut r = TestsReport::default();
    let ok = |t: &str| sm.get(t) == Some("PASSED");
    for t in fail_to_pass {
        if ok(t) {
            r.f2p_success.push(t.clone());
        } else {
            r.f2p_failure.push(t.clone());
        }
    }
    for t in pass_to_pass {
        if ok(t) {
            r.p2p_success.push(t.clone());
        } else {
            r.p2p_failure.push(t.clone());
        }
    }
    r
}

/// The verdict of an all-passed report: FULL when nothing failed, else NO (the reward is
/// binary: no partial credit).
pub fn all_passed_resolution(r: &TestsReport) -> Resolution {
    if r.f2p_failure.is_empty() && r.p2p_failure.is_empty() {
        Resolution::Full
    } else {
        Resolution::No
    }
}

fn rate(success: usize, failure: usize) -> f64 {
    if success + failure == 0 {
        1.0
    } else {
        success as f64 / (success + failure) as f64
    }
}

/// `get_resolution_status`.
pub fn resolution(r: &TestsReport) -> Resolution {
    let f2p = rate(r.f2p_success.len(), r.f2p_failure.len());
    let p2p = rate(r.p2p_success.len(), r.p2p_failure.len());
    if f2p == 1.0 && p2p == 1.0 {
        Resolution::Full
    } else if f2p < 1.0 && f2p > 0.0 && p2p == 1.0 {
        Resolution::Partial
    } else {
        Resolution::No
    }
}

fn parse_raw(parser: &str, log: &str) -> Option<RawStatuses> {
    raw_parser(parser).map(|f| f(log))
}

/// The three-valued status of an upstream word (`None`: a word upstream grades as neither).
fn status_of(word: &str) -> Option<crate::parsers::TestStatus> {
    use crate::parsers::TestStatus;
    match word {
        "PASSED" | "XFAIL" => Some(TestStatus::Pass),
        "FAILED" | "ERROR" => Some(TestStatus::Fail),
        "SKIPPED" => Some(TestStatus::Skip),
        _ => None,
    }
}

/// The three-valued statuses bench stores (words upstream grades as neither are left out).
fn stored(sm: &RawStatuses) -> Statuses {
    sm.iter()
        .filter_map(|(k, w)| status_of(w).map(|s| (k, s)))
        .collect()
}

/// The eval script after the setup lines: upstream's reset, the test patch, the markers, the
/// test command, the exit code, the reset again.
fn eval_script(
    setup: &[String],
    test_cmd: &str,
    base_commit: &str,
    test_files: &[String],
    test_patch: Option<&str>,
    test_patch_apply: &str,
    nonce: &str,
) -> String {
    let mut s = String::from("#!/bin/bash\nset -uxo pipefail\n");
    for l in setup {
        s.push_str(l);
        s.push('\n');
    }
    let files: Vec<String> = test_files.iter().map(|f| shell_quote(f)).collect();
    let reset = format!("git checkout {base_commit} {}\n", files.join(" "));
    if !files.is_empty() {
        s.push_str(&reset);
    }
    if let Some(p) = test_patch {
        s.push_str(&format!(
            "{test_patch_apply} {} || {{ printf '\\n%s\\n' 'BENCH-{nonce}-TESTPATCH-FAILED'; exit 97; }}\n",
            shell_quote(p)
        ));
    }
    s.push_str(&format!("printf '\\n%s\\n' 'BENCH-{nonce}-TESTS-START'\n"));
    s.push_str(": '>>>>> Start Test Output'\n");
    s.push_str(test_cmd);
    s.push_str("\nSWEBENCH_TEST_EXIT_CODE=$?\n");
    s.push_str(": '>>>>> End Test Output'\n");
    s.push_str("echo \">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE\"\n");
    s.push_str(&format!(
        "printf '\\n%s%s\\n' 'BENCH-{nonce}-TESTS-END ' \"$SWEBENCH_TEST_EXIT_CODE\"\n"
    ));
    if !files.is_empty() {
        s.push_str(&reset);
    }
    s
}

/// Upstream's apply chain on the candidate at `path`, as shell lines that end each attempt
/// with the line `<step>-apply-<i> <exit code>` (`-check` for `git apply --check --reverse`)
/// and leave the function `bench_apply` returning 0 when one applied; the tree is reset
/// (`git checkout -- . ; git clean -fd`, quietly) before every attempt but the first.
fn apply_chain_script(path: &str, step: &str, chain: &[&str]) -> String {
    let path = shell_quote(path);
    let mut s = String::from("bench_apply() {\n");
    for (i, cmd) in chain.iter().enumerate() {
        if i > 0 {
            s.push_str("git checkout -- . >/dev/null 2>&1 ; git clean -fd >/dev/null 2>&1\n");
        }
        s.push_str(&format!(
            "{cmd} {path}\n{}; [ \"$c\" = 0 ] && return 0\n",
            step_end(&format!("{step}-apply-{i}"))
        ));
    }
    s.push_str(&format!(
        "git apply --check --reverse {path}\n{}; [ \"$c\" = 0 ] && return 0\nreturn 1\n}}\n",
        step_end(&format!("{step}-check"))
    ));
    s
}

/// Reads the output of [`apply_chain_script`] from `at`: whether the candidate applied, the
/// command that applied it, the log of every attempt, and where the output after the chain
/// starts. `None` when a marker is missing (the command stopped before the chain ended).
fn read_apply_chain(
    out: &[u8],
    mut at: usize,
    step: &str,
    chain: &[&'static str],
) -> Option<(bool, Option<&'static str>, Vec<u8>, usize)> {
    let mut log = Vec::new();
    for (i, cmd) in chain.iter().enumerate() {
        let (body, code, next) = take_step(out, at, &format!("{step}-apply-{i}"))?;
        at = next;
        log.extend_from_slice(format!(">>>>> {cmd}\n").as_bytes());
        log.extend_from_slice(body);
        if code == 0 {
            log.extend_from_slice(b">>>>> Applied Patch\n");
            return Some((true, Some(cmd), log, at));
        }
    }
    let (_, code, next) = take_step(out, at, &format!("{step}-check"))?;
    if code == 0 {
        log.extend_from_slice(b">>>>> Applied Patch: verified already applied\n");
        return Some((true, Some("git apply --check --reverse"), log, next));
    }
    Some((false, None, log, next))
}

/// Upstream's apply chain on the candidate at `path` (in the sandbox), in one command:
/// whether it applied, the command that applied it (`git apply --check --reverse` when it was
/// found already applied), and the log of every attempt.
pub async fn apply_candidate(
    s: &dyn Sandbox,
    path: &str,
    chain: &[&'static str],
    budget: Duration,
    cancel: &CancellationToken,
) -> Result<(bool, Option<&'static str>, Vec<u8>), GradeError> {
    let step = format!("BENCH-{}-STEP", nonce());
    let script = format!(
        "exec 2>&1\n{}bench_apply\n",
        apply_chain_script(path, &step, chain)
    );
    let r = run(s, &script, budget, cancel).await?;
    let (applied, by, log, _) = read_apply_chain(&r.output, 0, &step, chain).ok_or_else(|| {
        GradeError::Task(format!(
            "the apply chain stopped before it ended: {}",
            String::from_utf8_lossy(&r.output).trim()
        ))
    })?;
    Ok((applied, by, log))
}

/// The official SWE-bench harness's protocol.
pub(crate) struct SweBench;

/// The commands a SWE-bench-shaped grade runs that the audit checks: the rebuild and the
/// tests (SWE-bench and SWE-rebench V2 alike).
pub(crate) fn rebuild_and_test_cmds(job: &GradeJob) -> Vec<&str> {
    let task = &job.task;
    [task.rebuild_cmds(), task.test_cmds()]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect()
}

#[async_trait]
impl Protocol for SweBench {
    fn version(&self) -> u32 {
        VERSION
    }

    fn audited_commands<'j>(&self, job: &'j GradeJob) -> Vec<&'j str> {
        rebuild_and_test_cmds(job)
    }

    async fn steps(&self, g: &Grading<'_>) -> Result<(Graded, String), GradeError> {
        steps(g, &SWE_BENCH).await
    }
}

/// Grades the candidate on the job's task: the apply chain, the reset, the eval script, the
/// log parsed and the tests report, as upstream (`fl` says which upstream).
pub(crate) async fn steps(g: &Grading<'_>, fl: &Flavor) -> Result<(Graded, String), GradeError> {
    let task = &g.job.task;
    let id = task.instance_id();
    let parser = task.log_parser().trim().to_string();
    check_task(task, &parser)?;
    let history_check = g.clean().await?;
    let nonce = &g.nonce;
    let empty = g.patch.iter().all(u8::is_ascii_whitespace);
    let f = GradeFiles::in_state(g.sandbox);
    let files = patch_files(task.test_patch());
    let script = upload(g, fl, &f, &files, empty).await?;
    let step = format!("BENCH-{nonce}-STEP");
    let command = grade_command(fl, &f, &files, &step, empty);
    let r = run(g.sandbox, &command, g.left(), g.cancel).await?;
    let mut apply_log = Vec::new();
    let mut output = GradeOutput {
        empty_patch: empty,
        ..Default::default()
    };
    let (applied, next) = read_candidate(&r, fl, &step, empty, id, &mut apply_log, &mut output)?;
    output.patch_applied = applied;
    if !applied {
        apply_log.extend_from_slice(b">>>>> Patch Apply Failed\n");
        output.resolution = Some(Resolution::No);
        return Ok((
            Graded {
                output,
                statuses: Statuses::default(),
                logs: [("apply_log".to_string(), apply_log)].into(),
            },
            history_check,
        ));
    }
    let tests = read_hidden_tests(r, next, &step, nonce, id, &mut apply_log)?;
    let graded = tests_verdict(fl, g, &parser, tests, apply_log, script, output);
    Ok((graded, history_check))
}

/// A task the harness cannot grade as given: no test command (not in the specs table), a
/// dispatching parser that has no parser for this instance, or a parser that is not one of
/// the SWE-bench parsers. Checked before anything runs in the sandbox.
fn check_task(task: &GradingTask, parser: &str) -> Result<(), GradeError> {
    let id = task.instance_id();
    if task.test_cmds().is_empty() {
        return Err(GradeError::Task(format!(
            "{id}: no SWE-bench test command: its repository and version are not in bench's specs table (src/protocols/swe_bench/specs.toml), or its install_config has no test_cmd"
        )));
    }
    if crate::parsers::swebench::is_dispatch(parser) {
        let why = crate::parsers::swebench::for_instance(parser, id)
            .err()
            .unwrap_or_default();
        return Err(GradeError::Task(format!("{id}: {why}")));
    }
    if parse_raw(parser, "").is_none() {
        return Err(GradeError::Task(format!(
            "{id}: `{parser}` is not one of the SWE-bench parsers ({})",
            crate::parsers::builtin_parser_names()
                .iter()
                .filter(|n| n.starts_with("swebench-"))
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(())
}

/// Where a grade writes the candidate, the test patch and the eval script: the sandbox's state
/// directory, which applying a patch cannot reach.
struct GradeFiles {
    candidate: String,
    test_patch: String,
    eval: String,
}

impl GradeFiles {
    /// The grade's files in the state directory of `s`.
    fn in_state(s: &dyn Sandbox) -> GradeFiles {
        let state = &s.paths().state;
        GradeFiles {
            candidate: format!("{state}/candidate.patch"),
            test_patch: format!("{state}/test.patch"),
            eval: format!("{state}/eval.sh"),
        }
    }
}

/// The candidate (unless `empty`), the test patch and the eval script in one upload to `f`.
/// Returns the eval script (kept among the grade's logs).
async fn upload(
    g: &Grading<'_>,
    fl: &Flavor,
    f: &GradeFiles,
    files: &[PatchFile],
    empty: bool,
) -> Result<String, GradeError> {
    let task = &g.job.task;
    let base_commit = match task.base() {
        TaskBase::Image { base_commit, .. } => base_commit.clone(),
        TaskBase::Dir { .. } | TaskBase::Build { .. } => "HEAD".to_string(),
    };
    // `get_modified_files`: the patch's source files that exist at the base.
    let test_files: Vec<String> = files.iter().filter_map(|f| f.old.clone()).collect();
    let has_test_patch = !task.test_patch().trim().is_empty();
    let script = eval_script(
        task.rebuild_cmds(),
        &task.test_cmds().join(" ; "),
        &base_commit,
        &test_files,
        has_test_patch.then_some(f.test_patch.as_str()),
        fl.test_patch_apply,
        &g.nonce,
    );
    let mut uploads: Vec<(&str, &[u8], u32)> = vec![
        (f.test_patch.as_str(), task.test_patch().as_bytes(), 0o644),
        (f.eval.as_str(), script.as_bytes(), 0o755),
    ];
    if !empty {
        uploads.push((f.candidate.as_str(), g.patch, 0o644));
    }
    g.sandbox.put_files(&uploads).await?;
    Ok(script)
}

/// The apply chain (unless the candidate is `empty`), the reset of the hidden test patch's
/// paths (`files`) and the eval script, in one command: each step before the tests ends with a
/// marker line under `step` carrying its exit code, read in order, so nothing the tests print
/// can stand in for one.
fn grade_command(
    fl: &Flavor,
    f: &GradeFiles,
    files: &[PatchFile],
    step: &str,
    empty: bool,
) -> String {
    let mut command = String::from("exec 2>&1\n");
    if !empty {
        command.push_str(&apply_chain_script(&f.candidate, step, fl.apply_chain));
        command.push_str("bench_apply || exit 0\n");
    }
    command.push_str(&format!(
        "(\n{})\n{}; [ \"$c\" = 0 ] || exit 0\n/bin/bash {} 2>&1\n",
        reset_script(files),
        step_end(&format!("{step}-reset")),
        shell_quote(&f.eval)
    ));
    command
}

/// The grading error of a command `r` that stopped before `what` of `id` ended.
fn stopped(what: &str, id: &str, r: &ExecResult) -> GradeError {
    GradeError::Task(format!(
        "{what} of {id} stopped before it ended ({}): {}",
        match r.exit_code {
            Some(c) => format!("exit {c}"),
            None => "no exit code".into(),
        },
        String::from_utf8_lossy(&r.output).trim()
    ))
}

/// Reads the apply chain's part of the grade command's output `r` into `apply_log` (a budget
/// run out while applying: `output.timed_out`, not applied). Returns whether the candidate
/// applied and where the output after the chain starts.
fn read_candidate(
    r: &ExecResult,
    fl: &Flavor,
    step: &str,
    empty: bool,
    id: &str,
    apply_log: &mut Vec<u8>,
    output: &mut GradeOutput,
) -> Result<(bool, usize), GradeError> {
    if empty {
        apply_log.extend_from_slice(b">>>>> candidate patch is empty\n");
        return Ok((true, 0));
    }
    match read_apply_chain(&r.output, 0, step, fl.apply_chain) {
        Some((applied, by, log, next)) => {
            apply_log.extend_from_slice(&log);
            if let Some(by) = by {
                apply_log.extend_from_slice(format!(">>>>> applied by: {by}\n").as_bytes());
            }
            Ok((applied, next))
        }
        // The budget ran out while applying: unresolved, no tests ran.
        None if r.timed_out => {
            output.timed_out = true;
            Ok((false, 0))
        }
        None => Err(stopped("applying the candidate", id, r)),
    }
}

/// Reads the reset of the hidden test patch's paths from `at` in the grade command's output
/// `r` into `apply_log`, then checks the test patch applied. Returns the eval script's part
/// of `r` (the tests' output). A failing reset or test patch is a grading error.
fn read_hidden_tests(
    r: ExecResult,
    at: usize,
    step: &str,
    nonce: &str,
    id: &str,
    apply_log: &mut Vec<u8>,
) -> Result<ExecResult, GradeError> {
    apply_log.extend_from_slice(b">>>>> reset before the test patch\n");
    let Some((body, code, next)) = take_step(&r.output, at, &format!("{step}-reset")) else {
        return Err(stopped("resetting the hidden test patch's paths", id, &r));
    };
    apply_log.extend_from_slice(body);
    if code != 0 {
        return Err(GradeError::Task(format!(
            "cannot reset the paths of the hidden test patch of {id}: {}",
            String::from_utf8_lossy(body).trim()
        )));
    }
    let tests = ExecResult {
        output: r.output[next..].to_vec(),
        ..r
    };
    let failed_marker = format!("BENCH-{nonce}-TESTPATCH-FAILED");
    if tests
        .output
        .split(|&b| b == b'\n')
        .any(|l| l.strip_suffix(b"\r").unwrap_or(l) == failed_marker.as_bytes())
    {
        return Err(GradeError::Task(format!(
            "the hidden test patch of {id} does not apply: {}",
            String::from_utf8_lossy(&tests.output).trim()
        )));
    }
    Ok(tests)
}

/// `get_logs_eval` over the tests' output, then the flavour's tests report and verdict into
/// `output`, with the grade's logs (the eval `script` among them).
fn tests_verdict(
    fl: &Flavor,
    g: &Grading<'_>,
    parser: &str,
    tests: ExecResult,
    apply_log: Vec<u8>,
    script: String,
    mut output: GradeOutput,
) -> Graded {
    let task = &g.job.task;
    let nonce = &g.nonce;
    output.timed_out = tests.timed_out;
    let start = format!("BENCH-{nonce}-TESTS-START");
    let end = format!("BENCH-{nonce}-TESTS-END ");
    let (section, exit) = between(&tests.output, &start, &end);
    output.test_exit_code = exit.and_then(|e| e.trim().parse().ok());
    let eval = if tests.timed_out {
        LogsEval {
            statuses: RawStatuses::default(),
            found: false,
        }
    } else {
        logs_eval(parser, &tests.output, &start, &end)
    };
    let id = task.instance_id();
    let fail_only = specs::FAIL_ONLY_REPOS.contains(&specs::repo_of_instance(id).as_str());
    if eval.found {
        let (r, res) = fl.report(
            &eval.statuses,
            task.fail_to_pass(),
            task.pass_to_pass(),
            fail_only,
        );
        output.resolved = res == Resolution::Full;
        output.resolution = Some(res);
        output.fail_to_pass_success = r.f2p_success;
        output.fail_to_pass_failure = r.f2p_failure;
        output.pass_to_pass_success = r.p2p_success;
        output.pass_to_pass_failure = r.p2p_failure;
    } else {
        output.resolution = Some(Resolution::No);
        output.fail_to_pass_failure = task.fail_to_pass().to_vec();
        output.pass_to_pass_failure = task.pass_to_pass().to_vec();
    }
    Graded {
        output,
        statuses: stored(&eval.statuses),
        logs: [
            ("log".to_string(), section),
            ("test_output".to_string(), tests.output),
            ("apply_log".to_string(), apply_log),
            ("eval_script".to_string(), script.into_bytes()),
            (
                "swebench_statuses".to_string(),
                serde_json::to_vec_pretty(&eval.statuses.to_btree()).expect("strings serialize"),
            ),
        ]
        .into(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Runs the apply chain in a local sandbox whose base holds `file` = `base`; `setup` runs
    /// first (e.g. to store a blob 3way needs). Returns the command that applied and the file.
    async fn chain(base: &str, setup: &str, patch: &str) -> (Option<&'static str>, String) {
        chain_with(&APPLY_CHAIN, base, setup, patch).await
    }

    /// [`chain`] with the commands of `with`.
    pub(crate) async fn chain_with(
        with: &[&'static str],
        base: &str,
        setup: &str,
        patch: &str,
    ) -> (Option<&'static str>, String) {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        fs_err::create_dir_all(&src).unwrap();
        fs_err::write(src.join("f.txt"), base).unwrap();
        let cancel = CancellationToken::new();
        let sb = crate::backend::LocalSandbox::create(
            dir.path(),
            &src,
            &[],
            &crate::backend::Network::None,
            &cancel,
        )
        .await
        .unwrap();
        let s: &dyn Sandbox = &sb;
        let p = format!("{}/c.patch", s.paths().state);
        s.put_files(&[(p.as_str(), patch.as_bytes(), 0o644)])
            .await
            .unwrap();
        if !setup.is_empty() {
            let r = run(s, setup, Duration::from_secs(60), &cancel)
                .await
                .unwrap();
            assert_eq!(
                r.exit_code,
                Some(0),
                "{}",
                String::from_utf8_lossy(&r.output)
            );
        }
        let (applied, by, log) = apply_candidate(s, &p, with, Duration::from_secs(60), &cancel)
            .await
            .unwrap();
        assert_eq!(applied, by.is_some(), "{}", String::from_utf8_lossy(&log));
        let out = run(s, "cat f.txt", Duration::from_secs(10), &cancel)
            .await
            .unwrap();
        (by, String::from_utf8_lossy(&out.output).into_owned())
    }

    pub(crate) fn lines(n: usize, changed: Option<(usize, &str)>) -> String {
        (1..=n)
            .map(|i| match changed {
                Some((j, t)) if i == j => format!("{t}\n"),
                _ => format!("line {i}\n"),
            })
            .collect()
    }

    #[tokio::test]
    async fn a_clean_patch_applies_with_the_first_command() {
        let patch = "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n line 1\n-line 2\n+LINE 2\n line 3\n";
        let (by, f) = chain(&lines(3, None), "", patch).await;
        assert_eq!(by, Some("git apply --verbose"));
        assert_eq!(f, lines(3, Some((2, "LINE 2"))));
    }

    #[tokio::test]
    async fn only_patch_with_fuzz_applies_a_patch_with_stale_context() {
        // Context lines 4 and 6 differ from the tree; no index line, so 3way cannot help.
        let patch = "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -4,3 +4,3 @@\n old 4\n-line 5\n+LINE 5\n old 6\n";
        let (by, f) = chain(&lines(9, None), "", patch).await;
        assert_eq!(by, Some("patch --batch --forward --fuzz=5 -p1 -i"));
        assert_eq!(f, lines(9, Some((5, "LINE 5"))));
    }

    #[tokio::test]
    async fn only_3way_applies_a_patch_made_against_an_older_blob() {
        // The patch was made against v1, whose blob is in the object store (as in a real
        // clone); the tree holds v2, which changed a context line (3) of the hunk, two lines
        // away from the line the patch changes (6), so a 3-way merge is clean.
        let v1 = lines(9, None);
        let v2 = lines(9, Some((3, "line three")));
        let blob = {
            let dir = tempfile::tempdir().unwrap();
            let f = dir.path().join("v1");
            fs_err::write(&f, &v1).unwrap();
            let out = std::process::Command::new("git")
                .arg("hash-object")
                .arg(&f)
                .output()
                .unwrap();
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        };
        let patch = format!(
            "diff --git a/f.txt b/f.txt\nindex {}..0000001 100644\n--- a/f.txt\n+++ b/f.txt\n@@ -3,7 +3,7 @@\n line 3\n line 4\n line 5\n-line 6\n+LINE 6\n line 7\n line 8\n line 9\n",
            &blob[..12]
        );
        let setup = format!(
            "printf '{}' > ../state/v1 && git hash-object -w ../state/v1",
            v1.replace('\n', "\\n")
        );
        let (by, f) = chain(&v2, &setup, &patch).await;
        assert_eq!(by, Some("git apply --verbose --3way"));
        assert_eq!(f, v2.replace("line 6\n", "LINE 6\n"));
    }

    #[tokio::test]
    async fn a_patch_nothing_applies_is_not_applied() {
        let patch = "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n zzz\n-yyy\n+xxx\n www\n";
        let (by, f) = chain(&lines(3, None), "", patch).await;
        assert_eq!(by, None);
        assert_eq!(f, lines(3, None));
    }

    fn sm(pairs: &[(&str, &str)]) -> RawStatuses {
        let mut m = RawStatuses::default();
        for (k, v) in pairs {
            m.insert(*k, *v);
        }
        m
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn skipped_fails_fail_to_pass_but_maintains_pass_to_pass() {
        let m = sm(&[
            ("a", "SKIPPED"),
            ("b", "SKIPPED"),
            ("c", "XFAIL"),
            ("d", "odd"),
        ]);
        let r = tests_report(&m, &names(&["a", "c", "d"]), &names(&["b", "gone"]), false);
        assert_eq!(r.f2p_success, ["c"]);
        assert_eq!(r.f2p_failure, ["a"]);
        assert_eq!(r.p2p_success, ["b"]);
        assert_eq!(r.p2p_failure, ["gone"]);
        assert_eq!(resolution(&r), Resolution::No);
    }

    #[test]
    fn partial_needs_some_fail_to_pass_and_every_pass_to_pass() {
        let m = sm(&[("a", "PASSED"), ("b", "FAILED"), ("p", "PASSED")]);
        let r = tests_report(&m, &names(&["a", "b"]), &names(&["p"]), false);
        assert_eq!(resolution(&r), Resolution::Partial);
        let r = tests_report(&m, &names(&["a"]), &names(&["p"]), false);
        assert_eq!(resolution(&r), Resolution::Full);
        let r = tests_report(&m, &[], &[], false);
        assert_eq!(resolution(&r), Resolution::Full);
        let r = tests_report(&m, &names(&["a", "b"]), &names(&["b"]), false);
        assert_eq!(resolution(&r), Resolution::No);
    }

    #[test]
    fn fail_only_counts_only_explicit_failures() {
        let m = sm(&[("a", "ERROR"), ("b", "FAILED")]);
        let r = tests_report(&m, &names(&["a", "missing"]), &names(&["b"]), true);
        assert_eq!(r.f2p_success, ["a", "missing"]);
        assert_eq!(r.p2p_failure, ["b"]);
        assert_eq!(resolution(&r), Resolution::No);
        assert!(
            specs::FAIL_ONLY_REPOS
                .contains(&specs::repo_of_instance("markedjs__marked-1").as_str())
        );
    }

    #[test]
    fn truncated_parametrized_ids_match_by_prefix_when_unambiguous() {
        let m = sm(&[
            ("t[log(photon)]", "PASSED"),
            ("u[x]", "PASSED"),
            ("u[y]", "FAILED"),
        ]);
        assert!(passed("t[log(photon", &m));
        assert!(!passed("u[", &m));
        assert!(failed("u[", &m));
    }

    #[test]
    fn logs_eval_follows_get_logs_eval() {
        let (s, e) = ("BENCH-n-TESTS-START", "BENCH-n-TESTS-END ");
        let ok = b"setup\nBENCH-n-TESTS-START\nPASSED t.py::a\n\nBENCH-n-TESTS-END 0\n";
        let r = logs_eval("swebench-pytest", ok, s, e);
        assert!(r.found);
        assert_eq!(r.statuses.get("t.py::a"), Some("PASSED"));
        // Outside the section only: the whole log is parsed.
        let out = b"PASSED t.py::b\nBENCH-n-TESTS-START\nnothing\n\nBENCH-n-TESTS-END 0\n";
        assert_eq!(
            logs_eval("swebench-pytest", out, s, e)
                .statuses
                .get("t.py::b"),
            Some("PASSED")
        );
        // Error markers, a missing end, nothing run, a failing exit with no failure: void.
        let bad =
            b"BENCH-n-TESTS-START\nPASSED t.py::a\n>>>>> Tests Errored\nBENCH-n-TESTS-END 0\n";
        assert!(!logs_eval("swebench-pytest", bad, s, e).found);
        assert!(
            !logs_eval(
                "swebench-pytest",
                b"BENCH-n-TESTS-START\nPASSED t.py::a\n",
                s,
                e
            )
            .found
        );
        assert!(
            !logs_eval(
                "swebench-pytest",
                b"BENCH-n-TESTS-START\nno\nBENCH-n-TESTS-END 0\n",
                s,
                e
            )
            .found
        );
        let forged = b"BENCH-n-TESTS-START\nPASSED t.py::a\nBENCH-n-TESTS-END 1\n";
        assert!(!logs_eval("swebench-pytest", forged, s, e).found);
        // A suite that ran and named nothing: found, empty.
        let ran = b"BENCH-n-TESTS-START\n3 passing\nBENCH-n-TESTS-END 0\n";
        assert!(logs_eval("swebench-pytest", ran, s, e).found);
    }

    #[test]
    fn eval_script_resets_applies_and_marks() {
        let s = eval_script(
            &names(&["cd /testbed"]),
            "pytest -rA t.py",
            "abc",
            &names(&["t.py"]),
            Some("/s/test.patch"),
            "git apply -v",
            "n1",
        );
        let want = [
            "cd /testbed",
            "git checkout abc 't.py'",
            "git apply -v '/s/test.patch'",
            "BENCH-n1-TESTS-START",
            ": '>>>>> Start Test Output'",
            "pytest -rA t.py",
            "SWEBENCH_TEST_EXIT_CODE=$?",
            ": '>>>>> End Test Output'",
            ">>>>> Test Exit Code",
            "BENCH-n1-TESTS-END",
        ];
        let mut at = 0;
        for w in want {
            let i = s[at..]
                .find(w)
                .unwrap_or_else(|| panic!("{w} missing after {at}: {s}"));
            at += i + w.len();
        }
        assert!(s[at..].contains("git checkout abc 't.py'"));
    }
}
