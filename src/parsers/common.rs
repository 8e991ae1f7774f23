//! Shared vocabulary of the log parsers: the [`TestStatus`] enum, the collector that
//! implements the "last occurrence wins" rule, log cleaning (ANSI escape sequences and
//! carriage returns), SWE-bench-Live's status normalisation and the JSON rendering used by
//! `bench parse-log`.

use std::borrow::Cow;
use std::collections::BTreeMap;

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
pub fn statuses_to_json(statuses: &Statuses) -> String {
    // Serialising names and enum values cannot fail; fall back to an empty object anyway
    // rather than panicking.
    serde_json::to_string_pretty(statuses).unwrap_or_else(|_| String::from("{}"))
}

/// Writes the text of [`statuses_to_json`] to `out` as it is rendered (no string of the whole
/// output), followed by a newline.
pub fn write_statuses_json(
    statuses: &Statuses,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    write_sorted_json(statuses.sorted(), out)
}

/// [`write_statuses_json`] of entries already sorted by name, each name once.
pub(crate) fn write_sorted_json<'a>(
    sorted: impl IntoIterator<Item = (&'a str, TestStatus)>,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut started = false;
    for (name, status) in sorted {
        push_json_entry(&mut buf, name, status);
        if buf.len() >= 1 << 16 {
            write_json_entries_part(&mut started, &buf, out)?;
            buf.clear();
        }
    }
    write_json_entries_part(&mut started, &buf, out)?;
    write_json_end(started, out)
}

/// Appends the JSON of one entry as [`write_json_entries_part`] reads it: `,\n  "name": "status"`.
/// The bytes of `serde_json::to_writer_pretty` (a test checks), written directly: names that
/// need no escaping (nearly all) are copied as they are. Every name of the output passes here,
/// so the check reads the whole name without an early exit (the compiler makes it a loop of
/// vector compares, not a branch per byte) and the entry is reserved and copied in three parts.
pub(crate) fn push_json_entry(buf: &mut Vec<u8>, name: &str, status: TestStatus) {
    let escaped = name.bytes().fold(false, |any, b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    // The name's closing quote and the status.
    let tail: &[u8] = match status {
        TestStatus::Pass => b"\": \"pass\"",
        TestStatus::Fail => b"\": \"fail\"",
        TestStatus::Skip => b"\": \"skip\"",
    };
    if escaped {
        buf.extend_from_slice(b",\n  ");
        // Writing into a Vec cannot fail; serde_json writes the quotes.
        let _ = serde_json::to_writer(&mut *buf, name);
        buf.extend_from_slice(&tail[1..]);
        return;
    }
    buf.reserve(name.len() + 5 + tail.len());
    buf.extend_from_slice(b",\n  \"");
    buf.extend_from_slice(name.as_bytes());
    buf.extend_from_slice(tail);
}

/// Writes one part of entries made by [`push_json_entry`] (the names sorted across all parts,
/// each once): the object's `{` and the first entry without its comma (`started` is false
/// until then). [`write_json_end`] closes the object.
pub(crate) fn write_json_entries_part(
    started: &mut bool,
    part: &[u8],
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    if part.is_empty() {
        return Ok(());
    }
    if !*started {
        *started = true;
        out.write_all(b"{")?;
        out.write_all(&part[1..])
    } else {
        out.write_all(part)
    }
}

pub(crate) fn write_json_end(any: bool, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    out.write_all(if any { b"\n}\n" } else { b"{}\n" })
}

/// The 8 bytes of `name` from `at` as a big-endian integer, zero-padded past its end: integers
/// in the byte-wise order of those bytes.
pub(crate) fn name_digit(name: &str, at: usize) -> u64 {
    let b = name.as_bytes();
    match b.get(at..at + 8) {
        Some(eight) => u64::from_be_bytes(eight.try_into().expect("8 bytes")),
        None => {
            let mut padded = [0u8; 8];
            if let Some(rest) = b.get(at..) {
                padded[..rest.len()].copy_from_slice(rest);
            }
            u64::from_be_bytes(padded)
        }
    }
}

/// The 16 bytes of `name` from `at` as a big-endian integer, zero-padded past its end (two
/// [`name_digit`]s): integers in the byte-wise order of those bytes.
pub(crate) fn name_digits(name: &str, at: usize) -> u128 {
    (u128::from(name_digit(name, at)) << 64) | u128::from(name_digit(name, at + 8))
}

/// Sorts keys `(digit, index)` of `names` whose first `at` bytes are equal (zero-padded) by
/// name, byte-wise, given each key's [`name_digit`] at `at`: sorted by that digit, then each
/// run of equal digits by the next 8 bytes, and so on (names with long common prefixes, such
/// as test ids, are compared as integers rather than memcmp'd from the start again at every
/// comparison). The keys are 16 bytes (an index, not
/// the name and its status), so the sort moves half as much as it would with the entries.
fn sort_by_digits(names: &[&str], v: &mut [(u64, u32)], at: usize) {
    let by_name = |a: &(u64, u32), b: &(u64, u32)| names[a.1 as usize].cmp(names[b.1 as usize]);
    if v.len() <= 24 {
        v.sort_unstable_by(by_name);
        return;
    }
    v.sort_unstable_by_key(|e| e.0);
    let mut i = 0;
    while i < v.len() {
        let digit = v[i].0;
        let run = v[i..].iter().take_while(|e| e.0 == digit).count();
        let from = i;
        i += run;
        if run < 2 {
            continue;
        }
        let group = &mut v[from..i];
        if group.iter().all(|e| names[e.1 as usize].len() <= at + 8) {
            // Every name ends within this digit: they differ only in trailing NULs.
            group.sort_unstable_by(by_name);
            continue;
        }
        for e in group.iter_mut() {
            e.0 = name_digit(names[e.1 as usize], at + 8);
        }
        sort_by_digits(names, group, at + 8);
    }
}

/// How many bytes all of `names` share at their start.
fn common_prefix(names: &[&str]) -> usize {
    let Some(first) = names.first() else {
        return 0;
    };
    let first = first.as_bytes();
    let mut len = first.len();
    for name in names {
        let name = name.as_bytes();
        if name.len() < len || name[..len] != first[..len] {
            len = first[..len.min(name.len())]
                .iter()
                .zip(name)
                .take_while(|(a, b)| a == b)
                .count();
        }
    }
    len
}

/// `entries` (each name once) sorted by name, byte-wise.
pub(crate) fn sorted_by_name<'a>(
    entries: impl Iterator<Item = (&'a str, TestStatus)>,
) -> Vec<(&'a str, TestStatus)> {
    let (names, statuses): (Vec<&str>, Vec<TestStatus>) = entries.unzip();
    // Every name shares these bytes: the digits start after them.
    let at = common_prefix(&names);
    let mut keys: Vec<(u64, u32)> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let index = u32::try_from(i).expect("fewer than 4 billion test names");
            (name_digit(name, at), index)
        })
        .collect();
    sort_by_digits(&names, &mut keys, at);
    keys.into_iter()
        .map(|(_, i)| (names[i as usize], statuses[i as usize]))
        .collect()
}

