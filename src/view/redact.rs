//! The static export's paths: a site made to be shared holds no absolute path of this machine.
//! Every string of every exported document (keys included) has the directory of each shown
//! manifest made relative (`/home/me/exp/.bench/tmp/ws-1/repo/x.py` -> `.bench/tmp/ws-1/repo/x.py`,
//! the directory itself `.`), a store outside it written `<store>` and the home directory `~`.
//! A prefix counts only as a whole path component (`/a/b` is not found in `/a/bc`). Not
//! applied by the server: a page served to this machine shows this machine's paths.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// One path prefix and what replaces it.
#[derive(Debug, Clone, PartialEq)]
struct Rule {
    prefix: String,
    /// The replacement of the prefix followed by `/` (that `/` included).
    nested: String,
    /// The replacement of the prefix alone.
    bare: String,
}

/// The rules of one export, longest prefix first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Redactor {
    rules: Vec<Rule>,
}

impl Redactor {
    /// The rules for experiments with these manifest directories and stores, and `home`.
    pub fn new(experiments: &[(&Path, &Path)], home: Option<&Path>) -> Redactor {
        let mut rules = Vec::new();
        for (dir, store) in experiments {
            for d in forms(dir) {
                rules.push(rule(d, "", "."));
            }
            for s in forms(store) {
                if !forms(dir).iter().any(|d| s.starts_with(d)) {
                    rules.push(rule(s, "<store>/", "<store>"));
                }
            }
        }
        for h in home.map(forms).unwrap_or_default() {
            rules.push(rule(h, "~/", "~"));
        }
        rules.retain(|r| r.prefix.len() > 1);
        rules.sort_by(|a, b| {
            b.prefix
                .len()
                .cmp(&a.prefix.len())
                .then_with(|| a.prefix.cmp(&b.prefix))
        });
        rules.dedup_by(|a, b| a.prefix == b.prefix);
        Redactor { rules }
    }

    /// `value` with every string (and object key) redacted.
    pub fn value(&self, value: Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.text(&s)),
            Value::Array(items) => Value::Array(items.into_iter().map(|v| self.value(v)).collect()),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (self.text(&k), self.value(v)))
                    .collect::<Map<_, _>>(),
            ),
            other => other,
        }
    }

    /// `text` with each rule's prefix replaced where it is a whole path.
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for r in &self.rules {
            if out.contains(&r.prefix) {
                out = replace(&out, r);
            }
        }
        out
    }
}

/// The absolute and the canonical spelling of a path (they differ through symlinks: macOS's
/// `/tmp` is `/private/tmp`), as strings without a trailing slash.
fn forms(path: &Path) -> Vec<String> {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out: Vec<PathBuf> = vec![abs.clone()];
    if let Ok(c) = fs_err::canonicalize(&abs)
        && c != abs
    {
        out.push(c);
    }
    out.into_iter()
        .map(|p| p.to_string_lossy().trim_end_matches('/').to_string())
        .filter(|p| p.starts_with('/'))
        .collect()
}

fn rule(prefix: String, nested: &str, bare: &str) -> Rule {
    Rule {
        prefix,
        nested: nested.to_string(),
        bare: bare.to_string(),
    }
}

/// Whether `c` may be part of a path component's name.
fn name_char(c: char) -> bool {
    c.is_alphanumeric() || "._-+~@".contains(c)
}

fn replace(text: &str, r: &Rule) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(&r.prefix) {
        let before = rest[..i]
            .chars()
            .next_back()
            .or_else(|| out.chars().next_back());
        let after_at = i + r.prefix.len();
        let after = rest[after_at..].chars().next();
        let starts = !before.is_some_and(|c| name_char(c) || c == '/');
        out.push_str(&rest[..i]);
        match after {
            Some('/') if starts => {
                out.push_str(&r.nested);
                rest = &rest[after_at + 1..];
            }
            Some(c) if starts && !name_char(c) => {
                out.push_str(&r.bare);
                rest = &rest[after_at..];
            }
            None if starts => {
                out.push_str(&r.bare);
                rest = "";
            }
            _ => {
                out.push_str(&r.prefix);
                rest = &rest[after_at..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor() -> Redactor {
        Redactor::new(
            &[
                (Path::new("/x/exp"), Path::new("/x/exp/.bench")),
                (Path::new("/y/other"), Path::new("/srv/store")),
            ],
            Some(Path::new("/home/me")),
        )
    }

    #[test]
    fn paths_under_a_manifest_become_relative_and_others_placeholders() {
        let r = redactor();
        assert_eq!(
            r.text("File \"/x/exp/.bench/tmp/ws-1/repo/t.py\", line 3"),
            "File \".bench/tmp/ws-1/repo/t.py\", line 3"
        );
        assert_eq!(r.text("/x/exp"), ".");
        assert_eq!(r.text("cd /x/exp; ls"), "cd .; ls");
        assert_eq!(r.text("/srv/store/blobs/ab"), "<store>/blobs/ab");
        assert_eq!(r.text("/y/other/b.toml"), "b.toml");
        assert_eq!(
            r.text("HOME=/home/me x=/home/me/.cache"),
            "HOME=~ x=~/.cache"
        );
    }

    #[test]
    fn only_whole_components_match() {
        let r = redactor();
        for kept in [
            "/x/exports/a",
            "/x/exp2",
            "/a/x/exp/b",
            "rel/x/exp/b",
            "/home/meg",
        ] {
            assert_eq!(r.text(kept), kept);
        }
    }

    #[test]
    fn every_string_and_key_of_a_document_is_redacted() {
        let r = redactor();
        let v =
            serde_json::json!({"manifest": "/x/exp/q.toml", "/home/me/a": [1, "/x/exp/.bench"]});
        assert_eq!(
            r.value(v),
            serde_json::json!({"manifest": "q.toml", "~/a": [1, ".bench"]})
        );
    }
}
