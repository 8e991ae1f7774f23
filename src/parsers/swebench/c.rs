//! `swebench/harness/log_parsers/c.py` (5.0.2): `parse_log_redis` (redis, valkey),
//! `parse_log_jq`, `parse_log_doctest` (nlohmann/json), `parse_log_micropython_test`,
//! `parse_log_googletest` (fmt). Upstream's quirks kept:
//!
//! - redis: `[ok|err|skip|ignore]: name (N ms)`; a failing name loses a trailing
//!   ` in <file>`; `[exception]` and `[timeout]` lines are not read (a crashed test is
//!   missing, which grading counts as failed anyway).
//! - jq: automake's `PASS: name` / `FAIL: name`; `SKIP:`, `XFAIL:`, `ERROR:` are not read.
//! - doctest: only the first `<doctest ...>...</doctest>` document of the log (the XML
//!   reporter, `-r=xml`), each `<SubCase>` (at any depth) under a `<TestCase>` as
//!   `test case > subcase` (a nested subcase's name drops its parents); a test case without
//!   subcases is not recorded at all, and a subcase fails when any `<Expression>` below it
//!   (nested subcases' included) has `success` other than `true`. Malformed XML: upstream
//!   raises; bench records nothing.
//! - micropython: `pass|FAIL|skip name` from `run-tests.py`.
//! - googletest: the last `[ OK ]` / `[ FAILED ]` tag of a line followed by `name (...)`, so
//!   a parameterised failure's name keeps `, where GetParam() = ...`; `[ SKIPPED ]` is not
//!   read.

use std::sync::OnceLock;

use quick_xml::events::{BytesStart, Event};
use quick_xml::reader::Reader;
use regex::Regex;

use super::{
    RawStatuses, Sink, after_space, before_duration, by_stripped_line, filled, lazy, lines,
    py_strip,
};

const REDIS: &str = r"^\[(ok|err|skip|ignore)\]:\s(.+?)(?:\s\((\d+\s*m?s)\))?$";

/// [`REDIS`] on a stripped line, by hand where the duration is ASCII (the regex otherwise):
/// the status (group 1) and the name (group 2).
fn redis_line(line: &str) -> Option<(&str, &str)> {
    static R: OnceLock<Regex> = OnceLock::new();
    // No status holds a `]`, so the first `]:` ends it.
    let (status, rest) = line.strip_prefix('[')?.split_once("]:")?;
    if !matches!(status, "ok" | "err" | "skip" | "ignore") {
        return None;
    }
    match before_duration(after_space(rest)?) {
        Some(name) => Some((status, name)),
        None => lazy(&R, REDIS)
            .captures(line)
            .map(|c| (status, c.get(2).map_or("", |m| m.as_str()))),
    }
}

/// `name` with `\s+in\s+\S+$` removed (a failing test's ` in <file>`): the line's last word,
/// when the word before it is `in`, goes with the whitespace around that `in`.
fn without_file(name: &str) -> &str {
    let not_space = |c: char| !c.is_whitespace();
    let before_last = name.trim_end_matches(not_space);
    let before_space = before_last.trim_end_matches(char::is_whitespace);
    let head = match before_space.strip_suffix("in") {
        Some(head) if before_last.len() < name.len() && before_space.len() < before_last.len() => {
            head
        }
        _ => return name,
    };
    let kept = head.trim_end_matches(char::is_whitespace);
    if kept.len() < head.len() { kept } else { name }
}

pub fn redis(log: &str) -> RawStatuses {
    filled(log, redis_into)
}

pub(crate) fn redis_into(log: &str, map: &mut impl Sink) {
    for line in lines(log) {
        match redis_line(py_strip(line)) {
            Some(("ok", name)) => map.put(name, "PASSED"),
            Some(("err", name)) => map.put(without_file(name), "FAILED"),
            Some((_, name)) => map.put(name, "SKIPPED"),
            None => {}
        }
    }
}

/// `^\s*(PASS|FAIL):\s(.+)$` on a stripped line: the status word and the name.
fn jq_line(line: &str) -> Option<(&'static str, &str)> {
    let (word, rest) = if let Some(rest) = line.strip_prefix("PASS:") {
        ("PASSED", rest)
    } else {
        ("FAILED", line.strip_prefix("FAIL:")?)
    };
    Some((word, after_space(rest)?))
}

