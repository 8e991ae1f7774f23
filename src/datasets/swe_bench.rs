//! Classic SWE-bench / SWE-bench Verified rows (parquet or JSON lines): every field a string,
//! FAIL_TO_PASS / PASS_TO_PASS JSON-encoded (real lists are accepted too). The image is
//! `swebench/sweb.eval.x86_64.<id with __ -> _1776_, lowercased>:latest`; `test_cmds` is empty
//! (the swe-bench protocol builds its own eval script); the log parser is `pytest-swebench`.

use crate::tasks::{Task, TaskBase};

use super::common::{COMMON_COLUMNS, Common, image_key};
use super::error::DatasetError;
use super::table::Table;

pub fn columns() -> Vec<&'static str> {
    COMMON_COLUMNS.to_vec()
}

pub fn rows(t: &mut Table) -> Result<Vec<Task>, DatasetError> {
    t.require(&COMMON_COLUMNS)?;
    (0..t.rows)
        .map(|row| {
            let c = Common::take(t, row)?;
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
                rebuild_cmds: Vec::new(),
                test_cmds: Vec::new(),
                print_cmds: Vec::new(),
                log_parser: "pytest-swebench".into(),
                fail_to_pass: c.fail_to_pass,
                pass_to_pass: c.pass_to_pass,
                repo_dir: None,
                pro: None,
                digests: Default::default(),
            })
        })
        .collect()
}
