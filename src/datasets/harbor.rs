//! The `harbor` dataset format: Harbor task directories (Terminal-Bench 2, Frontier-SWE), read
//! from a task directory, a directory of task directories, or a git repository of tasks at a
//! pinned commit (its tree at that commit, read with `git archive`, never the working tree).
//!
//! A task directory holds `task.toml`, `instruction.md` (the problem statement),
//! `environment/Dockerfile` (or a prebuilt `[environment] docker_image`; beside it an optional
//! `environment/docker-compose.yaml` of services, `harbor_compose.rs`), `tests/test.sh` and
//! optionally `solution/solve.sh`. `task.toml` is read with every field of Harbor's current
//! schema (`TaskConfig` of harbor's `models/task/config.py`): `version` as an alias of
//! `schema_version`, the deprecated `memory`/`storage` size strings (`"2G"` -> 2048 MB,
//! `"512M"`, `"K"`), network modes and allowed hosts with Harbor's rules. An unknown field, a
//! wrong type or a bad value is an error naming the file, the line and column, and how to fix
//! it; the problems of every task are reported together.
//!
//! Not here: running tasks (`protocols/harbor.rs`), the task model (`tasks/harbor.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::tasks::{
    AgentConfig, EnvironmentConfig, HARBOR_WORKDIR, Harbor, HarborConfig, HarborSpec, Healthcheck,
    McpServer, NetworkPolicy, PackageInfo, Task, TaskBase, VerifierConfig,
};
use crate::types::Blob;

pub use super::harbor_compose::dockerfile_facts;

/// The files of a tree: relative path -> (mode, content). Directories are implied.
pub type FileTree = BTreeMap<String, (u32, Vec<u8>)>;

/// Why a Harbor dataset cannot be read: every problem found, each naming its file.
#[derive(Debug, thiserror::Error)]
#[error("{}", .problems.join("\n"))]
pub struct HarborError {
    pub problems: Vec<String>,
}

fn one(p: String) -> HarborError {
    HarborError { problems: vec![p] }
}

/// Reads the tasks at `root`: one task directory, or a directory of them; with `commit`, the
/// tree of that commit of the git repository at `root`.
pub fn load(root: &Path, commit: Option<&str>) -> Result<Vec<Task>, HarborError> {
    let (tree, origin) = match commit {
        Some(c) => (git_tree(root, c)?, format!("{}@{c}", root.display())),
        None => (dir_tree(root)?, root.display().to_string()),
    };
    let mut task_dirs: Vec<String> = Vec::new();
    if tree.contains_key("task.toml") {
        task_dirs.push(String::new());
    } else {
        for path in tree.keys() {
            if let Some(dir) = path.strip_suffix("/task.toml")
                && !dir.contains('/')
            {
                task_dirs.push(dir.to_string());
            }
        }
    }
    if task_dirs.is_empty() {
        return Err(one(format!(
            "{origin}: no Harbor task here (a task directory holds task.toml; a dataset is a task directory or a directory of them)"
        )));
    }
    let mut tasks = Vec::new();
    let mut problems = Vec::new();
    for dir in task_dirs {
        let name = if dir.is_empty() {
            root.file_name()
                .map_or("task".to_string(), |n| n.to_string_lossy().into_owned())
        } else {
            dir.clone()
        };
        let shown = if dir.is_empty() {
            origin.clone()
        } else {
            format!("{origin}/{dir}")
        };
        match task(&tree, &dir, &name, &shown) {
            Ok(t) => tasks.push(t),
            Err(e) => problems.extend(e.problems),
        }
    }
    if problems.is_empty() {
        Ok(tasks)
    } else {
        Err(HarborError { problems })
    }
}

/// The size limit of one file of a Harbor task (a task file, as a local task's `repo/` files).
fn harbor_file_limit() -> Result<u64, HarborError> {
    crate::tasks::FileLimits::current()
        .map(|l| l.repo_file)
        .map_err(one)
}

