//! brain bench's task files (seed 004: `bench/tasks/<id>.yaml`) as a dataset: a YAML file, or a
//! directory of `.yaml` / `.yml` files (sorted), each one task:
//!
//! ```yaml
//! id: ago-0001                       # optional: the file's stem
//! repo: ../agent-orchestrator        # a path (relative to the file) or a URL (cloned)
//! commit_before: ca581a25            # what the agent sees
//! commit_fix: 9cd05e29               # the human fix
//! prompt: |
//!   In src/..., mid-run context compaction drops ...
//! setup: python3 -m venv .venv && .venv/bin/pip install -q -e '.[dev]'   # optional
//! test_files_from_fix: [tests/test_context_benchmark.py]
//! verify: .venv/bin/pytest tests/test_context_benchmark.py -q -k keep_head
//! timeout_s: 1800                    # optional
//! max_cost_usd: 0.30                 # optional
//! tags: [python, small]              # optional
//! ```
//!
//! Every field is checked, and every problem names the file, the line and column of the value
//! and how to fix it (unknown fields too). The task's base tree is `commit_before`'s, written
//! once per commit into bench's cache (`$BENCH_CACHE_DIR`, else `$XDG_CACHE_HOME/bench`, else
//! `~/.cache/bench`: `git-trees/<sha>/`); a `repo` URL is cloned bare into that cache
//! (`git-clones/`, with the user's git configuration and credentials) and fetched again when a
//! commit is missing; its hidden tests are the diff of
//! `test_files_from_fix` from `commit_before` to `commit_fix` (what `git checkout <commit_fix>
//! -- <files>` puts in place); its gold patch is the rest of that diff; `created_at` is
//! `commit_fix`'s committer date.
//!
//! Not here: grading (`protocols/brain_bench.rs`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::mine::git::Repo;
use crate::tasks::{Task, TaskBase, tree_digest};

/// The parser name brain bench tasks carry: their verdict is `verify`'s exit code.
pub const EXIT_CODE_PARSER: &str = "exit-code";

/// A problem with a brain bench task file, located.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}\n  help: {help}")]
pub struct BrainBenchError {
    pub file: String,
    /// 1-based; 0 when the problem is the whole file.
    pub line: usize,
    pub column: usize,
    pub message: String,
    pub help: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    id: Option<String>,
    repo: String,
    commit_before: String,
    commit_fix: String,
    prompt: String,
    setup: Option<String>,
    test_files_from_fix: Vec<String>,
    verify: String,
    timeout_s: Option<f64>,
    max_cost_usd: Option<f64>,
    tags: Option<Vec<String>>,
}

