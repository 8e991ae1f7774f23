//! The files an agent CLI writes for itself in the repository (aider's `.aider*` chat history
//! and tag cache, its `.gitignore` edits): a harness declares them as `own_files` globs; after
//! each run they are copied into the trajectory and taken out of the workspace (new files
//! removed, edits to tracked files reverted), so every later diff, on either backend, is the
//! agent's change only. Under the agent's home, the files a CLI keeps as caches (`caches` globs:
//! Codex's unpacked skills and SQLite databases, Claude Code's telemetry dumps) are listed in
//! the trajectory by name and size, their content left out ([`split_caches`]). Not where the
//! patch is computed (the backends' diffs).

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

/// A glob (`*` and `?` within one path component, `**` across components) as an anchored regex.
fn glob_regex(glob: &str) -> Result<regex::Regex, regex::Error> {
    let mut re = String::from("^");
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                if chars.peek() == Some(&'/') {
                    chars.next();
                    re.push_str("(?:.*/)?");
                } else {
                    re.push_str(".*");
                }
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    regex::Regex::new(&re)
}

/// A file read from an agent's home: path relative to it, content.
pub type HomeFile = (String, Vec<u8>);

/// A file left out of the trajectory: path, size in bytes.
pub type LeftOut = (String, u64);

/// Splits the files read from an agent's home (relative path, content) into those the
/// trajectory keeps and the caches matching `globs`, as (path, size), both in input order.
pub fn split_caches(files: Vec<HomeFile>, globs: &[String]) -> (Vec<HomeFile>, Vec<LeftOut>) {
    let res: Vec<regex::Regex> = globs.iter().filter_map(|g| glob_regex(g).ok()).collect();
    let mut kept = Vec::new();
    let mut left_out = Vec::new();
    for (path, bytes) in files {
        if res.iter().any(|r| r.is_match(&path)) {
            left_out.push((path, bytes.len() as u64));
        } else {
            kept.push((path, bytes));
        }
    }
    (kept, left_out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn caches_are_split_by_glob() {
        let f = |p: &str, n: usize| (p.to_string(), vec![b'x'; n]);
        let files = vec![
            f(".codex/sessions/2026/rollout-1.jsonl", 10),
            f(".codex/skills/.system/imagegen/SKILL.md", 20),
            f(".codex/state_5.sqlite-wal", 30),
            f(".codex/config.toml", 5),
            f(".claude/telemetry/1p_failed_events.x.json", 40),
            f(".claude/projects/-repo/s.jsonl", 50),
        ];
        let globs: Vec<String> = [".codex/skills/**", "**/*.sqlite*", ".claude/telemetry/**"]
            .map(String::from)
            .to_vec();
        let (kept, out) = super::split_caches(files, &globs);
        let kept: Vec<&str> = kept.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            kept,
            [
                ".codex/sessions/2026/rollout-1.jsonl",
                ".codex/config.toml",
                ".claude/projects/-repo/s.jsonl"
            ]
        );
        assert_eq!(
            out,
            [
                (".codex/skills/.system/imagegen/SKILL.md".to_string(), 20),
                (".codex/state_5.sqlite-wal".to_string(), 30),
                (".claude/telemetry/1p_failed_events.x.json".to_string(), 40)
            ]
        );
        let re = super::glob_regex("a/*.db").unwrap();
        assert!(re.is_match("a/x.db") && !re.is_match("a/b/x.db") && !re.is_match("a/x.dbx"));
    }

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
        fs_err::write(p.join("code.py"), "x = 1\n").unwrap();
        fs_err::write(p.join(".gitignore"), "*.log\n").unwrap();
        git(p, "init -q && git add -A && git commit -qm base");
        // The agent's change, and the CLI's own files.
        fs_err::write(p.join("code.py"), "x = 2\n").unwrap();
        fs_err::write(p.join(".gitignore"), "*.log\n.aider*\n").unwrap();
        fs_err::write(p.join(".aider.chat.history.md"), "# chat\nhello\n").unwrap();
        fs_err::create_dir_all(p.join(".aider.tags.cache.v4")).unwrap();
        fs_err::write(p.join(".aider.tags.cache.v4/cache.db"), [0u8, 1, 2, 0]).unwrap();
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
