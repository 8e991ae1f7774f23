//! bench's local task format: a directory per task holding `task.toml`, `repo/` (the base tree),
//! `test.patch` (hidden tests) and `gold.patch` (the reference fix). See
//! `examples/quickstart/README.md`. Besides loading, [`check_local_dir`] reads only the
//! `task.toml` files, for `bench validate` to report what would make a task meaningless before
//! anything runs. Not here: whether a `log_parser` name is a registered parser (the parsers sit
//! above tasks; the manifest's validator asks them with what this check returns).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;
use toml::Spanned;

use super::digest_cache::DigestCache;
use super::limits::FileLimits;
use super::task::{Task, TaskBase};
use crate::regular_file::{self, ReadError};

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
    /// A file of a task is not a regular file within its size limit (a FIFO, a device, a link
    /// to one, or too large).
    #[error("task `{task}`: cannot read its {file}: {source}")]
    File {
        task: String,
        file: String,
        #[source]
        source: ReadError,
    },
    /// A field of a task.toml holds a value no task can have.
    #[error("{}:{line}:{column}: `{key}` {problem}; {help}", path.display())]
    Field {
        path: PathBuf,
        line: usize,
        column: usize,
        /// The key, as the file writes it (`FAIL_TO_PASS`).
        key: &'static str,
        /// What is wrong, reading after the key (`is empty: ...`).
        problem: String,
        /// How to fix it.
        help: String,
    },
    /// A size limit's environment variable is not a size.
    #[error("{0}")]
    Limits(String),
}

/// The languages a local task may name: those of the quickstart's tasks (`python`, `shell`) and
/// those `bench mine` writes (`go`, `rust`, `javascript`, which TypeScript tasks are too).
pub const LANGUAGES: &[&str] = &["go", "javascript", "python", "rust", "shell"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFile {
    instance_id: String,
    repo: String,
    language: Option<Spanned<String>>,
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
    log_parser: Spanned<String>,
    #[serde(rename = "FAIL_TO_PASS")]
    fail_to_pass: Spanned<Vec<String>>,
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
    let limits = FileLimits::current().map_err(LocalTaskError::Limits)?;
    let entries = task_dirs(dir)?;
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
            .map(|c| scope.spawn(move || c.iter().map(|p| load_task(p, cache, &limits)).collect()))
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

/// The task directories of a local dataset, sorted: every directory in it (links followed) but
/// hidden ones (`.git`). A directory without a `task.toml` is an error, never skipped: a task
/// that cannot be read is never silently dropped from the dataset.
fn task_dirs(dir: &Path) -> Result<Vec<PathBuf>, LocalTaskError> {
    let mut entries = Vec::new();
    for e in fs_err::read_dir(dir).map_err(io(dir))? {
        let e = e.map_err(io(dir))?;
        let p = e.path();
        if e.file_name().to_string_lossy().starts_with('.') || !p.is_dir() {
            continue;
        }
        let toml = p.join("task.toml");
        if fs_err::symlink_metadata(&toml).is_err() {
            return Err(LocalTaskError::Invalid {
                path: p,
                message: "a task directory without a task.toml; add one, or move the \
                          directory out of the dataset"
                    .into(),
            });
        }
        entries.push(p);
    }
    entries.sort();
    Ok(entries)
}

/// The name of the task in `dir` (its directory name).
fn task_name(dir: &Path) -> String {
    dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn load_task(dir: &Path, cache: &DigestCache, limits: &FileLimits) -> Result<Task, LocalTaskError> {
    let toml_path = dir.join("task.toml");
    let file_err = |file: &str| {
        let file = file.to_string();
        move |source| LocalTaskError::File {
            task: task_name(dir),
            file,
            source,
        }
    };
    let text =
        regular_file::read_text(&toml_path, limits.task_toml).map_err(file_err("task.toml"))?;
    let f = parse_task_toml(&toml_path, &text)?;
    if let Some(problem) = field_problems(&toml_path, &text, &f).into_iter().next() {
        return Err(problem);
    }
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
                digest: repo_digest(dir, &repo_dir, cache, limits)?,
                path: repo_dir,
            }
        }
        (Some(_), None) => {
            return Err(invalid(
                "`image` needs `base_commit` (the commit the image's repository is at)",
            ));
        }
    };
    let read =
        |name: &str| regular_file::read_text(&dir.join(name), limits.patch).map_err(file_err(name));
    Ok(Task {
        instance_id: f.instance_id,
        repo: f.repo,
        language: f.language.map(Spanned::into_inner),
        created_at,
        problem_statement: f.problem_statement,
        base,
        gold_patch: read("gold.patch")?,
        test_patch: read("test.patch")?,
        rebuild_cmds: f.rebuild_cmds,
        test_cmds,
        print_cmds: f.print_cmds,
        log_parser: f.log_parser.into_inner(),
        fail_to_pass: f.fail_to_pass.into_inner(),
        pass_to_pass: f.pass_to_pass,
        repo_dir: None,
        pro: None,
        setup_cmds: Vec::new(),
        harbor: None,
        digests: Default::default(),
    })
}

