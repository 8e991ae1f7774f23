//! Python `unittest` verbose logs (`python -m unittest -v`), which is also what Django's
//! `runtests.py -v 2` / `manage.py test -v 2` print.
//!
//! # Lines read
//!
//! * `<description> ... <status>`, where status is `ok`, `FAIL`, `ERROR`, `skipped 'reason'`,
//!   `expected failure` or `unexpected success`. The description is the text before the first
//!   ` ... `, trimmed: `test_four (tests.test_roman.TestRoman.test_four)` (Python >= 3.11;
//!   older Pythons print `test_four (tests.test_roman.TestRoman)`).
//! * **Docstrings.** For a test with a docstring, unittest prints the test's id alone on one
//!   line and the docstring's first line before ` ... ` on the next
//!   (`test_x (m.C.test_x)` / `Checks the thing. ... ok`). A line that has the shape of an id
//!   (`<name> (<dotted.path>)`, an optional subtest suffix, no ` ... `) followed by a line with
//!   ` ... ` names the test; the second line only carries the status, found after its *last*
//!   ` ... ` (a docstring may contain ` ... ` itself). If the second line starts with an id of
//!   its own, the first was output, not an id. Python 3.11 to 3.14 print this form (3.14
//!   colours statuses and headers on a terminal; escapes are removed first, and 3.12's
//!   `--durations` table has no ` ... `); CPython PR #121704 (gh-91289, not merged) would
//!   print `Checks the thing. (m.C.test_x) ... ok` on one line instead, which this parser
//!   would name by the whole description.
//! * **Subtests.** A failing or skipped subtest prints an indented line of its own,
//!   `  test_x (m.C.test_x) (i=1) ... FAIL` (`[msg] (k=v)`, `[msg]` or `(<subtest>)` after the
//!   id), and its parent prints no status when a subtest failed. A subtest's result belongs to
//!   its **parent**: a failing subtest fails `test_x (m.C.test_x)`, a skipped one makes it
//!   skipped unless one of its subtests failed, and the subtest itself gets no name of its
//!   own. So a test keeps one stable name whether its subtests pass (`... ok` on its own line)
//!   or not.
//! * Output between ` ... ` and the status: when the test prints, the status arrives on a
//!   later line (`test_x (m.C.test_x) ... some output` … `ok`). bench remembers the name from
//!   a ` ... ` line without a status and gives it the status found on the next line that
//!   consists of a status alone. A separator line (`====…`, `----…`) or `Ran N tests` forgets
//!   it.
//! * Failure headers after a `====…` separator: `FAIL: <description>` and `ERROR: …` → fail,
//!   `UNEXPECTED SUCCESS: …` → pass, named by the whole description after the colon (a
//!   subtest's header fails its parent); the docstring line that may follow is ignored.
//!
//! # Status mapping
//!
//! bench's mapping (`docs/parsers.md`): what the test's body did. `ok` and `unexpected
//! success` → pass; `FAIL`, `ERROR` (in `setUp`, the test or `tearDown`) and `expected
//! failure` → fail; `skipped …` (in `setUp` too) → skip. unittest's own `wasSuccessful`
//! judges the run instead (an expected failure does not fail it, an unexpected success does).
//! A `setUpClass` or `setUpModule` error is reported by unittest under a pseudo-test of its
//! own (`setUpClass (m.C)` → fail); the tests it kept from running are not in the log.
//!
//! # Differences from SWE-bench's `parse_log_django`
//!
//! SWE-bench names a docstring'd test by its docstring line (so the test's id is missing and
//! tests sharing a docstring collide), reads `FAIL:` headers with `split()[1]` (the method name
//! only), treats only `ok` as a late status, and records failing subtests under their own
//! `(i=1)` names. The `swebench-*` parsers keep upstream's behaviour.

use std::collections::HashSet;
use std::sync::LazyLock;

use memchr::memmem;

use super::common::{Collector, TestStatus, lines};

/// The first ` ... ` in `line`, found by one searcher made once (`str::find` builds a
/// searcher on every call, and every line is searched).
fn find_dots(line: &str) -> Option<usize> {
    static DOTS: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(" ... "));
    DOTS.find(line.as_bytes())
}

/// The first ` (` in `desc` (`str::find(" (")` without building a searcher): the first `(`
/// with a space before it.
fn find_open(desc: &str) -> Option<usize> {
    let b = desc.as_bytes();
    memchr::memchr_iter(b'(', b)
        .find(|&i| i > 0 && b[i - 1] == b' ')
        .map(|i| i - 1)
}

fn status_word(text: &str) -> Option<TestStatus> {
    let t = text.trim();
    match t {
        // bench's status mapping (docs/parsers.md): what the test's body did, not what its
        // author expected of it.
        "ok" | "OK" | "unexpected success" => Some(TestStatus::Pass),
        "FAIL" | "ERROR" | "expected failure" => Some(TestStatus::Fail),
        _ if t == "skipped" || t.starts_with("skipped ") => Some(TestStatus::Skip),
        _ => None,
    }
}

fn is_separator(line: &str, ch: u8) -> bool {
    let t = line.trim_end();
    t.len() >= 20 && t.bytes().all(|b| b == ch)
}

