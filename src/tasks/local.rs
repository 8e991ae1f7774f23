//! bench's local task format: a directory per task holding `task.toml`, `repo/` (the base tree),
//! `test.patch` (hidden tests) and `gold.patch` (the reference fix). See
//! `examples/quickstart/README.md`.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;

use super::digest_cache::DigestCache;
use super::task::{Task, TaskBase};

/// A problem with a local task directory.
#[derive(Debug, Error)]
pub enum LocalTaskError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFile {
    instance_id: String,
    repo: String,
    language: Option<String>,
    created_at: toml::value::Datetime,
    problem_statement: String,
    /// One test command (or `test_cmds`, a list joined with " ; ").
    test_cmd: Option<String>,
    test_cmds: Option<Vec<String>>,
    #[serde(default)]
    rebuild_cmds: Vec<String>,
    #[serde(default)]
    print_cmds: Vec<String>,
    /// Instead of `repo/`: a container image holding the repository at /testbed, checked out at
    /// `base_commit` (docker backend). Without `image`, `base_commit` only records the commit
    /// `repo/` was taken from (`bench mine`).
    image: Option<String>,
    base_commit: Option<String>,
    log_parser: String,
    #[serde(rename = "FAIL_TO_PASS")]
    fail_to_pass: Vec<String>,
    #[serde(rename = "PASS_TO_PASS")]
    pass_to_pass: Vec<String>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LocalTaskError + '_ {
    move |source| LocalTaskError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads every task directory under `dir` (sorted by name).
pub fn load_local_dir(dir: &Path) -> Result<Vec<Task>, LocalTaskError> {
    load_local_dir_cached(dir, &DigestCache::empty())
}

/// [`load_local_dir`], hashing the files of each `repo/` through `cache` (files whose stat
/// matches their cache entry are not read).
pub fn load_local_dir_cached(dir: &Path, cache: &DigestCache) -> Result<Vec<Task>, LocalTaskError> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("task.toml").is_file())
        .collect();
    entries.sort();
    if entries.is_empty() {
        return Err(LocalTaskError::Invalid {
            path: dir.to_path_buf(),
            message: "no task directories (each needs a task.toml)".into(),
        });
    }
    // Reading and hashing task directories is I/O- and hash-bound: spread it over the CPUs.
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(8);
    let chunk = entries.len().div_ceil(threads).max(1);
    let results: Vec<Result<Vec<Task>, LocalTaskError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = entries
            .chunks(chunk)
            .map(|c| scope.spawn(move || c.iter().map(|p| load_task(p, cache)).collect()))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("task loading does not panic"))
            .collect()
    });
    let mut tasks = Vec::with_capacity(entries.len());
    for r in results {
        tasks.extend(r?);
    }
    Ok(tasks)
}

