//! The docs are tested: every TOML listing of README.md and docs/ validates (a full manifest with
//! `bench validate` in a fresh directory, a ```` ```toml,fragment ```` listing against the
//! manifest's JSON Schema, a design's ```` ```toml,proposed ```` listing as TOML, a
//! ```` ```toml,invalid ```` one must fail validation), the README's quickstart listing is applied for real, every relative
//! link and anchor resolves, every page of docs/ is in the book's SUMMARY.md, the README's two
//! commands are the ones .ci/run runs, and docs/manifest-reference.md is what the schema
//! generates (`BENCH_BLESS=1` rewrites it).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::{bench_in, stderr, stdout};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every markdown page under docs/, sorted.
fn doc_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = fs_err::read_dir(dir)
            .expect("docs/ exists")
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "md") {
                out.push(p);
            }
        }
    }
    let mut out = vec![root().join("README.md")];
    walk(&root().join("docs"), &mut out);
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

/// A fenced code block: where it starts, its info string and its body.
struct Listing {
    file: PathBuf,
    line: usize,
    info: String,
    body: String,
}

impl Listing {
    fn at(&self) -> String {
        format!("{}:{}", rel(&self.file), self.line)
    }
}

/// The fenced code blocks of a markdown text (fences may be indented, as in list items).
fn listings(file: &Path, text: &str) -> Vec<Listing> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String, String, Vec<String>)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match &mut open {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let indent = line.len() - trimmed.len();
                    open = Some((
                        i + 1,
                        info.trim().to_string(),
                        " ".repeat(indent),
                        Vec::new(),
                    ));
                }
            }
            Some((start, info, indent, body)) => {
                if trimmed.starts_with("```") {
                    out.push(Listing {
                        file: file.to_path_buf(),
                        line: *start,
                        info: info.clone(),
                        body: body.join("\n") + "\n",
                    });
                    open = None;
                } else {
                    body.push(
                        line.strip_prefix(indent.as_str())
                            .unwrap_or(line)
                            .to_string(),
                    );
                }
            }
        }
    }
    assert!(
        open.is_none(),
        "{}: a code fence is never closed",
        rel(file)
    );
    out
}

/// The file an mdBook `{{#include PATH}}` listing shows, if that is all the listing holds.
fn included(l: &Listing) -> Option<PathBuf> {
    let inner = l
        .body
        .trim()
        .strip_prefix("{{#include ")?
        .strip_suffix("}}")?;
    let dir = l.file.parent().expect("a doc file has a directory");
    Some(dir.join(inner.trim()))
}

/// The text of a doc file with mdBook's `{{#include PATH}}` lines replaced by the files they name.
fn expanded(file: &Path) -> String {
    let text = fs_err::read_to_string(file).expect("doc file");
    let dir = file.parent().expect("a doc file has a directory");
    text.lines()
        .map(|line| match line.trim().strip_prefix("{{#include ") {
            Some(rest) => {
                let inner = rest.strip_suffix("}}").expect("include closes on its line");
                let path = dir.join(inner.trim());
                fs_err::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: include {}: {e}", rel(file), path.display()))
            }
            None => format!("{line}\n"),
        })
        .collect()
}

/// A temp dir holding examples/quickstart/ as `quickstart/`, so a listing's relative paths
/// (`quickstart/tasks`, `quickstart/agents/fixer.py`) find the bundled files.
fn fresh_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(root().join("examples/quickstart"))
        .arg(dir.path())
        .status()
        .expect("cp");
    assert!(status.success());
    dir
}

/// A TOML value as JSON, dates and times as their TOML text (as the schema has them).
fn to_json(v: &toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => Value::from(*f),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        toml::Value::Table(t) => {
            Value::Object(t.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
        }
    }
}

fn schema() -> Value {
    let text = fs_err::read_to_string(root().join("schemas/manifest.schema.json"))
        .expect("schemas/manifest.schema.json");
    serde_json::from_str(&text).expect("schema JSON")
}

