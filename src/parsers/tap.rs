//! TAP (Test Anything Protocol) logs, e.g. `node --test` (whose default reporter in Node 18/20
//! writes TAP when not on a terminal), `node --test --test-reporter=tap`, `tape`, `prove -v`.
//!
//! ```text
//! ok 1 - adds
//! not ok 2 - broken
//! ok 3 - later # SKIP
//! not ok 4 - someday # TODO not written
//!     ok 1 - nested subtest
//! ok 5 - group of the nested subtest
//! ```
//!
//! Result lines are `ok` / `not ok`, an optional test number, an optional `-`, the
//! description and an optional directive after an unescaped `#`. Lines may be indented
//! (subtests). `ok` → pass, `not ok` → fail, a `# SKIP …` or `# TODO …` directive
//! (case-insensitive) → skip whatever the result.
//!
//! # Naming
//!
//! The name is the description: the number, the `- ` separator and the directive are
//! removed, and TAP escapes (`\#`, `\\`) are undone, so `ok 3 - a \# b # SKIP` is `a # b`.
//! Subtests are named by their own description only, so equal descriptions collide and the
//! last one wins (the `node-test` parser names them by their path instead).
//!
//! # Groups
//!
//! Subtests are printed, indented, before their parent's result line (node:test's
//! `# Subtest: suite` … `ok 7 - suite`). Every result line is a test point in TAP, so the
//! parent is recorded too, with its own result (node fails a parent when anything inside it
//! failed): bench's status mapping, `docs/parsers.md`.
//!
//! SWE-bench's tap regex instead keeps the `- ` in the name (`- adds`), counts `# SKIP`
//! lines as passed and counts groups as tests.

use std::borrow::Cow;

use super::common::{Collector, TestStatus, lines};

/// One `ok` / `not ok` line.
pub(crate) struct TapResult<'a> {
    /// Leading spaces (4 per nesting level in node:test's output).
    pub(crate) indent: usize,
    /// The unescaped description.
    pub(crate) name: Cow<'a, str>,
    pub(crate) status: TestStatus,
}

/// Reads an `ok` / `not ok` line; `None` for any other line or an empty description.
pub(crate) fn result_line(line: &str) -> Option<TapResult<'_>> {
    let t = line.trim_start();
    let indent = line.len() - t.len();
    let (ok, rest) = if let Some(r) = t.strip_prefix("not ok") {
        (false, r)
    } else if let Some(r) = t.strip_prefix("ok") {
        (true, r)
    } else {
        return None;
    };
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    let rest = rest.trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let rest = rest[digits..].trim_start();
    let rest = rest.strip_prefix("- ").unwrap_or(rest);
    let rest = if rest == "-" { "" } else { rest };
    let (description, directive) = split_directive(rest);
    let status = match directive {
        Some(d) if starts_with_ignore_case(d, "skip") || starts_with_ignore_case(d, "todo") => {
            TestStatus::Skip
        }
        _ if ok => TestStatus::Pass,
        _ => TestStatus::Fail,
    };
    let name = unescape(description.trim());
    (!name.is_empty()).then_some(TapResult {
        indent,
        name,
        status,
    })
}

/// Reads node:test's `# Subtest: <name>` comment (printed before the subtest runs, at the
/// indentation of its result line): the indent and the unescaped name.
pub(crate) fn subtest_header(line: &str) -> Option<(usize, Cow<'_, str>)> {
    let t = line.trim_start();
    let name = t.strip_prefix("# Subtest: ")?;
    Some((line.len() - t.len(), unescape(name.trim())))
}

pub(crate) fn parse(log: &str, out: &mut Collector) {
    for line in lines(log) {
        if let Some(result) = result_line(line) {
            out.record(&result.name, result.status);
        }
    }
}

fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.len() >= prefix.len()
        && text.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// Splits `description # directive` at the first `#` not preceded by a backslash. Only a
/// SKIP/TODO directive is split off; any other `# …` stays part of the description.
fn split_directive(text: &str) -> (&str, Option<&str>) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'#' => {
                let directive = text[i + 1..].trim_start();
                if starts_with_ignore_case(directive, "skip")
                    || starts_with_ignore_case(directive, "todo")
                {
                    return (&text[..i], Some(directive));
                }
                return (text, None);
            }
            _ => i += 1,
        }
    }
    (text, None)
}

/// Undoes TAP escaping: `\#` → `#`, `\\` → `\`.
fn unescape(text: &str) -> Cow<'_, str> {
    if !text.contains('\\') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(n @ ('#' | '\\')) => out.push(n),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}
