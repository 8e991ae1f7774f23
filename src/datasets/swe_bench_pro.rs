//! SWE-bench Pro rows (`ScaleAI/SWE-bench_Pro`, the public set), parquet or JSON lines.
//!
//! Columns (lower-case, as upstream's `swe_bench_pro_eval.py` reads them): `instance_id`,
//! `repo`, `base_commit`, `patch`, `test_patch`, `problem_statement`, `requirements`,
//! `interface`, `before_repo_set_cmd`, `selected_test_files_to_run`, `fail_to_pass`,
//! `pass_to_pass`; optional `repo_language`, `dockerhub_tag`, `created_at`. The list columns are
//! Python literals (upstream `eval`s them); they are read by [`super::py_literal`], never
//! evaluated. Real list cells are accepted too.
//!
//! - The problem statement an agent sees is upstream's prompt:
//!   `"{problem_statement}\n\nRequirements:\n{requirements}\n\nNew interfaces introduced:\n{interface}"`.
//! - The image is `jefzda/sweap-images:{tag}` with the tag of `helper_code/image_uri.py`
//!   ([`image_tag`]): what upstream's evaluator runs. The row's `dockerhub_tag` is not used
//!   (upstream's evaluator does not read it either).
//! - The repository is at `/app`.
//! - The public set has no `created_at`: such rows get an empty date, which no `since` /
//!   `until` filter keeps (a date filter cannot vouch for an undated task).
//! - The per-task harness files (`run_scripts/<instance_id>/{run_script.sh, parser.py,
//!   instance_info.txt}`) come from the dataset's `run_scripts` checkout ([`attach_harness`]).

use std::path::Path;

use crate::tasks::{PRO_REPO_DIR, ProSpec, Task, TaskBase};

use super::error::{CellProblem, DatasetError};
use super::py_literal::parse_str_list;
use super::table::{Column, Table, normalize_date};

/// The Docker Hub repository of SWE-bench Pro images.
pub const IMAGE_REPO: &str = "jefzda/sweap-images";

const REQUIRED: [&str; 12] = [
    "instance_id",
    "repo",
    "base_commit",
    "patch",
    "test_patch",
    "problem_statement",
    "requirements",
    "interface",
    "before_repo_set_cmd",
    "selected_test_files_to_run",
    "fail_to_pass",
    "pass_to_pass",
];

pub fn columns() -> Vec<&'static str> {
    let mut c = REQUIRED.to_vec();
    c.extend(["repo_language", "dockerhub_tag", "created_at"]);
    c
}

/// The columns a file must have.
pub fn required() -> Vec<&'static str> {
    REQUIRED.to_vec()
}

/// The image tag of an instance, as `helper_code/image_uri.py` makes it:
/// `{owner}.{name}-{instance_id without "instance_"}` (lower-cased owner and name), with the
/// `-vnan` suffix dropped, element-web's two special cases, and at most 128 characters.
/// Errors: a `repo` that is not `owner/name`.
pub fn image_tag(instance_id: &str, repo: &str) -> Result<String, String> {
    let lower = repo.to_lowercase();
    let mut parts = lower.split('/');
    let (Some(owner), Some(mut name), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!("repo {repo:?} is not `owner/name`"));
    };
    // Upstream replaces every "instance_", not only a prefix.
    let mut hsh = instance_id.replace("instance_", "");
    let strip_vnan = |h: &mut String| {
        if let Some(s) = h.strip_suffix("-vnan") {
            *h = s.to_string();
        }
    };
    if instance_id
        == "instance_element-hq__element-web-ec0f940ef0e8e3b61078f145f34dc40d1938e6c5-vnan"
    {
        // Upstream keeps this one's name and its suffix.
        name = "element-web";
    } else if lower.contains("element-hq") && lower.contains("element-web") {
        name = "element";
        strip_vnan(&mut hsh);
    } else {
        strip_vnan(&mut hsh);
    }
    let tag = format!("{owner}.{name}-{hsh}");
    Ok(tag.chars().take(128).collect())
}

/// A list column: a Python literal in a string cell, or a real list.
fn take_py_list(t: &mut Table, row: usize, column: &str) -> Result<Vec<String>, DatasetError> {
    if let Some(Column::List(_) | Column::Json(_)) = t.columns.get(column) {
        let is_str_json = matches!(
            t.columns.get(column),
            Some(Column::Json(v)) if matches!(v[row], Some(serde_json::Value::String(_)))
        );
        if !is_str_json {
            return t.req_list(row, column);
        }
    }
    let cell = t.req_str(row, column)?;
    parse_str_list(&cell).map_err(|e| {
        t.cell_error(
            row,
            column,
            CellProblem::BadPyList {
                offset: e.offset,
                message: e.message,
                cell: cell.chars().take(200).collect(),
            },
        )
    })
}

