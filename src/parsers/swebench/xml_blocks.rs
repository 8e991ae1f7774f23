//! p5.js's `remove_xml_blocks` in one pass over the log. Upstream loops: it searches the whole
//! log for the leftmost `<(\w+)>[\s\S]*?<\/\1>`, replaces the block by its other `<tag>`
//! openings, rebuilds the log and searches again from its start (quadratic: 3.3 s at 4 MB).
//! Here the log is read once, left to right, into an output that only grows or is cut back to
//! where a block starts, and the result is the loop's, byte for byte:
//!
//! - whether an opening has a closing after it is looked up in an index of the log's closings,
//!   not searched for;
//! - the openings a block leaves (`<b>` twice from `<b>x<b>y<b>z</b>`) are a count that the
//!   next `</b>` decrements, written out only when no closing follows;
//! - cutting a block out with nothing left in its place joins the text around it, and the join
//!   can form a tag (`<a` + `b>`, `</` + `a>`): only the partial tag ending the output can, so
//!   it is kept track of, and a closing formed there closes the earliest opening of its name
//!   still in the output (the loop's next search, from the start, finds that one first).
//!
//! Not here: p5.js's other steps (`multimodal.rs`); the reference loop lives in the tests.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;

use super::lazy;

/// The length of the run of `\w` characters (the regex crate's, as upstream's port uses)
/// that starts `s`.
fn word_len(s: &str) -> usize {
    static W: OnceLock<Regex> = OnceLock::new();
    lazy(&W, r"\A\w*").find(s).map_or(0, |m| m.end())
}

/// The tag `<name>` or `</name>` that starts `s` (which starts with `<`): whether it closes,
/// its name and its length.
fn tag(s: &str) -> Option<(bool, &str, usize)> {
    let closing = s[1..].starts_with('/');
    let from = 1 + usize::from(closing);
    let n = word_len(&s[from..]);
    (n > 0 && s[from + n..].starts_with('>')).then(|| (closing, &s[from..from + n], from + n + 1))
}

/// Where each closing tag of the log starts, by name.
struct Closings<'a>(HashMap<&'a str, Vec<usize>>);

impl<'a> Closings<'a> {
    fn of(log: &'a str) -> Closings<'a> {
        let mut at: HashMap<&str, Vec<usize>> = HashMap::new();
        for p in memchr::memchr_iter(b'<', log.as_bytes()) {
            if let Some((true, name, _)) = tag(&log[p..]) {
                at.entry(name).or_default().push(p);
            }
        }
        Closings(at)
    }

    /// The start of the first `</name>` at or after `from`.
    fn first(&self, name: &str, from: usize) -> Option<usize> {
        let at = self.0.get(name)?;
        at.get(at.partition_point(|&p| p < from)).copied()
    }
}

/// `count` openings `<name>` in a row at `pos` of the output, none closed by anything after
/// them, and the partial tag that ended the output before them.
struct Opening<'a> {
    pos: usize,
    name: Cow<'a, str>,
    count: usize,
    tail_before: Option<usize>,
}

/// What the loop does next.
enum Step<'a> {
    /// Read on for the next `<`.
    Scan,
    /// `n` openings `<name>` left by a block stand between the output and the log.
    Pending(Cow<'a, str>, usize),
    /// A block was cut out and nothing left in its place: the output meets the log.
    Join,
    Done,
}

/// The output so far and the log still to read; the loop's string is `out` + `log[at..]`
/// (with any pending openings between them), and no block starts inside `out`.
struct Remover<'a> {
    log: &'a str,
    closings: Closings<'a>,
    at: usize,
    out: String,
    /// The start of the partial tag (`<`, `</`, `<name` or `</name`) that ends `out`, if any.
    tail: Option<usize>,
    /// Each `<` in `out` that started no tag when written, with the partial tag before it.
    lts: Vec<(usize, Option<usize>)>,
    /// Every opening in `out`, in order (none has a closing after it).
    openings: Vec<Opening<'a>>,
    /// By name: indices into `openings` and the number of openings they hold.
    by_name: HashMap<Cow<'a, str>, (Vec<usize>, usize)>,
}

