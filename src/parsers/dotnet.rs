//! `dotnet test` logs with per-test result lines, i.e. `--logger "console;verbosity=normal"`
//! or `detailed` (the default `minimal` verbosity prints failed tests only).
//!
//! ```text
//!   Passed Calc.Tests.AddTests.Adds [2 ms]
//!   Failed Calc.Tests.AddTests.Broken [5 ms]
//!   Skipped Calc.Tests.AddTests.Later [1 ms]
//!   Passed Calc.Tests.AddTests.Theory(a: 1, b: "x y") [< 1 ms]
//! ```
//!
//! The name is the fully qualified test name as printed (xUnit/NUnit/MSTest display name,
//! including theory arguments). `Passed` → pass, `Failed` → fail, `Skipped` (and `NotRun`)
//! → skip. The run summary (`Failed!  - Failed: 1, …`) is not a result line. Only English
//! verbs are recognised; localised SDKs translate them.

use super::common::{Collector, TestStatus, lines};

/// `^\s*(Passed|Failed|Skipped|NotRun)\s+(\S.*?)\s+\[[^\]]*\]\s*$` by hand (it holds no `\d`,
/// so its Unicode `\s` is `char::is_whitespace` throughout): the status and the name, which
/// runs from the first non-whitespace character after the verb to the whitespace before the
/// first `[` that has whitespace before it, at least one character of name, and no `]` between
/// it and the line's last non-whitespace character, a `]`. A unit test holds this to the regex
/// on every fixture log and on adversarial lines.
fn result_line(line: &str) -> Option<(TestStatus, &str)> {
    let line = line.trim_start_matches(char::is_whitespace);
    let (status, rest) = if let Some(rest) = line.strip_prefix("Passed") {
        (TestStatus::Pass, rest)
    } else if let Some(rest) = line.strip_prefix("Failed") {
        (TestStatus::Fail, rest)
    } else if let Some(rest) = line.strip_prefix("Skipped") {
        (TestStatus::Skip, rest)
    } else {
        (TestStatus::Skip, line.strip_prefix("NotRun")?)
    };
    let name = rest.trim_start_matches(char::is_whitespace);
    if name.len() == rest.len() {
        return None;
    }
    let body = name
        .trim_end_matches(char::is_whitespace)
        .strip_suffix(']')?;
    // The bracket's `[` lies after the body's last `]`; the name holds its first character.
    let first = name.chars().next()?.len_utf8();
    let from = body.rfind(']').map_or(0, |i| i + 1).max(first);
    body.get(from..)?.match_indices('[').find_map(|(i, _)| {
        let open = from + i;
        let head = &name[..open];
        let end = head.trim_end_matches(char::is_whitespace).len().max(first);
        (end < open).then(|| (status, &name[..end]))
    })
}

pub(crate) fn parse(log: &str, out: &mut Collector) {
    for line in lines(log) {
        if let Some((status, name)) = result_line(line) {
            out.record(name, status);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand matcher gives the regex's captures on every line of every fixture log and on
    /// adversarial lines glued from the pattern's parts.
    #[test]
    fn the_hand_matcher_agrees_with_the_regex() {
        // A start (whitespace, a verb, whitespace), glued middle pieces and an ending.
        let starts = [
            "",
            "  Passed ",
            "Failed\t",
            "\u{a0}Skipped  ",
            "NotRun ",
            "Passed",
            " Passedx ",
            "passed ",
            "  Passed\u{2003}",
        ];
        let pieces = [
            " ", "\t", "\u{a0}", "\u{2003}", "[", "]", "[x]", " [", "] ", "a", "é", "Passed",
            "< 1 ms", "(a: 1)", "\x0b", "\r",
        ];
        let ends = [
            "",
            " [2 ms]",
            " [< 1 ms]  ",
            "[3 ms]",
            " [4 ms] x",
            " []",
            "\t[]]",
            " [a[b]",
            " [x] [y]",
            "]",
            " [",
        ];
        let lines = crate::parsers::tests::hand_matcher_lines(&starts, &pieces, &ends, 300_000);
        let re =
            regex::Regex::new(r"^\s*(Passed|Failed|Skipped|NotRun)\s+(\S.*?)\s+\[[^\]]*\]\s*$")
                .expect("the regex this replaced");
        let mut matched = 0;
        for line in &lines {
            let want = re.captures(line).map(|c| {
                let status = match &c[1] {
                    "Passed" => TestStatus::Pass,
                    "Failed" => TestStatus::Fail,
                    _ => TestStatus::Skip,
                };
                (status, c.get(2).expect("a name").as_str())
            });
            matched += usize::from(want.is_some());
            assert_eq!(result_line(line), want, "{line:?}");
        }
        assert!(matched > 50_000, "{matched} lines matched");
    }
}
