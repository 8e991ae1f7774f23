//! CTest logs (`ctest`, `ctest --output-on-failure`, `-V` or `-j`).
//!
//! ```text
//! 1/3 Test #1: test_add .........................   Passed    0.01 sec
//! 2/3 Test #2: test_bad .........................***Failed    0.01 sec
//! 3/3 Test #3: test_skip ........................***Skipped   0.00 sec
//! 4/4 Test #4: test_off .........................***Not Run (Disabled)   0.00 sec
//! ```
//!
//! The name is the CTest test name: the text between `Test #N: ` and the ` ...` dot leader
//! (CTest pads every name with a space and at least three dots).
//! `Passed` → pass; `Skipped` and `Not Run (Disabled)` → skip; everything else (`Failed`,
//! `Not Run`, `Timeout`, `Exception: …`, `Subprocess aborted`, …) → fail.

use std::sync::OnceLock;

use regex::Regex;

use super::common::{Collector, TestStatus, lines};

fn line_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^\s*\d+/\d+\s+Test\s+#\d+:\s+(.+?) \.{3,}\s*(?:\*\*\*)?([A-Za-z].*?)\s+[\d.]+\s+sec\s*$",
        )
        .unwrap_or_else(|e| panic!("invalid built-in regex: {e}"))
    })
}

/// What [`line_re`] makes of a line.
enum Match<'a> {
    /// The line matches, with this name and status.
    Yes(&'a str, &'a str),
    /// The line does not match.
    No,
    /// The hand matcher cannot tell (a non-ASCII line, whose `\s` and `\d` may be Unicode, or
    /// one whose name would have to start with whitespace): ask the regex.
    Ask,
}

/// `\s` on an ASCII byte.
fn space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The index past the run of bytes from `at` for which `f` holds.
fn run(b: &[u8], at: usize, f: impl Fn(u8) -> bool) -> usize {
    at + b[at..].iter().take_while(|&&c| f(c)).count()
}

/// Where the status of an ASCII line ends: the start of the whitespace before the line's
/// `[\d.]+\s+sec\s*$` ending.
fn status_end(b: &[u8]) -> Option<usize> {
    let end = b.len() - b.iter().rev().take_while(|&&c| space(c)).count();
    let sec = end.checked_sub(3).filter(|&s| &b[s..end] == b"sec")?;
    let num_end = sec - b[..sec].iter().rev().take_while(|&&c| space(c)).count();
    let num = num_end
        - b[..num_end]
            .iter()
            .rev()
            .take_while(|&&c| !space(c))
            .count();
    let ws = num - b[..num].iter().rev().take_while(|&&c| space(c)).count();
    let is_num = b[num..num_end]
        .iter()
        .all(|&c| c.is_ascii_digit() || c == b'.');
    (num_end < sec && num < num_end && is_num && ws < num).then_some(ws)
}

/// [`line_re`]'s captures, found by hand on an ASCII line: the prefix up to `#N:` and the
/// whitespace after it, then the name, which ends at the first ` ...` (past its first
/// character) after which the leader's dots, whitespace, an optional `***` and a letter
/// come before the status's end ([`status_end`]); the status runs from that letter. A unit
/// test holds this to the regex on every fixture log and on adversarial lines.
fn by_hand(line: &str) -> Match<'_> {
    if !line.is_ascii() {
        return Match::Ask;
    }
    let b = line.as_bytes();
    let at = run(b, 0, space);
    let digits = run(b, at, |c| c.is_ascii_digit());
    if digits == at || b.get(digits) != Some(&b'/') {
        return Match::No;
    }
    let at = run(b, digits + 1, |c| c.is_ascii_digit());
    if at == digits + 1 {
        return Match::No;
    }
    let test = run(b, at, space);
    if test == at || !b[test..].starts_with(b"Test") {
        return Match::No;
    }
    let hash = run(b, test + 4, space);
    if hash == test + 4 || b.get(hash) != Some(&b'#') {
        return Match::No;
    }
    let colon = run(b, hash + 1, |c| c.is_ascii_digit());
    if colon == hash + 1 || b.get(colon) != Some(&b':') {
        return Match::No;
    }
    let name = run(b, colon + 1, space);
    if name == colon + 1 {
        return Match::No;
    }
    let Some(end) = status_end(b) else {
        return Match::No;
    };
    let finder = memchr::memmem::Finder::new(b" ...");
    for e in finder.find_iter(&b[name..]).map(|i| name + i) {
        if e == name {
            continue;
        }
        let at = run(b, e + 4, |c| c == b'.');
        let at = run(b, at, space);
        let at = if b[at..].starts_with(b"***") {
            at + 3
        } else {
            at
        };
        if at < end && b[at].is_ascii_alphabetic() {
            return Match::Yes(&line[name..e], &line[at..end]);
        }
    }
    // The regex would go on to names that start with whitespace.
    Match::Ask
}

