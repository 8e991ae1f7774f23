//! `swebench/harness/log_parsers/python.py` (5.0.2), line for line: the pytest family
//! (`parse_log_pytest`, `_options`, `_v2`), django's runner, sympy's `bin/test`, matplotlib's
//! and seaborn's variants. Quirks kept on purpose: the test name is the second
//! whitespace-separated word of a summary line (ids with spaces are cut), `SKIPPED [N] path`
//! summary lines are dropped, a `FAILED` line's ` - ` is removed before splitting, `XPASS`
//! lines are not read (no status word starts them), a `FAIL:` or `ERROR:` line with no name
//! is skipped (upstream raises IndexError there).

use std::borrow::Cow;
use std::sync::OnceLock;

use memchr::memmem;
use regex::Regex;

use super::{RawStatuses, Sink, filled, lines, py_split, py_strip};

/// Upstream's `TestStatus` values, in its enum's order.
const WORDS: [&str; 5] = ["FAILED", "PASSED", "SKIPPED", "ERROR", "XFAIL"];

fn starts_with_word(line: &str) -> bool {
    WORDS.iter().any(|w| line.starts_with(w))
}

fn ends_with_word(line: &str) -> bool {
    WORDS.iter().any(|w| line.ends_with(w))
}

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("built-in pattern"))
}

/// `_is_skip_summary`: `SKIPPED [3] tests/x.py:4: reason` names no test.
fn is_skip_summary(status: &str, name: &str) -> bool {
    static R: OnceLock<Regex> = OnceLock::new();
    status == "SKIPPED" && re(&R, r"^\[\d+\]$").is_match(name)
}

/// A summary line's status word and test name (its first two words, `FAILED`'s ` - ` removed
/// first); `None` for a line that starts with no status word, has one word, or is a
/// `SKIPPED [N]` summary.
fn pytest_words(line: &str) -> Option<(&str, Cow<'_, str>)> {
    if !starts_with_word(line) {
        return None;
    }
    let mut words = py_split(line);
    // The first word ends at the first whitespace, before any ` - `: the removal keeps it.
    let status = words.next()?;
    let name = if line.starts_with("FAILED") && line.contains(" - ") {
        Cow::Owned(py_split(&line.replace(" - ", " ")).nth(1)?.to_string())
    } else {
        Cow::Borrowed(words.next()?)
    };
    (!is_skip_summary(status, &name)).then_some((status, name))
}

/// The shared body of `parse_log_pytest` and `parse_log_matplotlib`.
fn pytest_line(line: &str, map: &mut impl Sink) {
    if let Some((status, name)) = pytest_words(line) {
        map.put(&name, status);
    }
}

pub fn pytest(log: &str) -> RawStatuses {
    filled(log, pytest_into)
}

pub(crate) fn pytest_into(log: &str, map: &mut impl Sink) {
    for line in lines(log) {
        pytest_line(line, map);
    }
}

pub fn matplotlib(log: &str) -> RawStatuses {
    filled(log, matplotlib_into)
}

pub(crate) fn matplotlib_into(log: &str, map: &mut impl Sink) {
    // Made once (`str::contains` makes a searcher per call).
    let mouse = memmem::Finder::new("MouseButton.");
    for line in lines(log) {
        // Neither replacement can make a line start with a status word or stop it doing so.
        if !starts_with_word(line) {
            continue;
        }
        if mouse.find(line.as_bytes()).is_some() {
            let line = line
                .replace("MouseButton.LEFT", "1")
                .replace("MouseButton.RIGHT", "3");
            pytest_line(&line, map);
        } else {
            pytest_line(line, map);
        }
    }
}

/// `(.*?)\[(.*)\]` on a name: the part before its first `[` and the part between that and
/// its last `]`, when that `]` comes after the `[`.
fn option_parts(name: &str) -> Option<(&str, &str)> {
    let open = name.find('[')?;
    let close = name.rfind(']').filter(|&c| c > open)?;
    Some((&name[..open], &name[open + 1..close]))
}