/// The files of a brain bench dataset at `path` (a file, or the YAML files of a directory).
pub fn files(path: &Path) -> Result<Vec<PathBuf>, BrainBenchError> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let whole = |message: String, help: &str| BrainBenchError {
        file: path.display().to_string(),
        line: 0,
        column: 0,
        message,
        help: help.into(),
    };
    let mut out: Vec<PathBuf> = fs_err::read_dir(path)
        .map_err(|e| {
            whole(
                format!("cannot read the directory: {e}"),
                "check the dataset's `path`",
            )
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    out.sort();
    if out.is_empty() {
        return Err(whole(
            "no task files (.yaml or .yml)".into(),
            "put one brain bench task per YAML file in this directory",
        ));
    }
    Ok(out)
}

/// The git repositories the tasks at `path` read (the local backend hides them from agents:
/// they hold the fixes). Unreadable files are skipped here; loading reports them.
pub fn repo_paths(path: &Path) -> Vec<PathBuf> {
    let mut out = BTreeSet::new();
    for f in files(path).unwrap_or_default() {
        let Ok(text) = fs_err::read_to_string(&f) else {
            continue;
        };
        if let Ok(raw) = serde_yaml::from_str::<RawTask>(&text) {
            out.insert(crate::backend::jail::absolute(&local_repo(&raw.repo, &f)));
        }
    }
    out.into_iter().collect()
}

/// Reads every task at `path`; ids must be unique.
pub fn read(path: &Path) -> Result<Vec<Task>, BrainBenchError> {
    let mut tasks: Vec<Task> = Vec::new();
    let mut seen: std::collections::BTreeMap<String, String> = Default::default();
    for f in files(path)? {
        let task = read_file(&f)?;
        if let Some(first) = seen.get(&task.instance_id) {
            let text = fs_err::read_to_string(&f).unwrap_or_default();
            let (line, column) = field_position(&text, "id").unwrap_or((1, 1));
            return Err(BrainBenchError {
                file: f.display().to_string(),
                line,
                column,
                message: format!("task id `{}` is also the id of {first}", task.instance_id),
                help: "give each task its own `id` (or file name)".into(),
            });
        }
        seen.insert(task.instance_id.clone(), f.display().to_string());
        tasks.push(task);
    }
    Ok(tasks)
}

/// Line and column (1-based) of a top-level `field:` in a block mapping.
fn field_position(text: &str, field: &str) -> Option<(usize, usize)> {
    for (i, line) in text.lines().enumerate() {
        if let Some(rest) = line.strip_prefix(field)
            && rest.trim_start().starts_with(':')
        {
            let value_col = rest.find(':').map_or(1, |c| {
                let after = &rest[c + 1..];
                field.len() + c + 2 + (after.len() - after.trim_start().len())
            });
            return Some((i + 1, value_col));
        }
    }
    None
}

/// Where a task's repository is.
enum RepoRef {
    /// A path on this machine (relative paths: to the task file).
    Path(PathBuf),
    /// A URL (`https://`, `ssh://`, `git@host:`, `file://`, ...): cloned into bench's cache.
    Url(String),
}

fn repo_ref(repo: &str, file: &Path) -> RepoRef {
    if repo.contains("://") || repo.starts_with("git@") {
        return RepoRef::Url(repo.to_string());
    }
    let p = Path::new(repo);
    RepoRef::Path(if p.is_absolute() {
        p.to_path_buf()
    } else {
        file.parent().unwrap_or(Path::new(".")).join(p)
    })
}

/// The cache's bare clone of `url`.
fn clone_path(url: &str) -> PathBuf {
    let d = crate::key::digest(url.as_bytes());
    cache_dir()
        .join("git-clones")
        .join(format!("{}.git", &d[..32]))
}

/// Where the repository of a `repo` value is on this machine (a URL: its clone's path).
fn local_repo(repo: &str, file: &Path) -> PathBuf {
    match repo_ref(repo, file) {
        RepoRef::Path(p) => p,
        RepoRef::Url(u) => clone_path(&u),
    }
}

/// Runs git with the user's configuration (credentials for a clone), never prompting.
fn git_network(args: &[&str]) -> Result<(), String> {
    let out = std::process::Command::new("git")
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// The cache's bare clone of `url`, cloned first if missing, fetched when one of `revs` is not
/// in it.
fn ensure_clone(url: &str, revs: &[&str]) -> Result<PathBuf, String> {
    let dir = clone_path(url);
    if !dir.join("HEAD").is_file() {
        let parent = dir.parent().expect("a clone has a parent");
        fs_err::create_dir_all(parent).map_err(|e| e.to_string())?;
        let stage = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempdir_in(parent)
            .map_err(|e| format!("cannot write in {}: {e}", parent.display()))?;
        let target = stage.path().join("c");
        git_network(&[
            "clone",
            "--bare",
            "--quiet",
            "--",
            url,
            &target.to_string_lossy(),
        ])
        .map_err(|e| format!("cannot clone {url}: {e}"))?;
        if fs_err::rename(&target, &dir).is_err() && !dir.join("HEAD").is_file() {
            return Err(format!("cannot write {}", dir.display()));
        }
    }
    let repo = Repo::open(&dir).map_err(|e| e.to_string())?;
    if revs.iter().any(|r| repo.resolve(r).is_none()) {
        let d = dir.to_string_lossy().into_owned();
        git_network(&[
            "-C",
            &d,
            "fetch",
            "--quiet",
            "--",
            url,
            "+refs/heads/*:refs/heads/*",
            "+refs/tags/*:refs/tags/*",
        ])
        .map_err(|e| format!("cannot fetch {url}: {e}"))?;
        for r in revs {
            if repo.resolve(r).is_none() {
                // A commit no branch holds: servers that allow it fetch it by sha.
                let _ = git_network(&["-C", &d, "fetch", "--quiet", "--", url, r]);
            }
        }
    }
    Ok(dir)
}

/// bench's cache directory.
fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("BENCH_CACHE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("bench");
    }
    if let Some(h) = std::env::var_os("HOME") {
        return PathBuf::from(h).join(".cache/bench");
    }
    std::env::temp_dir().join("bench-cache")
}

/// The tree of `sha` in the cache, written there first if missing (staged, then renamed).
fn cached_tree(repo: &Repo, sha: &str) -> Result<PathBuf, String> {
    let root = cache_dir().join("git-trees");
    let dest = root.join(sha);
    if dest.is_dir() {
        return Ok(dest);
    }
    fs_err::create_dir_all(&root).map_err(|e| e.to_string())?;
    let stage = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempdir_in(&root)
        .map_err(|e| format!("cannot write in {}: {e}", root.display()))?;
    repo.write_tree(sha, &stage.path().join("t"))
        .map_err(|e| e.to_string())?;
    match fs_err::rename(stage.path().join("t"), &dest) {
        Ok(()) => Ok(dest),
        // Another process wrote it first: the same bytes.
        Err(_) if dest.is_dir() => Ok(dest),
        Err(e) => Err(format!("cannot write {}: {e}", dest.display())),
    }
}

const LANGUAGES: &[&str] = &[
    "python",
    "go",
    "rust",
    "javascript",
    "typescript",
    "java",
    "c",
    "cpp",
    "cs",
    "ruby",
    "php",
    "shell",
];

/// Reads one task file.
pub fn read_file(f: &Path) -> Result<Task, BrainBenchError> {
    let file = f.display().to_string();
    let text = fs_err::read_to_string(f).map_err(|e| BrainBenchError {
        file: file.clone(),
        line: 0,
        column: 0,
        message: format!("cannot read: {e}"),
        help: "check the dataset's `path`".into(),
    })?;
    let raw: RawTask = serde_yaml::from_str(&text).map_err(|e| yaml_error(&file, &e))?;
    let at = |field: &str, message: String, help: &str| {
        let (line, column) = field_position(&text, field).unwrap_or((1, 1));
        BrainBenchError {
            file: file.clone(),
            line,
            column,
            message: format!("`{field}`: {message}"),
            help: help.into(),
        }
    };
    let stem = f
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let instance_id = raw.id.clone().unwrap_or(stem);
    check_fields(&raw, &instance_id, &at)?;
    let RawTask {
        id: _,
        repo,
        commit_before,
        commit_fix,
        prompt,
        setup,
        test_files_from_fix,
        verify,
        timeout_s: _,
        max_cost_usd: _,
        tags,
    } = raw;
    let repo_path = match repo_ref(&repo, f) {
        RepoRef::Path(p) => p,
        RepoRef::Url(url) => ensure_clone(&url, &[&commit_before, &commit_fix]).map_err(|e| {
            at(
                "repo",
                e,
                "check the URL and your access to it, or clone it and set `repo` to the clone's path (relative to this file)",
            )
        })?,
    };
    let git = Repo::open(&repo_path).map_err(|e| {
        at(
            "repo",
            format!("{e}"),
            "point `repo` at a git repository (a path relative to this file, or a URL)",
        )
    })?;
    let resolve = |field: &str, rev: &str| {
        git.resolve(rev).ok_or_else(|| {
            at(
                field,
                format!("`{rev}` is not a commit of {}", git.path.display()),
                "give a commit sha of that repository (fetch it first if it is missing)",
            )
        })
    };
    let before = resolve("commit_before", &commit_before)?;
    let fix = resolve("commit_fix", &commit_fix)?;
    if before == fix {
        return Err(at(
            "commit_fix",
            "is the same commit as `commit_before`".into(),
            "commit_fix is the commit of the human fix, commit_before the one the agent starts from",
        ));
    }
    let tests = test_files(&git, &fix, &test_files_from_fix, &at)?;
    let changed = git
        .changed_files(&before, &fix)
        .map_err(|e| at("commit_fix", e.to_string(), "check the repository"))?;
    let source: Vec<String> = changed.into_iter().filter(|p| !tests.contains(p)).collect();
    let diff_err =
        |e: crate::mine::GitError| at("commit_fix", e.to_string(), "check the repository");
    let test_patch = git.diff(&before, &fix, &tests).map_err(diff_err)?;
    let gold_patch = git.diff(&before, &fix, &source).map_err(diff_err)?;
    let created_at = git
        .commit(&fix)
        .map_err(|e| at("commit_fix", e.to_string(), "check the repository"))?
        .date;
    let (tree, digest) = base_tree(&git, &before, &at)?;
    let name = git.name();
    let language = tags
        .iter()
        .flatten()
        .map(|t| t.to_ascii_lowercase())
        .find(|t| LANGUAGES.contains(&t.as_str()));
    Ok(Task {
        harbor: None,
        instance_id,
        repo: name,
        language,
        created_at,
        problem_statement: prompt,
        base: TaskBase::Dir { path: tree, digest },
        gold_patch,
        test_patch,
        rebuild_cmds: Vec::new(),
        setup_cmds: setup.filter(|s| !s.trim().is_empty()).into_iter().collect(),
        test_cmds: vec![verify],
        print_cmds: Vec::new(),
        log_parser: EXIT_CODE_PARSER.into(),
        fail_to_pass: Vec::new(),
        pass_to_pass: Vec::new(),
        repo_dir: None,
        pro: None,
        digests: Default::default(),
    })
}

/// A YAML error of the task file `file`, at the line and column serde_yaml gives.
fn yaml_error(file: &str, e: &serde_yaml::Error) -> BrainBenchError {
    let (line, column) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
    let msg = e.to_string();
    // serde_yaml appends " at line N column M": the location is ours to print.
    let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
    BrainBenchError {
        file: file.to_string(),
        line,
        column,
        message: msg,
        help: "a brain bench task has `repo`, `commit_before`, `commit_fix`, `prompt`, `test_files_from_fix` (a list), `verify`, and optionally `id`, `setup`, `timeout_s`, `max_cost_usd`, `tags`".into(),
    }
}

/// The checks of a task's own fields, the first problem returned at its field (`at`): its id
/// (`instance_id`, from `id` or the file's name), a `prompt` and a `verify` command, a positive
/// `timeout_s`, a non-negative `max_cost_usd`, no empty tag, at least one test file.
fn check_fields(
    raw: &RawTask,
    instance_id: &str,
    at: &impl Fn(&str, String, &str) -> BrainBenchError,
) -> Result<(), BrainBenchError> {
    if instance_id.is_empty()
        || !instance_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return Err(at(
            "id",
            format!("`{instance_id}` is not a task id"),
            "use letters, digits, `.`, `_` and `-`, e.g. `ago-0001`",
        ));
    }
    if raw.prompt.trim().is_empty() {
        return Err(at(
            "prompt",
            "is empty".into(),
            "describe the problem the agent must fix",
        ));
    }
    if raw.verify.trim().is_empty() {
        return Err(at(
            "verify",
            "is empty".into(),
            "give the command whose exit code 0 means the fix passes, e.g. `python3 -m pytest tests/test_x.py -q`",
        ));
    }
    if let Some(t) = raw.timeout_s
        && !(t.is_finite() && t > 0.0)
    {
        return Err(at(
            "timeout_s",
            format!("{t} is not a positive number of seconds"),
            "e.g. `timeout_s: 1800`",
        ));
    }
    if let Some(c) = raw.max_cost_usd
        && !(c.is_finite() && c >= 0.0)
    {
        return Err(at(
            "max_cost_usd",
            format!("{c} is not a cost in dollars"),
            "e.g. `max_cost_usd: 0.30`",
        ));
    }
    if let Some(tags) = &raw.tags
        && let Some(bad) = tags.iter().find(|t| t.trim().is_empty())
    {
        return Err(at(
            "tags",
            format!("tag {bad:?} is empty"),
            "remove the empty tag",
        ));
    }
    if raw.test_files_from_fix.is_empty() {
        return Err(at(
            "test_files_from_fix",
            "is empty".into(),
            "list the test files the fix commit adds or changes, e.g. `[tests/test_x.py]`",
        ));
    }
    Ok(())
}

