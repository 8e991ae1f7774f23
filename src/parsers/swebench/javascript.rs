//! `swebench/harness/log_parsers/javascript.py` (5.0.2), the parsers the SWE-bench Multilingual
//! JavaScript repositories use: `parse_log_jest` (babel, docusaurus), `parse_log_jest_json`
//! and `parse_log_jest` again (immutable-js, picked by PR number), `parse_log_vitest`
//! (vuejs/core), `parse_log_tap` (three.js, axios), `parse_log_karma` (preact). Each keeps
//! upstream's quirks, and where upstream is arguably wrong bench still follows it:
//!
//! - jest: names are the leaf titles only (describe blocks dropped), so two tests with one
//!   title in different blocks collide (the last wins); a skipped test's `○ skipped title`
//!   keeps the word `skipped` in its name; a `✎ todo` line is not read.
//! - jest-json: only `[PASSED]` / `[FAILED]` lines of upstream's jq transform are read.
//! - vitest: the optional duration group is `\d+\s*m?s?`, so a name that ends in a number
//!   (`case 12`) loses it; the name is not stripped.
//! - tap: `ok N name` with the name as written after the number, its leading `- ` and any
//!   `# SKIP` / `# TODO` directive kept, and a skipped test counted as passed; indented
//!   subtest lines count like top-level ones (the line is stripped first).
//! - karma: a suite line is one whose indentation grows; a line indented less pops one suite
//!   and is itself dropped (upstream `continue`s), so a sibling suite's name is lost. On a pop
//!   with no suite left upstream raises IndexError; bench pops nothing.

use std::sync::OnceLock;

use regex::Regex;

use super::{
    RawStatuses, Sink, after_space, before_duration, by_stripped_line, filled, lazy, lines,
    py_strip,
};

/// `^\s*(✓|✕|○)\s(.+?)(?:\s\((\d+\s*m?s)\))?$` on a stripped line, by hand where the
/// line's duration is ASCII (the regex otherwise): the status word and the name (group 2).
fn jest_line(line: &str) -> Option<(&'static str, &str)> {
    static R: OnceLock<Regex> = OnceLock::new();
    let word = match line.chars().next()? {
        '✓' => "PASSED",
        '✕' => "FAILED",
        '○' => "SKIPPED",
        _ => return None,
    };
    // A stripped line starts with no whitespace, so `^\s*` is empty.
    let rest = after_space(&line['✓'.len_utf8()..])?;
    match before_duration(rest) {
        Some(name) => Some((word, name)),
        None => {
            let r = lazy(&R, r"^\s*(✓|✕|○)\s(.+?)(?:\s\((\d+\s*m?s)\))?$");
            r.captures(line)
                .map(|c| (word, c.get(2).map_or("", |m| m.as_str())))
        }
    }
}

pub fn jest(log: &str) -> RawStatuses {
    filled(log, jest_into)
}

pub(crate) fn jest_into(log: &str, map: &mut impl Sink) {
    by_stripped_line(log, map, |l| {
        jest_line(l).map(|(word, name)| (word, py_strip(name)))
    })
}

/// `^\[(PASSED|FAILED)\]\s(.+)$` on a stripped line: the status word and the name.
fn jest_json_line(line: &str) -> Option<(&'static str, &str)> {
    let (word, rest) = if let Some(rest) = line.strip_prefix("[PASSED]") {
        ("PASSED", rest)
    } else {
        ("FAILED", line.strip_prefix("[FAILED]")?)
    };
    Some((word, after_space(rest)?))
}

pub fn jest_json(log: &str) -> RawStatuses {
    filled(log, jest_json_into)
}

pub(crate) fn jest_json_into(log: &str, map: &mut impl Sink) {
    by_stripped_line(log, map, jest_json_line)
}

const VITEST: &str = r"^\s*(✓|×|↓)\s(.+?)(?:\s(\d+\s*m?s?|\[skipped\]))?$";