pub fn pytest_options(log: &str) -> RawStatuses {
    filled(log, pytest_options_into)
}

pub(crate) fn pytest_options_into(log: &str, map: &mut impl Sink) {
    // `f"{main}[{opt}]"`, written into one reused string.
    let mut key = String::new();
    for line in lines(log) {
        let Some((status, name)) = pytest_words(line) else {
            continue;
        };
        match option_parts(&name) {
            Some((main, opt)) => {
                key.clear();
                key.push_str(main);
                key.push('[');
                if opt.starts_with('/') && !opt.starts_with("//") && !opt.contains('*') {
                    key.push('/');
                    key.push_str(opt.rsplit('/').next().unwrap_or(""));
                } else {
                    key.push_str(opt);
                }
                key.push(']');
                map.put(&key, status);
            }
            None => map.put(&name, status),
        }
    }
}

/// A line without its colour codes (`\[(\d+)m`) and then without its control characters
/// U+0001..U+001F: the line itself when it holds neither a `[` nor a control character, else
/// the cleaned line written into `buf`. An ASCII line is cleaned by hand in one pass (its
/// `\d` is ASCII, and the colour codes are found in the line as it was, as `replace_all`
/// does); any other through the regex.
fn v2_clean<'a>(line: &'a str, buf: &'a mut String) -> &'a str {
    static COLOR: OnceLock<Regex> = OnceLock::new();
    let b = line.as_bytes();
    if !b.iter().any(|&c| c == b'[' || (1..=0x1f).contains(&c)) {
        return line;
    }
    buf.clear();
    if !line.is_ascii() {
        let line = re(&COLOR, r"\[(\d+)m").replace_all(line, "");
        buf.extend(line.chars().filter(|c| !('\u{1}'..='\u{1f}').contains(c)));
        return buf;
    }
    let mut kept = 0;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'[' {
            let digits = b[i + 1..].iter().take_while(|d| d.is_ascii_digit()).count();
            if digits > 0 && b.get(i + 1 + digits) == Some(&b'm') {
                buf.push_str(&line[kept..i]);
                i += digits + 2;
                kept = i;
                continue;
            }
        } else if (1..=0x1f).contains(&c) {
            buf.push_str(&line[kept..i]);
            kept = i + 1;
        }
        i += 1;
    }
    buf.push_str(&line[kept..]);
    buf
}

pub fn pytest_v2(log: &str) -> RawStatuses {
    filled(log, pytest_v2_into)
}

pub(crate) fn pytest_v2_into(log: &str, map: &mut impl Sink) {
    let (mut buf, mut name) = (String::new(), String::new());
    for line in lines(log) {
        let line = v2_clean(line, &mut buf);
        if starts_with_word(line) {
            let line = if line.starts_with("FAILED") {
                line.split(" - ").next().unwrap_or("")
            } else {
                line
            };
            let mut words = py_split(line);
            let (Some(status), Some(first)) = (words.next(), words.next()) else {
                continue;
            };
            if !is_skip_summary(status, first) {
                // `words[1..].join(" ")`
                name.clear();
                name.push_str(first);
                for w in words {
                    name.push(' ');
                    name.push_str(w);
                }
                map.put(&name, status);
            }
        } else if ends_with_word(line) {
            // `words[..-1].join(" ")` and the last word, when there are two or more.
            let mut words = py_split(line);
            let Some(mut last) = words.next() else {
                continue;
            };
            name.clear();
            for w in words {
                // Words are never empty: an empty name means none was pushed yet.
                if !name.is_empty() {
                    name.push(' ');
                }
                name.push_str(last);
                last = w;
            }
            if !name.is_empty() {
                map.put(&name, last);
            }
        }
    }
}

