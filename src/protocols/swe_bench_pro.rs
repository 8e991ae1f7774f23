//! SWE-bench Pro's grading, ported from `swe_bench_pro_eval.py` (`create_entryscript`,
//! `strip_binary_hunks`, the verdict of `main`), over the [`Sandbox`] trait:
//!
//! 1. `cd /app`, `git reset --hard {base}`, `git checkout {base}`;
//! 2. the candidate, its binary hunks stripped, applied with `git apply -v`;
//! 3. the LAST line of the row's `before_repo_set_cmd` (usually `git checkout <fix> -- <test
//!    files>`: the hidden tests);
//! 4. `bash run_script.sh <selected test files, comma-joined> > stdout.log 2> stderr.log`;
//! 5. `python parser.py stdout.log stderr.log output.json`;
//! 6. resolved = (fail_to_pass ∪ pass_to_pass) ⊆ {names whose status is `PASSED`}; a missing
//!    or unreadable output.json is unresolved.
//!
//! bench's locked protocol on top:
//! - The image's history beyond the base is stripped and checked fail-closed (`repo::clean`)
//!   before the candidate exists. The hidden tests' `git checkout <fix> -- <paths>` needs the fix
//!   commit, so before the strip bench checks exactly those paths at `<fix>` out into its own
//!   directory, and step 3 copies them over the candidate (the same files as the checkout);
//!   any other last line runs as written, after the strip.
//! - The grader's files live in a per-grade directory `/tmp/bench/pro-<nonce>/`, outside the
//!   repository (a patch cannot write there); run_script.sh is written with the candidate
//!   (before any of the candidate's code runs) and parser.py after the tests ran, so nothing
//!   the candidate or its tests did can replace them, and output.json is removed before the
//!   parser runs and read back between nonce'd markers in the same command.
//! - Steps 1 to 4 run as one command and step 5 with the reading of the logs as another: two
//!   execs per grade, as upstream's one entry script is one (each step before the tests ends
//!   with a nonce'd marker carrying its exit code, read in order).
//! - Before the hidden tests, the paths the row's `test_patch` touches are reset to the base
//!   (created ones removed) and `.git` locks and Python bytecode removed, as in the other
//!   protocols (a candidate's forged `.pyc` of a hidden test is not loaded).
//! - A candidate that does not apply is unresolved (`patch_applied: false`; upstream runs the
//!   tests on the base then, which fails its FAIL_TO_PASS tests anyway); a run past the
//!   stage's timeout, at most upstream's sandbox lifetime of 3600 s, is unresolved with
//!   `timed_out`.
//!
//! Not ported: the Dockerfiles' `ENV` lines as exports (a docker exec already gets the image's
//! environment).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use async_trait::async_trait;

use super::GradeError;
use super::grading::{Graded, Grading, Protocol};
use super::paths::patch_files;
use super::steps::{between, reset_script, run, step_end, take_step};
use crate::backend::{ExecResult, shell_quote};
use crate::jobs::{GradeJob, GradeOutput, GradingTask};
use crate::parsers::{Statuses, TestStatus};
use crate::tasks::ProSpec;

pub const VERSION: u32 = 1;

/// The lifetime of upstream's grading sandbox (`modal.Sandbox.create(timeout=60 * 60)`).
pub const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(3600);

/// Removes the sections of a git patch that carry binary content (a `Binary files ... differ`
/// line or a `GIT binary patch` block), keeping the others byte for byte, as upstream's
/// `strip_binary_hunks` does: the patch is cut before every line starting `diff --git `, and
/// whitespace-only sections are dropped.
pub fn strip_binary_hunks(patch: &str) -> String {
    if patch.is_empty() {
        return String::new();
    }
    let mut cuts = vec![0];
    let mut at = 0;
    for line in patch.split_inclusive('\n') {
        if at > 0 && line.starts_with("diff --git ") {
            cuts.push(at);
        }
        at += line.len();
    }
    cuts.push(patch.len());
    let mut kept = String::new();
    for w in cuts.windows(2) {
        let section = &patch[w[0]..w[1]];
        if section.trim().is_empty() {
            continue;
        }
        let binary = section.split('\n').any(|l| {
            l == "GIT binary patch"
                || (l.len() >= 20 && l.starts_with("Binary files ") && l.ends_with(" differ"))
        });
        if !binary {
            kept.push_str(section);
        }
    }
    kept
}