/// Test name -> status, as produced by a parser.
///
/// Built for big logs: the names live once, back to back, in one arena string; a table of
/// 4-byte indexes (small enough to stay in cache) finds them by their foldhash. Compared
/// with a `HashMap<String, _>` this makes no allocation per name and no cache miss into the
/// log when a test is named a second time. Lookups are what grading needs; every rendering
/// (`Debug`, JSON, [`Statuses::sorted`]) is in byte-wise name order, so outputs are
/// deterministic.
#[derive(Clone, Default)]
pub struct Statuses {
    arena: String,
    entries: Vec<Entry>,
    table: hashbrown::HashTable<u32>,
    hasher: foldhash::fast::FixedState,
}

#[derive(Clone, Copy)]
struct Entry {
    start: usize,
    len: usize,
    status: TestStatus,
}

impl Statuses {
    /// An empty map sized for about `names` names.
    pub(crate) fn with_capacity(names: usize) -> Self {
        Statuses {
            table: hashbrown::HashTable::with_capacity(names),
            entries: Vec::with_capacity(names),
            ..Default::default()
        }
    }

    fn name(&self, e: &Entry) -> &str {
        &self.arena[e.start..e.start + e.len]
    }

    fn hash(&self, name: &str) -> u64 {
        use std::hash::BuildHasher;
        self.hasher.hash_one(name)
    }

    fn index(&self, name: &str) -> Option<usize> {
        let hash = self.hash(name);
        self.table
            .find(hash, |&i| self.name(&self.entries[i as usize]) == name)
            .map(|&i| i as usize)
    }

