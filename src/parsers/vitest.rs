//! Vitest `--reporter=verbose` logs (v1–v4).
//!
//! ```text
//!  ✓ src/sum.test.ts > sum > adds 1ms
//!  × src/sum.test.ts > sum > fails 3ms
//!  ↓ src/sum.test.ts > sum > later
//! ```
//!
//! ✓ (or `√`) → pass, × (or `✕`) → fail, ↓ → skip. The name is the rest of the line as
//! printed — the file and the `describe` titles joined with ` > ` — so names are unique across
//! files, without the suffixes vitest appends: the duration (`1ms`, `12 ms`, `1.5s`), a retry
//! or repeat count (`(retry x2)`, `(repeat x3)`; v3+ print them after the duration, the v1/v2
//! tree before it), the heap figure (`12 MB heap used`, `--logHeapUsage`) and the `[skipped]`
//! marker. So a flaky test that passed on its third attempt
//! (`✓ a.test.ts > fetch > retries 40ms (retry x2)`) keeps its name. A skip note
//! (`↓ a > b [reason]`, from `context.skip('reason')`) stays part of the name: a bracketed
//! suffix cannot be told from a parameterised title such as `case [1, 2]`. A project name
//! prefix (`✓ |unit| a.test.ts > b`) stays part of the name, so two projects running one file
//! do not collide.
//!
//! File summary lines that use the same marks (`✓ src/sum.test.ts (3 tests | 1 skipped) 5ms`,
//! also after a `|project|` prefix) are ignored.
//!
//! SWE-bench's `parse_log_vitest` (vuejs/core) strips one trailing `12ms`, `12` or
//! `[skipped]` only: a bare trailing number leaves the name (`case 12` is named `case`), and a
//! decimal duration, a retry or repeat count or the heap figure stays in it. The `swebench-*`
//! parsers keep upstream's behaviour.

use std::sync::OnceLock;

use regex::Regex;

use super::common::{Collector, TestStatus, lines};

fn line_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"^\s*(✓|√|×|✕|↓)\s+(.+?)",
            // v1/v2 tree order: retry, [skipped], duration, heap.
            r"(?:\s+\(retry x\d+\))?(?:\s+\[skipped\])?",
            r"(?:\s+\d+(?:\.\d+)?\s*m?s)?",
            // v3+ order: duration (above), retry, repeat, heap, note.
            r"(?:\s+\(retry x\d+\))?(?:\s+\(repeat x\d+\))?",
            r"(?:\s+\d+ MB heap used)?(?:\s+\[skipped\])?\s*$",
        ))
        .unwrap_or_else(|e| panic!("invalid built-in regex: {e}"))
    })
}

fn file_summary_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(?:\|[^|]+\| )?\S+ \(\d+ tests?(?: \| [^)]*)?\)$")
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
