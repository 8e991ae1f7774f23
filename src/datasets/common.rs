//! Fields every SWE-bench-shaped row has, and image naming.

use super::error::{CellProblem, DatasetError};
use super::table::{Table, normalize_date};

/// The SWE-bench fields shared by every supported row shape.
pub struct Common {
    pub instance_id: String,
    pub repo: String,
    pub base_commit: String,
    pub patch: String,
    pub test_patch: String,
    pub problem_statement: String,
    pub created_at: String,
    pub fail_to_pass: Vec<String>,
    pub pass_to_pass: Vec<String>,
}

pub const COMMON_COLUMNS: [&str; 9] = [
    "instance_id",
    "repo",
    "base_commit",
    "patch",
    "test_patch",
    "problem_statement",
    "created_at",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
];

impl Common {
    pub fn take(t: &mut Table, row: usize) -> Result<Common, DatasetError> {
        let raw_date = t.req_str(row, "created_at")?;
        let created_at = normalize_date(&raw_date)
            .ok_or_else(|| t.cell_error(row, "created_at", CellProblem::BadDate(raw_date)))?;
        Ok(Common {
            instance_id: t.req_str(row, "instance_id")?,
            repo: t.req_str(row, "repo")?,
            base_commit: t.req_str(row, "base_commit")?,
            patch: t.req_str(row, "patch")?,
            test_patch: t.req_str(row, "test_patch")?,
            problem_statement: t.req_str(row, "problem_statement")?,
            created_at,
            fail_to_pass: t.req_list(row, "FAIL_TO_PASS")?,
            pass_to_pass: t.req_list(row, "PASS_TO_PASS")?,
        })
    }
}

/// The SWE-bench image key of an instance: `__` becomes `_1776_`, lowercased.
pub fn image_key(instance_id: &str) -> String {
    instance_id.replace("__", "_1776_").to_lowercase()
}

#[cfg(test)]
mod tests {
    #[test]
    fn image_key_follows_upstream() {
        assert_eq!(
            super::image_key("aws-cloudformation__cfn-lint-3798"),
            "aws-cloudformation_1776_cfn-lint-3798"
        );
        assert_eq!(
            super::image_key("Django__Django-11099"),
            "django_1776_django-11099"
        );
    }
}