fn parse_task_toml(path: &Path, text: &str) -> Result<TaskFile, LocalTaskError> {
    toml::from_str(text).map_err(|e| {
        let (line, col) = e.span().map_or((0, 0), |s| line_col(text, s.start));
        LocalTaskError::Invalid {
            path: path.to_path_buf(),
            message: format!("line {line}, column {col}: {}", e.message()),
        }
    })
}

/// The 1-based line and column of byte `at` of `text`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let upto = &text[..at.min(text.len())];
    (
        upto.matches('\n').count() + 1,
        upto.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1,
    )
}

/// What makes a parsed task.toml meaningless, each naming the file, the key and the fix: an
/// empty `FAIL_TO_PASS` (a task nothing can fail; every team, nop included, would resolve it)
/// and a `language` outside [`LANGUAGES`].
fn field_problems(path: &Path, text: &str, f: &TaskFile) -> Vec<LocalTaskError> {
    let field = |at: usize, key, problem: String, help: String| {
        let (line, column) = line_col(text, at);
        LocalTaskError::Field {
            path: path.to_path_buf(),
            line,
            column,
            key,
            problem,
            help,
        }
    };
    let mut out = Vec::new();
    if f.fail_to_pass.get_ref().is_empty() {
        out.push(field(
            f.fail_to_pass.span().start,
            "FAIL_TO_PASS",
            "is empty: a task no patch can fail tests nothing, and every team (nop included) \
             would resolve it"
                .into(),
            "list the tests that fail before the gold patch and pass after it".into(),
        ));
    }
    if let Some(lang) = &f.language
        && !LANGUAGES.contains(&lang.get_ref().as_str())
    {
        out.push(field(
            lang.span().start,
            "language",
            format!("`{}` is not a supported language", lang.get_ref()),
            format!("write one of: {}", LANGUAGES.join(", ")),
        ));
    }
    out
}

/// One task.toml of a local dataset, as [`check_local_dir`] read it.
pub struct TaskTomlCheck {
    pub path: PathBuf,
    /// What [`load_local_dir`] would refuse in its fields.
    pub problems: Vec<LocalTaskError>,
    /// Its `log_parser`, for the caller to check against the parser registry.
    pub log_parser: String,
    /// Where the `log_parser` value is (line, column).
    log_parser_at: (usize, usize),
}

impl TaskTomlCheck {
    /// A problem with this task's `log_parser`.
    pub fn log_parser_error(&self, problem: String, help: String) -> LocalTaskError {
        LocalTaskError::Field {
            path: self.path.clone(),
            line: self.log_parser_at.0,
            column: self.log_parser_at.1,
            key: "log_parser",
            problem,
            help,
        }
    }
}

/// Reads every `*/task.toml` of the local dataset `dir` (no patches, no `repo/` hashing) and
/// returns what is wrong in its fields. A task.toml that cannot be read or parsed, and a
/// dataset that is not a directory, are left out: [`load_local_dir`] reports those when it
/// loads.
pub fn check_local_dir(dir: &Path) -> Vec<TaskTomlCheck> {
    let Ok(limits) = FileLimits::current() else {
        return Vec::new();
    };
    let Ok(dirs) = task_dirs(dir) else {
        return Vec::new();
    };
    dirs.iter()
        .filter_map(|d| {
            let path = d.join("task.toml");
            let text = regular_file::read_text(&path, limits.task_toml).ok()?;
            let f = parse_task_toml(&path, &text).ok()?;
            Some(TaskTomlCheck {
                problems: field_problems(&path, &text, &f),
                log_parser_at: line_col(&text, f.log_parser.span().start),
                log_parser: f.log_parser.into_inner(),
                path,
            })
        })
        .collect()
}

