//! Jest `--verbose` logs.
//!
//! ```text
//! PASS src/sum.test.js
//!   sum
//!     ✓ adds 1 + 2 (2 ms)
//!     ✕ fails (3 ms)
//!     ○ skipped later
//!     ✎ todo write more
//! ```
//!
//! A result line is a mark followed by the test title and an optional `(N ms)` duration,
//! which is removed. ✓ (or `√`, Windows) → pass, ✕ (or `×`) → fail, `○` → skip, `✎` (todo) →
//! skip.
//!
//! # Naming
//!
//! The name is the **leaf title** only, as in SWE-bench: the `describe` blocks and the file are
//! not part of it, so equal titles in different blocks or files collide (the last one wins).
//! Jest prints skipped and todo tests as `○ skipped <title>` / `✎ todo <title>`; bench removes
//! that `skipped ` / `todo ` prefix so a test keeps its name whether it ran or not (SWE-bench
//! keeps the prefix).

use std::sync::OnceLock;

use regex::Regex;

use super::common::{Collector, TestStatus, lines};

fn line_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^\s*(✓|√|✕|×|○|✎)\s(.+?)(?:\s\(\d+(?:\.\d+)?\s*m?s\))?\s*$")
            .unwrap_or_else(|e| panic!("invalid built-in regex: {e}"))
    })
}

pub(crate) fn parse(log: &str, out: &mut Collector) {
    let re = line_re();
    for line in lines(log) {
        // Cheap pre-filter: every mark is a non-ASCII character.
        if line.is_ascii() {
            continue;
        }
        let Some(caps) = re.captures(line) else {
            continue;
        };
        let (Some(mark), Some(title)) = (caps.get(1), caps.get(2)) else {
            continue;
        };
        let title = title.as_str();
        let (status, name) = match mark.as_str() {
            "✓" | "√" => (TestStatus::Pass, title),
            "✕" | "×" => (TestStatus::Fail, title),
            "○" => (
                TestStatus::Skip,
                title.strip_prefix("skipped ").unwrap_or(title),
            ),
            _ => (
                TestStatus::Skip,
                title.strip_prefix("todo ").unwrap_or(title),
            ),
        };
        out.record(name.trim(), status);
    }
}