/// The last line of `before_repo_set_cmd`, as upstream takes it: `.strip().split("\n")[-1]`.
pub fn last_line(cmd: &str) -> &str {
    let trimmed = cmd.trim();
    trimmed.rsplit('\n').next().unwrap_or("")
}

/// `git checkout <rev> -- <paths...>` (plain words only): the revision and the paths.
pub fn checkout_from_history(line: &str) -> Option<(String, Vec<String>)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let plain = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./+@:,=".contains(c))
    };
    match words.as_slice() {
        ["git", "checkout", rev, "--", paths @ ..]
            if !paths.is_empty()
                && plain(rev)
                && !rev.starts_with('-')
                && paths.iter().all(|p| plain(p)) =>
        {
            Some((
                rev.to_string(),
                paths.iter().map(|p| p.to_string()).collect(),
            ))
        }
        _ => None,
    }
}

/// Where the stripped grading image of a Pro task holds the hidden tests it read from history
/// before the strip (outside the repository: a patch cannot write there).
pub const CAPTURED: &str = "/opt/bench-hidden-tests";

/// The script that copies the hidden tests' files at `rev` from history into `hidden`, leaving
/// the repository and its index untouched (exit 3 when the revision is not in the image).
/// `repo`, `work` and `hidden` are shell words (quoted, or a quoted variable).
fn capture_script(repo: &str, rev: &str, paths: &[String], work: &str, hidden: &str) -> String {
    let paths: Vec<String> = paths.iter().map(|p| shell_quote(p)).collect();
    format!(
        "cd {repo}\ngit rev-parse --verify -q {rev}^{{commit}} >/dev/null || {{ echo \"bench: the hidden tests' revision {rev} is not in the image\" >&2; exit 3; }}\ngit ls-tree -r -z --name-only {rev} -- {paths} > {work}/hidden-tests.list\nexport GIT_INDEX_FILE={work}/hidden-tests.index\ngit read-tree {rev}\nmkdir -p {hidden}\ngit checkout-index -z --stdin --prefix={hidden}/ < {work}/hidden-tests.list\nunset GIT_INDEX_FILE\n",
        rev = shell_quote(rev),
        paths = paths.join(" "),
    )
}

/// The script a backend that strips a task image once runs before the strip, for a Pro task
/// whose hidden tests come from history (`git checkout <rev> -- paths`): it leaves them in
/// [`CAPTURED`]. `None` for other tasks. Run in the repository with `BENCH_STATE` set.
pub fn image_capture(task: &crate::jobs::GradingTask) -> Option<String> {
    let pro = task.pro()?;
    let (rev, paths) = checkout_from_history(last_line(&pro.before_repo_set_cmd))?;
    Some(format!(
        "set -e\n{}",
        capture_script(
            ".",
            &rev,
            &paths,
            "\"$BENCH_STATE\"",
            &shell_quote(CAPTURED)
        )
    ))
}

