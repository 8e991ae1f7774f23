//! Go test logs: `go test -v` (`go`) and `go test -json` (`go-json`).
//!
//! # Naming
//!
//! The test name as Go prints it: `TestAdd`, subtests `TestTable/case_one` (Go replaces spaces
//! in subtest names by `_`). The package is **not** part of the name, as in SWE-bench; when two
//! packages have a test of the same name, the one printed last wins. `go test -v ./...`
//! prints each package's output in package order, so there the later package decides;
//! `go test -json` streams events of packages running in parallel as they happen, so there
//! the test that finished last decides.
//!
//! # `go`
//!
//! `--- PASS: <name> (0.00s)`, `--- FAIL: …`, `--- SKIP: …`, matched after trimming the line
//! so that indented subtest results count (SWE-bench's rule). PASS → pass, FAIL → fail,
//! SKIP → skip.
//!
//! # `go-json`
//!
//! One JSON event per line; events with `"Action"` `pass`, `fail` or `skip` and a non-empty
//! `"Test"` map to pass, fail, skip. Package-level events (no `Test`) and non-JSON lines are
//! ignored.

use std::borrow::Cow;

use super::common::{Collector, TestStatus, lines, space_parens_back};

/// The `go` parser.
pub(crate) fn parse_verbose(log: &str, out: &mut Collector) {
    for line in lines(log) {
        let t = line.trim();
        let Some(rest) = t.strip_prefix("--- ") else {
            continue;
        };
        let (status, rest) = if let Some(r) = rest.strip_prefix("PASS: ") {
            (TestStatus::Pass, r)
        } else if let Some(r) = rest.strip_prefix("FAIL: ") {
            (TestStatus::Fail, r)
        } else if let Some(r) = rest.strip_prefix("SKIP: ") {
            (TestStatus::Skip, r)
        } else {
            continue;
        };
        // `<name> (<duration>)`: the name is everything before the last ` (`.
        let Some(body) = rest.strip_suffix(')') else {
            continue;
        };
        let Some(open) = space_parens_back(body).next() else {
            continue;
        };
        if body[open + 2..].contains('(') {
            continue;
        }
        out.record(body[..open].trim(), status);
    }
}

#[derive(serde::Deserialize)]
struct Event<'a> {
    #[serde(rename = "Action")]
    action: Cow<'a, str>,
    #[serde(rename = "Test", default)]
    test: Option<Cow<'a, str>>,
}

/// The `go-json` parser.
pub(crate) fn parse_json(log: &str, out: &mut Collector) {
    for line in lines(log) {
        let t = line.trim();
        if !t.starts_with('{') {
            continue;
        }
        let Ok(event) = serde_json::from_str::<Event<'_>>(t) else {
            continue;
        };
        let status = match event.action.as_ref() {
            "pass" => TestStatus::Pass,
            "fail" => TestStatus::Fail,
            "skip" => TestStatus::Skip,
            _ => continue,
        };
        if let Some(test) = event.test
            && !test.is_empty()
        {
            out.record(Cow::Owned(test.into_owned()), status);
        }
    }
}