pub fn jq(log: &str) -> RawStatuses {
    filled(log, jq_into)
}

pub(crate) fn jq_into(log: &str, map: &mut impl Sink) {
    by_stripped_line(log, map, jq_line)
}

/// `^(pass|FAIL|skip)\s+(.+)$` on a stripped line: the status word and the name.
fn micropython_line(line: &str) -> Option<(&'static str, &str)> {
    let (word, rest) = if let Some(rest) = line.strip_prefix("pass") {
        ("PASSED", rest)
    } else if let Some(rest) = line.strip_prefix("FAIL") {
        ("FAILED", rest)
    } else {
        ("SKIPPED", line.strip_prefix("skip")?)
    };
    // A stripped line does not end in whitespace, so `.+` gets all after the run of it.
    let name = rest.trim_start_matches(char::is_whitespace);
    (name.len() < rest.len() && !name.is_empty()).then_some((word, name))
}

pub fn micropython_test(log: &str) -> RawStatuses {
    filled(log, micropython_test_into)
}

pub(crate) fn micropython_test_into(log: &str, map: &mut impl Sink) {
    by_stripped_line(log, map, micropython_line)
}

/// Upstream's pattern, which [`googletest_line`] matches by hand.
#[cfg(test)]
const GOOGLETEST: &str = r"^.*\[\s*(OK|FAILED)\s*\]\s(.*)\s\(.*\)$";

/// `^.*\[\s*(OK|FAILED)\s*\]\s(.*)\s\(.*\)$` on a stripped line: the status word and the name (group 2). The line ends
/// in `)`; the name ends at the last whitespace-and-`(` before that `)` (greedy) and starts
/// after the last `[ OK ]` or `[ FAILED ]` tag and one whitespace character that end before
/// it (`^.*` is greedy too).
fn googletest_line(line: &str) -> Option<(&'static str, &str)> {
    let body = line.strip_suffix(')')?;
    let name_end = body.rmatch_indices('(').find_map(|(open, _)| {
        body[..open]
            .char_indices()
            .next_back()
            .filter(|&(_, c)| c.is_whitespace())
            .map(|(i, _)| i)
    })?;
    let head = &line[..name_end];
    let mut end = head.len();
    while let Some(open) = memchr::memrchr(b'[', &head.as_bytes()[..end]) {
        end = open;
        let tag = head[open + 1..].trim_start_matches(char::is_whitespace);
        let (word, rest) = if let Some(rest) = tag.strip_prefix("OK") {
            ("PASSED", rest)
        } else if let Some(rest) = tag.strip_prefix("FAILED") {
            ("FAILED", rest)
        } else {
            continue;
        };
        let Some(rest) = rest
            .trim_start_matches(char::is_whitespace)
            .strip_prefix(']')
        else {
            continue;
        };
        let mut chars = rest.chars();
        if chars.next().is_some_and(char::is_whitespace) {
            return Some((word, chars.as_str()));
        }
    }
    None
}

pub fn googletest(log: &str) -> RawStatuses {
    filled(log, googletest_into)
}

pub(crate) fn googletest_into(log: &str, map: &mut impl Sink) {
    by_stripped_line(log, map, googletest_line)
}

/// An element of the doctest document: its name, its `name` / `success` attribute, children.
struct Node {
    tag: String,
    name: Option<String>,
    success: Option<String>,
    children: Vec<Node>,
}

fn attr(e: &BytesStart, key: &str) -> Result<Option<String>, ()> {
    for a in e.attributes() {
        let a = a.map_err(|_| ())?;
        if a.key.as_ref() == key {
            return a
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .map(|v| Some(v.into_owned()))
                .map_err(|_| ());
        }
    }
    Ok(None)
}

fn node(e: &BytesStart) -> Result<Node, ()> {
    Ok(Node {
        tag: e.name().as_ref().to_string(),
        name: attr(e, "name")?,
        success: attr(e, "success")?,
        children: Vec::new(),
    })
}

