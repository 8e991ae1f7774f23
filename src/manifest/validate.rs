//! From a checked tree to the [`Manifest`] model: resolves references (stages, teams, harnesses,
//! datasets), parses durations and sizes, resolves paths against the file that wrote them, and
//! orders the stage DAG. Every problem becomes a diagnostic; all are returned together.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};

use super::check::{check, suggest};
use super::diagnostic::{Diag, ManifestError, Sources};
use super::model::*;
use super::presets::{PRESETS, preset};
use super::schema::manifest_schema;
use super::tree::{self, Loc, Node, Value};
use super::types::*;
use crate::harness::template::TemplateKind;

/// Loads, checks and validates a manifest and its `extends` chain.
pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
    load_trusting(path, &|_| false)
}

/// [`load`], but the task checks of a local dataset (every `task.toml` read and parsed) are
/// skipped for a directory `checked(dir)` vouches for: one whose tasks are known to be, file
/// for file, tasks these checks found nothing wrong in, with this build (an apply's no-op
/// matches the directory's stat signature against the one stored with that verdict:
/// `run::TakenSignatures`).
pub fn load_trusting(
    path: &Path,
    checked: &dyn Fn(&Path) -> bool,
) -> Result<Manifest, ManifestError> {
    let mut sources = Sources::default();
    let shown = path.to_path_buf();
    let root = tree::load(path, &mut sources)
        .map_err(|d| ManifestError::new(shown.clone(), &sources, d))?;
    let (structural, bad) = check(&root, &manifest_schema());
    // With structural problems, drop the values at fault and still validate the rest, so every
    // problem is reported in one run.
    let mut root = root;
    super::check::prune(&mut root, &bad);
    let root = root;
    let resolved = root.to_toml();
    let file: ManifestFile = match resolved.clone().try_into() {
        Ok(f) => f,
        Err(_) if !structural.is_empty() => {
            return Err(ManifestError::new(shown, &sources, structural));
        }
        Err(err) => {
            // The schema check passed but serde did not: a gap in the checker. Still point at
            // the value serde names, not at the top of the file.
            let (keys, message) = serde_error_keys(&err);
            let loc = nearest_loc(&root, &keys);
            return Err(ManifestError::new(
                shown,
                &sources,
                vec![
                    Diag::new(
                        "manifest::invalid",
                        format!("manifest does not fit its schema: {message}"),
                        loc,
                        "here",
                    )
                    .help("see schemas/manifest.schema.json for what this value may be"),
                ],
            ));
        }
    };
    let mut v = Validator {
        root: &root,
        sources: &sources,
        diags: Vec::new(),
        checked,
    };
    let manifest = v.manifest(file, resolved);
    if !v.diags.is_empty() || !structural.is_empty() {
        let mut all = structural;
        all.extend(v.diags);
        return Err(ManifestError::new(shown, &sources, all));
    }
    Ok(manifest.expect("no diagnostics means a manifest"))
}

/// The key path and message of a deserialization error: toml prints the path as a last line
/// "in `stages.s.limit`" and keeps it private otherwise.
fn serde_error_keys(err: &toml::de::Error) -> (Vec<String>, String) {
    let text = err.to_string();
    let message = err.message().trim_end().to_string();
    let keys = text
        .lines()
        .last()
        .and_then(|l| l.strip_prefix("in `")?.strip_suffix('`'))
        .map(|path| path.split('.').map(str::to_string).collect())
        .unwrap_or_default();
    (keys, message)
}

/// The location of the value at `keys`, or of the nearest enclosing value that exists (a key
/// with a dot in it ends the walk early, at its table).
fn nearest_loc(root: &Node, keys: &[String]) -> Loc {
    let mut node = root;
    for k in keys {
        match node.get(k) {
            Some(e) => node = &e.node,
            None => break,
        }
    }
    node.loc.clone()
}

/// Parses a duration written as a string: "90m", "1h 30m", "45s".
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim()).map_err(|e| e.to_string())
}

struct Validator<'a> {
    root: &'a Node,
    sources: &'a Sources,
    diags: Vec<Diag>,
    /// Local dataset directories whose tasks need no check (see [`load_trusting`]).
    checked: &'a dyn Fn(&Path) -> bool,
}

/// The registered log parsers, short enough for a help line: the general ones by name, the
/// ports of SWE-bench's parsers counted.
fn parser_names() -> String {
    let (ports, general): (Vec<&str>, Vec<&str>) = crate::parsers::builtin_parser_names()
        .iter()
        .partition(|n| n.starts_with("swebench-"));
    format!(
        "{}, and {} `swebench-*` ports of SWE-bench's own",
        general.join(", "),
        ports.len()
    )
}

/// A template kind's variables, as a template writes them: `{{a}}, {{b}}`.
fn template_variables(kind: TemplateKind) -> String {
    let vars: Vec<String> = kind
        .variables()
        .iter()
        .map(|v| format!("{{{{{v}}}}}"))
        .collect();
    vars.join(", ")
}

fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str> + Clone) -> String {
    let all: Vec<&str> = candidates.clone().into_iter().collect();
    match suggest(word, candidates) {
        Some(near) => format!("did you mean `{near}`? known: {}", all.join(", ")),
        None if all.is_empty() => "there are none defined".to_string(),
        None => format!("known: {}", all.join(", ")),
    }
}

