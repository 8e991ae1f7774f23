//! Vitest `--reporter=verbose` logs (v1–v4), as flat lines and as a tree.
//!
//! ```text
//!  ✓ src/sum.test.ts > sum > adds 1ms
//!  × src/sum.test.ts > sum > fails 3ms
//!  ↓ src/sum.test.ts > sum > later
//! ```
//!
//! ✓ (or `√`) → pass, × (or `✕`) → fail, ↓ → skip; a `test.todo` is printed with the skip mark
//! (vitest's `getStateSymbol` gives todo and skipped tests the same `↓`), so it is skip. The
//! name is the rest of the line as printed — the file and the `describe` titles joined with
//! ` > ` — so names are unique across files, without the suffixes vitest appends: the duration
//! (`1ms`, `12 ms`, `1.5s`), a retry or repeat count (`(retry x2)`, `(repeat x3)`; v3+ print
//! them after the duration, the v1/v2 tree before it), the heap figure (`12 MB heap used`,
//! `--logHeapUsage`) and the `[skipped]` marker. So a flaky test that passed on its third
//! attempt (`✓ a.test.ts > fetch > retries 40ms (retry x2)`) keeps its name. A skip note
//! (`↓ a > b [reason]`, from `context.skip('reason')`) stays part of the name: a bracketed
//! suffix cannot be told from a parameterised title such as `case [1, 2]`. A project name
//! prefix (`✓ |unit| a.test.ts > b`) stays part of the name, so two projects running one file
//! do not collide.
//!
//! File summary lines that use the same marks (`✓ src/sum.test.ts (3 tests | 1 skipped) 5ms`,
//! `✓ src/sum.test.ts (3)`, also after a `|project|` prefix) are ignored.
//!
//! # The tree
//!
//! On a terminal vitest prints a tree instead: in v1 and v2 the whole run's tree when it ends
//! (after the redrawn frames of the run, which the log's cleaning leaves
//! as plain lines), in v3+ each file's tree when the file ends. A file or suite line carries
//! the count of its tests, and each level is indented two more spaces:
//!
//! ```text
//!  ❯ src/sum.test.ts (4)
//!    ❯ sum (4)
//!      ✓ adds
//!      × fails
//!      ↓ later [skipped]
//!    ↓ parser (0) [skipped]
//! ```
//!
//! A line with a count whose next symbol line is indented deeper opens a group; a test line
//! below it is named as the flat lines name it, the groups above it and its own title joined
//! with ` > ` (`src/sum.test.ts > sum > later`). A suite line of no test (`describe.todo`
//! without a body, `(0)`) is not a test. The ` TS ` badge of a typecheck file is dropped, and
//! v3's coloured project label (`unit  src/a.test.ts` once the colours are gone) becomes
//! `|unit| src/a.test.ts`.
//! Lines of tasks without a result yet (`·`, a spinner) only place the groups; a tree
//! redrawn while running is read like the final one, which comes last and wins.
//!
//! # Tests a log does not name
//!
//! Off a terminal (a pipe, a file, `CI` set) vitest 1.x, 2.x, 3.0 and 3.1.0 print a flat line
//! only for a test that got a result: a `test.todo`, an `it.skip` and the tests of a
//! `describe.skip` or `describe.todo` never run, get none, and are not in the log (their
//! `@vitest/runner` `runTest` returns before reporting a test whose mode is not `run`); only
//! a test skipped while running (`context.skip()`) gets its `↓` line. From 3.1.1 every test is
//! reported, so todo and skipped tests have their `↓` lines. Such a log cannot name the tests
//! it leaves out; the tree of a terminal run names them all.
//!
//! SWE-bench's `parse_log_vitest` (vuejs/core) strips one trailing `12ms`, `12` or
//! `[skipped]` only: a bare trailing number leaves the name (`case 12` is named `case`), and a
//! decimal duration, a retry or repeat count or the heap figure stays in it; a tree line is
//! named by its own title only, and a coloured log (a terminal's) gives nothing, as upstream
//! strips no colour code. The `swebench-*` parsers keep upstream's behaviour.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::Regex;

use super::common::{Collector, TestStatus, lines};

