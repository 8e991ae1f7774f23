//! `swebench/harness/log_parsers/javascript.py` (5.0.2), the parsers of SWE-bench Multimodal's
//! JavaScript repositories: `parse_log_calypso` (Automattic/wp-calypso), `parse_log_chart_js`,
//! `parse_log_marked`, `parse_log_p5js`, `parse_log_react_pdf` (the dev split's five), and of
//! the test split `parse_log_carbon`, `parse_log_grommet`, `parse_log_eslint`,
//! `parse_log_bpmn_js`, `parse_log_openlayers`, `parse_log_highlightjs`, `parse_log_prismjs`
//! and `parse_log_quarto_cli` (each a name of
//! 5.0.2's `PARSER_REGISTRY`, which rows' `log_parser` names). Upstream's quirks are kept:
//!
//! - Chart.js, marked, p5.js, eslint, bpmn-js and openlayers record failures only (a passing
//!   test is missing from the map: those repositories are FAIL_ONLY_REPOS, or their rows list
//!   only what can fail);
//! - calypso reads only the output after ` ./node_modules/.bin/jest ` (the `set -x` echo of
//!   the test command), stops a section at `Test Suites` or `  ● `, and names a test by its
//!   enclosing indented lines joined with ` - ` (a test with no suite line is `- name`); a
//!   `✓` / `✕` line without leading whitespace makes upstream raise (`re.match` is `None`), bench
//!   skips it;
//! - carbon / react-pdf: `PASS` / `FAIL` lines, a trailing `(12ms)` / `(1.2 s)` / `(3s)` dropped
//!   (the first pattern that matches wins);
//! - grommet: every `FAIL` line first, then every `PASS` line (a PASS wins), a trailing
//!   `(12 ms)` dropped;
//! - p5.js: JSON-looking and XML blocks removed first (`<tag>...</tag>`, innermost repeated),
//!   then `N) title:` headers whose continuation lines indent further;
//! - prismjs: the JSON report after each `./node_modules/.bin/mocha tests/run.js --reporter
//!   json` (from its first `{` to its last `}`); a report upstream cannot read makes it raise,
//!   bench stops reading there;
//! - quarto-cli: `[smoke]` / `[unit]` lines up to `ERRORS` or `failures:`, `/tmp/<x>.qmd` and
//!   `/tmp/<x>/` renamed `/tmp/<n>` by first appearance, the name before `...`; a line with
//!   neither a green `ok` nor a red `FAILED` fails its test unless the name already has a
//!   status;
//! - highlightjs: the log is cut at the mocha epilogue (`N passing`), a line indented by two
//!   spaces or more is the suite (upstream's 4-space branch comes after the 2-space one and is
//!   never reached), names `suite.title` with `(12ms)` removed.
//!
//! `parse_log_next` and `parse_log_lighthouse` pick a function by the row's `version`; their
//! picks are here (`next_v1`, `next_v2`, `lighthouse_mocha`, `lighthouse_json`; lighthouse 3
//! and later is `carbon`), chosen when a row is read (`super::for_version`).

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::Regex;

use super::xml_blocks::remove_xml_blocks;
use super::{RawStatuses, Sink, lazy, lines, py_space, py_strip};

/// `swebench.utils.ansi_escape`: `re.sub(r"\x1B(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])", "", log)`,
/// by hand: each `ESC` found by memchr, the text between the escapes copied a stretch at a time.
fn ansi_escape(log: &str) -> Cow<'_, str> {
    let b = log.as_bytes();
    let mut out = String::new();
    let mut from = 0;
    for at in memchr::memchr_iter(0x1b, b) {
        if at < from {
            continue;
        }
        if let Some(len) = escape_len(&b[at..]) {
            if out.is_empty() {
                out.reserve(log.len());
            }
            out.push_str(&log[from..at]);
            from = at + len;
        }
    }
    if from == 0 {
        return Cow::Borrowed(log);
    }
    out.push_str(&log[from..]);
    Cow::Owned(out)
}

/// The length of the `ansi_escape` match at the start of `b` (which starts with `ESC`): `ESC`
/// and one of `@`-`Z`, `\`-`_` (the class `[@-Z\\-_]` holds the range `\\-_`, not `[`), or a
/// CSI sequence (`ESC [`, parameters `0`-`?`, intermediates ` `-`/`, a final `@`-`~`).
fn escape_len(b: &[u8]) -> Option<usize> {
    match b.get(1)? {
        0x40..=0x5a | 0x5c..=0x5f => Some(2),
        b'[' => {
            let mut i = 2;
            while matches!(b.get(i), Some(0x30..=0x3f)) {
                i += 1;
            }
            while matches!(b.get(i), Some(0x20..=0x2f)) {
                i += 1;
            }
            matches!(b.get(i), Some(0x40..=0x7e)).then_some(i + 1)
        }
        _ => None,
    }
}

/// Python's `len(line) - len(line.lstrip())`, in characters.
fn indent(line: &str) -> usize {
    line.chars().take_while(|c| py_space(*c)).count()
}

/// `re.sub(r"\s+", " ", s).strip()`: by hand on ASCII without `\x1c`-`\x1f` (which Python
/// strips and `\s` does not match), through the regex otherwise.
fn squash(s: &str) -> Cow<'_, str> {
    static R: OnceLock<Regex> = OnceLock::new();
    if !s
        .bytes()
        .all(|b| b.is_ascii() && !(0x1c..=0x1f).contains(&b))
    {
        return Cow::Owned(py_strip(&lazy(&R, r"\s+").replace_all(s, " ")).to_string());
    }
    // Already squashed (single spaces between words, none at either end): itself.
    let b = s.as_bytes();
    if b.first() != Some(&b' ')
        && b.last() != Some(&b' ')
        && !b.iter().any(|&c| c != b' ' && ascii_space(c))
        && memchr::memmem::find(b, b"  ").is_none()
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    for word in s.split(|c: char| c.is_ascii() && ascii_space(c as u8)) {
        if !word.is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        }
    }
    Cow::Owned(out)
}

fn marked_pattern() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    lazy(&R, r"^\d+\)\s(.*)")
}

/// Group 1 of [`marked_pattern`] on a line: by hand on an ASCII line (digits, `)`, one blank,
/// the rest), through the regex on another (its `\d` and `\s` are Unicode). A unit test holds
/// this to the regex.
fn marked_name(line: &str) -> Option<&str> {
    match line.as_bytes().first() {
        Some(c) if c.is_ascii_digit() => {}
        Some(c) if c.is_ascii() => return None,
        None => return None,
        Some(_) => {}
    }
    if !line.is_ascii() {
        let c = marked_pattern().captures(line)?;
        return Some(c.get(1).map_or("", |m| m.as_str()));
    }
    let b = line.as_bytes();
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let ok = digits > 0
        && b.get(digits) == Some(&b')')
        && b.get(digits + 1).is_some_and(|&c| ascii_space(c));
    ok.then(|| &line[digits + 2..])
}

pub fn marked(log: &str) -> RawStatuses {
    let mut map = RawStatuses::for_log(log.len());
    marked_into(log, &mut map);
    map
}

/// Each line on its own: `bench parse-log` reads the log in pieces (see [`super::Sink`]).
pub(crate) fn marked_into(log: &str, map: &mut impl Sink) {
    for line in lines(log) {
        if let Some(name) = marked_name(line) {
            map.put(py_strip(name), "FAILED");
        }
    }
}

/// Upstream's carbon patterns, in the order it tries them: `^PASS\s(.*)<tail>`, then
/// `^FAIL\s(.*)<tail>`, each with the tails `\s\([\d\.]+ms\)`, `\s\([\d\.]+\ss\)`,
/// `\s\([\d\.]+s\)` and none.
fn carbon_patterns() -> &'static [(Regex, &'static str)] {
    static R: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    R.get_or_init(|| {
        let mut v = Vec::new();
        for (word, status) in [("PASS", "PASSED"), ("FAIL", "FAILED")] {
            for tail in [
                r"\s\([\d\.]+ms\)",
                r"\s\([\d\.]+\ss\)",
                r"\s\([\d\.]+s\)",
                "",
            ] {
                let p = format!(r"^{word}\s(.*){tail}");
                v.push((Regex::new(&p).expect("built-in pattern"), status));
            }
        }
        v
    })
}

/// The status word and name (group 1) of the first of [`carbon_patterns`] that matches
/// `line`: by hand on an ASCII line (every pattern starts `^PASS\s` or `^FAIL\s`, so any
/// other line matches none), through the regexes on another (its `\s` and `\d` may be
/// Unicode). A unit test holds the hand matcher to the regexes.
fn carbon_line(line: &str) -> Option<(&'static str, &str)> {
    let status = if line.starts_with("PASS") {
        "PASSED"
    } else if line.starts_with("FAIL") {
        "FAILED"
    } else {
        return None;
    };
    if !line.is_ascii() {
        return carbon_patterns().iter().find_map(|(r, s)| {
            r.captures(line)
                .map(|c| (*s, c.get(1).map_or("", |m| m.as_str())))
        });
    }
    if !line.as_bytes().get(4).copied().is_some_and(ascii_space) {
        return None;
    }
    let rest = &line[5..];
    // `(.*)` is greedy: the name ends where the last match of the tail starts.
    let name = [b"ms)" as &[u8], b" s)", b"s)"]
        .iter()
        .find_map(|unit| last_duration(rest.as_bytes(), unit))
        .map_or(rest, |end| &rest[..end]);
    Some((status, name))
}