impl<'a> Remover<'a> {
    fn new(log: &'a str) -> Remover<'a> {
        Remover {
            log,
            closings: Closings::of(log),
            at: 0,
            out: String::with_capacity(log.len()),
            tail: None,
            lts: Vec::new(),
            openings: Vec::new(),
            by_name: HashMap::new(),
        }
    }

    fn run(mut self) -> String {
        let mut step = Step::Scan;
        loop {
            step = match step {
                Step::Scan => self.scan(),
                Step::Pending(name, n) => self.pending(name, n),
                Step::Join => self.join(),
                Step::Done => return self.out,
            }
        }
    }

    /// The number of `<name>` in `log[from..to]`.
    fn openings_in(&self, name: &str, from: usize, to: usize) -> usize {
        let open = format!("<{name}>");
        memchr::memmem::find_iter(&self.log.as_bytes()[from..to], open.as_bytes()).count()
    }

    /// Writes text holding no `<`, keeping the partial tag up to date.
    fn push_plain(&mut self, text: &str) {
        if let Some(s0) = self.tail {
            let body = self.out.len() - s0 - 1;
            let rest = if body == 0 {
                text.strip_prefix('/').unwrap_or(text)
            } else {
                text
            };
            if word_len(rest) != rest.len() {
                self.tail = None;
            }
        }
        self.out.push_str(text);
    }

    /// Writes a `<` that starts no tag.
    fn push_lt(&mut self) {
        self.lts.push((self.out.len(), self.tail));
        self.tail = Some(self.out.len());
        self.out.push('<');
    }

    /// Notes `count` openings `<name>` at `pos` of the output.
    fn note(&mut self, pos: usize, name: Cow<'a, str>, count: usize, tail_before: Option<usize>) {
        let entry = self.by_name.entry(name.clone()).or_default();
        entry.0.push(self.openings.len());
        entry.1 += count;
        self.openings.push(Opening {
            pos,
            name,
            count,
            tail_before,
        });
    }

    /// Cuts the output back to `len` bytes, forgetting what lay beyond.
    fn truncate(&mut self, len: usize) {
        self.out.truncate(len);
        while self.lts.last().is_some_and(|l| l.0 >= len) {
            self.lts.pop();
        }
        while self.openings.last().is_some_and(|o| o.pos >= len) {
            let o = self.openings.pop().expect("checked");
            let entry = self.by_name.get_mut(&o.name).expect("noted");
            entry.0.pop();
            entry.1 -= o.count;
        }
    }

    /// Reads up to the next `<` and what it starts.
    fn scan(&mut self) -> Step<'a> {
        let log = self.log;
        let Some(t) = memchr::memchr(b'<', &log.as_bytes()[self.at..]).map(|i| i + self.at) else {
            self.push_plain(&log[self.at..]);
            self.at = log.len();
            return Step::Done;
        };
        self.push_plain(&log[self.at..t]);
        match tag(&log[t..]) {
            Some((false, name, len)) => match self.closings.first(name, t + len) {
                Some(q) => {
                    let count = self.openings_in(name, t, q);
                    self.at = q + name.len() + 3;
                    Step::Pending(Cow::Borrowed(name), count - 1)
                }
                None => {
                    self.note(self.out.len(), Cow::Borrowed(name), 1, self.tail);
                    self.out.push_str(&log[t..t + len]);
                    self.tail = None;
                    self.at = t + len;
                    Step::Scan
                }
            },
            Some((true, _, len)) => {
                self.out.push_str(&log[t..t + len]);
                self.tail = None;
                self.at = t + len;
                Step::Scan
            }
            None => {
                self.push_lt();
                self.at = t + 1;
                Step::Scan
            }
        }
    }