/// Splits the output of the logs command: a first line `<mark> <stdout size> <stderr size>`,
/// that many bytes of each log, then a line `<end>`; returns the two logs and what follows.
/// `None` when the output is not exactly that (a log changed size while it was read).
fn split_logs<'o>(out: &'o [u8], mark: &str, end: &str) -> Option<(&'o [u8], &'o [u8], &'o [u8])> {
    let nl = out.iter().position(|&b| b == b'\n')?;
    let head = std::str::from_utf8(&out[..nl]).ok()?;
    let mut words = head.strip_prefix(mark)?.split_whitespace();
    let so: usize = words.next()?.parse().ok()?;
    let se: usize = words.next()?.parse().ok()?;
    let body = &out[nl + 1..];
    let (o, body) = body.split_at_checked(so)?;
    let (e, body) = body.split_at_checked(se)?;
    let rest = body
        .strip_prefix(b"\n")?
        .strip_prefix(end.as_bytes())?
        .strip_prefix(b"\n")?;
    Some((o, e, rest))
}

fn task_error(id: &str, what: &str, r: &ExecResult) -> GradeError {
    GradeError::Task(format!(
        "{what} of {id} failed ({}): {}",
        if r.timed_out {
            "timed out".to_string()
        } else {
            format!("exit {:?}", r.exit_code)
        },
        String::from_utf8_lossy(&r.output).trim()
    ))
}

/// One test of upstream's output.json.
#[derive(serde::Deserialize)]
struct OutputTest {
    name: String,
    status: String,
}

#[derive(serde::Deserialize)]
struct Output {
    tests: Vec<OutputTest>,
}

/// SWE-bench Pro's protocol.
pub(crate) struct SweBenchPro;

#[async_trait]
impl Protocol for SweBenchPro {
    fn version(&self) -> u32 {
        VERSION
    }

    /// Upstream's sandbox lives 3600 s: a longer run is never resolved there.
    fn budget(&self, job: &GradeJob) -> Duration {
        job.timeout().min(UPSTREAM_TIMEOUT)
    }

    fn before_strip(&self, job: &GradeJob) -> Option<String> {
        image_capture(&job.task)
    }

    fn audited_commands<'j>(&self, job: &'j GradeJob) -> Vec<&'j str> {
        match job.task.pro() {
            Some(pro) => vec![pro.run_script.as_str(), last_line(&pro.before_repo_set_cmd)],
            None => Vec::new(),
        }
    }

    async fn steps(&self, g: &Grading<'_>) -> Result<(Graded, String), GradeError> {
        steps(g).await
    }
}

/// Grades the candidate on a SWE-bench Pro task: the hidden tests captured from history, the
/// history check, bench's run_script.sh, upstream's parser, the verdict.
async fn steps(g: &Grading<'_>) -> Result<(Graded, String), GradeError> {
    let task = &g.job.task;
    let id = task.instance_id();
    let pro = task
        .pro()
        .ok_or_else(|| GradeError::Task(format!("{id} is not a SWE-bench Pro task")))?;
    let f = ProFiles::new(&g.sandbox.paths().state, &g.nonce);
    let hidden = capture_hidden_tests(g, pro, &f).await?;

    // Nothing of the image's history beyond the base is reachable by the candidate's code.
    let history_check = g.clean().await?;

    // bench's run_script.sh and the candidate without its binary hunks, outside the
    // repository, where applying the candidate cannot reach, and nothing of the candidate runs
    // before the tests.
    let text = String::from_utf8_lossy(g.patch).into_owned();
    let empty = text.trim().is_empty();
    let stripped = strip_binary_hunks(&text);
    let mut files: Vec<(&str, &[u8], u32)> =
        vec![(f.run_script.as_str(), pro.run_script.as_bytes(), 0o755)];
    if !empty {
        files.push((f.patch.as_str(), stripped.as_bytes(), 0o644));
    }
    g.sandbox.put_files(&files).await?;

    let script = tests_command(g, pro, &f, empty, &hidden);
    let r = run(g.sandbox, &script, g.left(), g.cancel).await?;
    let stripped_hunks = stripped.len() != text.len();
    let (apply_log, patch_applied, at) = read_steps(&r, g, empty, stripped_hunks, &hidden)?;
    let tests_output = r.output[at..].to_vec();
    let timed_out = r.timed_out;
    let nonce = &g.nonce;
    let tests_start = format!("BENCH-{nonce}-TESTS-START");
    let tests_end = format!("BENCH-{nonce}-TESTS-END ");
    let (_, test_end) = between(&tests_output, &tests_start, &tests_end);

    let parsed = parse_logs(g, pro, &f, timed_out).await?;
    let (mut output, statuses) = verdict(
        task,
        parsed.output_json.as_deref(),
        patch_applied,
        timed_out,
    );
    output.empty_patch = empty;
    output.test_exit_code = test_end.and_then(|e| e.trim().parse().ok());
    let mut logs = BTreeMap::from([
        ("log".to_string(), parsed.stdout.clone()),
        ("stdout".to_string(), parsed.stdout),
        ("stderr".to_string(), parsed.stderr),
        ("test_output".to_string(), tests_output),
        ("apply_log".to_string(), apply_log),
        ("parse_log".to_string(), parsed.parse_log),
    ]);
    if let Some(json) = parsed.output_json {
        logs.insert("output_json".to_string(), json);
    }
    Ok((
        Graded {
            output,
            statuses,
            logs,
        },
        history_check,
    ))
}