    /// Records `status` for `name`, replacing an earlier status of the same name. One probe
    /// of the table finds the name or the slot a new name takes.
    pub fn insert(&mut self, name: &str, status: TestStatus) {
        use std::hash::BuildHasher;
        let hash = self.hash(name);
        let Statuses {
            arena,
            entries,
            table,
            hasher,
        } = self;
        let slot = table.entry(
            hash,
            |&i| {
                let e = &entries[i as usize];
                &arena[e.start..e.start + e.len] == name
            },
            |&i| {
                let e = &entries[i as usize];
                hasher.hash_one(&arena[e.start..e.start + e.len])
            },
        );
        match slot {
            hashbrown::hash_table::Entry::Occupied(found) => {
                entries[*found.get() as usize].status = status;
            }
            hashbrown::hash_table::Entry::Vacant(slot) => {
                let index = u32::try_from(entries.len()).expect("fewer than 4 billion test names");
                entries.push(Entry {
                    start: arena.len(),
                    len: name.len(),
                    status,
                });
                arena.push_str(name);
                slot.insert(index);
            }
        }
    }

    /// The status recorded for `name`.
    pub fn get(&self, name: &str) -> Option<TestStatus> {
        self.index(name).map(|i| self.entries[i].status)
    }

    /// Number of tests named.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no test was named.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `name` was named.
    pub fn contains(&self, name: &str) -> bool {
        self.index(name).is_some()
    }

    /// All entries, sorted by name.
    pub fn sorted(&self) -> Vec<(&str, TestStatus)> {
        sorted_by_name(self.entries.iter().map(|e| (self.name(e), e.status)))
    }

    /// The statuses as a sorted map.
    pub fn to_btree(&self) -> BTreeMap<String, TestStatus> {
        self.entries
            .iter()
            .map(|e| (self.name(e).to_owned(), e.status))
            .collect()
    }

    /// Statuses in the order the names were first seen (for counting).
    pub fn values(&self) -> impl Iterator<Item = TestStatus> + '_ {
        self.entries.iter().map(|e| e.status)
    }
}

impl<S: AsRef<str>> FromIterator<(S, TestStatus)> for Statuses {
    fn from_iter<I: IntoIterator<Item = (S, TestStatus)>>(iter: I) -> Self {
        let mut out = Statuses::default();
        for (name, status) in iter {
            out.insert(name.as_ref(), status);
        }
        out
    }
}

impl std::fmt::Debug for Statuses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.sorted()).finish()
    }
}

impl PartialEq for Statuses {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .entries
                .iter()
                .all(|e| other.get(self.name(e)) == Some(e.status))
    }
}

impl PartialEq<BTreeMap<String, TestStatus>> for Statuses {
    fn eq(&self, other: &BTreeMap<String, TestStatus>) -> bool {
        self.len() == other.len() && other.iter().all(|(k, v)| self.get(k) == Some(*v))
    }
}

impl serde::Serialize for Statuses {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.sorted())
    }
}

/// Accumulates `(name, status)` pairs while a parser walks a log.
///
/// Recording a name that was already recorded replaces its status, so **the last occurrence
/// of a test in the log wins**. This matches SWE-bench, whose parsers fill a dict line by line,
/// and it gives sensible results for logs that contain a progress line and a later summary
/// line for the same test (pytest `-v -rA`), or several runs of the same suite.
#[derive(Debug, Default)]
pub(crate) struct Collector {
    statuses: Statuses,
}

impl Collector {
    /// A collector sized for a log of `log_len` bytes (a guess of one test per 512 bytes, so
    /// large logs do not rehash the table over and over).
    pub(crate) fn for_log(log_len: usize) -> Self {
        Self::with_names((log_len / 512).min(1 << 20))
    }

    /// A collector sized for about `names` names.
    pub(crate) fn with_names(names: usize) -> Self {
        Collector {
            statuses: Statuses::with_capacity(names),
        }
    }

    /// A collector for a piece of `bytes` bytes of a log that may name a test on every short
    /// line (a summary): its name table and its names' arena sized for that at once, so
    /// neither is regrown (and copied into fresh pages) as it fills. Untouched capacity costs
    /// no memory.
    pub(crate) fn for_piece(bytes: usize) -> Self {
        let mut statuses = Statuses::with_capacity((bytes / 64).min(1 << 20));
        statuses.arena.reserve(bytes);
        Collector { statuses }
    }

    /// Records `status` for `name`; empty names are ignored.
    pub(crate) fn record(&mut self, name: impl AsRef<str>, status: TestStatus) {
        let name = name.as_ref();
        if !name.is_empty() {
            self.statuses.insert(name, status);
        }
    }