/// A test's text without the suffixes vitest appends.
fn name_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"^(.+?)",
            // v1/v2 tree order: retry, [skipped], repeat, duration, heap.
            r"(?:\s+\(retry x\d+\))?(?:\s+\[skipped\])?(?:\s+\(repeat x\d+\))?",
            r"(?:\s+\d+(?:\.\d+)?\s*m?s)?",
            // v3+ order: duration (above), retry, repeat, heap, note.
            r"(?:\s+\(retry x\d+\))?(?:\s+\(repeat x\d+\))?",
            r"(?:\s+\d+ MB heap used)?(?:\s+\[skipped\])?$",
        ))
        .unwrap_or_else(|e| panic!("invalid built-in regex: {e}"))
    })
}

/// A file or suite line: the name, then the count of its tests (`(3)` in a tree, `(3 tests |
/// 1 skipped)` on a file's summary line), `[skipped]`, the duration and the heap figure.
fn group_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"^(.+?)\s+\((\d+)(?: tests?(?: \| [^)]*)?)?\)",
            r"(?:\s+\[skipped\])?(?:\s+\d+(?:\.\d+)?\s*m?s)?(?:\s+\d+ MB heap used)?$",
        ))
        .unwrap_or_else(|e| panic!("invalid built-in regex: {e}"))
    })
}

/// One line that starts with one of vitest's state symbols, then white space: its
/// indentation, the symbol and the rest (trimmed, not empty). Besides the result marks: `❯` (a
/// failed or running suite), `·` (a task without a result yet) and the braille spinner frames
/// of a running task, which only place a tree's groups.
struct Row<'a> {
    indent: usize,
    mark: char,
    text: &'a str,
}

fn row(line: &str) -> Option<Row<'_>> {
    let body = line.trim_start();
    let mark = body.chars().next()?;
    if !matches!(
        mark,
        '✓' | '√' | '×' | '✕' | '↓' | '❯' | '·' | '\u{2800}'..='\u{28FF}'
    ) {
        return None;
    }
    let rest = &body[mark.len_utf8()..];
    let text = rest.trim_start();
    if text.len() == rest.len() {
        return None;
    }
    let text = text.trim_end();
    (!text.is_empty()).then(|| Row {
        indent: line[..line.len() - body.len()].chars().count(),
        mark,
        text,
    })
}

fn rows(log: &str) -> Vec<Row<'_>> {
    lines(log)
        // Cheap pre-filter: every symbol is a non-ASCII character.
        .filter(|line| !line.is_ascii())
        .filter_map(row)
        .collect()
}

fn status(mark: char) -> Option<TestStatus> {
    match mark {
        '✓' | '√' => Some(TestStatus::Pass),
        '×' | '✕' => Some(TestStatus::Fail),
        '↓' => Some(TestStatus::Skip),
        _ => None,
    }
}

/// The name a test's (trimmed) text gives once the suffixes are removed.
fn test_name(text: &str) -> &str {
    // Every suffix ends in `s` (a duration), `)`, `]` or `d` (`… heap used`).
    if !text.ends_with(['s', ')', ']', 'd']) {
        return text;
    }
    let name = match first_split(text, |rest| name_suffixes(rest, 0).map(|m| m.then_some(()))) {
        Ok(Some((at, ()))) => &text[..at],
        Ok(None) => text,
        Err(Unsure) => name_re()
            .captures(text)
            .and_then(|c| c.get(1))
            .map_or(text, |m| m.as_str()),
    };
    name.trim()
}

/// A file or suite line's name and the count of tests it shows; `None` for a line without a
/// count.
fn group(text: &str) -> Option<(&str, u64)> {
    if !text.contains('(') {
        return None;
    }
    let (name, count) = match first_split(text, group_rest) {
        Ok(found) => {
            let (at, digits) = found?;
            (&text[..at], digits)
        }
        Err(Unsure) => {
            let c = group_re().captures(text)?;
            (c.get(1)?.as_str(), c.get(2)?.as_str())
        }
    };
    Some((name.trim(), count.parse().ok()?))
}

/// A hand matcher met a character it does not decide (a non-ASCII one where the regex asks for
/// `\d`, which is Unicode's decimal digits): the regex answers instead.
struct Unsure;

/// The regexes' `^(.+?)` then a rest that starts with `\s+`: the first split after the first
/// character, at a white space character, whose rest `rest` matches (with what it found), as
/// the lazy `.+?` takes the shortest prefix that lets the rest match. Hand-written for the
/// regexes above (`name_re`, `group_re`), held to them by the tests below.
fn first_split<'a, T>(
    text: &'a str,
    rest: impl Fn(&'a str) -> Result<Option<T>, Unsure>,
) -> Result<Option<(usize, T)>, Unsure> {
    let mut chars = text.char_indices();
    chars.next();
    for (at, c) in chars {
        if c.is_whitespace()
            && let Some(found) = rest(&text[at..])?
        {
            return Ok(Some((at, found)));
        }
    }
    Ok(None)
}

