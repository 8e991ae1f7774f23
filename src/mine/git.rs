//! Reading a git repository on the host for mining and for brain bench tasks: commits, the
//! files a commit changes, diffs of chosen paths, a file at a commit, and a commit's tree
//! written out byte for byte.
//!
//! git runs with no user or system configuration, literal pathspecs, no external diff and no
//! textconv, so a repository's history gives the same bytes on every machine. Trees are written
//! from `ls-tree` and `cat-file --batch` (exact blob bytes and modes, symlinks as symlinks), not
//! with `git archive`, whose `export-ignore` / `export-subst` attributes a committed
//! `.gitattributes` controls.
//!
//! Not here: deciding what is a test (`detect.rs`), running anything the repository holds.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A git failure, naming the repository and the command.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{repo} is not a git repository (or git cannot read it): {detail}")]
    NotARepo { repo: PathBuf, detail: String },
    #[error("git {args} failed in {repo}: {detail}")]
    Failed {
        repo: PathBuf,
        args: String,
        detail: String,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// One commit of the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub sha: String,
    /// Parent shas (none for a root commit).
    pub parents: Vec<String>,
    /// Committer date, RFC 3339 UTC (`2026-08-03T10:00:00Z`).
    pub date: String,
    /// The whole message.
    pub message: String,
}

/// A repository on this machine.
#[derive(Debug, Clone)]
pub struct Repo {
    pub path: PathBuf,
}

impl Repo {
    /// Opens `path`, checking that it is a git repository (a work tree or a bare one).
    pub fn open(path: &Path) -> Result<Repo, GitError> {
        let path = crate::backend::jail::absolute(path);
        let repo = Repo { path };
        match repo.output(&["rev-parse", "--git-dir"]) {
            Ok(_) => Ok(repo),
            Err(GitError::Failed { detail, .. }) => Err(GitError::NotARepo {
                repo: repo.path,
                detail,
            }),
            Err(e) => Err(e),
        }
    }