    /// The status recorded for `name` so far.
    pub(crate) fn get(&self, name: &str) -> Option<TestStatus> {
        self.statuses.get(name)
    }

    /// The result map.
    pub(crate) fn finish(self) -> Statuses {
        self.statuses
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
    if memchr::memchr2(0x1b, b'\r', bytes).is_none() {
        return Cow::Borrowed(log);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    // The text between escapes is copied a stretch at a time, each end found by memchr.
    while let Some(at) = memchr::memchr2(0x1b, b'\r', &bytes[i..]).map(|off| i + off) {
        out.extend_from_slice(&bytes[i..at]);
        i = if bytes[at] == b'\r' {
            at + 1
        } else {
            skip_escape(bytes, at)
        };
    }
    out.extend_from_slice(&bytes[i..]);
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

/// The starts of every ` (` in `s`, last first (`s.rmatch_indices(" (")`'s, which are all of
/// them: the two bytes cannot overlap themselves), found by memchr's search for `(` from the
/// end instead of a Two-Way searcher built for every line.
pub(crate) fn space_parens_back(s: &str) -> impl Iterator<Item = usize> + '_ {
    let b = s.as_bytes();
    memchr::memrchr_iter(b'(', b)
        .filter(move |&p| p > 0 && b[p - 1] == b' ')
        .map(|p| p - 1)
}

/// Splits a log into lines (on `\n`; `\r` was already removed by [`clean_log`]), finding
/// the line breaks with memchr's SIMD search.
pub(crate) fn lines(log: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    let mut ends = memchr::memchr_iter(b'\n', log.as_bytes());
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        match ends.next() {
            Some(end) => {
                // `\n` is ASCII, so both ends are char boundaries.
                let line = &log[start..end];
                start = end + 1;
                Some(line)
            }
            None => {
                done = true;
                Some(&log[start..])
            }
        }
    })
}

/// `count` random concatenations of `parts` (fewer than `most` of them each), from a fixed
/// xorshift `seed` moved on by `step` after each: the inputs on which the hand matchers' tests
/// hold them to the code or regex they replaced.
#[cfg(test)]
pub(crate) fn mixes<'a>(
    parts: &'a [&'a str],
    count: usize,
    most: u64,
    seed: u64,
    step: u64,
) -> impl Iterator<Item = String> + 'a {
    let mut state = seed;
    (0..count).map(move |_| {
        let mut s = String::new();
        for _ in 0..(state % most) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            s.push_str(parts[(state % parts.len() as u64) as usize]);
        }
        state = state.wrapping_mul(step).wrapping_add(1);
        s
    })
}

#[cfg(test)]
mod json_tests {
    use super::*;