/// The grader's files of one grade, in its own directory `<state>/pro-<nonce>` outside the
/// repository (a patch cannot write there).
struct ProFiles {
    work: String,
    /// The candidate without its binary hunks.
    patch: String,
    run_script: String,
    stdout_log: String,
    stderr_log: String,
    parser: String,
    output_json: String,
}

impl ProFiles {
    /// The files of the grade with `nonce` under the sandbox's `state` directory.
    fn new(state: &str, nonce: &str) -> ProFiles {
        let work = format!("{state}/pro-{nonce}");
        ProFiles {
            patch: format!("{work}/patch.diff"),
            run_script: format!("{work}/run_script.sh"),
            stdout_log: format!("{work}/stdout.log"),
            stderr_log: format!("{work}/stderr.log"),
            parser: format!("{work}/parser.py"),
            output_json: format!("{work}/output.json"),
            work,
        }
    }
}

/// Step 3's hidden tests: the last line of `before_repo_set_cmd`, and the directory holding
/// the files its `git checkout <rev> -- <paths>` takes from history (`None`: another line,
/// run as written).
struct HiddenTests {
    last: String,
    captured: Option<String>,
}

/// Before anything of the candidate exists: the files the hidden-test checkout takes from
/// history, archived outside the repository (the work directory made). A container of the
/// stripped grading image (docker) has them already: that image was made by
/// `image_capture`'s script, then the strip and the check; then nothing runs here, as nothing
/// may run before the history check (`repo::clean` skips it only while nothing has).
async fn capture_hidden_tests(
    g: &Grading<'_>,
    pro: &ProSpec,
    f: &ProFiles,
) -> Result<HiddenTests, GradeError> {
    let (s, base) = (g.sandbox, g.base);
    let q = |p: &str| shell_quote(p);
    let last = last_line(&pro.before_repo_set_cmd).to_string();
    let capture = checkout_from_history(&last);
    let from_image = capture.is_some() && base.is_some() && s.stripped_to() == base;
    let hidden = if from_image {
        CAPTURED.to_string()
    } else {
        format!("{}/hidden-tests", f.work)
    };
    // In a container of the stripped image the work directory is made with the reset of
    // [`tests_command`].
    if !from_image {
        let mut script = format!("set -e\nmkdir -p {}\n", q(&f.work));
        if let Some((rev, paths)) = &capture {
            script.push_str(&capture_script(
                &q(&s.paths().workdir),
                rev,
                paths,
                &q(&f.work),
                &q(&hidden),
            ));
        }
        let r = run(s, &script, g.left(), g.cancel).await?;
        if r.exit_code != Some(0) {
            return Err(task_error(
                g.job.task.instance_id(),
                "reading the hidden tests",
                &r,
            ));
        }
    }
    Ok(HiddenTests {
        last,
        captured: capture.map(|_| hidden),
    })
}

