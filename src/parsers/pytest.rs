//! pytest console logs: the `-rA` "short test summary info" block and `-v` progress lines.
//!
//! # Lines read
//!
//! * Summary lines, at the start of a line: `PASSED <id>`, `FAILED <id> - <message>`,
//!   `ERROR <id> - <message>`, `XFAIL <id> - <reason>`, `XPASS <id> - <reason>`,
//!   `SKIPPED <id> …`. pytest's usual `SKIPPED [1] tests/x.py:4: reason` form names no test
//!   and is ignored (SWE-bench's `parse_log_pytest` records it under the bogus key `[1]`;
//!   bench does not reproduce that quirk in either mapping, because that key can never match a
//!   test name).
//! * Verbose progress lines: `<id> PASSED  [ 14%]`, `<id> SKIPPED (reason)  [ 28%]`,
//!   `<id> XFAIL (reason)`, … (the percentage is optional). The id must contain `::`.
//! * pytest-xdist progress lines: `[gw0] [ 50%] PASSED <id>`, read like summary lines.
//!
//! The test id is the pytest node id exactly as printed, e.g.
//! `tests/test_x.py::TestK::test_p[a b]`. It ends at the first whitespace that is not inside
//! `[…]`, so parametrized ids may contain spaces, brackets and ` - `; pytest prints non-ASCII
//! characters of parameter ids escaped (`test_p[\xe9]`) and non-ASCII function names as they
//! are, and both are kept verbatim. SWE-bench instead takes the first whitespace-separated
//! word, which truncates ids containing spaces.
//!
//! * A status alone on its line (`SKIPPED (reason)`, `PASSED`): with `-s`, pytest prints a
//!   test's output between its id and its status, so the id line (`<id> <output>`) and the
//!   status come apart; such a status belongs to the last line before it (and after the last
//!   named test) that starts with a node id.
//! * `SKIPPED [N] path:line: reason` summary lines name no test; where the log holds the ids of
//!   that file's tests at the start of `-v` lines and exactly as many of them are still without
//!   a status as the summary counts skips not yet named, those tests are skipped. Otherwise
//!   (a `-rA` log without `-v`: the ids are nowhere) nothing is named.
//!
//! A test usually appears twice (progress line, then summary line); the later line wins, so
//! the summary decides. A test whose teardown errors shows `PASSED` and then `ERROR`, and ends
//! up failed.
//!
//! # Status mapping
//!
//! | pytest  | `pytest` (SWE-bench-Live) | `pytest-swebench` (SWE-bench) |
//! |---------|---------------------------|-------------------------------|
//! | PASSED  | pass                      | pass                          |
//! | FAILED  | fail                      | fail                          |
//! | ERROR   | fail                      | fail                          |
//! | SKIPPED | skip                      | skip                          |
//! | XFAIL   | fail                      | pass                          |
//! | XPASS   | pass                      | skip                          |
//!
//! `pytest` reproduces SWE-bench-Live's `default_pytest_parser` (status contains "pass" →
//! pass, contains "skip" → skip, else fail). `pytest-swebench` reproduces SWE-bench's grading,
//! where `PASSED`/`XFAIL` count as passed, `FAILED`/`ERROR` as failed, and anything else
//! (`SKIPPED`, `XPASS`) as neither — which is what `skip` means to a grader.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, Input, Span, packed};

use super::common::{Collector, TestStatus};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Passed,
    Failed,
    Skipped,
    Error,
    Xfail,
    Xpass,
}

fn live_status(outcome: Outcome) -> TestStatus {
    match outcome {
        Outcome::Passed | Outcome::Xpass => TestStatus::Pass,
        Outcome::Skipped => TestStatus::Skip,
        Outcome::Failed | Outcome::Error | Outcome::Xfail => TestStatus::Fail,
    }
}

fn swebench_status(outcome: Outcome) -> TestStatus {
    match outcome {
        Outcome::Passed | Outcome::Xfail => TestStatus::Pass,
        Outcome::Failed | Outcome::Error => TestStatus::Fail,
        Outcome::Skipped | Outcome::Xpass => TestStatus::Skip,
    }
}

/// The `pytest` parser (SWE-bench-Live mapping).
pub(crate) fn parse_live(log: &str, out: &mut Collector) {
    parse_with(log, out, live_status);
}

/// The `pytest-swebench` parser (SWE-bench mapping).
pub(crate) fn parse_swebench(log: &str, out: &mut Collector) {
    parse_with(log, out, swebench_status);
}

