//! `swebench/harness/log_parsers/go.py` and `rust.py` (5.0.2): `parse_log_gotest` (`--- PASS|FAIL|
//! SKIP: name (duration)` on the stripped line, so indented subtests count) and
//! `parse_log_cargo` (`test name ... ok|FAILED`; other outcomes, `ignored` included, dropped).

use std::sync::OnceLock;

use regex::Regex;

use super::{RawStatuses, py_strip};

pub fn gotest(log: &str) -> RawStatuses {
    static R: OnceLock<Regex> = OnceLock::new();
    let r = R.get_or_init(|| Regex::new(r"^--- (PASS|FAIL|SKIP): (.+) \((.+)\)$").expect("valid"));
    let mut map = RawStatuses::new();
    for line in log.split('\n') {
        if let Some(c) = r.captures(py_strip(line)) {
            let word = match &c[1] {
                "PASS" => "PASSED",
                "FAIL" => "FAILED",
                _ => "SKIPPED",
            };
            map.insert(&c[2], word);
        }
    }
    map
}

pub fn cargo(log: &str) -> RawStatuses {
    static R: OnceLock<Regex> = OnceLock::new();
    let r = R.get_or_init(|| Regex::new(r"^test\s+(\S+)\s+\.\.\.\s+(\w+)$").expect("valid"));
    let mut map = RawStatuses::new();
    for line in log.split('\n') {
        if let Some(c) = r.captures(py_strip(line)) {
            match &c[2] {
                "ok" => map.insert(&c[1], "PASSED"),
                "FAILED" => map.insert(&c[1], "FAILED"),
                _ => {}
            }
        }
    }
    map
}

#[cfg(test)]
mod tests {
    #[test]
    fn go_reads_indented_subtests_and_cargo_drops_ignored() {
        let m = super::gotest(
            "--- PASS: TestA (0.00s)\n    --- FAIL: TestA/sub (0.01s)\n--- SKIP: TestB (0.00s)\n",
        );
        assert_eq!(m.get("TestA"), Some("PASSED"));
        assert_eq!(m.get("TestA/sub"), Some("FAILED"));
        assert_eq!(m.get("TestB"), Some("SKIPPED"));
        let m = super::cargo("test a::b ... ok\ntest c ... FAILED\ntest d ... ignored\n");
        assert_eq!(m.get("a::b"), Some("PASSED"));
        assert_eq!(m.get("c"), Some("FAILED"));
        assert_eq!(m.get("d"), None);
    }
}
