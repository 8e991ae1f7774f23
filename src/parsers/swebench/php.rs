//! `swebench/harness/log_parsers/php.py` (5.0.2): `parse_log_phpunit` (phpspreadsheet,
//! laravel, php-cs-fixer, carbon), reading `phpunit --testdox`. Upstream's quirks kept: a
//! suite is any unindented line of the shape `Name (anything)` (testdox prints
//! `Class Name (Fully\Qualified\ClassTest)`), a test is `✔`, `✘` or `↩` and the rest of the
//! line, named `suite > test`; a test before any suite line is named `None > test`; the
//! incomplete (`∅`) and risky (`☢`) marks are not read; a testdox name spanning lines keeps
//! only its first line.

use std::sync::OnceLock;

use regex::Regex;

use super::{RawStatuses, lazy};

pub fn phpunit(log: &str) -> RawStatuses {
    static SUITE: OnceLock<Regex> = OnceLock::new();
    static TEST: OnceLock<Regex> = OnceLock::new();
    let suite_re = lazy(&SUITE, r"^(\w.+) \(.+\)$");
    let test_re = lazy(&TEST, r"^\s*([✔✘↩])\s*(.*)$");
    let mut map = RawStatuses::new();
    let mut suite: Option<String> = None;
    for line in log.split('\n') {
        if let Some(c) = suite_re.captures(line) {
            suite = Some(c[1].to_string());
            continue;
        }
        if let Some(c) = test_re.captures(line) {
            let word = match &c[1] {
                "✔" => "PASSED",
                "✘" => "FAILED",
                _ => "SKIPPED",
            };
            map.insert(
                format!("{} > {}", suite.as_deref().unwrap_or("None"), &c[2]),
                word,
            );
        }
    }
    map
}

#[cfg(test)]
mod tests {
    #[test]
    fn testdox_suites_prefix_their_tests() {
        let log = " ✔ orphan\nCalculator (Tests\\CalculatorTest)\n ✔ Adds numbers\n ✘ Divides by zero\n   │\n ↩ Later\n ∅ Incomplete\n";
        let m = super::phpunit(log);
        assert_eq!(m.get("None > orphan"), Some("PASSED"));
        assert_eq!(m.get("Calculator > Adds numbers"), Some("PASSED"));
        assert_eq!(m.get("Calculator > Divides by zero"), Some("FAILED"));
        assert_eq!(m.get("Calculator > Later"), Some("SKIPPED"));
        assert_eq!(m.len(), 4);
    }
}
