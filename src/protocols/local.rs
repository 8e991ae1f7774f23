//! bench's local task format (examples/quickstart/README.md): the hidden test patch applied
//! with `git apply` (it must apply fully), the candidate with `git apply --reject` (a candidate
//! that does not apply fully cannot be resolved), `rebuild_cmds` then `test_cmds` in the
//! repository, each list joined with " ; "; the log is the tests' output, or the output of
//! `print_cmds` when given; the task's parser; the verdict.

use super::steps::Recipe;

pub const VERSION: u32 = 4;

pub const RECIPE: Recipe = Recipe {
    test_patch_apply: "git apply --whitespace=nowarn",
    candidate_apply: "git apply --reject --whitespace=nowarn",
    wrap_tests: false,
};