/// SWE-bench Pro rows (without their harness files: see [`attach_harness`]).
pub fn rows(t: &mut Table) -> Result<Vec<Task>, DatasetError> {
    t.require(&REQUIRED)?;
    (0..t.rows)
        .map(|row| {
            let instance_id = t.req_str(row, "instance_id")?;
            let repo = t.req_str(row, "repo")?;
            let image = image_tag(&instance_id, &repo)
                .map_err(|m| t.cell_error(row, "repo", CellProblem::Invalid(m)))?;
            let created_at = match t.take_str(row, "created_at")? {
                Some(raw) if !raw.trim().is_empty() => normalize_date(&raw)
                    .ok_or_else(|| t.cell_error(row, "created_at", CellProblem::BadDate(raw)))?,
                _ => String::new(),
            };
            let problem_statement = format!(
                "{}\n\nRequirements:\n{}\n\nNew interfaces introduced:\n{}",
                t.req_str(row, "problem_statement")?,
                t.take_str(row, "requirements")?.unwrap_or_default(),
                t.take_str(row, "interface")?.unwrap_or_default(),
            );
            let selected_test_files = take_py_list(t, row, "selected_test_files_to_run")?;
            let fail_to_pass = take_py_list(t, row, "fail_to_pass")?;
            let pass_to_pass = take_py_list(t, row, "pass_to_pass")?;
            let before_repo_set_cmd = t.take_str(row, "before_repo_set_cmd")?.unwrap_or_default();
            Ok(Task {
                base: TaskBase::Image {
                    image: format!("{IMAGE_REPO}:{image}"),
                    base_commit: t.req_str(row, "base_commit")?,
                },
                language: t.take_str(row, "repo_language")?.filter(|l| !l.is_empty()),
                created_at,
                problem_statement,
                gold_patch: t.req_str(row, "patch")?,
                test_patch: t.req_str(row, "test_patch")?,
                rebuild_cmds: Vec::new(),
                test_cmds: Vec::new(),
                print_cmds: Vec::new(),
                // The task's own parser.py decides (see `ProSpec`).
                log_parser: "swe-bench-pro-parser.py".into(),
                fail_to_pass,
                pass_to_pass,
                repo_dir: Some(PRO_REPO_DIR.to_string()),
                harbor: None,
                pro: Some(ProSpec {
                    before_repo_set_cmd,
                    instance_info: String::new(),
                    parser_py: String::new(),
                    run_script: String::new(),
                    selected_test_files,
                }),
                instance_id,
                repo,
                setup_cmds: Vec::new(),
                digests: Default::default(),
            })
        })
        .collect()
}

/// Why a task's harness files cannot be read.
#[derive(Debug, thiserror::Error)]
#[error(
    "task {instance_id}: cannot read {}: {message}; `run_scripts` must be a SWE-bench_Pro-os checkout holding run_scripts/<instance_id>/{{run_script.sh, parser.py, instance_info.txt}} for every task",
    path.display()
)]
pub struct HarnessError {
    pub instance_id: String,
    pub path: std::path::PathBuf,
    pub message: String,
}

/// Reads every task's `run_scripts/<instance_id>/` files from the checkout at `dir` into its
/// [`ProSpec`]. A missing or unreadable file is an error naming the task and the path.
pub fn attach_harness(tasks: &mut [Task], dir: &Path) -> Result<(), HarnessError> {
    for t in tasks.iter_mut() {
        let Some(pro) = &t.pro else { continue };
        if t.instance_id.contains(['/', '\\']) || t.instance_id.starts_with('.') {
            return Err(HarnessError {
                instance_id: t.instance_id.clone(),
                path: dir.join("run_scripts"),
                message: "an instance id must be a plain name (no path separators)".into(),
            });
        }
        let task_dir = dir.join("run_scripts").join(&t.instance_id);
        let read = |name: &str| {
            let p = task_dir.join(name);
            fs_err::read_to_string(&p).map_err(|e| HarnessError {
                instance_id: t.instance_id.clone(),
                path: p.clone(),
                message: e.to_string(),
            })
        };
        let spec = ProSpec {
            before_repo_set_cmd: pro.before_repo_set_cmd.clone(),
            instance_info: read("instance_info.txt")?,
            parser_py: read("parser.py")?,
            run_script: read("run_script.sh")?,
            selected_test_files: pro.selected_test_files.clone(),
        };
        t.pro = Some(spec);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_tags_follow_image_uri_py() {
        let id = "instance_NodeBB__NodeBB-00c70ce7b0541cfc94afe567921d7668cdc8f4ac-vnan";
        assert_eq!(
            image_tag(id, "NodeBB/NodeBB").unwrap(),
            "nodebb.nodebb-NodeBB__NodeBB-00c70ce7b0541cfc94afe567921d7668cdc8f4ac"
        );
        // A version suffix other than -vnan stays; the instance part keeps its case.
        let id = "instance_qutebrowser__qutebrowser-01d1d1494411380d97cac14614a829d3a69cecaf-v2ef375ac784985212b1805e1d0431dc8f1b3c171";
        let tag = image_tag(id, "qutebrowser/qutebrowser").unwrap();
        assert_eq!(tag.len(), 128);
        assert_eq!(
            tag,
            "qutebrowser.qutebrowser-qutebrowser__qutebrowser-01d1d1494411380d97cac14614a829d3a69cecaf-v2ef375ac784985212b1805e1d0431dc8f1b3c"
        );
        // element-web: the name becomes `element` and -vnan is dropped ...
        assert_eq!(
            image_tag(
                "instance_element-hq__element-web-33e8edb3d508d6eefb354819ca693b7accc695e7",
                "element-hq/element-web"
            )
            .unwrap(),
            "element-hq.element-element-hq__element-web-33e8edb3d508d6eefb354819ca693b7accc695e7"
        );
        assert_eq!(
            image_tag(
                "instance_element-hq__element-web-aaaa-vnan",
                "element-hq/element-web"
            )
            .unwrap(),
            "element-hq.element-element-hq__element-web-aaaa"
        );
        // ... except for the one instance upstream keeps whole.
        assert_eq!(
            image_tag(
                "instance_element-hq__element-web-ec0f940ef0e8e3b61078f145f34dc40d1938e6c5-vnan",
                "element-hq/element-web"
            )
            .unwrap(),
            "element-hq.element-web-element-hq__element-web-ec0f940ef0e8e3b61078f145f34dc40d1938e6c5-vnan"
        );
        assert!(image_tag("x", "noslash").is_err());
        assert!(image_tag("x", "a/b/c").is_err());
    }
}