/// The name and status of a result line.
fn result_line(line: &str) -> Option<(&str, &str)> {
    match by_hand(line) {
        Match::Yes(name, status) => Some((name, status)),
        Match::No => None,
        Match::Ask => {
            let caps = line_re().captures(line)?;
            Some((caps.get(1)?.as_str(), caps.get(2)?.as_str()))
        }
    }
}

pub(crate) fn parse(log: &str, out: &mut Collector) {
    for line in lines(log) {
        if !line.contains(" sec") || !line.contains("Test") {
            continue;
        }
        let Some((name, status)) = result_line(line) else {
            continue;
        };
        let status = match status.trim() {
            "Passed" => TestStatus::Pass,
            "Skipped" | "Not Run (Disabled)" => TestStatus::Skip,
            _ => TestStatus::Fail,
        };
        out.record(name, status);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand matcher gives the regex's captures on every line of every fixture log and on
    /// adversarial lines glued from the pattern's parts.
    #[test]
    fn the_hand_matcher_agrees_with_the_regex() {
        // A prefix, glued middle pieces (name, leader, status) and an ending.
        let starts = [
            "",
            " 1/3 Test #1: ",
            "2/2 Test  #12:\t",
            "1/1 Test #1:",
            "1 /1 Test #1: ",
            " 1/3 Test #1:  ",
            "\u{a0}1/3 Test #1: ",
            "1/3 Test#1: ",
            "1/3 Test # 1: ",
            "1/3 Test #1: ...",
        ];
        let pieces = [
            " ",
            "  ",
            "\t",
            "\x0b",
            "\u{a0}",
            "a",
            "é",
            " ...",
            "...",
            ".",
            "***",
            "*",
            "Passed",
            "Not Run (Disabled)",
            "0.01",
            "1",
            "٣",
            " sec",
            "sec",
            "Test #3:",
            "x y",
        ];
        let ends = [
            "",
            " 0.01 sec",
            "   0.00 sec  ",
            "sec",
            " 1.0.1 sec",
            " a1 sec",
            "  1sec",
            " . sec\t",
            "0.1 sec",
            " ٣ sec",
            " 1 sec\u{a0}",
        ];
        let lines = crate::parsers::tests::hand_matcher_lines(&starts, &pieces, &ends, 300_000);
        let re = line_re();
        let (mut matched, mut by_hand_yes) = (0, 0);
        for line in &lines {
            let want = re.captures(line).map(|c| {
                (
                    c.get(1).expect("name").as_str(),
                    c.get(2).expect("status").as_str(),
                )
            });
            by_hand_yes += usize::from(matches!(by_hand(line), Match::Yes(..)));
            matched += usize::from(want.is_some());
            assert_eq!(result_line(line), want, "{line:?}");
        }
        assert!(matched > 4_000, "{matched} lines matched");
        assert!(by_hand_yes > 1_000, "{by_hand_yes} lines matched by hand");
    }
}