/// The regex crate's `\s` on an ASCII byte (`u8::is_ascii_whitespace` leaves out `\x0b`).
fn ascii_space(b: u8) -> bool {
    b.is_ascii_whitespace() || b == b'\x0b'
}

/// The last offset in ASCII `b` where `\s\([\d\.]+` and then `unit` match (`unit` ends with
/// `)`; a space in it stands for `\s`).
fn last_duration(b: &[u8], unit: &[u8]) -> Option<usize> {
    memchr::memrchr_iter(b'(', b).find_map(|open| {
        let start = open.checked_sub(1).filter(|&i| ascii_space(b[i]))?;
        let digits = b[open + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit() || **c == b'.')
            .count();
        let after = b.get(open + 1 + digits..)?;
        let unit_matches = after.len() >= unit.len()
            && after
                .iter()
                .zip(unit)
                .all(|(&c, &u)| if u == b' ' { ascii_space(c) } else { c == u });
        (digits > 0 && unit_matches).then_some(start)
    })
}

/// `parse_log_carbon`, and `parse_log_react_pdf` (the same code upstream).
pub fn carbon(log: &str) -> RawStatuses {
    let mut map = RawStatuses::for_log(log.len());
    carbon_into(log, &mut map);
    map
}

/// Each line on its own (upstream matches each line of `log.split("\n")`): `bench parse-log`
/// reads the log in pieces (see [`super::Sink`]).
pub(crate) fn carbon_into(log: &str, map: &mut impl Sink) {
    for line in lines(log) {
        if let Some((status, name)) = carbon_line(line) {
            map.put(name, status);
        }
    }
}

pub fn react_pdf(log: &str) -> RawStatuses {
    carbon(log)
}

/// Every `FAIL` line, then every `PASS` line (`(?m)^FAIL\s(.*)`, then `(?m)^PASS\s(.*)`), each
/// name passed through `name`. A match is the word, one `\s` character and the name (group 1),
/// so the matches are found without captures and the name cut from each by hand.
fn fail_then_pass<'a>(log: &'a str, name: impl Fn(&'a str) -> Cow<'a, str>) -> RawStatuses {
    static FAIL: OnceLock<Regex> = OnceLock::new();
    static PASS: OnceLock<Regex> = OnceLock::new();
    let mut map = RawStatuses::for_log(log.len());
    for (r, status) in [
        (lazy(&FAIL, r"(?m)^FAIL\s(.*)"), "FAILED"),
        (lazy(&PASS, r"(?m)^PASS\s(.*)"), "PASSED"),
    ] {
        for m in r.find_iter(log) {
            let after = &m.as_str()[4..];
            let space = after.chars().next().map_or(0, char::len_utf8);
            map.insert(name(&after[space..]), status);
        }
    }
    map
}

pub fn grommet(log: &str) -> RawStatuses {
    fail_then_pass(log, grommet_name)
}

/// grommet's name of a match's group 1: stripped, a trailing `(12 ms)` removed
/// (`timing.replace(n, "")`, which copies every name it changes: the timing ends the name
/// (`$`), so the name before it is a slice of the log).
fn grommet_name(n: &str) -> Cow<'_, str> {
    static T: OnceLock<Regex> = OnceLock::new();
    let timing = lazy(&T, r"\s\([\d\.]+\s?(?:ms|s)\)$");
    let n = py_strip(n);
    if !n.ends_with(')') {
        return Cow::Borrowed(n);
    }
    match timing.find(n) {
        Some(m) if m.end() == n.len() => Cow::Borrowed(&n[..m.start()]),
        _ => timing.replace(n, ""),
    }
}

/// The lines after which [`grommet_lines`] may not be cut: a line that is exactly `FAIL` or
/// `PASS` is a match whose `\s` is the line break, so its name is the next line.
pub(crate) const GROMMET_JOINS: &[&[u8]] = &[b"FAIL", b"PASS"];

/// [`grommet`] of `log` line by line, into two sinks: `fails` gets the matches of
/// `(?m)^FAIL\s(.*)`, `passes` those of `(?m)^PASS\s(.*)`, each in the order `find_iter` finds
/// them (the map of [`grommet`] is `fails`, then `passes` over it). A match is the word at a
/// line's start, one `\s` character and the rest of the line; when that character is the line
/// break (the line is the bare word), the name is the whole next line, which is then no match
/// of that pattern itself (`find_iter` resumes after it). A bare word on `log`'s last line
/// matches nothing, so `log` must not end after a line of [`GROMMET_JOINS`] that is followed
/// by more text: `bench parse-log` cuts the log into pieces only after other lines.
pub(crate) fn grommet_lines<S: Sink>(log: &str, fails: &mut S, passes: &mut S) {
    // Per pattern: whether the line before was a bare word whose match takes this line.
    let (mut fail_takes, mut pass_takes) = (false, false);
    let mut lines = lines(log).peekable();
    while let Some(line) = lines.next() {
        let last = lines.peek().is_none();
        for (word, takes, sink, status) in [
            ("FAIL", &mut fail_takes, &mut *fails, "FAILED"),
            ("PASS", &mut pass_takes, &mut *passes, "PASSED"),
        ] {
            if std::mem::take(takes) {
                sink.put(&grommet_name(line), status);
                continue;
            }
            let Some(rest) = line.strip_prefix(word) else {
                continue;
            };
            if rest.is_empty() {
                // `\s` is the line break (none after the log's last line: no match).
                *takes = !last;
                continue;
            }
            let c = rest.chars().next().expect("not empty");
            if regex_space(c) {
                sink.put(&grommet_name(&rest[c.len_utf8()..]), status);
            }
        }
    }
}

/// The regex crate's `\s` (Unicode `White_Space`) on one character.
fn regex_space(c: char) -> bool {
    static R: OnceLock<Regex> = OnceLock::new();
    if c.is_ascii() {
        return ascii_space(c as u8);
    }
    let mut buf = [0u8; 4];
    lazy(&R, r"\A\s\z").is_match(c.encode_utf8(&mut buf))
}