/// [`VITEST`] on a stripped line, by hand where the suffix is ASCII (the regex otherwise):
/// the status word and the name (group 2).
fn vitest_line(line: &str) -> Option<(&'static str, &str)> {
    static R: OnceLock<Regex> = OnceLock::new();
    let mut chars = line.chars();
    // A stripped line starts with no whitespace, so `^\s*` is empty.
    let word = match chars.next()? {
        '✓' => "PASSED",
        '×' => "FAILED",
        '↓' => "SKIPPED",
        _ => return None,
    };
    let rest = after_space(chars.as_str())?;
    match vitest_name(rest) {
        Some(name) => Some((word, name)),
        None => lazy(&R, VITEST)
            .captures(line)
            .map(|c| (word, c.get(2).map_or("", |m| m.as_str()))),
    }
}

/// The shortest name before `\s(\d+\s*m?s?|\[skipped\])$` in `rest` (all of `rest` when no
/// such suffix leaves a name of at least one character); `None` where a non-ASCII character
/// could be a Unicode digit or space of the suffix (the caller asks the regex).
fn vitest_name(rest: &str) -> Option<&str> {
    // The suffix ends the line, so its shape is read from the end, and it has one reading:
    // `s`, then `m`, then spaces, then the whole run of digits, then one space.
    let suffix_start = if let Some(head) = rest.strip_suffix("[skipped]") {
        head.char_indices()
            .next_back()
            .filter(|&(_, c)| c.is_whitespace())
            .map(|(i, _)| i)
    } else {
        let b = rest.as_bytes();
        let mut end = b.len();
        end -= usize::from(end > 0 && b[end - 1] == b's');
        end -= usize::from(end > 0 && b[end - 1] == b'm');
        end = skip_back(b, end, regex_space)?;
        let digits_end = end;
        end = skip_back(b, end, |b| b.is_ascii_digit())?;
        match end.checked_sub(1).map(|i| b[i]) {
            _ if end == digits_end => None,
            Some(c) if !c.is_ascii() => return None,
            Some(c) if regex_space(c) => Some(end - 1),
            _ => None,
        }
    };
    Some(match suffix_start {
        Some(i) if i > 0 => &rest[..i],
        _ => rest,
    })
}

/// The start of the run of bytes matching `class` that ends at `end`; `None` if a non-ASCII
/// byte precedes that run (it may be a Unicode character of the class).
fn skip_back(b: &[u8], mut end: usize, class: impl Fn(u8) -> bool) -> Option<usize> {
    while end > 0 && class(b[end - 1]) {
        end -= 1;
    }
    (end == 0 || b[end - 1].is_ascii()).then_some(end)
}

/// The regex crate's `\s` on an ASCII byte (`u8::is_ascii_whitespace` leaves out `\x0b`).
fn regex_space(b: u8) -> bool {
    b.is_ascii_whitespace() || b == b'\x0b'
}

pub fn vitest(log: &str) -> RawStatuses {
    filled(log, vitest_into)
}

pub(crate) fn vitest_into(log: &str, map: &mut impl Sink) {
    by_stripped_line(log, map, vitest_line)
}

const TAP: &str = r"^(ok|not ok) (\d+) (.+)$";

