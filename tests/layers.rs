//! The shape of `src/`, checked: bench's top-level modules form layers, and a module imports only
//! from its own layer or the layers below it, with no import cycle among the top-level modules;
//! and no function in `src/` is longer than 120 lines unless its doc comment says why.
//!
//! The check reads the source text, not the compiler's view: it lexes each file (comments,
//! strings and character literals blanked), then takes every path that starts at `crate::` (or
//! climbs out of its top-level module through `super::`), in `use` lines and inline alike, test
//! modules included. A path names its first segment's top-level module, so a re-export does not
//! hide an import: `crate::manifest::BackendKind` is an import of `manifest` wherever the type is
//! defined. The layer order is [`LAYERS`]; what today's code still does against it is
//! [`KNOWN_UPWARD`] and [`KNOWN_LONG`], lists that may only shrink: an entry that no longer
//! occurs fails the test until it is removed. See docs/layers.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// bench's top-level modules, bottom layer first. A module may import from its own layer and
/// from every layer below it, never from a layer above; modules of one layer must not form a
/// cycle. Every `mod` of `src/lib.rs` must be placed here (a new module fails until it is).
const LAYERS: &[(&str, &[&str])] = &[
    (
        "floor: types and helpers shared by everything; they import nothing of bench \
         but each other",
        &[
            "types",
            "events",
            "exit_codes",
            "files",
            "key",
            "regular_file",
            "timings",
        ],
    ),
    (
        "the task model: a task, its base (image or repository), its grading view, sampling",
        &["tasks"],
    ),
    (
        "agent adapters: install, runtime, usage, pricing, scrubbing (no team topology: that \
         is the solve executor's)",
        &["harness"],
    ),
    (
        "the Sandbox and Backend seam and its implementations (local, docker, pool)",
        &["backend"],
    ),
    (
        "test-log parsers and the git miner, which run over a sandbox",
        &["parsers", "mine"],
    ),
    (
        "statistics and renderers of a report (they read job outputs, never run anything)",
        &["report"],
    ),
    (
        "the jobs: one per node kind, the key and the executor's only input, with its output",
        &["jobs"],
    ),
    (
        "graders: what differs per benchmark when a patch is graded",
        &["protocols"],
    ),
    (
        "the store of job outputs and the remote cache in front of it",
        &["store", "cache"],
    ),
    (
        "dataset adapters: files and hub revisions into tasks",
        &["datasets"],
    ),
    (
        "the executors of each node kind (sample, solve with its teams, grade, report)",
        &["stages"],
    ),
    (
        "the manifest: raw TOML into the validated model, diagnostics, schema",
        &["manifest"],
    ),
    (
        "the graph: a manifest expanded into nodes and their jobs",
        &["graph"],
    ),
    (
        "remote execution: shipping jobs to workers, the worker, engines (Slurm)",
        &["execution"],
    ),
    (
        "plan and apply: the dispatcher, pools, budget, progress",
        &["run"],
    ),
    (
        "the results viewer: read-only pages of an experiment from the store",
        &["view"],
    ),
    (
        "the command line: clap types and the commands",
        &["cli", "commands"],
    ),
];

/// Imports that run from a lower layer to a higher one today: (file under src/, module it
/// imports, how it goes away). Each entry must still occur; remove it when it no longer does.
const KNOWN_UPWARD: &[(&str, &str, &str)] = &[
    (
        "jobs/grade.rs",
        "protocols",
        "GradeJob::new asks protocols::version: the version goes with the protocol trait",
    ),
    (
        "tasks/task.rs",
        "datasets",
        "a test builds a Harbor config with the dataset's parser",
    ),
];

/// Functions longer than 120 lines whose doc comment does not (yet) say why: (file under src/,
/// function name, its length when listed, reason). The reason says why the function is long and,
/// where it should be split, which split is pending ("split pending" alone, or nothing, is no
/// reason: [`reason_problem`] fails it). Each must still be over the limit (remove it when it no
/// longer is) and may not grow past its listed length (a listed function may only shrink; lower
/// the figure when it does).
const KNOWN_LONG: &[(&str, &str, usize, &str)] = &[];

/// The longest a function may be without its doc comment saying why.
const MAX_FN_LINES: usize = 120;

