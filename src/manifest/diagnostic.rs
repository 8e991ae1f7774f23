//! Diagnostics about manifests: each points at file:line:col with a label and a help line, and
//! all of a manifest's problems are reported together.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use miette::{Diagnostic, LabeledSpan, NamedSource, SourceCode};

use super::tree::Loc;

/// The files a manifest was read from (the manifest and its `extends` chain).
#[derive(Debug, Default, Clone)]
pub struct Sources {
    files: Vec<(PathBuf, Arc<String>)>,
}

impl Sources {
    /// Registers a file and returns its index.
    pub fn add(&mut self, path: PathBuf, text: String) -> usize {
        self.files.push((path, Arc::new(text)));
        self.files.len() - 1
    }

    /// How many files are registered (the index the next one gets).
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// The text of file `i`.
    pub fn text(&self, i: usize) -> Arc<String> {
        self.files[i].1.clone()
    }

    /// The path of file `i`.
    pub fn path(&self, i: usize) -> &PathBuf {
        &self.files[i].0
    }

    /// The 1-based line and column of a byte offset.
    pub fn line_col(&self, loc: &Loc) -> (usize, usize) {
        let text = &self.files[loc.file].1;
        let upto = &text[..loc.span.start.min(text.len())];
        let line = upto.matches('\n').count() + 1;
        let col = upto.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }
}

/// One problem in a manifest.
#[derive(Debug, Clone)]
pub struct Diag {
    pub code: &'static str,
    pub message: String,
    pub loc: Option<Loc>,
    pub label: String,
    pub help: Option<String>,
}

impl Diag {
    /// A diagnostic at a location.
    pub fn new(code: &'static str, message: String, loc: Loc, label: impl Into<String>) -> Self {
        Diag {
            code,
            message,
            loc: Some(loc),
            label: label.into(),
            help: None,
        }
    }

    /// A diagnostic without a location (an unreadable file).
    pub fn plain(code: &'static str, message: String) -> Self {
        Diag {
            code,
            message,
            loc: None,
            label: String::new(),
            help: None,
        }
    }

