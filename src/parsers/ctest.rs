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

pub(crate) fn parse(log: &str, out: &mut Collector) {
    let re = line_re();
    for line in lines(log) {
        if !line.contains(" sec") || !line.contains("Test") {
            continue;
        }
        let Some(caps) = re.captures(line) else {
            continue;
        };
        let (Some(name), Some(status)) = (caps.get(1), caps.get(2)) else {
            continue;
        };
        let status = match status.as_str().trim() {
            "Passed" => TestStatus::Pass,
            "Skipped" | "Not Run (Disabled)" => TestStatus::Skip,
            _ => TestStatus::Fail,
        };
        out.record(name.as_str(), status);
    }
}
