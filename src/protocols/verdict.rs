//! The verdict rule shared by the protocols: every FAIL_TO_PASS test passed, no PASS_TO_PASS
//! test failed, the candidate applied fully and the run finished in time. A PASS_TO_PASS test
//! missing from the log (or skipped) does not fail the task but is recorded as missing
//! (SWE-bench-Live's rule); a FAIL_TO_PASS test must pass.

use crate::jobs::GradeOutput;
use crate::parsers::{Statuses, TestStatus};

/// Applies the verdict rule to parsed statuses.
pub fn verdict(
    fail_to_pass: &[String],
    pass_to_pass: &[String],
    statuses: &Statuses,
    patch_applied: bool,
    timed_out: bool,
) -> GradeOutput {
    let mut g = GradeOutput {
        patch_applied,
        timed_out,
        ..Default::default()
    };
    for t in fail_to_pass {
        match statuses.get(t) {
            Some(TestStatus::Pass) => g.fail_to_pass_success.push(t.clone()),
            _ => g.fail_to_pass_failure.push(t.clone()),
        }
    }
    for t in pass_to_pass {
        match statuses.get(t) {
            Some(TestStatus::Pass) => g.pass_to_pass_success.push(t.clone()),
            Some(TestStatus::Fail) => g.pass_to_pass_failure.push(t.clone()),
            Some(TestStatus::Skip) => {}
            None => g.pass_to_pass_missing.push(t.clone()),
        }
    }
    g.resolved = patch_applied
        && !timed_out
        && g.fail_to_pass_failure.is_empty()
        && g.pass_to_pass_failure.is_empty();
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(pairs: &[(&str, TestStatus)]) -> Statuses {
        pairs.iter().map(|(n, s)| (n.to_string(), *s)).collect()
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn all_fail_to_pass_pass_and_no_pass_to_pass_fails() {
        let s = st(&[("a", TestStatus::Pass), ("b", TestStatus::Pass)]);
        let g = verdict(&names(&["a"]), &names(&["b"]), &s, true, false);
        assert!(g.resolved);
        assert_eq!(g.fail_to_pass_success, ["a"]);
        assert_eq!(g.pass_to_pass_success, ["b"]);
    }

    #[test]
    fn a_missing_or_skipped_fail_to_pass_test_fails() {
        let s = st(&[("b", TestStatus::Pass), ("c", TestStatus::Skip)]);
        let g = verdict(&names(&["a", "c"]), &names(&["b"]), &s, true, false);
        assert!(!g.resolved);
        assert_eq!(g.fail_to_pass_failure, ["a", "c"]);
    }

    #[test]
    fn a_missing_pass_to_pass_test_is_recorded_not_failed() {
        let s = st(&[("a", TestStatus::Pass), ("c", TestStatus::Skip)]);
        let g = verdict(&names(&["a"]), &names(&["b", "c"]), &s, true, false);
        assert!(g.resolved);
        assert_eq!(g.pass_to_pass_missing, ["b"]);
        assert!(g.pass_to_pass_failure.is_empty());
    }

    #[test]
    fn a_failing_pass_to_pass_test_fails() {
        let s = st(&[("a", TestStatus::Pass), ("b", TestStatus::Fail)]);
        assert!(!verdict(&names(&["a"]), &names(&["b"]), &s, true, false).resolved);
    }

    #[test]
    fn an_unapplied_patch_or_a_timeout_is_unresolved() {
        let s = st(&[("a", TestStatus::Pass)]);
        assert!(!verdict(&names(&["a"]), &[], &s, false, false).resolved);
        assert!(!verdict(&names(&["a"]), &[], &s, true, true).resolved);
    }
}
