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

use std::sync::OnceLock;

use regex::Regex;

use super::common::{Collector, TestStatus, lines};

fn line_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^\s*(Passed|Failed|Skipped|NotRun)\s+(\S.*?)\s+\[[^\]]*\]\s*$")
            .unwrap_or_else(|e| panic!("invalid built-in regex: {e}"))
    })
}

pub(crate) fn parse(log: &str, out: &mut Collector) {
    let re = line_re();
    for line in lines(log) {
        let Some(caps) = re.captures(line) else {
            continue;
        };
        let (Some(status), Some(name)) = (caps.get(1), caps.get(2)) else {
            continue;
        };
        let status = match status.as_str() {
            "Passed" => TestStatus::Pass,
            "Failed" => TestStatus::Fail,
            _ => TestStatus::Skip,
        };
        out.record(name.as_str(), status);
    }
}
