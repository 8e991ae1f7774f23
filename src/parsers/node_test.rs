//! node:test logs (`node --test`), from its default `spec` reporter (the default on a
//! terminal, and `--test-reporter=spec`) or its `tap` reporter, with tests named by their
//! path through `describe` blocks and parent tests, the same name from either reporter.
//!
//! ```text
//! ▶ outer
//!   ▶ middle
//!     ✖ leaf fails (1.84ms)
//!       AssertionError [ERR_ASSERTION]: …
//!     ✔ leaf passes (0.16ms)
//!   ✖ middle (2.74ms)
//!   ✔ todo passes (0.17ms) # later
//! ✖ outer (5.24ms)
//! ﹣ later (0.15ms) # not now
//! ℹ tests 4
//! …
//! ✖ failing tests:
//!
//! test at groups.test.mjs:6:5
//! ✖ leaf fails (1.84ms)
//! ```
//!
//! # Spec lines read (Node 20)
//!
//! A result line is the indentation (2 spaces per level), a mark, the test's name, its
//! duration ` (1.84ms)` and, for a skipped or todo test, ` # <reason>` (`# SKIP` / `# TODO`
//! without one). `✔` → pass, `✖` → fail, `﹣` → skip; a `✔` or `✖` line with a ` # …` after
//! the duration is a todo test → skip. The duration is found from the right, so a name may
//! contain ` # ` or parentheses. `▶ name` without a duration opens a group (a `describe` or
//! a test with subtests) whose children follow, indented one level more; the group's own
//! result line comes after them at the group's indentation.
//!
//! Failing tests are listed again after `✖ failing tests:` at the end of a run, with their
//! durations: there, a `✖` line equal to one already seen in the run (a failed todo test's
//! too) is skipped, so nothing is counted twice. Any other result line ends that list (a
//! second run's results).
//!
//! # TAP
//!
//! When the log's first `TAP version` line comes before its first spec result line, the log
//! is read as node:test's TAP: the `ok` / `not ok` lines as the `tap` parser reads them, with
//! each test's `# Subtest: <name>` comment (printed before it, at its indentation) opening it
//! as `▶` does.
//!
//! # Naming and groups
//!
//! A test's name is the names of its enclosing groups and its own, joined with ` > `:
//! `outer > middle > leaf fails`. Files are not part of it (node prints no file per test), so
//! equal paths in two files collide and the last one wins. A group (a `describe` block or a
//! parent test with subtests) is recorded too, under its own path, with the result node
//! prints for it: node fails a group when anything inside it failed, or when its own body or
//! an `after` hook threw (which the JUnit reporter loses: `failures="0"`). The spec reporter
//! cannot tell a `describe` block from a parent test, so bench counts both (bench's status
//! mapping, `docs/parsers.md`). Todo tests are skip, whether their body passed or failed.
//!
//! SWE-bench has no spec parser; its tap parser names tests by their description and counts
//! groups as tests.

use std::borrow::Cow;
use std::collections::HashSet;

use super::common::{Collector, TestStatus, lines};
use super::tap;

/// The separator between a group's name and its children's.
const SEPARATOR: &str = " > ";

/// An open group: a `▶ name` (spec) or `# Subtest: name` (TAP) line whose result line has
/// not come yet.
struct Frame<'a> {
    indent: usize,
    name: Cow<'a, str>,
}

/// The open groups, outermost first.
#[derive(Default)]
struct Tree<'a> {
    frames: Vec<Frame<'a>>,
}

impl<'a> Tree<'a> {
    fn close_deeper(&mut self, indent: usize) {
        while self.frames.last().is_some_and(|f| f.indent > indent) {
            self.frames.pop();
        }
    }

    fn open(&mut self, indent: usize, name: Cow<'a, str>) {
        self.close_deeper(indent);
        if self.frames.last().is_some_and(|f| f.indent == indent) {
            self.frames.pop();
        }
        self.frames.push(Frame { indent, name });
    }

    /// Records a result line under its path. A group (a `describe` block or a parent test)
    /// is a test too, with the result node gives it (anything failing inside it fails it).
    fn result(&mut self, indent: usize, name: &str, status: TestStatus, out: &mut Collector) {
        self.close_deeper(indent);
        // Its own group, or a stale one (opened, never finished) at the same level.
        if self.frames.last().is_some_and(|f| f.indent == indent) {
            self.frames.pop();
        }
        let mut full = String::new();
        for frame in &self.frames {
            full.push_str(&frame.name);
            full.push_str(SEPARATOR);
        }
        full.push_str(name);
        out.record(&full, status);
    }
}