/// A pattern, the capture that names the test, and a function that cuts that capture from an
/// ASCII match by hand (`None`: let the regex say).
type Pattern = (&'static Regex, usize, fn(&str) -> Option<&str>);

/// Failures of each pattern in order (a pattern that finds none is skipped). The matches are
/// found without captures (the regex's costly part) and the name cut from each by hand; a
/// match that is not ASCII (its `\s` and `\d` may be Unicode) is captured by the regex.
fn failures(log: &str, patterns: &[Pattern], clean: fn(&str) -> Cow<'_, str>) -> RawStatuses {
    let mut map = RawStatuses::for_log(log.len());
    for &(r, group, cut) in patterns {
        for m in r.find_iter(log) {
            let hand = Some(m.as_str()).filter(|t| t.is_ascii()).and_then(cut);
            match hand {
                Some(name) => map.insert(clean(name), "FAILED"),
                None => {
                    let c = r.captures_at(log, m.start());
                    let name = c.as_ref().and_then(|c| c.get(group));
                    map.insert(clean(name.map_or("", |g| g.as_str())), "FAILED");
                }
            }
        }
    }
    map
}

fn eslint_patterns() -> [Pattern; 1] {
    static R: OnceLock<Regex> = OnceLock::new();
    let r = lazy(&R, r"(\s{2}\d+\))([\s\S]*?)\s+(?:(.*)Error)");
    [(r, 2, eslint_cut)]
}

/// Group 2 of eslint's pattern in ASCII match `t`: from the first `)` to the earliest
/// whitespace from which `\s+(.*)Error` reaches the match's end (`.*` crosses no line break:
/// the whitespace run that holds the match's last `\n`, or else the first whitespace).
fn eslint_cut(t: &str) -> Option<&str> {
    let b = t.as_bytes();
    let from = t.find(')')? + 1;
    let end = match memchr::memrchr(b'\n', &b[from..]) {
        Some(k) => {
            let mut p = from + k;
            while p > from && ascii_space(b[p - 1]) {
                p -= 1;
            }
            p
        }
        None => from + b[from..].iter().position(|&c| ascii_space(c))?,
    };
    Some(&t[from..end])
}

pub fn eslint(log: &str) -> RawStatuses {
    failures(log, &eslint_patterns(), squash)
}

/// Upstream's bpmn-js patterns and the group that names the test in each.
fn bpmn_js_patterns() -> [(&'static Regex, usize); 4] {
    static R: OnceLock<[Regex; 4]> = OnceLock::new();
    let r = R.get_or_init(|| {
        [
            r"2KPhantomJS\s[\d\.]+\s\(Linux\s[\d\.]+\)\s(.*)FAILED\n",
            r"2KPhantomJS\s[\d\.]+\s\(Linux\sx86_64\)\s(.*)FAILED\n",
            r"Chrome\sHeadless\s(.*)\s\(Linux\sx86_64\)\s(.*)FAILED\n",
            r"HeadlessChrome\s[\d\.]+\s\(Linux\s[\d\.]+\)\s(.*)FAILED\n",
        ]
        .map(|p| Regex::new(p).expect("built-in pattern"))
    });
    [(&r[0], 1), (&r[1], 1), (&r[2], 2), (&r[3], 1)]
}

/// The name in a match of a bpmn-js pattern (`group` 1: the text between the first `)` and
/// its `\s`, and the final `FAILED\n`; `group` 2: the text between the last ` (Linux x86_64) `
/// and `FAILED\n` of a one-line ASCII match), `None` where the regex must say.
fn bpmn_js_name(text: &str, group: usize) -> Option<&str> {
    let body = text.strip_suffix("FAILED\n")?;
    if group == 1 {
        // `[\d\.]+` and `\s` hold no `)`: the first one is the pattern's `\)`.
        let close = body.find(')')?;
        let space = body[close + 1..].chars().next()?.len_utf8();
        return body.get(close + 1 + space..);
    }
    // One line of ASCII (each `\s` one byte, none a line break): the greedy first group ends
    // at the last separator that leaves `FAILED\n` after it.
    if !text.is_ascii() || memchr::memchr(b'\n', body.as_bytes()).is_some() {
        return None;
    }
    let b = body.as_bytes();
    let space = |i: usize| b.get(i).copied().is_some_and(ascii_space);
    memchr::memmem::rfind_iter(b, b"(Linux").find_map(|open| {
        let end = open + 15;
        let ok = open > "Chrome Headless ".len()
            && space(open - 1)
            && space(open + 6)
            && b.get(open + 7..open + 14) == Some(b"x86_64)".as_slice())
            && space(open + 14)
            && end <= b.len();
        ok.then(|| &body[end..])
    })
}

pub fn bpmn_js(log: &str) -> RawStatuses {
    let mut map = RawStatuses::for_log(log.len());
    for (r, group) in bpmn_js_patterns() {
        // The matches found without captures (the regex's costly part), the name cut from each.
        for m in r.find_iter(log) {
            match bpmn_js_name(m.as_str(), group) {
                Some(name) => map.insert(name, "FAILED"),
                None => {
                    let c = r.captures_at(log, m.start());
                    let name = c
                        .as_ref()
                        .and_then(|c| c.get(group))
                        .map_or("", |g| g.as_str());
                    map.insert(name, "FAILED");
                }
            }
        }
    }
    map
}

fn openlayers_patterns() -> [Pattern; 4] {
    static R: OnceLock<[Regex; 4]> = OnceLock::new();
    let r = R.get_or_init(|| {
        [
            r"(?m)Chrome\sHeadless\s[\d\.]+\s\(Linux\s[\d\._\S]+\)\s(.*)\sFAILED\n",
            r"(?m)Chrome\s[\d\.]+\s\(Linux\s[\d\._\S]+\)\s(.*)FAILED\n",
            r"(?m)^\s{2}\d+\)([\s\S]*?)Error:",
            r"(?m)^case\s(.*):\smismatch",
        ]
        .map(|p| Regex::new(p).expect("built-in pattern"))
    });
    // `[\d\._\S]+\)\s` is the run of non-space after `Linux\s` (its `)` must be followed by
    // a space); the first `(` and `)` of the others are the patterns'; each `\s` is one byte.
    fn chrome(t: &str, tail: usize) -> Option<&str> {
        let b = t.as_bytes();
        let token = t.find('(')? + "(Linux ".len();
        let run = b.get(token..)?.iter().position(|&c| ascii_space(c))?;
        t.get(token + run + 1..t.len().checked_sub(tail)?)
    }
    [
        (&r[0], 1, |t| chrome(t, " FAILED\n".len())),
        (&r[1], 1, |t| chrome(t, "FAILED\n".len())),
        (&r[2], 1, |t| {
            t.get(t.find(')')? + 1..t.len() - "Error:".len())
        }),
        (&r[3], 1, |t| {
            t.get("case ".len()..t.len() - ": mismatch".len())
        }),
    ]
}

pub fn openlayers(log: &str) -> RawStatuses {
    failures(log, &openlayers_patterns(), squash)
}

fn chart_js_pattern() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    lazy(
        &R,
        r"(?m)Chrome\s[\d\.]+[^\S\r\n]\(.+?\)[^\S\r\n](.*)FAILED$",
    )
}

/// Group 1 of an ASCII match of [`chart_js_pattern`], cut by hand: `[\d\.]+` and the
/// `\s` characters hold no `(`, so the first is the pattern's; the lazy `.+?` ends at the first
/// `)` after at least one character that a blank other than `\r` follows; the group runs from
/// that blank to the final `FAILED`. `None` (let the regex say) on a match that is not ASCII.
fn chart_js_name(t: &str) -> Option<&str> {
    if !t.is_ascii() {
        return None;
    }
    let b = t.as_bytes();
    let open = memchr::memchr(b'(', b)?;
    let close = memchr::memchr_iter(b')', b.get(open + 2..)?)
        .map(|i| open + 2 + i)
        .find(|&i| {
            b.get(i + 1)
                .is_some_and(|&c| ascii_space(c) && c != b'\r' && c != b'\n')
        })?;
    t.get(close + 2..t.len() - "FAILED".len())
}

pub fn chart_js(log: &str) -> RawStatuses {
    let r = chart_js_pattern();
    let log = ansi_escape(log);
    let mut map = RawStatuses::for_log(log.len());
    // The matches found without captures (the regex's costly part), the name cut from each.
    for m in r.find_iter(&log) {
        match chart_js_name(m.as_str()) {
            Some(name) => map.insert(name, "FAILED"),
            None => {
                let c = r.captures_at(&log, m.start());
                let name = c.as_ref().and_then(|c| c.get(1));
                map.insert(name.map_or("", |g| g.as_str()), "FAILED");
            }
        }
    }
    map
}

/// A suite stack entry: its name (a slice of the log) and indentation.
type Suite<'a> = Vec<(&'a str, usize)>;

/// Upstream's suite adjustment: pop every entry indented at least as far, push this one.
fn push_suite<'a>(suite: &mut Suite<'a>, line: &'a str) {
    let n = indent(line);
    while suite.last().is_some_and(|(_, i)| *i >= n) {
        suite.pop();
    }
    suite.push((py_strip(line), n));
}

/// `" - ".join(suite + [name])` into `key`, a buffer reused from test to test.
fn suite_key(key: &mut String, suite: &Suite<'_>, name: &str) {
    key.clear();
    for (s, _) in suite {
        key.push_str(s);
        key.push_str(" - ");
    }
    key.push_str(name);
}

pub fn calypso(log: &str) -> RawStatuses {
    let mut map = RawStatuses::for_log(log.len());
    let mut suite: Suite = Vec::new();
    let mut key = String::new();
    for section in log.split(" ./node_modules/.bin/jest ").skip(1) {
        for line in lines(section) {
            if line.starts_with("Test Suites") || line.starts_with("  ● ") {
                break;
            }
            let stripped = py_strip(line);
            let (mark, status) = if stripped.starts_with('✓') {
                ('✓', "PASSED")
            } else if stripped.starts_with('✕') {
                ('✕', "FAILED")
            } else {
                if indent(line) > 0 {
                    push_suite(&mut suite, line);
                }
                continue;
            };
            if let Some(name) = calypso_name(line, mark) {
                // `f"{' - '.join(suite)} - {name}".strip()`
                key.clear();
                for (i, (s, _)) in suite.iter().enumerate() {
                    if i > 0 {
                        key.push_str(" - ");
                    }
                    key.push_str(s);
                }
                key.push_str(" - ");
                key.push_str(name);
                map.insert(py_strip(&key), status);
            }
        }
    }
    map
}

/// Upstream's group 1 of a `✓` / `✕` line (`mark`): `^\s+✓\s(.*)\(\d+ms\)$` where
/// `\(\d+ms\)` occurs anywhere in the line, `^\s+✓\s(.*)` otherwise.
fn calypso_regex(line: &str, mark: char) -> Option<&str> {
    static TIMED: OnceLock<Regex> = OnceLock::new();
    static PASS_T: OnceLock<Regex> = OnceLock::new();
    static PASS: OnceLock<Regex> = OnceLock::new();
    static FAIL_T: OnceLock<Regex> = OnceLock::new();
    static FAIL: OnceLock<Regex> = OnceLock::new();
    let timed = lazy(&TIMED, r"\(\d+ms\)").is_match(line);
    let r = match (mark == '✓', timed) {
        (true, true) => lazy(&PASS_T, r"^\s+✓\s(.*)\(\d+ms\)$"),
        (true, false) => lazy(&PASS, r"^\s+✓\s(.*)"),
        (false, true) => lazy(&FAIL_T, r"^\s+✕\s(.*)\(\d+ms\)$"),
        (false, false) => lazy(&FAIL, r"^\s+✕\s(.*)"),
    };
    r.captures(line)
        .map(|c| c.get(1).map_or("", |m| m.as_str()))
}