impl Validator<'_> {
    /// The location of the value at `path`, or of the nearest enclosing value.
    fn loc(&self, path: &[&str]) -> Loc {
        for n in (0..=path.len()).rev() {
            if n == 0 {
                return self.root.loc.clone();
            }
            if let Some(e) = self.root.lookup(&path[..n]) {
                return e.node.loc.clone();
            }
        }
        self.root.loc.clone()
    }

    /// The location of item `i` of the array at `path`.
    fn item_loc(&self, path: &[&str], i: usize) -> Loc {
        match self.root.lookup(path).map(|e| &e.node.value) {
            Some(Value::Array(items)) if i < items.len() => items[i].loc.clone(),
            _ => self.loc(path),
        }
    }

    fn dir_of(&self, loc: &Loc) -> PathBuf {
        self.sources
            .path(loc.file)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }

    /// Resolves a path value against the directory of the file that wrote it.
    fn path(&self, value: &str, at: &[&str]) -> PathBuf {
        let loc = self.loc(at);
        let p = Path::new(value);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.dir_of(&loc).join(p)
        }
    }

    fn err(&mut self, code: &'static str, message: String, loc: Loc, label: &str, help: String) {
        self.diags
            .push(Diag::new(code, message, loc, label).help(help));
    }

    /// Checks a handlebars template at `at`: it compiles, and every variable it reads is one
    /// that `kind` is rendered with (a typo would otherwise render as nothing, or fail every run).
    fn template(&mut self, text: &str, kind: TemplateKind, at: &[&str]) {
        let key = at.join(".");
        let template = match handlebars::Template::compile(text) {
            Ok(t) => t,
            Err(e) => {
                self.err(
                    "manifest::template",
                    format!("`{key}` is not a valid template: {e}"),
                    self.loc(at),
                    "bad template",
                    format!(
                        "handlebars syntax; {} reads {}",
                        kind.describe(),
                        template_variables(kind)
                    ),
                );
                return;
            }
        };
        for var in crate::harness::template::unknown_variables(&template, kind) {
            let near = suggest(&var, kind.variables().iter().copied())
                .map(|n| format!("did you mean `{{{{{n}}}}}`? "))
                .unwrap_or_default();
            self.err(
                "manifest::template",
                format!(
                    "`{key}` uses `{var}`, which is not a variable of {}",
                    kind.describe()
                ),
                self.loc(at),
                &format!("unknown variable `{var}`"),
                format!(
                    "{near}{} reads {}",
                    kind.describe(),
                    template_variables(kind)
                ),
            );
        }
    }

    fn duration(&mut self, value: Option<&String>, default: Duration, at: &[&str]) -> Duration {
        let Some(s) = value else {
            return default;
        };
        match parse_duration(s) {
            Ok(d) if !d.is_zero() => d,
            Ok(_) => {
                self.err(
                    "manifest::duration",
                    format!("`{}` must be longer than zero", at.last().unwrap_or(&"")),
                    self.loc(at),
                    "zero duration",
                    "write a duration such as \"90m\", \"1h 30m\" or \"45s\"".into(),
                );
                default
            }
            Err(e) => {
                self.err(
                    "manifest::duration",
                    format!("invalid duration `{s}`: {e}"),
                    self.loc(at),
                    "not a duration",
                    "write a duration such as \"90m\", \"1h 30m\" or \"45s\"".into(),
                );
                default
            }
        }
    }

    fn manifest(&mut self, file: ManifestFile, resolved: toml::Value) -> Option<Manifest> {
        let ManifestFile {
            version,
            name,
            description,
            extends: _,
            backend,
            limits,
            cache,
            execution,
            store,
            datasets,
            stages,
            teams,
            harnesses,
            prompts,
            pricing,
        } = file;
        if version != 1 {
            self.err(
                "manifest::version",
                format!("unsupported manifest version {version}"),
                self.loc(&["version"]),
                "unsupported",
                "this bench reads `version = 1`".into(),
            );
        }
        let path = self.sources.path(self.root.loc.file).clone();
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let name = name.unwrap_or_else(|| {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "manifest".into())
        });
        let backend = self.backend(backend);
        let limits = self.limits(limits);
        let cache = self.cache(cache);
        let execution = self.execution(execution, &cache, &dir);
        let keep_runs = store
            .and_then(|StoreFile { keep_runs }| keep_runs)
            .map_or(super::model::DEFAULT_KEEP_RUNS, |n| n as usize);
        let datasets = datasets
            .into_iter()
            .filter_map(|(n, d)| self.dataset(&n, d).map(|d| (n, d)))
            .collect::<BTreeMap<_, _>>();
        let harnesses = self.harnesses(harnesses);
        let teams = teams
            .into_iter()
            .filter_map(|(n, t)| self.team(&n, t, &harnesses).map(|t| (n, t)))
            .collect::<BTreeMap<_, _>>();
        let known_teams: BTreeSet<String> = self
            .root
            .get("teams")
            .and_then(|e| match &e.node.value {
                Value::Table(t) => Some(t.keys().cloned().collect()),
                _ => None,
            })
            .unwrap_or_default();
        let stages = stages
            .into_iter()
            .filter_map(|(n, s)| {
                self.stage(&n, s, &datasets, &known_teams, &name, &dir)
                    .map(|s| (n, s))
            })
            .collect::<BTreeMap<_, _>>();
        let stage_order = self.stage_graph(&stages);
        self.baselines(&stages, &known_teams);
        self.report_dirs(&stages);
        let pricing = self.pricing(pricing);
        let prompts = self.prompts(prompts);
        let canonical = serde_json::to_vec(&resolved).expect("toml values serialize as JSON");
        let hash = blake3::hash(&canonical).to_hex().to_string();
        let files = (0..)
            .map_while(|i| {
                (i <= self.root.loc.file || i == 0).then(|| self.sources.path(i).clone())
            })
            .collect();
        if !self.diags.is_empty() {
            return None;
        }
        Some(Manifest {
            path,
            dir,
            name,
            description,
            backend,
            limits,
            cache,
            execution,
            keep_runs,
            datasets,
            stages,
            stage_order,
            teams,
            harnesses,
            prompts,
            pricing,
            resolved,
            hash,
            files,
        })
    }

    /// The `[prompts]` table: each template given is checked for the variables its kind may
    /// read (at `prompts.<kind>`), and each one not given is the default of its kind.
    fn prompts(&mut self, prompts: Option<PromptsFile>) -> Prompts {
        let prompts = prompts.unwrap_or(PromptsFile {
            instruction: None,
            review: None,
            fix: None,
            judge: None,
        });
        for (t, k, kind) in [
            (
                &prompts.instruction,
                "instruction",
                TemplateKind::Instruction,
            ),
            (&prompts.review, "review", TemplateKind::Review),
            (&prompts.fix, "fix", TemplateKind::Fix),
            (&prompts.judge, "judge", TemplateKind::Judge),
        ] {
            if let Some(t) = t {
                self.template(t, kind, &["prompts", k]);
            }
        }
        Prompts {
            instruction: prompts
                .instruction
                .unwrap_or_else(|| DEFAULT_INSTRUCTION.to_string()),
            review: prompts.review.unwrap_or_else(|| DEFAULT_REVIEW.to_string()),
            fix: prompts.fix.unwrap_or_else(|| DEFAULT_FIX.to_string()),
            judge: prompts.judge.unwrap_or_else(|| DEFAULT_JUDGE.to_string()),
        }
    }

    fn backend(&mut self, b: Option<BackendFile>) -> Backend {
        let BackendFile {
            kind,
            cpus,
            memory,
            pids,
            host,
            hosts,
            egress,
        } = b.unwrap_or(BackendFile {
            kind: None,
            cpus: None,
            memory: None,
            pids: None,
            host: None,
            hosts: None,
            egress: None,
        });
        let hosts = self.docker_hosts(host.is_some(), hosts);
        if !hosts.is_empty() && kind != Some(BackendKindFile::Docker) {
            self.err(
                "manifest::backend",
                "`[backend] hosts` is set but the backend is not docker".into(),
                self.loc(&["backend", "hosts"]),
                "docker only",
                "set `kind = \"docker\"` in `[backend]`, or remove `hosts`".into(),
            );
        }
        let egress_allowlist = match egress.as_deref() {
            None | Some("allowlist") => true,
            Some("open") => false,
            Some(other) => {
                self.err(
                    "manifest::backend",
                    format!("unknown egress policy `{other}`"),
                    self.loc(&["backend", "egress"]),
                    "not a policy",
                    "use `egress = \"allowlist\"` (agents reach only their harness's endpoints) or `\"open\"`".into(),
                );
                true
            }
        };
        let memory_bytes = self.size(
            memory.as_deref(),
            &["backend", "memory"],
            16 * 1024 * 1024 * 1024,
            "\"16GiB\", \"512MiB\" or \"8GB\"",
        );
        if let Some(c) = cpus
            && !(c > 0.0 && c.is_finite())
        {
            self.err(
                "manifest::range",
                format!("`cpus` must be a positive number, found {c}"),
                self.loc(&["backend", "cpus"]),
                "out of range",
                "use e.g. `cpus = 4`".into(),
            );
        }
        Backend {
            kind: match kind {
                Some(BackendKindFile::Docker) => BackendKind::Docker,
                _ => BackendKind::Local,
            },
            cpus: cpus.unwrap_or(4.0),
            memory_bytes,
            pids: pids.unwrap_or(4096),
            host,
            hosts,
            egress_allowlist,
            images: Default::default(),
        }
    }

    /// `[backend] hosts`: each a unix, tcp (TLS with all of ca, cert and key, or none) or ssh
    /// address, given once, with positive capacities; not with `host`.
    fn docker_hosts(
        &mut self,
        has_host: bool,
        hosts: Option<Vec<DockerHostFile>>,
    ) -> Vec<DockerHostSpec> {
        let Some(hosts) = hosts else {
            return Vec::new();
        };
        let at = ["backend", "hosts"];
        if has_host {
            self.err(
                "manifest::backend",
                "`[backend] host` and `hosts` are both set".into(),
                self.loc(&at),
                "here",
                "list every daemon in `hosts` (a pool) or set the one `host`, not both".into(),
            );
        }
        if hosts.is_empty() {
            self.err(
                "manifest::backend",
                "`[backend] hosts` is empty".into(),
                self.loc(&at),
                "no hosts",
                "list at least one daemon, e.g. `hosts = [{ url = \"unix:///var/run/docker.sock\" }]`, or remove `hosts`".into(),
            );
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        for (i, h) in hosts.into_iter().enumerate() {
            let loc = self.item_loc(&at, i);
            let url = h.url.trim().to_string();
            let scheme = url.split("://").next().unwrap_or("");
            let rest = url.split_once("://").map_or("", |(_, r)| r);
            if !matches!(scheme, "unix" | "tcp" | "ssh") || rest.is_empty() || !url.contains("://")
            {
                self.err(
                    "manifest::backend",
                    format!("unsupported Docker address `{url}` in `[backend] hosts`"),
                    loc.clone(),
                    "not a daemon address",
                    "use unix:///path/docker.sock, tcp://host:port or ssh://[user@]host[:port]"
                        .into(),
                );
            }
            if !seen.insert(url.clone()) {
                self.err(
                    "manifest::backend",
                    format!("`{url}` is listed twice in `[backend] hosts`"),
                    loc.clone(),
                    "duplicate",
                    "list each daemon once; give it more `containers` instead".into(),
                );
            }
            if h.containers == Some(0) {
                self.err(
                    "manifest::range",
                    format!("host `{url}`: `containers` must be at least 1"),
                    loc.clone(),
                    "zero",
                    "a host of zero containers would never run anything; remove it instead".into(),
                );
            }
            if let Some(c) = h.cpus
                && !(c > 0.0 && c.is_finite())
            {
                self.err(
                    "manifest::range",
                    format!("host `{url}`: `cpus` must be a positive number, found {c}"),
                    loc.clone(),
                    "out of range",
                    "use e.g. `cpus = 16`, or leave it out to use the daemon's CPU count".into(),
                );
            }
            let item = i.to_string();
            let tls = match (h.ca, h.cert, h.key) {
                (None, None, None) => None,
                (Some(ca), Some(cert), Some(key)) if scheme == "tcp" => Some(DockerTls {
                    ca: self.path(&ca, &["backend", "hosts", &item, "ca"]),
                    cert: self.path(&cert, &["backend", "hosts", &item, "cert"]),
                    key: self.path(&key, &["backend", "hosts", &item, "key"]),
                }),
                (Some(_), Some(_), Some(_)) => {
                    self.err(
                        "manifest::backend",
                        format!("host `{url}`: TLS files are only for tcp:// addresses"),
                        loc.clone(),
                        "not tcp",
                        "remove `ca`, `cert` and `key`, or use a tcp://host:port address".into(),
                    );
                    None
                }
                _ => {
                    self.err(
                        "manifest::backend",
                        format!("host `{url}`: TLS needs all of `ca`, `cert` and `key`"),
                        loc.clone(),
                        "incomplete TLS",
                        "give the three PEM files (as DOCKER_CERT_PATH holds ca.pem, cert.pem and key.pem), or none for a plain tcp daemon".into(),
                    );
                    None
                }
            };
            out.push(DockerHostSpec {
                url,
                containers: h.containers.map(|c| c as usize),
                cpus: h.cpus,
                tls,
            });
        }
        out
    }

    /// A size in bytes (`"16GiB"`), `default` when absent; anything else than a positive size
    /// is an error at `at` (then 0), its help showing `examples`.
    fn size(&mut self, text: Option<&str>, at: &[&str], default: u64, examples: &str) -> u64 {
        let Some(m) = text else {
            return default;
        };
        match m.trim().parse::<bytesize::ByteSize>() {
            Ok(b) if b.as_u64() > 0 => b.as_u64(),
            _ => {
                self.err(
                    "manifest::size",
                    format!("invalid size `{m}`"),
                    self.loc(at),
                    "not a size",
                    format!("write a size such as {examples}"),
                );
                0
            }
        }
    }

    fn cache(&mut self, c: Option<CacheFile>) -> Cache {
        let Some(CacheFile {
            remote,
            trust,
            push,
            max_object_size,
        }) = c
        else {
            return Cache::default();
        };
        if let Some(r) = &remote {
            let scheme = r.split_once("://").map(|(s, _)| s);
            let known = [
                "s3", "s3a", "gs", "az", "azure", "abfs", "abfss", "http", "https", "file",
            ];
            let file_host = url::Url::parse(r)
                .ok()
                .filter(|u| u.scheme() == "file")
                .and_then(|u| {
                    u.host_str()
                        .filter(|h| !h.is_empty() && *h != "localhost")
                        .map(|h| format!("file:///{h}{}", u.path()))
                });
            if let Some(fixed) = file_host {
                self.err(
                    "manifest::cache",
                    format!("`cache.remote` `{r}` names a host, not a local directory"),
                    self.loc(&["cache", "remote"]),
                    "a host, not a directory",
                    format!("a local directory takes three slashes: write `{fixed}`"),
                );
            } else if !scheme.is_some_and(|s| known.contains(&s)) || url::Url::parse(r).is_err() {
                self.err(
                    "manifest::cache",
                    format!("`cache.remote` is not a remote cache URL: `{r}`"),
                    self.loc(&["cache", "remote"]),
                    "not a cache URL",
                    "write s3://bucket/prefix, gs://bucket/prefix, az://container/prefix, https://host/path (WebDAV) or file:///dir".into(),
                );
            }
        }
        for (i, t) in trust.iter().enumerate() {
            if let Err(why) = public_key_shape(t) {
                self.err(
                    "manifest::cache",
                    format!("`cache.trust` entry `{t}` is not a public key: {why}"),
                    self.item_loc(&["cache", "trust"], i),
                    "not a public key",
                    "paste the `ed25519:...` line `bench cache keygen` printed on the machine to trust".into(),
                );
            }
        }
        if remote.is_none() && !trust.is_empty() {
            self.err(
                "manifest::cache",
                "`cache.trust` is set but `cache.remote` is not".into(),
                self.loc(&["cache", "trust"]),
                "no remote",
                "add `remote = \"s3://bucket/prefix\"` (or another URL) to `[cache]`".into(),
            );
        }
        let max_object_bytes = self.size(
            max_object_size.as_deref(),
            &["cache", "max_object_size"],
            super::model::DEFAULT_MAX_OBJECT_BYTES,
            "\"1GiB\" or \"512MiB\"",
        );
        Cache {
            remote,
            trust,
            push: push.unwrap_or(true),
            max_object_bytes,
        }
    }

    fn execution(&mut self, e: Option<ExecutionFile>, cache: &Cache, dir: &Path) -> Execution {
        let Some(e) = e else {
            return Execution::Local;
        };
        if e.engine != Some(ExecutionEngineFile::Slurm) {
            return Execution::Local;
        }
        if cache.remote.is_none() {
            self.err(
                "manifest::execution",
                "`execution.engine = \"slurm\"` needs a shared cache: its jobs read their inputs and send their results through it".into(),
                self.loc(&["execution", "engine"]),
                "no `[cache] remote`",
                "add `[cache]` with `remote = \"file:///shared/bench-cache\"` (a directory every cluster node and this machine see) and the workers' public key in `trust`".into(),
            );
        } else if cache.trust.is_empty() {
            self.err(
                "manifest::execution",
                "`execution.engine = \"slurm\"` with an empty `[cache] trust`: every record a worker uploads would be refused".into(),
                self.loc(&["execution", "engine"]),
                "no trusted key",
                "add the workers' public key (`bench cache keygen` prints it) to `[cache] trust`".into(),
            );
        }
        let positive = |v: &mut Self, n: Option<u32>, key: &str, default: u32| match n {
            Some(0) => {
                v.err(
                    "manifest::execution",
                    format!("`execution.{key}` must be at least 1"),
                    v.loc(&["execution", key]),
                    "zero",
                    format!("remove it for the default ({default}), or write a positive number"),
                );
                default
            }
            n => n.unwrap_or(default),
        };
        let max_jobs = positive(self, e.max_jobs, "max_jobs", 64) as usize;
        let attempts = positive(self, e.attempts, "attempts", 3);
        let memory_mb = e
            .memory
            .as_deref()
            .map(|m| self.size(Some(m), &["execution", "memory"], 0, "\"8GiB\"") / (1024 * 1024));
        let time_limit = e
            .time_limit
            .as_ref()
            .map(|t| self.duration(Some(t), Duration::ZERO, &["execution", "time_limit"]));
        let path = |p: &Option<String>| p.as_ref().map(|p| dir.join(p));
        Execution::Slurm(Box::new(SlurmExecution {
            partition: e.partition,
            account: e.account,
            qos: e.qos,
            sbatch: e.sbatch,
            max_jobs,
            attempts,
            cpus: e.cpus,
            memory_mb,
            time_limit,
            bench: path(&e.bench),
            spool: path(&e.spool),
            worker_store: e.worker_store.map(PathBuf::from),
        }))
    }

    fn limits(&mut self, l: Option<LimitsFile>) -> Limits {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let (jobs, containers, agents, pulls) = match l {
            Some(LimitsFile {
                jobs,
                containers,
                agents,
                pulls,
            }) => (jobs, containers, agents, pulls),
            None => (None, None, None, None),
        };
        for (v, k) in [
            (jobs, "jobs"),
            (containers, "containers"),
            (agents, "agents"),
            (pulls, "pulls"),
        ] {
            if v == Some(0) {
                self.err(
                    "manifest::range",
                    format!("`limits.{k}` must be at least 1"),
                    self.loc(&["limits", k]),
                    "zero",
                    "a pool of zero slots would never run anything".into(),
                );
            }
        }
        Limits {
            jobs: jobs.map_or(cpus, |j| j as usize),
            containers: containers.map_or(8, |c| c as usize),
            agents: agents.map_or(4, |a| a as usize),
            pulls: pulls.map_or(crate::backend::pull::DEFAULT_CONCURRENT_PULLS, |p| {
                p as usize
            }),
        }
    }

    fn dataset(&mut self, name: &str, d: DatasetFile) -> Option<Dataset> {
        let DatasetFile {
            source,
            format,
            path,
            repo,
            revision,
            files,
            run_scripts,
            grade_network,
        } = d;
        let at = |k: &'static str| ["datasets", name, k];
        let (mut fmt, mut repo, mut files, mut revision) = (format, repo, files, revision);
        let mut sha256 = BTreeMap::new();
        if let Some(src) = &source {
            match preset(src) {
                Some(p) => {
                    fmt.get_or_insert_with(|| p.format.to_string());
                    // A preset's own pin applies when the manifest pins nothing else: its
                    // revision, its files and their sha256 (checked when fetched).
                    let own_repo = repo.as_deref().is_none_or(|r| r == p.repo);
                    if let Some(pin) = &p.pin
                        && own_repo
                        && revision.as_deref().is_none_or(|r| r == pin.revision)
                    {
                        revision = Some(pin.revision.to_string());
                        if files.is_none() {
                            files = Some(pin.files.iter().map(|(f, _)| f.to_string()).collect());
                            sha256 = pin
                                .files
                                .iter()
                                .map(|(f, h)| (f.to_string(), h.to_string()))
                                .collect();
                        }
                    }
                    repo.get_or_insert_with(|| p.repo.to_string());
                    if files.is_none() && !p.langs.is_empty() {
                        files = Some(
                            p.langs
                                .iter()
                                .map(|l| format!("data/{l}-00000-of-00001.parquet"))
                                .collect(),
                        );
                    }
                }
                None => {
                    self.err(
                        "manifest::dataset",
                        format!("unknown dataset source `{src}`"),
                        self.loc(&at("source")),
                        "unknown source",
                        did_you_mean(src, PRESETS.iter().map(|p| p.name)),
                    );
                    return None;
                }
            }
        }
        let Some(fmt_name) = fmt else {
            self.err(
                "manifest::dataset",
                format!("dataset `{name}` names no format"),
                self.loc(&["datasets", name]),
                "no `format` or `source`",
                "add `format = \"local\"` with a `path`, or a known `source`".into(),
            );
            return None;
        };
        let Some(format) = crate::datasets::format_named(&fmt_name).map(|f| f.id()) else {
            self.err(
                "manifest::dataset",
                format!("unknown dataset format `{fmt_name}`"),
                self.loc(&at("format")),
                "unknown format",
                did_you_mean(&fmt_name, crate::datasets::format_names()),
            );
            return None;
        };
        let (source, commit) =
            self.dataset_source(name, format, (path, repo, revision), files, sha256)?;
        if matches!(
            format,
            DatasetFormat::Local | DatasetFormat::BrainBench | DatasetFormat::Harbor
        ) && !matches!(source, DatasetSource::Path(_))
        {
            self.err(
                "manifest::dataset",
                format!("a `{fmt_name}` dataset is read from a `path`"),
                self.loc(&["datasets", name]),
                "no `path`",
                "add `path = \"tasks\"`".into(),
            );
        }
        if let (DatasetFormat::Local, DatasetSource::Path(dir)) = (format, &source)
            && !(self.checked)(dir)
        {
            self.local_tasks(name, dir);
        }
        let run_scripts = self.run_scripts(name, format, run_scripts);
        Some(Dataset {
            name: name.to_string(),
            format,
            source,
            run_scripts,
            grade_network: grade_network.unwrap_or(false),
            commit,
        })
    }

    /// Where the dataset `name` (of `format`) is read from, and the commit its checkout is
    /// pinned to: a local `path` (a git checkout of Harbor tasks with a `revision`) or a Hub
    /// `repo` at a `revision` with its `files` (and their `sha256`, a preset's own pin). `None`
    /// (reported) when neither is given whole or the path is missing.
    fn dataset_source(
        &mut self,
        name: &str,
        format: DatasetFormat,
        (path, repo, revision): (Option<String>, Option<String>, Option<String>),
        files: Option<Vec<String>>,
        sha256: BTreeMap<String, String>,
    ) -> Option<(DatasetSource, Option<String>)> {
        let at = |k: &'static str| ["datasets", name, k];
        let mut commit = None;
        let source = match (path, repo, revision) {
            (Some(p), None, Some(rev)) if format == DatasetFormat::Harbor => {
                let abs = self.path(&p, &at("path"));
                if rev.len() != 40 || !rev.chars().all(|c| c.is_ascii_hexdigit()) {
                    self.err(
                        "manifest::dataset",
                        format!("revision `{rev}` is not a commit sha"),
                        self.loc(&at("revision")),
                        "not a 40-hex commit sha",
                        "pin the task repository to an exact commit, not a branch or tag".into(),
                    );
                }
                if !abs.join(".git").exists() {
                    self.err(
                        "manifest::dataset",
                        format!("{} is not a git repository", abs.display()),
                        self.loc(&at("path")),
                        "no .git here",
                        "a `revision` pins a git checkout of Harbor tasks; without one, `path` is read as it is".into(),
                    );
                    return None;
                }
                commit = Some(rev);
                DatasetSource::Path(abs)
            }
            (Some(p), None, None) => {
                let abs = self.path(&p, &at("path"));
                if !abs.exists() {
                    self.err(
                        "manifest::dataset",
                        format!("dataset path {} does not exist", abs.display()),
                        self.loc(&at("path")),
                        "no such file or directory",
                        "paths are relative to the manifest that writes them".into(),
                    );
                    return None;
                }
                DatasetSource::Path(abs)
            }
            (None, Some(repo), Some(revision)) => {
                if revision.len() != 40 || !revision.chars().all(|c| c.is_ascii_hexdigit()) {
                    self.err(
                        "manifest::dataset",
                        format!("revision `{revision}` is not a commit sha"),
                        self.loc(&at("revision")),
                        "not a 40-hex commit sha",
                        "pin the dataset to an exact commit, not a branch or tag".into(),
                    );
                }
                DatasetSource::Hub {
                    repo,
                    revision,
                    files: files.unwrap_or_default(),
                    sha256,
                }
            }
            (None, Some(_), None) => {
                self.err(
                    "manifest::dataset",
                    format!("dataset `{name}` is not pinned to a revision"),
                    self.loc(&["datasets", name]),
                    "no `revision`",
                    "add `revision = \"<commit sha>\"` so the sample is reproducible".into(),
                );
                return None;
            }
            _ => {
                self.err(
                    "manifest::dataset",
                    format!("dataset `{name}` needs either `path` or `repo` + `revision`"),
                    self.loc(&["datasets", name]),
                    "no source",
                    "a local dataset: `path = \"tasks\"`; a Hub dataset: `source` or `repo`, and `revision`".into(),
                );
                return None;
            }
        };
        Some((source, commit))
    }

    /// Reports what the tasks of the local dataset `name` at `dir` hold that no task can: an
    /// empty `FAIL_TO_PASS`, an unsupported `language`, a `log_parser` no parser is registered
    /// under (found here, not at grading after every solve has run).
    fn local_tasks(&mut self, name: &str, dir: &Path) {
        for task in crate::tasks::check_local_dir(dir) {
            let parser = task.log_parser.trim();
            let unknown = crate::parsers::is_builtin(parser)
                .then(|| crate::parsers::parse_log(parser, ""))
                .and_then(|r| match r {
                    Err(crate::parsers::ParserError::Unknown { suggestion, .. }) => {
                        Some(suggestion)
                    }
                    _ => None,
                });
            let parser_problem = unknown.map(|suggestion| {
                let near = suggestion
                    .map(|s| format!("did you mean `{s}`? "))
                    .unwrap_or_default();
                task.log_parser_error(
                    format!("`{parser}` is not a registered log parser"),
                    format!("{near}the parsers: {}", parser_names()),
                )
            });
            for problem in task.problems.into_iter().chain(parser_problem) {
                let crate::tasks::LocalTaskError::Field {
                    path,
                    line,
                    column,
                    key,
                    problem,
                    help,
                } = problem
                else {
                    continue;
                };
                self.err(
                    "manifest::task",
                    format!("{}:{line}:{column}: `{key}` {problem}", path.display()),
                    self.loc(&["datasets", name, "path"]),
                    &format!("a task of dataset `{name}`"),
                    help,
                );
            }
        }
    }

    /// A `swe-bench-pro` dataset's harness checkout: required there, refused elsewhere; the
    /// directory must hold `run_scripts/` (each task's files are checked when rows are read).
    fn run_scripts(
        &mut self,
        name: &str,
        format: DatasetFormat,
        run_scripts: Option<String>,
    ) -> Option<std::path::PathBuf> {
        let at = ["datasets", name, "run_scripts"];
        match (format, run_scripts) {
            (DatasetFormat::SweBenchPro, None) => {
                self.err(
                    "manifest::dataset",
                    format!("dataset `{name}` (swe-bench-pro) names no harness checkout"),
                    self.loc(&["datasets", name]),
                    "no `run_scripts`",
                    "add `run_scripts = \"path/to/SWE-bench_Pro-os\"`, a checkout of scaleapi/SWE-bench_Pro-os at a pinned commit (its run_scripts/<instance_id>/ grade each task)".into(),
                );
                None
            }
            (DatasetFormat::SweBenchPro, Some(p)) => {
                let abs = self.path(&p, &at);
                if !abs.join("run_scripts").is_dir() {
                    self.err(
                        "manifest::dataset",
                        format!("{} holds no run_scripts/ directory", abs.display()),
                        self.loc(&at),
                        "not a SWE-bench_Pro-os checkout",
                        "point `run_scripts` at a checkout of scaleapi/SWE-bench_Pro-os (relative to this manifest)".into(),
                    );
                    return None;
                }
                Some(abs)
            }
            (_, Some(_)) => {
                self.err(
                    "manifest::dataset",
                    format!("`run_scripts` is for `swe-bench-pro` datasets, not `{name}`"),
                    self.loc(&at),
                    "not a swe-bench-pro dataset",
                    "remove `run_scripts`".into(),
                );
                None
            }
            (_, None) => None,
        }
    }

    fn harnesses(&mut self, defs: BTreeMap<String, HarnessFile>) -> BTreeMap<String, Harness> {
        let builtins: BTreeMap<String, HarnessFile> =
            toml::from_str(crate::harness::BUILTIN_HARNESSES).expect("built-in harnesses parse");
        let mut out = BTreeMap::new();
        let names: BTreeSet<String> = builtins.keys().chain(defs.keys()).cloned().collect();
        for name in names {
            let from_manifest = defs.contains_key(&name);
            let merged = match (builtins.get(&name).cloned(), defs.get(&name).cloned()) {
                (Some(b), Some(o)) => HarnessFile {
                    kind: o.kind.or(b.kind),
                    command: o.command.or(b.command),
                    script: o.script,
                    files: o.files,
                    env: o.env.or(b.env),
                    usage: o.usage.or(b.usage),
                    install: o.install.or(b.install),
                    install_files: o.install_files.or(b.install_files),
                    version: o.version.or(b.version),
                    own_files: o.own_files.or(b.own_files),
                    endpoints: o.endpoints.or(b.endpoints),
                    base_url: o.base_url.or(b.base_url),
                    caches: o.caches.or(b.caches),
                    runtime: o.runtime.or(b.runtime),
                    path: o.path,
                },
                (Some(b), None) => b,
                (None, Some(o)) => o,
                (None, None) => continue,
            };
            if let Some(h) = self.harness(&name, merged, from_manifest) {
                out.insert(name, h);
            }
        }
        out
    }

    fn harness(&mut self, name: &str, h: HarnessFile, from_manifest: bool) -> Option<Harness> {
        let HarnessFile {
            kind,
            command,
            script,
            files,
            env,
            usage,
            install,
            install_files,
            version,
            own_files,
            endpoints,
            base_url,
            caches,
            runtime,
            path,
        } = h;
        let at = |k: &'static str| ["harnesses", name, k];
        let k = self.harness_kind(name, kind)?;
        if k == HarnessKind::Command && command.is_none() {
            self.err(
                "manifest::harness",
                format!("harness `{name}` of kind `command` has no `command`"),
                self.loc(&["harnesses", name]),
                "no `command`",
                "add `command = \"python3 {{script}}\"` (run with sh -c in the workspace)".into(),
            );
        }
        if let Some(c) = &command {
            self.template(c, TemplateKind::Command, &at("command"));
        }
        let usage = match usage.as_deref().map(UsageFormat::parse) {
            None => None,
            Some(Ok(u)) => u,
            Some(Err(got)) => {
                self.err(
                    "manifest::harness",
                    format!("unknown usage format `{got}`"),
                    self.loc(&at("usage")),
                    "unknown format",
                    did_you_mean(&got, UsageFormat::NAMES),
                );
                None
            }
        };
        let script = script.map(|s| self.existing_file(&s, &at("script"), "script"));
        let files: Option<Vec<PathBuf>> =
            files.map(|files| self.existing_paths(&files, &at("files"), "harness file"));
        let install_files: Vec<PathBuf> = self.existing_paths(
            &install_files.unwrap_or_default(),
            &at("install_files"),
            "install file",
        );
        if k == HarnessKind::Predictions && path.is_none() {
            self.err(
                "manifest::harness",
                format!("harness `{name}` of kind `predictions` has no `path`"),
                self.loc(&["harnesses", name]),
                "no `path`",
                "add `path = \"preds.jsonl\"` (a SWE-bench predictions file)".into(),
            );
        }
        let path = path.map(|s| self.existing_file(&s, &at("path"), "predictions file"));
        let env = env.unwrap_or_default();
        let endpoints = endpoints.unwrap_or_default();
        self.env_and_endpoints(name, (&env, &endpoints), from_manifest);
        if let Some(url) = &base_url
            && let Err(why) = crate::backend::egress::Endpoint::of_url(url)
        {
            self.err(
                "manifest::harness",
                why,
                self.loc(&at("base_url")),
                "not a base URL",
                "write `http://host:port/path` or `https://host/path`, e.g. \"http://127.0.0.1:4000/v1\"".into(),
            );
        }
        Some(Harness {
            name: name.to_string(),
            kind: k,
            command,
            script,
            files,
            env,
            usage,
            install: install.unwrap_or_default(),
            install_files,
            version,
            own_files: own_files.unwrap_or_default(),
            endpoints,
            base_url,
            caches: caches.unwrap_or_default(),
            runtime: runtime.map(|r| self.runtime(name, r)),
            path,
        })
    }

    /// A harness's `kind`: `None` (reported) when it has none or one bench does not know.
    fn harness_kind(&mut self, name: &str, kind: Option<String>) -> Option<HarnessKind> {
        let at = |k: &'static str| ["harnesses", name, k];
        let Some(kind) = kind else {
            self.err(
                "manifest::harness",
                format!("harness `{name}` has no `kind`"),
                self.loc(&["harnesses", name]),
                "no `kind`",
                "add `kind = \"command\"` (or oracle, nop)".into(),
            );
            return None;
        };
        let Some(k) = HarnessKind::parse(&kind) else {
            self.err(
                "manifest::harness",
                format!("unknown harness kind `{kind}`"),
                self.loc(&at("kind")),
                "unknown kind",
                did_you_mean(&kind, HarnessKind::NAMES),
            );
            return None;
        };
        Some(k)
    }

    /// The file `value` names (written at `at`), reported as `what` when it is not a file.
    fn existing_file(&mut self, value: &str, at: &[&str], what: &str) -> PathBuf {
        let p = self.path(value, at);
        if !p.is_file() {
            self.err(
                "manifest::harness",
                format!("{what} {} does not exist", p.display()),
                self.loc(at),
                "no such file",
                "paths are relative to the manifest that writes them".into(),
            );
        }
        p
    }

    /// The files or directories `values` name (the list at `at`), each reported (as `what`, at
    /// its item) when it does not exist.
    fn existing_paths(&mut self, values: &[String], at: &[&str], what: &str) -> Vec<PathBuf> {
        values
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let p = self.path(s, at);
                if !p.exists() {
                    self.err(
                        "manifest::harness",
                        format!("{what} {} does not exist", p.display()),
                        self.item_loc(at, i),
                        "no such file or directory",
                        "paths are relative to the manifest that writes them".into(),
                    );
                }
                p
            })
            .collect()
    }

    /// Reports a harness's `env` entries that are not variable names and its `endpoints` that
    /// are not `host:port`, at the entry when the harness is the manifest's own (`from_manifest`),
    /// else at the manifest (a built-in harness).
    fn env_and_endpoints(
        &mut self,
        name: &str,
        (env, endpoints): (&[String], &[String]),
        from_manifest: bool,
    ) {
        let at = |k: &'static str| ["harnesses", name, k];
        for (i, var) in env.iter().enumerate() {
            if var.is_empty() || var.contains(['=', ' ']) {
                let loc = if from_manifest {
                    self.item_loc(&at("env"), i)
                } else {
                    self.root.loc.clone()
                };
                self.err(
                    "manifest::harness",
                    format!("`{var}` is not an environment variable name"),
                    loc,
                    "not a name",
                    "list variable names only; values come from your environment".into(),
                );
            }
        }
        for (i, e) in endpoints.iter().enumerate() {
            if let Err(why) = crate::backend::egress::Endpoint::parse(e) {
                let loc = if from_manifest {
                    self.item_loc(&at("endpoints"), i)
                } else {
                    self.root.loc.clone()
                };
                self.err(
                    "manifest::harness",
                    why,
                    loc,
                    "not host:port",
                    "write each endpoint as `host:port`, e.g. \"api.anthropic.com:443\"".into(),
                );
            }
        }
    }

    /// A harness's `runtime` (a tarball unpacked for the agent), each of its name, sha256 and
    /// URL reported when malformed.
    fn runtime(&mut self, name: &str, r: RuntimeFile) -> crate::manifest::Runtime {
        let at = |k: &'static str| ["harnesses", name, k];
        let ok_name = !r.name.is_empty()
            && r.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        let ok_sha = r.sha256.len() == 64 && r.sha256.chars().all(|c| c.is_ascii_hexdigit());
        let ok_url = ["https://", "http://", "file://"]
            .iter()
            .any(|p| r.url.starts_with(p));
        for (ok, what, help) in [
            (ok_name, "name", "letters, digits, `-` and `_`, e.g. `node`"),
            (
                ok_sha,
                "sha256",
                "64 hex digits, from the release's SHASUMS256.txt",
            ),
            (
                ok_url,
                "url",
                "an https://, http:// or file:// URL of the tarball",
            ),
        ] {
            if !ok {
                self.err(
                    "manifest::harness",
                    format!("harness `{name}` has an invalid runtime {what}"),
                    self.loc(&at("runtime")),
                    "invalid runtime",
                    help.into(),
                );
            }
        }
        crate::manifest::Runtime {
            name: r.name,
            url: r.url,
            sha256: r.sha256,
        }
    }

    fn pricing(&mut self, over: BTreeMap<String, PriceFile>) -> BTreeMap<String, Price> {
        let builtins: BTreeMap<String, PriceFile> =
            toml::from_str(crate::harness::BUILTIN_PRICING).expect("built-in pricing parses");
        let mut out = BTreeMap::new();
        for (model, p) in builtins.into_iter().chain(over) {
            for (v, k) in [
                (Some(p.input), "input"),
                (p.cached_input, "cached_input"),
                (p.cache_write, "cache_write"),
                (Some(p.output), "output"),
            ] {
                if let Some(v) = v
                    && !(v >= 0.0 && v.is_finite())
                {
                    self.err(
                        "manifest::range",
                        format!("price `{k}` of `{model}` must be a non-negative number"),
                        self.loc(&["pricing", &model, k]),
                        "out of range",
                        "dollars per million tokens, e.g. `input = 0.10`".into(),
                    );
                }
            }
            out.insert(
                model,
                Price {
                    input: p.input,
                    cached_input: p.cached_input.unwrap_or(p.input),
                    cache_write: p.cache_write.unwrap_or(p.input),
                    output: p.output,
                },
            );
        }
        out
    }

    fn agent(
        &mut self,
        a: &AgentFile,
        at: &[&str],
        harnesses: &BTreeMap<String, Harness>,
    ) -> Option<Agent> {
        let agent = match a {
            AgentFile::Shorthand(s) => parse_agent(s),
            AgentFile::Table(t) => Agent {
                harness: t.harness.clone(),
                model: t.model.clone(),
            },
        };
        self.check_agent(agent, self.loc(at), harnesses)
    }

    fn check_agent(
        &mut self,
        agent: Agent,
        loc: Loc,
        harnesses: &BTreeMap<String, Harness>,
    ) -> Option<Agent> {
        match harnesses.get(&agent.harness) {
            Some(_) => Some(agent),
            None if agent.harness == "command" => {
                self.err(
                    "manifest::harness",
                    "the `command` harness needs a definition".to_string(),
                    loc,
                    "no command to run",
                    "define `[harnesses.NAME]` with `kind = \"command\"` and a `command`, and name it here".into(),
                );
                None
            }
            None => {
                self.err(
                    "manifest::harness",
                    format!("unknown harness `{}`", agent.harness),
                    loc,
                    "unknown harness",
                    did_you_mean(&agent.harness, harnesses.keys().map(String::as_str)),
                );
                None
            }
        }
    }

    fn team(
        &mut self,
        name: &str,
        t: TeamEntry,
        harnesses: &BTreeMap<String, Harness>,
    ) -> Option<Team> {
        let at = ["teams", name];
        let topology = match t {
            TeamEntry::Shorthand(s) => {
                let loc = self.loc(&at);
                match parse_team_shorthand(&s) {
                    Ok(top) => {
                        let mut ok = true;
                        for a in top.agents() {
                            ok &= self
                                .check_agent(a.clone(), loc.clone(), harnesses)
                                .is_some();
                        }
                        ok.then_some(top)?
                    }
                    Err(e) => {
                        self.err(
                            "manifest::team",
                            format!("invalid team `{name}`: {e}"),
                            loc,
                            "bad team string",
                            "write e.g. \"solo:worker=codex@gpt-6-luna\", \"review:coder=h@m,reviewer=h@m,rounds=1\" or \"best:workers=h@m+h@m,judge=h@m\"".into(),
                        );
                        return None;
                    }
                }
            }
            TeamEntry::Table(TeamFile::Solo { worker }) => Topology::Solo {
                worker: self.agent(&worker, &["teams", name, "worker"], harnesses)?,
            },
            TeamEntry::Table(TeamFile::Review {
                coder,
                reviewer,
                rounds,
            }) => {
                let coder = self.agent(&coder, &["teams", name, "coder"], harnesses);
                let reviewer = self.agent(&reviewer, &["teams", name, "reviewer"], harnesses);
                if rounds == Some(0) {
                    self.err(
                        "manifest::range",
                        "`rounds` must be at least 1".into(),
                        self.loc(&["teams", name, "rounds"]),
                        "zero",
                        "use `rounds = 1` for a single review".into(),
                    );
                }
                Topology::Review {
                    coder: coder?,
                    reviewer: reviewer?,
                    rounds: rounds.unwrap_or(3),
                }
            }
            TeamEntry::Table(TeamFile::BestOf { workers, judge }) => {
                let ws: Vec<Option<Agent>> = workers
                    .iter()
                    .enumerate()
                    .map(|(i, w)| {
                        let loc = self.item_loc(&["teams", name, "workers"], i);
                        let agent = match w {
                            AgentFile::Shorthand(s) => parse_agent(s),
                            AgentFile::Table(t) => Agent {
                                harness: t.harness.clone(),
                                model: t.model.clone(),
                            },
                        };
                        self.check_agent(agent, loc, harnesses)
                    })
                    .collect();
                let judge = self.agent(&judge, &["teams", name, "judge"], harnesses);
                if workers.len() < 2 {
                    self.err(
                        "manifest::team",
                        "a best-of team needs at least two workers".into(),
                        self.loc(&["teams", name, "workers"]),
                        "too few workers",
                        "list two or more agents, or use `topology = \"solo\"`".into(),
                    );
                }
                Topology::BestOf {
                    workers: ws.into_iter().collect::<Option<Vec<_>>>()?,
                    judge: judge?,
                }
            }
        };
        Some(Team {
            name: name.to_string(),
            topology,
        })
    }

    /// The stage `name` of `[stages]`: its name checked, then the fields of its kind.
    fn stage(
        &mut self,
        name: &str,
        s: StageFile,
        datasets: &BTreeMap<String, Dataset>,
        teams: &BTreeSet<String>,
        manifest_name: &str,
        dir: &Path,
    ) -> Option<Stage> {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            self.err(
                "manifest::stage",
                format!("invalid stage name `{name}`"),
                self.loc(&["stages", name]),
                "invalid name",
                "use letters, digits, `-` and `_`".into(),
            );
        }
        let at = |k: &'static str| ["stages", name, k];
        let (needs, kind) = match s {
            StageFile::Sample(f) => self.sample_stage(name, f, datasets),
            StageFile::Gold(GoldFile {
                needs,
                empty,
                timeout,
            }) => (
                needs,
                StageKind::Gold(GoldStage {
                    empty: empty.unwrap_or(false),
                    timeout: self.duration(
                        timeout.as_ref(),
                        Duration::from_secs(150 * 60),
                        &at("timeout"),
                    ),
                }),
            ),
            StageFile::Solve(f) => self.solve_stage(name, f, teams),
            StageFile::Grade(GradeFile {
                needs,
                timeout,
                audit,
                confirm,
                harbor,
            }) => (
                needs,
                StageKind::Grade(GradeStage {
                    audit: audit.unwrap_or_default(),
                    confirm: confirm.unwrap_or(false),
                    harbor: harbor.unwrap_or_default(),
                    timeout: self.duration(
                        timeout.as_ref(),
                        Duration::from_secs(150 * 60),
                        &at("timeout"),
                    ),
                }),
            ),
            StageFile::Report(f) => self.report_stage(name, f, manifest_name, dir),
        };
        Some(Stage {
            name: name.to_string(),
            needs,
            kind,
        })
    }

    /// A sample stage: its dataset must be one the manifest defines (a dataset defined but
    /// invalid has its own error); its dates are checked; its lists become sets.
    fn sample_stage(
        &mut self,
        name: &str,
        f: SampleFile,
        datasets: &BTreeMap<String, Dataset>,
    ) -> (Vec<String>, StageKind) {
        let SampleFile {
            needs,
            dataset,
            since,
            until,
            repos,
            languages,
            instance_ids,
            limit,
            seed,
        } = f;
        let at = |k: &'static str| ["stages", name, k];
        if !datasets.contains_key(&dataset) && self.root.lookup(&["datasets", &dataset]).is_none() {
            self.err(
                "manifest::reference",
                format!("stage `{name}` samples unknown dataset `{dataset}`"),
                self.loc(&at("dataset")),
                "unknown dataset",
                did_you_mean(&dataset, datasets.keys().map(String::as_str)),
            );
        }
        let since = since.and_then(|d| self.date(d.0, &at("since")));
        let until = until.and_then(|d| self.date(d.0, &at("until")));
        (
            needs,
            StageKind::Sample(SampleStage {
                dataset,
                filters: SampleFilters {
                    since,
                    until,
                    repos: repos.unwrap_or_default().into_iter().collect(),
                    languages: languages.unwrap_or_default().into_iter().collect(),
                    instance_ids: instance_ids.unwrap_or_default().into_iter().collect(),
                    limit,
                    seed: seed.unwrap_or(0),
                },
            }),
        )
    }

    /// A solve stage: each of its teams defined and listed once, at least one; `replicates` and
    /// `concurrency` at least 1; `max_cost_usd` a non-negative amount.
    fn solve_stage(
        &mut self,
        name: &str,
        f: SolveFile,
        teams: &BTreeSet<String>,
    ) -> (Vec<String>, StageKind) {
        let SolveFile {
            needs,
            teams: stage_teams,
            replicates,
            limit,
            timeout,
            max_cost_usd,
            allow_unpriced,
            concurrency,
        } = f;
        let at = |k: &'static str| ["stages", name, k];
        let mut seen = BTreeSet::new();
        for (i, t) in stage_teams.iter().enumerate() {
            if !teams.contains(t) {
                self.err(
                    "manifest::reference",
                    format!("stage `{name}` runs unknown team `{t}`"),
                    self.item_loc(&at("teams"), i),
                    "unknown team",
                    did_you_mean(t, teams.iter().map(String::as_str)),
                );
            }
            if !seen.insert(t) {
                self.err(
                    "manifest::reference",
                    format!("team `{t}` is listed twice"),
                    self.item_loc(&at("teams"), i),
                    "duplicate",
                    "use `replicates` for repeated attempts".into(),
                );
            }
        }
        if stage_teams.is_empty() {
            self.err(
                "manifest::stage",
                format!("solve stage `{name}` runs no team"),
                self.loc(&at("teams")),
                "empty",
                "name at least one team of `[teams]`".into(),
            );
        }
        for (v, k) in [(replicates, "replicates"), (concurrency, "concurrency")] {
            if v == Some(0) {
                self.err(
                    "manifest::range",
                    format!("`{k}` must be at least 1"),
                    self.loc(&["stages", name, k]),
                    "zero",
                    "remove it for the default".into(),
                );
            }
        }
        if let Some(c) = max_cost_usd
            && !(c >= 0.0 && c.is_finite())
        {
            self.err(
                "manifest::range",
                format!("`max_cost_usd` must be a non-negative amount, found {c}"),
                self.loc(&at("max_cost_usd")),
                "out of range",
                "dollars, e.g. `max_cost_usd = 160`".into(),
            );
        }
        (
            needs,
            StageKind::Solve(SolveStage {
                teams: stage_teams,
                replicates: replicates.unwrap_or(1),
                limit,
                timeout: self.duration(
                    timeout.as_ref(),
                    Duration::from_secs(60 * 60),
                    &at("timeout"),
                ),
                max_cost_usd,
                allow_unpriced: allow_unpriced.unwrap_or(false),
                concurrency,
            }),
        )
    }

    /// A report stage: its scorer (with an SSIM threshold for frontier-swe only, between 0 and
    /// 1), its promotion rule (which needs a baseline, of its own or the stage's) and where it
    /// writes (by default `reports/<manifest name>` beside the manifest).
    fn report_stage(
        &mut self,
        name: &str,
        f: ReportFile,
        manifest_name: &str,
        dir: &Path,
    ) -> (Vec<String>, StageKind) {
        let ReportFile {
            needs,
            baseline,
            out,
            count_errors_as_failures,
            promote,
            score,
            ssim_threshold,
        } = f;
        let at = |k: &'static str| ["stages", name, k];
        let scorer = match (score.unwrap_or_default(), ssim_threshold) {
            (ScoreRule::Reward, Some(_)) => {
                self.err(
                    "manifest::score",
                    "`ssim_threshold` is read by `score = \"frontier-swe\"` only".into(),
                    self.loc(&at("ssim_threshold")),
                    "not read",
                    "add `score = \"frontier-swe\"`, or remove `ssim_threshold`".into(),
                );
                Scorer::Reward
            }
            (ScoreRule::Reward, None) => Scorer::Reward,
            (ScoreRule::FrontierSwe, t) => {
                let t = t.unwrap_or(crate::report::frontier::DEFAULT_SSIM_THRESHOLD);
                if !(t.is_finite() && (0.0..=1.0).contains(&t)) {
                    self.err(
                        "manifest::range",
                        format!("`ssim_threshold` must be between 0 and 1, found {t}"),
                        self.loc(&at("ssim_threshold")),
                        "out of range",
                        "an SSIM, e.g. `0.95`".into(),
                    );
                }
                Scorer::FrontierSwe { ssim_threshold: t }
            }
        };
        let promote = promote.and_then(|p| {
            let baseline = p.baseline.or_else(|| baseline.clone());
            if baseline.is_none() {
                self.err(
                    "manifest::promote",
                    "a promotion rule needs a baseline".into(),
                    self.loc(&at("promote")),
                    "no baseline",
                    "set `baseline` in `promote` or in the report stage".into(),
                );
            }
            for (v, k) in [
                (p.max_drop_points, "max_drop_points"),
                (p.min_cost_saving_percent, "min_cost_saving_percent"),
            ] {
                if let Some(v) = v
                    && !v.is_finite()
                {
                    self.err(
                        "manifest::range",
                        format!("`{k}` must be a finite number, found {v}"),
                        self.loc(&["stages", name, "promote", k]),
                        "not a finite number",
                        "percent or percentage points, e.g. `2.0`".into(),
                    );
                }
            }
            Some(Promote {
                candidate: p.candidate,
                baseline: baseline?,
                max_drop_points: p.max_drop_points.unwrap_or(2.0),
                min_cost_saving_percent: p.min_cost_saving_percent.unwrap_or(10.0),
            })
        });
        let out = match out {
            Some(o) => self.path(&o, &at("out")),
            None => dir.join("reports").join(manifest_name),
        };
        (
            needs,
            StageKind::Report(ReportStage {
                baseline,
                out,
                count_errors_as_failures: count_errors_as_failures.unwrap_or(false),
                promote,
                scorer,
            }),
        )
    }

    fn date(&mut self, d: toml::value::Datetime, at: &[&str]) -> Option<String> {
        let Some(date) = d.date else {
            self.err(
                "manifest::date",
                "a time without a date".into(),
                self.loc(at),
                "no date",
                "write a date, e.g. 2026-07-01".into(),
            );
            return None;
        };
        let time = d.time.unwrap_or(toml::value::Time {
            hour: 0,
            minute: 0,
            second: Some(0),
            nanosecond: Some(0),
        });
        let offset = match d.offset {
            None | Some(toml::value::Offset::Z) => "Z".to_string(),
            Some(toml::value::Offset::Custom { minutes }) => {
                let sign = if minutes < 0 { '-' } else { '+' };
                format!("{sign}{:02}:{:02}", minutes.abs() / 60, minutes.abs() % 60)
            }
        };
        let text = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{offset}",
            date.year,
            date.month,
            date.day,
            time.hour,
            time.minute,
            time.second.unwrap_or(0)
        );
        match text.parse::<jiff::Timestamp>() {
            Ok(ts) => Some(ts.to_string()),
            Err(e) => {
                self.err(
                    "manifest::date",
                    format!("invalid date: {e}"),
                    self.loc(at),
                    "invalid date",
                    "write a date, e.g. 2026-07-01".into(),
                );
                None
            }
        }
    }

    /// Checks `needs` references and kinds, finds cycles, and returns a topological order.
    fn stage_graph(&mut self, stages: &BTreeMap<String, Stage>) -> Vec<String> {
        let mut graph: DiGraph<&str, ()> = DiGraph::new();
        let index: BTreeMap<&str, NodeIndex> = stages
            .keys()
            .map(|n| (n.as_str(), graph.add_node(n.as_str())))
            .collect();
        for (name, stage) in stages {
            let at = ["stages", name.as_str(), "needs"];
            for (i, need) in stage.needs.iter().enumerate() {
                let Some(up) = stages.get(need) else {
                    self.err(
                        "manifest::reference",
                        format!("stage `{name}` needs unknown stage `{need}`"),
                        self.item_loc(&at, i),
                        "unknown stage",
                        did_you_mean(need, stages.keys().map(String::as_str)),
                    );
                    continue;
                };
                graph.add_edge(index[need.as_str()], index[name.as_str()], ());
                let ok = matches!(
                    (stage.kind.name(), up.kind.name()),
                    (StageKindName::Gold, StageKindName::Sample)
                        | (
                            StageKindName::Solve,
                            StageKindName::Sample | StageKindName::Gold
                        )
                        | (StageKindName::Grade, StageKindName::Solve)
                        | (
                            StageKindName::Report,
                            StageKindName::Grade | StageKindName::Gold
                        )
                );
                if !ok {
                    let want = match stage.kind.name() {
                        StageKindName::Sample => "nothing",
                        StageKindName::Gold => "a sample stage",
                        StageKindName::Solve => "a sample or gold stage",
                        StageKindName::Grade => "solve stages",
                        StageKindName::Report => "grade (and gold) stages",
                    };
                    self.err(
                        "manifest::needs",
                        format!(
                            "{} stage `{name}` cannot need {} stage `{need}`",
                            stage.kind.name(),
                            up.kind.name()
                        ),
                        self.item_loc(&at, i),
                        "wrong kind",
                        format!("a {} stage needs {want}", stage.kind.name()),
                    );
                }
            }
            let inputs = stage
                .needs
                .iter()
                .filter(|n| stages.contains_key(*n))
                .count();
            let arity_ok = match stage.kind.name() {
                StageKindName::Sample => true,
                StageKindName::Gold | StageKindName::Solve => inputs == 1,
                StageKindName::Grade | StageKindName::Report => inputs >= 1,
            };
            if !arity_ok && stage.needs.len() == inputs {
                let want = match stage.kind.name() {
                    StageKindName::Gold => "exactly one sample stage",
                    StageKindName::Solve => "exactly one sample or gold stage",
                    StageKindName::Grade => "at least one solve stage",
                    _ => "at least one grade stage",
                };
                self.err(
                    "manifest::needs",
                    format!("stage `{name}` must need {want}"),
                    self.loc(&["stages", name, "needs"]),
                    "wrong number of inputs",
                    format!("set `needs` to {want}"),
                );
            }
        }
        for scc in tarjan_scc(&graph) {
            let cyclic = scc.len() > 1 || graph.contains_edge(scc[0], scc[0]);
            if cyclic {
                let mut names: Vec<&str> = scc.iter().map(|i| graph[*i]).collect();
                names.sort();
                self.err(
                    "manifest::cycle",
                    format!("stages form a cycle: {}", names.join(" -> ")),
                    self.loc(&["stages", names[0], "needs"]),
                    "part of a cycle",
                    "remove one of the `needs` edges between these stages".into(),
                );
            }
        }
        topological_order(stages)
    }

    /// A report's baseline must be a team that its upstream solve stages run. The help names only
    /// teams the manifest defines (an unknown team in a solve stage has its own error), and a
    /// report whose `needs` do not reach a solve stage (a misspelt or invalid stage, also
    /// reported where it is written) is told that, not that there are no teams.
    fn baselines(&mut self, stages: &BTreeMap<String, Stage>, defined: &BTreeSet<String>) {
        for (name, stage) in stages {
            let StageKind::Report(r) = &stage.kind else {
                continue;
            };
            let mut checked: Vec<(&str, Vec<&str>)> = Vec::new();
            if let Some(b) = &r.baseline {
                checked.push((b.as_str(), vec!["stages", name, "baseline"]));
            }
            if let Some(p) = &r.promote {
                checked.push((
                    p.candidate.as_str(),
                    vec!["stages", name, "promote", "candidate"],
                ));
                checked.push((p.baseline.as_str(), vec!["stages", name, "promote"]));
            }
            let mut teams = BTreeSet::new();
            let mut todo: Vec<&str> = stage.needs.iter().map(String::as_str).collect();
            let mut seen = BTreeSet::new();
            let mut unresolved = Vec::new();
            let mut solves = 0;
            while let Some(s) = todo.pop() {
                if !seen.insert(s) {
                    continue;
                }
                match stages.get(s) {
                    Some(st) => {
                        if let StageKind::Solve(solve) = &st.kind {
                            solves += 1;
                            teams.extend(
                                solve
                                    .teams
                                    .iter()
                                    .map(String::as_str)
                                    .filter(|t| defined.contains(*t)),
                            );
                        }
                        todo.extend(st.needs.iter().map(String::as_str));
                    }
                    None => unresolved.push(s),
                }
            }
            unresolved.sort_unstable();
            // A report without `needs` has its own error; its baseline cannot be judged (a
            // second error about it would be a cascade, and misleading).
            if stage.needs.is_empty() {
                continue;
            }
            for (baseline, at) in checked {
                if teams.contains(baseline) {
                    continue;
                }
                let help = if !teams.is_empty() {
                    did_you_mean(baseline, teams.iter().copied())
                } else if !unresolved.is_empty() {
                    format!(
                        "this report's `needs` do not reach a solve stage: {} {} unknown or invalid (see its error); fix that first",
                        unresolved
                            .iter()
                            .map(|s| format!("`{s}`"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        if unresolved.len() == 1 { "is" } else { "are" }
                    )
                } else if solves == 0 {
                    format!(
                        "no solve stage runs before this report; add one to its `needs`{}",
                        if defined.is_empty() {
                            String::new()
                        } else {
                            format!(
                                " (teams defined: {})",
                                defined.iter().cloned().collect::<Vec<_>>().join(", ")
                            )
                        }
                    )
                } else if defined.is_empty() {
                    "there are no teams defined: add a `[teams.NAME]` table".to_string()
                } else {
                    format!(
                        "the solve stages before this report run no defined team (teams defined: {})",
                        defined.iter().cloned().collect::<Vec<_>>().join(", ")
                    )
                };
                self.err(
                    "manifest::reference",
                    format!("report `{name}` compares against unknown team `{baseline}`"),
                    self.loc(&at),
                    "not a team of this report",
                    help,
                );
            }
        }
    }
}

impl Validator<'_> {
    /// Two report stages that write to one directory (both without `out` write to
    /// `reports/<manifest name>/`) would overwrite each other's files: an error naming both.
    fn report_dirs(&mut self, stages: &BTreeMap<String, Stage>) {
        let mut seen: BTreeMap<PathBuf, &str> = BTreeMap::new();
        for (name, stage) in stages {
            let StageKind::Report(r) = &stage.kind else {
                continue;
            };
            let dir = lexically_normal(&r.out);
            let Some(first) = seen.get(&dir).copied() else {
                seen.insert(dir, name);
                continue;
            };
            let at = |stage: &str| {
                let out = ["stages", stage, "out"];
                if self.root.lookup(&out).is_some() {
                    self.loc(&out)
                } else {
                    self.loc(&["stages", stage])
                }
            };
            let (here, there) = (at(name), at(first));
            let place = |loc: &Loc| {
                let (line, col) = self.sources.line_col(loc);
                format!("{}:{line}:{col}", self.sources.path(loc.file).display())
            };
            let has_out = |stage: &str| self.root.lookup(&["stages", stage, "out"]).is_some();
            let why = if !has_out(first) && !has_out(name) {
                " (neither sets `out`, so both use the default `reports/<manifest name>`)"
            } else {
                ""
            };
            self.err(
                "manifest::report-dir",
                format!(
                    "report stages `{first}` ({}) and `{name}` ({}) both write to {}{why}: one would overwrite the other's files",
                    place(&there),
                    place(&here),
                    dir.display()
                ),
                here,
                "writes to the same directory",
                format!("give one of them its own directory, e.g. `out = \"reports/{name}\"` in [stages.{name}]"),
            );
        }
    }
}