fn datetime_rfc3339(d: &toml::value::Datetime) -> Option<String> {
    let ts: jiff::Timestamp = d.to_string().parse().ok()?;
    Some(ts.to_string())
}

/// The digest of a task's `repo/` (see [`tree_digest_limited`]), its errors naming the task.
fn repo_digest(
    dir: &Path,
    repo: &Path,
    cache: &DigestCache,
    limits: &FileLimits,
) -> Result<String, LocalTaskError> {
    tree_digest_limited(repo, cache, limits.repo_file).map_err(|source| {
        let file = source
            .path()
            .strip_prefix(dir)
            .map_or_else(|_| "repo/".to_string(), |p| p.display().to_string());
        LocalTaskError::File {
            task: task_name(dir),
            file,
            source,
        }
    })
}

/// Digest of a directory tree: sorted relative paths, the executable bit, and content hashes.
/// `.git` directories are skipped.
pub fn tree_digest(root: &Path) -> Result<String, ReadError> {
    tree_digest_limited(root, &DigestCache::empty(), FileLimits::default().repo_file)
}

/// One entry of a base tree as [`tree_digest`] hashes it: its path relative to the root, its
/// kind (`l` a symbolic link, `x` an executable file, `f` another regular file) and its path.
#[derive(Debug, Clone)]
pub struct TreeEntry {
    pub rel: String,
    pub kind: u8,
    pub path: PathBuf,
    pub meta: std::fs::Metadata,
}

/// The entries of the tree at `root` in the order [`tree_digest`] hashes them (sorted by
/// relative path; `.git` skipped). Anything that is not a regular file, a symbolic link or a
/// directory is an error.
pub fn tree_entries(root: &Path) -> Result<Vec<TreeEntry>, ReadError> {
    let mut files = Vec::new();
    collect(root, root, &mut files)?;
    files.sort();
    files
        .into_iter()
        .map(|rel| {
            let path = root.join(&rel);
            let meta = fs_err::symlink_metadata(&path).map_err(|source| ReadError::Io {
                path: path.clone(),
                source,
            })?;
            let kind = if meta.file_type().is_symlink() {
                b'l'
            } else if let Some(kind) = regular_file::special_kind(meta.file_type()) {
                return Err(ReadError::NotRegular { path, kind });
            } else {
                use std::os::unix::fs::PermissionsExt;
                if meta.permissions().mode() & 0o111 != 0 {
                    b'x'
                } else {
                    b'f'
                }
            };
            Ok(TreeEntry {
                rel,
                kind,
                path,
                meta,
            })
        })
        .collect()
}

/// The bytes a tree digest hashes for one entry: its relative path, a NUL, its kind, and the
/// blake3 of its content (a link's target text). A tree's digest is the blake3 of its entries'
/// records in order, so those records, stored as one blob, are stored under the tree's digest.
pub fn tree_record(rel: &str, kind: u8, content_hash: &[u8; 32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rel.len() + 34);
    out.extend_from_slice(rel.as_bytes());
    out.push(0);
    out.push(kind);
    out.extend_from_slice(content_hash);
    out
}

/// [`tree_digest`], with file contents hashed through `cache`, each file at most `limit` bytes.
/// A symbolic link is read as a link (its target's text), never followed; anything else that
/// is not a regular file or a directory (a FIFO, a device, a socket) is an error.
pub fn tree_digest_limited(
    root: &Path,
    cache: &DigestCache,
    limit: u64,
) -> Result<String, ReadError> {
    let mut hasher = blake3::Hasher::new();
    for e in tree_entries(root)? {
        let content_hash = if e.kind == b'l' {
            let target = fs_err::read_link(&e.path).map_err(|source| ReadError::Io {
                path: e.path.clone(),
                source,
            })?;
            *blake3::hash(target.to_string_lossy().as_bytes()).as_bytes()
        } else {
            cache.content_hash(&e.path, &e.meta, limit)?
        };
        hasher.update(&tree_record(&e.rel, e.kind, &content_hash));
    }
    Ok(hasher.finalize().to_hex().to_string())
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), ReadError> {
    let io_at = |source| ReadError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in fs_err::read_dir(dir).map_err(io_at)? {
        let entry = entry.map_err(io_at)?;
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let path = entry.path();
        let ft = entry.file_type().map_err(io_at)?;
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