/// `s` after `\s+` (at least one white space character); `None` if it does not start so.
fn after_space(s: &str) -> Option<&str> {
    let rest = s.trim_start();
    (rest.len() < s.len()).then_some(rest)
}

/// The ASCII digits `\d+` takes at the start of `s` and the rest; `Err` at a non-ASCII
/// character that may be a Unicode digit, `None` without a digit.
fn digits(s: &str) -> Result<Option<(&str, &str)>, Unsure> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if s[end..]
        .chars()
        .next()
        .is_some_and(|c| !c.is_ascii() && c.is_numeric())
    {
        return Err(Unsure);
    }
    Ok((end > 0).then(|| s.split_at(end)))
}

/// `\d+(?:\.\d+)?\s*m?s` (a duration) at the start of `s`: the rest after it.
fn duration(s: &str) -> Result<Option<&str>, Unsure> {
    let Some((_, mut rest)) = digits(s)? else {
        return Ok(None);
    };
    if let Some(fraction) = rest.strip_prefix('.')
        && let Some((_, after)) = digits(fraction)?
    {
        rest = after;
    }
    let rest = rest.trim_start();
    let rest = rest.strip_prefix('m').unwrap_or(rest);
    Ok(rest.strip_prefix('s'))
}

/// `\d+ MB heap used` at the start of `s`: the rest after it.
fn heap(s: &str) -> Result<Option<&str>, Unsure> {
    Ok(digits(s)?.and_then(|(_, rest)| rest.strip_prefix(" MB heap used")))
}

/// `\(retry x\d+\)` (or `repeat`) at the start of `s`: the rest after it.
fn count_of<'a>(s: &'a str, word: &str) -> Result<Option<&'a str>, Unsure> {
    let Some(rest) = s.strip_prefix(word) else {
        return Ok(None);
    };
    Ok(digits(rest)?.and_then(|(_, rest)| rest.strip_prefix(')')))
}

/// One of `name_re`'s optional suffixes (its slot `slot`) at the start of `s`: the rest after it.
fn name_suffix(s: &str, slot: usize) -> Result<Option<&str>, Unsure> {
    match slot {
        0 | 4 => count_of(s, "(retry x"),
        1 | 7 => Ok(s.strip_prefix("[skipped]")),
        2 | 5 => count_of(s, "(repeat x"),
        3 => duration(s),
        _ => heap(s),
    }
}

/// Whether `s` is a sequence of `name_re`'s suffixes from slot `from` on, each after `\s+`,
/// to the end.
fn name_suffixes(s: &str, from: usize) -> Result<bool, Unsure> {
    suffixes(s, from, 8, name_suffix)
}

/// One of `group_re`'s optional suffixes (its slot `slot`: `[skipped]`, a duration, the heap
/// figure) at the start of `s`: the rest after it.
fn group_suffix(s: &str, slot: usize) -> Result<Option<&str>, Unsure> {
    match slot {
        0 => Ok(s.strip_prefix("[skipped]")),
        1 => duration(s),
        _ => heap(s),
    }
}