/// The marker line that ends step `name` of the grade with `nonce`.
fn step_marker(nonce: &str, name: &str) -> String {
    format!("BENCH-{nonce}-STEP-{name}")
}

/// Steps 1 to 4 in one command (one exec: the per-grade cost is the container's, not
/// bench's). Each step before the tests ends with a nonce'd marker line carrying its exit
/// code; those steps run before anything of the candidate does, so their markers are read in
/// order ([`read_steps`]) and nothing printed later can stand in for them.
fn tests_command(
    g: &Grading<'_>,
    pro: &ProSpec,
    f: &ProFiles,
    empty: bool,
    hidden: &HiddenTests,
) -> String {
    let nonce = &g.nonce;
    let q = |p: &str| shell_quote(p);
    // The commit the history is stripped to (after the strip, HEAD is it).
    let base_commit = g.base.unwrap_or("HEAD");
    let repo = q(&g.sandbox.paths().workdir);
    let mark = |name: &str, stop: bool| {
        format!(
            "{}{}\n",
            step_end(&step_marker(nonce, name)),
            if stop {
                "; [ \"$c\" = 0 ] || exit 0"
            } else {
                ""
            }
        )
    };
    let mut script = String::from("exec 2>&1\n");
    // 1. The repository at the base.
    script.push_str(&format!(
        "(cd {repo} || exit 1\ngit reset --hard {b}\ngit checkout {b})\n{}",
        mark("reset", true),
        b = q(base_commit)
    ));
    // 2. The candidate.
    if !empty {
        script.push_str(&format!(
            "(cd {repo} && git apply -v {})\n{}",
            q(&f.patch),
            mark("apply", false)
        ));
    }
    // bench's reset before the hidden tests: whatever the candidate did to the paths the test
    // patch touches is undone, stale `.git` locks and Python bytecode (a forged `.pyc` of a
    // hidden test) removed.
    script.push_str(&format!(
        "(cd {repo} || exit 1\n{})\n{}",
        reset_script(&patch_files(g.job.task.test_patch())),
        mark("hidden-reset", true)
    ));
    // 3. The hidden tests: the last line of before_repo_set_cmd.
    match &hidden.captured {
        Some(dir) => script.push_str(&format!(
            "(cd {repo} && cp -a {}/. .)\n{}",
            q(dir),
            mark("hidden", true)
        )),
        None => script.push_str(&format!(
            "(cd {repo}\n{}\n)\n{}",
            hidden.last,
            mark("hidden", false)
        )),
    }
    // 4. The tests, with bench's run_script.sh.
    let tests_end = format!("BENCH-{nonce}-TESTS-END ");
    let tests_start = format!("BENCH-{nonce}-TESTS-START");
    let selected = pro.selected_test_files.join(",");
    script.push_str(&format!(
        "cd {repo}\nprintf '%s\\n' '{tests_start}'\nbash {rs} {sel} > {out} 2> {err}\nprintf '\\n%s%s\\n' '{tests_end}' \"$?\"\n",
        rs = q(&f.run_script),
        sel = q(&selected),
        out = q(&f.stdout_log),
        err = q(&f.stderr_log),
    ));
    script
}