    /// `n` openings `<name>` before `log[at..]`: the next `</name>` closes the first of them
    /// (a block from it to there, its openings the `n` and those on the way, less one), or
    /// none does and they are written out.
    fn pending(&mut self, name: Cow<'a, str>, n: usize) -> Step<'a> {
        if n == 0 {
            return Step::Join;
        }
        match self.closings.first(&name, self.at) {
            Some(q) => {
                let more = self.openings_in(&name, self.at, q);
                self.at = q + name.len() + 3;
                Step::Pending(name, n + more - 1)
            }
            None => {
                let open = format!("<{name}>");
                self.note(self.out.len(), name, n, self.tail);
                for _ in 0..n {
                    self.out.push_str(&open);
                }
                self.tail = None;
                Step::Scan
            }
        }
    }

    /// The output meets `log[at..]` where a block was cut out: the partial tag ending the
    /// output may now be a whole one.
    fn join(&mut self) -> Step<'a> {
        let log = self.log;
        let Some(s0) = self.tail else {
            return Step::Scan;
        };
        let body = &self.out[s0 + 1..];
        let rest = &log[self.at..];
        let slash_in_rest = body.is_empty() && rest.starts_with('/');
        let closing = slash_in_rest || body.starts_with('/');
        let in_out = &body[usize::from(closing && !slash_in_rest)..];
        let r0 = usize::from(slash_in_rest);
        let m = word_len(&rest[r0..]);
        if in_out.len() + m == 0 || !rest[r0 + m..].starts_with('>') {
            return Step::Scan;
        }
        let name: Cow<'a, str> = if in_out.is_empty() {
            Cow::Borrowed(&rest[r0..r0 + m])
        } else {
            Cow::Owned(format!("{in_out}{}", &rest[r0..r0 + m]))
        };
        let end = self.at + r0 + m + 1;
        if closing {
            return self.closed_at_join(name, end);
        }
        let (lt, tail_before) = *self.lts.last().expect("the partial tag's `<`");
        debug_assert_eq!(lt, s0);
        match self.closings.first(&name, end) {
            Some(q) => {
                let count = 1 + self.openings_in(&name, end, q);
                self.truncate(s0);
                self.tail = tail_before;
                self.at = q + name.len() + 3;
                Step::Pending(name, count - 1)
            }
            None => {
                self.note(s0, name, 1, tail_before);
                self.out.push_str(&log[self.at..end]);
                self.tail = None;
                self.at = end;
                Step::Scan
            }
        }
    }

    /// A closing `</name>` formed where the output meets the log, ending at `end` of the log:
    /// it closes the earliest opening of its name in the output, if any (a block from there).
    fn closed_at_join(&mut self, name: Cow<'a, str>, end: usize) -> Step<'a> {
        let first = match self.by_name.get(&name) {
            Some((at, total)) if !at.is_empty() => Some((at[0], *total)),
            _ => None,
        };
        let Some((i, total)) = first else {
            self.out.push_str(&self.log[self.at..end]);
            self.tail = None;
            self.at = end;
            return Step::Scan;
        };
        self.at = end;
        let (pos, kept, tail_before) = {
            let o = &self.openings[i];
            (o.pos, o.count, o.tail_before)
        };
        let n = total - 1;
        if n == 0 || self.closings.first(&name, end).is_some() {
            self.truncate(pos);
            self.tail = tail_before;
            return Step::Pending(name, n);
        }
        // The `n` openings left stay unclosed: keep as many of the first run as there are.
        let keep = kept.min(n);
        let open = format!("<{name}>");
        self.truncate(pos + keep * open.len());
        self.tail = None;
        self.by_name.get_mut(&name).expect("noted").1 = n;
        self.openings[i].count = n;
        for _ in keep..n {
            self.out.push_str(&open);
        }
        Step::Scan
    }
}