/// What a doc comment says to explain a longer function ("... longer than 120 lines because").
const LONG_MARKER: &str = "longer than 120 lines";

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src/`, as (path relative to src/ with `/`, text), sorted.
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = fs_err::read_dir(dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let root = src();
    let mut files = Vec::new();
    walk(&root, &mut files);
    files
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(&root)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            let text = fs_err::read_to_string(&p)
                .unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
            (rel, text)
        })
        .collect()
}

/// The module path a file declares: `backend/docker.rs` -> [backend, docker],
/// `backend/mod.rs` -> [backend], `lib.rs` -> [].
fn module_path(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if !(stem == "mod" || (parts.is_empty() && (stem == "lib" || stem == "main"))) {
        parts.push(stem.to_string());
    }
    parts
}

/// `text` with comments, string literals and character literals replaced by spaces (newlines
/// kept, so line numbers hold).
fn blank(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let keep = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(keep(c[i]));
                    i += 1;
                }
            }
        } else if (ch == 'r' || (ch == 'b' && next == Some('r')))
            && !prev_is_ident(&c, i)
            && raw_string_start(&c, i + usize::from(ch == 'b')).is_some()
        {
            let start = i + usize::from(ch == 'b');
            let hashes = raw_string_start(&c, start).expect("checked");
            // r, the hashes, the quote.
            let mut j = start + 1 + hashes + 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (0..hashes).all(|k| c.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for &x in &c[i..j.min(c.len())] {
                out.push(keep(x));
            }
            i = j;
        } else if ch == '"' {
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(keep(c[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if ch == '\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let end = if next == Some('\\') {
                (i + 2..c.len()).find(|&j| c[j] == '\'')
            } else if c.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    for _ in i..=e {
                        out.push(' ');
                    }
                    i = e + 1;
                }
                None => {
                    out.push(ch);
                    i += 1;
                }
            }
        } else {
            out.push(ch);
            i += 1;
        }
    }
    out
}

fn prev_is_ident(c: &[char], i: usize) -> bool {
    i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_')
}

/// The number of `#` of a raw string starting at `c[i] == 'r'`, if one starts there.
fn raw_string_start(c: &[char], i: usize) -> Option<usize> {
    if c.get(i) != Some(&'r') {
        return None;
    }
    let mut j = i + 1;
    while c.get(j) == Some(&'#') {
        j += 1;
    }
    (c.get(j) == Some(&'"')).then_some(j - i - 1)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Punct(char),
    /// `::`
    Path,
}

/// The tokens of blanked code that matter here, with their 1-based lines.
fn tokens(code: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(c[start..i].iter().collect()), line));
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push((Tok::Path, line));
            i += 2;
        } else if ch.is_whitespace() || ch.is_numeric() {
            i += 1;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

fn ident(t: Option<&(Tok, usize)>) -> Option<&str> {
    match t {
        Some((Tok::Ident(s), _)) => Some(s),
        _ => None,
    }
}

/// The paths a use tree or inline path names from `toks[i]` on, each as its segments
/// (`a::b::{c, d as e}` -> [a, b, c], [a, b, d]), and the index after it.
fn use_tree(toks: &[(Tok, usize)], i: usize) -> (Vec<Vec<String>>, usize) {
    match toks.get(i) {
        Some((Tok::Ident(s), _)) => {
            if toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Path) {
                let (subs, next) = use_tree(toks, i + 2);
                let subs = if subs.is_empty() {
                    vec![Vec::new()]
                } else {
                    subs
                };
                let paths = subs
                    .into_iter()
                    .map(|mut p| {
                        p.insert(0, s.clone());
                        p
                    })
                    .collect();
                (paths, next)
            } else {
                (vec![vec![s.clone()]], i + 1)
            }
        }
        Some((Tok::Punct('{'), _)) => {
            let mut out = Vec::new();
            let mut j = i + 1;
            loop {
                let (paths, next) = use_tree(toks, j);
                out.extend(paths);
                j = next.max(j);
                // Skip `as name` and anything else up to the next `,` or the closing `}`.
                let mut depth = 0;
                while let Some((t, _)) = toks.get(j) {
                    match t {
                        Tok::Punct('{') => depth += 1,
                        Tok::Punct('}') if depth == 0 => break,
                        Tok::Punct('}') => depth -= 1,
                        Tok::Punct(',') if depth == 0 => break,
                        _ => {}
                    }
                    j += 1;
                }
                match toks.get(j) {
                    Some((Tok::Punct(','), _)) => j += 1,
                    _ => return (out, j + 1),
                }
            }
        }
        _ => (Vec::new(), i),
    }
}

