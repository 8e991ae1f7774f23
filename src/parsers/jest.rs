//! Jest `--verbose` logs.
//!
//! ```text
//! PASS src/sum.test.js
//!   sum
//!     ✓ adds 1 + 2 (2 ms)
//!     ✕ fails (3 ms)
//!     ○ skipped later
//!     ✎ todo write more
//! ```
//!
//! A result line is a mark followed by the test title and an optional `(N ms)` duration,
//! which is removed. ✓ (or `√`, Windows) → pass, ✕ (or `×`) → fail, `○` → skip, `✎` (todo) →
//! skip.
//!
//! # Naming
//!
//! The name is the **leaf title** only, as in SWE-bench: the `describe` blocks and the file are
//! not part of it, so equal titles in different blocks or files collide (the last one wins).
//! Jest prints skipped and todo tests as `○ skipped <title>` / `✎ todo <title>`; bench removes
//! that `skipped ` / `todo ` prefix so a test keeps its name whether it ran or not (SWE-bench
//! keeps the prefix).

use std::sync::OnceLock;

use regex::Regex;

use super::common::{Collector, TestStatus, lines};
use super::swebench::before_duration_by;

fn line_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^\s*(✓|√|✕|×|○|✎)\s(.+?)(?:\s\(\d+(?:\.\d+)?\s*m?s\))?\s*$")
            .unwrap_or_else(|e| panic!("invalid built-in regex: {e}"))
    })
}

/// What [`line_re`] makes of a line: its mark and title.
enum Match<'a> {
    /// The line matches, with this mark and title.
    Yes(char, &'a str),
    /// The line does not match.
    No,
    /// The hand matcher cannot tell (a non-ASCII duration, whose `\d` or `\s` may be Unicode):
    /// ask the regex.
    Ask,
}

/// [`line_re`]'s captures, found by hand: leading whitespace, a mark, one whitespace
/// character, then the title, which is the shortest text (at least one character) after which
/// comes either only whitespace or ` (N ms)` and only whitespace. A unit test holds this to
/// the regex on every fixture log and on adversarial lines.
fn by_hand(line: &str) -> Match<'_> {
    let line = line.trim_start_matches(char::is_whitespace);
    let mut chars = line.chars();
    let Some(mark) = chars.next().filter(|c| "✓√✕×○✎".contains(*c)) else {
        return Match::No;
    };
    if !chars.next().is_some_and(char::is_whitespace) {
        return Match::No;
    }
    let rest = chars.as_str();
    let Some(first) = rest.chars().next() else {
        return Match::No;
    };
    let text = rest.trim_end_matches(char::is_whitespace);
    // Without the duration: the title runs to the trailing whitespace (at least one character).
    let whole = &rest[..text.len().max(first.len_utf8())];
    if !text.ends_with(')') {
        return Match::Yes(mark, whole);
    }
    // The duration's `(` is the last one (its digits and unit hold none), as SWE-bench's jest
    // pattern finds it; only the duration's own pattern differs.
    match before_duration_by(text, is_duration) {
        None => Match::Ask,
        Some(title) if title.len() < text.len() => Match::Yes(mark, title),
        Some(_) => Match::Yes(mark, whole),
    }
}

/// `\d+(?:\.\d+)?\s*m?s\)` matching all of an ASCII `s`.
fn is_duration(s: &str) -> bool {
    let Some(s) = s.strip_suffix(')') else {
        return false;
    };
    let int = s.bytes().take_while(u8::is_ascii_digit).count();
    if int == 0 {
        return false;
    }
    let mut s = &s[int..];
    if let Some(frac) = s.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        s = &frac[digits..];
    }
    let s = s.trim_start_matches(char::is_whitespace);
    s == "s" || s == "ms"
}

/// The mark and title of a result line.
fn result_line(line: &str) -> Option<(char, &str)> {
    match by_hand(line) {
        Match::Yes(mark, title) => Some((mark, title)),
        Match::No => None,
        Match::Ask => {
            let caps = line_re().captures(line)?;
            let mark = caps.get(1)?.as_str().chars().next()?;
            Some((mark, caps.get(2)?.as_str()))
        }
    }
}

pub(crate) fn parse(log: &str, out: &mut Collector) {
    for line in lines(log) {
        // Cheap pre-filter: every mark is a non-ASCII character.
        if line.is_ascii() {
            continue;
        }
        let Some((mark, title)) = result_line(line) else {
            continue;
        };
        let (status, name) = match mark {
            '✓' | '√' => (TestStatus::Pass, title),
            '✕' | '×' => (TestStatus::Fail, title),
            '○' => (
                TestStatus::Skip,
                title.strip_prefix("skipped ").unwrap_or(title),
            ),
            _ => (
                TestStatus::Skip,
                title.strip_prefix("todo ").unwrap_or(title),
            ),
        };
        out.record(name.trim(), status);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand matcher gives the regex's captures on every line of every fixture log and on
    /// adversarial lines glued from the pattern's parts.
    #[test]
    fn the_hand_matcher_agrees_with_the_regex() {
        // A start (whitespace, a mark, whitespace), glued middle pieces and an ending.
        let starts = [
            "",
            "  ✓ ",
            "✕ ",
            "\t○\u{a0}",
            "√\t",
            "    × ",
            "✎ ",
            "✓",
            " ✓x",
            "\u{2003}✓ ",
            "a✓ ",
        ];
        let pieces = [
            "✓", " ", "\t", "\u{a0}", "\u{2003}", "\x0b", "\r", "(", ")", "(12 ms)", " (1.5 s)",
            "(3ms)", "1", "٣", ".", "m", "s", "ms", "a", "é", "skipped ", "todo ", " (", "2 ",
            "\u{1c}",
        ];
        let ends = [
            "",
            " (2 ms)",
            " (1.25 s)  ",
            " (3ms)",
            "(4 ms)",
            " (5 ms) x",
            " (1. ms)",
            " (٣ ms)",
            "\u{a0}(6 ms)\t",
            " ",
            " (7\tms)",
            " (8 sms)",
            ")",
        ];
        let lines = crate::parsers::tests::hand_matcher_lines(&starts, &pieces, &ends, 200_000);
        let re = line_re();
        let (mut matched, mut asked) = (0, 0);
        for line in &lines {
            let want = re.captures(line).map(|c| {
                let mark = c[1].chars().next().expect("a mark");
                (mark, c.get(2).expect("a title").as_str())
            });
            asked += usize::from(matches!(by_hand(line), Match::Ask));
            matched += usize::from(want.is_some());
            assert_eq!(result_line(line), want, "{line:?}");
        }
        assert!(matched > 50_000, "{matched} lines matched");
        assert!(asked < lines.len() / 10, "{asked} lines asked the regex");
    }
}
