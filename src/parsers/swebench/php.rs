//! `swebench/harness/log_parsers/php.py` (5.0.2): `parse_log_phpunit` (phpspreadsheet,
//! laravel, php-cs-fixer, carbon), reading `phpunit --testdox`. Upstream's quirks kept: a
//! suite is any unindented line of the shape `Name (anything)` (testdox prints
//! `Class Name (Fully\Qualified\ClassTest)`), a test is `✔`, `✘` or `↩` and the rest of the
//! line, named `suite > test`; a test before any suite line is named `None > test`; the
//! incomplete (`∅`) and risky (`☢`) marks are not read; a testdox name spanning lines keeps
//! only its first line.

use std::sync::OnceLock;

use regex::Regex;

use super::{RawStatuses, lazy, lines};

const SUITE: &str = r"^(\w.+) \(.+\)$";

/// [`SUITE`] on a raw line: the suite's name, the line up to its last ` (` that leaves a
/// character before the final `)`. By hand unless the line starts with a non-ASCII character
/// (the regex decides whether it is a Unicode `\w`).
fn suite_line(line: &str) -> Option<&str> {
    static R: OnceLock<Regex> = OnceLock::new();
    let body = line.strip_suffix(')')?;
    // `.+` leaves the body's last character after the `(`.
    let (last, _) = body.char_indices().next_back()?;
    let open = body[..last].rfind(" (")?;
    let name = &line[..open];
    let mut chars = name.chars();
    let first = chars.next()?;
    if !first.is_ascii() {
        return lazy(&R, SUITE)
            .captures(line)
            .map(|c| c.get(1).map_or("", |m| m.as_str()));
    }
    (first.is_ascii_alphanumeric() || first == '_')
        .then_some(name)
        .filter(|_| chars.next().is_some())
}

/// `^\s*([✔✘↩])\s*(.*)$` on a raw line: the status word and the test's name.
fn test_line(line: &str) -> Option<(&'static str, &str)> {
    let mut chars = line.trim_start_matches(char::is_whitespace).chars();
    let word = match chars.next()? {
        '✔' => "PASSED",
        '✘' => "FAILED",
        '↩' => "SKIPPED",
        _ => return None,
    };
    Some((word, chars.as_str().trim_start_matches(char::is_whitespace)))
}

pub fn phpunit(log: &str) -> RawStatuses {
    let mut map = RawStatuses::new();
    let mut suite: Option<&str> = None;
    let mut name = String::new();
    for line in lines(log) {
        if let Some(s) = suite_line(line) {
            suite = Some(s);
            continue;
        }
        if let Some((word, test)) = test_line(line) {
            name.clear();
            name.push_str(suite.unwrap_or("None"));
            name.push_str(" > ");
            name.push_str(test);
            map.insert(name.as_str(), word);
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_matchers_agree_with_upstream_regexes() {
        let suite = Regex::new(SUITE).unwrap();
        let test = Regex::new(r"^\s*([✔✘↩])\s*(.*)$").unwrap();
        let pieces = [
            "Calculator",
            " (",
            "(",
            ")",
            " ",
            "\t",
            "\u{a0}",
            "\u{1f}",
            "✔",
            "✘",
            "↩",
            "∅",
            "a",
            "é",
            "_",
            "-",
            "Tests\\CalcTest",
            "Calc (T)",
            "\r",
        ];
        let (mut suites, mut tests) = (0, 0);
        for line in super::super::glued_lines(&pieces, 200_000) {
            let want = suite.captures(&line).map(|c| c.get(1).unwrap().as_str());
            suites += usize::from(want.is_some());
            assert_eq!(suite_line(&line), want, "{line:?}");
            let want = test.captures(&line).map(|c| {
                let word = match &c[1] {
                    "✔" => "PASSED",
                    "✘" => "FAILED",
                    _ => "SKIPPED",
                };
                (word, c.get(2).unwrap().as_str())
            });
            tests += usize::from(want.is_some());
            assert_eq!(test_line(&line), want, "{line:?}");
        }
        assert!(
            suites > 1_000 && tests > 1_000,
            "{suites} {tests} lines matched"
        );
    }

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