/// The test files `listed`, cleaned of a leading `./`, sorted and deduplicated: each a path
/// inside the repository that exists at the fix commit `fix`, else the problem at its field.
fn test_files(
    git: &Repo,
    fix: &str,
    listed: &[String],
    at: &impl Fn(&str, String, &str) -> BrainBenchError,
) -> Result<Vec<String>, BrainBenchError> {
    let mut tests: Vec<String> = Vec::new();
    for t in listed {
        let clean = t.trim().trim_start_matches("./").to_string();
        if clean.is_empty() || clean.starts_with('/') || clean.split('/').any(|p| p == "..") {
            return Err(at(
                "test_files_from_fix",
                format!("`{t}` is not a path inside the repository"),
                "give paths relative to the repository's root",
            ));
        }
        if !git.has_file(fix, &clean) {
            return Err(at(
                "test_files_from_fix",
                format!("`{t}` is not a file at commit_fix {}", &fix[..12]),
                "list files that exist in the fix commit (`git checkout <commit_fix> -- <file>` must work)",
            ));
        }
        tests.push(clean);
    }
    tests.sort();
    tests.dedup();
    Ok(tests)
}

/// The tree of the commit `before` written to the cache, and its digest: the task's base.
fn base_tree(
    git: &Repo,
    before: &str,
    at: &impl Fn(&str, String, &str) -> BrainBenchError,
) -> Result<(PathBuf, String), BrainBenchError> {
    let tree = cached_tree(git, before).map_err(|e| {
        at(
            "commit_before",
            format!("cannot write its tree: {e}"),
            "set BENCH_CACHE_DIR to a writable directory",
        )
    })?;
    let digest = tree_digest(&tree).map_err(|e| {
        at(
            "commit_before",
            format!("cannot read its tree {}: {e}", tree.display()),
            "remove that directory; it is written again",
        )
    })?;
    Ok((tree, digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_located() {
        let text = "id: a\nrepo:   ../r\ntimeout_s: -1\n";
        assert_eq!(field_position(text, "repo"), Some((2, 9)));
        assert_eq!(field_position(text, "timeout_s"), Some((3, 12)));
        assert_eq!(field_position(text, "verify"), None);
    }
}
