//! Shared vocabulary of the log parsers: the [`TestStatus`] enum, the collector that
//! implements the "last occurrence wins" rule, log cleaning (ANSI escape sequences and
//! carriage returns), SWE-bench-Live's status normalisation and the JSON rendering used by
//! `bench parse-log`.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

/// Outcome of one test as bench grades it.
///
/// Every framework-specific status (pytest's `XFAIL`, libtest's `ignored`, …) is mapped onto
/// one of these three values by the parser that reads it; each parser module documents its
/// mapping.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum TestStatus {
    /// The test ran and passed.
    Pass,
    /// The test failed, errored, or (depending on the parser) had another bad outcome.
    Fail,
    /// The test was skipped (or is otherwise neither a pass nor a failure).
    Skip,
}

impl TestStatus {
    /// The lowercase word used in JSON and by SWE-bench-Live: `pass`, `fail` or `skip`.
    pub fn as_str(self) -> &'static str {
        match self {
            TestStatus::Pass => "pass",
            TestStatus::Fail => "fail",
            TestStatus::Skip => "skip",
        }
    }
}

impl std::fmt::Display for TestStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Maps a raw status string returned by a dataset parser script to a [`TestStatus`], using
/// SWE-bench-Live's rule (case-insensitive, checked in this order):
///
/// 1. contains `"pass"` → [`TestStatus::Pass`] (so `"PASSED"` and `"xpass"` pass);
/// 2. contains `"skip"` → [`TestStatus::Skip`];
/// 3. anything else → [`TestStatus::Fail`] (including `"error"`, `"xfail"`, `""`, `"None"`).
pub fn normalize_live_status(raw: &str) -> TestStatus {
    let lower = raw.to_lowercase();
    if lower.contains("pass") {
        TestStatus::Pass
    } else if lower.contains("skip") {
        TestStatus::Skip
    } else {
        TestStatus::Fail
    }
}

/// Renders parser output as the JSON text printed by `bench parse-log`: a pretty-printed
/// object whose keys are the test names in sorted (byte-wise) order and whose values are
/// `"pass"`, `"fail"` or `"skip"`. The text has no trailing newline.
pub fn statuses_to_json(statuses: &BTreeMap<String, TestStatus>) -> String {
    // Serialising a BTreeMap<String, enum> cannot fail; fall back to an empty object anyway
    // rather than panicking.
    serde_json::to_string_pretty(statuses).unwrap_or_else(|_| String::from("{}"))
}

/// Accumulates `(name, status)` pairs while a parser walks a log.
///
/// Recording a name that was already recorded replaces its status, so **the last occurrence
/// of a test in the log wins**. This matches SWE-bench, whose parsers fill a dict line by line,
/// and it gives sensible results for logs that contain a progress line and a later summary
/// line for the same test (pytest `-v -rA`), or several runs of the same suite.
#[derive(Debug, Default)]
pub(crate) struct Collector<'a> {
    map: HashMap<Cow<'a, str>, TestStatus>,
}

impl<'a> Collector<'a> {
    /// A collector sized for a log of `log_len` bytes (a guess of one test per 2 KiB, so
    /// large logs do not rehash the table over and over).
    pub(crate) fn for_log(log_len: usize) -> Self {
        Collector {
            map: HashMap::with_capacity((log_len / 2048).min(1 << 20)),
        }
    }

    /// Records `status` for `name`; empty names are ignored.
    pub(crate) fn record(&mut self, name: impl Into<Cow<'a, str>>, status: TestStatus) {
        let name = name.into();
        if name.is_empty() {
            return;
        }
        self.map.insert(name, status);
    }

    /// The sorted result map.
    pub(crate) fn finish(self) -> BTreeMap<String, TestStatus> {
        let mut entries: Vec<(Cow<'a, str>, TestStatus)> = self.map.into_iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // Building a BTreeMap from already sorted input is linear.
        entries
            .into_iter()
            .map(|(name, status)| (name.into_owned(), status))
            .collect()
    }
}

/// Removes terminal escape sequences and every `\r` from a log.
///
/// Removed: CSI sequences (`ESC [` parameters, intermediates, final byte — colours, cursor
/// movement; this is the `\x1B\[[0-?]*[ -/]*[@-~]` pattern of SWE-bench), OSC sequences
/// (`ESC ]` … terminated by BEL or `ESC \`, e.g. terminal hyperlinks), and the short
/// two- or three-byte escapes such as `ESC ( B`. A lone `ESC` that starts none of these is
/// dropped as well. Carriage returns are removed rather than treated as "overwrite the line":
/// `a\rb` becomes `ab`, which keeps `\r\n` logs working. Returns the input unchanged
/// (borrowed) when it contains neither `ESC` nor `\r`.
pub(crate) fn clean_log(log: &str) -> Cow<'_, str> {
    let bytes = log.as_bytes();
    if !bytes.contains(&0x1b) && !bytes.contains(&b'\r') {
        return Cow::Borrowed(log);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\r' {
            i += 1;
        } else if b == 0x1b {
            i = skip_escape(bytes, i);
        } else {
            out.push(b);
            i += 1;
        }
    }
    // Only ASCII bytes were removed, so the result is still valid UTF-8.
    match String::from_utf8(out) {
        Ok(s) => Cow::Owned(s),
        Err(e) => Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
    }
}

/// Given `bytes[start] == ESC`, returns the index just past the escape sequence.
fn skip_escape(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    match bytes.get(i) {
        Some(b'[') => {
            i += 1;
            while matches!(bytes.get(i), Some(0x30..=0x3f)) {
                i += 1;
            }
            while matches!(bytes.get(i), Some(0x20..=0x2f)) {
                i += 1;
            }
            if matches!(bytes.get(i), Some(0x40..=0x7e)) {
                i + 1
            } else {
                // Malformed CSI: drop only the introducer.
                start + 2
            }
        }
        Some(b']') => {
            i += 1;
            while i < bytes.len() {
                match bytes[i] {
                    0x07 => return i + 1,
                    0x1b if bytes.get(i + 1) == Some(&b'\\') => return i + 2,
                    b'\n' => return i, // never swallow a line break
                    _ => i += 1,
                }
            }
            i
        }
        Some(0x20..=0x2f) => {
            while matches!(bytes.get(i), Some(0x20..=0x2f)) {
                i += 1;
            }
            if matches!(bytes.get(i), Some(0x30..=0x7e)) {
                i + 1
            } else {
                i
            }
        }
        Some(0x40..=0x5f) | Some(0x60..=0x7e) | Some(0x30..=0x3f) => i + 1,
        _ => i,
    }
}

/// Splits a log into lines (on `\n`; `\r` was already removed by [`clean_log`]).
pub(crate) fn lines(log: &str) -> impl Iterator<Item = &str> {
    log.split('\n')
}
