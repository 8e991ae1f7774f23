//! Rust libtest output as printed by `cargo test`: the human format (`cargo`) and the JSON
//! event format of `-- -Z unstable-options --format json` (`cargo-json`).
//!
//! # Naming: suite prefix
//!
//! The same test path (`tests::adds`) can exist in several crates or test targets of one
//! workspace, so — like SWE-bench-Live's Rust parsers — bench prefixes each name with the
//! suite that cargo announced on stderr before running it (the log must therefore be captured
//! with `2>&1`):
//!
//! * `     Running unittests src/lib.rs (target/debug/deps/demo-8348ca7a80742723)` →
//!   `unittests src/lib.rs (target/debug/deps/demo-8348ca7a80742723)::tests::adds`
//!   (the text after `Running `, hash included, exactly as SWE-bench-Live datasets spell it);
//! * `   Doc-tests demo` → `Doc-tests demo::src/lib.rs - add (line 5)`.
//!
//! Before any such line (e.g. a log of a bare test binary) names are unprefixed. Only
//! indented `Running`/`Doc-tests` lines count, as cargo prints them. In the human format the
//! mode that libtest appends to a test's name (` - should panic`, ` - compile fail`,
//! ` - compile`) is removed, so both formats give the same names.
//!
//! # `cargo` (human format)
//!
//! `test <name> ... ok|FAILED|ignored[, reason]`. With `--nocapture` the status may arrive on
//! a later line (`test x ... hello` … `ok`); a name left without status is completed by the
//! next line consisting of a status alone. Benchmark lines (`... bench:`) are ignored.
//!
//! # `cargo-json`
//!
//! One JSON object per line; `{"type":"test","event":…,"name":…}` with event `ok` → pass,
//! `failed` → fail, `ignored` → skip. A test that `started` but has no later result (its
//! binary crashed or was killed) is a failure, as in SWE-bench-Live's parser scripts. Other
//! lines (cargo's stderr, test output) are ignored except for the suite headers above.
//!
//! SWE-bench's own Rust parser drops ignored tests and does not prefix names; bench reports
//! ignored tests as skip.

use std::borrow::Cow;

use super::common::{Collector, TestStatus, lines};

/// The suite named by a cargo `Running …` / `Doc-tests …` line.
fn suite_header(line: &str) -> Option<&str> {
    if !line.starts_with(' ') {
        return None;
    }
    let t = line.trim();
    if let Some(rest) = t.strip_prefix("Running ") {
        return Some(rest.trim_start());
    }
    t.starts_with("Doc-tests ").then_some(t)
}

fn full_name<'a>(suite: Option<&'a str>, name: &'a str) -> Cow<'a, str> {
    match suite {
        Some(suite) => Cow::Owned(format!("{suite}::{name}")),
        None => Cow::Borrowed(name),
    }
}

fn strip_test_mode(name: &str) -> &str {
    [" - should panic", " - compile fail", " - compile"]
        .iter()
        .find_map(|mode| name.strip_suffix(mode))
        .unwrap_or(name)
}

enum Tail {
    Status(TestStatus),
    Bench,
    Unknown,
}

fn human_status(tail: &str) -> Tail {
    let t = tail.trim();
    match t {
        "ok" => Tail::Status(TestStatus::Pass),
        "FAILED" => Tail::Status(TestStatus::Fail),
        _ if t == "ignored" || t.starts_with("ignored,") => Tail::Status(TestStatus::Skip),
        _ if t.starts_with("bench:") => Tail::Bench,
        _ => Tail::Unknown,
    }
}

/// The `cargo` parser.
pub(crate) fn parse_human(log: &str, out: &mut Collector) {
    let mut suite: Option<&str> = None;
    let mut pending: Option<&str> = None;
    for line in lines(log) {
        if let Some(s) = suite_header(line) {
            suite = Some(s);
            pending = None;
            continue;
        }
        if let Some(rest) = line.strip_prefix("test ") {
            let (name, tail) = match rest.find(" ... ") {
                Some(idx) => (&rest[..idx], &rest[idx + 5..]),
                None => match rest.trim_end().strip_suffix(" ...") {
                    Some(name) => (name, ""),
                    None => continue,
                },
            };
            let name = strip_test_mode(name.trim());
            match human_status(tail) {
                Tail::Status(status) => {
                    out.record(full_name(suite, name), status);
                    pending = None;
                }
                Tail::Bench => pending = None,
                Tail::Unknown => pending = Some(name),
            }
            continue;
        }
        if line.starts_with("test result:") {
            pending = None;
            continue;
        }
        if let Some(name) = pending
            && let Tail::Status(status) = human_status(line)
        {
            out.record(full_name(suite, name), status);
            pending = None;
        }
    }
}

#[derive(serde::Deserialize)]
struct Event<'a> {
    #[serde(rename = "type")]
    kind: Cow<'a, str>,
    event: Cow<'a, str>,
    #[serde(default)]
    name: Option<Cow<'a, str>>,
}

/// The `cargo-json` parser.
pub(crate) fn parse_json(log: &str, out: &mut Collector) {
    let mut suite: Option<&str> = None;
    for line in lines(log) {
        if let Some(s) = suite_header(line) {
            suite = Some(s);
            continue;
        }
        let trimmed = line.trim();
        if !trimmed.starts_with('{') {
            continue;
        }
        let Ok(event) = serde_json::from_str::<Event<'_>>(trimmed) else {
            continue;
        };
        if event.kind != "test" {
            continue;
        }
        let Some(name) = event.name else { continue };
        let status = match event.event.as_ref() {
            // Provisional: replaced by the result event if one follows.
            "started" => TestStatus::Fail,
            "ok" => TestStatus::Pass,
            "failed" => TestStatus::Fail,
            "ignored" => TestStatus::Skip,
            _ => continue,
        };
        let full = match suite {
            Some(suite) => Cow::Owned(format!("{suite}::{name}")),
            None => Cow::Owned(name.into_owned()),
        };
        out.record(full, status);
    }
}