/// Reads the steps before the tests from the output `r` of [`tests_command`], in order, into
/// the apply log (`stripped_hunks`: the candidate lost binary hunks). Returns the apply log,
/// whether the candidate applied (an `empty` one counts as applied) and where the tests'
/// output starts. A missing marker, or a failing reset or installation of captured hidden
/// tests, is a grading error.
fn read_steps(
    r: &ExecResult,
    g: &Grading<'_>,
    empty: bool,
    stripped_hunks: bool,
    hidden: &HiddenTests,
) -> Result<(Vec<u8>, bool, usize), GradeError> {
    let id = g.job.task.instance_id();
    let mut apply_log = Vec::new();
    let mut at = 0;
    let mut step_out = |name: &str, what: &str, log: &mut Vec<u8>| {
        let Some((body, code, next)) = take_step(&r.output, at, &step_marker(&g.nonce, name))
        else {
            return Err(task_error(id, what, r));
        };
        log.extend_from_slice(body);
        at = next;
        Ok(code)
    };
    apply_log.extend_from_slice(b">>>>> reset to the base\n");
    if step_out(
        "reset",
        "resetting the repository to the base",
        &mut apply_log,
    )? != 0
    {
        return Err(task_error(id, "resetting the repository to the base", r));
    }
    let patch_applied = if empty {
        apply_log.extend_from_slice(b">>>>> candidate patch is empty\n");
        true
    } else {
        if stripped_hunks {
            apply_log.extend_from_slice(b">>>>> stripped binary diff hunks from the patch\n");
        }
        apply_log.extend_from_slice(b">>>>> candidate patch (git apply -v)\n");
        let code = step_out("apply", "applying the candidate", &mut apply_log)?;
        if code != 0 {
            apply_log.extend_from_slice(b"<<<<<< PATCH FAILED TO APPLY >>>>>>\n");
        }
        code == 0
    };
    apply_log.extend_from_slice(b">>>>> reset before the hidden tests\n");
    if step_out(
        "hidden-reset",
        "resetting the hidden tests' paths",
        &mut apply_log,
    )? != 0
    {
        return Err(task_error(id, "resetting the hidden tests' paths", r));
    }
    apply_log.extend_from_slice(format!(">>>>> hidden tests: {}\n", hidden.last).as_bytes());
    let code = step_out("hidden", "installing the hidden tests", &mut apply_log)?;
    if hidden.captured.is_some() && code != 0 {
        return Err(task_error(id, "installing the hidden tests", r));
    }
    Ok((apply_log, patch_applied, at))
}

/// What step 5 read back: the tests' two logs, upstream's output.json (`None`: missing, or not
/// read because the tests timed out) and the parser's output.
struct ParsedLogs {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    output_json: Option<Vec<u8>>,
    parse_log: Vec<u8>,
}