/// The XML text as a tree (`ET.fromstring`); `Err` when it is not well formed.
fn tree(xml: &str) -> Result<Node, ()> {
    let mut reader = Reader::from_str(xml);
    reader.config_mut().check_end_names = true;
    let mut stack: Vec<Node> = Vec::new();
    let mut root = None;
    loop {
        match reader.read_event().map_err(|_| ())? {
            Event::Start(e) => stack.push(node(&e)?),
            Event::Empty(e) => {
                let n = node(&e)?;
                match stack.last_mut() {
                    Some(p) => p.children.push(n),
                    None if root.is_none() => root = Some(n),
                    None => return Err(()),
                }
            }
            Event::End(_) => {
                let n = stack.pop().ok_or(())?;
                match stack.last_mut() {
                    Some(p) => p.children.push(n),
                    None if root.is_none() => root = Some(n),
                    None => return Err(()),
                }
            }
            Event::Text(t)
                if stack.is_empty()
                    && !t
                        .as_ref()
                        .chars()
                        .all(|c| matches!(c, ' ' | '\t' | '\r' | '\n')) =>
            {
                return Err(());
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !stack.is_empty() {
        return Err(());
    }
    root.ok_or(())
}

/// `findall(".//TAG")`: descendants named `tag`, in document order.
fn descendants<'a>(n: &'a Node, tag: &str, out: &mut Vec<&'a Node>) {
    for c in &n.children {
        if c.tag == tag {
            out.push(c);
        }
        descendants(c, tag, out);
    }
}

fn py_name(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("None")
}

pub fn doctest(log: &str) -> RawStatuses {
    let mut map = RawStatuses::new();
    let Some(start) = log.find("<doctest") else {
        return map;
    };
    let Some(end) = log[start..].find("</doctest>") else {
        return map;
    };
    let Ok(root) = tree(&log[start..start + end + "</doctest>".len()]) else {
        return map;
    };
    let mut cases = Vec::new();
    descendants(&root, "TestCase", &mut cases);
    for case in cases {
        let mut subs = Vec::new();
        descendants(case, "SubCase", &mut subs);
        for sub in subs {
            let mut exprs = Vec::new();
            descendants(sub, "Expression", &mut exprs);
            let passed = exprs.iter().all(|e| e.success.as_deref() == Some("true"));
            map.insert(
                format!("{} > {}", py_name(&case.name), py_name(&sub.name)),
                if passed { "PASSED" } else { "FAILED" },
            );
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_map as m;

    #[test]
    fn redis_strips_the_file_of_failures() {
        let log = "[ok]: SET works (2 ms)\n[err]: GET fails in tests/unit/basic.tcl\n[skip]: later\n[ignore]: not here\n[exception]: boom\n";
        assert_eq!(
            redis(log),
            m(&[
                ("SET works", "PASSED"),
                ("GET fails", "FAILED"),
                ("later", "SKIPPED"),
                ("not here", "SKIPPED"),
            ])
        );
    }

    #[test]
    fn redis_hand_matcher_agrees_with_upstream_regexes() {
        let r = Regex::new(REDIS).unwrap();
        let file = Regex::new(r"\s+in\s+\S+$").unwrap();
        let pieces = [
            "[ok]:",
            "[err]:",
            "[skip]:",
            "[ignore]:",
            "[exception]:",
            "[ok]",
            "[err]: ",
            " in ",
            "in",
            "\u{a0}in\t",
            " (3 ms)",
            "(",
            ")",
            "12",
            "٣",
            "ms",
            "s",
            " ",
            "\t",
            "\u{a0}",
            "\u{1f}",
            "a",
            "é",
            "tests/x.tcl",
            "\r",
        ];
        let mut matched = 0;
        for raw in super::super::glued_lines(&pieces, 200_000) {
            let line = py_strip(&raw);
            let want = r
                .captures(line)
                .map(|c| (c.get(1).unwrap().as_str(), c.get(2).unwrap().as_str()));
            let got = redis_line(line);
            matched += usize::from(want.is_some());
            assert_eq!(got, want, "{raw:?}");
            if let Some((_, name)) = got {
                assert_eq!(without_file(name), file.replace(name, ""), "{raw:?}");
            }
        }
        assert!(matched > 1_000, "{matched} lines matched");
    }

    #[test]
    fn jq_and_googletest_hand_matchers_agree_with_upstream_regexes() {
        let jq_re = Regex::new(r"^\s*(PASS|FAIL):\s(.+)$").unwrap();
        let gt_re = Regex::new(GOOGLETEST).unwrap();
        let pieces = [
            "PASS:",
            "FAIL:",
            "PASS",
            " ",
            "\t",
            "\u{a0}",
            "\u{1f}",
            "[",
            "]",
            "[ OK ]",
            "[  FAILED  ]",
            "[\u{a0}OK",
            "OK",
            "FAILED",
            "(",
            ")",
            " (0 ms)",
            "(1",
            "a",
            "é",
            "A.b",
            ", where GetParam() = ",
            "\r",
        ];
        let word = |w: &str| {
            if w.starts_with('P') || w == "OK" {
                "PASSED"
            } else {
                "FAILED"
            }
        };
        let (mut jq_n, mut gt_n) = (0, 0);
        for raw in super::super::glued_lines(&pieces, 200_000) {
            let line = py_strip(&raw);
            let want = jq_re
                .captures(line)
                .map(|c| (word(&c[1]), c.get(2).unwrap().as_str()));
            jq_n += usize::from(want.is_some());
            assert_eq!(jq_line(line), want, "{raw:?}");
            let want = gt_re
                .captures(line)
                .map(|c| (word(&c[1]), c.get(2).unwrap().as_str()));
            gt_n += usize::from(want.is_some());
            assert_eq!(googletest_line(line), want, "{raw:?}");
        }
        assert!(jq_n > 1_000 && gt_n > 200, "{jq_n} {gt_n} lines matched");
    }

    #[test]
    fn googletest_reads_ok_and_failed_with_a_time() {
        let log = "[       OK ] A.b (0 ms)\n[  FAILED  ] A.c (1 ms)\n[  FAILED  ] A.c\n[  SKIPPED ] A.d (0 ms)\n[  FAILED  ] P/T.x/0, where GetParam() = 1 (0 ms)\n";
        assert_eq!(
            googletest(log),
            m(&[
                ("A.b", "PASSED"),
                ("A.c", "FAILED"),
                ("P/T.x/0, where GetParam() = 1", "FAILED"),
            ])
        );
    }

    #[test]
    fn doctest_reads_subcases_only() {
        let log = "noise\n<doctest binary=\"t\"><TestSuite><TestCase name=\"plain\"><Expression success=\"false\"/></TestCase><TestCase name=\"c &amp; d\"><SubCase name=\"s1\"><Expression success=\"true\"/><SubCase name=\"s2\"><Expression success=\"false\"/></SubCase></SubCase></TestCase></TestSuite></doctest>\n";
        assert_eq!(
            doctest(log),
            m(&[("c & d > s1", "FAILED"), ("c & d > s2", "FAILED")])
        );
        assert!(doctest("<doctest><TestCase></doctest>").is_empty());
    }

    #[test]
    fn micropython_hand_matcher_agrees_with_upstream_regex() {
        let r = Regex::new(r"^(pass|FAIL|skip)\s+(.+)$").unwrap();
        let pieces = [
            "pass", "FAIL", "skip", "passed", " ", "\t", "\u{a0}", "\u{1f}", "\u{85}", "a", "é",
            "\r",
        ];
        for raw in super::super::glued_lines(&pieces, 200_000) {
            let line = py_strip(&raw);
            let want = r.captures(line).map(|c| {
                let word = match &c[1] {
                    "pass" => "PASSED",
                    "FAIL" => "FAILED",
                    _ => "SKIPPED",
                };
                (word, c.get(2).unwrap().as_str())
            });
            assert_eq!(micropython_line(line), want, "{raw:?}");
        }
    }

    #[test]
    fn jq_and_micropython() {
        assert_eq!(
            jq("PASS: tests/a.test\nFAIL: tests/b.test\nSKIP: tests/c.test\n"),
            m(&[("tests/a.test", "PASSED"), ("tests/b.test", "FAILED")])
        );
        assert_eq!(
            micropython_test("pass  basics/a.py\nFAIL  basics/b.py\nskip  basics/c.py\n"),
            m(&[
                ("basics/a.py", "PASSED"),
                ("basics/b.py", "FAILED"),
                ("basics/c.py", "SKIPPED"),
            ])
        );
    }
}