/// [`TAP`] on a stripped line, by hand unless a non-ASCII character follows the number's ASCII
/// digits (it may be a Unicode digit: the regex decides): the status word and the name.
fn tap_line(line: &str) -> Option<(&'static str, &str)> {
    static R: OnceLock<Regex> = OnceLock::new();
    let (word, rest) = if let Some(rest) = line.strip_prefix("ok ") {
        ("PASSED", rest)
    } else {
        ("FAILED", line.strip_prefix("not ok ")?)
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    match rest.as_bytes().get(digits) {
        Some(b' ') if digits > 0 => {
            Some((word, &rest[digits + 1..])).filter(|(_, n)| !n.is_empty())
        }
        Some(b) if !b.is_ascii() => lazy(&R, TAP)
            .captures(line)
            .map(|c| (word, c.get(3).map_or("", |m| m.as_str()))),
        _ => None,
    }
}

pub fn tap(log: &str) -> RawStatuses {
    filled(log, tap_into)
}

pub(crate) fn tap_into(log: &str, map: &mut impl Sink) {
    by_stripped_line(log, map, tap_line)
}

pub fn karma(log: &str) -> RawStatuses {
    static R: OnceLock<Regex> = OnceLock::new();
    let r = lazy(&R, r"^(\s*)?([✔✖])?\s(.*)$");
    let mut map = RawStatuses::new();
    let mut current_indent: i64 = -1;
    let mut suite: Vec<String> = Vec::new();
    let mut started = false;
    for line in lines(log) {
        if line.starts_with("SUMMARY:") {
            return map;
        }
        if line.contains("Starting browser") {
            started = true;
            continue;
        }
        if !started {
            continue;
        }
        let Some(c) = r.captures(line) else {
            continue;
        };
        let indent = c.get(1).map_or("", |m| m.as_str());
        let status = c.get(2).map(|m| m.as_str());
        let name = &c[3];
        if !indent.is_empty() && status.is_none() {
            let new_indent = indent.chars().count() as i64;
            if new_indent > current_indent {
                current_indent = new_indent;
                suite.push(name.to_string());
            } else if new_indent < current_indent {
                current_indent = new_indent;
                suite.pop();
                continue;
            }
        }
        if let Some(s) = status {
            let mut full: Vec<&str> = suite.iter().map(String::as_str).collect();
            full.push(name);
            map.insert(full.join(" > "), if s == "✔" { "PASSED" } else { "FAILED" });
        }
    }
    map
}

/// `parse_log_immutable_js`: the parser of an immutable-js instance, by the PR number after
/// the id's last `-` (upstream raises for any other instance).
pub fn immutable_js(instance_id: &str) -> Option<&'static str> {
    match instance_id.rsplit('-').next() {
        Some("2006") => Some("swebench-jest"),
        Some("2005") => Some("swebench-jest-json"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_map as m;

    #[test]
    fn jest_keeps_leaf_titles_and_the_skipped_word() {
        let log = "PASS src/a.test.js\n  sum\n    ✓ adds (2 ms)\n    ✕ fails (13 ms)\n    ○ skipped later\n    ✎ todo write it\n  other\n    ✓ adds\n";
        assert_eq!(
            jest(log),
            m(&[
                ("adds", "PASSED"),
                ("fails", "FAILED"),
                ("skipped later", "SKIPPED"),
            ])
        );
        assert_eq!(
            jest_json("[PASSED] a b > c\n  [FAILED] d\n[SKIPPED] e\n"),
            m(&[("a b > c", "PASSED"), ("d", "FAILED")])
        );
    }

    #[test]
    fn jest_hand_matchers_agree_with_upstream_regexes() {
        let jest_re = Regex::new(r"^\s*(✓|✕|○)\s(.+?)(?:\s\((\d+\s*m?s)\))?$").unwrap();
        let json_re = Regex::new(r"^\[(PASSED|FAILED)\]\s(.+)$").unwrap();
        let pieces = [
            "✓", "✕", "○", "✎", " ", "\t", "\u{a0}", "\u{1f}", "(", ")", "12", "٣", " ms", "s",
            "m", "ms)", " (3 ms)", "a", "é", "[PASSED]", "[FAILED]", "[PASSED", "\r",
        ];
        for raw in super::super::glued_lines(&pieces, 200_000) {
            let line = py_strip(&raw);
            let word = |c: &regex::Captures| match &c[1] {
                "✓" | "PASSED" => "PASSED",
                "✕" | "FAILED" => "FAILED",
                _ => "SKIPPED",
            };
            let want = jest_re
                .captures(line)
                .map(|c| (word(&c), c.get(2).unwrap().as_str()));
            assert_eq!(jest_line(line), want, "{raw:?}");
            let want = json_re
                .captures(line)
                .map(|c| (word(&c), c.get(2).unwrap().as_str()));
            assert_eq!(jest_json_line(line), want, "{raw:?}");
        }
    }

    #[test]
    fn vitest_hand_matcher_agrees_with_upstream_regex() {
        let re = Regex::new(VITEST).unwrap();
        let mut matched = 0;
        let pieces = [
            "✓",
            "×",
            "↓",
            "✕",
            " ",
            "\t",
            "\x0b",
            "\u{a0}",
            "\u{3000}",
            "\u{1f}",
            "1",
            "23",
            "٣",
            "m",
            "s",
            "ms",
            " 5ms",
            " 12 s",
            "[skipped]",
            " [skipped]",
            "[skipped",
            "a",
            "é",
            "\r",
            "src/a.test.ts > b",
            " (retry x2)",
            "x",
        ];
        for raw in super::super::glued_lines(&pieces, 200_000) {
            let line = py_strip(&raw);
            let want = re.captures(line).map(|c| {
                let word = match &c[1] {
                    "✓" => "PASSED",
                    "×" => "FAILED",
                    _ => "SKIPPED",
                };
                (word, c.get(2).unwrap().as_str())
            });
            matched += usize::from(want.is_some());
            assert_eq!(vitest_line(line), want, "{raw:?}");
        }
        assert!(matched > 1_000, "{matched} lines matched");
    }

    #[test]
    fn vitest_loses_a_trailing_number() {
        let log = " ✓ src/a.test.ts > s > adds 1ms\n × src/a.test.ts > s > case 12\n ↓ src/a.test.ts > s > later [skipped]\n";
        assert_eq!(
            vitest(log),
            m(&[
                ("src/a.test.ts > s > adds", "PASSED"),
                ("src/a.test.ts > s > case", "FAILED"),
                ("src/a.test.ts > s > later", "SKIPPED"),
            ])
        );
    }

    #[test]
    fn tap_hand_matcher_agrees_with_upstream_regex() {
        let re = Regex::new(TAP).unwrap();
        let mut matched = 0;
        let pieces = [
            "ok ",
            "not ok ",
            "ok",
            "not",
            " ",
            "\t",
            "\u{a0}",
            "1",
            "23",
            "٣",
            "- adds",
            "#",
            " # SKIP",
            "a",
            "é",
            "\r",
            "ok 1 ",
            "not ok 23 ",
        ];
        for raw in super::super::glued_lines(&pieces, 200_000) {
            let line = py_strip(&raw);
            let want = re.captures(line).map(|c| {
                let word = if &c[1] == "ok" { "PASSED" } else { "FAILED" };
                (word, c.get(3).unwrap().as_str())
            });
            matched += usize::from(want.is_some());
            assert_eq!(tap_line(line), want, "{raw:?}");
        }
        assert!(matched > 1_000, "{matched} lines matched");
    }

    #[test]
    fn tap_keeps_the_dash_and_passes_skips() {
        let log = "ok 1 - adds\nnot ok 2 - broken\nok 3 - later # SKIP\n    ok 1 - sub\n";
        assert_eq!(
            tap(log),
            m(&[
                ("- adds", "PASSED"),
                ("- broken", "FAILED"),
                ("- later # SKIP", "PASSED"),
                ("- sub", "PASSED"),
            ])
        );
    }

    #[test]
    fn karma_follows_indentation_from_the_browser_start() {
        // The regex's optional indent group gives one space back to the `\s` after it, so a
        // suite line's indent counts one less than its spaces; ` SUMMARY:` (indented) ends
        // nothing.
        let log = "  ✔ before start\nINFO: Starting browser ChromeHeadless\n  suite a\n    ✔ one\n    ✖ two\n   inner\n      ✔ three\n SUMMARY:\n  ✔ after\nSUMMARY:\n  ✔ never\n";
        assert_eq!(
            karma(log),
            m(&[
                ("suite a > one", "PASSED"),
                ("suite a > two", "FAILED"),
                ("suite a > inner > three", "PASSED"),
                ("suite a > inner > after", "PASSED"),
            ])
        );
        // A line indented less pops one suite and is itself dropped: `b` is lost.
        assert_eq!(
            karma("Starting browser X\n   a\n    ✔ x\n  b\n    ✔ y\n"),
            m(&[("a > x", "PASSED"), ("y", "PASSED")])
        );
    }

    #[test]
    fn immutable_js_picks_by_pr_number() {
        assert_eq!(
            immutable_js("immutable-js__immutable-js-2006"),
            Some("swebench-jest")
        );
        assert_eq!(
            immutable_js("immutable-js__immutable-js-2005"),
            Some("swebench-jest-json")
        );
        assert_eq!(immutable_js("immutable-js__immutable-js-1"), None);
    }
}