    #[test]
    fn the_radix_sort_orders_names_byte_wise() {
        // Long shared prefixes, prefixes of one another, trailing and inner NULs, non-ASCII,
        // groups larger and smaller than the comparison-sort cutoff, and a seeded shuffle.
        let mut names: Vec<String> = Vec::new();
        for i in 0..3000u32 {
            let pkg = i % 7;
            names.push(format!(
                "tests/unit/pkg_{pkg:04}/test_module.py::TestClass::test_{i}"
            ));
            names.push(format!(
                "tests/unit/pkg_{pkg:04}/test_module.py::TestClass::test_{i}[p]"
            ));
        }
        let shared = "x".repeat(40);
        for k in 0..60 {
            names.push(format!("{shared}{}", "\0".repeat(k)));
            names.push(format!("{shared}\0é{k}"));
        }
        for k in 0..20 {
            names.push("a".repeat(k));
        }
        names.extend(["ÿ", "é", "\u{7f}", "zz", "z"].map(String::from));
        names.sort();
        names.dedup();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for i in (1..names.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            names.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let statuses: Statuses = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), [TestStatus::Pass, TestStatus::Fail][i % 2]))
            .collect();
        let got: Vec<&str> = statuses.sorted().into_iter().map(|(n, _)| n).collect();
        let mut want: Vec<&str> = names.iter().map(String::as_str).collect();
        want.sort_unstable();
        assert_eq!(got, want);
        for (n, s) in statuses.sorted() {
            assert_eq!(statuses.get(n), Some(s));
        }
    }

    #[test]
    fn the_status_json_is_serde_jsons_pretty_output_byte_for_byte() {
        let names = [
            "tests/a.py::test_x",
            "tests/a.py::test_p[a b - c]",
            "quote \" and backslash \\ inside",
            "control \u{1} \t \n chars",
            "non-ascii é ü 中 \u{7f}",
            "",
            // Past a vector's width, an escape last (or none: `\u{20}` needs none).
            "tests/a_long_module_name.py::test_ends_in_a_unit_separator\u{1f}",
            "tests/a_long_module_name.py::test_ends_in_a_backslash\\",
            "tests/a_long_module_name.py::test_ends_in_a_quote\"",
            "tests/a_long_module_name.py::test_ends_in_a_space ",
        ];
        let cases: Vec<Statuses> = vec![
            Statuses::default(),
            [("one".to_string(), TestStatus::Pass)]
                .into_iter()
                .collect(),
            names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let st = [TestStatus::Pass, TestStatus::Fail, TestStatus::Skip][i % 3];
                    (n.to_string(), st)
                })
                .collect(),
            // More than one 64 KiB write.
            (0..5000)
                .map(|i| (format!("tests/t.py::test_{i}[\"{i}\"]"), TestStatus::Pass))
                .collect(),
        ];
        for st in cases {
            let mut want = serde_json::to_vec_pretty(&st).unwrap();
            want.push(b'\n');
            let mut got = Vec::new();
            write_statuses_json(&st, &mut got).unwrap();
            assert_eq!(
                String::from_utf8(got).unwrap(),
                String::from_utf8(want).unwrap()
            );
        }
    }

    /// `clean_log` removes what the byte-at-a-time loop it replaced removed: every `\r` and
    /// each escape as `skip_escape` ends it, on random mixes of escapes, truncated escapes,
    /// CRLF, non-ASCII text and line breaks.
    #[test]
    fn clean_log_is_the_byte_loop() {
        fn by_bytes(log: &str) -> String {
            let bytes = log.as_bytes();
            let (mut out, mut i) = (Vec::new(), 0);
            while i < bytes.len() {
                match bytes[i] {
                    b'\r' => i += 1,
                    0x1b => i = skip_escape(bytes, i),
                    b => {
                        out.push(b);
                        i += 1;
                    }
                }
            }
            String::from_utf8(out).unwrap()
        }
        let parts = [
            "\x1b[32m",
            "\x1b[",
            "\x1b",
            "\x1b]8;;x\x07",
            "\x1b]8;;",
            "\x1b\\",
            "\x1b(B",
            "\x1b(",
            "\r\n",
            "\r",
            "\n",
            "a",
            "é",
            "✓",
            "[0m",
            " ",
            "\x1b[2K\x1b[1A",
            "\x1b[?25l",
        ];
        for s in mixes(
            &parts,
            20_000,
            12,
            0x9e37_79b9_7f4a_7c15,
            0x2545_f491_4f6c_dd1d,
        ) {
            assert_eq!(clean_log(&s), by_bytes(&s), "{s:?}");
        }
    }

    /// `space_parens_back` finds what `rmatch_indices(" (")` finds, in the same order.
    #[test]
    fn space_parens_back_are_rmatch_indices() {
        let parts = [" (", "(", " ", ")", "a", "é", "  ((", "( ("];
        for s in mixes(
            &parts,
            20_000,
            9,
            0x2545_f491_4f6c_dd1d,
            0x9e37_79b9_7f4a_7c15,
        ) {
            let want: Vec<usize> = s.rmatch_indices(" (").map(|(i, _)| i).collect();
            assert_eq!(space_parens_back(&s).collect::<Vec<_>>(), want, "{s:?}");
            assert_eq!(space_parens_back(&s).next(), s.rfind(" ("), "{s:?}");
        }
    }

    /// `lines` is `str::split('\n')` (the SWE-bench ports split so, as upstream does), SIMD
    /// search aside: the same pieces, an empty one at either end and between two breaks
    /// included, on edge cases and every fixture log.
    #[test]
    fn lines_split_exactly_as_split_on_newline() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs");
        let mut logs: Vec<String> = [
            "",
            "\n",
            "\n\n",
            "a",
            "a\n",
            "\na",
            "a\n\nb\n",
            "é\n€\r\n\u{1F600}",
            "\r\n\r",
        ]
        .map(String::from)
        .to_vec();
        for dir in fs_err::read_dir(root).expect("fixtures").flatten() {
            for file in fs_err::read_dir(dir.path()).into_iter().flatten().flatten() {
                let bytes = fs_err::read(file.path()).expect("log");
                logs.push(String::from_utf8_lossy(&bytes).into_owned());
            }
        }
        assert!(logs.len() > 100);
        for log in &logs {
            assert!(lines(log).eq(log.split('\n')), "{log:?}");
        }
    }
}