/// [`calypso_regex`] on a line whose stripped text starts with `mark`: by hand where the text
/// around the mark is ASCII, through the regexes otherwise (their `\s` and `\d` are
/// Unicode). A unit test holds this to the regexes.
fn calypso_name(line: &str, mark: char) -> Option<&str> {
    let at = line.find(mark)?;
    let (prefix, rest) = (&line[..at], &line[at + mark.len_utf8()..]);
    if !prefix.is_ascii() || !rest.is_ascii() {
        return calypso_regex(line, mark);
    }
    if prefix.is_empty() || !prefix.bytes().all(ascii_space) {
        return None;
    }
    let body = rest.strip_prefix(|c: char| c.is_ascii() && ascii_space(c as u8))?;
    let b = rest.as_bytes();
    let timed = memchr::memchr_iter(b'(', b).any(|open| {
        let digits = b[open + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        digits > 0 && b[open + 1 + digits..].starts_with(b"ms)")
    });
    if !timed {
        return Some(body);
    }
    let head = body.strip_suffix("ms)")?;
    let digits = head.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    head[..head.len() - digits].strip_suffix('(')
}

pub fn highlightjs(log: &str) -> RawStatuses {
    static SUMMARY: OnceLock<Regex> = OnceLock::new();
    static TIMING: OnceLock<Regex> = OnceLock::new();
    static FAILED: OnceLock<Regex> = OnceLock::new();
    let log = match lazy(&SUMMARY, r"\n[ \t]*\d+ passing").find(log) {
        Some(m) => &log[..m.start()],
        None => log,
    };
    let timing = lazy(&TIMING, r"\(\d+ms\)");
    let no_timing = |name: &str| -> String {
        if timing.is_match(name) {
            py_strip(&timing.replace_all(name, "")).to_string()
        } else {
            py_strip(name).to_string()
        }
    };
    let failed = lazy(&FAILED, r"^\d+\)");
    let mut map = RawStatuses::new();
    let mut suite: Vec<String> = Vec::new();
    let full = |suite: &[String], name: String| {
        let mut v = suite.to_vec();
        v.push(name);
        v.join(".")
    };
    for line in lines(log) {
        let stripped = py_strip(line);
        if stripped.starts_with('✓') || stripped.starts_with('✔') {
            let check = if stripped.starts_with('✓') {
                '✓'
            } else {
                '✔'
            };
            let rest = line.split_once(check).map_or("", |(_, r)| r);
            map.insert(full(&suite, no_timing(rest)), "PASSED");
        } else if failed.is_match(stripped) {
            let rest = line.split_once(')').map_or("", |(_, r)| r);
            map.insert(full(&suite, no_timing(rest)), "FAILED");
        } else if line.starts_with("  ") {
            suite = vec![stripped.to_string()];
        }
    }
    map
}

pub fn prismjs(log: &str) -> RawStatuses {
    // 5.0.2 has no constants map: prism's one test command, as its eval scripts echo it.
    const CMD: &str = "./node_modules/.bin/mocha tests/run.js --reporter json";
    let mut map = RawStatuses::new();
    for part in parts_after(log, CMD) {
        // Upstream reads `{` + the text from the first `{` to the last `}` + `}`: where both
        // are there, the log's own text from that `{` to that `}`.
        let open = part.find('{');
        let inner = open.map_or(part, |at| &part[at + 1..]);
        let json = match (open, inner.rfind('}')) {
            (Some(at), Some(close)) => Cow::Borrowed(&part[at..at + close + 2]),
            (_, close) => Cow::Owned(format!("{{{}}}", &inner[..close.unwrap_or(inner.len())])),
        };
        // Upstream raises on a report it cannot read (the instance errors): nothing more.
        let Some(report) = super::mocha_json::report(&json) else {
            return map;
        };
        for (tests, status) in [(report.failures, "FAILED"), (report.passes, "PASSED")] {
            let Some(tests) = tests else {
                return map;
            };
            for title in tests {
                let Some(title) = title else {
                    return map;
                };
                map.insert(&title, status);
            }
        }
    }
    map
}

pub fn quarto_cli(log: &str) -> RawStatuses {
    static PREFIX: OnceLock<Regex> = OnceLock::new();
    static QMD: OnceLock<Regex> = OnceLock::new();
    static DIR: OnceLock<Regex> = OnceLock::new();
    let prefix = lazy(&PREFIX, r"\[(smoke|unit)\]");
    let tmp = [lazy(&QMD, r"/tmp/(\w+)\.qmd"), lazy(&DIR, r"/tmp/(\w+)/")];
    let mut keys: Vec<String> = Vec::new();
    let mut map = RawStatuses::new();
    for line in lines(log) {
        if line.contains("ERRORS") || line.contains("failures:") {
            break;
        }
        if !prefix.is_match(line) {
            continue;
        }
        let mut line = line.to_string();
        for r in tmp {
            if let Some(m) = r.find(&line) {
                let key = m.as_str().to_string();
                let n = match keys.iter().position(|k| *k == key) {
                    Some(n) => n,
                    None => {
                        keys.push(key);
                        keys.len() - 1
                    }
                };
                line = r
                    .replace_all(&line, format!("/tmp/{n}").as_str())
                    .into_owned();
            }
        }
        let name = py_strip(line.split("...").next().unwrap_or("")).to_string();
        let reject = line.starts_with("test result:")
            || (line.contains("passed") && line.contains("failed") && line.contains("steps"))
            || line.contains("34mINFO");
        if reject {
            continue;
        }
        if line.contains("32mok") {
            map.insert(name, "PASSED");
        } else if line.contains("31mFAILED") || map.get(&name).is_none() {
            // A red FAILED, or no status at all for a test not seen yet.
            map.insert(name, "FAILED");
        }
    }
    map
}

/// `parse_log_next_v1` (alibaba-fusion/next, every version but 1.27): karma's `✓` / `✗` lines
/// after each ` xvfb-run ` and its last `Starting browser Chrome`, named by their indented
/// suites joined with ` - ` (the suites carry over from one run to the next).
pub fn next_v1(log: &str) -> RawStatuses {
    static ASSERT: OnceLock<Regex> = OnceLock::new();
    let log = ansi_escape(log);
    let log = lazy(&ASSERT, r"(?s)AssertionError:\s+#(.*?)\n\n").replace_all(&log, "");
    let mut map = RawStatuses::new();
    let mut suite: Suite = Vec::new();
    let mut key = String::new();
    for run in log.split(" xvfb-run ").skip(1) {
        let run = run.rsplit("Starting browser Chrome").next().unwrap_or(run);
        for line in lines(run) {
            if line.starts_with("TOTAL") {
                break;
            }
            let stripped = py_strip(line);
            if ["ERROR", "LOG", "WARN", "Check", "in"]
                .iter()
                .any(|x| stripped.starts_with(x))
            {
                continue;
            }
            let hit = after_mark(line, '✗')
                .map(|n| (n, "FAILED"))
                .or_else(|| after_mark(line, '✓').map(|n| (n, "PASSED")));
            if let Some((name, status)) = hit {
                suite_key(&mut key, &suite, name);
                map.insert(&key, status);
            } else if indent(line) > 0 {
                push_suite(&mut suite, line);
            }
        }
    }
    map
}

/// Group 1 of `^.*?<mark>\s*(.*)` on a line (no line break): the text after the line's first
/// `mark`, its leading whitespace (the regex's Unicode `\s`) dropped.
fn after_mark(line: &str, mark: char) -> Option<&str> {
    let at = line.find(mark)? + mark.len_utf8();
    Some(line[at..].trim_start_matches(char::is_whitespace))
}

/// `parse_log_next_v2` (alibaba-fusion/next 1.27): per `Running: ...)` block of cypress, its
/// suite line, then `    N) title` failures and `    ✓ title (` passes, named `suite: title`.
///
/// The regexes find the matches without captures (the captures cost most); each group is cut
/// from its match by hand (a unit test holds this to the regexes' groups).
pub fn next_v2(log: &str) -> RawStatuses {
    let suites = next_v2_suites(log);
    let mut map = RawStatuses::for_log(log.len());
    let mut key = String::new();
    let mut tests = Vec::new();
    for (i, &(end, name, _)) in suites.iter().enumerate() {
        let to = suites.get(i + 1).map_or(log.len(), |n| n.0 - n.2);
        let text = &log[end..to];
        next_v2_tests(text, &mut tests);
        for &(title, status) in &tests {
            key.clear();
            key.push_str(name);
            key.push_str(": ");
            key.push_str(py_strip(title));
            map.insert(&key, status);
        }
    }
    map
}

/// The patterns of `parse_log_next_v2`: the `Running:` block's suite, failures, passes.
fn next_v2_patterns() -> &'static [Regex; 3] {
    static R: OnceLock<[Regex; 3]> = OnceLock::new();
    R.get_or_init(|| {
        [
            r"Running:(.*)\)\n{3}\s{2}(.*)\n",
            r"(?m)^\s{4}\d+\)\s(.*)",
            r"(?m)^\s{4}✓\s(.*)\(",
        ]
        .map(|p| Regex::new(p).expect("built-in pattern"))
    })
}

