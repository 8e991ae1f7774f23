//! The files an agent CLI writes for itself in the repository (aider's `.aider*` chat history
//! and tag cache, its `.gitignore` edits): a harness declares them as `own_files` globs; after
//! each run they are copied into the trajectory and taken out of the workspace (new files
//! removed, edits to tracked files reverted), so every later diff, on either backend, is the
//! agent's change only. Not where the patch is computed (the backends' diffs).

/// The line before each own file in the cleanup script's output.
pub const MARKER: &str = "----- bench: agent's own file";

/// How much of each own file the trajectory keeps.
const FILE_CAP: usize = 1 << 20;

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A POSIX shell script, run in the repository after an agent run, that prints every file
/// matching `globs` (git glob pathspecs relative to the repository root: new files whole,
/// tracked ones as their diff) and then reverts the tracked ones and removes the new ones
/// (edits first: a `.gitignore` edit may hide the new files).
/// Empty when there are no globs.
pub fn cleanup_script(globs: &[String]) -> String {
    if globs.is_empty() {
        return String::new();
    }
    // A pattern names a file or a directory (everything below it).
    let specs: Vec<String> = globs
        .iter()
        .flat_map(|g| [format!(":(glob){g}"), format!(":(glob){g}/**")])
        .map(|p| shell_quote(&p))
        .collect();
    let specs = specs.join(" ");
    format!(
        r#"git rev-parse --git-dir >/dev/null 2>&1 || exit 0
q="git -c core.quotePath=false"
$q diff --name-only HEAD -- {specs} | while IFS= read -r f; do
  echo "{MARKER} $f (edited) -----"
  git diff --no-color --no-ext-diff HEAD -- "$f" | head -c {FILE_CAP}
  git checkout -q HEAD -- "$f" 2>/dev/null || rm -f -- "$f"
done
$q ls-files --others --exclude-standard -- {specs} | while IFS= read -r f; do
  n=$(wc -c < "$f")
  echo "{MARKER} $f ($n bytes, new) -----"
  if [ "$n" -le {FILE_CAP} ] && grep -Iq . "$f" 2>/dev/null; then cat "$f"; echo; else echo "[binary or over {FILE_CAP} bytes: not kept]"; fi
  rm -f -- "$f"
done
# Directories left empty by removed files go too.
$q ls-files --others --directory --exclude-standard -- {specs} | while IFS= read -r d; do
  [ -d "$d" ] && find "$d" -depth -type d -empty -delete 2>/dev/null
done
exit 0
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &std::path::Path, args: &str) {
        let ok = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("git {args}"))
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args}");
    }

    #[test]
    fn own_files_are_printed_then_removed_or_reverted() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::write(p.join("code.py"), "x = 1\n").unwrap();
        std::fs::write(p.join(".gitignore"), "*.log\n").unwrap();
        git(p, "init -q && git add -A && git commit -qm base");
        // The agent's change, and the CLI's own files.
        std::fs::write(p.join("code.py"), "x = 2\n").unwrap();
        std::fs::write(p.join(".gitignore"), "*.log\n.aider*\n").unwrap();
        std::fs::write(p.join(".aider.chat.history.md"), "# chat\nhello\n").unwrap();
        std::fs::create_dir_all(p.join(".aider.tags.cache.v4")).unwrap();
        std::fs::write(p.join(".aider.tags.cache.v4/cache.db"), [0u8, 1, 2, 0]).unwrap();
        let script = cleanup_script(&[".aider*".into(), ".gitignore".into()]);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .current_dir(p)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("{MARKER} .aider.chat.history.md (13 bytes, new)")),
            "{text}"
        );
        assert!(text.contains("# chat\nhello"), "{text}");
        assert!(text.contains("cache.db (4 bytes, new)"), "{text}");
        assert!(text.contains("[binary"), "{text}");
        assert!(
            text.contains(&format!("{MARKER} .gitignore (edited)")),
            "{text}"
        );
        assert!(text.contains("+.aider*"), "{text}");
        // Only the agent's change is left.
        let status = std::process::Command::new("git")
            .args(["status", "--porcelain", "--untracked-files=all"])
            .current_dir(p)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&status.stdout), " M code.py\n");
        assert!(!p.join(".aider.tags.cache.v4").exists());
        assert_eq!(cleanup_script(&[]), "");
    }
}
