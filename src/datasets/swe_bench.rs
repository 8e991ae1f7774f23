//! Classic SWE-bench rows (full, Verified, Lite, Multilingual; parquet or JSON lines): every
//! field a string, FAIL_TO_PASS / PASS_TO_PASS JSON-encoded (real lists are accepted too). The
//! image is `swebench/sweb.eval.x86_64.<id with __ -> _1776_, lowercased>:latest`. The row's
//! `repo` and `version` select its spec in the swe-bench protocol's table
//! (`protocols/swe_bench/specs.toml`): the setup lines of the eval script become `rebuild_cmds`,
//! the test command with the test patch's directives the one `test_cmds`, and the repository's
//! parser the `log_parser`. A row whose repository or version is not in the table reads (it can
//! be listed and sampled) with no test command: grading it is an error naming the task.

use crate::protocols::swe_bench::specs;
use crate::tasks::{Task, TaskBase};

use super::common::{COMMON_COLUMNS, Common, image_key};
use super::error::DatasetError;
use super::table::Table;

pub fn columns() -> Vec<&'static str> {
    let mut c = COMMON_COLUMNS.to_vec();
    c.push("version");
    c
}

/// The eval parts of a row from its spec: setup lines, the test command, the parser.
pub fn eval_parts(
    repo: &str,
    version: Option<&str>,
    base_commit: &str,
    test_patch: &str,
) -> (Vec<String>, Vec<String>, String) {
    match version.and_then(|v| specs::spec(repo, v)) {
        Some((spec, parser)) => (
            specs::setup_commands(spec, base_commit),
            vec![specs::test_command(&spec.test_cmd, repo, test_patch)],
            parser.to_string(),
        ),
        None => (
            Vec::new(),
            Vec::new(),
            specs::table()
                .get(repo)
                .map_or("swebench-pytest", |r| r.parser.as_str())
                .to_string(),
        ),
    }
}

pub fn rows(t: &mut Table) -> Result<Vec<Task>, DatasetError> {
    t.require(&COMMON_COLUMNS)?;
    (0..t.rows)
        .map(|row| {
            let c = Common::take(t, row)?;
            let version = t.take_str(row, "version")?;
            let (rebuild_cmds, test_cmds, log_parser) =
                eval_parts(&c.repo, version.as_deref(), &c.base_commit, &c.test_patch);
            Ok(Task {
                base: TaskBase::Image {
                    image: format!(
                        "swebench/sweb.eval.x86_64.{}:latest",
                        image_key(&c.instance_id)
                    ),
                    base_commit: c.base_commit,
                },
                instance_id: c.instance_id,
                repo: c.repo,
                language: Some("python".into()),
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
                digests: Default::default(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::eval_parts;

    #[test]
    fn a_known_repository_and_version_give_the_eval_parts() {
        let patch = "diff --git a/tests/queries/tests.py b/tests/queries/tests.py\n";
        let (setup, test, parser) = eval_parts("django/django", Some("3.0"), "abc123", patch);
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
        let (setup, test, parser) = eval_parts("django/django", Some("0.1"), "abc", patch);
        assert!(setup.is_empty() && test.is_empty());
        assert_eq!(parser, "swebench-django");
        let (_, test, parser) = eval_parts("o/r", None, "abc", patch);
        assert!(test.is_empty());
        assert_eq!(parser, "swebench-pytest");
    }
}
