//! Python `unittest` verbose logs (`python -m unittest -v`), which is also what Django's
//! `runtests.py -v 2` / `manage.py test -v 2` print.
//!
//! # Lines read
//!
//! * `<name> ... <status>`, where status is `ok`, `FAIL`, `ERROR`, `skipped 'reason'`,
//!   `expected failure` or `unexpected success`. The name is the text before the first
//!   ` ... `, trimmed — SWE-bench's Django convention. For an ordinary test that is
//!   `test_four (tests.test_roman.TestRoman.test_four)` (Python ≥ 3.11; older Pythons print
//!   `test_four (tests.test_roman.TestRoman)`); for a test with a docstring, unittest prints
//!   the id on one line and the docstring's first line before ` ... `, so the name is the
//!   docstring line (as in SWE-bench's Django test lists). Failing subtests print an
//!   indented `<name> (i=1) ... FAIL` line of their own.
//! * Output between ` ... ` and the status: when the test prints, the status arrives on a
//!   later line (`test_x (m.C.test_x) ... some output` … `ok`). bench remembers the name from
//!   a ` ... ` line without a status and gives it the status found on the next line that
//!   consists of a status alone. A separator line (`====…`, `----…`) or `Ran N tests` forgets
//!   it. (SWE-bench's Django parser does the same for `ok` only.)
//! * Failure headers after a `====…` separator: `FAIL: <name>` / `ERROR: <name>` → fail. The
//!   name is the text after the colon — the whole `test_x (m.C.test_x)`, not just `test_x`
//!   as SWE-bench's `split()[1]` takes — or, if the next line is not the `----…` separator,
//!   that next line (the docstring line, consistent with the rule above).
//!
//! # Status mapping
//!
//! `ok` and `expected failure` → pass; `FAIL`, `ERROR` and `unexpected success` → fail (as in
//! unittest's own `wasSuccessful`); `skipped …` → skip.

use super::common::{Collector, TestStatus, lines};

fn status_word(text: &str) -> Option<TestStatus> {
    let t = text.trim();
    match t {
        "ok" | "OK" | "expected failure" => Some(TestStatus::Pass),
        "FAIL" | "ERROR" | "unexpected success" => Some(TestStatus::Fail),
        _ if t == "skipped" || t.starts_with("skipped ") => Some(TestStatus::Skip),
        _ => None,
    }
}

fn is_separator(line: &str, ch: u8) -> bool {
    let t = line.trim_end();
    t.len() >= 20 && t.bytes().all(|b| b == ch)
}

pub(crate) fn parse(log: &str, out: &mut Collector) {
    let all: Vec<&str> = lines(log).collect();
    let mut pending: Option<&str> = None;
    for (i, &line) in all.iter().enumerate() {
        if let Some(idx) = line.find(" ... ") {
            let name = line[..idx].trim();
            match status_word(&line[idx + 5..]) {
                Some(status) => {
                    out.record(name, status);
                    pending = None;
                }
                None => pending = (!name.is_empty()).then_some(name),
            }
            continue;
        }
        let trimmed = line.trim_end();
        if let Some(name) = trimmed.strip_suffix(" ...") {
            let name = name.trim();
            pending = (!name.is_empty()).then_some(name);
            continue;
        }
        if is_separator(line, b'=') || is_separator(line, b'-') || line.starts_with("Ran ") {
            pending = None;
            continue;
        }
        let after_separator = i > 0 && is_separator(all[i - 1], b'=');
        if after_separator {
            let header = line
                .strip_prefix("FAIL: ")
                .or_else(|| line.strip_prefix("ERROR: "));
            if let Some(header) = header {
                let name = match all.get(i + 1) {
                    Some(next) if !next.trim().is_empty() && !is_separator(next, b'-') => {
                        next.trim()
                    }
                    _ => header.trim(),
                };
                out.record(name, TestStatus::Fail);
                continue;
            }
        }
        if let Some(name) = pending
            && let Some(status) = status_word(line)
        {
            out.record(name, status);
            pending = None;
        }
    }
}