const STATUS_WORDS: [&str; 6] = ["PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL", "XPASS"];

/// Finds status words: every line that names a test holds one (at its start, before its
/// `(reason)`, or at its end). Teddy (SIMD, all six words at once) where the CPU has it,
/// else an Aho-Corasick automaton.
enum StatusWords {
    Teddy(packed::Searcher),
    Automaton(AhoCorasick),
}

impl StatusWords {
    fn get() -> &'static StatusWords {
        static WORDS: OnceLock<StatusWords> = OnceLock::new();
        WORDS.get_or_init(|| match packed::Searcher::new(STATUS_WORDS) {
            Some(s) => StatusWords::Teddy(s),
            None => StatusWords::Automaton(
                AhoCorasick::new(STATUS_WORDS)
                    .unwrap_or_else(|e| panic!("invalid built-in patterns: {e}")),
            ),
        })
    }

    /// The span of the first status word in `bytes[at..]`.
    fn find(&self, bytes: &[u8], at: usize) -> Option<(usize, usize)> {
        let m = match self {
            StatusWords::Teddy(s) => s.find_in(bytes, Span::from(at..bytes.len())),
            StatusWords::Automaton(a) => a.find(Input::new(bytes).span(at..bytes.len())),
        }?;
        Some((m.start(), m.end()))
    }
}

/// Reads only the lines that hold a status word, found by one SIMD scan of the log (most
/// lines of a pytest log are captured output and tracebacks); each such line is parsed once,
/// in log order, exactly as a line-by-line walk would.
fn parse_with(log: &str, out: &mut Collector, map: fn(Outcome) -> TestStatus) {
    let bytes = log.as_bytes();
    let words = StatusWords::get();
    let mut at = 0;
    // The end of the last line that named a test: a `-s` test's id line comes after it.
    let mut named_end = 0;
    // Where the last search for a `-s` id line started without finding one: nothing before
    // it is searched again (each byte of the log is searched at most once).
    let mut searched_to = 0;
    // `SKIPPED [N] path:line: reason` summary lines: (path, N).
    let mut skip_summaries: Vec<(&str, usize)> = Vec::new();
    while at < bytes.len() {
        let Some((m_start, m_end)) = words.find(bytes, at) else {
            break;
        };
        // `at` is a line start, so the line holding the match starts at or after it.
        let start = memchr::memrchr(b'\n', &bytes[at..m_start]).map_or(at, |i| at + i + 1);
        let end = memchr::memchr(b'\n', &bytes[m_end..]).map_or(bytes.len(), |i| m_end + i);
        // `\n` is ASCII, so both ends are char boundaries.
        let line = &log[start..end];
        if let Some(outcome) = late_status(line) {
            match last_id_line(&log[named_end.max(searched_to)..start]) {
                Some(name) => {
                    out.record(name, map(outcome));
                    named_end = end;
                }
                None => searched_to = start,
            }
        } else if let Some((name, outcome)) = parse_line(line) {
            out.record(name, map(outcome));
            named_end = end;
        } else if let Some(found) = skip_summary(line) {
            skip_summaries.push(found);
        }
        at = end + 1;
    }
    if !skip_summaries.is_empty() {
        name_summarised_skips(log, &skip_summaries, out, map);
    }
}

/// A status alone on its line, as `pytest -v -s` prints it after a test's output
/// (`SKIPPED (reason)`, `PASSED`, optionally `[ NN%]`): its outcome.
fn late_status(line: &str) -> Option<Outcome> {
    let mut s = line.trim_end();
    if s.ends_with("%]") {
        let open = s.rfind('[')?;
        let pct = s[open + 1..s.len() - 2].trim_start();
        if pct.is_empty() || !pct.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s = s[..open].trim_end();
    }
    let (word, rest) = s.split_once(' ').unwrap_or((s, ""));
    let outcome = match word {
        "PASSED" => Outcome::Passed,
        "FAILED" => Outcome::Failed,
        "SKIPPED" => Outcome::Skipped,
        "ERROR" => Outcome::Error,
        "XFAIL" => Outcome::Xfail,
        "XPASS" => Outcome::Xpass,
        _ => return None,
    };
    let rest = rest.trim();
    (rest.is_empty() || (rest.starts_with('(') && rest.ends_with(')'))).then_some(outcome)
}

