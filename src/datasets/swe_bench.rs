//! Classic SWE-bench rows (full, Verified, Lite, Multilingual; parquet or JSON lines): every
//! field a string, FAIL_TO_PASS / PASS_TO_PASS JSON-encoded (real lists are accepted too). The
//! image is `swebench/sweb.eval.x86_64.<id with __ -> _1776_, lowercased>:latest`. The row's
//! `repo` and `version` select its spec in the swe-bench protocol's table
//! (`protocols/swe_bench/specs.toml`, every language of SWE-bench and SWE-bench Multilingual):
//! the setup lines of the eval script become `rebuild_cmds`, the test command (Python: with
//! the test patch's directives; other languages: the spec's build and test lines) the one
//! `test_cmds`, the repository's parser the `log_parser` (upstream's per-instance parsers
//! resolved by the instance id) and the table's language the task's language. A row whose repository or version is not in the table reads (it can
//! be listed and sampled) with no test command: grading it is an error naming the task.
//!
//! Rows shaped for swebench 5.x carry their own `eval_script`, `image` and `log_parser`
//! (`make_test_spec`'s contract); when present they take the table's place: the script's lines
//! before its test-file reset are the setup, the lines between its `>>>>> Start Test Output` and
//! `>>>>> End Test Output` markers the test command (preceded by any build lines between the test
//! patch and the start marker, which therefore run inside bench's markers), the parser upstream's
//! name mapped to bench's (an unported one is kept, and grading names it).

use crate::protocols::swe_bench::specs;
use crate::tasks::{Task, TaskBase};

use super::common::{COMMON_COLUMNS, Common, image_key};
use super::error::{CellProblem, DatasetError};
use super::table::Table;
use crate::parsers::swebench::{for_instance, for_version, from_upstream};

pub fn columns() -> Vec<&'static str> {
    let mut c = COMMON_COLUMNS.to_vec();
    c.extend(["version", "eval_script", "image", "log_parser"]);
    c
}

/// The setup lines and the test command of a 5.x row's own eval script (`None`: not the shape
/// upstream's script builders write).
pub fn from_eval_script(script: &str, base_commit: &str) -> Option<(Vec<String>, String)> {
    let lines: Vec<&str> = script
        .trim()
        .split('\n')
        .filter(|l| *l != "#!/bin/bash" && *l != "set -uxo pipefail")
        .collect();
    let reset = format!("git checkout {base_commit}");
    let first_reset = lines
        .iter()
        .position(|l| l.starts_with(&reset) || *l == "echo \"No test files to reset\"")?;
    let start = lines
        .iter()
        .position(|l| *l == ": '>>>>> Start Test Output'")?;
    let end = lines
        .iter()
        .position(|l| *l == ": '>>>>> End Test Output'")?;
    if !(first_reset < start && start < end) {
        return None;
    }
    // Build lines: after the test patch's heredoc (or its one-line apply) and before the start.
    let mut i = first_reset + 1;
    if let Some(delim) = lines[i..start]
        .iter()
        .find_map(|l| l.split_once("<<'").and_then(|(_, d)| d.strip_suffix('\'')))
    {
        i = lines[i..start]
            .iter()
            .rposition(|l| *l == delim)
            .map_or(i, |j| i + j + 1);
    } else if lines[i..start]
        .first()
        .is_some_and(|l| l.starts_with("git apply"))
    {
        i += 1;
    }
    let mut test: Vec<&str> = lines[i..start].to_vec();
    test.extend(&lines[start + 1..end]);
    let setup = lines[..first_reset].iter().map(|l| l.to_string()).collect();
    Some((setup, test.join("\n")))
}

/// The eval parts of a row from its spec: setup lines, the test command, the parser (for
/// upstream's per-instance parsers, the one they pick for `instance_id`; left as the
/// per-instance name when they know none, which grading then refuses with the reason).
pub fn eval_parts(
    repo: &str,
    instance_id: &str,
    version: Option<&str>,
    base_commit: &str,
    test_patch: &str,
) -> (Vec<String>, Vec<String>, String) {
    let pick = |parser: &str| for_instance(parser, instance_id).unwrap_or(parser.to_string());
    match version.and_then(|v| specs::spec(repo, v)) {
        Some((spec, r)) => {
            let (setup, test) =
                specs::eval_fields(repo, &r.language, base_commit, test_patch, spec);
            (setup, test, pick(&r.parser))
        }
        None => (
            Vec::new(),
            Vec::new(),
            pick(
                specs::table()
                    .get(repo)
                    .map_or("swebench-pytest", |r| r.parser.as_str()),
            ),
        ),
    }
}

