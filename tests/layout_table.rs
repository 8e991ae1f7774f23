//! The "Where things live" table of the docs (README.md or the book's store page,
//! docs/store.md, wherever it is), checked against `src/`: every path it names exists. A cell's
//! paths are backticked: `src/...` paths (braces expand: `src/jobs/{grade,solve}.rs`), and
//! bare file names (`local.rs`), which are relative to the directory of the cell's last `src/`
//! path. A move that leaves the table naming a file that is not there fails here.

use std::path::Path;

/// The text of the first of README.md and docs/store.md that has the section.
fn readme() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in ["README.md", "docs/store.md"] {
        let p = root.join(name);
        let text =
            fs_err::read_to_string(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
        if text.contains(HEADING) {
            return text;
        }
    }
    panic!("neither README.md nor docs/store.md has a \"{HEADING}\" section");
}

const HEADING: &str = "# Where things live";

/// The table's rows (the lines after the heading that start with `|`, header and rule left out).
fn table(text: &str) -> Vec<String> {
    let start = text.find(HEADING).expect("the section");
    text[start..]
        .lines()
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(str::to_string)
        .collect()
}

/// `a/{b,c}.rs` -> `a/b.rs`, `a/c.rs` (one brace group).
fn expand(path: &str) -> Vec<String> {
    match (path.find('{'), path.find('}')) {
        (Some(a), Some(b)) if a < b => path[a + 1..b]
            .split(',')
            .map(|alt| format!("{}{}{}", &path[..a], alt.trim(), &path[b + 1..]))
            .collect(),
        _ => vec![path.to_string()],
    }
}

/// The paths (relative to the repository) a row names.
fn paths(row: &str) -> Vec<String> {
    let mut out = Vec::new();
    for cell in row.split('|') {
        let mut dir = String::new();
        for (i, span) in cell.split('`').enumerate() {
            if i % 2 == 0 {
                continue;
            }
            if span.starts_with("src/") {
                for p in expand(span) {
                    dir = if p.ends_with('/') {
                        p.clone()
                    } else {
                        p.rsplit_once('/')
                            .map_or(String::new(), |(d, _)| format!("{d}/"))
                    };
                    out.push(p);
                }
            } else if span.ends_with(".rs") && !span.contains(' ') && !dir.is_empty() {
                out.extend(expand(&format!("{dir}{span}")));
            }
        }
    }
    out
}

#[test]
fn the_readme_layout_table_names_only_paths_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rows = table(&readme());
    assert!(rows.len() >= 5, "the table was not found whole: {rows:?}");
    let mut missing = Vec::new();
    let mut named = 0;
    for row in &rows {
        for p in paths(row) {
            named += 1;
            if !root.join(&p).exists() {
                missing.push(p);
            }
        }
    }
    assert!(named >= 10, "the table names only {named} paths");
    assert!(
        missing.is_empty(),
        "the \"Where things live\" table names paths src/ does not have (fix the table): {missing:?}"
    );
}

#[test]
fn cells_resolve_bare_names_against_their_last_directory() {
    let row = "| x | `src/backend/sandbox.rs`; `local.rs` (over `docker.rs`); `Dispatcher`, `src/jobs/{a,b}.rs` |";
    assert_eq!(
        paths(row),
        [
            "src/backend/sandbox.rs",
            "src/backend/local.rs",
            "src/backend/docker.rs",
            "src/jobs/a.rs",
            "src/jobs/b.rs"
        ]
    );
}
