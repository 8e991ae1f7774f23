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

/// Loads `path` and its `extends` chain, merged. Errors are diagnostics pointing into the file
/// where the problem is written.
pub fn load(path: &Path, sources: &mut Sources) -> Result<Node, Vec<Diag>> {
    let mut stack = Vec::new();
    load_inner(path, None, sources, &mut stack)
}

fn load_inner(
    path: &Path,
    included_from: Option<&Loc>,
    sources: &mut Sources,
    stack: &mut Vec<PathBuf>,
) -> Result<Node, Vec<Diag>> {
    let canonical = match fs_err::canonicalize(path) {
        Ok(p) => p,
        Err(err) => {
            return Err(vec![match included_from {
                Some(loc) => Diag::new(
                    "manifest::extends_missing",
                    format!("extended manifest {} cannot be read", path.display()),
                    loc.clone(),
                    "this file does not exist",
                )
                .help("fix the path; it is relative to the manifest that names it"),
                None => Diag::plain(
                    "manifest::unreadable",
                    format!("cannot read manifest {}: {err}", path.display()),
                ),
            }]);
        }
    };
    if let Some(pos) = stack.iter().position(|p| p == &canonical) {
        let chain: Vec<String> = stack[pos..]
            .iter()
            .chain(std::iter::once(&canonical))
            .map(|p| p.display().to_string())
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
    let text = match fs_err::read_to_string(&canonical) {
        Ok(t) => t,
        Err(err) => {
            return Err(vec![Diag::plain(
                "manifest::unreadable",
                format!("cannot read manifest: {err}"),
            )]);
        }
    };
    let file = sources.add(canonical.clone(), text);
    let text = sources.text(file);
    let parsed = match DeTable::parse(&text) {
        Ok(t) => t,
        Err(err) => {
            let span = err.span().unwrap_or(0..0);
            let message = err.message().to_string();
            return Err(vec![
                Diag::new(
                    "manifest::syntax",
                    format!("invalid TOML: {}", message.trim_end()),
                    Loc { file, span },
                    "here",
                )
                .help("fix the TOML syntax; see https://toml.io"),
            ]);
        }
    };
    let span = parsed.span();
    let root = Node {
        value: Value::Table(convert_table(parsed.get_ref(), file)),
        loc: Loc { file, span },
    };
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

fn convert_table(table: &DeTable<'_>, file: usize) -> BTreeMap<String, Entry> {
    table
        .iter()
        .map(|(k, v)| {
            let entry = Entry {
                key_loc: Loc {
                    file,
                    span: k.span(),
                },
                node: convert_value(v.get_ref(), v.span(), file),
            };
            (k.get_ref().to_string(), entry)
        })
        .collect()
}

fn convert_value(value: &DeValue<'_>, span: Range<usize>, file: usize) -> Node {
    let value = match value {
        DeValue::String(s) => Value::String(s.to_string()),
        DeValue::Integer(i) => match i64::from_str_radix(&i.as_str().replace('_', ""), i.radix()) {
            Ok(v) => Value::Integer(v),
            Err(_) => Value::String(i.as_str().to_string()),
        },
        DeValue::Float(f) => Value::Float(f.as_str().replace('_', "").parse().unwrap_or(f64::NAN)),
        DeValue::Boolean(b) => Value::Boolean(*b),
        DeValue::Datetime(d) => Value::Datetime(*d),
        DeValue::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| convert_value(v.get_ref(), v.span(), file))
                .collect(),
        ),
        DeValue::Table(t) => Value::Table(convert_table(t, file)),
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
