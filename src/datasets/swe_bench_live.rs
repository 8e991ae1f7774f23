//! SWE-bench-Live rows.
//!
//! - MultiLang (and Windows): list columns (`rebuild_cmds`, `test_cmds`, `print_cmds`,
//!   `FAIL_TO_PASS`, `PASS_TO_PASS`), `log_parser` = Python source, `docker_image` per row;
//!   the language comes from a `language` column, else from the file name
//!   (`data/rust-00000-of-00001.parquet` -> `rust`).
//! - Python (`SWE-bench-Live/SWE-bench-Live`, split shards such as
//!   `data/full-00000-of-00002.parquet`): no `docker_image` (derived:
//!   `starryzhang/sweb.eval.x86_64.<id with __ -> _1776_, lowercased>`), no `print_cmds`,
//!   `log_parser = "pytest"`, language `python`.
//!
//! Test lists may be real lists or JSON-encoded strings.

use crate::tasks::{Task, TaskBase};

use super::common::{COMMON_COLUMNS, Common, image_key};
use super::error::DatasetError;
use super::table::Table;

/// The MultiLang languages (one split, and one file, each).
pub const LANGUAGES: [&str; 8] = ["c", "cpp", "cs", "go", "java", "js", "rust", "ts"];

pub fn multilang_columns() -> Vec<&'static str> {
    let mut c = COMMON_COLUMNS.to_vec();
    c.extend([
        "rebuild_cmds",
        "test_cmds",
        "print_cmds",
        "log_parser",
        "docker_image",
        "language",
    ]);
    c
}

pub fn python_columns() -> Vec<&'static str> {
    let mut c = COMMON_COLUMNS.to_vec();
    c.extend(["test_cmds", "log_parser", "docker_image", "rebuild_cmds"]);
    c
}

/// The columns a MultiLang file must have.
pub fn multilang_required() -> Vec<&'static str> {
    let mut required = COMMON_COLUMNS.to_vec();
    required.extend(["test_cmds", "log_parser", "docker_image"]);
    required
}

/// The columns a Python-dataset file must have.
pub fn python_required() -> Vec<&'static str> {
    let mut required = COMMON_COLUMNS.to_vec();
    required.push("test_cmds");
    required
}

/// The language a MultiLang file name names, if any.
pub fn language_of_file(file: &str) -> Option<String> {
    let name = file.rsplit('/').next()?;
    let lang = name.split(['-', '.']).next()?;
    LANGUAGES.contains(&lang).then(|| lang.to_string())
}

/// MultiLang rows.
pub fn multilang(t: &mut Table) -> Result<Vec<Task>, DatasetError> {
    t.require(&multilang_required())?;
    let file_language = language_of_file(&t.file);
    (0..t.rows)
        .map(|row| {
            let c = Common::take(t, row)?;
            let language = t
                .take_str(row, "language")?
                .or_else(|| file_language.clone());
            Ok(Task {
                base: TaskBase::Image {
                    image: t.req_str(row, "docker_image")?,
                    base_commit: c.base_commit,
                },
                instance_id: c.instance_id,
                repo: c.repo,
                language,
                created_at: c.created_at,
                problem_statement: c.problem_statement,
                gold_patch: c.patch,
                test_patch: c.test_patch,
                rebuild_cmds: t.take_list(row, "rebuild_cmds")?.unwrap_or_default(),
                test_cmds: t.req_list(row, "test_cmds")?,
                print_cmds: t.take_list(row, "print_cmds")?.unwrap_or_default(),
                log_parser: t.req_str(row, "log_parser")?,
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

/// Python-dataset rows.
pub fn python(t: &mut Table) -> Result<Vec<Task>, DatasetError> {
    t.require(&python_required())?;
    (0..t.rows)
        .map(|row| {
            let c = Common::take(t, row)?;
            let image = match t.take_str(row, "docker_image")? {
                Some(i) => i,
                None => format!("starryzhang/sweb.eval.x86_64.{}", image_key(&c.instance_id)),
            };
            Ok(Task {
                base: TaskBase::Image {
                    image,
                    base_commit: c.base_commit,
                },
                instance_id: c.instance_id,
                repo: c.repo,
                language: Some("python".into()),
                created_at: c.created_at,
                problem_statement: c.problem_statement,
                gold_patch: c.patch,
                test_patch: c.test_patch,
                rebuild_cmds: t.take_list(row, "rebuild_cmds")?.unwrap_or_default(),
                test_cmds: t.req_list(row, "test_cmds")?,
                print_cmds: Vec::new(),
                log_parser: t
                    .take_str(row, "log_parser")?
                    .unwrap_or_else(|| "pytest".into()),
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
    #[test]
    fn language_from_file_name() {
        assert_eq!(
            super::language_of_file("data/rust-00000-of-00001.parquet").as_deref(),
            Some("rust")
        );
        assert_eq!(
            super::language_of_file("data/full-00000-of-00002.parquet"),
            None
        );
    }
}
