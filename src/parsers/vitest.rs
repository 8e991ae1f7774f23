//! Vitest `--reporter=verbose` logs (v1–v3).
//!
//! ```text
//!  ✓ src/sum.test.ts > sum > adds 1ms
//!  × src/sum.test.ts > sum > fails 3ms
//!  ↓ src/sum.test.ts > sum > later
//! ```
//!
//! ✓ (or `√`) → pass, × (or `✕`) → fail, ↓ → skip. A trailing duration (`1ms`, `12 ms`,
//! `1.5s`) or `[skipped]` is removed. The name is the rest of the line as printed — the file
//! and the `describe` titles joined with ` > ` — so names are unique across files.
//!
//! File summary lines that use the same marks (`✓ src/sum.test.ts (3 tests | 1 skipped) 5ms`)
//! are ignored.

use std::sync::OnceLock;

use regex::Regex;

use super::common::{Collector, TestStatus, lines};

fn line_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^\s*(✓|√|×|✕|↓)\s+(.+?)(?:\s+(?:\d+(?:\.\d+)?\s*m?s|\[skipped\]))?\s*$")
            .unwrap_or_else(|e| panic!("invalid built-in regex: {e}"))
    })
}

fn file_summary_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^\S+ \(\d+ tests?(?: \| [^)]*)?\)$")
            .unwrap_or_else(|e| panic!("invalid built-in regex: {e}"))
    })
}

pub(crate) fn parse(log: &str, out: &mut Collector) {
    let re = line_re();
    for line in lines(log) {
        if line.is_ascii() {
            continue;
        }
        let Some(caps) = re.captures(line) else {
            continue;
        };
        let (Some(mark), Some(name)) = (caps.get(1), caps.get(2)) else {
            continue;
        };
        let name = name.as_str().trim();
        if file_summary_re().is_match(name) {
            continue;
        }
        let status = match mark.as_str() {
            "✓" | "√" => TestStatus::Pass,
            "×" | "✕" => TestStatus::Fail,
            _ => TestStatus::Skip,
        };
        out.record(name, status);
    }
}