    fn command(&self) -> Command {
        let mut c = Command::new("git");
        c.arg("-C")
            .arg(&self.path)
            .args(["-c", "core.quotepath=off"])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_LITERAL_PATHSPECS", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LANG", "C.UTF-8")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE");
        c
    }

    fn failed(&self, args: &[&str], detail: impl Into<String>) -> GitError {
        GitError::Failed {
            repo: self.path.clone(),
            args: args.join(" "),
            detail: detail.into(),
        }
    }

    /// Runs git with `args`; its stdout, or an error with its stderr.
    pub fn output(&self, args: &[&str]) -> Result<Vec<u8>, GitError> {
        let out = self
            .command()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| self.failed(args, format!("cannot run git: {e}")))?;
        if !out.status.success() {
            return Err(self.failed(
                args,
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        Ok(out.stdout)
    }

    fn text(&self, args: &[&str]) -> Result<String, GitError> {
        String::from_utf8(self.output(args)?).map_err(|_| self.failed(args, "output is not UTF-8"))
    }

    /// The full sha of `rev` as a commit, or `None` when it names no commit here.
    pub fn resolve(&self, rev: &str) -> Option<String> {
        let spec = format!("{rev}^{{commit}}");
        self.text(&["rev-parse", "--verify", "-q", "--end-of-options", &spec])
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    /// Non-merge commits reachable from HEAD whose message matches `grep` (case-insensitive,
    /// a basic regular expression as `git log --grep` reads it), newest first.
    pub fn commits(&self, grep: &str) -> Result<Vec<Commit>, GitError> {
        let grep_arg = format!("--grep={grep}");
        let args = [
            "log",
            "--no-merges",
            "-i",
            &grep_arg,
            "--format=%H%x00%P%x00%ct%x00%B%x00%x01",
            "HEAD",
            "--",
        ];
        let text = match self.text(&args) {
            Ok(t) => t,
            // A repository without commits has no history to mine.
            Err(_) if self.resolve("HEAD").is_none() => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut out = Vec::new();
        for record in text.split("\x01") {
            let record = record.trim_start_matches('\n');
            if record.is_empty() {
                continue;
            }
            let mut f = record.splitn(4, '\0');
            let (Some(sha), Some(parents), Some(time), Some(message)) =
                (f.next(), f.next(), f.next(), f.next())
            else {
                return Err(self.failed(&args, "unexpected log output"));
            };
            let secs: i64 = time
                .trim()
                .parse()
                .map_err(|_| self.failed(&args, format!("bad commit time {time:?}")))?;
            let date = jiff::Timestamp::from_second(secs)
                .map_err(|e| self.failed(&args, e.to_string()))?
                .to_string();
            out.push(Commit {
                sha: sha.to_string(),
                parents: parents.split_whitespace().map(str::to_string).collect(),
                date,
                message: message.trim_end_matches('\0').trim_end().to_string(),
            });
        }
        Ok(out)
    }

    /// The commit `sha`'s date and message.
    pub fn commit(&self, sha: &str) -> Result<Commit, GitError> {
        let args = ["show", "-s", "--format=%H%x00%P%x00%ct%x00%B", sha, "--"];
        let text = self.text(&args)?;
        let mut f = text.splitn(4, '\0');
        let (Some(sha), Some(parents), Some(time), Some(message)) =
            (f.next(), f.next(), f.next(), f.next())
        else {
            return Err(self.failed(&args, "unexpected output"));
        };
        let secs: i64 = time
            .trim()
            .parse()
            .map_err(|_| self.failed(&args, format!("bad commit time {time:?}")))?;
        Ok(Commit {
            sha: sha.to_string(),
            parents: parents.split_whitespace().map(str::to_string).collect(),
            date: jiff::Timestamp::from_second(secs)
                .map_err(|e| self.failed(&args, e.to_string()))?
                .to_string(),
            message: message.trim_end().to_string(),
        })
    }

    /// Paths that differ between `from` and `to` (sorted, renames as a deletion plus an
    /// addition).
    pub fn changed_files(&self, from: &str, to: &str) -> Result<Vec<String>, GitError> {
        let out = self.output(&["diff", "--name-only", "--no-renames", "-z", from, to, "--"])?;
        let mut files: Vec<String> = out
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        files.sort();
        Ok(files)
    }

    /// The diff from `from` to `to` of exactly `paths` (binary-safe, full index lines), as
    /// `git apply` reads it; empty for no paths.
    pub fn diff(&self, from: &str, to: &str, paths: &[String]) -> Result<String, GitError> {
        if paths.is_empty() {
            return Ok(String::new());
        }
        let mut args = vec![
            "diff",
            "--binary",
            "--full-index",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            from,
            to,
            "--",
        ];
        args.extend(paths.iter().map(String::as_str));
        let bytes = self.output(&args)?;
        String::from_utf8(bytes).map_err(|_| self.failed(&args, "the diff is not UTF-8"))
    }

    /// Whether `path` exists (as a blob) at `commit`.
    pub fn has_file(&self, commit: &str, path: &str) -> bool {
        self.output(&["cat-file", "-e", &format!("{commit}:{path}")])
            .is_ok()
    }

    /// Entries of `commit`'s tree: (mode, kind, object, path), sorted by path.
    fn tree(&self, commit: &str) -> Result<Vec<(String, String, String, String)>, GitError> {
        let out = self.output(&["ls-tree", "-r", "-z", "--full-tree", commit])?;
        let mut entries: Vec<(String, String, String, String)> = Vec::new();
        for rec in out.split(|&b| b == 0).filter(|r| !r.is_empty()) {
            let rec = String::from_utf8_lossy(rec);
            let Some((meta, path)) = rec.split_once('\t') else {
                continue;
            };
            let mut m = meta.split(' ');
            let (Some(mode), Some(kind), Some(obj)) = (m.next(), m.next(), m.next()) else {
                continue;
            };
            entries.push((mode.into(), kind.into(), obj.into(), path.into()));
        }
        entries.sort_by(|a, b| a.3.cmp(&b.3));
        Ok(entries)
    }

    /// The paths of `commit`'s tree.
    pub fn paths(&self, commit: &str) -> Result<Vec<String>, GitError> {
        Ok(self.tree(commit)?.into_iter().map(|e| e.3).collect())
    }

    /// The bytes of `path` at `commit` (`None` when absent).
    pub fn file(&self, commit: &str, path: &str) -> Option<Vec<u8>> {
        self.output(&["cat-file", "blob", &format!("{commit}:{path}")])
            .ok()
    }

    /// Writes `commit`'s tree into `dest` (created; must not hold files of the same names):
    /// regular files with mode 0644 or 0755, symlinks as symlinks, submodules as empty
    /// directories.
    pub fn write_tree(&self, commit: &str, dest: &Path) -> Result<(), GitError> {
        use std::os::unix::fs::PermissionsExt;
        let entries = self.tree(commit)?;
        let wr = |path: &Path, e: std::io::Error| GitError::Write {
            path: path.to_path_buf(),
            source: e,
        };
        fs_err::create_dir_all(dest).map_err(|e| wr(dest, e))?;
        let blobs: Vec<&(String, String, String, String)> =
            entries.iter().filter(|e| e.1 == "blob").collect();
        let mut child = self
            .command()
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| self.failed(&["cat-file", "--batch"], e.to_string()))?;
        let mut stdin = child.stdin.take().expect("piped");
        let objects: String = blobs.iter().map(|e| format!("{}\n", e.2)).collect();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(objects.as_bytes());
        });
        let mut stdout = std::io::BufReader::new(child.stdout.take().expect("piped"));
        let bad = || self.failed(&["cat-file", "--batch"], "unexpected output");
        // A crafted tree could name `..`, `.git` or an absolute path: never written.
        let unsafe_path = |p: &str| {
            p.starts_with('/')
                || p.split('/').any(|c| {
                    c.is_empty() || c == "." || c == ".." || c.eq_ignore_ascii_case(".git")
                })
        };
        for (mode, _, _, path) in &blobs {
            let mut header = Vec::new();
            loop {
                let mut b = [0u8; 1];
                stdout.read_exact(&mut b).map_err(|_| bad())?;
                if b[0] == b'\n' {
                    break;
                }
                header.push(b[0]);
            }
            let header = String::from_utf8_lossy(&header);
            let size: usize = header
                .rsplit(' ')
                .next()
                .and_then(|s| s.parse().ok())
                .ok_or_else(bad)?;
            let mut content = vec![0u8; size];
            stdout.read_exact(&mut content).map_err(|_| bad())?;
            let mut nl = [0u8; 1];
            stdout.read_exact(&mut nl).map_err(|_| bad())?;
            if unsafe_path(path) {
                continue;
            }
            let target = dest.join(path);
            if let Some(dir) = target.parent() {
                fs_err::create_dir_all(dir).map_err(|e| wr(dir, e))?;
            }
            if mode == "120000" {
                let link = String::from_utf8_lossy(&content).into_owned();
                std::os::unix::fs::symlink(link, &target).map_err(|e| wr(&target, e))?;
            } else {
                fs_err::write(&target, &content).map_err(|e| wr(&target, e))?;
                let m = if mode == "100755" { 0o755 } else { 0o644 };
                fs_err::set_permissions(&target, std::fs::Permissions::from_mode(m))
                    .map_err(|e| wr(&target, e))?;
            }
        }
        let _ = writer.join();
        let _ = child.wait();
        for (_, kind, _, path) in &entries {
            if kind == "commit" && !unsafe_path(path) {
                let d = dest.join(path);
                fs_err::create_dir_all(&d).map_err(|e| wr(&d, e))?;
            }
        }
        Ok(())
    }

    /// `owner/name` from the `origin` remote's URL (GitHub-style `.../owner/name(.git)`), else
    /// `local/<directory name>`.
    pub fn name(&self) -> String {
        let url = self
            .text(&["config", "--get", "remote.origin.url"])
            .unwrap_or_default();
        repo_name(url.trim()).unwrap_or_else(|| {
            let dir = self
                .path
                .file_name()
                .map(|n| n.to_string_lossy().trim_end_matches(".git").to_string())
                .unwrap_or_else(|| "repo".into());
            format!("local/{}", sanitize(&dir))
        })
    }
}

/// `owner/name` of a remote URL (`https://host/owner/name(.git)`, `git@host:owner/name.git`).
pub fn repo_name(url: &str) -> Option<String> {
    if url.is_empty() {
        return None;
    }
    let url = url.trim_end_matches('/').trim_end_matches(".git");
    let tail = url.rsplit_once(':').map_or(url, |(_, t)| t);
    let mut parts = tail.rsplit('/');
    let name = parts.next()?;
    let owner = parts.next()?;
    (!owner.is_empty() && !name.is_empty() && !owner.contains('@'))
        .then(|| format!("{}/{}", sanitize(owner), sanitize(name)))
}

/// Keeps `[A-Za-z0-9._-]`, replacing anything else with `-`.
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_names_from_urls() {
        assert_eq!(
            repo_name("https://github.com/pjcau/agent-orchestrator").as_deref(),
            Some("pjcau/agent-orchestrator")
        );
        assert_eq!(repo_name("git@github.com:o/r.git").as_deref(), Some("o/r"));
        assert_eq!(repo_name("").as_deref(), None);
    }
}