/// The stages in a topological order of their `needs` (references to unknown stages left out):
/// Kahn's algorithm with a sorted ready set, so the order is deterministic, ties broken by name.
/// Stages on a cycle, and those downstream of one, never become ready and are left out.
fn topological_order(stages: &BTreeMap<String, Stage>) -> Vec<String> {
    let mut indegree: BTreeMap<&str, usize> = stages.keys().map(|n| (n.as_str(), 0)).collect();
    for s in stages.values() {
        for n in &s.needs {
            if stages.contains_key(n) {
                *indegree.get_mut(s.name.as_str()).expect("stage exists") += 1;
            }
        }
    }
    let mut ready: BTreeSet<&str> = indegree
        .iter()
        .filter(|(_, d)| **d == 0)
        .map(|(n, _)| *n)
        .collect();
    let mut order = Vec::new();
    while let Some(n) = ready.pop_first() {
        order.push(n.to_string());
        for s in stages.values() {
            if s.needs.iter().any(|x| x == n) {
                let d = indegree.get_mut(s.name.as_str()).expect("stage exists");
                *d -= 1;
                if *d == 0 {
                    ready.insert(s.name.as_str());
                }
            }
        }
    }
    order
}

/// `path` with `.` and `dir/..` removed, without touching the filesystem (the directory may
/// not exist yet).
fn lexically_normal(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `harness@model` or `harness`.
pub fn parse_agent(s: &str) -> Agent {
    match s.split_once('@') {
        Some((h, m)) => Agent {
            harness: normalize_harness(h.trim()),
            model: Some(m.trim().to_string()),
        },
        None => Agent {
            harness: normalize_harness(s.trim()),
            model: None,
        },
    }
}

/// The seed's short harness names: `claude` is Claude Code.
fn normalize_harness(h: &str) -> String {
    match h {
        "claude" => "claude-code".to_string(),
        other => other.to_string(),
    }
}

/// The seed's team strings: `solo:worker=a`, `review:coder=a,reviewer=b,rounds=1`,
/// `best:workers=a+b+c[,judge=d]`.
pub fn parse_team_shorthand(s: &str) -> Result<Topology, String> {
    let (topology, rest) = s
        .split_once(':')
        .ok_or_else(|| "missing `topology:` prefix".to_string())?;
    let mut fields = BTreeMap::new();
    for part in rest.split(',').filter(|p| !p.trim().is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("`{part}` is not `key=value`"))?;
        if fields.insert(k.trim(), v.trim()).is_some() {
            return Err(format!("`{}` is given twice", k.trim()));
        }
    }
    let mut take = |k: &str| fields.remove(k);
    let top = match topology.trim() {
        "solo" => Topology::Solo {
            worker: parse_agent(take("worker").ok_or("solo needs `worker=`")?),
        },
        "review" => Topology::Review {
            coder: parse_agent(take("coder").ok_or("review needs `coder=`")?),
            reviewer: parse_agent(take("reviewer").ok_or("review needs `reviewer=`")?),
            rounds: match take("rounds") {
                Some(r) => r
                    .parse()
                    .ok()
                    .filter(|r| *r > 0)
                    .ok_or_else(|| format!("rounds `{r}` is not a positive integer"))?,
                None => 3,
            },
        },
        "best" | "best-of" => {
            let workers: Vec<Agent> = take("workers")
                .ok_or("best needs `workers=a+b+...`")?
                .split('+')
                .map(parse_agent)
                .collect();
            if workers.len() < 2 {
                return Err("best needs at least two workers".into());
            }
            let judge = match take("judge") {
                Some(j) => parse_agent(j),
                None => workers[0].clone(),
            };
            Topology::BestOf { workers, judge }
        }
        other => return Err(format!("unknown topology `{other}` (solo, review, best)")),
    };
    if let Some(k) = fields.keys().next() {
        return Err(format!("unknown field `{k}` for this topology"));
    }
    Ok(top)
}

