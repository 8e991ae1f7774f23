//! Structural checking of a manifest tree against the manifest's JSON Schema.
//!
//! The schema is generated from the serde types in `types.rs`, so the checker and the types
//! cannot drift. Unlike serde, which stops at the first problem, the checker reports every
//! unknown key (with the nearest valid one), wrong type, missing key and bad enum value at once.
//! It does not know what values mean: references between stages, teams and harnesses are
//! `validate.rs`'s job.

use serde_json::{Map, Value as Json};

use super::diagnostic::Diag;
use super::tree::{Node, Value};

/// Checks `root` against `schema`, returning every problem found and the paths of the values
/// at fault (so the caller can drop them and still validate the rest).
pub fn check(root: &Node, schema: &Json) -> (Vec<Diag>, Vec<Vec<String>>) {
    let mut checker = Checker {
        root: schema,
        diags: Vec::new(),
        path: Vec::new(),
        bad: Vec::new(),
    };
    checker.node(root, schema, "the manifest");
    (checker.diags, checker.bad)
}

/// Removes the values at `paths` (table keys; array items are removed whole with their array).
pub fn prune(root: &mut Node, paths: &[Vec<String>]) {
    for path in paths {
        remove_path(root, path);
    }
}

fn remove_path(node: &mut Node, path: &[String]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if let Value::Table(t) = &mut node.value {
        if rest.is_empty() || rest[0].starts_with('[') {
            t.remove(first);
        } else if let Some(e) = t.get_mut(first) {
            remove_path(&mut e.node, rest);
        }
    }
}

struct Checker<'s> {
    root: &'s Json,
    diags: Vec<Diag>,
    path: Vec<String>,
    bad: Vec<Vec<String>>,
}

impl Checker<'_> {
    fn push(&mut self, diag: Diag) {
        self.diags.push(diag);
        self.bad.push(self.path.clone());
    }
}

fn describe(schema: &Json) -> String {
    match schema.get("type") {
        Some(Json::String(t)) => type_word(t).to_string(),
        Some(Json::Array(ts)) => ts
            .iter()
            .filter_map(Json::as_str)
            .filter(|t| *t != "null")
            .map(type_word)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "a value".to_string(),
    }
}

fn type_word(t: &str) -> &'static str {
    match t {
        "string" => "a string",
        "integer" => "an integer",
        "number" => "a number",
        "boolean" => "a boolean",
        "array" => "an array",
        "object" => "a table",
        _ => "a value",
    }
}

/// The nearest candidate to `word`, if it is close enough to be a likely typo.
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