/// Splits a description into the test's id and whether it names a subtest of it:
/// `test_x (m.C.test_x) (i=1)` → (`test_x (m.C.test_x)`, true). `None` when the description
/// does not start with an id (`<name> (<dotted.path>)`).
fn split_id(desc: &str) -> Option<(&str, bool)> {
    let open = find_open(desc)?;
    if open == 0 || desc[..open].contains(char::is_whitespace) {
        return None;
    }
    let inner_start = open + 2;
    let close = inner_start + desc[inner_start..].find(')')?;
    let path = &desc[inner_start..close];
    if path.is_empty()
        || !path
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
    {
        return None;
    }
    let id = &desc[..=close];
    let rest = &desc[close + 1..];
    if rest.is_empty() {
        return Some((id, false));
    }
    let subtest = (rest.starts_with(" (") || rest.starts_with(" ["))
        && (rest.ends_with(')') || rest.ends_with(']'));
    subtest.then_some((id, true))
}

/// Whether `line`, whose first ` ... ` is at `dots`, is an id alone (possibly a subtest's):
/// the first line of a docstring'd test's description.
fn is_id_line(line: &str, dots: Option<usize>) -> bool {
    dots.is_none() && split_id(line.trim()).is_some()
}

/// Records results, giving a subtest's result to its parent test.
struct Results<'a, 'c> {
    out: &'c mut Collector,
    /// Parents with a failing subtest: a later skipped subtest must not hide the failure.
    failed_parents: HashSet<&'a str, foldhash::fast::FixedState>,
}

impl<'a> Results<'a, '_> {
    fn record(&mut self, desc: &'a str, status: TestStatus) {
        match split_id(desc) {
            Some((parent, true)) => match status {
                TestStatus::Fail => {
                    self.failed_parents.insert(parent);
                    self.out.record(parent, TestStatus::Fail);
                }
                TestStatus::Skip if !self.failed_parents.contains(parent) => {
                    self.out.record(parent, TestStatus::Skip);
                }
                _ => {}
            },
            _ => self.out.record(desc, status),
        }
    }
}

pub(crate) fn parse(log: &str, out: &mut Collector) {
    let mut results = Results {
        out,
        failed_parents: HashSet::default(),
    };
    let mut pending: Option<&str> = None;
    // The line before and whether it is an id alone, each line searched once.
    let mut before: Option<(&str, bool)> = None;
    for line in lines(log) {
        let dots = find_dots(line);
        read_line(line, dots, before, &mut results, &mut pending);
        before = Some((line, is_id_line(line, dots)));
    }
}

/// Reads one line (its first ` ... ` at `dots`) given the line before it (and whether that is
/// an id alone) and the test still waiting for its status.
fn read_line<'a>(
    line: &'a str,
    dots: Option<usize>,
    before: Option<(&'a str, bool)>,
    results: &mut Results<'a, '_>,
    pending: &mut Option<&'a str>,
) {
    let id_before = before.filter(|&(_, id)| id).map(|(l, _)| l);
    // The second line of a docstring'd test: the id is on the line before.
    if let Some(id_line) = id_before
        && let Some(first) = dots
        && split_id(line[..first].trim()).is_none()
    {
        let id = id_line.trim();
        let last = line.rfind(" ... ").unwrap_or(first);
        match status_word(&line[last + 5..]) {
            Some(status) => {
                results.record(id, status);
                *pending = None;
            }
            None => *pending = Some(id),
        }
        return;
    }
    if let Some(idx) = dots {
        let name = line[..idx].trim();
        match status_word(&line[idx + 5..]) {
            Some(status) => {
                results.record(name, status);
                *pending = None;
            }
            None => *pending = (!name.is_empty()).then_some(name),
        }
        return;
    }
    let trimmed = line.trim_end();
    if let Some(text) = trimmed.strip_suffix(" ...") {
        // A docstring line whose status comes later, after the test's output.
        let name = match id_before {
            Some(id_line) if split_id(text.trim()).is_none() => id_line.trim(),
            _ => text.trim(),
        };
        *pending = (!name.is_empty()).then_some(name);
        return;
    }
    if is_separator(line, b'=') || is_separator(line, b'-') || line.starts_with("Ran ") {
        *pending = None;
        return;
    }
    if before.is_some_and(|(b, _)| is_separator(b, b'=')) {
        let header = line
            .strip_prefix("FAIL: ")
            .or_else(|| line.strip_prefix("ERROR: "))
            .map(|h| (h, TestStatus::Fail))
            .or_else(|| {
                line.strip_prefix("UNEXPECTED SUCCESS: ")
                    .map(|h| (h, TestStatus::Pass))
            });
        if let Some((header, status)) = header {
            results.record(header.trim(), status);
            return;
        }
    }
    if let Some(name) = *pending
        && let Some(status) = status_word(line)
    {
        results.record(name, status);
        *pending = None;
    }
}

#[cfg(test)]
mod tests {
    use super::split_id;

    #[test]
    fn ids_and_subtests() {
        assert_eq!(
            split_id("test_a (m.C.test_a)"),
            Some(("test_a (m.C.test_a)", false))
        );
        assert_eq!(split_id("test_a (m.C)"), Some(("test_a (m.C)", false)));
        for sub in [" (i=1)", " [msg] (k='v')", " [msg]", " (<subtest>)"] {
            let desc = format!("test_a (m.C.test_a){sub}");
            assert_eq!(
                split_id(&desc),
                Some(("test_a (m.C.test_a)", true)),
                "{desc}"
            );
        }
        assert_eq!(
            split_id("System check identified no issues (0 silenced)."),
            None
        );
        assert_eq!(split_id("test_a (m.C.test_a) and more"), None);
        assert_eq!(split_id("Doctest: m.f"), None);
        assert_eq!(
            split_id("test_ü (m.C.test_ü)"),
            Some(("test_ü (m.C.test_ü)", false))
        );
    }
}
