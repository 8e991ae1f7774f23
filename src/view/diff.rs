//! A unified diff (a stored patch) as files and hunks, each line with its old and new line
//! numbers and its syntax-coloured HTML. Lines that are not part of a hunk (git's `index`,
//! mode and binary lines) stay on their file as its header.

use serde::Serialize;

use super::highlight::Highlighter;

/// One changed file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffFile {
    pub old: Option<String>,
    pub new: Option<String>,
    /// `added`, `deleted`, `renamed`, `modified` or `binary`.
    pub status: &'static str,
    pub added: u64,
    pub removed: u64,
    /// The `diff --git` line and what follows it before the first hunk.
    pub header: Vec<String>,
    pub hunks: Vec<Hunk>,
}

/// One hunk: its `@@` line and its lines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hunk {
    pub header: String,
    pub lines: Vec<DiffLine>,
}

/// One line: ` ` context, `+` added, `-` removed, `\` a "no newline" note.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffLine {
    pub kind: char,
    pub old: Option<u64>,
    pub new: Option<u64>,
    /// The line's text as HTML (escaped, with syntax colour when the file's type is known).
    pub html: String,
}

/// A parsed patch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    pub files: Vec<DiffFile>,
    pub bytes: u64,
    /// Lines past the limit are not rendered (the raw patch is one click away).
    pub truncated: bool,
}

/// How many diff lines are rendered.
const MAX_LINES: usize = 20_000;

fn path_of(s: &str) -> Option<String> {
    let s = s.split('\t').next().unwrap_or(s).trim_end();
    if s == "/dev/null" {
        return None;
    }
    let s = s.trim_matches('"');
    Some(
        s.strip_prefix("a/")
            .or_else(|| s.strip_prefix("b/"))
            .unwrap_or(s)
            .to_string(),
    )
}

/// `@@ -a,b +c,d @@` -> (a, c).
fn hunk_starts(h: &str) -> Option<(u64, u64)> {
    let mut parts = h.split_whitespace().skip(1);
    let old = parts.next()?.strip_prefix('-')?;
    let new = parts.next()?.strip_prefix('+')?;
    let first = |s: &str| s.split(',').next().and_then(|n| n.parse().ok());
    Some((first(old)?, first(new)?))
}

/// Parses `patch`, colouring each file's lines with `hl`.
pub fn parse(patch: &str, hl: &Highlighter) -> Diff {
    let mut files: Vec<DiffFile> = Vec::new();
    let mut lines_seen = 0usize;
    let mut truncated = false;
    let (mut old_no, mut new_no) = (0u64, 0u64);
    let new_file = |first: &str| DiffFile {
        old: None,
        new: None,
        status: "modified",
        added: 0,
        removed: 0,
        header: vec![first.to_string()],
        hunks: Vec::new(),
    };
    let mut lines = patch.lines().peekable();
    while let Some(line) = lines.next() {
        if line.starts_with("diff --git ") {
            files.push(new_file(line));
            continue;
        }
        // A `---` line opens a file when no `diff --git` did (plain `diff -u` output), or
        // names its old path.
        if line.starts_with("--- ") && lines.peek().is_some_and(|n| n.starts_with("+++ ")) {
            let in_hunks = files.last().is_none_or(|f| !f.hunks.is_empty());
            if in_hunks {
                files.push(new_file(line));
            } else if let Some(f) = files.last_mut() {
                f.header.push(line.to_string());
            }
            let plus = lines.next().unwrap_or_default();
            if let Some(f) = files.last_mut() {
                f.old = path_of(&line[4..]);
                f.new = path_of(&plus[4..]);
                f.header.push(plus.to_string());
            }
            continue;
        }
        let Some(f) = files.last_mut() else {
            continue;
        };
        if line.starts_with("@@") {
            let (o, n) = hunk_starts(line).unwrap_or((1, 1));
            (old_no, new_no) = (o, n);
            f.hunks.push(Hunk {
                header: line.to_string(),
                lines: Vec::new(),
            });
            continue;
        }
        let Some(h) = f.hunks.last_mut() else {
            extended_header(f, line);
            continue;
        };
        lines_seen += 1;
        if lines_seen > MAX_LINES {
            truncated = true;
            break;
        }
        let kind = line.chars().next().unwrap_or(' ');
        let text = line.get(1..).unwrap_or("");
        let (o, n) = match kind {
            '+' => {
                f.added += 1;
                new_no += 1;
                (None, Some(new_no - 1))
            }
            '-' => {
                f.removed += 1;
                old_no += 1;
                (Some(old_no - 1), None)
            }
            '\\' => (None, None),
            _ => {
                old_no += 1;
                new_no += 1;
                (Some(old_no - 1), Some(new_no - 1))
            }
        };
        h.lines.push(DiffLine {
            kind: if matches!(kind, '+' | '-' | '\\') {
                kind
            } else {
                ' '
            },
            old: o,
            new: n,
            html: text.to_string(),
        });
    }
    for f in &mut files {
        finish(f);
        colour(f, hl);
    }
    Diff {
        files,
        bytes: patch.len() as u64,
        truncated,
    }
}