/// Every regular file under `root` (symlinks refused: a task is its own files).
pub fn dir_tree(root: &Path) -> Result<FileTree, HarborError> {
    let mut tree = FileTree::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        let entries = fs_err::read_dir(&dir).map_err(|e| one(format!("{}: {e}", dir.display())))?;
        for e in entries {
            let e = e.map_err(|e| one(format!("{}: {e}", dir.display())))?;
            let name = e.file_name().to_string_lossy().into_owned();
            if rel.as_os_str().is_empty() && name == ".git" {
                continue;
            }
            let path = rel.join(&name);
            let meta = fs_err::symlink_metadata(e.path())
                .map_err(|err| one(format!("{}: {err}", e.path().display())))?;
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                use std::os::unix::fs::PermissionsExt;
                let bytes = crate::regular_file::read_bytes(&e.path(), harbor_file_limit()?)
                    .map_err(|err| one(err.to_string()))?;
                tree.insert(
                    path.to_string_lossy().into_owned(),
                    (meta.permissions().mode() & 0o777, bytes),
                );
            } else {
                return Err(one(format!(
                    "{}: not a regular file or directory (symlinks and special files are not read; copy the file in)",
                    e.path().display()
                )));
            }
        }
    }
    Ok(tree)
}

/// The tree of `commit` in the git repository at `root` (`git archive`), never its work tree.
pub fn git_tree(root: &Path, commit: &str) -> Result<FileTree, HarborError> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["archive", "--format=tar", commit])
        .output()
        .map_err(|e| one(format!("{}: cannot run git: {e}", root.display())))?;
    if !out.status.success() {
        return Err(one(format!(
            "{}: cannot read commit {commit}: {} (fetch it, or pin a commit the checkout has)",
            root.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let mut tree = FileTree::new();
    let mut archive = tar::Archive::new(out.stdout.as_slice());
    let entries = archive
        .entries()
        .map_err(|e| one(format!("{}@{commit}: {e}", root.display())))?;
    for e in entries {
        let mut e = e.map_err(|e| one(format!("{}@{commit}: {e}", root.display())))?;
        if e.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let path = e
            .path()
            .map_err(|err| one(format!("{}@{commit}: {err}", root.display())))?
            .to_string_lossy()
            .into_owned();
        let mode = e.header().mode().unwrap_or(0o644) & 0o777;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut bytes)
            .map_err(|err| one(format!("{}@{commit}: {path}: {err}", root.display())))?;
        tree.insert(path, (mode, bytes));
    }
    Ok(tree)
}

/// A deterministic tarball of the files under `prefix/` (paths relative to it; sorted; mode
/// 0755 for executables, else 0644; owner root; mtime 0): the same tree gives the same bytes.
pub fn tarball(tree: &FileTree, prefix: &str) -> Option<Vec<u8>> {
    let lead = if prefix.is_empty() {
        String::new()
    } else {
        format!("{prefix}/")
    };
    let files: Vec<(&str, &(u32, Vec<u8>))> = tree
        .iter()
        .filter_map(|(p, f)| p.strip_prefix(&lead).map(|rel| (rel, f)))
        .collect();
    if files.is_empty() {
        return None;
    }
    let mut b = tar::Builder::new(Vec::new());
    let mut dirs = std::collections::BTreeSet::new();
    for (rel, (mode, bytes)) in files {
        // Parent directories first, once each.
        let mut at = 0;
        while let Some(i) = rel[at..].find('/') {
            let d = &rel[..at + i];
            if dirs.insert(d.to_string()) {
                let mut h = tar::Header::new_gnu();
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                h.set_size(0);
                h.set_mtime(0);
                h.set_uid(0);
                h.set_gid(0);
                b.append_data(&mut h, format!("{d}/"), std::io::empty())
                    .expect("in-memory tar");
            }
            at += i + 1;
        }
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(if mode & 0o111 != 0 { 0o755 } else { 0o644 });
        h.set_size(bytes.len() as u64);
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        b.append_data(&mut h, rel, bytes.as_slice())
            .expect("in-memory tar");
    }
    Some(b.into_inner().expect("in-memory tar"))
}

// ---- task.toml, raw ----

/// A TOML number where Harbor takes a float (an integer is accepted too).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
enum Number {
    Int(i64),
    Float(f64),
}

impl Number {
    fn get(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::Float(f) => f,
        }
    }
}

/// A user name or UID.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum User {
    Name(String),
    Uid(i64),
}

