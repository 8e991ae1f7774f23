//! Diagnostics about manifests: each points at file:line:col with a label and a help line, and
//! all of a manifest's problems are reported together.

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

/// A diagnostic bound to its source text, as miette renders it.
#[derive(Debug)]
pub struct RenderedDiag {
    diag: Diag,
    source: Option<NamedSource<String>>,
    position: String,
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
        let loc = self.diag.loc.as_ref()?;
        let len = loc.span.end.saturating_sub(loc.span.start);
        Some(Box::new(std::iter::once(LabeledSpan::new(
            Some(self.diag.label.clone()),
            loc.span.start,
            len,
        ))))
    }
}

/// All the problems of one manifest, reported at once.
#[derive(Debug)]
pub struct ManifestError {
    pub path: PathBuf,
    pub diagnostics: Vec<RenderedDiag>,
}

impl ManifestError {
    /// Binds diagnostics to their sources, sorted by file and position.
    pub fn new(path: PathBuf, sources: &Sources, mut diags: Vec<Diag>) -> Self {
        diags.sort_by(|a, b| {
            let ka = a.loc.as_ref().map(|l| (l.file, l.span.start));
            let kb = b.loc.as_ref().map(|l| (l.file, l.span.start));
            ka.cmp(&kb).then_with(|| a.message.cmp(&b.message))
        });
        diags.dedup_by(|a, b| a.loc == b.loc && a.message == b.message);
        let diagnostics = diags
            .into_iter()
            .map(|diag| {
                let (source, position) = match &diag.loc {
                    Some(loc) => {
                        let (line, col) = sources.line_col(loc);
                        let name = sources.path(loc.file).display().to_string();
                        let text = sources.text(loc.file).as_ref().clone();
                        (
                            Some(NamedSource::new(name.clone(), text).with_language("toml")),
                            format!("{name}:{line}:{col}: "),
                        )
                    }
                    None => (None, String::new()),
                };
                RenderedDiag {
                    diag,
                    source,
                    position,
                }
            })
            .collect();
        ManifestError { path, diagnostics }
    }

    /// The problems as `file:line:col: message` lines (for tests and plain output).
    pub fn lines(&self) -> Vec<String> {
        self.diagnostics.iter().map(|d| d.to_string()).collect()
    }
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.diagnostics.len();
        write!(
            f,
            "{} has {n} problem{}",
            self.path.display(),
            if n == 1 { "" } else { "s" }
        )
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
