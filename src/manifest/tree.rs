//! Manifest files as spanned trees: reading, parsing, `extends` chains and merging.
//!
//! Every value keeps the file and byte range it came from, so a diagnostic about a merged
//! manifest points into the file that wrote the value. This module knows TOML, not the meaning of
//! any key: structure is checked by `check.rs`, meaning by `validate.rs`.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};
use toml::value::Datetime;

use super::diagnostic::{Diag, Sources};
use super::read::{ReadError, read_manifest};

/// Where a value or key was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loc {
    /// Index into [`Sources`].
    pub file: usize,
    /// Byte range in that file.
    pub span: Range<usize>,
}

/// A TOML value with its location.
#[derive(Debug, Clone)]
pub struct Node {
    pub value: Value,
    pub loc: Loc,
}

/// A table entry: the key's location and the value.
#[derive(Debug, Clone)]
pub struct Entry {
    pub key_loc: Loc,
    pub node: Node,
}

/// TOML values.
#[derive(Debug, Clone)]
pub enum Value {
    String(String),
    Integer(i64),
    Float(f64),
    Boolean(bool),
    Datetime(Datetime),
    Array(Vec<Node>),
    Table(BTreeMap<String, Entry>),
}

impl Value {
    /// A human name of the value's type ("a string", "an integer", ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::String(_) => "a string",
            Value::Integer(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Boolean(_) => "a boolean",
            Value::Datetime(_) => "a date",
            Value::Array(_) => "an array",
            Value::Table(_) => "a table",
        }
    }
}

impl Node {
    /// The entry at `key` if this is a table.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        match &self.value {
            Value::Table(t) => t.get(key),
            _ => None,
        }
    }

    /// Walks a path of table keys.
    pub fn lookup(&self, path: &[&str]) -> Option<&Entry> {
        let (first, rest) = path.split_first()?;
        let entry = self.get(first)?;
        if rest.is_empty() {
            Some(entry)
        } else {
            entry.node.lookup(rest)
        }
    }

    /// Converts to a plain TOML value (for serde).
    pub fn to_toml(&self) -> toml::Value {
        match &self.value {
            Value::String(s) => toml::Value::String(s.clone()),
            Value::Integer(i) => toml::Value::Integer(*i),
            Value::Float(f) => toml::Value::Float(*f),
            Value::Boolean(b) => toml::Value::Boolean(*b),
            Value::Datetime(d) => toml::Value::Datetime(*d),
            Value::Array(items) => toml::Value::Array(items.iter().map(Node::to_toml).collect()),
            Value::Table(t) => toml::Value::Table(
                t.iter()
                    .map(|(k, e)| (k.clone(), e.node.to_toml()))
                    .collect(),
            ),
        }
    }
}

/// The longest `extends` chain bench follows (the top-level manifest and its bases).
pub const MAX_EXTENDS_DEPTH: usize = 32;

/// Loads `path` and its `extends` chain, merged. Errors are diagnostics pointing into the file
/// where the problem is written; a file that is not a manifest is reported at the `extends`
/// value that named it, and none of its content is shown.
pub fn load(path: &Path, sources: &mut Sources) -> Result<Node, Vec<Diag>> {
    let mut stack = Vec::new();
    load_inner(path, None, sources, &mut stack)
}

/// What the loader says about a file: for the top-level manifest a diagnostic without a span
/// (the path is in the message), for a base a diagnostic at the `extends` value that named it.
fn about_file(
    included_from: Option<&Loc>,
    code: &'static str,
    message: String,
    label: &str,
    help: String,
) -> Diag {
    match included_from {
        Some(loc) => Diag::new(code, message, loc.clone(), label),
        None => Diag::plain(code, message),
    }
    .help(help)
}

/// The canonical path of the manifest at `path` (`what` it is), or why it cannot be read.
fn canonical_path(
    path: &Path,
    included_from: Option<&Loc>,
    what: &str,
) -> Result<PathBuf, Vec<Diag>> {
    match fs_err::canonicalize(path) {
        Ok(p) => Ok(p),
        Err(source) => {
            let err = ReadError::Io {
                path: path.to_path_buf(),
                source,
            };
            Err(vec![about_file(
                included_from,
                if included_from.is_some() {
                    "manifest::extends_missing"
                } else {
                    "manifest::unreadable"
                },
                format!(
                    "{what} {} cannot be read: {}",
                    path.display(),
                    io_reason(&err)
                ),
                err.label(),
                err.help(),
            )])
        }
    }
}

