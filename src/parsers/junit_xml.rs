//! JUnit XML reports from any producer (Maven Surefire/Failsafe, Gradle, `pytest
//! --junitxml`, `ctest --output-junit`, jest-junit, go-junit-report, …).
//!
//! The log may hold several XML documents and other text, e.g. the output of
//! `cat target/surefire-reports/*.xml`: every `<testsuites …>` or `<testsuite …>` element
//! found in the text is read up to its matching end tag; text between documents (shell
//! output, `<?xml …?>` declarations) is skipped. A document that turns out to be malformed
//! keeps the test cases read before the error.
//!
//! # Status mapping
//!
//! bench's mapping (`docs/parsers.md`). For each `<testcase>`: a `<failure>` or `<error>` child
//! → fail; otherwise a `<skipped>` child → skip, except pytest's xfail (`<skipped
//! type="pytest.xfail">`: the body ran and failed, as expected) → fail, as the pytest log
//! parsers read `XFAIL`; no such child → pass (pytest's non-strict XPASS too; a strict one is a
//! `<failure>`). Surefire's `<flakyFailure>`/`<rerunFailure>` children do not change the status.
//!
//! # Naming
//!
//! `<classname>.<name>` from the testcase's attributes (e.g. `com.example.AppTest.adds`,
//! `tests.test_demo.test_p[a b]` for pytest); just `<name>` when `classname` is missing,
//! empty or equal to `name` (as ctest and jest-junit write it). Attribute values are
//! unescaped and whitespace-normalised as XML requires.

use std::borrow::Cow;

use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};
use quick_xml::reader::Reader;

use super::common::{Collector, TestStatus};

pub(crate) fn parse(log: &str, out: &mut Collector) {
    let mut pos = 0;
    while let Some(found) = find_root(&log[pos..]) {
        let start = pos + found;
        let consumed = parse_element(&log[start..], out);
        pos = start + consumed.max(1);
        while pos < log.len() && !log.is_char_boundary(pos) {
            pos += 1;
        }
    }
}

/// Offset of the next `<testsuites` / `<testsuite` start tag.
fn find_root(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find("<testsuite") {
        let at = from + i;
        let after = &text.as_bytes()[at + "<testsuite".len()..];
        let after = after.strip_prefix(b"s").unwrap_or(after);
        match after.first() {
            Some(b' ' | b'\t' | b'\n' | b'>' | b'/') => return Some(at),
            _ => from = at + 1,
        }
    }
    None
}

struct Case {
    name: String,
    status: TestStatus,
    depth: usize,
}

/// Reads one element starting at the beginning of `text`; returns how many bytes it spans
/// (up to the error position if it is malformed).
fn parse_element(text: &str, out: &mut Collector) -> usize {
    let mut reader = Reader::from_str(text);
    let mut depth = 0usize;
    let mut case: Option<Case> = None;
    loop {
        let event = match reader.read_event() {
            Ok(event) => event,
            Err(_) => return position(reader.error_position(), text.len()),
        };
        match event {
            Event::Start(e) => {
                depth += 1;
                open(&e, depth, false, &mut case, out);
            }
            Event::Empty(e) => open(&e, depth + 1, true, &mut case, out),
            Event::End(e) => {
                if e.local_name().as_ref() == "testcase"
                    && let Some(c) = case.take()
                {
                    out.record(Cow::Owned(c.name), c.status);
                }
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return position(reader.buffer_position(), text.len());
                }
            }
            Event::Eof => return text.len(),
            _ => {}
        }
        if depth == 0 {
            // A self-closing root element.
            return position(reader.buffer_position(), text.len());
        }
    }
}

fn position(pos: u64, len: usize) -> usize {
    usize::try_from(pos).map_or(len, |p| p.min(len))
}

fn open(
    e: &BytesStart<'_>,
    depth: usize,
    empty: bool,
    case: &mut Option<Case>,
    out: &mut Collector,
) {
    match e.local_name().as_ref() {
        "testcase" => {
            let name = case_name(e);
            if empty {
                out.record(Cow::Owned(name), TestStatus::Pass);
            } else {
                *case = Some(Case {
                    name,
                    status: TestStatus::Pass,
                    depth,
                });
            }
        }
        "failure" | "error" => {
            if let Some(c) = case
                && depth == c.depth + 1
            {
                c.status = TestStatus::Fail;
            }
        }
        "skipped" => {
            if let Some(c) = case
                && depth == c.depth + 1
                && c.status != TestStatus::Fail
            {
                // pytest writes an xfail (the body failed, as its author expected) as a
                // `<skipped>`: bench's mapping counts what the body did (docs/parsers.md).
                c.status = if is_pytest_xfail(e) {
                    TestStatus::Fail
                } else {
                    TestStatus::Skip
                };
            }
        }
        _ => {}
    }
}

/// `<skipped type="pytest.xfail" …>`.
fn is_pytest_xfail(e: &BytesStart<'_>) -> bool {
    e.attributes()
        .flatten()
        .any(|a| a.key.local_name().as_ref() == "type" && a.value.as_ref() == "pytest.xfail")
}

fn case_name(e: &BytesStart<'_>) -> String {
    let mut classname = String::new();
    let mut name = String::new();
    for attr in e.attributes().flatten() {
        let target = match attr.key.local_name().as_ref() {
            "classname" => &mut classname,
            "name" => &mut name,
            _ => continue,
        };
        *target = match attr.normalized_value(XmlVersion::Implicit1_0) {
            Ok(v) => v.into_owned(),
            Err(_) => attr.value.to_string(),
        };
    }
    if classname.is_empty() || classname == name {
        name
    } else {
        format!("{classname}.{name}")
    }
}