/// The last line of `region` that starts with a node id (`path::name`, then a space or the
/// end): the `-v` line of a test whose status came on a later line (an earlier one may be a
/// test whose status never came on a line of its own).
fn last_id_line(region: &str) -> Option<&str> {
    region.rsplit('\n').find_map(|line| {
        let first = line.as_bytes().first()?;
        if first.is_ascii_whitespace() {
            return None;
        }
        let id = node_id_prefix(line);
        (has_double_colon(id) && !id.ends_with("::")).then_some(id)
    })
}

/// `SKIPPED [N] path:line: reason` → (path, N).
fn skip_summary(line: &str) -> Option<(&str, usize)> {
    let rest = line.strip_prefix("SKIPPED [")?;
    let close = rest.find("] ")?;
    let n: usize = rest[..close].parse().ok()?;
    let place = &rest[close + 2..];
    // `path:line:`: the path ends at the last `:<digits>:` before the reason.
    let colon = place.find(": ")?;
    let (path, line_no) = place[..colon].rsplit_once(':')?;
    (!path.is_empty() && !line_no.is_empty() && line_no.bytes().all(|b| b.is_ascii_digit()))
        .then_some((path, n))
}

/// pytest's `-rA` summary names a skipped test only by `path:line`. Where the log holds the
/// ids of that file's tests at the start of their `-v` lines and exactly as many of them lack
/// a status as the summary counts skips not yet named, those are the skipped ones. Anything
/// less certain names nothing. One pass over the log collects the ids of every summarised
/// path at once.
fn name_summarised_skips(
    log: &str,
    summaries: &[(&str, usize)],
    out: &mut Collector,
    map: fn(Outcome) -> TestStatus,
) {
    use std::collections::{BTreeMap, HashMap};
    let mut by_path: BTreeMap<&str, usize> = BTreeMap::new();
    for (path, n) in summaries {
        *by_path.entry(path).or_default() += n;
    }
    let mut ids_of: HashMap<&str, Vec<&str>> = by_path.keys().map(|p| (*p, Vec::new())).collect();
    for line in super::common::lines(log) {
        if line.as_bytes().first().is_none_or(u8::is_ascii_whitespace) {
            continue;
        }
        let id = node_id_prefix(line);
        // The line starts with `path::` for a summarised path: each `::` in the id (not at
        // its end) may end one.
        let bytes = id.as_bytes();
        for colon in memchr::memchr_iter(b':', bytes) {
            if bytes.get(colon + 1) != Some(&b':') || colon + 2 >= bytes.len() {
                continue;
            }
            if let Some(ids) = ids_of.get_mut(&id[..colon]) {
                ids.push(id);
            }
        }
    }
    for (path, skipped) in by_path {
        let mut ids = ids_of.remove(path).unwrap_or_default();
        ids.sort_unstable();
        ids.dedup();
        let named_skips = ids
            .iter()
            .filter(|id| out.get(id) == Some(map(Outcome::Skipped)))
            .count();
        let unnamed: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|id| out.get(id).is_none())
            .collect();
        if !unnamed.is_empty() && named_skips + unnamed.len() == skipped {
            for id in unnamed {
                out.record(id, map(Outcome::Skipped));
            }
        }
    }
}

fn parse_line(line: &str) -> Option<(&str, Outcome)> {
    match line.as_bytes().first()? {
        b'P' | b'F' | b'E' | b'S' | b'X' => {
            if let Some(found) = summary_line(line) {
                return Some(found);
            }
        }
        b'[' => return summary_line(strip_xdist_prefix(line)?),
        _ => {}
    }
    verbose_line(line)
}

/// The status word `line` starts with, followed by a space: its length and outcome.
/// Dispatches on the first byte, so each line costs one constant-length comparison.
fn leading_word(line: &[u8]) -> Option<(usize, Outcome)> {
    let (len, outcome) = match line.first()? {
        b'P' if line.starts_with(b"PASSED") => (6, Outcome::Passed),
        b'F' if line.starts_with(b"FAILED") => (6, Outcome::Failed),
        b'S' if line.starts_with(b"SKIPPED") => (7, Outcome::Skipped),
        b'E' if line.starts_with(b"ERROR") => (5, Outcome::Error),
        b'X' if line.starts_with(b"XFAIL") => (5, Outcome::Xfail),
        b'X' if line.starts_with(b"XPASS") => (5, Outcome::Xpass),
        _ => return None,
    };
    (line.get(len) == Some(&b' ')).then_some((len, outcome))
}