/// Whether `s` is a sequence of optional suffixes, slots `from..slots` in order, each after
/// `\s+` and matched by `suffix`, to the end (every way tried, as the regex's backtracking
/// does).
fn suffixes(
    s: &str,
    from: usize,
    slots: usize,
    suffix: fn(&str, usize) -> Result<Option<&str>, Unsure>,
) -> Result<bool, Unsure> {
    if s.is_empty() {
        return Ok(true);
    }
    let Some(s) = after_space(s) else {
        return Ok(false);
    };
    for slot in from..slots {
        if let Some(rest) = suffix(s, slot)?
            && suffixes(rest, slot + 1, slots, suffix)?
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `group_re` after its `^(.+?)`: `\s+\((\d+)(?: tests?(?: \| [^)]*)?)?\)`, then `[skipped]`,
/// a duration and the heap figure, each optional after `\s+`, to the end: the count's digits.
fn group_rest(s: &str) -> Result<Option<&str>, Unsure> {
    let Some(s) = after_space(s).and_then(|s| s.strip_prefix('(')) else {
        return Ok(None);
    };
    let Some((count, mut rest)) = digits(s)? else {
        return Ok(None);
    };
    if let Some(tests) = rest.strip_prefix(" test") {
        rest = tests.strip_prefix('s').unwrap_or(tests);
        if let Some(note) = rest.strip_prefix(" | ") {
            rest = &note[note.find(')').unwrap_or(note.len())..];
        }
    }
    let Some(rest) = rest.strip_prefix(')') else {
        return Ok(None);
    };
    Ok(suffixes(rest, 0, 3, group_suffix)?.then_some(count))
}

/// A tree's top line names a file, maybe after a project name and the ` TS ` badge of a
/// typecheck file (after the project name in v1/v2, before it in v3): the name as the flat
/// lines spell the file, `|project| path`. On a colour terminal v3 prints the project name as
/// a coloured label, ` unit ` without the bars, so two spaces follow it once the colours are
/// gone (`unit  src/a.test.ts`).
fn file_name(name: &str) -> Cow<'_, str> {
    let name = name.strip_prefix("TS ").map_or(name, str::trim_start);
    let Some(end) = name.strip_prefix('|').and_then(|r| r.find('|')) else {
        return match name.split_once("  ") {
            Some((label, path)) if !label.is_empty() && !label.contains(' ') => {
                Cow::Owned(format!("|{label}| {}", path.trim_start()))
            }
            _ => Cow::Borrowed(name),
        };
    };
    let (project, rest) = name.split_at(end + 2);
    let rest = rest.trim_start();
    let rest = rest.strip_prefix("TS ").map_or(rest, str::trim_start);
    Cow::Owned(format!("{project} {rest}"))
}

/// Whether a group line outside a tree (its name before the count) is a file's line
/// (`✓ src/a.test.ts (3 tests) 5ms`, also after a project name), not a test: a flat test's
/// name holds ` > ` after the path.
fn is_file_line(name: &str) -> bool {
    let name = file_name(name);
    let path = match name.strip_prefix('|').and_then(|r| r.split_once("| ")) {
        Some((_, path)) => path,
        None => &name,
    };
    !path.contains(char::is_whitespace)
}

pub(crate) fn parse(log: &str, out: &mut Collector) {
    let rows = rows(log);
    // The files and suites above the current line of a tree: (indentation, name).
    let mut stack: Vec<(usize, Cow<'_, str>)> = Vec::new();
    let mut full = String::new();
    for (i, row) in rows.iter().enumerate() {
        while stack
            .last()
            .is_some_and(|(indent, _)| *indent >= row.indent)
        {
            stack.pop();
        }
        // A tree's file or suite: a line with a count of tests, and the next line with a
        // symbol is indented deeper.
        let group = group(row.text);
        if let Some((name, _)) = group
            && rows.get(i + 1).is_some_and(|next| next.indent > row.indent)
        {
            let name = if stack.is_empty() {
                file_name(name)
            } else {
                Cow::Borrowed(name)
            };
            stack.push((row.indent, name));
            continue;
        }
        let Some(status) = status(row.mark) else {
            continue;
        };
        if stack.is_empty() {
            if !group.is_some_and(|(name, _)| is_file_line(name)) {
                out.record(test_name(row.text), status);
            }
            continue;
        }
        // `describe.todo('name')` without a body: a suite line of no test.
        if group.is_some_and(|(_, count)| count == 0) {
            continue;
        }
        full.clear();
        for (_, name) in &stack {
            full.push_str(name);
            full.push_str(" > ");
        }
        full.push_str(test_name(row.text));
        out.record(&full, status);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::parsers::common::mixes;
    use crate::parsers::{TestStatus, parse_log};

    fn parsed(log: &str) -> BTreeMap<String, TestStatus> {
        parse_log("vitest", log).unwrap().to_btree()
    }

    fn names(pairs: &[(&str, TestStatus)]) -> BTreeMap<String, TestStatus> {
        pairs.iter().map(|(n, s)| ((*n).to_owned(), *s)).collect()
    }

    use TestStatus::{Fail, Pass, Skip};

    #[test]
    fn a_v3_terminal_tree_is_named_like_the_flat_lines() {
        // v3's file line (`(N tests | …)`), a suite line, a todo test under it and at the top.
        let log = " ✓ |unit| src/a.test.ts (4 tests | 2 skipped) 12ms\n   ✓ s (2)\n     ✓ adds\n     ↓ later\n   ↓ todo\n   × broken 3ms\n ✓ src/b.test.ts > flat 1ms\n";
        assert_eq!(
            parsed(log),
            names(&[
                ("|unit| src/a.test.ts > s > adds", Pass),
                ("|unit| src/a.test.ts > s > later", Skip),
                ("|unit| src/a.test.ts > todo", Skip),
                ("|unit| src/a.test.ts > broken", Fail),
                ("src/b.test.ts > flat", Pass),
            ])
        );
    }

    #[test]
    fn tree_suffixes_badges_and_empty_suites() {
        // v1/v2 order (retry, repeat, duration, heap), the ` TS ` badge after a project name,
        // a `describe.todo` without a body, and a skipped suite whose tests are listed.
        let log = " ✓ |p|  TS  src/a.test-d.ts (4) 900ms\n   ✓ flaky (retry x1) (repeat x2) 400ms 20 MB heap used\n   ↓ parser (0) [skipped]\n   ↓ off (1) [skipped]\n     ↓ one [skipped]\n   ✓ case (3)\n";
        assert_eq!(
            parsed(log),
            names(&[
                ("|p| src/a.test-d.ts > flaky", Pass),
                ("|p| src/a.test-d.ts > off > one", Skip),
                ("|p| src/a.test-d.ts > case (3)", Pass),
            ])
        );
    }

    #[test]
    fn a_v3_colour_label_is_the_project_name() {
        // v3 on a colour terminal: ` ✓ ` + a ` unit ` label (the ` TS ` badge before it) + ` ` +
        // the path; without the colour codes the label is a word before two spaces.
        let log = " ✓  TS   unit  src/a.test-d.ts (1 test) 3ms\n   ✓ types\n ✓  e2e  src/b.test.ts (1 test) 2ms\n   ✓ works\n";
        assert_eq!(
            parsed(log),
            names(&[
                ("|unit| src/a.test-d.ts > types", Pass),
                ("|e2e| src/b.test.ts > works", Pass),
            ])
        );
    }

    /// The hand matchers (`first_split` with `name_suffixes` and `group_rest`) give what the
    /// regexes they stand for capture, on random mixes of the suffixes' pieces, Unicode digits
    /// and white space, brackets, escapes left in, CRLF's `\r` and truncated suffixes.
    #[test]
    fn the_hand_matchers_are_the_regexes() {
        use super::{group, group_re, name_re, test_name};
        let parts = [
            " ",
            "  ",
            "\t",
            "\u{a0}",
            "\u{2003}",
            "a",
            "é",
            "x",
            "1",
            "12",
            "٣",
            ".",
            ".5",
            "ms",
            " ms",
            "s",
            "m",
            "(",
            ")",
            "[",
            "]",
            "(retry x",
            "(repeat x",
            "[skipped]",
            " MB heap used",
            " test",
            " tests",
            " | ",
            "|",
            "\x1b[2m",
            "\r",
            "d",
            ">",
            "(3)",
            " (0)",
        ];
        for text in mixes(
            &parts,
            200_000,
            10,
            0x9e37_79b9_7f4a_7c15,
            0x2545_f491_4f6c_dd1d,
        ) {
            let want_name = name_re()
                .captures(&text)
                .and_then(|c| c.get(1))
                .map_or(text.as_str(), |m| m.as_str())
                .trim();
            if text.ends_with(['s', ')', ']', 'd']) {
                assert_eq!(test_name(&text), want_name, "{text:?}");
            }
            let want_group = group_re()
                .captures(&text)
                .and_then(|c| Some((c.get(1)?.as_str().trim(), c.get(2)?.as_str().parse().ok()?)));
            assert_eq!(group(&text), want_group, "{text:?}");
        }
    }

    #[test]
    fn output_under_a_flat_line_opens_no_group() {
        // A test's own output that happens to start with a mark, indented deeper: the flat
        // line above it is still a test, and the output line is not put under it.
        let log = " ✓ src/a.test.ts > prints\n     ✓ step one\n ✓ src/a.test.ts (1 test) 2ms\n ✓ src/b.test.ts (2)\n";
        assert_eq!(
            parsed(log),
            names(&[("src/a.test.ts > prints", Pass), ("step one", Pass)])
        );
    }
}
