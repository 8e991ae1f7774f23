//! `swebench/harness/log_parsers/java.py` (5.0.2): `parse_log_maven` (gson, druid,
//! javaparser), `parse_log_ant` (lombok), `parse_log_gradle_custom` (lucene, rxjava).
//! Upstream's quirks kept:
//!
//! - maven: Surefire does not list passing tests, so upstream runs one `mvn ... -Dtest=X`
//!   per test and reads the `set -x` trace: each `-Dtest=X` line queues `X` (the whole
//!   `\S+` after `=`, a `Class#method` or a comma list), each `BUILD SUCCESS|FAILURE` line
//!   gives the oldest queued test its status (a result with no queued test waits for the next
//!   one). A module that fails to compile is `BUILD FAILURE` for the test, and a test name
//!   the trace shows twice counts twice.
//! - ant: `[junit] [PASS|FAIL|ERR] name` (the lombok build's own formatter), ERR as FAILED.
//! - gradle: `name PASSED|FAILED` on one line (the init script upstream installs prints
//!   `Class > method PASSED`), or a `Class > method` line whose status comes on a later
//!   line of its own; `SKIPPED` is not read; a line starting with `>` never names a test.

use std::collections::VecDeque;
use std::sync::OnceLock;

use regex::Regex;

use super::{RawStatuses, lazy, py_strip};

fn word(status: &str) -> &'static str {
    match status {
        "SUCCESS" | "PASSED" => "PASSED",
        _ => "FAILED",
    }
}

/// `^.*-Dtest=(\S+).*$`: the `\S+` after the line's last `-Dtest=` that has one.
fn maven_test(line: &str) -> Option<&str> {
    line.rmatch_indices("-Dtest=").find_map(|(i, m)| {
        let rest = &line[i + m.len()..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        (end > 0).then(|| &rest[..end])
    })
}

/// `^.*BUILD (SUCCESS|FAILURE)$`: the result word.
fn maven_result(line: &str) -> Option<&'static str> {
    if line.ends_with("BUILD SUCCESS") {
        Some(word("SUCCESS"))
    } else if line.ends_with("BUILD FAILURE") {
        Some(word("FAILURE"))
    } else {
        None
    }
}

pub fn maven(log: &str) -> RawStatuses {
    let mut map = RawStatuses::new();
    let mut pending: VecDeque<String> = VecDeque::new();
    let mut unmatched: VecDeque<&'static str> = VecDeque::new();
    for line in log.split('\n') {
        let line = py_strip(line);
        if let Some(test) = maven_test(line) {
            pending.push_back(test.to_string());
        }
        if let Some(status) = maven_result(line) {
            match pending.pop_front() {
                Some(test) => map.insert(test, status),
                None => unmatched.push_back(status),
            }
        }
    }
    while !pending.is_empty() && !unmatched.is_empty() {
        let (Some(test), Some(status)) = (pending.pop_front(), unmatched.pop_front()) else {
            break;
        };
        map.insert(test, status);
    }
    map
}

pub fn ant(log: &str) -> RawStatuses {
    static R: OnceLock<Regex> = OnceLock::new();
    let r = lazy(&R, r"^\s*\[junit\]\s+\[(PASS|FAIL|ERR)\]\s+(.*)$");
    let mut map = RawStatuses::new();
    for line in log.split('\n') {
        if let Some(c) = r.captures(py_strip(line)) {
            map.insert(&c[2], if &c[1] == "PASS" { "PASSED" } else { "FAILED" });
        }
    }
    map
}

pub fn gradle_custom(log: &str) -> RawStatuses {
    static FULL: OnceLock<Regex> = OnceLock::new();
    static NAME: OnceLock<Regex> = OnceLock::new();
    static STATUS: OnceLock<Regex> = OnceLock::new();
    let full = lazy(&FULL, r"^([^>].+)\s+(PASSED|FAILED)$");
    let name = lazy(&NAME, r"^([^>]\S*\s+>\s+\S+)$");
    let status = lazy(&STATUS, r"^(PASSED|FAILED)$");
    let mut map = RawStatuses::new();
    let mut pending: Option<String> = None;
    for line in log.split('\n') {
        let line = py_strip(line);
        if let Some(c) = full.captures(line) {
            map.insert(&c[1], word(&c[2]));
            pending = None;
            continue;
        }
        if let Some(c) = name.captures(line) {
            pending = Some(c[1].to_string());
            continue;
        }
        if let Some(test) = &pending
            && let Some(c) = status.captures(line)
        {
            map.insert(test.clone(), word(&c[1]));
            pending = None;
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_map as m;

    #[test]
    fn maven_pairs_traced_commands_with_build_results_in_order() {
        let log = "+ mvn test -Dtest=A#a\n[INFO] BUILD SUCCESS\n+ mvn test -Dtest=A#b -q\n+ mvn test -Dtest=A#c\n[INFO] BUILD FAILURE\n[INFO] BUILD SUCCESS\n";
        assert_eq!(
            maven(log),
            m(&[("A#a", "PASSED"), ("A#b", "FAILED"), ("A#c", "PASSED")])
        );
        // A result before any command waits for the next command.
        assert_eq!(
            maven("[INFO] BUILD FAILURE\n+ mvn -Dtest=X test\n"),
            m(&[("X", "FAILED")])
        );
    }

    #[test]
    fn maven_hand_matchers_agree_with_upstream_regexes() {
        let name = Regex::new(r"^.*-Dtest=(\S+).*$").unwrap();
        let result = Regex::new(r"^.*BUILD (SUCCESS|FAILURE)$").unwrap();
        let pieces = [
            "-Dtest=",
            "-Dtest",
            "=",
            " ",
            "\t",
            "\u{a0}",
            "\u{1f}",
            "A#a",
            "é",
            "BUILD ",
            "SUCCESS",
            "FAILURE",
            "BUILD SUCCESS",
            "\r",
        ];
        for raw in super::super::glued_lines(&pieces, 200_000) {
            let line = py_strip(&raw);
            let want = name.captures(line).map(|c| c.get(1).unwrap().as_str());
            assert_eq!(maven_test(line), want, "{raw:?}");
            let want = result.captures(line).map(|c| word(&c[1]));
            assert_eq!(maven_result(line), want, "{raw:?}");
        }
    }

    #[test]
    fn ant_and_gradle() {
        assert_eq!(
            ant("    [junit] [PASS] a\n[junit] [ERR] b\n[junit] [FAIL] c\n"),
            m(&[("a", "PASSED"), ("b", "FAILED"), ("c", "FAILED")])
        );
        let log = "T > a PASSED\nT > b\nwarning: x\nFAILED\n> Task :test FAILED\nT > c SKIPPED\n";
        assert_eq!(
            gradle_custom(log),
            m(&[("T > a", "PASSED"), ("T > b", "FAILED")])
        );
    }
}
