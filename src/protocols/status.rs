//! The status rule for parser scripts' raw values, as SWE-bench-Live's verdict reads them:
//! a status containing "pass" is a success, one containing "fail" a failure, anything else
//! (skip, error, ...) neither. Grading and `bench parse-log --script` both use it.

use crate::parsers::TestStatus;

/// Maps a script parser's raw status; "neither" is [`TestStatus::Skip`] (a FAIL_TO_PASS test
/// that is neither is not resolved; a PASS_TO_PASS one does not fail the task).
pub fn script_status(raw: &str) -> TestStatus {
    let l = raw.to_lowercase();
    if l.contains("pass") {
        TestStatus::Pass
    } else if l.contains("fail") {
        TestStatus::Fail
    } else {
        TestStatus::Skip
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_substring_rule() {
        assert_eq!(script_status("PASSED"), TestStatus::Pass);
        assert_eq!(script_status("pass"), TestStatus::Pass);
        assert_eq!(script_status("FAILED"), TestStatus::Fail);
        assert_eq!(script_status("ERROR"), TestStatus::Skip);
        assert_eq!(script_status("skip"), TestStatus::Skip);
        assert_eq!(script_status(""), TestStatus::Skip);
    }
}
