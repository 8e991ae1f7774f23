//! SWE-bench-Live's grading, ported from its `evaluation.py` and RepoLaunch's `apply_patch`:
//! the hidden test patch, then the candidate patch, each applied with
//! `git apply --reject --whitespace=nowarn` at the git root; `rebuild_cmds`, then `test_cmds`,
//! each joined with " ; ", from /testbed; the log is the output of `print_cmds` (rows without
//! them: the tests run as `bash run_test.sh > testlog.out 2>&1` and `testlog.out` is printed);
//! the row's parser (a built-in name or the row's Python source); the verdict.
//!
//! Seed deviations kept: a candidate that does not apply fully is not resolved; a test patch
//! that does not apply, and a parser script that raises or hangs, are grading errors; a run past
//! the budget is unresolved with `timed_out`.

use super::steps::Recipe;

pub const VERSION: u32 = 4;

pub const RECIPE: Recipe = Recipe {
    test_patch_apply: "git apply --reject --whitespace=nowarn",
    candidate_apply: "git apply --reject --whitespace=nowarn",
    wrap_tests: true,
};