/// Each match of the `Running:` pattern: its end, its group 2 (the suite) and its length.
fn next_v2_suites(log: &str) -> Vec<(usize, &str, usize)> {
    let mut suites = Vec::new();
    let b = log.as_bytes();
    let mut from = 0;
    let running = memchr::memmem::Finder::new("Running:");
    while let Some(start) = running.find(&b[from..]).map(|k| from + k) {
        match next_v2_suite_at(log, start) {
            Some((end, name)) => {
                suites.push((end, name, end - start));
                from = end;
            }
            None => from = start + 1,
        }
    }
    suites
}

/// A match of `Running:(.*)\)\n{3}\s{2}(.*)\n` at `start` (where `Running:` is): its end and
/// group 2. `.*` holds no line break, so group 1 ends at the `)` that ends the line, two empty
/// lines follow, then two `\s` characters (line breaks among them) and the suite's line.
fn next_v2_suite_at(log: &str, start: usize) -> Option<(usize, &str)> {
    let b = log.as_bytes();
    let body = start + "Running:".len();
    let eol = body + memchr::memchr(b'\n', &b[body..])?;
    if eol == body || b[eol - 1] != b')' || b.get(eol..eol + 3) != Some(b"\n\n\n".as_slice()) {
        return None;
    }
    let mut name = &log[eol + 3..];
    for _ in 0..2 {
        let c = name.chars().next().filter(|&c| regex_space(c))?;
        name = &name[c.len_utf8()..];
    }
    let at = log.len() - name.len();
    let end = at + memchr::memchr(b'\n', name.as_bytes())?;
    Some((end + 1, &log[at..end]))
}

/// The failures, then the passes, of one block (`(?m)^\s{4}\d+\)\s(.*)` and
/// `(?m)^\s{4}✓\s(.*)\(`, group 1 of each match in order) into `out`: found by hand, line
/// start by line start, or by the regexes where a line holds a character that may be a Unicode
/// `\d`.
fn next_v2_tests<'a>(text: &'a str, out: &mut Vec<(&'a str, &'static str)>) {
    out.clear();
    let by_hand = next_v2_scan(text, false, out).and_then(|()| next_v2_scan(text, true, out));
    if by_hand.is_ok() {
        return;
    }
    out.clear();
    let [_, fail, pass] = next_v2_patterns();
    // `\s{4}\d+` holds no `)` and `\s{4}` no `✓`: the first of each is the pattern's, and one
    // `\s` character follows it.
    fn group(t: &str, mark: char, tail: usize) -> &str {
        let at = t.find(mark).expect("the match holds its mark") + mark.len_utf8();
        let space = t[at..].chars().next().map_or(0, char::len_utf8);
        &t[at + space..t.len() - tail]
    }
    out.extend(
        fail.find_iter(text)
            .map(|m| (group(m.as_str(), ')', 0), "FAILED")),
    );
    out.extend(
        pass.find_iter(text)
            .map(|m| (group(m.as_str(), '✓', 1), "PASSED")),
    );
}

/// A character where the regex asks for `\d` that is not ASCII and may be a Unicode digit.
struct MaybeDigit;

/// The matches of next-v2's failure (`pass` false) or pass pattern in `text`, as `find_iter`
/// finds them: at each line start from the last match's end on.
fn next_v2_scan<'a>(
    text: &'a str,
    pass: bool,
    out: &mut Vec<(&'a str, &'static str)>,
) -> Result<(), MaybeDigit> {
    let b = text.as_bytes();
    let mut from = 0;
    loop {
        // The first line start at or after `from` (`(?m)^`: the start, or after a `\n`).
        let start = if from == 0 || b[from - 1] == b'\n' {
            from
        } else {
            match memchr::memchr(b'\n', &b[from..]) {
                Some(k) => from + k + 1,
                None => return Ok(()),
            }
        };
        if start > b.len() {
            return Ok(());
        }
        match next_v2_at(text, start, pass)? {
            Some((group, end)) => {
                out.push((group, if pass { "PASSED" } else { "FAILED" }));
                from = end;
            }
            None if start < b.len() => from = start + 1,
            None => return Ok(()),
        }
    }
}

/// A match of next-v2's failure or pass pattern at line start `at`: group 1 and the match's end.
fn next_v2_at(text: &str, at: usize, pass: bool) -> Result<Option<(&str, usize)>, MaybeDigit> {
    fn space(s: &str) -> Option<&str> {
        let c = s.chars().next().filter(|&c| regex_space(c))?;
        Some(&s[c.len_utf8()..])
    }
    let mut rest = &text[at..];
    for _ in 0..4 {
        let Some(after) = space(rest) else {
            return Ok(None);
        };
        rest = after;
    }
    let marked = if pass {
        rest.strip_prefix('✓')
    } else {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if rest[digits..]
            .chars()
            .next()
            .is_some_and(|c| !c.is_ascii() && c.is_numeric())
        {
            return Err(MaybeDigit);
        }
        rest[digits..].strip_prefix(')').filter(|_| digits > 0)
    };
    let Some(line) = marked.and_then(space) else {
        return Ok(None);
    };
    let start = text.len() - line.len();
    let line = &line[..memchr::memchr(b'\n', line.as_bytes()).unwrap_or(line.len())];
    if !pass {
        return Ok(Some((line, start + line.len())));
    }
    Ok(line
        .rfind('(')
        .map(|open| (&line[..open], start + open + 1)))
}

/// `parse_log_lighthouse_mocha` (GoogleChrome/lighthouse 9.5, 10.0, 10.2): after each
/// `running N test files`, up to `N passing`, `✔` and `N)` lines named by their indented suites
/// joined with ` - `, a trailing `(12ms)` dropped.
pub fn lighthouse_mocha(log: &str) -> RawStatuses {
    static RUNS: OnceLock<Regex> = OnceLock::new();
    static PASSING: OnceLock<Regex> = OnceLock::new();
    let runs = lazy(&RUNS, r"running\s\d+\stest\sfiles");
    let passing = lazy(&PASSING, r"\d+\spassing");
    let mut map = RawStatuses::for_log(log.len());
    let mut key = String::new();
    for run in runs.split(log).skip(1) {
        let run = py_strip(passing.split(run).next().unwrap_or(""));
        let mut suite: Suite = Vec::new();
        for line in lines(run) {
            match mocha_line(py_strip(line)) {
                Some((name, status)) => {
                    suite_key(&mut key, &suite, name);
                    map.insert(&key, status);
                }
                None if indent(line) > 0 => push_suite(&mut suite, line),
                None => {}
            }
        }
    }
    map
}

/// Upstream's lighthouse-mocha line patterns, in the order it tries them.
fn mocha_patterns() -> &'static [(Regex, &'static str)] {
    static PATTERNS: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        [
            (r"^✔\s(.*)\s\(\d+m+s\)", "PASSED"),
            (r"^✔\s(.*)", "PASSED"),
            (r"^\d+\)\s(.*)\s\(\d+m+s\)", "FAILED"),
            (r"^\d+\)\s(.*)", "FAILED"),
        ]
        .into_iter()
        .map(|(p, s)| (Regex::new(p).expect("built-in pattern"), s))
        .collect()
    })
}

/// Group 1 and the status of the first of [`mocha_patterns`] that matches the stripped line:
/// by hand where the text after the mark (`✔` or ASCII digits and `)`) is ASCII, through the
/// regexes otherwise (their `\s` and `\d` are Unicode). A unit test holds this to the regexes.
fn mocha_line(stripped: &str) -> Option<(&str, &'static str)> {
    let by_regex = || {
        mocha_patterns().iter().find_map(|(r, s)| {
            r.captures(stripped)
                .map(|c| (c.get(1).map_or("", |m| m.as_str()), *s))
        })
    };
    let (rest, status) = if let Some(rest) = stripped.strip_prefix('✔') {
        (rest, "PASSED")
    } else {
        let digits = stripped.bytes().take_while(u8::is_ascii_digit).count();
        match stripped[digits..].strip_prefix(')') {
            Some(rest) if digits > 0 => (rest, "FAILED"),
            _ if stripped.is_ascii() => return None,
            _ => return by_regex(),
        }
    };
    if !rest.is_ascii() {
        return by_regex();
    }
    let rest = rest.strip_prefix(|c: char| c.is_ascii() && ascii_space(c as u8))?;
    // `(.*)` is greedy: the name ends where the last `\s\(\d+m+s\)` starts.
    let b = rest.as_bytes();
    let timing = memchr::memrchr_iter(b'(', b).find_map(|open| {
        let start = open.checked_sub(1).filter(|&i| ascii_space(b[i]))?;
        let after = &b[open + 1..];
        let digits = after.iter().take_while(|c| c.is_ascii_digit()).count();
        let ms = after[digits..].iter().take_while(|&&c| c == b'm').count();
        let ok = digits > 0 && ms > 0 && after[digits + ms..].starts_with(b"s)");
        ok.then_some(start)
    });
    Some((timing.map_or(rest, |end| &rest[..end]), status))
}