fn load_task(dir: &Path, cache: &DigestCache) -> Result<Task, LocalTaskError> {
    let toml_path = dir.join("task.toml");
    let text = std::fs::read_to_string(&toml_path).map_err(io(&toml_path))?;
    let f: TaskFile = toml::from_str(&text).map_err(|e| {
        let (line, col) = e
            .span()
            .map(|s| {
                let upto = &text[..s.start];
                (
                    upto.matches('\n').count() + 1,
                    upto.rsplit('\n').next().map_or(0, str::len) + 1,
                )
            })
            .unwrap_or((0, 0));
        LocalTaskError::Invalid {
            path: toml_path.clone(),
            message: format!("line {line}, column {col}: {}", e.message()),
        }
    })?;
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    if name.as_deref() != Some(f.instance_id.as_str()) {
        return Err(LocalTaskError::Invalid {
            path: toml_path,
            message: format!(
                "instance_id `{}` differs from the directory name; rename one of them",
                f.instance_id
            ),
        });
    }
    let created_at = datetime_rfc3339(&f.created_at).ok_or_else(|| LocalTaskError::Invalid {
        path: toml_path.clone(),
        message: "created_at must be a full date-time with offset, e.g. 2026-08-03T10:00:00Z"
            .into(),
    })?;
    let invalid = |message: &str| LocalTaskError::Invalid {
        path: toml_path.clone(),
        message: message.to_string(),
    };
    let test_cmds = match (f.test_cmd, f.test_cmds) {
        (Some(c), None) => vec![c],
        (None, Some(c)) if !c.is_empty() => c,
        _ => return Err(invalid("give exactly one of test_cmd and test_cmds")),
    };
    let repo_dir = dir.join("repo");
    if let Some(c) = &f.base_commit
        && (c.len() < 7 || !c.chars().all(|ch| ch.is_ascii_hexdigit()))
    {
        return Err(invalid(&format!(
            "base_commit `{c}` is not a commit sha (7 to 64 hex digits)"
        )));
    }
    let base = match (f.image, f.base_commit) {
        (Some(image), Some(base_commit)) => TaskBase::Image { image, base_commit },
        // Without an image, `base_commit` records which commit `repo/` holds (mined tasks).
        (None, _) => {
            if !repo_dir.is_dir() {
                return Err(LocalTaskError::Invalid {
                    path: dir.to_path_buf(),
                    message: "missing repo/ (the base tree)".into(),
                });
            }
            TaskBase::Dir {
                digest: tree_digest_cached(&repo_dir, cache).map_err(io(&repo_dir))?,
                path: repo_dir,
            }
        }
        (Some(_), None) => {
            return Err(invalid(
                "`image` needs `base_commit` (the commit the image's repository is at)",
            ));
        }
    };
    let read = |name: &str| {
        let p = dir.join(name);
        std::fs::read_to_string(&p).map_err(|source| LocalTaskError::Io { path: p, source })
    };
    Ok(Task {
        instance_id: f.instance_id,
        repo: f.repo,
        language: f.language,
        created_at,
        problem_statement: f.problem_statement,
        base,
        gold_patch: read("gold.patch")?,
        test_patch: read("test.patch")?,
        rebuild_cmds: f.rebuild_cmds,
        test_cmds,
        print_cmds: f.print_cmds,
        log_parser: f.log_parser,
        fail_to_pass: f.fail_to_pass,
        pass_to_pass: f.pass_to_pass,
        repo_dir: None,
        pro: None,
        setup_cmds: Vec::new(),
        harbor: None,
        digests: Default::default(),
    })
}

fn datetime_rfc3339(d: &toml::value::Datetime) -> Option<String> {
    let ts: jiff::Timestamp = d.to_string().parse().ok()?;
    Some(ts.to_string())
}

/// Digest of a directory tree: sorted relative paths, the executable bit, and content hashes.
/// `.git` directories are skipped.
pub fn tree_digest(root: &Path) -> std::io::Result<String> {
    tree_digest_cached(root, &DigestCache::empty())
}

/// [`tree_digest`], with file contents hashed through `cache`.
pub fn tree_digest_cached(root: &Path, cache: &DigestCache) -> std::io::Result<String> {
    let mut hasher = blake3::Hasher::new();
    let mut files = Vec::new();
    collect(root, root, &mut files)?;
    files.sort();
    for rel in files {
        let p = root.join(&rel);
        let meta = std::fs::symlink_metadata(&p)?;
        let (kind, content_hash) = if meta.file_type().is_symlink() {
            (
                "l",
                *blake3::hash(std::fs::read_link(&p)?.to_string_lossy().as_bytes()).as_bytes(),
            )
        } else {
            use std::os::unix::fs::PermissionsExt;
            let exec = meta.permissions().mode() & 0o111 != 0;
            (if exec { "x" } else { "f" }, cache.content_hash(&p, &meta)?)
        };
        hasher.update(rel.as_bytes());
        hasher.update(&[0]);
        hasher.update(kind.as_bytes());
        hasher.update(&content_hash);
    }
    Ok(hasher.finalize().to_hex().to_string())
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let path = entry.path();
        let ft = entry.file_type()?;
        if ft.is_dir() {
            collect(root, &path, out)?;
        } else {
            let rel = path
                .strip_prefix(root)
                .expect("walked under root")
                .to_string_lossy()
                .into_owned();
            out.push(rel);
        }
    }
    Ok(())
}