pub fn django(log: &str) -> RawStatuses {
    let mut map = RawStatuses::for_log(log.len());
    let mut prev_test: Option<&str> = None;
    let put = |map: &mut RawStatuses, k: &str, v: &str| map.insert(k, v);
    // Each searcher made once (`str::find` makes one per call), and the `--version` line
    // looked for only in a log that holds it.
    let version = memmem::Finder::new("--version is equivalent to version");
    let any_version = version.find(log.as_bytes()).is_some();
    let (dots, skipped) = (
        memmem::Finder::new(" ... "),
        memmem::Finder::new(" ... skipped"),
    );
    for raw in lines(log) {
        let mut line = py_strip(raw);
        if any_version && version.find(line.as_bytes()).is_some() {
            put(&mut map, "--version is equivalent to version", "PASSED");
        }
        if let Some(i) = dots.find(line.as_bytes()) {
            prev_test = Some(&line[..i]);
        }
        for suffix in [" ... ok", " ... OK", " ...  OK"] {
            if line.ends_with(suffix) {
                if py_strip(line)
                    .starts_with("Applying sites.0002_alter_domain_unique...test_no_migrations")
                {
                    let rest = line.split_once("...").map_or(line, |(_, r)| r);
                    line = py_strip(rest);
                }
                let test = line.rsplit_once(suffix).map_or(line, |(t, _)| t);
                put(&mut map, test, "PASSED");
                break;
            }
        }
        if let Some(i) = skipped.find(line.as_bytes()) {
            put(&mut map, &line[..i], "SKIPPED");
        }
        if line.ends_with(" ... FAIL") {
            let i = line.find(" ... FAIL").expect("ends with it");
            put(&mut map, &line[..i], "FAILED");
        }
        if line.starts_with("FAIL:")
            && let Some(name) = py_split(line).nth(1)
        {
            put(&mut map, py_strip(name), "FAILED");
        }
        if line.ends_with(" ... ERROR") {
            let i = line.find(" ... ERROR").expect("ends with it");
            put(&mut map, &line[..i], "ERROR");
        }
        if line.starts_with("ERROR:")
            && let Some(name) = py_split(line).nth(1)
        {
            put(&mut map, py_strip(name), "ERROR");
        }
        if line.trim_start_matches(super::py_space).starts_with("ok")
            && let Some(prev) = prev_test
        {
            put(&mut map, prev, "PASSED");
        }
    }
    // Each pattern with a literal it cannot match without: a log lacking the literal skips it.
    static PATTERNS: OnceLock<[(&str, Regex); 3]> = OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        [
            (
                "Testing against Django installed in ",
                r"(?m)^(.*?)\s\.\.\.\sTesting\ against\ Django\ installed\ in\ ((?s:.*?))\ silenced\)\.\nok$",
            ),
            (
                "Internal Server Error: /",
                r"(?m)^(.*?)\s\.\.\.\sInternal\ Server\ Error:\ /(.*)/\nok$",
            ),
            (
                "System check identified no issues (0 silenced)\nok",
                r"(?m)^(.*?)\s\.\.\.\sSystem check identified no issues \(0 silenced\)\nok$",
            ),
        ]
        .map(|(l, p)| (l, Regex::new(p).expect("built-in pattern")))
    });
    for (literal, p) in patterns {
        if memchr::memmem::find(log.as_bytes(), literal.as_bytes()).is_none() {
            continue;
        }
        for c in p.captures_iter(log) {
            put(&mut map, &c[1], "PASSED");
        }
    }
    map
}

pub fn seaborn(log: &str) -> RawStatuses {
    filled(log, seaborn_into)
}

pub(crate) fn seaborn_into(log: &str, map: &mut impl Sink) {
    for line in lines(log) {
        let parts: Vec<&str> = py_split(line).collect();
        if parts.len() < 2 {
            continue;
        }
        if line.starts_with("FAILED") {
            map.put(parts[1], "FAILED");
        } else if line.contains(" PASSED ") {
            if parts[1] == "PASSED" {
                map.put(parts[0], "PASSED");
            }
        } else if line.starts_with("PASSED") {
            map.put(parts[1], "PASSED");
        }
    }
}