pub fn rows(t: &mut Table) -> Result<Vec<Task>, DatasetError> {
    t.require(&COMMON_COLUMNS)?;
    (0..t.rows)
        .map(|row| {
            let c = Common::take(t, row)?;
            let version = t.take_str(row, "version")?;
            let (mut rebuild_cmds, mut test_cmds, mut log_parser) =
                eval_parts(
                    &c.repo,
                    &c.instance_id,
                    version.as_deref(),
                    &c.base_commit,
                    &c.test_patch,
                );
            if let Some(script) = t.take_str(row, "eval_script")? {
                let (setup, test) = from_eval_script(&script, &c.base_commit).ok_or_else(|| {
                    t.cell_error(
                        row,
                        "eval_script",
                        CellProblem::Invalid(
                            "not an eval script bench can read: it needs upstream's test-file reset (`git checkout <base_commit> ...`) and the `: '>>>>> Start Test Output'` / `: '>>>>> End Test Output'` lines; drop the column to use bench's specs table".into(),
                        ),
                    )
                })?;
                rebuild_cmds = setup;
                test_cmds = vec![test];
            }
            if let Some(p) = t.take_str(row, "log_parser")? {
                log_parser = match from_upstream(&p) {
                    Some(name) => for_instance(name, &c.instance_id).unwrap_or(name.to_string()),
                    // `parse_log_next` / `parse_log_lighthouse`: the pick for the row's version
                    // (kept as written when upstream raises for it, which grading names).
                    None => match for_version(&p, version.as_deref().unwrap_or("")) {
                        Some(Ok(name)) => name.to_string(),
                        Some(Err(_)) | None => p,
                    },
                };
            }
            let language = specs::language(&c.repo);
            let image = t.take_str(row, "image")?.unwrap_or_else(|| {
                format!(
                    "swebench/sweb.eval.x86_64.{}:latest",
                    image_key(&c.instance_id)
                )
            });
            Ok(Task {
                base: TaskBase::Image {
                    image,
                    base_commit: c.base_commit,
                },
                instance_id: c.instance_id,
                repo: c.repo,
                language: Some(language.into()),
                created_at: c.created_at,
                problem_statement: c.problem_statement,
                gold_patch: c.patch,
                test_patch: c.test_patch,
                rebuild_cmds,
                test_cmds,
                print_cmds: Vec::new(),
                log_parser,
                fail_to_pass: c.fail_to_pass,
                pass_to_pass: c.pass_to_pass,
                repo_dir: None,
                pro: None,
                setup_cmds: Vec::new(),
                harbor: None,
                digests: Default::default(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{eval_parts, from_eval_script};

    #[test]
    fn rows_with_their_own_image_parser_and_script_read_them() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v5.jsonl");
        let row = |script: &str| {
            serde_json::json!({
                "instance_id": "gin-gonic__gin-1", "repo": "gin-gonic/gin", "base_commit": "abc",
                "patch": "", "test_patch": "", "problem_statement": "p",
                "created_at": "2024-01-01T00:00:00Z", "version": "1.0",
                "FAIL_TO_PASS": "[\"TestA\"]", "PASS_TO_PASS": "[]",
                "image": "swebench/sweb.eval.x86_64.gin-gonic_1776_gin-1:v5",
                "log_parser": "parse_log_gotest", "eval_type": "pass_and_fail",
                "eval_script": script,
            })
            .to_string()
        };
        let good = "cd /testbed\ngit checkout abc a_test.go\ngit apply --verbose --reject - <<'EOF_1'\n+x\nEOF_1\n: '>>>>> Start Test Output'\ngo test -v ./...\n: '>>>>> End Test Output'\n";
        fs_err::write(&p, format!("{}\n{}\n", row(good), row("echo no markers"))).unwrap();
        let err = crate::datasets::read_file(crate::types::DatasetFormat::SweBench, &p, "v5.jsonl")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("v5.jsonl: row 2, column eval_script: not an eval script"),
            "{err}"
        );
        fs_err::write(&p, format!("{}\n", row(good))).unwrap();
        let t = &crate::datasets::read_file(crate::types::DatasetFormat::SweBench, &p, "v5.jsonl")
            .unwrap()[0];
        assert_eq!(t.log_parser, "swebench-gotest");
        assert_eq!(t.rebuild_cmds, ["cd /testbed"]);
        assert_eq!(t.test_cmds, ["go test -v ./..."]);
        assert!(
            matches!(&t.base, crate::tasks::TaskBase::Image { image, .. } if image.ends_with(":v5"))
        );
    }

    #[test]
    fn a_rows_own_eval_script_gives_its_setup_and_test_command() {
        // The shape of `make_eval_script_list_py` (with a heredoc test patch).
        let py = "#!/bin/bash\nset -uxo pipefail\nsource /opt/miniconda3/bin/activate\nconda activate testbed\ncd /testbed\ngit status\npython -m pip install -e .\ngit checkout abc tests/t.py\ngit apply -v - <<'EOF_114329324912'\ndiff --git a/tests/t.py b/tests/t.py\n+x\nEOF_114329324912\n: '>>>>> Start Test Output'\npytest -rA tests/t.py\n: '>>>>> End Test Output'\ngit checkout abc tests/t.py\n";
        let (setup, test) = from_eval_script(py, "abc").unwrap();
        assert_eq!(
            setup.first().map(String::as_str),
            Some("source /opt/miniconda3/bin/activate")
        );
        assert_eq!(
            setup.last().map(String::as_str),
            Some("python -m pip install -e .")
        );
        assert_eq!(test, "pytest -rA tests/t.py");
        // `make_eval_script_list_common`: build lines after the test patch run before the tests.
        let common = "cd /testbed\necho \"No test files to reset\"\ngit apply --verbose --reject - <<'EOF_1'\n+x\nEOF_1\nmake\n: '>>>>> Start Test Output'\ngo test -v ./...\n: '>>>>> End Test Output'\n";
        let (setup, test) = from_eval_script(common, "abc").unwrap();
        assert_eq!(setup, ["cd /testbed"]);
        assert_eq!(test, "make\ngo test -v ./...");
        assert!(from_eval_script("echo hi\n", "abc").is_none());
    }

    #[test]
    fn a_known_repository_and_version_give_the_eval_parts() {
        let patch = "diff --git a/tests/queries/tests.py b/tests/queries/tests.py\n";
        let (setup, test, parser) = eval_parts(
            "django/django",
            "django__django-1",
            Some("3.0"),
            "abc123",
            patch,
        );
        assert_eq!(parser, "swebench-django");
        assert_eq!(
            test,
            ["./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 queries.tests"]
        );
        assert_eq!(setup[0], "source /opt/miniconda3/bin/activate");
        assert!(setup.contains(&"git -c core.fileMode=false diff abc123".to_string()));
        assert_eq!(
            setup.last().map(String::as_str),
            Some("python -m pip install -e .")
        );
        // An unknown version: no test command, the repository's parser.
        let (setup, test, parser) = eval_parts(
            "django/django",
            "django__django-1",
            Some("0.1"),
            "abc",
            patch,
        );
        assert!(setup.is_empty() && test.is_empty());
        assert_eq!(parser, "swebench-django");
        let (_, test, parser) = eval_parts("o/r", "o__r-1", None, "abc", patch);
        assert!(test.is_empty());
        assert_eq!(parser, "swebench-pytest");
        // A multilingual row: the common eval script's setup, build and test lines, no
        // directives; a per-instance parser resolved, or kept when upstream knows none.
        let (setup, test, parser) =
            eval_parts("fmtlib/fmt", "fmtlib__fmt-3863", Some("3863"), "abc", patch);
        assert_eq!(parser, "swebench-googletest");
        assert_eq!(setup[0], "cd /testbed");
        assert_eq!(
            test,
            [
                "mkdir -p build\ncmake -B build -S .\ncmake --build build --parallel $(nproc) --target ranges-test\nctest --test-dir build -V -R ranges-test"
            ]
        );
        let (_, _, parser) = eval_parts(
            "jekyll/jekyll",
            "jekyll__jekyll-8761",
            Some("8761"),
            "abc",
            patch,
        );
        assert_eq!(parser, "swebench-cucumber");
        let (_, _, parser) = eval_parts(
            "jekyll/jekyll",
            "jekyll__jekyll-1",
            Some("8761"),
            "abc",
            patch,
        );
        assert_eq!(parser, "swebench-jekyll");
    }
}