/// Whether the manifest at `canonical` may be loaded as a base of those on `stack` (the
/// chain that extends it): it must not be one of them (a loop), nor one too many.
fn check_extends(
    canonical: &Path,
    included_from: Option<&Loc>,
    stack: &[PathBuf],
) -> Result<(), Vec<Diag>> {
    if let Some(pos) = stack.iter().position(|p| p.as_path() == canonical) {
        let chain: Vec<String> = stack[pos..]
            .iter()
            .map(|p| p.display().to_string())
            .chain(std::iter::once(canonical.display().to_string()))
            .collect();
        let loc = included_from
            .cloned()
            .expect("a loop needs an including file");
        return Err(vec![
            Diag::new(
                "manifest::extends_cycle",
                "`extends` chain loops".to_string(),
                loc,
                "this extends a manifest that extends this one",
            )
            .help(format!("break the loop: {}", chain.join(" -> "))),
        ]);
    }
    if let Some(loc) = included_from
        && stack.len() >= MAX_EXTENDS_DEPTH
    {
        return Err(vec![
            Diag::new(
                "manifest::extends_depth",
                format!("`extends` chain is longer than {MAX_EXTENDS_DEPTH} manifests"),
                loc.clone(),
                "one base too many",
            )
            .help("extend a manifest that holds the shared settings directly"),
        ]);
    }
    Ok(())
}

/// The text of the manifest at `canonical` (`what` it is), or why it cannot be read: not a
/// regular file, too large, or an I/O error.
fn read_text(
    canonical: &Path,
    included_from: Option<&Loc>,
    what: &str,
) -> Result<String, Vec<Diag>> {
    match read_manifest(canonical) {
        Ok(t) => Ok(t),
        Err(err) => {
            let code = match err {
                ReadError::NotRegular { .. } => "manifest::not_a_file",
                ReadError::TooLarge { .. } => "manifest::too_large",
                _ => "manifest::unreadable",
            };
            let message = match &err {
                ReadError::Io { .. } => {
                    format!(
                        "{what} {} cannot be read: {}",
                        canonical.display(),
                        io_reason(&err)
                    )
                }
                other => format!("{what} {other}"),
            };
            Err(vec![about_file(
                included_from,
                code,
                message,
                err.label(),
                err.help(),
            )])
        }
    }
}

/// Loads the manifest at `path` (a base when `included_from` is the `extends` value that named
/// it) and, recursively, its bases; `stack` is the chain of manifests extending it.
fn load_inner(
    path: &Path,
    included_from: Option<&Loc>,
    sources: &mut Sources,
    stack: &mut Vec<PathBuf>,
) -> Result<Node, Vec<Diag>> {
    let what = if included_from.is_some() {
        "extended manifest"
    } else {
        "manifest"
    };
    let canonical = canonical_path(path, included_from, what)?;
    check_extends(&canonical, included_from, stack)?;
    let text = read_text(&canonical, included_from, what)?;
    // The file's index once it is registered; nothing is registered before then, so a file
    // that turns out not to be a manifest never reaches the diagnostics' sources.
    let file = sources.len();
    let parsed = match DeTable::parse(&text) {
        Ok(t) => t,
        Err(err) => {
            let span = err.span().unwrap_or(0..0);
            let message = err.message().trim_end().to_string();
            if !looks_like_manifest(&canonical, &text[..span.start.min(text.len())]) {
                let (line, col) = line_col(&text, span.start);
                return Err(vec![about_file(
                    included_from,
                    "manifest::not_a_manifest",
                    format!(
                        "{what} {} is not valid TOML (at line {line}, column {col}: {message})",
                        canonical.display()
                    ),
                    "not a bench manifest",
                    "it does not look like a bench manifest (a `.toml` file that starts with \
                     `version = 1`), so none of it is shown; check the path"
                        .to_string(),
                )]);
            }
            sources.add(canonical, text);
            return Err(vec![
                Diag::new(
                    "manifest::syntax",
                    format!("invalid TOML: {message}"),
                    Loc { file, span },
                    "here",
                )
                .help("fix the TOML syntax; see https://toml.io"),
            ]);
        }
    };
    if !parsed.get_ref().contains_key("version") {
        return Err(vec![about_file(
            included_from,
            "manifest::not_a_manifest",
            format!(
                "{what} {} is not a bench manifest: it has no top-level `version` key",
                canonical.display()
            ),
            "not a bench manifest",
            "a bench manifest starts with `version = 1`; check the path".to_string(),
        )]);
    }
    let span = parsed.span();
    let mut overflow = Vec::new();
    let root = Node {
        value: Value::Table(convert_table(parsed.get_ref(), file, &mut overflow)),
        loc: Loc { file, span },
    };
    let added = sources.add(canonical.clone(), text);
    debug_assert_eq!(added, file);
    if !overflow.is_empty() {
        return Err(overflow);
    }
    let extends = match root.get("extends") {
        Some(Entry {
            node: Node {
                value: Value::String(s),
                loc,
            },
            ..
        }) => Some((s.clone(), loc.clone())),
        _ => None,
    };
    let Some((base_rel, base_loc)) = extends else {
        return Ok(root);
    };
    let dir = canonical.parent().unwrap_or(Path::new("/")).to_path_buf();
    stack.push(canonical);
    let base = load_inner(&dir.join(&base_rel), Some(&base_loc), sources, stack);
    stack.pop();
    Ok(merge(base?, root))
}