    /// Adds a help line.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

/// Problems with the same code and message (array positions aside) beyond this many are folded
/// into one "… and N more like this".
pub const FOLD_AFTER: usize = 3;
/// At most this many diagnostics are printed for one manifest; one more counts the rest.
pub const MAX_SHOWN: usize = 50;
/// Messages and help lines are cut to this many characters (they quote keys and values).
const MAX_TEXT_CHARS: usize = 400;
/// A snippet is shown only if its lines (the problem's and one on each side) are at most this
/// many characters: a 5,000-item array written on one line would otherwise be printed once per
/// problem. The position is printed either way.
const MAX_SNIPPET_LINE_CHARS: usize = 300;
/// Positions listed in the help of a folded diagnostic.
const FOLD_POSITIONS: usize = 8;

/// A diagnostic bound to its source text, as miette renders it.
#[derive(Debug)]
pub struct RenderedDiag {
    diag: Diag,
    /// The label's span: the problem's span cut to its first line.
    span: Option<std::ops::Range<usize>>,
    source: Option<NamedSource<Arc<String>>>,
    position: String,
}

impl RenderedDiag {
    fn new(mut diag: Diag, sources: &Sources) -> Self {
        diag.message = clip(std::mem::take(&mut diag.message));
        diag.help = diag.help.take().map(clip);
        let Some(loc) = &diag.loc else {
            return RenderedDiag {
                diag,
                span: None,
                source: None,
                position: String::new(),
            };
        };
        let (line, col) = sources.line_col(loc);
        let name = sources.path(loc.file).display().to_string();
        let text = sources.text(loc.file);
        let span = first_line(&text, &loc.span);
        let source = snippet_fits(&text, span.start)
            .then(|| NamedSource::new(name.clone(), text).with_language("toml"));
        RenderedDiag {
            diag,
            span: Some(span),
            source,
            position: format!("{name}:{line}:{col}: "),
        }
    }
}

/// `span` cut at the end of the line it starts on: a label on a whole table would print every
/// line of it.
fn first_line(text: &str, span: &std::ops::Range<usize>) -> std::ops::Range<usize> {
    let start = span.start.min(text.len());
    let end = span.end.clamp(start, text.len());
    let line_end = text[start..end].find('\n').map_or(end, |i| start + i);
    start..line_end
}

/// Whether the lines a snippet at `offset` shows are short enough to print.
fn snippet_fits(text: &str, offset: usize) -> bool {
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let before = text[..line_start.saturating_sub(1)]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    text[before..]
        .split('\n')
        .take(if line_start == 0 { 2 } else { 3 })
        .all(|line| line.chars().nth(MAX_SNIPPET_LINE_CHARS).is_none())
}

fn clip(text: String) -> String {
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

/// What makes two problems "the same" for folding: the code, and the message with array
/// positions ("item 12 of `workers`") masked.
fn fold_key(diag: &Diag) -> (&'static str, String) {
    let mut key = String::with_capacity(diag.message.len());
    let mut rest = diag.message.as_str();
    while let Some(i) = rest.find("item ") {
        let (head, tail) = rest.split_at(i + "item ".len());
        key.push_str(head);
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && tail[digits..].starts_with(" of ") {
            key.push('#');
            rest = &tail[digits..];
        } else {
            rest = tail;
        }
    }
    key.push_str(rest);
    (diag.code, key)
}

/// Folds repeated problems and bounds the count: the first [`FOLD_AFTER`] of a kind are kept,
/// the rest become one diagnostic at the first of them that counts them; past [`MAX_SHOWN`]
/// diagnostics, one last one counts what is not shown. `diags` are sorted by position.
fn fold(diags: Vec<Diag>, sources: &Sources) -> Vec<Diag> {
    struct Fold {
        /// Index of the folded diagnostic in `out`.
        at: usize,
        positions: Vec<String>,
    }
    // Each kept diagnostic with the number of problems it stands for.
    let mut out: Vec<(Diag, usize)> = Vec::new();
    let mut seen: BTreeMap<(&'static str, String), usize> = BTreeMap::new();
    let mut folds: BTreeMap<(&'static str, String), Fold> = BTreeMap::new();
    for diag in diags {
        let key = fold_key(&diag);
        let n = seen.entry(key.clone()).or_insert(0);
        *n += 1;
        if *n <= FOLD_AFTER {
            out.push((diag, 1));
            continue;
        }
        match folds.get_mut(&key) {
            None => {
                folds.insert(
                    key,
                    Fold {
                        at: out.len(),
                        positions: Vec::new(),
                    },
                );
                out.push((diag, 1));
            }
            Some(fold) => {
                out[fold.at].1 += 1;
                if fold.positions.len() < FOLD_POSITIONS {
                    let first = out[fold.at].0.loc.as_ref();
                    fold.positions
                        .push(position(sources, first, diag.loc.as_ref()));
                }
            }
        }
    }
    for fold in folds.into_values() {
        let (diag, n) = &mut out[fold.at];
        diag.message = format!("… and {n} more like this: {}", diag.message);
        diag.label = "the first of them".to_string();
        let mut at = fold.positions.join(", ");
        if *n - 1 > fold.positions.len() {
            at.push_str(", …");
        }
        diag.help = Some(if at.is_empty() {
            "fix it like the ones above".to_string()
        } else {
            format!("the others are at {at}; fix them like the ones above")
        });
    }
    if out.len() > MAX_SHOWN {
        let rest = out.split_off(MAX_SHOWN);
        let n: usize = rest.iter().map(|(_, n)| n).sum();
        let first = &rest[0].0;
        let message = format!("… and {n} more problem{} not shown", plural(n));
        let help = "fix the problems above and validate again to see the rest";
        let more = match &first.loc {
            Some(loc) => Diag::new("manifest::more", message, loc.clone(), "the first of them"),
            None => Diag::plain("manifest::more", message),
        };
        out.push((more.help(help), n));
    }
    out.into_iter().map(|(d, _)| d).collect()
}

/// `line:col` of `loc`, with the file's path if it is not the file of `first`.
fn position(sources: &Sources, first: Option<&Loc>, loc: Option<&Loc>) -> String {
    let Some(loc) = loc else {
        return "(no position)".to_string();
    };
    let (line, col) = sources.line_col(loc);
    if first.is_some_and(|f| f.file == loc.file) {
        format!("{line}:{col}")
    } else {
        format!("{}:{line}:{col}", sources.path(loc.file).display())
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

impl fmt::Display for RenderedDiag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.position, self.diag.message)
    }
}

impl std::error::Error for RenderedDiag {}

impl Diagnostic for RenderedDiag {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.diag.code))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.diag
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.source.as_ref().map(|s| s as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        self.source.as_ref()?;
        let span = self.span.as_ref()?;
        Some(Box::new(std::iter::once(LabeledSpan::new(
            Some(self.diag.label.clone()),
            span.start,
            span.end - span.start,
        ))))
    }
}

/// All the problems of one manifest, reported at once.
#[derive(Debug)]
pub struct ManifestError {
    pub path: PathBuf,
    /// How many problems there are (repeated ones are folded in `diagnostics`).
    pub problems: usize,
    pub diagnostics: Vec<RenderedDiag>,
}

impl ManifestError {
    /// Binds diagnostics to their sources, sorted by file and position, with repeated problems
    /// folded and the count bounded (see [`fold`]).
    pub fn new(path: PathBuf, sources: &Sources, mut diags: Vec<Diag>) -> Self {
        diags.sort_by(|a, b| {
            let ka = a.loc.as_ref().map(|l| (l.file, l.span.start));
            let kb = b.loc.as_ref().map(|l| (l.file, l.span.start));
            ka.cmp(&kb).then_with(|| a.message.cmp(&b.message))
        });
        diags.dedup_by(|a, b| a.loc == b.loc && a.message == b.message);
        let problems = diags.len();
        let diagnostics = fold(diags, sources)
            .into_iter()
            .map(|diag| RenderedDiag::new(diag, sources))
            .collect();
        ManifestError {
            path,
            problems,
            diagnostics,
        }
    }