/// A line of git's extended header, before a file's first hunk.
fn extended_header(f: &mut DiffFile, line: &str) {
    if let Some(p) = line.strip_prefix("rename from ") {
        f.old = Some(p.to_string());
        f.status = "renamed";
    } else if let Some(p) = line.strip_prefix("rename to ") {
        f.new = Some(p.to_string());
        f.status = "renamed";
    } else if line.starts_with("Binary files ") || line == "GIT binary patch" {
        f.status = "binary";
    } else if line.starts_with("new file mode") {
        f.status = "added";
    } else if line.starts_with("deleted file mode") {
        f.status = "deleted";
    }
    f.header.push(line.to_string());
}

/// A file's status from its paths, and its paths from its `diff --git` line when it had no
/// `---`/`+++` lines (a mode change, a binary file).
fn finish(f: &mut DiffFile) {
    if f.status == "modified" {
        f.status = match (&f.old, &f.new) {
            (None, Some(_)) => "added",
            (Some(_), None) => "deleted",
            (Some(a), Some(b)) if a != b => "renamed",
            _ => "modified",
        };
    }
    if f.old.is_none() && f.new.is_none() {
        let names: Vec<&str> = f.header[0].split_whitespace().skip(2).collect();
        f.old = names.first().and_then(|s| path_of(s));
        f.new = names.get(1).and_then(|s| path_of(s));
    }
}

/// Colours a file's lines: the new side (context and added lines) and the old side (context
/// and removed lines) are each highlighted as one stream, so a construct that spans lines
/// (a string, a comment) is coloured as the file reads.
fn colour(f: &mut DiffFile, hl: &Highlighter) {
    let name = f.new.clone().or_else(|| f.old.clone()).unwrap_or_default();
    let mut new_side = hl.stream(&name);
    let mut old_side = hl.stream(&name);
    for h in &mut f.hunks {
        for l in &mut h.lines {
            let text = std::mem::take(&mut l.html);
            l.html = match l.kind {
                '+' => new_side.line(&text),
                '-' => old_side.line(&text),
                ' ' => {
                    let _ = old_side.line(&text);
                    new_side.line(&text)
                }
                _ => super::highlight::escape(&text),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "diff --git a/calc.py b/calc.py\nindex 1..2 100644\n--- a/calc.py\n+++ b/calc.py\n@@ -1,3 +1,3 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \n@@ -10,2 +10,3 @@ def f():\n x = 1\n+y = \"<b>\"\n z = 3\ndiff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n\\ No newline at end of file\n";

    #[test]
    fn files_hunks_and_line_numbers() {
        let hl = Highlighter::new();
        let d = parse(PATCH, &hl);
        assert_eq!(d.files.len(), 2);
        let f = &d.files[0];
        assert_eq!(
            (f.old.as_deref(), f.new.as_deref()),
            (Some("calc.py"), Some("calc.py"))
        );
        assert_eq!((f.status, f.added, f.removed), ("modified", 2, 1));
        assert_eq!(f.hunks.len(), 2);
        let l = &f.hunks[0].lines;
        assert_eq!((l[1].kind, l[1].old, l[1].new), ('-', Some(2), None));
        assert_eq!((l[2].kind, l[2].old, l[2].new), ('+', None, Some(2)));
        assert_eq!((l[3].old, l[3].new), (Some(3), Some(3)));
        let l2 = &f.hunks[1].lines;
        assert_eq!((l2[1].kind, l2[1].new), ('+', Some(11)));
        // Escaped and coloured (python is known: a string span).
        assert!(l2[1].html.contains("&lt;b&gt;"), "{}", l2[1].html);
        assert!(l2[1].html.contains("<span class=\""), "{}", l2[1].html);
        let g = &d.files[1];
        assert_eq!(
            (g.status, g.old.as_deref(), g.new.as_deref()),
            ("added", None, Some("new.txt"))
        );
        assert_eq!(g.hunks[0].lines[1].kind, '\\');
        assert!(!d.truncated);
    }

    #[test]
    fn an_empty_patch_has_no_files() {
        let d = parse("", &Highlighter::new());
        assert!(d.files.is_empty());
    }
}
