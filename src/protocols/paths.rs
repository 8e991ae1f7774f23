//! The files a unified diff touches, read from its headers: for each file its old path (`None`
//! when the diff creates it) and its new path (`None` when it deletes it). Used by the test-file
//! reset before the hidden tests and by the patch audit; it reads paths only, never hunks.

/// One file of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchFile {
    pub old: Option<String>,
    pub new: Option<String>,
    /// Lines the diff adds to this file (`+` lines of its hunks, without the `+`).
    pub added: Vec<String>,
    /// Lines the diff removes from this file (`-` lines of its hunks, without the `-`).
    pub removed: Vec<String>,
}

impl PatchFile {
    /// The path the file has after the patch, else before it.
    pub fn path(&self) -> &str {
        self.new.as_deref().or(self.old.as_deref()).unwrap_or("")
    }

    pub fn created(&self) -> bool {
        self.old.is_none()
    }
}

/// A path of a `---`/`+++` line or a `diff --git` header, without its `a/` or `b/` prefix and
/// quotes; `None` for `/dev/null`.
fn header_path(raw: &str) -> Option<String> {
    let raw = raw.split('\t').next().unwrap_or(raw).trim_end();
    if raw == "/dev/null" {
        return None;
    }
    let unq = raw
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .unwrap_or(raw);
    let p = unq
        .strip_prefix("a/")
        .or_else(|| unq.strip_prefix("b/"))
        .unwrap_or(unq);
    Some(p.to_string())
}

/// The files of `patch`, in order.
pub fn patch_files(patch: &str) -> Vec<PatchFile> {
    let mut out: Vec<PatchFile> = Vec::new();
    let mut in_header = false;
    for line in patch.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            // `a/X b/Y`: split at the last " b/" (exact for paths without " b/").
            let (old, new) = match rest.rfind(" b/") {
                Some(i) => (header_path(&rest[..i]), header_path(&rest[i + 1..])),
                None => (None, header_path(rest)),
            };
            out.push(PatchFile {
                old,
                new,
                added: Vec::new(),
                removed: Vec::new(),
            });
            in_header = true;
            continue;
        }
        if line.starts_with("--- ") && (in_header || out.is_empty()) {
            if out.is_empty() || !in_header {
                out.push(PatchFile {
                    old: None,
                    new: None,
                    added: Vec::new(),
                    removed: Vec::new(),
                });
            }
            let f = out.last_mut().expect("a file");
            f.old = header_path(&line[4..]);
            continue;
        }
        if let Some(rest) = line.strip_prefix("+++ ")
            && in_header
        {
            let f = out.last_mut().expect("a file");
            f.new = header_path(rest);
            in_header = false;
            continue;
        }
        if in_header {
            let f = out.last_mut().expect("a file");
            if line.starts_with("new file mode") {
                f.old = None;
            } else if line.starts_with("deleted file mode") {
                f.new = None;
            } else if let Some(p) = line.strip_prefix("rename from ") {
                f.old = header_path(p);
            } else if let Some(p) = line.strip_prefix("rename to ") {
                f.new = header_path(p);
            } else if line.starts_with("@@") {
                in_header = false;
            }
            continue;
        }
        if let (Some(add), Some(f)) = (line.strip_prefix('+'), out.last_mut()) {
            f.added.push(add.to_string());
        } else if let (Some(rm), Some(f)) = (line.strip_prefix('-'), out.last_mut()) {
            f.removed.push(rm.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_created_modified_deleted_and_renamed_files() {
        let p = "diff --git a/x.py b/x.py\nindex 1..2 100644\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n\
diff --git a/tests/new_test.go b/tests/new_test.go\nnew file mode 100644\n--- /dev/null\n+++ b/tests/new_test.go\n@@ -0,0 +1 @@\n+package x\n\
diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n\
diff --git a/m.sh b/n.sh\nsimilarity index 100%\nrename from m.sh\nrename to n.sh\n\
diff --git a/bin.dat b/bin.dat\nnew file mode 100644\nBinary files /dev/null and b/bin.dat differ\n";
        let f = patch_files(p);
        assert_eq!(f.len(), 5, "{f:?}");
        assert_eq!(
            (f[0].old.as_deref(), f[0].new.as_deref()),
            (Some("x.py"), Some("x.py"))
        );
        assert_eq!(f[0].added, vec!["b".to_string()]);
        assert!(f[1].created());
        assert_eq!(f[1].path(), "tests/new_test.go");
        assert_eq!(f[1].added, vec!["package x".to_string()]);
        assert_eq!(
            (f[2].old.as_deref(), f[2].new.as_deref()),
            (Some("old.txt"), None)
        );
        assert_eq!(
            (f[3].old.as_deref(), f[3].new.as_deref()),
            (Some("m.sh"), Some("n.sh"))
        );
        assert!(f[4].created());
        assert_eq!(f[4].path(), "bin.dat");
    }

    #[test]
    fn reads_plain_unified_diffs() {
        let f = patch_files("--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].path(), "a.py");
        assert!(!f[0].created());
    }
}