/// `(_*) (.*)\.py:(.*) (_*)` (upstream searches the whole log) in one line: group 2, `.py:`,
/// group 3, which is the text between the line's first and last spaces when a `.py:` lies
/// between them. No match crosses a line break, and a line holds at most one: a match ends
/// after the line's last space.
fn sympy_failure(line: &str) -> Option<&str> {
    let first = line.find(' ')?;
    let last = line.rfind(' ')?;
    let py = line[..last].rfind(".py:")?;
    (py > first).then(|| &line[first + 1..last])
}

pub fn sympy(log: &str) -> RawStatuses {
    let mut map = RawStatuses::for_log(log.len());
    for line in lines(log) {
        if let Some(name) = sympy_failure(line) {
            map.insert(name, "FAILED");
        }
    }
    for line in lines(log) {
        let line = py_strip(line);
        if !line.starts_with("test_") {
            continue;
        }
        let first = py_split(line).next().unwrap_or("");
        if line.ends_with(" E") {
            map.insert(first, "ERROR");
        }
        if line.ends_with(" F") {
            map.insert(first, "FAILED");
        }
        if line.ends_with(" ok") {
            map.insert(first, "PASSED");
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_map as m;

    #[test]
    fn sympy_failures_agree_with_upstream_regex() {
        let r = Regex::new(r"(_*) (.*)\.py:(.*) (_*)").unwrap();
        let pieces = [
            "_", "__", " ", "\t", ".py:", ".py", "py:", "a", "é", "\u{a0}", "\r", "sympy/x",
            "test_a", " ok", ":12",
        ];
        let lines = super::super::glued_lines(&pieces, 150_000);
        let mut matched = 0;
        for line in &lines {
            let want: Vec<String> = r
                .captures_iter(line)
                .map(|c| format!("{}.py:{}", &c[2], &c[3]))
                .collect();
            matched += want.len();
            let got: Vec<String> = sympy_failure(line).into_iter().map(String::from).collect();
            assert_eq!(got, want, "{line:?}");
        }
        assert!(matched > 1_000, "{matched} lines matched");
        // Across line breaks too: the whole log, as upstream searches it.
        let log = lines.join("\n");
        let want: Vec<String> = r
            .captures_iter(&log)
            .map(|c| format!("{}.py:{}", &c[2], &c[3]))
            .collect();
        let got: Vec<&str> = log.split('\n').filter_map(sympy_failure).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn v2_clean_agrees_with_replacing_every_line() {
        let color = Regex::new(r"\[(\d+)m").unwrap();
        let pieces = [
            "[", "[1m", "[0m", "[32", "m", "\x1b", "\x01", "\x1f", "\x7f", " ", "PASSED", "a", "é",
            "\r", "\t",
        ];
        for line in super::super::glued_lines(&pieces, 100_000) {
            let want: String = color
                .replace_all(&line, "")
                .chars()
                .filter(|c| !('\u{1}'..='\u{1f}').contains(c))
                .collect();
            let mut buf = String::new();
            assert_eq!(v2_clean(&line, &mut buf), want, "{line:?}");
        }
    }

    #[test]
    fn pytest_keeps_upstream_quirks() {
        let log = "PASSED t.py::a\nFAILED t.py::b - assert 1\nSKIPPED [1] t.py:4: later\nXPASS t.py::c\nERROR t.py::d - boom\nXFAIL t.py::e - known\nPASSED t.py::f[a b]\n";
        assert_eq!(
            pytest(log),
            m(&[
                ("t.py::a", "PASSED"),
                ("t.py::b", "FAILED"),
                ("t.py::d", "ERROR"),
                ("t.py::e", "XFAIL"),
                ("t.py::f[a", "PASSED"),
            ])
        );
    }

    #[test]
    fn pytest_options_shortens_absolute_path_params() {
        let log =
            "PASSED t.py::a[/abs/dir/file.txt]\nPASSED t.py::b[//x/y]\nPASSED t.py::c[x]y]z\n";
        assert_eq!(
            pytest_options(log),
            m(&[
                ("t.py::a[/file.txt]", "PASSED"),
                ("t.py::b[//x/y]", "PASSED"),
                ("t.py::c[x]y]", "PASSED"),
            ])
        );
    }

    #[test]
    fn option_parts_agree_with_upstream_regex() {
        let r = Regex::new(r"(.*?)\[(.*)\]").unwrap();
        let pieces = ["[", "]", "a", "/", "é", "[]", "][", "::"];
        for name in super::super::glued_lines(&pieces, 100_000) {
            let want = r
                .captures(&name)
                .map(|c| (c.get(1).unwrap().as_str(), c.get(2).unwrap().as_str()));
            assert_eq!(option_parts(&name), want, "{name:?}");
        }
    }

    #[test]
    fn pytest_words_keep_failed_dash_removal_and_skip_summaries() {
        assert_eq!(
            pytest(
                "FAILED - t.py::a - x\nFAILED\t- t.py::b\nFAILED -\nSKIPPED [2] t.py:1: r\nSKIPPED [2]x\nPASSED\n"
            ),
            m(&[("t.py::a", "FAILED"), ("-", "FAILED"), ("[2]x", "SKIPPED")])
        );
        assert_eq!(
            matplotlib(
                "MouseButton.LEFTPASSED t::a\nPASSED t::a[MouseButton.RIGHT-MouseButton.LEFT]\n"
            ),
            m(&[("t::a[3-1]", "PASSED")])
        );
    }

    #[test]
    fn pytest_v2_reads_both_line_shapes() {
        let log = "\x1b[32mPASSED\x1b[0m t.py::a\nt.py::b FAILED\nFAILED t.py::c - msg - more\n";
        assert_eq!(
            pytest_v2(log),
            m(&[
                ("t.py::a", "PASSED"),
                ("t.py::b", "FAILED"),
                ("t.py::c", "FAILED")
            ])
        );
    }

    #[test]
    fn django_reads_results_and_headers() {
        let log = "test_a (m.T) ... ok\ntest_b (m.T) ... FAIL\ntest_c (m.T) ... skipped 'x'\ntest_d (m.T) ... ERROR\ntest_e (m.T) ... \nout\nok\nFAIL: test_f (m.T)\nFAIL:\n";
        assert_eq!(
            django(log),
            m(&[
                ("test_a (m.T)", "PASSED"),
                ("test_b (m.T)", "FAILED"),
                ("test_c (m.T)", "SKIPPED"),
                // The lone `ok` belongs to the last line holding " ... " (stripped, the
                // `test_e` line has none): upstream's quirk.
                ("test_d (m.T)", "PASSED"),
                ("test_f", "FAILED"),
            ])
        );
    }

    #[test]
    fn django_whole_log_patterns_still_read() {
        // Only the whole-log patterns see these names (no line holds ` ... `).
        let log = "test_a\n... Internal Server Error: /x/\nok\ntest_b\t...\tTesting against Django installed in /p\n(0 silenced).\nok\ntest_c\n...\nSystem check identified no issues (0 silenced)\nok\n";
        assert_eq!(
            django(log),
            m(&[
                ("test_a", "PASSED"),
                ("test_b", "PASSED"),
                ("test_c", "PASSED")
            ])
        );
    }

    #[test]
    fn sympy_reads_verbose_lines_and_failure_headers() {
        let log =
            "test_a ok\ntest_b F\ntest_c E\n________ sympy/core/tests/test_x.py:test_b ________\n";
        assert_eq!(
            sympy(log),
            m(&[
                ("test_a", "PASSED"),
                ("test_b", "FAILED"),
                ("test_c", "ERROR"),
                ("sympy/core/tests/test_x.py:test_b", "FAILED"),
            ])
        );
    }

    #[test]
    fn seaborn_and_matplotlib() {
        assert_eq!(
            seaborn("t.py::a PASSED [50%]\nFAILED t.py::b - x\nPASSED t.py::c\n"),
            m(&[
                ("t.py::a", "PASSED"),
                ("t.py::b", "FAILED"),
                ("t.py::c", "PASSED")
            ])
        );
        assert_eq!(
            matplotlib("PASSED t.py::a[MouseButton.LEFT]\n"),
            m(&[("t.py::a[1]", "PASSED")])
        );
    }
}