/// `parse_log_lighthouse` for versions below 3: the `"fullTitle": "...",` lines of the mocha
/// JSON report after each `./node_modules/.bin/mocha --reporter json`, passes from the last
/// `"passes": [` to the last `]`, failures from the last `"failures": [` to the last `],`.
pub fn lighthouse_json(log: &str) -> RawStatuses {
    let key = memchr::memmem::Finder::new(FULL_TITLE);
    // Each part's text after its last `open` (`rsplit(open)`'s last piece), found from the end.
    let lists = [
        (memmem_rev("\"passes\": ["), "]", "PASSED"),
        (memmem_rev("\"failures\": ["), "],", "FAILED"),
    ];
    let mut map = RawStatuses::for_log(log.len());
    for part in parts_after(log, "./node_modules/.bin/mocha --reporter json") {
        for (open, close, status) in &lists {
            let after = open
                .rfind(part.as_bytes())
                .map_or(part, |at| &part[at + open.needle().len()..]);
            let body = memchr::memmem::rfind(after.as_bytes(), close.as_bytes())
                .map_or(after, |at| &after[..at]);
            for title in full_titles(body, &key) {
                map.insert(title, *status);
            }
        }
    }
    map
}

/// `log.split(cmd).skip(1)`: the text after each `cmd` up to the next, found by memmem.
fn parts_after<'a>(log: &'a str, cmd: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    let mut starts = memchr::memmem::find_iter(log.as_bytes(), cmd).map(move |at| at + cmd.len());
    let mut next = starts.next();
    std::iter::from_fn(move || {
        let start = next?;
        next = starts.next();
        Some(&log[start..next.map_or(log.len(), |n| n - cmd.len())])
    })
}

fn memmem_rev(needle: &str) -> memchr::memmem::FinderRev<'_> {
    memchr::memmem::FinderRev::new(needle)
}

const FULL_TITLE: &str = "\"fullTitle\":";

/// Group 1 of each match of `(?m)"fullTitle":\s"(.*)",\n` in `text`, found by hand (the
/// regex's captures cost most): at each `"fullTitle":` past the last match, one `\s`
/// character, `"`, and a line that ends in `",` (`.*` holds no line break and is greedy: the
/// group runs to that line's `",`).
fn full_titles<'a>(
    text: &'a str,
    key: &'a memchr::memmem::Finder<'a>,
) -> impl Iterator<Item = &'a str> + 'a {
    let b = text.as_bytes();
    let mut from = 0;
    std::iter::from_fn(move || {
        while let Some(at) = key.find(&b[from..]).map(|k| from + k) {
            from = at + 1;
            let after = &text[at + FULL_TITLE.len()..];
            let Some(space) = after.chars().next().filter(|&c| regex_space(c)) else {
                continue;
            };
            let Some(title) = after[space.len_utf8()..].strip_prefix('"') else {
                continue;
            };
            let start = text.len() - title.len();
            let Some(end) = memchr::memchr(b'\n', title.as_bytes()).map(|e| start + e) else {
                continue;
            };
            if end >= start + 2 && &b[end - 2..end] == b"\"," {
                from = end + 1;
                return Some(&text[start..end - 2]);
            }
        }
        None
    })
}

/// p5.js's `remove_json_blocks`: lines ending in `{` / `[` open a block dropped up to its
/// closing line; one-line `{...}` / `[...]` lines dropped.
fn remove_json_blocks(log: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let (mut obj, mut list) = (false, false);
    for line in lines(log) {
        let s = line.trim_end_matches(py_space);
        if s.ends_with('{') {
            obj = true;
            continue;
        }
        if s.ends_with('[') {
            list = true;
            continue;
        }
        if s == "}" && obj {
            obj = false;
            continue;
        }
        if s == "]" && list {
            list = false;
            continue;
        }
        if obj || list {
            continue;
        }
        if (s.starts_with('{') && s.ends_with('}')) || (s.starts_with('[') && s.ends_with(']')) {
            continue;
        }
        out.push(line);
    }
    out.join("\n")
}

