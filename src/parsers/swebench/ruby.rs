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

use super::{RawStatuses, Sink, by_stripped_line, filled, lazy, lines, py_strip};

fn by_line(log: &str, map: &mut impl Sink, r: &Regex, word: fn(&str) -> Option<&'static str>) {
    for line in lines(log) {
        if let Some(c) = r.captures(py_strip(line))
            && let Some(w) = word(&c[2])
        {
            map.put(&c[1], w);
        }
    }
}

/// Each stripped line through `line`, a hand matcher of one of upstream's patterns giving the
/// name and the status word.
fn by_hand<'a>(
    log: &'a str,
    map: &mut impl Sink,
    line: impl Fn(&'a str) -> Option<(&'a str, &'static str)>,
) {
    by_stripped_line(log, map, |l| line(l).map(|(name, word)| (word, name)))
}

/// Upstream's pattern, which [`minitest_line`] matches by hand.
#[cfg(test)]
const MINITEST: &str = r"^(.+)\. .*=.*(\.|F|E).*$";

/// `^(.+)\. .*=.*(\.|F|E).*$`: the name and the status of the line's last `.`, `F` or `E`.
/// The name is the line up to its last `. ` that leaves a `=` followed by a mark (all ASCII
/// literals, so bytes).
fn minitest_line(line: &str) -> Option<(&str, &'static str)> {
    let b = line.as_bytes();
    let mark = memchr::memrchr3(b'.', b'F', b'E', b)?;
    let eq = memchr::memrchr(b'=', &b[..mark])?;
    let dot = line[..eq].rfind(". ").filter(|&i| i > 0)?;
    let word = if b[mark] == b'.' { "PASSED" } else { "FAILED" };
    Some((&line[..dot], word))
}

pub fn minitest(log: &str) -> RawStatuses {
    filled(log, minitest_into)
}

pub(crate) fn minitest_into(log: &str, map: &mut impl Sink) {
    by_hand(log, map, minitest_line)
}

pub fn cucumber(log: &str) -> RawStatuses {
    filled(log, cucumber_into)
}

pub(crate) fn cucumber_into(log: &str, map: &mut impl Sink) {
    static R: OnceLock<Regex> = OnceLock::new();
    let r = lazy(&R, r"^(.*) \.+(\.|F)");
    by_line(log, map, r, |o| match o {
        "." => Some("PASSED"),
        _ => Some("FAILED"),
    })
}

const RUBY_UNIT: &str = r"^\s*(?:test: )?(.+):\s+(\.|E\b|F\b|O\b)";

/// [`RUBY_UNIT`] on a stripped line, by hand unless a non-ASCII character follows an `E`, `F`
/// or `O` mark (the regex decides that Unicode `\b`): the name and the status word.
fn ruby_unit_line(line: &str) -> Option<(&str, &'static str)> {
    static R: OnceLock<Regex> = OnceLock::new();
    // The name is greedy: it ends at the last `:` followed by whitespace and a mark.
    let mut end = line.len();
    let (colon, word) = loop {
        let colon = memchr::memrchr(b':', &line.as_bytes()[..end])?;
        end = colon;
        let rest = &line[colon + 1..];
        let after = rest.trim_start_matches(char::is_whitespace);
        if after.len() == rest.len() {
            continue;
        }
        let word = match after.as_bytes() {
            [b'.', ..] => "PASSED",
            [m @ (b'E' | b'F' | b'O'), next @ ..] => {
                match next.first() {
                    Some(&n) if !n.is_ascii() => {
                        return unit_by_regex(lazy(&R, RUBY_UNIT), line);
                    }
                    Some(&n) if n.is_ascii_alphanumeric() || n == b'_' => continue,
                    _ => {}
                }
                if *m == b'O' { "SKIPPED" } else { "FAILED" }
            }
            _ => continue,
        };
        break (colon, word);
    };
    // `(?:test: )?` is taken when a name of at least one character is left after it.
    let name = match line.strip_prefix("test: ") {
        Some(_) if colon > "test: ".len() => &line["test: ".len()..colon],
        _ if colon > 0 => &line[..colon],
        _ => return None,
    };
    Some((name, word))
}

fn unit_by_regex<'a>(r: &Regex, line: &'a str) -> Option<(&'a str, &'static str)> {
    let c = r.captures(line)?;
    let word = match &c[2] {
        "." => "PASSED",
        "O" => "SKIPPED",
        _ => "FAILED",
    };
    Some((c.get(1).map_or("", |m| m.as_str()), word))
}

pub fn ruby_unit(log: &str) -> RawStatuses {
    filled(log, ruby_unit_into)
}

pub(crate) fn ruby_unit_into(log: &str, map: &mut impl Sink) {
    by_hand(log, map, ruby_unit_line)
}

/// `^(.+) - (passed|failed)`: the name up to the line's last ` - passed` or ` - failed`
/// (greedy), which leaves at least one character.
fn rspec_line(line: &str) -> Option<(&str, &'static str)> {
    let passed = line.rfind(" - passed");
    let failed = line.rfind(" - failed");
    let (at, word) = match (passed, failed) {
        (Some(p), Some(f)) if f > p => (f, "FAILED"),
        (Some(p), _) => (p, "PASSED"),
        (None, Some(f)) => (f, "FAILED"),
        (None, None) => return None,
    };
    (at > 0).then(|| (&line[..at], word))
}

pub fn rspec_transformed_json(log: &str) -> RawStatuses {
    filled(log, rspec_transformed_json_into)
}

pub(crate) fn rspec_transformed_json_into(log: &str, map: &mut impl Sink) {
    by_hand(log, map, rspec_line)
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

    /// `line` against `pattern` on glued `pieces`, group 1 the name and group 2 the mark read
    /// by `word`.
    fn agrees(
        pattern: &str,
        pieces: &[&str],
        word: fn(&str) -> &'static str,
        line: fn(&str) -> Option<(&str, &'static str)>,
    ) {
        let r = Regex::new(pattern).unwrap();
        let mut matched = 0;
        for raw in super::super::glued_lines(pieces, 150_000) {
            let l = py_strip(&raw);
            let want = r
                .captures(l)
                .map(|c| (c.get(1).unwrap().as_str(), word(&c[2])));
            matched += usize::from(want.is_some());
            assert_eq!(line(l), want, "{raw:?}");
        }
        assert!(matched > 1_000, "{pattern}: {matched} lines matched");
    }

    #[test]
    fn hand_matchers_agree_with_upstream_regexes() {
        let mark = |m: &str| match m {
            "." | "passed" => "PASSED",
            "O" => "SKIPPED",
            _ => "FAILED",
        };
        agrees(
            MINITEST,
            &[
                "TestA",
                ". ",
                ".",
                "=",
                "F",
                "E",
                " ",
                "a",
                "é",
                " = 0.01 s = ",
                "\r",
                "\u{a0}",
                "#test_x",
            ],
            mark,
            minitest_line,
        );
        agrees(
            RUBY_UNIT,
            &[
                "test: ", "test:", ":", " ", "\t", "\u{a0}", "\u{85}", ".", "E", "F", "O", "é",
                "x", "_", "9", "a(T)", "-", "\r",
            ],
            mark,
            ruby_unit_line,
        );
        agrees(
            r"^(.+) - (passed|failed)",
            &[
                " - ",
                "passed",
                "failed",
                "pending",
                "-",
                " ",
                "a",
                "é",
                " - passed",
                "\u{a0}",
            ],
            mark,
            rspec_line,
        );
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