/// The status word `s` ends with, preceded by a space: its length and outcome.
fn trailing_word(s: &[u8]) -> Option<(usize, Outcome)> {
    let (len, outcome) = match s.last()? {
        b'D' if s.ends_with(b"PASSED") => (6, Outcome::Passed),
        b'D' if s.ends_with(b"FAILED") => (6, Outcome::Failed),
        b'D' if s.ends_with(b"SKIPPED") => (7, Outcome::Skipped),
        b'R' if s.ends_with(b"ERROR") => (5, Outcome::Error),
        b'L' if s.ends_with(b"XFAIL") => (5, Outcome::Xfail),
        b'S' if s.ends_with(b"XPASS") => (5, Outcome::Xpass),
        _ => return None,
    };
    (s.len() > len && s[s.len() - len - 1] == b' ').then_some((len, outcome))
}

/// `STATUS <id>[ - message]`.
fn summary_line(line: &str) -> Option<(&str, Outcome)> {
    let (len, outcome) = leading_word(line.as_bytes())?;
    let rest = line[len + 1..].trim_start();
    if outcome == Outcome::Skipped && is_count_marker(rest) {
        return None;
    }
    let name = node_id_prefix(rest);
    if name.is_empty() || name.starts_with('(') {
        return None;
    }
    Some((name, outcome))
}

/// `[N] ` as in `SKIPPED [2] tests/x.py:4: reason`.
fn is_count_marker(rest: &str) -> bool {
    let Some(inner) = rest.strip_prefix('[') else {
        return false;
    };
    let digits = inner.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && inner.as_bytes().get(digits) == Some(&b']')
}

/// The node id at the start of `rest`: up to the first whitespace outside `[…]`. If the
/// brackets never balance, up to the first ` - ` (or the whole trimmed rest).
fn node_id_prefix(rest: &str) -> &str {
    // Fast path: most ids have no brackets, so the first space or tab ends them.
    let bytes = rest.as_bytes();
    let from = match memchr::memchr3(b' ', b'\t', b'[', bytes) {
        None => return rest.trim_end(),
        Some(i) if bytes[i] != b'[' => return &rest[..i],
        Some(i) => i,
    };
    let mut depth: usize = 0;
    for (i, b) in bytes.iter().copied().enumerate().skip(from) {
        match b {
            b'[' => depth += 1,
            b']' => depth = depth.saturating_sub(1),
            b' ' | b'\t' if depth == 0 => return &rest[..i],
            _ => {}
        }
    }
    if depth == 0 {
        rest.trim_end()
    } else {
        rest.split(" - ").next().unwrap_or(rest).trim_end()
    }
}

/// `[gw3] [ 50%] PASSED <id>` → `PASSED <id>`.
fn strip_xdist_prefix(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("[gw")?;
    let rest = &rest[rest.find("] ")? + 2..];
    let rest = rest.trim_start();
    if rest.starts_with('[')
        && let Some(end) = rest.find("%]")
    {
        return Some(rest[end + 2..].trim_start());
    }
    Some(rest)
}

/// `<id> STATUS[ (reason)][ [ NN%]]`.
fn verbose_line(line: &str) -> Option<(&str, Outcome)> {
    let mut s = match line.as_bytes().last() {
        Some(b) if b.is_ascii() && !b.is_ascii_whitespace() => line,
        _ => line.trim_end(),
    };
    // Fast reject: the line must end with a status word, a `(reason)` or a `[ NN%]`.
    if !matches!(
        s.as_bytes().last(),
        Some(b'D' | b'R' | b'L' | b'S' | b')' | b']')
    ) {
        return None;
    }
    if s.ends_with("%]") {
        let open = s.rfind('[')?;
        let pct = s[open + 1..s.len() - 2].trim_start();
        if pct.is_empty() || !pct.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s = s[..open].trim_end();
    }
    let (name, outcome) = if s.ends_with(')') {
        reason_start(s)?
    } else {
        let (len, outcome) = trailing_word(s.as_bytes())?;
        (&s[..s.len() - len - 1], outcome)
    };
    let name = name.trim_end();
    let first = name.as_bytes().first()?;
    if first.is_ascii_whitespace() || !has_double_colon(name) {
        return None;
    }
    Some((name, outcome))
}

/// In `<id> WORD (reason)`, the first ` WORD (` (WORD a status word): the id before it and
/// the outcome. Each `(` preceded by a space is checked, leftmost first; two such patterns
/// cannot overlap, so the leftmost `(` gives the leftmost pattern.
fn reason_start(s: &str) -> Option<(&str, Outcome)> {
    let bytes = s.as_bytes();
    memchr::memchr_iter(b'(', bytes).find_map(|open| {
        let before = bytes[..open].strip_suffix(b" ")?;
        let (len, outcome) = trailing_word(before)?;
        Some((&s[..before.len() - len - 1], outcome))
    })
}