pub fn p5js(log: &str) -> RawStatuses {
    let log = ansi_escape(log);
    let log = remove_xml_blocks(&remove_json_blocks(&log));
    let mut map = RawStatuses::new();
    // `^\s*(\d+)\)(.{0,1000}?):` with MULTILINE and DOTALL, by hand (the bounded lazy `.`
    // is too large for a regex here).
    let starts = std::iter::once(0).chain(log.match_indices('\n').map(|(i, _)| i + 1));
    let mut next = 0;
    for start in starts {
        if start < next {
            continue;
        }
        let rest = &log[start..];
        let after_ws = rest.len() - rest.trim_start_matches(py_space).len();
        let digits = rest[after_ws..]
            .chars()
            .take_while(char::is_ascii_digit)
            .count();
        // Python's `\d` is any Unicode digit; the logs' numbers are ASCII.
        if digits == 0 || !rest[after_ws + digits..].starts_with(')') {
            continue;
        }
        let body_start = start + after_ws + digits + 1;
        let Some((len, _)) = log[body_start..]
            .char_indices()
            .take(1001)
            .find(|(_, c)| *c == ':')
        else {
            continue;
        };
        let body = &log[body_start..body_start + len];
        next = body_start + len + 1;
        let mut last = 0;
        let valid = lines(body).all(|l| {
            let i = indent(l);
            let ok = i > last;
            last = i;
            ok
        });
        if valid {
            let names: Vec<&str> = lines(body).map(py_strip).collect();
            map.insert(names.join(":"), "FAILED");
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parsers::common::mixes;

    /// eslint's and openlayers' hand cuts and `squash` are the regexes', on every fixture log
    /// and on logs glued from the patterns' parts.
    #[test]
    fn failure_cuts_are_the_regexes_groups() {
        let starts = [
            "Chrome Headless 120.0.0.0 (Linux x86_64) ",
            "Chrome 1.2 (Linux x)y) ",
            "Chrome\tHeadless 1 (Linux\u{a0}x) ",
            "  1) ",
            "  12)",
            "case ",
            "case\t",
            "",
        ];
        let pieces = [
            "FAILED",
            " FAILED\n",
            "FAILED\n",
            "\n",
            " ",
            "  ",
            "\t",
            "\x0b",
            "\x1c",
            "\u{a0}",
            "é",
            "Error",
            "Error:",
            ": mismatch",
            ":\tmismatch",
            ")",
            "(",
            "a",
            "1.2",
            "\n  3) ",
            "\n     ",
            "Type",
        ];
        let ends = ["", "\n", " FAILED", " Error: x", ": mismatch 0.1", "Error"];
        let mut lines = super::super::hand_matcher_lines(&starts, &pieces, &ends, 30_000);
        let fixtures = lines.join("\n");
        let glued = lines.split_off(lines.len() - 30_000);
        let spaces = Regex::new(r"\s+").expect("pattern");
        let mut found = 0;
        for log in std::iter::once(fixtures).chain(glued.chunks(5).map(|c| c.join("\n"))) {
            for patterns in [&eslint_patterns()[..], &openlayers_patterns()[..]] {
                let mut want = RawStatuses::new();
                for &(r, group, _) in patterns {
                    for c in r.captures_iter(&log) {
                        let name = c.get(group).map_or("", |g| g.as_str());
                        let squashed = py_strip(&spaces.replace_all(name, " ")).to_string();
                        want.insert(squashed, "FAILED");
                    }
                }
                found += want.len();
                assert_eq!(failures(&log, patterns, squash), want, "{log:?}");
            }
        }
        assert!(found > 5_000, "{found} names");
    }

    /// next-v1's marks found by hand give the regexes' (`^.*?✗\s*(.*)`, then `^.*?✓\s*(.*)`)
    /// status and group on every fixture line and on adversarial lines, and the parser is
    /// upstream's (by those regexes) on logs glued from them.
    #[test]
    fn next_v1_marks_are_the_regexes() {
        let fail = Regex::new(r"^.*?✗\s*(.*)").expect("pattern");
        let pass = Regex::new(r"^.*?✓\s*(.*)").expect("pattern");
        let by_regex = |line: &str| {
            let hit = |r: &Regex, s| {
                r.captures(line)
                    .map(|c| (c.get(1).map_or("", |m| m.as_str()).to_string(), s))
            };
            hit(&fail, "FAILED").or_else(|| hit(&pass, "PASSED"))
        };
        let starts = [
            "",
            "  ",
            "    ",
            "\t",
            " xvfb-run ",
            "TOTAL",
            "  in",
            "\u{a0}",
            "LOG: ",
        ];
        let pieces = [
            "✓",
            "✗",
            " ",
            "  ",
            "\t",
            "\u{a0}",
            "\u{2003}",
            "\x1c",
            "\r",
            "a",
            "é",
            "Starting browser Chrome",
            " xvfb-run ",
            "\n",
            "\n\n",
            "AssertionError: #",
            "suite",
            "\x1b[32m",
        ];
        let ends = ["", " ", "✓", " (5ms)", "\u{a0}"];
        let lines = super::super::hand_matcher_lines(&starts, &pieces, &ends, 100_000);
        let mut hits = 0;
        for line in lines.iter().flat_map(|l| l.split('\n')) {
            let want = by_regex(line);
            hits += usize::from(want.is_some());
            let got = after_mark(line, '✗')
                .map(|n| (n.to_string(), "FAILED"))
                .or_else(|| after_mark(line, '✓').map(|n| (n.to_string(), "PASSED")));
            assert_eq!(got, want, "{line:?}");
        }
        assert!(hits > 30_000, "{hits} hits");
        let mut tests = 0;
        for chunk in lines.chunks(9) {
            let log = chunk.join("\n");
            let want = next_v1_regexes(&log);
            tests += want.len();
            assert_eq!(next_v1(&log), want, "{log:?}");
        }
        assert!(tests > 10_000, "{tests} tests");
    }

    /// `parse_log_next_v1` by its regexes' captures and a suite of owned names, as `next_v1`
    /// was: the reference its hand matcher is held to.
    fn next_v1_regexes(log: &str) -> RawStatuses {
        static ASSERT: OnceLock<Regex> = OnceLock::new();
        static FAIL: OnceLock<Regex> = OnceLock::new();
        static PASS: OnceLock<Regex> = OnceLock::new();
        let assert = lazy(&ASSERT, r"(?s)AssertionError:\s+#(.*?)\n\n");
        let fail = lazy(&FAIL, r"^.*?✗\s*(.*)");
        let pass = lazy(&PASS, r"^.*?✓\s*(.*)");
        let log = ansi_escape(log);
        let log = assert.replace_all(&log, "");
        let mut map = RawStatuses::new();
        let mut suite: Vec<(String, usize)> = Vec::new();
        for run in log.split(" xvfb-run ").skip(1) {
            let run = run.rsplit("Starting browser Chrome").next().unwrap_or(run);
            for line in run.split('\n') {
                if line.starts_with("TOTAL") {
                    break;
                }
                let stripped = py_strip(line);
                if ["ERROR", "LOG", "WARN", "Check", "in"]
                    .iter()
                    .any(|x| stripped.starts_with(x))
                {
                    continue;
                }
                let hit = fail
                    .captures(line)
                    .map(|c| (c, "FAILED"))
                    .or_else(|| pass.captures(line).map(|c| (c, "PASSED")));
                if let Some((c, status)) = hit {
                    let mut names: Vec<&str> = suite.iter().map(|(n, _)| n.as_str()).collect();
                    names.push(c.get(1).map_or("", |m| m.as_str()));
                    map.insert(names.join(" - "), status);
                } else if indent(line) > 0 {
                    let n = indent(line);
                    while suite.last().is_some_and(|(_, i)| *i >= n) {
                        suite.pop();
                    }
                    suite.push((py_strip(line).to_string(), n));
                }
            }
        }
        map
    }

    /// lighthouse-json's titles cut by hand are the regex's group on every fixture log and
    /// on adversarial logs glued from the pattern's parts.
    #[test]
    fn lighthouse_json_titles_are_the_regexes_group() {
        let r = Regex::new(r#"(?m)"fullTitle":\s"(.*)",\n"#).expect("pattern");
        let starts = [
            "\"fullTitle\": \"",
            "\"fullTitle\":\u{a0}\"",
            "\"fullTitle\":\n\"",
            "  ",
            "",
        ];
        let pieces = [
            "\"",
            "\",",
            "\",\n",
            "\n",
            ",",
            " ",
            "\u{2003}",
            "é",
            "a",
            "\"fullTitle\": \"",
            "\"fullTitle\":",
        ];
        let ends = ["\",", "", "\"", "\",\n"];
        let lines = super::super::hand_matcher_lines(&starts, &pieces, &ends, 100_000);
        let mut found = 0;
        for chunk in lines.chunks(5) {
            let log = chunk.join("\n");
            let want: Vec<&str> = r
                .captures_iter(&log)
                .map(|c| c.get(1).map_or("", |m| m.as_str()))
                .collect();
            let key = memchr::memmem::Finder::new(FULL_TITLE);
            let got: Vec<&str> = full_titles(&log, &key).collect();
            found += want.len();
            assert_eq!(got, want, "{log:?}");
        }
        assert!(found > 10_000, "{found} titles");
    }

    /// lighthouse-mocha's hand matcher gives the regexes' group and status on every fixture
    /// line and on adversarial lines glued from the patterns' parts.
    #[test]
    fn lighthouse_mocha_hand_matcher_agrees_with_the_regexes() {
        let starts = [
            "✔ ",
            "✔\t",
            "✔\u{a0}",
            "✔",
            "1) ",
            "12)\t",
            "٣) ",
            "1٣) ",
            "1)",
            "x",
            "",
        ];
        let pieces = [
            " (", "(", ")", "1", "12", "ms", "mms", "s)", "ms)", " ", "\t", "\x0b", "\r", "a", "é",
            "٣", "\u{a0}", "✔ ", "1) ",
        ];
        let ends = [
            "",
            " (12ms)",
            " (3mms)",
            "(4ms)",
            " (ms)",
            " (1s)",
            " (٣ms)",
            "\u{a0}(4ms)",
            " (9ms) x",
            ")",
        ];
        let lines = super::super::hand_matcher_lines(&starts, &pieces, &ends, 200_000);
        let matched = super::super::assert_hand_matches_regex(
            &lines,
            py_strip,
            |l| {
                mocha_patterns().iter().find_map(|(r, s)| {
                    r.captures(l)
                        .map(|c| (c.get(1).map_or("", |m| m.as_str()), *s))
                })
            },
            mocha_line,
        );
        assert!(matched > 50_000, "{matched} lines matched");
    }

    /// chart-js's names cut by hand are the regex's group, on every fixture log and on logs
    /// glued from the pattern's parts.
    #[test]
    fn chart_js_cuts_the_regexes_group() {
        let starts = [
            "Chrome 120.0.0.0 (Linux x86_64) ",
            "Chrome 1 (a) ",
            "Chrome\t1.2\t(",
            "Chrome\n1 (",
            "Chrome 1\u{a0}(x)\u{a0}",
            "\x1b[31mChrome 1 (x) ",
            "",
        ];
        let pieces = [
            "(",
            ")",
            ") ",
            ")\t",
            ")\r",
            ")\u{a0}",
            "()",
            " ",
            "\t",
            "\r",
            "\n",
            "a",
            "é",
            "1.2",
            "FAILED",
            "FAILED\n",
            "Chrome 1 (",
            "\x1b[39m",
        ];
        let ends = [
            "FAILED",
            " FAILED",
            "",
            "FAILED\r",
            "é FAILED",
            "FAILED\x1b[39m",
        ];
        let lines = super::super::hand_matcher_lines(&starts, &pieces, &ends, 100_000);
        let r = chart_js_pattern();
        let mut found = 0;
        for chunk in lines.chunks(5) {
            let log = chunk.join("\n");
            let mut want = RawStatuses::new();
            for c in r.captures_iter(&ansi_escape(&log)) {
                want.insert(c.get(1).map_or("", |g| g.as_str()), "FAILED");
            }
            found += want.len();
            assert_eq!(chart_js(&log), want, "{log:?}");
        }
        assert!(found > 10_000, "{found} names");
    }

    /// marked's hand matcher gives the regex's group on every fixture line and on adversarial
    /// lines.
    #[test]
    fn marked_hand_matcher_agrees_with_the_regex() {
        let starts = [
            "1) ", "12)\t", "1)\x0b", "٣) ", "1٣) ", "1)", "1)\u{a0}", " 1) ", "x", "",
        ];
        let pieces = ["1", ")", " ", "\t", "\r", "a", "é", "٣", "\u{a0}", "\x1c"];
        let ends = ["", " ", "\u{2003}", "\x1c"];
        let lines = super::super::hand_matcher_lines(&starts, &pieces, &ends, 100_000);
        let matched = super::super::assert_hand_matches_regex(
            &lines,
            |l| l,
            |l| {
                marked_pattern()
                    .captures(l)
                    .map(|c| c.get(1).map_or("", |m| m.as_str()))
            },
            marked_name,
        );
        assert!(matched > 30_000, "{matched} lines matched");
    }

    /// calypso's hand matcher gives the regexes' group on every fixture line and on
    /// adversarial lines glued from the patterns' parts.
    #[test]
    fn calypso_hand_matcher_agrees_with_the_regexes() {
        let starts = [
            "  ✓ ",
            "    ✕ ",
            "\t✓\t",
            "✓ ",
            " ✕",
            "\u{a0}✓ ",
            " \x1c✓ ",
            "  ✓\u{a0}",
            "  ✕\x0b",
            " \u{2003} ✓ ",
        ];
        let pieces = [
            "(", ")", "1", "12", "ms", "ms)", "(3ms)", " ", "\t", "\r", "a", "é", "٣", "\u{a0}",
            "✓", "✕",
        ];
        let ends = [
            "", " (12ms)", "(3ms)", " (ms)", " (1s)", " (٣ms)", " (9ms) x", ")", "ms)",
        ];
        let lines = super::super::hand_matcher_lines(&starts, &pieces, &ends, 200_000);
        let mut matched = 0;
        for line in &lines {
            let stripped = py_strip(line);
            for mark in ['✓', '✕'] {
                if stripped.starts_with(mark) {
                    let want = calypso_regex(line, mark);
                    matched += usize::from(want.is_some());
                    assert_eq!(calypso_name(line, mark), want, "{line:?}");
                }
            }
        }
        assert!(matched > 50_000, "{matched} lines matched");
    }

    /// `parse_log_next_v2` by the regexes' own captures, as `next_v2` was: the reference its
    /// hand cuts are held to.
    fn next_v2_captures(log: &str) -> RawStatuses {
        static SUITES: OnceLock<Regex> = OnceLock::new();
        static FAIL: OnceLock<Regex> = OnceLock::new();
        static PASS: OnceLock<Regex> = OnceLock::new();
        let suites = lazy(&SUITES, r"Running:(.*)\)\n{3}\s{2}(.*)\n");
        let fail = lazy(&FAIL, r"(?m)^\s{4}\d+\)\s(.*)");
        let pass = lazy(&PASS, r"(?m)^\s{4}✓\s(.*)\(");
        let matches: Vec<regex::Captures<'_>> = suites.captures_iter(log).collect();
        let mut map = RawStatuses::new();
        for (i, c) in matches.iter().enumerate() {
            let name = c.get(2).map_or("", |m| m.as_str());
            let start = c.get(0).expect("whole match").end();
            let end = matches
                .get(i + 1)
                .map_or(log.len(), |n| n.get(0).expect("whole match").start());
            let text = &log[start..end];
            for f in fail.captures_iter(text) {
                map.insert(format!("{name}: {}", py_strip(&f[1])), "FAILED");
            }
            for p in pass.captures_iter(text) {
                map.insert(format!("{name}: {}", py_strip(&p[1])), "PASSED");
            }
        }
        map
    }

    /// `ansi_escape` by hand removes what upstream's regex removes, on random mixes of
    /// escapes, truncated escapes, the class's edges (`[`, `\\`, `Z`, `_`, `` ` ``) and text.
    #[test]
    fn ansi_escape_is_the_regex() {
        let r = Regex::new(r"\x1B(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])").expect("pattern");
        let parts = [
            "\x1b",
            "\x1b[",
            "[",
            "\\",
            "Z",
            "_",
            "`",
            "@",
            "^",
            "]",
            "0",
            ";",
            "?",
            " ",
            "/",
            "m",
            "~",
            "\x7f",
            "é",
            "\n",
            "a",
            "\x1b[31m",
            "\x1b[2K",
            "\x1b[?25l",
        ];
        for log in mixes(
            &parts,
            100_000,
            12,
            0x9e37_79b9_7f4a_7c15,
            0x2545_f491_4f6c_dd1d,
        ) {
            assert_eq!(ansi_escape(&log), r.replace_all(&log, ""), "{log:?}");
        }
    }

    /// next-v2's hand cuts are the regexes' groups, on every fixture log and on logs glued
    /// from the patterns' parts.
    #[test]
    fn next_v2_cuts_the_regexes_groups() {
        let starts = [
            "  Running:  a.spec.js (1 of 2)",
            "Running:",
            "    ",
            "  ",
            "",
        ];
        let pieces = [
            ")\n\n\n",
            "\n\n\n  ",
            "  Card\n",
            "\n",
            "    1) ",
            "    ✓ ",
            "    ✓\u{a0}x",
            "(",
            ")",
            " ",
            "\t",
            "\u{a0}",
            "٣",
            "12",
            "é",
            "a",
            "Running: x (2 of 2)",
            "\u{2003}",
        ];
        let ends = ["", "\n", " (5ms)", ")\n\n\n  S\n", "(1"];
        let mut lines = super::super::hand_matcher_lines(&starts, &pieces, &ends, 100_000);
        let fixtures = lines.join("\n");
        let glued = lines.split_off(lines.len() - 100_000);
        let mut checked = 0;
        for log in std::iter::once(fixtures).chain(glued.chunks(7).map(|c| c.join("\n"))) {
            let want = next_v2_captures(&log);
            checked += want.len();
            assert_eq!(next_v2(&log), want, "{log:?}");
        }
        assert!(checked > 3_000, "{checked} tests");
    }

    use super::super::test_map as m;

    /// bpmn-js's names cut by hand are the regexes' groups, on the fixture logs and on a log of
    /// adversarial lines glued from the patterns' parts.
    #[test]
    fn bpmn_js_cuts_the_regexes_groups() {
        let starts = [
            "[2KPhantomJS 2.1.1 (Linux 0.0.0) ",
            "2KPhantomJS 2.1 (Linux x86_64)\t",
            "Chrome Headless 120 (Linux x86_64) ",
            "Chrome\u{a0}Headless ",
            "HeadlessChrome 120.0.0.0 (Linux 0.0.0) ",
            "HeadlessChrome 1 (Linux 1)\u{2003}",
            "",
        ];
        let pieces = [
            " (Linux x86_64) ",
            "(Linux x86_64)",
            " (Linux\tx86_64)\n",
            ")",
            "(",
            "FAILED",
            "FAILED\n",
            "\n",
            " ",
            "\t",
            "é",
            "\u{a0}",
            "a",
            "1.2",
            "Chrome Headless ",
        ];
        let ends = ["FAILED", " FAILED", "", "FAILED\r", "é FAILED"];
        let lines = super::super::hand_matcher_lines(&starts, &pieces, &ends, 100_000);
        let log = lines.join("\n");
        let mut want = RawStatuses::new();
        for (r, group) in bpmn_js_patterns() {
            for c in r.captures_iter(&log) {
                want.insert(c.get(group).map_or("", |g| g.as_str()), "FAILED");
            }
        }
        assert!(want.len() > 10_000, "{} names", want.len());
        assert_eq!(bpmn_js(&log), want);
    }

    /// carbon's hand matcher gives the regexes' status and name on every line of every
    /// fixture log and on adversarial lines glued from the patterns' parts.
    #[test]
    fn carbon_hand_matcher_agrees_with_the_regexes() {
        let starts = [
            "PASS ",
            "FAIL ",
            "PASS\t",
            "FAIL\u{a0}",
            "PASS",
            "PASSx",
            " PASS ",
            "FAIL\x0b",
            "",
        ];
        let pieces = [
            " (", "(", ")", "1", "12", ".", "5.123", "ms", "ms)", "s)", " s)", "s", " ", "\t",
            "\x0b", "\r", "a", "é", "٣", "\u{a0}", "PASS ",
        ];
        let ends = [
            "",
            " (12ms)",
            " (5.123 s)",
            " (12s)",
            "(3ms)",
            " (1.s)",
            " (.ms)",
            " (ms)",
            " (٣ms)",
            "\u{a0}(4ms)",
            " (2\tms)",
            " (2\ts)",
            " (9ms) x",
            " (1 s)",
            ")",
        ];
        let lines = super::super::hand_matcher_lines(&starts, &pieces, &ends, 200_000);
        let matched = super::super::assert_hand_matches_regex(
            &lines,
            |l| l,
            |l| {
                carbon_patterns().iter().find_map(|(r, s)| {
                    r.captures(l)
                        .map(|c| (*s, c.get(1).map_or("", |m| m.as_str())))
                })
            },
            carbon_line,
        );
        assert!(matched > 50_000, "{matched} lines matched");
    }

    #[test]
    fn calypso_names_tests_by_their_suites() {
        let log = "+ ./node_modules/.bin/jest client/a.js\n PASS client/a.js\n  suite\n    inner\n      ✓ works (5ms)\n      ✕ breaks\n  other\n    ✓ top\nTest Suites: 1 passed\n    ✓ after the end\n";
        assert_eq!(
            calypso(log),
            m(&[
                ("PASS client/a.js - suite - inner - works", "PASSED"),
                ("PASS client/a.js - suite - inner - breaks", "FAILED"),
                ("PASS client/a.js - other - top", "PASSED"),
            ])
        );
    }

    #[test]
    fn carbon_drops_the_timing_and_grommet_lets_pass_win() {
        let log = "PASS src/a.test.js (12ms)\nFAIL src/b.test.js (1.5 s)\nPASS src/c.test.js\n";
        assert_eq!(
            carbon(log),
            m(&[
                ("src/a.test.js", "PASSED"),
                ("src/b.test.js", "FAILED"),
                ("src/c.test.js", "PASSED"),
            ])
        );
        let log = "PASS a (3 s)\nFAIL a (3 s)\n";
        assert_eq!(grommet(log), m(&[("a", "PASSED")]));
    }

    #[test]
    fn p5js_keeps_indented_headers_and_drops_blocks() {
        let log = "  1) Core\n       renders:\n     Error: x\n  2) flat\nheader:\n{\n  \"a\": 1\n}\n<div>\n3) in xml:\n</div>\n";
        assert_eq!(p5js(log), m(&[("Core:renders", "FAILED")]));
        assert_eq!(remove_xml_blocks("a<b>x<b>y</b>z"), "a<b>z");
    }

    #[test]
    fn failure_only_parsers() {
        assert_eq!(
            marked("1) Spec a\n  2) not at start\n"),
            m(&[("Spec a", "FAILED")])
        );
        let log = "Chrome 120.0.0.0 (Linux x86_64) Core.Helpers should work FAILED\n";
        assert_eq!(
            chart_js(&format!("\x1b[31m{log}")),
            m(&[("Core.Helpers should work ", "FAILED")])
        );
    }
}