/// p5.js's `remove_xml_blocks`: each block replaced by its other opening tags, repeatedly.
pub(super) fn remove_xml_blocks(log: &str) -> String {
    Remover::new(log).run()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The leftmost match of upstream's `<(\w+)>[\s\S]*?<\/\1>`: its byte range and tag name.
    fn xml_block(s: &str) -> Option<(usize, usize, String)> {
        static OPEN: OnceLock<Regex> = OnceLock::new();
        let open = lazy(&OPEN, r"<(\w+)>");
        let mut from = 0;
        while let Some(c) = open.captures_at(s, from) {
            let m = c.get(0).expect("whole match");
            let tag = &c[1];
            if let Some(end) = s[m.end()..].find(&format!("</{tag}>")) {
                return Some((m.start(), m.end() + end + tag.len() + 3, tag.to_string()));
            }
            // `\w+` cannot match a shorter name here (`>` must follow): try the next `<`.
            from = m.start() + 1;
        }
        None
    }

    /// Upstream's loop, literally (quadratic): the reference the one pass is held to.
    fn literal(log: &str) -> String {
        let mut s = log.to_string();
        while let Some((start, end, tag)) = xml_block(&s) {
            let opening = format!("<{tag}>");
            let n = s[start..end].matches(&opening).count().saturating_sub(1);
            s = format!("{}{}{}", &s[..start], opening.repeat(n), &s[end..]);
        }
        s
    }

    /// Logs glued from tag parts by a seeded generator: nested and repeated blocks, unclosed
    /// openings, closings with no opening, partial tags that a cut completes (`<a` + `b>`,
    /// `</` + `a>`), names in other scripts.
    fn glued(seed: u64, count: usize, max_pieces: usize) -> Vec<String> {
        // The first set finds most kinds of input; the second, few pieces that mostly form
        // tags when cut, the chains of cuts.
        const WIDE: &[&str] = &[
            "<", ">", "/", "a", "b", "ab", "<a>", "</a>", "<b>", "</b>", "<ab>", "</ab>", "<a",
            "</", "a>", "/a>", "b>", "/b>", "<<", "x", " ", "\n", "é", "<é>", "</é>", "٣",
            "<a><a>", "</a></a>", "<c>", "</c>", "<a b>", "{", "_",
        ];
        const NARROW: &[&str] = &[
            "<", "/", ">", "a", "b", "<a>", "</a>", "<b>", "</b>", "</", "<a",
        ];
        let pieces = if seed.is_multiple_of(2) { NARROW } else { WIDE };
        let mut next = super::super::xorshift(seed);
        (0..count)
            .map(|_| {
                let len = next(max_pieces + 1);
                (0..len).map(|_| pieces[next(pieces.len())]).collect()
            })
            .collect()
    }

    #[test]
    fn one_pass_agrees_with_the_loop_on_the_fixtures() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs");
        let mut checked = 0;
        for dir in fs_err::read_dir(root).expect("fixtures").flatten() {
            let Ok(files) = fs_err::read_dir(dir.path()) else {
                continue;
            };
            for file in files.flatten() {
                let path = file.path();
                if path.extension().is_some_and(|x| x == "log") {
                    let text =
                        String::from_utf8_lossy(&fs_err::read(&path).expect("log")).into_owned();
                    assert_eq!(remove_xml_blocks(&text), literal(&text), "{path:?}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 50, "{checked} logs");
    }

    #[test]
    fn one_pass_agrees_with_the_loop_on_glued_logs() {
        let mut changed = 0;
        let runs = [
            (1, 200_000, 12),
            (2, 200_000, 12),
            (3, 20_000, 60),
            (4, 20_000, 60),
            (5, 500, 1_000),
            (6, 500, 1_000),
        ];
        for (seed, count, pieces) in runs {
            for log in glued(seed, count, pieces) {
                let want = literal(&log);
                changed += usize::from(want != log);
                assert_eq!(remove_xml_blocks(&log), want, "{log:?}");
            }
        }
        assert!(changed > 100_000, "{changed} logs changed");
    }

    #[test]
    fn cuts_that_form_tags() {
        for (log, want) in [
            ("a<b>x<b>y</b>z", "a<b>z"),
            ("<b><b><b>x</b>y</b>z</b>!", "!"),
            ("<a><b></a></b>", "</b>"),
            ("<x<c></c>y>q</xy>w", "w"),
            ("<a>k</<c></c>a>m", "m"),
            ("<a><a>k</<c></c>a>m", "<a>m"),
            ("<a><a><a>x</a></<c></c>a>m", "<a>m"),
            ("<a><a><a>x</a></<c></c>a></<c></c>a>m", "m"),
            ("<a>x<a>y<a>z</<c></c>a></<c></c>a>m", "<a>m"),
            ("<ab<c></c>cd<x></x>ef>", "<abcdef>"),
            ("<a>é</a>٣<é>ü</é>", "٣"),
        ] {
            assert_eq!(literal(log), want, "{log:?}");
            assert_eq!(remove_xml_blocks(log), want, "{log:?}");
        }
    }
}
