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

use super::{RawStatuses, Sink, by_stripped_line, filled, lines, py_strip};

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
    for line in lines(log) {
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

/// `^\s*\[junit\]\s+\[(PASS|FAIL|ERR)\]\s+(.*)$` on a stripped line: the status word and
/// the name.
fn ant_line(line: &str) -> Option<(&'static str, &str)> {
    let rest = after_spaces(line.strip_prefix("[junit]")?)?;
    let (word, rest) = if let Some(rest) = rest.strip_prefix("[PASS]") {
        ("PASSED", rest)
    } else if let Some(rest) = rest.strip_prefix("[FAIL]") {
        ("FAILED", rest)
    } else {
        ("FAILED", rest.strip_prefix("[ERR]")?)
    };
    Some((word, after_spaces(rest)?))
}

/// `s` after its leading run of whitespace, when that run is not empty.
fn after_spaces(s: &str) -> Option<&str> {
    let rest = s.trim_start_matches(char::is_whitespace);
    (rest.len() < s.len()).then_some(rest)
}

pub fn ant(log: &str) -> RawStatuses {
    filled(log, ant_into)
}

pub(crate) fn ant_into(log: &str, map: &mut impl Sink) {
    by_stripped_line(log, map, ant_line)
}

/// `^([^>].+)\s+(PASSED|FAILED)$` on a stripped line: the name and the status word. The name
/// is greedy: it keeps all but the last whitespace character before the word.
fn gradle_full(line: &str) -> Option<(&str, &'static str)> {
    let (head, status) = if let Some(head) = line.strip_suffix("PASSED") {
        (head, "PASSED")
    } else {
        (line.strip_suffix("FAILED")?, "FAILED")
    };
    let (space, _) = head
        .char_indices()
        .next_back()
        .filter(|&(_, c)| c.is_whitespace())?;
    let name = &head[..space];
    let mut chars = name.chars();
    let first = chars.next()?;
    (first != '>' && chars.next().is_some()).then_some((name, word(status)))
}

/// `^([^>]\S*\s+>\s+\S+)$` on a stripped line (which starts with no whitespace): a word not
/// starting with `>`, whitespace, `>`, whitespace, a word.
fn gradle_name(line: &str) -> bool {
    let Some(first_end) = line.find(char::is_whitespace) else {
        return false;
    };
    let rest = line[first_end..].trim_start_matches(char::is_whitespace);
    let Some(rest) = rest.strip_prefix('>') else {
        return false;
    };
    let last = rest.trim_start_matches(char::is_whitespace);
    first_end > 0
        && !line.starts_with('>')
        && last.len() < rest.len()
        && !last.is_empty()
        && !last.contains(char::is_whitespace)
}

pub fn gradle_custom(log: &str) -> RawStatuses {
    let mut map = RawStatuses::new();
    let mut pending: Option<&str> = None;
    for line in lines(log) {
        let line = py_strip(line);
        if let Some((name, word)) = gradle_full(line) {
            map.insert(name, word);
            pending = None;
            continue;
        }
        if gradle_name(line) {
            pending = Some(line);
            continue;
        }
        if let Some(test) = pending
            && (line == "PASSED" || line == "FAILED")
        {
            map.insert(test, word(line));
            pending = None;
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    use regex::Regex;

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
    fn ant_and_gradle_hand_matchers_agree_with_upstream_regexes() {
        let ant_re = Regex::new(r"^\s*\[junit\]\s+\[(PASS|FAIL|ERR)\]\s+(.*)$").unwrap();
        let full = Regex::new(r"^([^>].+)\s+(PASSED|FAILED)$").unwrap();
        let name = Regex::new(r"^([^>]\S*\s+>\s+\S+)$").unwrap();
        let pieces = [
            "[junit]",
            "[PASS]",
            "[FAIL]",
            "[ERR]",
            "[junit",
            " ",
            "\t",
            "\u{a0}",
            "\u{1f}",
            ">",
            " > ",
            "T",
            "a",
            "é",
            "PASSED",
            "FAILED",
            " PASSED",
            "SKIPPED",
            "\r",
            "[junit] [PASS] ",
            "[junit]\t[ERR]\u{a0}",
            "[junit] [FAIL]",
        ];
        let (mut ant_n, mut full_n, mut name_n) = (0, 0, 0);
        for raw in super::super::glued_lines(&pieces, 200_000) {
            let line = py_strip(&raw);
            let want = ant_re.captures(line).map(|c| {
                let w = if &c[1] == "PASS" { "PASSED" } else { "FAILED" };
                (w, c.get(2).unwrap().as_str())
            });
            ant_n += usize::from(want.is_some());
            assert_eq!(ant_line(line), want, "{raw:?}");
            let want = full
                .captures(line)
                .map(|c| (c.get(1).unwrap().as_str(), word(&c[2])));
            full_n += usize::from(want.is_some());
            assert_eq!(gradle_full(line), want, "{raw:?}");
            name_n += usize::from(name.is_match(line));
            assert_eq!(gradle_name(line), name.is_match(line), "{raw:?}");
        }
        assert!(
            ant_n > 1_000 && full_n > 1_000 && name_n > 1_000,
            "{ant_n} {full_n} {name_n} lines matched"
        );
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
