//! `swebench/harness/log_parsers/ruby.py` (5.0.2): `parse_log_minitest` and
//! `parse_log_cucumber` (jekyll, picked by PR number), `parse_log_ruby_unit` (fluentd,
//! faker), `parse_log_rspec_transformed_json` (fastlane, fpm, rubocop). Upstream's quirks
//! kept:
//!
//! - minitest: `^(.+)\. .*=.*(\.|F|E).*$`, the name up to the line's last `. ` that has a
//!   `=` and a result mark after it. Minitest's own verbose line (`Class#test_x = 0.00 s = .`)
//!   has no `. ` and is not read: only reporters that print `name. ... = ... .` lines match;
//!   the outcome is the last `.`, `F` or `E` of the line, so any later dot (a decimal point)
//!   turns a failure into a pass. Skips (`S`) are not read.
//! - cucumber (`--format progress`): `name ...` followed by `.` or `F`.
//! - ruby_unit (test-unit's verbose output): `name: .|E|F|O` (an optional `test: ` prefix
//!   dropped), O (omitted) as SKIPPED; pending and notification marks are not read.
//! - rspec_transformed_json: `name - passed|failed` lines of upstream's jq transform of
//!   `rspec --format json`, the name up to the line's last such suffix; `pending` is never
//!   read (the pattern has no branch for it).

use std::sync::OnceLock;

use regex::Regex;

use super::{RawStatuses, lazy, py_strip};

fn by_line(log: &str, r: &Regex, word: fn(&str) -> Option<&'static str>) -> RawStatuses {
    let mut map = RawStatuses::new();
    for line in log.split('\n') {
        if let Some(c) = r.captures(py_strip(line))
            && let Some(w) = word(&c[2])
        {
            map.insert(&c[1], w);
        }
    }
    map
}

pub fn minitest(log: &str) -> RawStatuses {
    static R: OnceLock<Regex> = OnceLock::new();
    let r = lazy(&R, r"^(.+)\. .*=.*(\.|F|E).*$");
    by_line(log, r, |o| match o {
        "." => Some("PASSED"),
        _ => Some("FAILED"),
    })
}

pub fn cucumber(log: &str) -> RawStatuses {
    static R: OnceLock<Regex> = OnceLock::new();
    let r = lazy(&R, r"^(.*) \.+(\.|F)");
    by_line(log, r, |o| match o {
        "." => Some("PASSED"),
        _ => Some("FAILED"),
    })
}

pub fn ruby_unit(log: &str) -> RawStatuses {
    static R: OnceLock<Regex> = OnceLock::new();
    let r = lazy(&R, r"^\s*(?:test: )?(.+):\s+(\.|E\b|F\b|O\b)");
    by_line(log, r, |o| match o {
        "." => Some("PASSED"),
        "O" => Some("SKIPPED"),
        _ => Some("FAILED"),
    })
}

pub fn rspec_transformed_json(log: &str) -> RawStatuses {
    static R: OnceLock<Regex> = OnceLock::new();
    let r = lazy(&R, r"^(.+) - (passed|failed)");
    by_line(log, r, |o| match o {
        "passed" => Some("PASSED"),
        _ => Some("FAILED"),
    })
}

/// `parse_log_jekyll`: the parser of a jekyll instance, by the second `-`-separated part of
/// its id (`jekyll__jekyll-9141` -> `9141`; upstream raises for any other instance).
pub fn jekyll(instance_id: &str) -> Option<&'static str> {
    match instance_id.split('-').nth(1) {
        Some("9141" | "8047" | "8167") => Some("swebench-minitest"),
        Some("8761" | "8771") => Some("swebench-cucumber"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minitest_needs_a_dot_space_and_reads_the_last_mark() {
        let m = minitest(
            "TestA#test_x = 0.00 s = .\nTestSite. test_read = 0.01 s = .\nTestSite. test_bad = F\n",
        );
        assert_eq!(m.get("TestA#test_x"), None);
        assert_eq!(m.get("TestSite"), Some("FAILED"));
        assert_eq!(m.len(), 1);
        assert_eq!(jekyll("jekyll__jekyll-9141"), Some("swebench-minitest"));
        assert_eq!(jekyll("jekyll__jekyll-8771"), Some("swebench-cucumber"));
        assert_eq!(jekyll("jekyll__jekyll-1"), None);
    }

    #[test]
    fn cucumber_unit_and_rspec() {
        let c = cucumber("Scenario: builds ....\nScenario: breaks ..F\n");
        assert_eq!(c.get("Scenario: builds"), Some("PASSED"));
        assert_eq!(c.get("Scenario: breaks"), Some("FAILED"));
        let u = ruby_unit("test: a(T): .\nb(T): E\nc(T): O\nd(T): P\n");
        assert_eq!(u.get("a(T)"), Some("PASSED"));
        assert_eq!(u.get("b(T)"), Some("FAILED"));
        assert_eq!(u.get("c(T)"), Some("SKIPPED"));
        assert_eq!(u.get("d(T)"), None);
        let r = rspec_transformed_json("A - b - passed\nC - failed\nD - pending\n");
        assert_eq!(r.get("A - b"), Some("PASSED"));
        assert_eq!(r.get("C"), Some("FAILED"));
        assert_eq!(r.get("D"), None);
    }
}