#[test]
fn every_toml_listing_validates() {
    let validator = jsonschema::validator_for(&schema()).expect("schema compiles");
    let mut manifests = 0;
    let mut fragments = 0;
    let mut problems = Vec::new();
    let mut dirs = Vec::new();
    for file in doc_files() {
        let text = fs_err::read_to_string(&file).expect("doc file");
        for l in listings(&file, &text) {
            let mut kinds = l.info.split(',').map(str::trim);
            if kinds.next() != Some("toml") {
                continue;
            }
            let (fragment, invalid) = match kinds.next() {
                None => (false, false),
                Some("fragment") => (true, false),
                // A manifest shown for its diagnostics: `bench validate` must reject it.
                Some("invalid") => (false, true),
                // A design's listing (docs/kubernetes.md): keys bench does not accept yet.
                Some("proposed") => {
                    if let Err(e) = toml::from_str::<toml::Value>(&l.body) {
                        problems.push(format!("{}: not TOML: {e}", l.at()));
                    }
                    continue;
                }
                Some(other) => {
                    problems.push(format!(
                        "{}: unknown listing kind `toml,{other}` (`toml` is a whole manifest, \
                         `toml,fragment` a part of one, `toml,invalid` a manifest shown for its \
                         errors, `toml,proposed` a design's)",
                        l.at()
                    ));
                    continue;
                }
            };
            if fragment {
                fragments += 1;
                let mut value: toml::Value = match toml::from_str(&l.body) {
                    Ok(v) => v,
                    Err(e) => {
                        problems.push(format!("{}: not TOML: {e}", l.at()));
                        continue;
                    }
                };
                if let toml::Value::Table(t) = &mut value {
                    t.entry("version").or_insert(toml::Value::Integer(1));
                }
                let errors: Vec<String> = validator
                    .iter_errors(&to_json(&value))
                    .map(|e| format!("{e} at {}", e.instance_path()))
                    .collect();
                if !errors.is_empty() {
                    problems.push(format!(
                        "{}: the fragment violates the manifest schema: {errors:?}",
                        l.at()
                    ));
                }
                continue;
            }
            manifests += 1;
            let (dir, name) = match included(&l) {
                // A listing that shows a file of the repository validates that file in place.
                Some(path) => (
                    path.parent().expect("included file's dir").to_path_buf(),
                    path.file_name()
                        .expect("file name")
                        .to_string_lossy()
                        .to_string(),
                ),
                None => {
                    let dir = fresh_dir();
                    fs_err::write(dir.path().join("listing.toml"), &l.body).expect("write");
                    let path = dir.path().to_path_buf();
                    dirs.push(dir);
                    (path, "listing.toml".to_string())
                }
            };
            let o = bench_in(&dir, &["validate", &name]);
            if invalid {
                if o.status.code() != Some(1) {
                    problems.push(format!(
                        "{}: marked `toml,invalid`, but `bench validate` does not reject it:\n{}",
                        l.at(),
                        stderr(&o)
                    ));
                }
            } else if o.status.code() != Some(0) {
                problems.push(format!(
                    "{}: `bench validate` fails (mark a part of a manifest `toml,fragment`):\n{}",
                    l.at(),
                    stderr(&o)
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    // The README's quickstart and the book's include of examples/quickstart.toml at least.
    assert!(manifests >= 2, "only {manifests} manifest listings found");
    assert!(fragments >= 10, "only {fragments} fragment listings found");
}

/// The README's first TOML listing: the quickstart, as a reader copies it.
fn readme_quickstart() -> String {
    let file = root().join("README.md");
    let text = fs_err::read_to_string(&file).expect("README");
    listings(&file, &text)
        .into_iter()
        .find(|l| l.info == "toml")
        .expect("the README has a manifest listing")
        .body
}

#[test]
fn readme_quickstart_listing_is_examples_quickstart() {
    let listing: toml::Value = toml::from_str(&readme_quickstart()).expect("listing is TOML");
    let file: toml::Value = toml::from_str(
        &fs_err::read_to_string(root().join("examples/quickstart.toml")).expect("quickstart"),
    )
    .expect("quickstart is TOML");
    assert_eq!(
        listing, file,
        "the README's quickstart listing and examples/quickstart.toml differ"
    );
}

#[test]
fn readme_quickstart_listing_applies_as_copied() {
    // As the README says: beside examples/quickstart.toml, i.e. beside `quickstart/`.
    let dir = tempfile::tempdir().expect("tempdir");
    let examples = dir.path().join("examples");
    fs_err::create_dir(&examples).expect("mkdir");
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(root().join("examples/quickstart"))
        .arg(&examples)
        .status()
        .expect("cp");
    assert!(status.success());
    fs_err::write(examples.join("my-first.toml"), readme_quickstart()).expect("write");
    let validate = bench_in(dir.path(), &["validate", "examples/my-first.toml"]);
    assert_eq!(validate.status.code(), Some(0), "{}", stderr(&validate));
    let plan = bench_in(dir.path(), &["plan", "examples/my-first.toml"]);
    assert_eq!(
        plan.status.code(),
        Some(2),
        "work pending: {}",
        stderr(&plan)
    );
    let apply = bench_in(dir.path(), &["apply", "examples/my-first.toml"]);
    assert_eq!(apply.status.code(), Some(0), "{}", stderr(&apply));
    // "the report's path on stdout" (docs/overview.md: its absolute path).
    let report_md = examples.join("reports/quickstart/report.md");
    assert!(
        stdout(&apply).contains(&format!("report: {}", report_md.display())),
        "{}",
        stdout(&apply)
    );
    let report: Value = serde_json::from_str(
        &fs_err::read_to_string(examples.join("reports/quickstart/report.json"))
            .expect("report.json where the README says"),
    )
    .expect("report JSON");
    // "the oracle team resolves all 8 tasks, the nop team none, and the scripted fixer team 3".
    let resolved: BTreeMap<String, u64> = report["teams"]
        .as_array()
        .expect("teams")
        .iter()
        .map(|t| {
            (
                t["name"].as_str().expect("team name").to_string(),
                t["resolved"].as_u64().expect("resolved count"),
            )
        })
        .collect();
    let want: BTreeMap<String, u64> = [("fixer", 3), ("nop", 0), ("oracle", 8)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    assert_eq!(resolved, want);
    // "run `apply` again and nothing runs".
    let again = bench_in(dir.path(), &["plan", "examples/my-first.toml"]);
    assert_eq!(again.status.code(), Some(0), "{}", stdout(&again));

    // "Try an edit": the README's `plan --explain` output is what bench prints.
    let readme = fs_err::read_to_string(root().join("README.md")).expect("README");
    let section = readme
        .split("## Try an edit")
        .nth(1)
        .expect("README has `## Try an edit`");
    let shown = listings(Path::new("README.md"), section)
        .into_iter()
        .find(|l| l.info.is_empty())
        .expect("an output listing under Try an edit");
    let manifest = examples.join("my-first.toml");
    let text = fs_err::read_to_string(&manifest).expect("read");
    assert!(text.contains("worker = \"fixer\""));
    fs_err::write(
        &manifest,
        text.replacen("worker = \"fixer\"", "worker = \"fixer@other\"", 1),
    )
    .expect("write");
    let explain = bench_in(dir.path(), &["plan", "--explain", "examples/my-first.toml"]);
    let out = stdout(&explain);
    for line in shown.body.lines() {
        assert!(
            out.contains(line),
            "plan --explain does not print {line:?}:\n{out}"
        );
    }
    let solves = out
        .lines()
        .filter(|l| l.trim_start().starts_with("+ solve/"))
        .count();
    assert_eq!(solves, 8, "\"Only the fixer's 8 solves run\":\n{out}");
}

#[test]
fn readme_two_commands_are_what_ci_runs() {
    let readme = fs_err::read_to_string(root().join("README.md")).expect("README");
    let ci = fs_err::read_to_string(root().join(".ci/run")).expect(".ci/run");
    let ci_lines: BTreeSet<&str> = ci.lines().map(str::trim).collect();
    let section = readme
        .split("## The two commands")
        .nth(1)
        .expect("README has `## The two commands`");
    let block = listings(Path::new("README.md"), section)
        .into_iter()
        .next()
        .expect("a listing under The two commands");
    let commands: Vec<&str> = block
        .body
        .lines()
        .map(|l| l.split(" #").next().unwrap_or(l).trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(commands.len(), 2, "{commands:?}");
    for c in commands {
        assert!(ci_lines.contains(c), ".ci/run does not run `{c}`");
    }
}

/// The anchor mdBook (and GitHub) give a heading: lowercase, spaces to `-`, only alphanumerics,
/// `-` and `_` kept.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every heading anchor of a markdown text (outside code fences), with mdBook's `-1`, `-2` for
/// repeats.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let base = slug(title);
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The `[text](target)` links of a markdown text, outside code fences and inline code, with
/// their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        // Inline code holds examples, not links.
        let mut plain = String::new();
        for (j, part) in line.split('`').enumerate() {
            if j % 2 == 0 {
                plain.push_str(part);
            }
            plain.push(' ');
        }
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((i + 1, after[..end].trim().to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// `path` with `.` and `..` resolved lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in doc_files() {
        let text = fs_err::read_to_string(&file).expect("doc file");
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() {
                file.clone()
            } else {
                file.parent().expect("dir").join(path)
            };
            let docs = root().join("docs");
            if file.starts_with(&docs) && !normalize(&dest).starts_with(&docs) {
                problems.push(format!(
                    "{}:{line}: `{target}` leaves docs/: the built book would not have it \
                     (name the file in backticks, or include it in a page)",
                    rel(&file)
                ));
                continue;
            }
            if !dest.exists() {
                problems.push(format!(
                    "{}:{line}: `{target}`: {} does not exist",
                    rel(&file),
                    dest.display()
                ));
                continue;
            }
            if let Some(anchor) = anchor {
                let have = anchors(&expanded(&dest));
                if !have.contains(anchor) {
                    problems.push(format!(
                        "{}:{line}: `{target}`: no heading with anchor `{anchor}` in {} (it has {have:?})",
                        rel(&file),
                        rel(&dest)
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked >= 40, "only {checked} links checked");
}

#[test]
fn every_book_page_is_in_the_summary() {
    let docs = root().join("docs");
    let summary = fs_err::read_to_string(docs.join("SUMMARY.md")).expect("docs/SUMMARY.md");
    let listed: BTreeSet<String> = links(&summary).into_iter().map(|(_, t)| t).collect();
    let mut missing = Vec::new();
    for file in doc_files() {
        let Ok(inside) = file.strip_prefix(&docs) else {
            continue;
        };
        let name = inside.display().to_string();
        if name != "SUMMARY.md" && !listed.contains(&name) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "docs/ pages missing from docs/SUMMARY.md (the book would not show them): {missing:?}"
    );
}

// ---- the manifest reference, generated from the JSON Schema ----

/// Renders docs/manifest-reference.md from the manifest's JSON Schema.
fn manifest_reference(schema: &Value) -> String {
    let defs = schema["definitions"]
        .as_object()
        .expect("schema definitions");
    // Sections in the order a reader meets them: breadth first from the top level.
    let mut order: Vec<String> = Vec::new();
    let mut used_at: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut queue: std::collections::VecDeque<(String, String)> = Default::default();
    fn refs(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
        match v {
            Value::Object(o) => {
                if let Some(Value::String(r)) = o.get("$ref") {
                    let name = r.trim_start_matches("#/definitions/").to_string();
                    out.push((name, at.to_string()));
                }
                for (k, child) in o {
                    let at = match k.as_str() {
                        "additionalProperties" => format!("{at}.NAME"),
                        "items" => format!("{at}[]"),
                        _ => at.to_string(),
                    };
                    if k == "properties" {
                        if let Value::Object(props) = child {
                            for (p, s) in props {
                                let at = if at.is_empty() {
                                    p.clone()
                                } else {
                                    format!("{at}.{p}")
                                };
                                refs(s, &at, out);
                            }
                        }
                    } else {
                        refs(child, &at, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|c| refs(c, at, out)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    refs(&schema["properties"], "", &mut Vec::new());
    if let Value::Object(props) = &schema["properties"] {
        for (p, s) in props {
            refs(s, p, &mut found);
        }
    }
    queue.extend(found);
    while let Some((name, at)) = queue.pop_front() {
        let list = used_at.entry(name.clone()).or_default();
        if !list.contains(&at) {
            list.push(at.clone());
        }
        if order.contains(&name) {
            continue;
        }
        order.push(name.clone());
        let mut next = Vec::new();
        refs(&defs[&name], &at, &mut next);
        queue.extend(next);
    }
    for name in defs.keys() {
        if !order.contains(name) {
            order.push(name.clone());
        }
    }

    fn one_line(s: &str) -> String {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace('|', "\\|")
    }
    fn ty(s: &Value) -> String {
        if let Some(Value::String(r)) = s.get("$ref") {
            let name = r.trim_start_matches("#/definitions/");
            return format!("[{name}](#{})", name.to_lowercase());
        }
        if let Some(c) = s.get("const") {
            return format!("`{c}`");
        }
        if let Some(Value::Array(e)) = s.get("enum") {
            let values: Vec<String> = e.iter().map(|v| format!("`{v}`")).collect();
            return values.join(" \\| ");
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(alts)) = s.get(key) {
                let parts: Vec<String> = alts
                    .iter()
                    .filter(|a| a.get("type") != Some(&Value::from("null")))
                    .map(ty)
                    .collect();
                return parts.join(" or ");
            }
        }
        let types: Vec<&str> = match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect(),
            _ => vec![],
        };
        let mut out: Vec<String> = Vec::new();
        for t in types {
            out.push(match t {
                "array" => format!("array of {}", s.get("items").map(ty).unwrap_or_default()),
                "object" => match s.get("additionalProperties") {
                    Some(v @ Value::Object(_)) => format!("table of NAME = {}", ty(v)),
                    _ => "table".to_string(),
                },
                "integer" => match s.get("minimum") {
                    Some(m) => format!("integer >= {m}"),
                    None => "integer".to_string(),
                },
                "string" => match s.get("format").and_then(Value::as_str) {
                    Some("date") => "date (TOML)".to_string(),
                    Some(f) => format!("string ({f})"),
                    None => "string".to_string(),
                },
                other => other.to_string(),
            });
        }
        out.join(" or ")
    }
    fn table(s: &Value, out: &mut String) {
        let Some(Value::Object(props)) = s.get("properties") else {
            return;
        };
        let required: BTreeSet<&str> = s
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        out.push_str("| key | type | default | description |\n|---|---|---|---|\n");
        for (key, p) in props {
            let mut t = ty(p);
            if required.contains(key.as_str()) {
                t.push_str(" (required)");
            }
            let default = match p.get("default") {
                None | Some(Value::Null) => String::new(),
                Some(d) => format!("`{d}`"),
            };
            let desc = p.get("description").and_then(Value::as_str).unwrap_or("");
            out.push_str(&format!(
                "| `{key}` | {t} | {default} | {} |\n",
                one_line(desc)
            ));
        }
        out.push('\n');
    }

    let mut out = String::new();
    out.push_str("# Manifest reference\n\n");
    out.push_str(
        "<!-- Generated from schemas/manifest.schema.json by tests/docs.rs; do not edit. \
         `BENCH_BLESS=1 cargo nextest run --test docs manifest_reference` rewrites it. -->\n\n",
    );
    out.push_str(&format!(
        "{} Every key a manifest may hold, generated from `schemas/manifest.schema.json` (which \
         `bench schema` prints and a test keeps up to date with the Rust types), so this page \
         cannot drift from what `bench validate` accepts. Unknown keys are errors. Optional keys \
         may be left out; TOML has no null. How the pieces fit together is in \
         [Manifests](manifests.md).\n\n",
        one_line(schema["description"].as_str().unwrap_or(""))
    ));
    out.push_str("## Top level\n\n");
    table(schema, &mut out);
    for name in &order {
        let d = &defs[name];
        out.push_str(&format!("## {name}\n\n"));
        if let Some(at) = used_at.get(name) {
            let at: Vec<String> = at.iter().map(|a| format!("`{a}`")).collect();
            out.push_str(&format!("At: {}.\n\n", at.join(", ")));
        }
        if let Some(desc) = d.get("description").and_then(Value::as_str) {
            out.push_str(&format!("{}\n\n", one_line(desc)));
        }
        if d.get("properties").is_some() {
            table(d, &mut out);
        } else if let Some(Value::Array(alts)) = d.get("oneOf").or_else(|| d.get("anyOf")) {
            let tables = alts.iter().any(|a| a.get("properties").is_some());
            for alt in alts {
                let desc = alt
                    .get("description")
                    .and_then(Value::as_str)
                    .map(one_line)
                    .unwrap_or_default();
                if tables && alt.get("properties").is_some() {
                    let tag = alt["properties"]
                        .as_object()
                        .and_then(|p| {
                            p.iter()
                                .find(|(_, v)| v.get("const").is_some())
                                .map(|(k, v)| format!("{k} = {}", v["const"]))
                        })
                        .unwrap_or_default();
                    out.push_str(&format!("### {tag}\n\n{desc}\n\n"));
                    table(alt, &mut out);
                } else {
                    out.push_str(&format!("- {}: {desc}\n", ty(alt)));
                }
            }
            if !tables || alts.iter().any(|a| a.get("properties").is_none()) {
                out.push('\n');
            }
        } else {
            out.push_str(&format!("Type: {}.\n\n", ty(d)));
        }
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

#[test]
fn manifest_reference_is_generated_from_the_schema() {
    let want = manifest_reference(&schema());
    let path = root().join("docs/manifest-reference.md");
    if std::env::var_os("BENCH_BLESS").is_some() {
        fs_err::write(&path, &want).expect("write docs/manifest-reference.md");
    }
    let have = fs_err::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/manifest-reference.md is stale: rerun with BENCH_BLESS=1 \
         (`BENCH_BLESS=1 cargo nextest run --test docs manifest_reference`)"
    );
}

/// The source files the docs name (`src/...` in backticks, `{a,b}` alternatives expanded) exist,
/// so a moved module cannot leave the book pointing at nothing.
#[test]
fn every_source_path_the_docs_name_exists() {
    let mut missing = Vec::new();
    let mut checked = 0;
    for file in doc_files() {
        let text = fs_err::read_to_string(&file).expect("doc file");
        for (i, part) in text.split('`').enumerate() {
            if i % 2 == 0 || !part.starts_with("src/") || part.contains(char::is_whitespace) {
                continue;
            }
            let paths: Vec<String> = match (part.find('{'), part.find('}')) {
                (Some(a), Some(b)) if a < b => part[a + 1..b]
                    .split(',')
                    .map(|alt| format!("{}{alt}{}", &part[..a], &part[b + 1..]))
                    .collect(),
                _ => vec![part.to_string()],
            };
            for p in paths {
                checked += 1;
                // A glob (`src/parsers/*.rs`) or a placeholder (`src/datasets/<name>.rs`)
                // names its directory.
                let p = match p.find(['*', '<']) {
                    Some(star) => p[..star].to_string(),
                    None => p,
                };
                if !root().join(&p).exists() {
                    missing.push(format!("{}: `{p}`", rel(&file)));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the docs name files that do not exist: {missing:#?}"
    );
    assert!(checked >= 30, "only {checked} source paths checked");
}
