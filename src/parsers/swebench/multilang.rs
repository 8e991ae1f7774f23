//! `swebench/harness/log_parsers/go.py` and `rust.py` (5.0.2): `parse_log_gotest` (`--- PASS|FAIL|
//! SKIP: name (duration)` on the stripped line, so indented subtests count) and
//! `parse_log_cargo` (`test name ... ok|FAILED`; other outcomes, `ignored` included, dropped).

use std::sync::OnceLock;

use regex::Regex;

use super::{RawStatuses, Sink, by_stripped_line, filled, lines, py_strip, space_parens_back};

/// `^--- (PASS|FAIL|SKIP): (.+) \((.+)\)$` on a stripped line: the status word and the name.
fn gotest_line(line: &str) -> Option<(&'static str, &str)> {
    let rest = line.strip_prefix("--- ")?;
    let (word, rest) = if let Some(rest) = rest.strip_prefix("PASS: ") {
        ("PASSED", rest)
    } else if let Some(rest) = rest.strip_prefix("FAIL: ") {
        ("FAILED", rest)
    } else {
        ("SKIPPED", rest.strip_prefix("SKIP: ")?)
    };
    // The greedy name ends at the last ` (` that leaves a name and a non-empty duration.
    let body = rest.strip_suffix(')')?;
    space_parens_back(body)
        .find(|&i| i > 0 && i + 2 < body.len())
        .map(|i| (word, &body[..i]))
}

pub fn gotest(log: &str) -> RawStatuses {
    filled(log, gotest_into)
}

pub(crate) fn gotest_into(log: &str, map: &mut impl Sink) {
    by_stripped_line(log, map, gotest_line)
}

pub fn cargo(log: &str) -> RawStatuses {
    filled(log, cargo_into)
}

pub(crate) fn cargo_into(log: &str, map: &mut impl Sink) {
    static R: OnceLock<Regex> = OnceLock::new();
    let r = R.get_or_init(|| Regex::new(r"^test\s+(\S+)\s+\.\.\.\s+(\w+)$").expect("valid"));
    for line in lines(log) {
        if let Some(c) = r.captures(py_strip(line)) {
            match &c[2] {
                "ok" => map.put(&c[1], "PASSED"),
                "FAILED" => map.put(&c[1], "FAILED"),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn gotest_hand_matcher_agrees_with_upstream_regex() {
        let r = regex::Regex::new(r"^--- (PASS|FAIL|SKIP): (.+) \((.+)\)$").unwrap();
        let pieces = [
            "--- ", "PASS: ", "FAIL: ", "SKIP: ", "PASS:", "--", " (", "(", ")", " ", "\t", "a",
            "é", "0.01s", "\r",
        ];
        for raw in super::super::glued_lines(&pieces, 200_000) {
            let line = super::py_strip(&raw);
            let want = r.captures(line).map(|c| {
                let word = match &c[1] {
                    "PASS" => "PASSED",
                    "FAIL" => "FAILED",
                    _ => "SKIPPED",
                };
                (word, c.get(2).unwrap().as_str())
            });
            assert_eq!(super::gotest_line(line), want, "{raw:?}");
        }
    }

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