impl<'s> Checker<'s> {
    /// Follows `$ref`s, and the one-element `allOf` that schemars wraps around a reference
    /// with its own description (`{"allOf": [{"$ref": ...}], "description": ...}`), to the
    /// schema that says what the value is.
    fn resolve(&self, schema: &'s Json) -> &'s Json {
        let mut s = schema;
        loop {
            if let Some(Json::String(r)) = s.get("$ref") {
                let Some(target) = r.strip_prefix('#').and_then(|ptr| self.root.pointer(ptr))
                else {
                    break;
                };
                s = target;
            } else if let Some(Json::Array(all)) = s.get("allOf")
                && let [only] = all.as_slice()
                && s.get("type").is_none()
                && s.get("properties").is_none()
            {
                s = only;
            } else {
                break;
            }
        }
        s
    }

    /// The description of a property: its own, or that of what it refers to.
    fn description(&self, schema: &'s Json) -> Option<&'s str> {
        schema
            .get("description")
            .or_else(|| self.resolve(schema).get("description"))
            .and_then(Json::as_str)
    }

    fn node(&mut self, node: &Node, schema: &'s Json, what: &str) {
        let description = self.description(schema);
        let schema = self.resolve(schema);
        if let Some(variants) = schema
            .get("oneOf")
            .or_else(|| schema.get("anyOf"))
            .and_then(Json::as_array)
        {
            self.variants(node, variants, what);
            return;
        }
        if !self.type_matches(node, schema) {
            let mut diag = Diag::new(
                "manifest::type",
                format!(
                    "wrong type for {what}: expected {}, found {}",
                    describe(schema),
                    node.value.type_name()
                ),
                node.loc.clone(),
                format!("expected {}", describe(schema)),
            );
            if schema.get("format").and_then(Json::as_str) == Some("date") {
                diag = diag.help("write a TOML date without quotes, e.g. `since = 2026-07-01`");
            } else if let Some(desc) = description {
                diag = diag.help(desc.to_string());
            }
            self.push(diag);
            return;
        }
        if let Some(Json::Array(allowed)) = schema.get("enum") {
            self.enumeration(node, allowed, what);
        }
        if let Some(c) = schema.get("const") {
            self.enumeration(node, std::slice::from_ref(c), what);
        }
        match &node.value {
            Value::Table(_) => self.table(node, schema, what),
            Value::Array(items) => {
                if let Some(item_schema) = schema.get("items") {
                    for (i, item) in items.iter().enumerate() {
                        self.path.push(format!("[{i}]"));
                        self.node(item, item_schema, &format!("item {} of {what}", i + 1));
                        self.path.pop();
                    }
                }
            }
            Value::Integer(i) => {
                let (min, max) = integer_bounds(schema);
                let i = i128::from(*i);
                let problem = if i < min {
                    Some(format!("{what} must be at least {min}, found {i}"))
                } else if i > max {
                    Some(format!("{what} must be at most {max}, found {i}"))
                } else {
                    None
                };
                if let Some(message) = problem {
                    let help = match description {
                        Some(d) => {
                            format!("{} Use a whole number from {min} to {max}.", d.trim_end())
                        }
                        None => format!("use a whole number from {min} to {max}"),
                    };
                    self.push(
                        Diag::new("manifest::range", message, node.loc.clone(), "out of range")
                            .help(help),
                    );
                }
            }
            _ => {}
        }
    }

    fn type_matches(&self, node: &Node, schema: &Json) -> bool {
        let types: Vec<&str> = match schema.get("type") {
            Some(Json::String(t)) => vec![t.as_str()],
            Some(Json::Array(ts)) => ts.iter().filter_map(Json::as_str).collect(),
            _ => return true,
        };
        let is_date = matches!(
            schema.get("format").and_then(Json::as_str),
            Some("date" | "date-time")
        );
        types.iter().any(|t| match (&node.value, *t) {
            (Value::String(_), "string") => !is_date,
            (Value::Datetime(_), "string") => is_date,
            (Value::Integer(_), "integer" | "number") => true,
            (Value::Float(_), "number") => true,
            (Value::Boolean(_), "boolean") => true,
            (Value::Array(_), "array") => true,
            (Value::Table(_), "object") => true,
            _ => false,
        })
    }

    fn enumeration(&mut self, node: &Node, allowed: &[Json], what: &str) {
        let Value::String(s) = &node.value else {
            return;
        };
        let names: Vec<&str> = allowed.iter().filter_map(Json::as_str).collect();
        if names.contains(&s.as_str()) {
            return;
        }
        let help = match suggest(s, names.iter().copied()) {
            Some(near) => format!(
                "did you mean `{near}`? expected one of: {}",
                names.join(", ")
            ),
            None => format!("expected one of: {}", names.join(", ")),
        };
        self.push(
            Diag::new(
                "manifest::value",
                format!("unknown value `{s}` for {what}"),
                node.loc.clone(),
                "not a valid value",
            )
            .help(help),
        );
    }

    fn table(&mut self, node: &Node, schema: &'s Json, what: &str) {
        let Value::Table(entries) = &node.value else {
            return;
        };
        static EMPTY: std::sync::LazyLock<Map<String, Json>> = std::sync::LazyLock::new(Map::new);
        let props: &Map<String, Json> = match schema.get("properties").and_then(Json::as_object) {
            Some(p) => p,
            None => &EMPTY,
        };
        let additional = schema.get("additionalProperties");
        for (key, entry) in entries {
            self.path.push(key.clone());
            self.entry(key, entry, props, additional, what);
            self.path.pop();
        }
        self.required(node, schema, entries, props, what);
    }

    fn entry(
        &mut self,
        key: &str,
        entry: &super::tree::Entry,
        props: &'s Map<String, Json>,
        additional: Option<&'s Json>,
        what: &str,
    ) {
        {
            if let Some(prop) = props.get(key) {
                self.node(&entry.node, prop, &format!("`{key}`"));
                return;
            }
            match additional {
                Some(Json::Bool(false)) => {
                    let valid: Vec<&str> = props.keys().map(String::as_str).collect();
                    let help = match suggest(key, valid.iter().copied()) {
                        Some(near) => format!("did you mean `{near}`?"),
                        None => format!("valid keys here: {}", valid.join(", ")),
                    };
                    self.push(
                        Diag::new(
                            "manifest::unknown_key",
                            format!("unknown key `{key}` in {what}"),
                            entry.key_loc.clone(),
                            "unknown key",
                        )
                        .help(help),
                    );
                }
                Some(extra @ Json::Object(_)) => {
                    let child = match what {
                        "`stages`" => format!("stage `{key}`"),
                        "`teams`" => format!("team `{key}`"),
                        "`datasets`" => format!("dataset `{key}`"),
                        "`harnesses`" => format!("harness `{key}`"),
                        _ => format!("`{key}`"),
                    };
                    self.node(&entry.node, extra, &child);
                }
                _ => {}
            }
        }
    }

    fn required(
        &mut self,
        node: &Node,
        schema: &'s Json,
        entries: &std::collections::BTreeMap<String, super::tree::Entry>,
        props: &'s Map<String, Json>,
        what: &str,
    ) {
        if let Some(Json::Array(required)) = schema.get("required") {
            for key in required.iter().filter_map(Json::as_str) {
                if !entries.contains_key(key) {
                    let help = props
                        .get(key)
                        .and_then(|p| self.description(p))
                        .map_or_else(
                            || format!("add `{key} = ...`"),
                            |d| format!("add `{key}`: {d}"),
                        );
                    self.push(
                        Diag::new(
                            "manifest::missing_key",
                            format!("missing key `{key}` in {what}"),
                            node.loc.clone(),
                            format!("`{key}` is required here"),
                        )
                        .help(help),
                    );
                }
            }
        }
    }

    fn variants(&mut self, node: &Node, variants: &'s [Json], what: &str) {
        let variants: Vec<&'s Json> = variants
            .iter()
            .map(|v| self.resolve(v))
            .filter(|v| v.get("type").and_then(Json::as_str) != Some("null"))
            .collect();
        if variants.len() == 1 {
            self.node(node, variants[0], what);
            return;
        }
        if let (Value::Table(entries), Some(tag)) = (&node.value, discriminator(&variants)) {
            let names: Vec<&str> = variants
                .iter()
                .filter_map(|v| v.pointer(&format!("/properties/{tag}/const"))?.as_str())
                .collect();
            match entries.get(tag) {
                Some(entry) => {
                    if let Value::String(s) = &entry.node.value
                        && let Some(v) = variants.iter().find(|v| {
                            v.pointer(&format!("/properties/{tag}/const"))
                                .and_then(Json::as_str)
                                == Some(s)
                        })
                    {
                        self.node(node, v, what);
                        return;
                    }
                    let got = match &entry.node.value {
                        Value::String(s) => s.clone(),
                        other => other.type_name().to_string(),
                    };
                    let help = match suggest(&got, names.iter().copied()) {
                        Some(near) => {
                            format!(
                                "did you mean `{near}`? expected one of: {}",
                                names.join(", ")
                            )
                        }
                        None => format!("expected one of: {}", names.join(", ")),
                    };
                    self.push(
                        Diag::new(
                            "manifest::value",
                            format!("unknown `{tag}` `{got}` in {what}"),
                            entry.node.loc.clone(),
                            format!("not a valid `{tag}`"),
                        )
                        .help(help),
                    );
                }
                None => self.push(
                    Diag::new(
                        "manifest::missing_key",
                        format!("missing key `{tag}` in {what}"),
                        node.loc.clone(),
                        format!("`{tag}` is required here"),
                    )
                    .help(format!("add `{tag} = ...`, one of: {}", names.join(", "))),
                ),
            }
            return;
        }
        // Untagged: accept the first variant that fits; otherwise report the variant whose type
        // matches.
        let mut best: Option<(Vec<Diag>, Vec<Vec<String>>)> = None;
        for v in &variants {
            let mut sub = Checker {
                root: self.root,
                diags: Vec::new(),
                path: self.path.clone(),
                bad: Vec::new(),
            };
            sub.node(node, v, what);
            if sub.diags.is_empty() {
                return;
            }
            let type_ok = self.type_matches(node, self.resolve(v))
                || v.get("oneOf").is_some()
                || v.get("anyOf").is_some();
            if type_ok && best.as_ref().is_none_or(|b| sub.diags.len() < b.0.len()) {
                best = Some((sub.diags, sub.bad));
            }
        }
        match best {
            Some((diags, bad)) => {
                self.diags.extend(diags);
                self.bad.extend(bad);
            }
            None => {
                let expected: Vec<String> = variants.iter().map(|v| describe(v)).collect();
                self.push(Diag::new(
                    "manifest::type",
                    format!(
                        "wrong type for {what}: expected {}, found {}",
                        expected.join(" or "),
                        node.value.type_name()
                    ),
                    node.loc.clone(),
                    format!("expected {}", expected.join(" or ")),
                ));
            }
        }
    }
}

/// The smallest and largest integer a schema accepts: its `format` (`uint32`, `int64`, ...)
/// narrowed by `minimum` and `maximum`.
fn integer_bounds(schema: &Json) -> (i128, i128) {
    let (mut min, mut max): (i128, i128) = match schema.get("format").and_then(Json::as_str) {
        Some("int8") => (i8::MIN.into(), i8::MAX.into()),
        Some("int16") => (i16::MIN.into(), i16::MAX.into()),
        Some("int32") => (i32::MIN.into(), i32::MAX.into()),
        Some("uint8") => (0, u8::MAX.into()),
        Some("uint16") => (0, u16::MAX.into()),
        Some("uint32") => (0, u32::MAX.into()),
        Some("uint64" | "uint") => (0, u64::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    };
    // Bounds written as floats (`minimum: 0.0`) round inwards.
    if let Some(m) = schema.get("minimum").and_then(Json::as_f64) {
        min = min.max(m.ceil() as i128);
    }
    if let Some(m) = schema.get("maximum").and_then(Json::as_f64) {
        max = max.min(m.floor() as i128);
    }
    (min, max)
}

/// The property that tells variants apart (`kind`, `topology`), if every variant has a `const`.
fn discriminator(variants: &[&Json]) -> Option<&'static str> {
    ["kind", "topology"].into_iter().find(|tag| {
        variants
            .iter()
            .all(|v| v.pointer(&format!("/properties/{tag}/const")).is_some())
    })
}