impl User {
    fn get(self) -> String {
        match self {
            User::Name(s) => s,
            User::Uid(u) => u.to_string(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAuthor {
    name: String,
    email: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPackage {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    authors: Vec<RawAuthor>,
    #[serde(default)]
    keywords: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVerifier {
    timeout_sec: Option<Number>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    user: Option<User>,
    network_mode: Option<String>,
    #[serde(default)]
    allowed_hosts: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgent {
    timeout_sec: Option<Number>,
    user: Option<User>,
    network_mode: Option<String>,
    #[serde(default)]
    allowed_hosts: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSolution {
    #[serde(default)]
    env: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMcp {
    name: String,
    transport: Option<String>,
    url: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHealthcheck {
    command: String,
    interval_sec: Option<Number>,
    timeout_sec: Option<Number>,
    start_period_sec: Option<Number>,
    start_interval_sec: Option<Number>,
    retries: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEnvironment {
    build_timeout_sec: Option<Number>,
    docker_image: Option<String>,
    cpus: Option<i64>,
    memory_mb: Option<i64>,
    storage_mb: Option<i64>,
    gpus: Option<i64>,
    gpu_types: Option<Vec<String>>,
    allow_internet: Option<bool>,
    network_mode: Option<String>,
    #[serde(default)]
    allowed_hosts: Vec<String>,
    #[serde(default)]
    mcp_servers: Vec<RawMcp>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    skills_dir: Option<String>,
    healthcheck: Option<RawHealthcheck>,
    os: Option<String>,
    /// Deprecated: `"2G"`, `"512M"`.
    memory: Option<String>,
    /// Deprecated: `"10G"`.
    storage: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTaskToml {
    version: Option<String>,
    schema_version: Option<String>,
    task: Option<RawPackage>,
    #[serde(default)]
    metadata: toml::Table,
    #[serde(default)]
    verifier: RawVerifier,
    #[serde(default)]
    agent: RawAgent,
    #[serde(default)]
    environment: RawEnvironment,
    #[serde(default)]
    solution: RawSolution,
    source: Option<String>,
    #[serde(default)]
    artifacts: Vec<toml::Value>,
}

/// 1-based line and column of byte `at` in `text`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Where `key` is written in `text` (its first line starting with it), for value errors.
fn key_at(text: &str, table: &str, key: &str) -> String {
    let mut current = String::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') {
            current = t.trim_matches(|c| c == '[' || c == ']').trim().to_string();
            continue;
        }
        if current == table
            && let Some(rest) = t.strip_prefix(key)
            && rest.trim_start().starts_with('=')
        {
            return format!("line {}", i + 1);
        }
    }
    if table.is_empty() {
        "top level".to_string()
    } else {
        format!("[{table}]")
    }
}

/// Harbor's `_parse_size_to_mb`: `G` -> x1024 (truncated), `M`, `K` -> /1024.
pub fn size_to_mb(s: &str) -> Option<i64> {
    let s = s.trim().to_uppercase();
    let (num, factor): (&str, f64) = if let Some(n) = s.strip_suffix('G') {
        (n, 1024.0)
    } else if let Some(n) = s.strip_suffix('M') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('K') {
        (n, 1.0 / 1024.0)
    } else {
        return None;
    };
    let v: f64 = num.trim().parse().ok()?;
    if !v.is_finite() || v < 0.0 {
        return None;
    }
    Some((v * factor) as i64)
}

/// Harbor's `normalize_allowed_hosts`: lower-cased, trailing dots dropped, no URLs or ports.
fn normalize_hosts(hosts: &[String]) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for h in hosts {
        let v = h.trim().to_lowercase();
        let v = v.trim_end_matches('.').to_string();
        if v.is_empty() {
            continue;
        }
        if v.contains("://") || v.contains('/') || v.contains(':') {
            return Err(format!(
                "allowed_hosts entries must be hostnames or IPv4 addresses, not URLs, CIDRs, ports or paths: {h:?}"
            ));
        }
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(out)
}

/// An explicit phase policy from `network_mode` and `allowed_hosts` (Harbor's rules: hosts
/// without a mode mean `allowlist`; hosts with another mode are an error).
fn policy(mode: Option<&str>, hosts: &[String]) -> Result<Option<NetworkPolicy>, String> {
    let hosts = normalize_hosts(hosts)?;
    let mode = match mode {
        None if hosts.is_empty() => return Ok(None),
        None => "allowlist",
        Some(m) => m,
    };
    match mode {
        "public" | "no-network" if !hosts.is_empty() => {
            Err("allowed_hosts is only valid with network_mode = \"allowlist\"".to_string())
        }
        "public" => Ok(Some(NetworkPolicy::Public)),
        "no-network" => Ok(Some(NetworkPolicy::NoNetwork)),
        "allowlist" => Ok(Some(NetworkPolicy::Allowlist { hosts })),
        other => Err(format!(
            "unknown network_mode {other:?}; use \"public\", \"no-network\" or \"allowlist\""
        )),
    }
}

/// Parses a `task.toml`; `file` is the name errors show.
pub fn parse_config(text: &str, file: &str) -> Result<HarborConfig, HarborError> {
    let raw: RawTaskToml = toml::from_str(text).map_err(|e| toml_error(text, file, &e))?;
    let mut problems = Vec::new();
    let mut bad = |table: &str, key: &str, why: String| {
        problems.push(format!(
            "{file}: {}: {table}{key}: {why}",
            key_at(text, table.trim_end_matches('.'), key),
            table = if table.is_empty() {
                String::new()
            } else {
                format!("{table}.")
            }
        ));
    };
    let RawTaskToml {
        version,
        schema_version,
        task,
        metadata,
        verifier,
        agent,
        environment,
        solution,
        source,
        artifacts,
    } = raw;
    let RawEnvironment {
        build_timeout_sec,
        docker_image,
        cpus,
        memory_mb,
        storage_mb,
        gpus,
        gpu_types,
        allow_internet,
        network_mode,
        allowed_hosts,
        mcp_servers,
        env,
        skills_dir,
        healthcheck,
        os,
        memory,
        storage,
    } = environment;
    let (memory_mb, storage_mb) = sizes((memory_mb, memory), (storage_mb, storage), &mut bad);
    let (env_network, verifier_network, agent_network) = networks(
        (network_mode.as_deref(), &allowed_hosts, allow_internet),
        &verifier,
        &agent,
        &mut bad,
    );
    let mcp = mcp_of(mcp_servers, &mut bad);
    let secs = |n: Option<Number>, default: f64| n.map_or(default, Number::get);
    let verifier_timeout = secs(verifier.timeout_sec, 600.0);
    let agent_timeout = agent.timeout_sec.map(Number::get);
    check_ranges(
        (cpus, gpus, memory_mb, storage_mb),
        (
            verifier_timeout,
            agent_timeout,
            secs(build_timeout_sec, 600.0),
        ),
        &mut bad,
    );
    let task = package(task, &mut bad);
    if !problems.is_empty() {
        return Err(HarborError { problems });
    }
    Ok(HarborConfig {
        // Harbor: `schema_version` wins; `version` is its older name.
        schema_version: schema_version.or(version).unwrap_or_else(|| "1.1".into()),
        task,
        metadata: serde_json::to_value(&metadata).unwrap_or(serde_json::Value::Null),
        verifier: VerifierConfig {
            timeout_sec: verifier_timeout,
            env: verifier.env,
            user: verifier.user.map(User::get),
            network: verifier_network,
        },
        agent: AgentConfig {
            timeout_sec: agent_timeout,
            user: agent.user.map(User::get),
            network: agent_network,
        },
        environment: EnvironmentConfig {
            build_timeout_sec: secs(build_timeout_sec, 600.0),
            docker_image,
            cpus: cpus.unwrap_or(1),
            memory_mb,
            storage_mb,
            gpus: gpus.unwrap_or(0),
            gpu_types,
            network: env_network,
            mcp_servers: mcp,
            env,
            skills_dir,
            healthcheck: healthcheck.map(|h| Healthcheck {
                command: h.command,
                interval_sec: secs(h.interval_sec, 5.0),
                timeout_sec: secs(h.timeout_sec, 30.0),
                start_period_sec: secs(h.start_period_sec, 0.0),
                start_interval_sec: secs(h.start_interval_sec, 5.0),
                retries: h.retries.unwrap_or(3),
            }),
            os,
        },
        solution_env: solution.env,
        source,
        artifacts: serde_json::to_value(&artifacts).unwrap_or(serde_json::Value::Null),
    })
}

/// A `task.toml` that is not TOML of the schema, at the line and column the parser gives.
fn toml_error(text: &str, file: &str, e: &toml::de::Error) -> HarborError {
    let at = e
        .span()
        .map(|s| {
            let (l, c) = line_col(text, s.start);
            format!("line {l}, column {c}: ")
        })
        .unwrap_or_default();
    let msg = e.message().trim().to_string();
    let help = if msg.contains("unknown field") {
        "; bench reads Harbor's task.toml schema 1.1 (harbor models/task/config.py): remove or rename the field"
    } else {
        ""
    };
    one(format!("{file}: {at}{msg}{help}"))
}

/// `[environment]`'s memory and storage in MB: `memory` and `storage` (deprecated sizes such as
/// "2G") win over `memory_mb` and `storage_mb`; 2048 and 10240 by default.
fn sizes(
    (memory_mb, memory): (Option<i64>, Option<String>),
    (storage_mb, storage): (Option<i64>, Option<String>),
    bad: &mut impl FnMut(&str, &str, String),
) -> (i64, i64) {
    let mut memory_mb = memory_mb.unwrap_or(2048);
    if let Some(m) = &memory {
        match size_to_mb(m) {
            Some(v) => memory_mb = v,
            None => bad(
                "environment",
                "memory",
                format!("invalid size {m:?}; write e.g. \"2G\" or \"512M\" (or use memory_mb)"),
            ),
        }
    }
    let mut storage_mb = storage_mb.unwrap_or(10240);
    if let Some(s) = &storage {
        match size_to_mb(s) {
            Some(v) => storage_mb = v,
            None => bad(
                "environment",
                "storage",
                format!("invalid size {s:?}; write e.g. \"10G\" (or use storage_mb)"),
            ),
        }
    }
    (memory_mb, storage_mb)
}

/// The network policies of the environment (by default public, or no network with
/// `allow_internet = false`), of the verifier and of the agent (`None` where they set none).
fn networks(
    (network_mode, allowed_hosts, allow_internet): (Option<&str>, &[String], Option<bool>),
    verifier: &RawVerifier,
    agent: &RawAgent,
    bad: &mut impl FnMut(&str, &str, String),
) -> (NetworkPolicy, Option<NetworkPolicy>, Option<NetworkPolicy>) {
    let env_network = match policy(network_mode, allowed_hosts) {
        Ok(Some(p)) => p,
        Ok(None) if allow_internet == Some(false) => NetworkPolicy::NoNetwork,
        Ok(None) => NetworkPolicy::Public,
        Err(e) => {
            bad("environment", "network_mode", e);
            NetworkPolicy::Public
        }
    };
    let verifier_network = policy(verifier.network_mode.as_deref(), &verifier.allowed_hosts)
        .unwrap_or_else(|e| {
            bad("verifier", "network_mode", e);
            None
        });
    let agent_network =
        policy(agent.network_mode.as_deref(), &agent.allowed_hosts).unwrap_or_else(|e| {
            bad("agent", "network_mode", e);
            None
        });
    (env_network, verifier_network, agent_network)
}

/// `[environment]`'s MCP servers, each with the field its transport requires (`url` for sse
/// and streamable-http, the default being sse; `command` for stdio).
fn mcp_of(servers: Vec<RawMcp>, bad: &mut impl FnMut(&str, &str, String)) -> Vec<McpServer> {
    let mut mcp = Vec::new();
    for m in servers {
        let transport = m.transport.unwrap_or_else(|| "sse".into());
        match transport.as_str() {
            "sse" | "streamable-http" if m.url.is_none() => bad(
                "environment",
                "mcp_servers",
                format!(
                    "server {:?}: 'url' is required for transport {transport:?}",
                    m.name
                ),
            ),
            "stdio" if m.command.is_none() => bad(
                "environment",
                "mcp_servers",
                format!(
                    "server {:?}: 'command' is required for transport \"stdio\"",
                    m.name
                ),
            ),
            "sse" | "streamable-http" | "stdio" => {}
            other => bad(
                "environment",
                "mcp_servers",
                format!(
                    "server {:?}: unknown transport {other:?}; use \"sse\", \"streamable-http\" or \"stdio\"",
                    m.name
                ),
            ),
        }
        mcp.push(McpServer {
            name: m.name,
            transport,
            url: m.url,
            command: m.command,
            args: m.args,
        });
    }
    mcp
}

/// The `[task]` table, whose name must be `org/name`.
fn package(
    task: Option<RawPackage>,
    bad: &mut impl FnMut(&str, &str, String),
) -> Option<PackageInfo> {
    let task = task.map(|p| PackageInfo {
        name: p.name,
        description: p.description,
        authors: p.authors.into_iter().map(|a| (a.name, a.email)).collect(),
        keywords: p.keywords,
    });
    if let Some(p) = &task
        && (p.name.split('/').count() != 2 || p.name.contains("..") || p.name.starts_with('.'))
    {
        bad(
            "task",
            "name",
            format!("{:?} is not in 'org/name' format", p.name),
        );
    }
    task
}

/// The ranges of the numbers: counts and sizes not negative, at least one CPU, and the
/// verifier's, the agent's and the build's timeouts positive seconds.
fn check_ranges(
    (cpus, gpus, memory_mb, storage_mb): (Option<i64>, Option<i64>, i64, i64),
    (verifier_timeout, agent_timeout, build_timeout): (f64, Option<f64>, f64),
    bad: &mut impl FnMut(&str, &str, String),
) {
    for (table, key, v) in [
        ("environment", "cpus", cpus),
        ("environment", "gpus", gpus),
        ("environment", "memory_mb", Some(memory_mb)),
        ("environment", "storage_mb", Some(storage_mb)),
    ] {
        if let Some(v) = v
            && v < 0
        {
            bad(table, key, format!("must not be negative, found {v}"));
        }
    }
    if cpus == Some(0) {
        bad("environment", "cpus", "must be at least 1".into());
    }
    for (table, v) in [
        ("verifier", Some(verifier_timeout)),
        ("agent", agent_timeout),
        ("environment", Some(build_timeout)),
    ] {
        if let Some(v) = v
            && (!v.is_finite() || v <= 0.0)
        {
            bad(
                table,
                if table == "environment" {
                    "build_timeout_sec"
                } else {
                    "timeout_sec"
                },
                format!("must be a positive number of seconds, found {v}"),
            );
        }
    }
}

/// The services of the task's `environment/docker-compose.yaml` (or `.yml`), if it has one.
/// Its `main` is built from environment/Dockerfile: a prebuilt `docker_image` with a compose
/// file is refused (its services' images could not enter the environment's identity).
fn compose_of(
    tree: &FileTree,
    env: &str,
    shown: &str,
    config: Option<&HarborConfig>,
) -> Result<super::harbor_compose::Services, Vec<String>> {
    let Some((name, text)) = ["docker-compose.yaml", "docker-compose.yml"]
        .iter()
        .find_map(|n| text_of(tree, &format!("{env}/{n}")).map(|t| (*n, t)))
    else {
        return Ok(Default::default());
    };
    if config.is_some_and(|c| c.environment.docker_image.is_some()) {
        return Err(vec![format!(
            "{shown}: environment/{name} needs environment/Dockerfile, from which bench builds `main` (a prebuilt `[environment] docker_image` with services is not supported: write `FROM <image>` in environment/Dockerfile)"
        )]);
    }
    super::harbor_compose::read(&text, &format!("{shown}/environment/{name}"), tree, env)
}

fn text_of(tree: &FileTree, path: &str) -> Option<String> {
    tree.get(path)
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
}

/// A task's base and the working directory its Dockerfile sets last: the prebuilt
/// `docker_image` when there is one, otherwise an image built from the tree's `environment`
/// directory, starting from the images its Dockerfile (`dockerfile`, its text) names.
fn base(
    tree: &FileTree,
    environment: &str,
    docker_image: Option<&str>,
    dockerfile: Option<&str>,
) -> (TaskBase, Option<String>) {
    match docker_image {
        Some(image) => (
            TaskBase::Image {
                image: image.to_string(),
                base_commit: String::new(),
            },
            None,
        ),
        None => {
            let context = tarball(tree, environment).expect("has a Dockerfile");
            let (from, workdir) = dockerfile_facts(dockerfile.unwrap_or(""));
            (
                TaskBase::Build {
                    digest: crate::key::digest(&context),
                    context: Arc::new(context),
                    from,
                },
                workdir,
            )
        }
    }
}

/// One task of the tree: the directory `dir` ("" for the root), shown as `shown` in errors.
fn task(tree: &FileTree, dir: &str, name: &str, shown: &str) -> Result<Task, HarborError> {
    let at = |f: &str| {
        if dir.is_empty() {
            f.to_string()
        } else {
            format!("{dir}/{f}")
        }
    };
    let toml_text = text_of(tree, &at("task.toml")).unwrap_or_default();
    let config = parse_config(&toml_text, &format!("{shown}/task.toml"));
    let mut problems = Vec::new();
    let config = match config {
        Ok(c) => Some(c),
        Err(e) => {
            problems.extend(e.problems);
            None
        }
    };
    let instruction = text_of(tree, &at("instruction.md"));
    if instruction.is_none() {
        problems.push(format!(
            "{shown}: no instruction.md (the task's instruction to the agent)"
        ));
    }
    if !tree.contains_key(&at("tests/test.sh")) {
        problems.push(format!(
            "{shown}: no tests/test.sh (the verifier: it writes /logs/verifier/reward.txt or reward.json)"
        ));
    }
    let dockerfile = text_of(tree, &at("environment/Dockerfile"));
    let compose = compose_of(tree, &at("environment"), shown, config.as_ref());
    if let Some(c) = &config
        && c.environment.docker_image.is_none()
        && dockerfile.is_none()
    {
        problems.push(format!(
            "{shown}: no environment: add environment/Dockerfile or `[environment] docker_image = \"IMAGE\"` to task.toml"
        ));
    }
    let services = match compose {
        Ok(s) => s,
        Err(p) => {
            problems.extend(p);
            Default::default()
        }
    };
    let (Some(config), Some(instruction), true) = (config, instruction, problems.is_empty()) else {
        return Err(HarborError { problems });
    };
    let (mut base, workdir) = base(
        tree,
        &at("environment"),
        config.environment.docker_image.as_deref(),
        dockerfile.as_deref(),
    );
    // The services' images enter the environment's identity (its key) with the Dockerfile's.
    if let TaskBase::Build { from, .. } = &mut base {
        from.extend(services.images);
        from.sort();
        from.dedup();
    }
    let tests = Blob::new(tarball(tree, &at("tests")).expect("has tests/test.sh"));
    let solution = tree
        .contains_key(&at("solution/solve.sh"))
        .then(|| tarball(tree, &at("solution")).map(Blob::new))
        .flatten();
    use base64::Engine as _;
    let gold_patch = solution
        .as_ref()
        .map(|s| base64::engine::general_purpose::STANDARD.encode(s.bytes()))
        .unwrap_or_default();
    let repo = config
        .task
        .as_ref()
        .map_or_else(|| "harbor".to_string(), |t| t.name.clone());
    let created_at = config
        .metadata
        .get("created_at")
        .and_then(|v| v.as_str())
        .and_then(crate::datasets::normalize_date)
        .unwrap_or_default();
    let language = config
        .metadata
        .get("category")
        .and_then(|v| v.as_str())
        .map(String::from);
    let spec = HarborSpec {
        workdir: workdir.unwrap_or_else(|| HARBOR_WORKDIR.to_string()),
        tests,
        solution,
        config,
        services: services.services,
    };
    Ok(Task {
        setup_cmds: Vec::new(),
        instance_id: name.to_string(),
        repo,
        language,
        created_at,
        problem_statement: instruction,
        base,
        gold_patch,
        test_patch: String::new(),
        rebuild_cmds: Vec::new(),
        test_cmds: vec!["bash /tests/test.sh".into()],
        print_cmds: Vec::new(),
        log_parser: "harbor-reward".into(),
        fail_to_pass: Vec::new(),
        pass_to_pass: Vec::new(),
        repo_dir: Some(spec.workdir.clone()),
        pro: None,
        harbor: Some(Harbor(Arc::new(spec))),
        digests: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_harbors() {
        let c = parse_config("", "t/task.toml").unwrap();
        assert_eq!(c.schema_version, "1.1");
        assert_eq!(c.verifier.timeout_sec, 600.0);
        assert_eq!(c.agent.timeout_sec, None);
        assert_eq!(c.environment.cpus, 1);
        assert_eq!(c.environment.memory_mb, 2048);
        assert_eq!(c.environment.storage_mb, 10240);
        assert_eq!(c.environment.gpus, 0);
        assert_eq!(c.environment.network, NetworkPolicy::Public);
        assert_eq!(c.verifier_network(), &NetworkPolicy::Public);
    }

    #[test]
    fn every_field_of_the_schema_and_its_aliases() {
        let text = r#"
version = "1.0"
source = "terminal-bench"
artifacts = []

[task]
name = "terminal-bench/fix-git"
description = "fix it"
keywords = ["git"]
[[task.authors]]
name = "A"
email = "a@example.com"

[metadata]
author_name = "A"
difficulty = "hard"
tags = ["x"]
expert_time_estimate_min = 30

[verifier]
timeout_sec = 120
env = { MODE = "strict" }
user = 1000

[agent]
timeout_sec = 900.5
user = "agent"
network_mode = "no-network"

[solution]
env = { S = "1" }

[environment]
build_timeout_sec = 300.0
docker_image = "alexgshaw/fix-git:20260403"
cpus = 2
memory = "1.5G"
storage = "512M"
gpus = 0
gpu_types = ["H100"]
allowed_hosts = ["PyPI.org.", "files.pythonhosted.org"]
skills_dir = "/skills"
os = "linux"
[environment.env]
TOKEN = "${TOKEN:-x}"
[environment.healthcheck]
command = "true"
retries = 5
[[environment.mcp_servers]]
name = "docs"
url = "http://localhost:1"
"#;
        let c = parse_config(text, "t/task.toml").unwrap();
        assert_eq!(c.schema_version, "1.0");
        assert_eq!(c.source.as_deref(), Some("terminal-bench"));
        assert_eq!(
            c.task.as_ref().unwrap().authors[0].1.as_deref(),
            Some("a@example.com")
        );
        assert_eq!(c.metadata["expert_time_estimate_min"], 30);
        assert_eq!(c.verifier.timeout_sec, 120.0);
        assert_eq!(c.verifier.user.as_deref(), Some("1000"));
        assert_eq!(c.agent.timeout_sec, Some(900.5));
        assert_eq!(c.agent_network(), &NetworkPolicy::NoNetwork);
        assert_eq!(c.environment.memory_mb, 1536);
        assert_eq!(c.environment.storage_mb, 512);
        assert_eq!(
            c.environment.network,
            NetworkPolicy::Allowlist {
                hosts: vec!["pypi.org".into(), "files.pythonhosted.org".into()]
            }
        );
        assert_eq!(c.verifier_network(), &c.environment.network);
        assert_eq!(c.environment.healthcheck.as_ref().unwrap().retries, 5);
        assert_eq!(
            c.environment.healthcheck.as_ref().unwrap().interval_sec,
            5.0
        );
        assert_eq!(c.environment.mcp_servers[0].transport, "sse");
        assert_eq!(c.environment.env["TOKEN"], "${TOKEN:-x}");
        assert_eq!(c.solution_env["S"], "1");
        // schema_version wins over its alias.
        let c = parse_config("version = \"1.0\"\nschema_version = \"1.1\"\n", "t").unwrap();
        assert_eq!(c.schema_version, "1.1");
        // allow_internet = false without a mode: no network.
        let c = parse_config("[environment]\nallow_internet = false\n", "t").unwrap();
        assert_eq!(c.environment.network, NetworkPolicy::NoNetwork);
    }

    #[test]
    fn sizes_follow_harbor() {
        assert_eq!(size_to_mb("2G"), Some(2048));
        assert_eq!(size_to_mb(" 512m "), Some(512));
        assert_eq!(size_to_mb("2048K"), Some(2));
        assert_eq!(size_to_mb("1.7G"), Some(1740));
        assert_eq!(size_to_mb("2GB"), None);
        assert_eq!(size_to_mb("lots"), None);
    }

    #[test]
    fn unknown_fields_and_bad_values_name_file_and_line() {
        let e = parse_config(
            "[verifier]\ntimeout_sec = 10\ntimout = 3\n",
            "ds/t1/task.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("ds/t1/task.toml: line 3, column 1: unknown field `timout`"),
            "{e}"
        );
        assert!(e.contains("remove or rename"), "{e}");
        let e = parse_config("[environment]\nmemory = \"2GB\"\n", "ds/t1/task.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ds/t1/task.toml: line 2: environment.memory: invalid size \"2GB\""),
            "{e}"
        );
        let e = parse_config(
            "[verifier]\nnetwork_mode = \"public\"\nallowed_hosts = [\"a.com\"]\n",
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("line 2: verifier.network_mode: allowed_hosts is only valid"),
            "{e}"
        );
        let e = parse_config("[environment]\nallowed_hosts = [\"http://a.com\"]\n", "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not URLs"), "{e}");
        let e = parse_config("[agent]\ntimeout_sec = \"10\"\n", "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn dockerfile_from_and_workdir() {
        let (from, wd) = dockerfile_facts(
            "FROM --platform=linux/amd64 base:1 AS build\nRUN x\nFROM build\nFROM other:2\nWORKDIR /srv\nWORKDIR /app\n",
        );
        assert_eq!(from, vec!["base:1".to_string(), "other:2".to_string()]);
        assert_eq!(wd.as_deref(), Some("/app"));
    }

    #[test]
    fn tarballs_are_deterministic() {
        let mut t = FileTree::new();
        t.insert("tests/test.sh".into(), (0o775, b"echo".to_vec()));
        t.insert("tests/a/b.py".into(), (0o600, b"x".to_vec()));
        t.insert("other".into(), (0o644, b"y".to_vec()));
        let a = tarball(&t, "tests").unwrap();
        assert_eq!(a, tarball(&t.clone(), "tests").unwrap());
        let mut ar = tar::Archive::new(a.as_slice());
        let names: Vec<(String, u32)> = ar
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.path().unwrap().to_string_lossy().into_owned(),
                    e.header().mode().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            names,
            vec![
                ("a/".to_string(), 0o755),
                ("a/b.py".to_string(), 0o644),
                ("test.sh".to_string(), 0o755)
            ]
        );
        assert!(tarball(&t, "solution").is_none());
    }
}