/// The reason an I/O error gives, without the path (the message names it already).
fn io_reason(err: &ReadError) -> String {
    match err {
        ReadError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            "no such file".to_string()
        }
        ReadError::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// Whether a file that failed to parse is still a bench manifest, so its syntax error may be
/// shown with a snippet: its name ends in `.toml` and, before the error, a top-level
/// `version = ...` line comes ahead of any table header. Anything else (a key file, a password
/// file, a binary) is named, never quoted.
fn looks_like_manifest(path: &Path, before_error: &str) -> bool {
    if path.extension().is_none_or(|e| e != "toml") {
        return false;
    }
    for line in before_error.lines() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with('[') {
            return false;
        }
        if let Some(rest) = line.strip_prefix("version")
            && rest.trim_start().starts_with('=')
        {
            return true;
        }
    }
    false
}

/// The 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let upto = &text[..end];
    let line = upto.matches('\n').count() + 1;
    let col = upto.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Converts a parsed table; integers that do not fit in 64 bits (which TOML forbids, but the
/// parser leaves as text) become diagnostics in `overflow`.
fn convert_table(
    table: &DeTable<'_>,
    file: usize,
    overflow: &mut Vec<Diag>,
) -> BTreeMap<String, Entry> {
    table
        .iter()
        .map(|(k, v)| {
            let entry = Entry {
                key_loc: Loc {
                    file,
                    span: k.span(),
                },
                node: convert_value(v.get_ref(), v.span(), file, overflow),
            };
            (k.get_ref().to_string(), entry)
        })
        .collect()
}

fn convert_value(
    value: &DeValue<'_>,
    span: Range<usize>,
    file: usize,
    overflow: &mut Vec<Diag>,
) -> Node {
    let value = match value {
        DeValue::String(s) => Value::String(s.to_string()),
        DeValue::Integer(i) => match i64::from_str_radix(&i.as_str().replace('_', ""), i.radix()) {
            Ok(v) => Value::Integer(v),
            Err(_) => {
                overflow.push(
                    Diag::new(
                        "manifest::range",
                        "integer does not fit in 64 bits".to_string(),
                        Loc {
                            file,
                            span: span.clone(),
                        },
                        "out of range",
                    )
                    .help(format!(
                        "TOML integers are between {} and {}",
                        i64::MIN,
                        i64::MAX
                    )),
                );
                Value::Integer(0)
            }
        },
        DeValue::Float(f) => Value::Float(f.as_str().replace('_', "").parse().unwrap_or(f64::NAN)),
        DeValue::Boolean(b) => Value::Boolean(*b),
        DeValue::Datetime(d) => Value::Datetime(*d),
        DeValue::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| convert_value(v.get_ref(), v.span(), file, overflow))
                .collect(),
        ),
        DeValue::Table(t) => Value::Table(convert_table(t, file, overflow)),
    };
    Node {
        value,
        loc: Loc { file, span },
    }
}