/// A spec reporter line: indent, mark, and the text after the mark.
fn spec_line(line: &str) -> Option<(usize, char, &str)> {
    let t = line.trim_start_matches(' ');
    let mut chars = t.chars();
    let mark = chars.next()?;
    if !matches!(mark, '✔' | '✖' | '﹣' | '▶') {
        return None;
    }
    let text = chars.as_str().strip_prefix(' ')?;
    Some((line.len() - t.len(), mark, text))
}

/// Splits `name (1.5ms) # reason` into the name, whether a duration was found, and the text
/// after ` # ` that follows the duration. The duration is the last ` (<number>ms)` that is
/// followed by the end or by ` # `.
fn split_duration(text: &str) -> (&str, bool, Option<&str>) {
    let mut end = text.len();
    while let Some(open) = text[..end].rfind(" (") {
        let after = &text[open + 2..];
        if let Some(close) = after.find("ms)") {
            let number = &after[..close];
            let rest = &after[close + 3..];
            let numeric = !number.is_empty()
                && number.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                && number.bytes().next().is_some_and(|b| b.is_ascii_digit());
            if numeric && (rest.is_empty() || rest.starts_with(" # ")) {
                let directive = rest.strip_prefix(" # ");
                return (&text[..open], true, directive);
            }
        }
        end = open;
    }
    (text, false, None)
}

/// Whether the log is node:test TAP: a `TAP version` line comes before any spec result line
/// at the start of a line.
fn is_tap(log: &str) -> bool {
    for line in lines(log) {
        if line.trim_start().starts_with("TAP version ") {
            return true;
        }
        if spec_line(line).is_some_and(|(indent, _, _)| indent == 0) {
            return false;
        }
    }
    false
}

pub(crate) fn parse(log: &str, out: &mut Collector) {
    if is_tap(log) {
        parse_tap(log, out);
    } else {
        parse_spec(log, out);
    }
}

fn parse_tap(log: &str, out: &mut Collector) {
    let mut tree = Tree::default();
    for line in lines(log) {
        if let Some((indent, name)) = tap::subtest_header(line) {
            tree.open(indent, name);
        } else if let Some(result) = tap::result_line(line) {
            tree.result(result.indent, &result.name, result.status, out);
        }
    }
}

fn parse_spec(log: &str, out: &mut Collector) {
    let mut tree = Tree::default();
    // `✖` lines of the current run, to skip when "failing tests" lists them again.
    let mut failed_lines: HashSet<&str> = HashSet::new();
    let mut in_failing_list = false;
    for line in lines(log) {
        if line.is_ascii() {
            continue;
        }
        let Some((indent, mark, text)) = spec_line(line) else {
            continue;
        };
        if indent == 0 && mark == '✖' && text.trim_end() == "failing tests:" {
            in_failing_list = true;
            continue;
        }
        let trimmed = line.trim();
        if in_failing_list {
            if mark == '✖' && failed_lines.contains(trimmed) {
                continue;
            }
            in_failing_list = false;
            failed_lines.clear();
            tree = Tree::default();
        }
        if mark == '✖' {
            failed_lines.insert(trimmed);
        }
        let (name, timed, directive) = split_duration(text.trim_end());
        let status = match mark {
            '▶' if !timed => {
                tree.open(indent, Cow::Borrowed(name));
                continue;
            }
            // Node >= 22 prints a group's result line with the group mark.
            '▶' => TestStatus::Pass,
            '﹣' => TestStatus::Skip,
            _ if directive.is_some() => TestStatus::Skip,
            '✔' => TestStatus::Pass,
            _ => TestStatus::Fail,
        };
        tree.result(indent, name, status, out);
    }
}

#[cfg(test)]
mod tests {
    use super::split_duration;

    #[test]
    fn durations_are_found_from_the_right() {
        assert_eq!(split_duration("adds (1.07ms)"), ("adds", true, None));
        assert_eq!(
            split_duration("todo # with (2ms) hash (0.1ms) # TODO"),
            ("todo # with (2ms) hash", true, Some("TODO"))
        );
        assert_eq!(
            split_duration("later (0.15ms) # not now"),
            ("later", true, Some("not now"))
        );
        assert_eq!(split_duration("outer"), ("outer", false, None));
        assert_eq!(
            split_duration("f (x) (3ms) tail"),
            ("f (x) (3ms) tail", false, None)
        );
    }
}