/// Step 5: the test logs, then the parser, written now (after the tests), its output read in
/// the same command (unless the tests `timed_out`: then only the logs). The logs come first,
/// each as many bytes as its size said, before anything that could run the candidate's code
/// (python) in this command.
async fn parse_logs(
    g: &Grading<'_>,
    pro: &ProSpec,
    f: &ProFiles,
    timed_out: bool,
) -> Result<ParsedLogs, GradeError> {
    let (s, nonce) = (g.sandbox, &g.nonce);
    let q = |p: &str| shell_quote(p);
    let logs_mark = format!("BENCH-{nonce}-LOGS");
    let logs_end = format!("BENCH-{nonce}-LOGS-END");
    let out_start = format!("BENCH-{nonce}-OUTPUT-START");
    let out_end = format!("BENCH-{nonce}-OUTPUT-END");
    let mut script = format!(
        "exec 2>&1\nsize() {{ if [ -f \"$1\" ]; then wc -c < \"$1\"; else echo 0; fi; }}\n\
         so=$(size {out}); se=$(size {err})\n\
         printf '%s %s %s\\n' '{logs_mark}' \"$so\" \"$se\"\n\
         head -c \"$so\" {out} 2>/dev/null; head -c \"$se\" {err} 2>/dev/null\n\
         printf '\\n%s\\n' '{logs_end}'\n",
        out = q(&f.stdout_log),
        err = q(&f.stderr_log),
    );
    // The parser goes in the command itself unless it is too long for one (an exec's command
    // is one string of at most 128 KiB).
    let inline_parser = pro.parser_py.len() <= 64 * 1024;
    if !timed_out {
        let delim = format!("BENCH-{nonce}-PARSER");
        if inline_parser {
            script.push_str(&format!(
                "cat > {p} <<'{delim}'\n{src}\n{delim}\n",
                p = q(&f.parser),
                src = pro.parser_py.strip_suffix('\n').unwrap_or(&pro.parser_py),
            ));
        } else {
            s.put_files(&[(f.parser.as_str(), pro.parser_py.as_bytes(), 0o644)])
                .await?;
        }
        script.push_str(&format!(
            "cd {repo}\nrm -f {oj}\npython {p} {out} {err} {oj}\ncode=$?\nif [ -f {oj} ]; then printf '\\n%s\\n' '{out_start}'; cat {oj}; printf '\\n%s\\n' '{out_end}'; fi\nexit $code\n",
            repo = q(&s.paths().workdir),
            p = q(&f.parser),
            out = q(&f.stdout_log),
            err = q(&f.stderr_log),
            oj = q(&f.output_json),
        ));
    }
    let r = run(s, &script, g.left().min(Duration::from_secs(600)), g.cancel).await?;
    let (stdout, stderr, rest) = match split_logs(&r.output, &logs_mark, &logs_end) {
        Some((o, e, rest)) => (o.to_vec(), e.to_vec(), rest),
        // The logs changed while they were read (something of the candidate still running):
        // read them as files, as they are now.
        None => (
            s.get_file(&f.stdout_log).await.unwrap_or_default(),
            s.get_file(&f.stderr_log).await.unwrap_or_default(),
            &r.output[..],
        ),
    };
    let mut output_json: Option<Vec<u8>> = None;
    let mut parse_log = Vec::new();
    if !timed_out {
        let (json, end) = between(rest, &out_start, &out_end);
        if end.is_some() {
            output_json = Some(json);
        }
        parse_log = rest.to_vec();
    }
    Ok(ParsedLogs {
        stdout,
        stderr,
        output_json,
        parse_log,
    })
}