/// Merges `over` onto `base`: tables merge key by key, anything else is replaced.
pub fn merge(base: Node, over: Node) -> Node {
    match (base.value, over.value) {
        (Value::Table(mut b), Value::Table(o)) => {
            for (k, entry) in o {
                let merged = match b.remove(&k) {
                    Some(existing) => Entry {
                        key_loc: entry.key_loc,
                        node: merge(existing.node, entry.node),
                    },
                    None => entry,
                };
                b.insert(k, merged);
            }
            Node {
                value: Value::Table(b),
                loc: over.loc,
            }
        }
        (_, value) => Node {
            value,
            loc: over.loc,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::read::MAX_MANIFEST_BYTES;

    fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
        let p = dir.join(rel);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(&p, text).unwrap();
        p
    }

    /// Loads `path`; on failure, the single diagnostic as (file name, line, col, message).
    fn load_err(path: &Path) -> (String, usize, usize, String, Sources) {
        let mut sources = Sources::default();
        let diags = load(path, &mut sources).expect_err("loading fails");
        assert_eq!(diags.len(), 1, "{diags:?}");
        let d = &diags[0];
        let loc = d.loc.as_ref().expect("a located diagnostic");
        let (line, col) = sources.line_col(loc);
        let name = sources.path(loc.file).file_name().unwrap();
        let name = name.to_string_lossy().into_owned();
        (name, line, col, d.message.clone(), sources)
    }

    fn string_at(node: &Node, path: &[&str]) -> String {
        match &node.lookup(path).expect("key exists").node.value {
            Value::String(s) => s.clone(),
            other => panic!("not a string: {other:?}"),
        }
    }

    #[test]
    fn an_extends_chain_merges_nearest_last_and_keeps_each_value_s_file() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "a.toml",
            "version = 1\nname = \"a\"\n[t]\nx = \"a\"\ny = \"a\"\nz = \"a\"\n",
        );
        write(
            dir.path(),
            "b.toml",
            "version = 1\nextends = \"a.toml\"\nname = \"b\"\n[t]\ny = \"b\"\n",
        );
        let c = write(
            dir.path(),
            "c.toml",
            "version = 1\nextends = \"b.toml\"\n[t]\nz = \"c\"\n",
        );
        let mut sources = Sources::default();
        let root = load(&c, &mut sources).unwrap();
        assert_eq!(string_at(&root, &["name"]), "b");
        assert_eq!(string_at(&root, &["t", "x"]), "a");
        assert_eq!(string_at(&root, &["t", "y"]), "b");
        assert_eq!(string_at(&root, &["t", "z"]), "c");
        let file_of = |path: &[&str]| {
            let loc = &root.lookup(path).unwrap().node.loc;
            sources.path(loc.file).file_name().unwrap().to_owned()
        };
        assert_eq!(file_of(&["t", "x"]), "a.toml");
        assert_eq!(file_of(&["t", "y"]), "b.toml");
        assert_eq!(file_of(&["t", "z"]), "c.toml");
    }

    #[test]
    fn relative_extends_resolve_against_the_file_that_writes_them() {
        let dir = tempfile::tempdir().unwrap();
        // top.toml -> shared/mid.toml -> shared/base/root.toml; a `base/root.toml` beside
        // top.toml is a decoy that must not be read.
        write(
            dir.path(),
            "shared/base/root.toml",
            "version = 1\nname = \"right\"\n",
        );
        write(
            dir.path(),
            "base/root.toml",
            "version = 1\nname = \"wrong\"\n",
        );
        write(
            dir.path(),
            "shared/mid.toml",
            "version = 1\nextends = \"base/root.toml\"\n",
        );
        let top = write(
            dir.path(),
            "top.toml",
            "version = 1\nextends = \"shared/mid.toml\"\n",
        );
        let mut sources = Sources::default();
        let root = load(&top, &mut sources).unwrap();
        assert_eq!(string_at(&root, &["name"]), "right");

        // A missing base is reported at the `extends` value of the file that names it.
        write(
            dir.path(),
            "shared/mid.toml",
            "version = 1\nextends = \"base/nope.toml\"\n",
        );
        let (file, line, col, message, _) = load_err(&top);
        assert_eq!((file.as_str(), line, col), ("mid.toml", 2, 11));
        assert!(message.contains("shared/base/nope.toml"), "{message}");
    }

    #[test]
    fn a_cycle_is_reported_at_the_extends_that_closes_it() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a.toml", "version = 1\nextends = \"b.toml\"\n");
        write(dir.path(), "b.toml", "version = 1\nextends = \"c.toml\"\n");
        write(dir.path(), "c.toml", "version = 1\nextends = \"a.toml\"\n");
        let (file, line, col, message, _) = load_err(&a);
        assert_eq!((file.as_str(), line, col), ("c.toml", 2, 11));
        assert_eq!(message, "`extends` chain loops");

        let own = write(
            dir.path(),
            "self.toml",
            "version = 1\nextends = \"self.toml\"\n",
        );
        let (file, ..) = load_err(&own);
        assert_eq!(file, "self.toml");
    }

    #[test]
    fn a_chain_longer_than_the_limit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..=MAX_EXTENDS_DEPTH {
            write(
                dir.path(),
                &format!("m{i}.toml"),
                &format!("version = 1\nextends = \"m{}.toml\"\n", i + 1),
            );
        }
        write(
            dir.path(),
            &format!("m{}.toml", MAX_EXTENDS_DEPTH + 1),
            "version = 1\n",
        );
        let (file, line, col, message, _) = load_err(&dir.path().join("m0.toml"));
        let last = format!("m{}.toml", MAX_EXTENDS_DEPTH - 1);
        assert_eq!((file.as_str(), line, col), (last.as_str(), 2, 11));
        assert!(message.contains("longer than"), "{message}");

        // One base fewer is fine.
        write(
            dir.path(),
            &format!("m{}.toml", MAX_EXTENDS_DEPTH - 1),
            "version = 1\n",
        );
        let mut sources = Sources::default();
        load(&dir.path().join("m0.toml"), &mut sources).unwrap();
    }

    #[test]
    fn special_files_and_large_files_are_refused_at_the_extends_value() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.toml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let big = dir.path().join("big.toml");
        fs_err::File::create(&big)
            .unwrap()
            .set_len(MAX_MANIFEST_BYTES + 1)
            .unwrap();
        for (target, expect) in [
            ("fifo.toml", "is a FIFO, not a regular file"),
            ("/dev/zero", "is a character device, not a regular file"),
            ("sub", "is a directory, not a regular file"),
            ("big.toml", "1 bytes over the limit"),
        ] {
            fs_err::create_dir_all(dir.path().join("sub")).unwrap();
            let m = write(
                dir.path(),
                "m.toml",
                &format!("version = 1\nextends = \"{target}\"\n"),
            );
            let (file, line, col, message, _) = load_err(&m);
            assert_eq!((file.as_str(), line, col), ("m.toml", 2, 11), "{message}");
            assert!(message.contains(expect), "{target}: {message}");
        }
    }

    #[test]
    fn a_file_that_is_not_a_manifest_is_named_never_registered_as_a_source() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "shadow",
            "root:$6$hunter2hash:19000:0:99999:7:::\nbin:*:19000:0:99999:7:::\n",
        );
        write(dir.path(), "other.toml", "[package]\nname = \"hunter2\"\n");
        write(dir.path(), "looks.toml", "version = 1\npassword hunter2\n");
        for (target, expect) in [
            ("shadow", "is not valid TOML (at line 1, column"),
            ("other.toml", "has no top-level `version` key"),
        ] {
            let m = write(
                dir.path(),
                "m.toml",
                &format!("version = 1\nextends = \"{target}\"\n"),
            );
            let (file, line, col, message, sources) = load_err(&m);
            assert_eq!((file.as_str(), line, col), ("m.toml", 2, 11), "{message}");
            assert!(message.contains(expect), "{target}: {message}");
            assert!(!message.contains("hunter2"), "{message}");
            // Only m.toml was registered: no diagnostic can quote the target.
            assert_eq!(sources.len(), 1);
        }

        // A real manifest with a syntax error keeps its snippet: the error is in the base.
        let m = write(
            dir.path(),
            "m.toml",
            "version = 1\nextends = \"looks.toml\"\n",
        );
        let (file, line, col, message, sources) = load_err(&m);
        assert_eq!(
            (file.as_str(), line, col),
            ("looks.toml", 2, 10),
            "{message}"
        );
        assert!(message.starts_with("invalid TOML"), "{message}");
        assert_eq!(sources.len(), 2);
    }

    #[test]
    fn the_manifest_heuristic_needs_a_toml_name_and_a_leading_version_line() {
        let toml = Path::new("m.toml");
        assert!(looks_like_manifest(toml, "# c\n\nversion = 1\nname = "));
        assert!(looks_like_manifest(toml, "version=1"));
        assert!(!looks_like_manifest(Path::new("m.conf"), "version = 1\n"));
        assert!(!looks_like_manifest(toml, "[a]\nversion = 1\n"));
        assert!(!looks_like_manifest(toml, "versions = 1\n"));
        assert!(!looks_like_manifest(toml, "root:x:0:0::/root:/bin/sh\n"));
    }

    #[test]
    fn an_integer_beyond_64_bits_is_reported_at_its_value() {
        let dir = tempfile::tempdir().unwrap();
        let m = write(
            dir.path(),
            "m.toml",
            "version = 1\n[s]\nseed = 99999999999999999999\n",
        );
        let (file, line, col, message, _) = load_err(&m);
        assert_eq!((file.as_str(), line, col), ("m.toml", 3, 8));
        assert_eq!(message, "integer does not fit in 64 bits");
    }

    #[test]
    fn the_top_level_manifest_is_read_by_the_same_rules() {
        let mut sources = Sources::default();
        let diags = load(Path::new("/dev/zero"), &mut sources).unwrap_err();
        assert_eq!(diags.len(), 1);
        assert!(diags[0].loc.is_none());
        assert!(
            diags[0].message.contains("/dev/zero is a character device"),
            "{}",
            diags[0].message
        );
        assert_eq!(sources.len(), 0);
    }
}