    /// The problems as `file:line:col: message` lines (for tests and plain output).
    pub fn lines(&self) -> Vec<String> {
        self.diagnostics.iter().map(|d| d.to_string()).collect()
    }
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.problems;
        write!(f, "{} has {n} problem{}", self.path.display(), plural(n))
    }
}

impl std::error::Error for ManifestError {}

impl Diagnostic for ManifestError {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new("manifest::invalid"))
    }

    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        Some(Box::new(
            self.diagnostics.iter().map(|d| d as &dyn Diagnostic),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use miette::{GraphicalReportHandler, GraphicalTheme};

    fn sources(text: String) -> Sources {
        let mut s = Sources::default();
        s.add(PathBuf::from("/m.toml"), text);
        s
    }

    /// A diagnostic at byte `start` of file 0, `len` bytes long.
    fn at(start: usize, len: usize, message: &str) -> Diag {
        Diag::new(
            "manifest::test",
            message.to_string(),
            Loc {
                file: 0,
                span: start..start + len,
            },
            "here",
        )
        .help("fix it")
    }

    fn render(err: &ManifestError) -> String {
        let mut out = String::new();
        GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
            .render_report(&mut out, err)
            .unwrap();
        out
    }

    #[test]
    fn identical_problems_beyond_the_first_few_fold_into_one_that_counts_them() {
        let text = "k = 1\n".repeat(5000);
        let src = sources(text);
        let diags = (0..5000).map(|i| at(i * 6, 1, "same problem")).collect();
        let err = ManifestError::new(PathBuf::from("m.toml"), &src, diags);
        assert_eq!(err.problems, 5000);
        assert_eq!(err.to_string(), "m.toml has 5000 problems");
        let lines = err.lines();
        assert_eq!(
            lines,
            [
                "/m.toml:1:1: same problem",
                "/m.toml:2:1: same problem",
                "/m.toml:3:1: same problem",
                "/m.toml:4:1: … and 4997 more like this: same problem",
            ]
        );
        let help = err.diagnostics[3].diag.help.as_deref().unwrap();
        assert!(help.starts_with("the others are at 5:1, 6:1,"), "{help}");
        assert!(help.contains(", …;"), "{help}");
        assert!(render(&err).len() < 4096);
    }

    #[test]
    fn array_positions_do_not_make_problems_different_but_names_do() {
        let text = "k = 1\n".repeat(100);
        let src = sources(text);
        let mut diags: Vec<Diag> = (0..10)
            .map(|i| {
                at(
                    i * 6,
                    1,
                    &format!("unknown key `x` in item {} of `w`", i + 1),
                )
            })
            .collect();
        diags.extend((10..20).map(|i| at(i * 6, 1, &format!("team `t{i}` is listed twice"))));
        let err = ManifestError::new(PathBuf::from("m.toml"), &src, diags);
        let lines = err.lines();
        assert_eq!(lines.len(), 4 + 10, "{lines:#?}");
        assert_eq!(
            lines[3],
            "/m.toml:4:1: … and 7 more like this: unknown key `x` in item 4 of `w`"
        );
        assert_eq!(
            fold_key(&at(0, 0, "item 12 of `a`, item x of, item 3")).1,
            "item # of `a`, item x of, item 3"
        );
    }

    #[test]
    fn past_the_limit_one_diagnostic_counts_the_rest() {
        let text = "k = 1\n".repeat(200);
        let src = sources(text);
        let diags = (0..200)
            .map(|i| at(i * 6, 1, &format!("problem {i}")))
            .collect();
        let err = ManifestError::new(PathBuf::from("m.toml"), &src, diags);
        let lines = err.lines();
        assert_eq!(lines.len(), MAX_SHOWN + 1);
        assert_eq!(
            lines[MAX_SHOWN],
            format!(
                "/m.toml:{}:1: … and {} more problems not shown",
                MAX_SHOWN + 1,
                200 - MAX_SHOWN
            )
        );
        assert_eq!(err.problems, 200);
    }

    #[test]
    fn long_lines_are_not_printed_but_the_position_is() {
        let long = format!("teams = [{}]", "\"t\", ".repeat(5000));
        let src = sources(format!("version = 1\n{long}\nx = 1\n"));
        let err = ManifestError::new(
            PathBuf::from("m.toml"),
            &src,
            vec![
                at(12 + 9, 3, "on the long line"),
                at(12 + long.len() + 1, 1, "after it"),
            ],
        );
        assert!(err.diagnostics.iter().all(|d| d.source.is_none()));
        let out = render(&err);
        assert!(out.contains("/m.toml:2:10: on the long line"), "{out}");
        assert!(out.contains("/m.toml:3:1: after it"), "{out}");
        assert!(out.len() < 2048, "{out}");

        // Short lines keep their snippet.
        let src = sources("version = 1\nx = 1\n".to_string());
        let err = ManifestError::new(PathBuf::from("m.toml"), &src, vec![at(12, 1, "x")]);
        assert!(err.diagnostics[0].source.is_some());
        assert!(render(&err).contains("2 │ x = 1"));
    }

    #[test]
    fn a_span_over_many_lines_is_labelled_on_its_first() {
        let text = "[table]\n".to_string() + &"k = 1\n".repeat(1000);
        let len = text.len();
        let src = sources(text);
        let err = ManifestError::new(PathBuf::from("m.toml"), &src, vec![at(0, len, "whole")]);
        assert_eq!(err.diagnostics[0].span, Some(0..7));
        assert!(render(&err).len() < 1024);
    }

    #[test]
    fn long_messages_and_help_are_clipped() {
        let src = sources("k = 1\n".to_string());
        let key = "k".repeat(100_000);
        let err = ManifestError::new(
            PathBuf::from("m.toml"),
            &src,
            vec![at(0, 1, &format!("unknown key `{key}`")).help(key.clone())],
        );
        let d = &err.diagnostics[0].diag;
        assert_eq!(d.message.chars().count(), MAX_TEXT_CHARS + 1);
        assert!(d.message.ends_with('…'));
        assert_eq!(d.help.as_ref().unwrap().chars().count(), MAX_TEXT_CHARS + 1);
    }
}