/// `name.contains("::")` without building a substring searcher per call.
fn has_double_colon(name: &str) -> bool {
    let bytes = name.as_bytes();
    memchr::memchr_iter(b':', bytes).any(|i| bytes.get(i + 1) == Some(&b':'))
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn node_ids_keep_spaces_inside_brackets() {
        assert_eq!(node_id_prefix("a.py::t[a b] - msg"), "a.py::t[a b]");
        assert_eq!(node_id_prefix("a.py::t[a - b] - msg"), "a.py::t[a - b]");
        assert_eq!(node_id_prefix("a.py::t[x[1]]"), "a.py::t[x[1]]");
        assert_eq!(node_id_prefix("a.py::t[a[ - msg"), "a.py::t[a[");
    }

    /// The pytest logs of tests/fixtures/logs (both mappings' folders).
    fn fixture_logs() -> Vec<String> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs");
        ["pytest", "pytest-swebench"]
            .iter()
            .flat_map(|d| fs_err::read_dir(root.join(d)).into_iter().flatten())
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .map(|p| fs_err::read_to_string(p).expect("fixture"))
            .collect()
    }

    /// The status-word scan finds exactly the records of a walk over every line.
    #[test]
    fn scanning_for_status_words_reads_every_named_line() {
        let mut logs = fixture_logs();
        logs.push(
            "PASSED a.py::t\nFAILEDa.py::u PASSED\nxPASSED\n\nb.py::v ERROR\nb.py::w PASSED".into(),
        );
        logs.push("c.py::x SKIPPED (why) [ 5%]\n[gw0] [ 9%] XPASS c.py::y - r\n".into());
        assert!(logs.len() > 3);
        for log in logs {
            let walk: Vec<(&str, Outcome)> = super::super::common::lines(&log)
                .filter_map(parse_line)
                .collect();
            let mut scan = Collector::default();
            parse_with(&log, &mut scan, live_status);
            let mut want = Collector::default();
            for (name, outcome) in walk {
                want.record(name, live_status(outcome));
            }
            // The scan names what the walk names, the same way; it names more only from
            // statuses on lines of their own and `SKIPPED [N]` summaries (capture-off logs).
            let (scan, want) = (scan.finish(), want.finish());
            for (name, status) in want.sorted() {
                assert_eq!(scan.get(name), Some(status), "{name}");
            }
            if !log.contains("\nSKIPPED (") && !log.contains("\nPASSED\n") {
                assert_eq!(scan, want);
            }
        }
    }

    /// `-s` logs: a status on a line of its own belongs to the test whose id line came last;
    /// a `SKIPPED [N] path:line` summary names tests only when the count leaves no doubt.
    #[test]
    fn late_statuses_and_summarised_skips() {
        let run = |log: &str| {
            let mut out = Collector::default();
            parse_with(log, &mut out, live_status);
            out.finish().to_btree()
        };
        let got =
            run("a.py::t1 out\nmore\nSKIPPED (why)\na.py::t2 x\na.py::t3 yPASSED\nPASSED [ 50%]\n");
        assert_eq!(got.get("a.py::t1"), Some(&TestStatus::Skip));
        assert_eq!(got.get("a.py::t3"), Some(&TestStatus::Pass));
        assert_eq!(got.get("a.py::t2"), None);
        // One skip summarised, one id without a status: that one.
        let log = "a.py::t1 PASSED\na.py::t2 gluedSKIPPED (r)\nSKIPPED [1] a.py:9: r\n";
        assert_eq!(run(log).get("a.py::t2"), Some(&TestStatus::Skip));
        // Two ids without a status for one summarised skip: nothing is guessed.
        let log = "a.py::t1 oops\na.py::t2 gluedSKIPPED (r)\nSKIPPED [1] a.py:9: r\n";
        assert!(run(log).is_empty(), "{:?}", run(log));
        // No `-v` lines: the ids are nowhere.
        assert!(run("SKIPPED [2] a.py:9: r\n").is_empty());
        assert_eq!(
            skip_summary("SKIPPED [12] d/a b.py:9: r: s"),
            Some(("d/a b.py", 12))
        );
        assert_eq!(late_status("XFAIL (known)"), Some(Outcome::Xfail));
        assert_eq!(late_status("PASSED output"), None);
    }

    /// The parser before it was made linear (a rescan of the log per summarised path, and of
    /// the region since the last named test per status on a line of its own): the reference
    /// the one-pass parser must agree with.
    fn parse_by_rescanning(log: &str, out: &mut Collector) {
        let mut named_end = 0;
        let mut summaries: Vec<(&str, usize)> = Vec::new();
        let mut start = 0;
        for line in super::super::common::lines(log) {
            let end = start + line.len();
            if let Some(outcome) = late_status(line) {
                if let Some(name) = last_id_line(&log[named_end..start]) {
                    out.record(name, live_status(outcome));
                    named_end = end;
                }
            } else if let Some((name, outcome)) = parse_line(line) {
                out.record(name, live_status(outcome));
                named_end = end;
            } else if let Some(found) = skip_summary(line) {
                summaries.push(found);
            }
            start = end + 1;
        }
        let mut by_path: std::collections::BTreeMap<&str, usize> = Default::default();
        for (path, n) in summaries {
            *by_path.entry(path).or_default() += n;
        }
        for (path, skipped) in by_path {
            let prefix = format!("{path}::");
            let mut ids: Vec<&str> = super::super::common::lines(log)
                .filter(|l| l.starts_with(&prefix))
                .map(node_id_prefix)
                .filter(|id| id.len() > prefix.len())
                .collect();
            ids.sort_unstable();
            ids.dedup();
            let named = ids
                .iter()
                .filter(|id| out.get(id) == Some(TestStatus::Skip));
            let unnamed: Vec<&str> = ids
                .iter()
                .copied()
                .filter(|id| out.get(id).is_none())
                .collect();
            if !unnamed.is_empty() && named.count() + unnamed.len() == skipped {
                for id in unnamed {
                    out.record(id, TestStatus::Skip);
                }
            }
        }
    }

    /// Logs that made the parser rescan: many files with summarised skips (some nameable,
    /// some not), `-s` statuses with and without an id line before them, ids that hold a
    /// path of their own (`a.py::K::t` under both `a.py` and `a.py::K`).
    #[test]
    fn one_pass_names_what_rescanning_named() {
        let mut log = String::new();
        for f in 0..60 {
            for t in 0..5 {
                let id = format!("d/t{f}.py::K::test_{t}[x {t}]");
                match (f + t) % 6 {
                    0 => log.push_str(&format!("{id} PASSED [ 1%]\n")),
                    1 => log.push_str(&format!("{id} output\nmore\nSKIPPED (why)\n")),
                    2 => log.push_str(&format!("{id} gluedSKIPPED (r)\n")),
                    3 => log.push_str("  noise\nPASSED\nXFAIL (late, no id)\n"),
                    4 => log.push_str(&format!("{id} FAILED\n")),
                    _ => log.push_str(&format!("{id} out\n")),
                }
            }
        }
        for f in 0..60 {
            log.push_str(&format!("SKIPPED [{}] d/t{f}.py:3: r\n", 1 + f % 3));
            if f % 7 == 0 {
                log.push_str(&format!("SKIPPED [1] d/t{f}.py::K:3: r\n"));
            }
        }
        let mut logs = fixture_logs();
        logs.push(log);
        let mut skips_named = 0;
        for log in &logs {
            let (mut fast, mut slow) = (Collector::default(), Collector::default());
            parse_with(log, &mut fast, live_status);
            parse_by_rescanning(log, &mut slow);
            let (fast, slow) = (fast.finish(), slow.finish());
            assert_eq!(fast, slow);
            skips_named += fast
                .sorted()
                .iter()
                .filter(|(_, s)| *s == TestStatus::Skip)
                .count();
        }
        // The generated log exercises both paths: it names skips from summaries and `-s` lines.
        assert!(skips_named > 20, "{skips_named}");
    }

    #[test]
    fn verbose_and_xdist_lines() {
        assert_eq!(
            parse_line("t.py::t SKIPPED (not now)          [ 50%]"),
            Some(("t.py::t", Outcome::Skipped))
        );
        assert_eq!(
            parse_line("t.py::t[a b] PASSED"),
            Some(("t.py::t[a b]", Outcome::Passed))
        );
        assert_eq!(
            parse_line("[gw1] [ 50%] XFAIL t.py::t - why"),
            Some(("t.py::t", Outcome::Xfail))
        );
        assert_eq!(parse_line("SKIPPED [1] t.py:4: reason"), None);
        assert_eq!(parse_line("FAILED (failures=1)"), None);
        assert_eq!(parse_line("collected 3 items PASSED"), None);
    }
}