/// Whether `t` is a public key of the remote cache, `ed25519:<base64url of 32 bytes>` (the
/// manifest checks the text; `cache::PublicKey` is what uses it).
fn public_key_shape(t: &str) -> Result<(), String> {
    use base64::Engine;
    let b64 = t
        .strip_prefix("ed25519:")
        .ok_or("a public key starts with `ed25519:`")?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(b64)
        .map_err(|e| format!("its key is not base64url (no padding): {e}"))?;
    let bytes: [u8; 32] = bytes
        .try_into()
        .map_err(|b: Vec<u8>| format!("an ed25519 public key is 32 bytes, not {}", b.len()))?;
    ed25519_dalek::VerifyingKey::from_bytes(&bytes)
        .map(|_| ())
        .map_err(|_| "it is not a valid ed25519 point".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A manifest that validates and sets every section with a numeric field.
    const BASE: &str = r#"version = 1
[backend]
[limits]
[datasets.d]
format = "local"
path = "."
[stages.s]
kind = "sample"
dataset = "d"
[stages.v]
kind = "solve"
needs = ["s"]
teams = ["r"]
[stages.g]
kind = "grade"
needs = ["v"]
[stages.rep]
kind = "report"
needs = ["g"]
baseline = "r"
[stages.rep.promote]
candidate = "r"
[teams.r]
topology = "review"
coder = "nop"
reviewer = "nop"
[pricing.m]
input = 1.0
output = 2.0
"#;

    fn load_text(text: &str) -> (PathBuf, Result<Manifest, ManifestError>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.toml");
        fs_err::write(&path, text).unwrap();
        let loaded = load(&path);
        (path, loaded, dir)
    }

    #[test]
    fn the_base_manifest_of_these_tests_is_valid() {
        let (_, loaded, _dir) = load_text(BASE);
        if let Err(e) = loaded {
            panic!("{:?}", e.lines());
        }
    }

    #[test]
    fn every_numeric_field_out_of_range_is_reported_at_its_value() {
        // (line of BASE to put the case after, or to replace; the line written; replace?)
        let cases: &[(&str, &str, bool)] = &[
            ("version = 1", "version = 5000000000", true),
            ("version = 1", "version = -1", true),
            ("version = 1", "version = 2", true),
            ("[backend]", "cpus = 0", false),
            ("[backend]", "cpus = -1.5", false),
            ("[backend]", "cpus = inf", false),
            ("[backend]", "pids = -1", false),
            ("[limits]", "jobs = 0", false),
            ("[limits]", "jobs = 5000000000", false),
            ("[limits]", "containers = -1", false),
            ("[limits]", "agents = 4294967296", false),
            ("[stages.s]", "limit = 5000000000", false),
            ("[stages.s]", "limit = -1", false),
            ("[stages.s]", "seed = -1", false),
            ("[stages.s]", "seed = 99999999999999999999", false),
            ("[stages.v]", "replicates = 0", false),
            ("[stages.v]", "replicates = 5000000000", false),
            ("[stages.v]", "limit = 4294967296", false),
            ("[stages.v]", "concurrency = 0", false),
            ("[stages.v]", "concurrency = -3", false),
            ("[stages.v]", "max_cost_usd = -1", false),
            ("[stages.v]", "max_cost_usd = nan", false),
            ("[stages.rep.promote]", "max_drop_points = nan", false),
            (
                "[stages.rep.promote]",
                "min_cost_saving_percent = -inf",
                false,
            ),
            ("[teams.r]", "rounds = 0", false),
            ("[teams.r]", "rounds = 5000000000", false),
            ("[teams.r]", "rounds = -2", false),
            ("input = 1.0", "input = -1", true),
            ("output = 2.0", "output = -0.5", true),
            ("[pricing.m]", "cached_input = nan", false),
        ];
        for (anchor, line, replace) in cases {
            let mut lines: Vec<&str> = BASE.lines().collect();
            let at = lines
                .iter()
                .position(|l| l == anchor)
                .expect("anchor in BASE");
            let line_no = if *replace {
                lines[at] = line;
                at + 1
            } else {
                lines.insert(at + 1, line);
                at + 2
            };
            let text = lines.join("\n") + "\n";
            let (path, loaded, _dir) = load_text(&text);
            let err = match loaded {
                Ok(_) => panic!("`{line}` validates"),
                Err(e) => e,
            };
            let col = line.find('=').unwrap() + 3;
            let want = format!("{}:{line_no}:{col}: ", path.display());
            let got = err.lines();
            assert!(
                got.len() == 1 && got[0].starts_with(&want),
                "`{line}`: expected one problem at {want}, got {got:#?}"
            );
        }
    }

    #[test]
    fn unknown_keys_in_team_and_agent_tables_are_reported_at_the_key() {
        let text = BASE.replace(
            "coder = \"nop\"",
            "coder = { harness = \"nop\", modle = \"m\" }\nbogus = 1",
        );
        let (path, loaded, _dir) = load_text(&text);
        let err = loaded.expect_err("invalid");
        let lines = err.lines();
        let d = path.display();
        assert!(
            lines.contains(&format!("{d}:25:28: unknown key `modle` in `coder`")),
            "{lines:#?}"
        );
        assert!(
            lines.contains(&format!("{d}:26:1: unknown key `bogus` in team `r`")),
            "{lines:#?}"
        );
    }

    #[test]
    fn a_serde_error_the_checker_missed_points_at_the_value_serde_names() {
        let (_, _, dir) = load_text(BASE);
        let mut sources = Sources::default();
        let text = BASE.replace("[stages.s]\n", "[stages.s]\nlimit = 5000000000\n");
        let path = dir.path().join("m.toml");
        fs_err::write(&path, &text).unwrap();
        let root = tree::load(&path, &mut sources).unwrap();
        // Straight to serde, skipping the checker that would catch it.
        let err = root.to_toml().try_into::<ManifestFile>().unwrap_err();
        let (keys, message) = serde_error_keys(&err);
        assert_eq!(keys, ["stages", "s"], "{err}");
        assert!(message.contains("5000000000"), "{message}");
        let loc = nearest_loc(&root, &keys);
        assert_eq!(sources.line_col(&loc).0, 7, "{loc:?}");
        assert_ne!(nearest_loc(&root, &[]), loc);
    }

    #[test]
    fn cache_settings_are_checked_with_their_place() {
        let with = |table: &str| {
            let d = tempfile::tempdir().unwrap();
            let p = d.path().join("m.toml");
            fs_err::write(
                &p,
                format!("version = 1\n[datasets.d]\nformat = \"local\"\npath = \".\"\n{table}"),
            )
            .unwrap();
            crate::manifest::load(&p).map_err(|e| format!("{:?}", miette::Report::new(e)))
        };
        let ok = with(
            "[cache]\nremote = \"s3://b/p\"\ntrust = [\"ed25519:ks7I-_j-oZWGH5HhrstSdAdSAyI68Fh-wVNlX7LrpKw\"]\n",
        )
        .unwrap();
        assert_eq!(ok.cache.remote.as_deref(), Some("s3://b/p"));
        assert!(ok.cache.push);
        let e = with("[cache]\nremote = \"ftp://x\"\n").unwrap_err();
        assert!(
            e.contains("not a remote cache URL") && e.contains("m.toml:6:10"),
            "{e}"
        );
        let e = with("[cache]\nremote = \"s3://b\"\ntrust = [\"ed25519:AAAA\"]\n").unwrap_err();
        assert!(e.contains("32 bytes") && e.contains("paste the"), "{e}");
        let e = with("[cache]\ntrust = []\nsecret = \"x\"\n").unwrap_err();
        assert!(e.contains("secret"), "{e}");
    }

    #[test]
    fn every_default_prompt_reads_only_its_own_variables() {
        for (text, kind) in [
            (DEFAULT_INSTRUCTION, TemplateKind::Instruction),
            (DEFAULT_REVIEW, TemplateKind::Review),
            (DEFAULT_FIX, TemplateKind::Fix),
            (DEFAULT_JUDGE, TemplateKind::Judge),
        ] {
            let t = handlebars::Template::compile(text).expect("compiles");
            let unknown = crate::harness::template::unknown_variables(&t, kind);
            assert!(unknown.is_empty(), "{}: {unknown:?}", kind.describe());
        }
    }
}