/// Step 6, the verdict: resolved = (fail_to_pass ∪ pass_to_pass) ⊆ {names whose status is
/// `PASSED`} in upstream's output.json (`parsed`), the candidate applied and the tests in
/// time; a missing or unreadable output.json is unresolved. Returns the outcome (without the
/// empty patch and the exit code) and the statuses.
fn verdict(
    task: &GradingTask,
    parsed: Option<&[u8]>,
    patch_applied: bool,
    timed_out: bool,
) -> (GradeOutput, Statuses) {
    let tests_out: Option<Output> = parsed.and_then(|b| serde_json::from_slice(b).ok());
    let mut statuses: Vec<(String, TestStatus)> = Vec::new();
    let mut passed = BTreeSet::new();
    if let Some(o) = &tests_out {
        for t in &o.tests {
            if t.status == "PASSED" {
                passed.insert(t.name.clone());
            }
            let st = match t.status.as_str() {
                "PASSED" => TestStatus::Pass,
                "SKIPPED" => TestStatus::Skip,
                _ => TestStatus::Fail,
            };
            statuses.push((t.name.clone(), st));
        }
    }
    let mut output = GradeOutput {
        patch_applied,
        timed_out,
        ..Default::default()
    };
    for t in task.fail_to_pass() {
        if passed.contains(t) {
            output.fail_to_pass_success.push(t.clone());
        } else {
            output.fail_to_pass_failure.push(t.clone());
        }
    }
    for t in task.pass_to_pass() {
        if passed.contains(t) {
            output.pass_to_pass_success.push(t.clone());
        } else {
            output.pass_to_pass_failure.push(t.clone());
        }
    }
    output.resolved = tests_out.is_some()
        && patch_applied
        && !timed_out
        && output.fail_to_pass_failure.is_empty()
        && output.pass_to_pass_failure.is_empty();
    (output, statuses.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_read_in_order_and_later_forgeries_do_not_count() {
        let out = b"HEAD is now at abc\n\nM-reset 0\nerror: patch failed\n\nM-apply 1\nM-apply 0\n";
        let (body, code, next) = take_step(out, 0, "M-reset").unwrap();
        assert_eq!((body, code), (&b"HEAD is now at abc\n"[..], 0));
        let (body, code, next) = take_step(out, next, "M-apply").unwrap();
        assert_eq!((body, code), (&b"error: patch failed\n"[..], 1));
        // What follows a step's marker is the next step's output, forged markers included.
        assert_eq!(take_step(out, next, "M-hidden"), None);
        // A marker that merely begins a longer word is not the marker.
        assert_eq!(take_step(b"M-resetX 0\n", 0, "M-reset"), None);
        // Output without a final line break before the marker.
        let (body, code, _) = take_step(b"no newline\nM-reset 3\n", 0, "M-reset").unwrap();
        assert_eq!((body, code), (&b"no newline"[..], 3));
    }

    #[test]
    fn logs_are_split_by_their_sizes_and_a_mismatch_is_refused() {
        let out = b"L 6 3\nout\nL err\nL-END\nparser says hi\n";
        let (o, e, rest) = split_logs(out, "L", "L-END").unwrap();
        assert_eq!(
            (o, e, rest),
            (&b"out\nL "[..], &b"err"[..], &b"parser says hi\n"[..])
        );
        // A log that shrank while it was read: the end marker is not where the sizes say.
        assert_eq!(split_logs(b"L 9 3\nout\nerr\nL-END\n", "L", "L-END"), None);
        assert_eq!(split_logs(b"garbage\n", "L", "L-END"), None);
        let (o, e, rest) = split_logs(b"L 0 0\n\nL-END\n", "L", "L-END").unwrap();
        assert!(o.is_empty() && e.is_empty() && rest.is_empty());
    }

    #[test]
    fn binary_sections_are_dropped_and_text_kept() {
        let text = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n";
        let bin = "diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0000000..1111111\nGIT binary patch\nliteral 3\nKcmZ?wbN~Po\n\nliteral 0\nHcmV?d00001\n\n";
        let bin2 = "diff --git a/x.bin b/x.bin\nindex 1..2 100644\nBinary files a/x.bin and b/x.bin differ\n";
        let p = format!("{text}{bin}{bin2}{text}");
        assert_eq!(strip_binary_hunks(&p), format!("{text}{text}"));
        assert_eq!(strip_binary_hunks(text), text);
        assert_eq!(strip_binary_hunks(bin), "");
        assert_eq!(strip_binary_hunks(""), "");
        // A preamble before the first diff is kept; whitespace-only sections are not.
        assert_eq!(
            strip_binary_hunks(&format!("From x\n\n{text}")),
            format!("From x\n\n{text}")
        );
        assert_eq!(strip_binary_hunks("\n\n"), "");
        // Only whole lines count: text that mentions the markers stays.
        let mention = "diff --git a/r.md b/r.md\n--- a/r.md\n+++ b/r.md\n@@ -1 +1 @@\n-a\n+ GIT binary patch\n";
        assert_eq!(strip_binary_hunks(mention), mention);
    }

    #[test]
    fn the_last_line_and_its_checkout() {
        let cmd = "git reset --hard X\ngit clean -fd \ngit checkout X \ngit checkout abc123 -- test/a.ts test/b.ts\n";
        assert_eq!(last_line(cmd), "git checkout abc123 -- test/a.ts test/b.ts");
        assert_eq!(
            checkout_from_history(last_line(cmd)),
            Some((
                "abc123".to_string(),
                vec!["test/a.ts".to_string(), "test/b.ts".to_string()]
            ))
        );
        assert_eq!(checkout_from_history("git checkout abc"), None);
        assert_eq!(checkout_from_history("git checkout abc -- 'a b'"), None);
        assert_eq!(
            checkout_from_history("git checkout abc -- a; rm -rf /"),
            None
        );
        assert_eq!(last_line("  one\n"), "one");
        assert_eq!(last_line(""), "");
    }
}