/// One path from a file to an item of bench, resolved from the crate root.
#[derive(Debug, Clone)]
struct Import {
    file: String,
    line: usize,
    /// The file's top-level module.
    from: String,
    /// The top-level module the path names.
    to: String,
    /// The path's segments from the crate root.
    path: Vec<String>,
}

/// Every path in `rel` that starts at `crate::` or climbs out of its file through `super::`,
/// resolved from the crate root.
fn paths_of(rel: &str, text: &str) -> Vec<Import> {
    let path = module_path(rel);
    let Some(top) = path.first().cloned() else {
        return Vec::new();
    };
    let toks = tokens(&blank(text));
    let mut out = Vec::new();
    let mut push = |segs: Vec<String>, line: usize| {
        if let Some(to) = segs.first().cloned() {
            out.push(Import {
                file: rel.to_string(),
                line,
                from: top.clone(),
                to,
                path: segs,
            });
        }
    };
    // Inline modules open at each brace depth, to resolve `super::`.
    let mut braces: Vec<bool> = Vec::new();
    for i in 0..toks.len() {
        let (t, line) = &toks[i];
        match t {
            Tok::Punct('{') => {
                let is_mod = i >= 2
                    && ident(toks.get(i - 2)) == Some("mod")
                    && ident(toks.get(i - 1)).is_some();
                braces.push(is_mod);
            }
            Tok::Punct('}') => {
                braces.pop();
            }
            Tok::Ident(s) if s == "crate" && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Path) => {
                for segs in use_tree(&toks, i + 2).0 {
                    push(segs, *line);
                }
            }
            Tok::Ident(s)
                if s == "super"
                    && (i == 0 || toks[i - 1].0 != Tok::Path)
                    && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Path) =>
            {
                let inline = braces.iter().filter(|m| **m).count();
                let mut ups = 0;
                let mut j = i;
                while ident(toks.get(j)) == Some("super")
                    && toks.get(j + 1).map(|t| &t.0) == Some(&Tok::Path)
                {
                    ups += 1;
                    j += 2;
                }
                // Climbing only out of inline modules stays in this file.
                if ups > inline && ups - inline <= path.len() {
                    let base = &path[..path.len() - (ups - inline)];
                    for segs in use_tree(&toks, j).0 {
                        push(base.iter().cloned().chain(segs).collect(), *line);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Every path in `rel` that leaves its top-level module.
fn imports_of(rel: &str, text: &str, modules: &BTreeSet<String>) -> Vec<Import> {
    paths_of(rel, text)
        .into_iter()
        .filter(|im| im.to != im.from && modules.contains(&im.to))
        .collect()
}

/// The top-level modules `src/lib.rs` declares.
fn declared_modules() -> BTreeSet<String> {
    let text = fs_err::read_to_string(src().join("lib.rs")).expect("src/lib.rs");
    let toks = tokens(&blank(&text));
    let mut out = BTreeSet::new();
    for i in 0..toks.len() {
        if ident(toks.get(i)) == Some("mod")
            && let Some(name) = ident(toks.get(i + 1))
            && toks.get(i + 2).map(|t| &t.0) == Some(&Tok::Punct(';'))
        {
            out.insert(name.to_string());
        }
    }
    out
}

fn layer_of() -> BTreeMap<&'static str, usize> {
    let mut out = BTreeMap::new();
    for (n, (_, mods)) in LAYERS.iter().enumerate() {
        for m in *mods {
            assert!(out.insert(*m, n).is_none(), "{m} is placed in two layers");
        }
    }
    out
}

fn all_imports() -> Vec<Import> {
    let modules = declared_modules();
    sources()
        .iter()
        .flat_map(|(rel, text)| imports_of(rel, text, &modules))
        .collect()
}

#[test]
fn every_module_is_placed_in_a_layer() {
    let layers = layer_of();
    let declared = declared_modules();
    let unplaced: Vec<_> = declared
        .iter()
        .filter(|m| !layers.contains_key(m.as_str()))
        .collect();
    let stale: Vec<_> = layers.keys().filter(|m| !declared.contains(**m)).collect();
    assert!(
        unplaced.is_empty(),
        "modules of src/lib.rs not placed in LAYERS of tests/layers.rs: {unplaced:?}"
    );
    assert!(
        stale.is_empty(),
        "LAYERS of tests/layers.rs names modules src/lib.rs does not declare: {stale:?}"
    );
}

#[test]
fn no_import_runs_up_the_layers() {
    let layers = layer_of();
    let mut found: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for im in all_imports() {
        let (Some(&from), Some(&to)) = (layers.get(im.from.as_str()), layers.get(im.to.as_str()))
        else {
            continue;
        };
        if to > from {
            found
                .entry((im.file.clone(), im.to.clone()))
                .or_default()
                .push(im.line);
        }
    }
    let known: BTreeSet<(String, String)> = KNOWN_UPWARD
        .iter()
        .map(|(f, m, _)| (f.to_string(), m.to_string()))
        .collect();
    let mut problems = Vec::new();
    for ((file, to), lines) in &found {
        if !known.contains(&(file.clone(), to.clone())) {
            let from = module_path(file)[0].clone();
            problems.push(format!(
                "src/{file}:{} imports `{to}` (layer {}: {}) from `{from}` (layer {}): move the \
                 shared item down (e.g. to src/types/) or the code up",
                lines[0],
                layers[to.as_str()],
                LAYERS[layers[to.as_str()]].0,
                layers[from.as_str()],
            ));
        }
    }
    for (file, to) in &known {
        if !found.contains_key(&(file.clone(), to.clone())) {
            problems.push(format!(
                "src/{file} no longer imports `{to}`: remove it from KNOWN_UPWARD in tests/layers.rs"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(next) = s.graph.get(v) {
            for w in next {
                if !s.index.contains_key(w.as_str()) {
                    visit(s, w);
                    let low = s.low[w.as_str()].min(s.low[v]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w.as_str()) {
                    let low = s.index[w.as_str()].min(s.low[v]);
                    s.low.insert(v, low);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

#[test]
fn no_import_cycle_among_top_level_modules() {
    let known: BTreeSet<(String, String)> = KNOWN_UPWARD
        .iter()
        .map(|(f, m, _)| (f.to_string(), m.to_string()))
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for im in all_imports() {
        if !known.contains(&(im.file.clone(), im.to.clone())) {
            graph.entry(im.from).or_default().insert(im.to);
        }
    }
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "import cycles among top-level modules (each a set of modules that reach each other, \
         not counting KNOWN_UPWARD): {found:?}"
    );
}

/// Every function in `rel`: (name, first line, number of lines, doc comment text).
fn functions(text: &str) -> Vec<(String, usize, usize, String)> {
    let code = blank(text);
    let toks = tokens(&code);
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for i in 0..toks.len() {
        if ident(toks.get(i)) != Some("fn") {
            continue;
        }
        let Some(name) = ident(toks.get(i + 1)) else {
            continue; // `fn(` pointer types
        };
        let start = toks[i].1;
        // The body opens at the first `{` outside parentheses and angle brackets; a `;` there
        // first is a declaration without a body.
        let mut j = i + 2;
        let mut parens = 0i32;
        let mut body = None;
        while j < toks.len() {
            match toks[j].0 {
                Tok::Punct('(') | Tok::Punct('[') => parens += 1,
                Tok::Punct(')') | Tok::Punct(']') => parens -= 1,
                Tok::Punct(';') if parens == 0 => break,
                Tok::Punct('{') if parens == 0 => {
                    body = Some(j);
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        let Some(open) = body else { continue };
        let mut depth = 0;
        let mut end = toks[open].1;
        for (t, line) in &toks[open..] {
            match t {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => {
                    depth -= 1;
                    if depth == 0 {
                        end = *line;
                        break;
                    }
                }
                _ => {}
            }
        }
        // The doc comment: `///` lines above the signature, attributes between allowed.
        let mut doc = Vec::new();
        let mut k = start.saturating_sub(1);
        while k > 0 {
            let l = lines[k - 1].trim();
            if let Some(d) = l.strip_prefix("///") {
                doc.push(d.trim().to_string());
            } else if !(l.starts_with("#[") || l.starts_with(')')) {
                break;
            }
            k -= 1;
        }
        doc.reverse();
        out.push((name.to_string(), start, end - start + 1, doc.join(" ")));
    }
    out
}

#[test]
fn no_function_is_longer_than_120_lines_unless_its_doc_says_why() {
    let mut long = BTreeMap::new();
    for (rel, text) in sources() {
        for (name, line, len, doc) in functions(&text) {
            if len > MAX_FN_LINES && !doc.to_lowercase().contains(LONG_MARKER) {
                long.insert((rel.clone(), name), (line, len));
            }
        }
    }
    let known: BTreeMap<(String, String), usize> = KNOWN_LONG
        .iter()
        .map(|(f, n, max, _)| ((f.to_string(), n.to_string()), *max))
        .collect();
    let mut problems = Vec::new();
    for ((file, name), (line, len)) in &long {
        if let Some(max) = known.get(&(file.clone(), name.clone())) {
            if len > max {
                problems.push(format!(
                    "src/{file}:{line}: fn {name} grew to {len} lines from the {max} it was \
                     listed with in KNOWN_LONG: split it rather than grow it"
                ));
            } else if len < max {
                problems.push(format!(
                    "src/{file}:{line}: fn {name} is {len} lines now, shorter than the {max} of \
                     its KNOWN_LONG entry: lower the entry to {len}"
                ));
            }
        } else {
            problems.push(format!(
                "src/{file}:{line}: fn {name} is {len} lines (limit {MAX_FN_LINES}): split it, \
                 or say in its doc comment why it is {LONG_MARKER}"
            ));
        }
    }
    for (file, name) in known.keys() {
        if !long.contains_key(&(file.clone(), name.clone())) {
            problems.push(format!(
                "src/{file}: fn {name} is no longer over {MAX_FN_LINES} lines (or its doc says \
                 why): remove it from KNOWN_LONG in tests/layers.rs"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Why a `KNOWN_LONG` entry's reason is no reason, if it is not: empty, or "split pending"
/// alone (case, surrounding blanks and a final full stop aside). A reason says why the function
/// is long and which split is pending, so that the next person can do it.
fn reason_problem(file: &str, name: &str, reason: &str) -> Option<String> {
    let said = reason.trim().trim_end_matches('.').trim().to_lowercase();
    if said.is_empty() || said == "split pending" {
        Some(format!(
            "KNOWN_LONG entry src/{file} fn {name}: its reason {reason:?} is no reason: say why \
             the function is long and which split is pending"
        ))
    } else {
        None
    }
}

#[test]
fn every_known_long_entry_says_why() {
    let problems: Vec<String> = KNOWN_LONG
        .iter()
        .filter_map(|(file, name, _, reason)| reason_problem(file, name, reason))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The reason check itself, on sample entries: "split pending" and an empty reason fail and
/// name the entry; a reason that says why passes.
#[test]
fn the_reason_check_refuses_split_pending() {
    for bad in [
        "split pending",
        "",
        "  ",
        "Split pending.",
        " split pending ",
    ] {
        let problem = reason_problem("stages/x.rs", "long_fn", bad)
            .unwrap_or_else(|| panic!("{bad:?} passed as a reason"));
        assert!(
            problem.contains("src/stages/x.rs fn long_fn"),
            "the problem names its entry: {problem}"
        );
    }
    let good = "one match over every node kind; split pending: each arm becomes a method of \
                the node's executor";
    assert_eq!(reason_problem("stages/x.rs", "long_fn", good), None);
}

/// The checker itself, on small inputs: a path in a string or comment is not an import, a
/// `use` tree names each of its modules, `super::` out of a module counts.
#[test]
fn the_checker_reads_paths_as_rust_does() {
    let modules: BTreeSet<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
    let text = r##"
// use crate::c::X;
/* crate::c::Y /* nested crate::c */ */
const S: &str = "crate::c::Z";
const R: &str = r#"crate::c::"W""#;
const C: char = '"';
fn f<'a>(x: &'a str) -> &'a str { x }
use crate::{b::{One, Two}, self as me, d};
use super::super::super::c::Q;
mod tests {
    use super::super::super::d::Z;
    use super::super::super::super::d::W;
    fn g() { let _ = crate::a::own(); }
}
"##;
    let got: Vec<(String, usize)> = imports_of("a/x/y.rs", text, &modules)
        .into_iter()
        .map(|i| (i.path.join("::"), i.line))
        .collect();
    let want: Vec<(String, usize)> = vec![
        ("b::One".into(), 8),
        ("b::Two".into(), 8),
        ("d".into(), 8),
        ("c::Q".into(), 9),
        ("d::W".into(), 12),
    ];
    assert_eq!(got, want);
    let fns = functions(
        "/// Doc.\n/// It is longer than 120 lines because.\n#[test]\nfn one() {\n  let s = \"}\";\n}\nfn two();\n",
    );
    assert_eq!(fns.len(), 1);
    assert_eq!(fns[0].0, "one");
    assert_eq!((fns[0].1, fns[0].2), (4, 3));
    assert!(fns[0].3.contains(LONG_MARKER));
}

/// The floor's shared types (`src/types/`) import nothing of bench but the hashing of `key`, so
/// any module can use them.
#[test]
fn the_shared_types_import_nothing_of_bench_but_key() {
    let found: Vec<String> = all_imports()
        .into_iter()
        .filter(|im| im.from == "types" && im.to != "key")
        .map(|im| format!("src/{}:{} imports `{}`", im.file, im.line, im.to))
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Import cycles among the files (child modules) of one top-level module, as
/// "module: [child, ...]": a child's path to a sibling (`super::sibling::...`,
/// `crate::module::sibling::...`) is an edge; paths to the parent's own items are not.
fn file_cycles() -> Vec<String> {
    let root = src();
    let is_child = |top: &str, child: &str| {
        root.join(top).join(format!("{child}.rs")).is_file()
            || root.join(top).join(child).join("mod.rs").is_file()
    };
    let mut graphs: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (rel, text) in sources() {
        let from_path = module_path(&rel);
        let Some(from_child) = from_path.get(1).cloned() else {
            continue;
        };
        for im in paths_of(&rel, &text) {
            if im.to != im.from {
                continue;
            }
            let Some(to_child) = im.path.get(1) else {
                continue;
            };
            if *to_child != from_child && is_child(&im.from, to_child) {
                graphs
                    .entry(im.from.clone())
                    .or_default()
                    .entry(from_child.clone())
                    .or_default()
                    .insert(to_child.clone());
            }
        }
    }
    graphs
        .iter()
        .flat_map(|(top, g)| {
            cycles(g)
                .into_iter()
                .map(move |c| format!("{top}: [{}]", c.join(", ")))
        })
        .collect()
}

/// Cycles among the files of one module today, each with how it goes away; the list may only
/// shrink.
const KNOWN_FILE_CYCLES: &[(&str, &str)] = &[
    (
        "manifest: [diagnostic, tree]",
        "a diagnostic's location type (tree::Loc) belongs with the diagnostics",
    ),
    (
        "report: [html, markdown]",
        "the HTML escaper and the scores table both renderers use: one shared file",
    ),
    (
        "report: [inference, power, stats]",
        "stats' mean and Z_95 used by inference; power's functions only by stats' tests",
    ),
    (
        "run: [images, plan]",
        "plan holds images' ImageToPull: the type belongs with plan or below both",
    ),
    (
        "store: [action_index, layout]",
        "the index's FileStamp and the layout's Store: FileStamp on its own",
    ),
];

#[test]
fn no_import_cycle_among_the_files_of_a_module() {
    let found: BTreeSet<String> = file_cycles().into_iter().collect();
    let known: BTreeSet<String> = KNOWN_FILE_CYCLES
        .iter()
        .map(|(c, _)| c.to_string())
        .collect();
    let mut problems = Vec::new();
    for c in found.difference(&known) {
        problems.push(format!(
            "import cycle among the files of {c}: move what they share into one of them, or \
             below them"
        ));
    }
    for c in known.difference(&found) {
        problems.push(format!(
            "no longer a cycle: {c}: remove it from KNOWN_FILE_CYCLES in tests/layers.rs"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
