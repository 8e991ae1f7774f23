//! The `docker` backend behind the [`Backend`] trait: sandboxes are containers of the task's
//! image (or of an agent image built on it), labelled with the run, node and store, limited
//! (cpus, memory, pids), and removed on every path. The repository is `/testbed` (or the
//! task's own directory, `/app` for SWE-bench Pro), or the git root one level below it
//! (RepoLaunch's fallback). Grading sandboxes get the job's hardening (`hardening.rs`).
//!
//! Agent images: a harness's install commands (with its files copied to `/tmp/bench-install/`
//! first) run once as root on a task image, and the container is committed as
//! `bench-agent:<digest>`. The digest covers the task image's ID, the commands and the files, so
//! an edit to any of them builds a new image; an existing image with the tag is reused across
//! solves, applies and stores on the same daemon; within one apply, concurrent solves of the
//! same task image wait for one build.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use super::docker::{Container, ContainerSpec, DockerHost, NetworkMode};
use super::egress::EgressProxy;
use super::exec::ExecResult;
use super::sandbox::{Backend, Network, Sandbox, SandboxError, SandboxPaths, SandboxSpec};
use super::services::{self, Services};
use crate::events::{Event, Events, ImageBuilt, ImageKind};
use crate::tasks::TaskBase;
use crate::types::BackendKind;
use crate::types::{BackendFacts, InstallSpec};

/// Repository of agent images.
pub const AGENT_REPO: &str = "bench-agent";

/// Repository of task images whose repository's history is stripped to the base commit
/// (grading containers start from them: the strip runs once per task image, not per grade).
pub const STRIPPED_REPO: &str = "bench-stripped";

/// The label of a stripped image: the base at which `repo::CHECK_SCRIPT` passed in it.
const HISTORY_CHECKED: &str = "bench.history-checked";

/// The label of a stripped image: its repository's real path (`pwd -P` there), found when it
/// was made, with bench's own directory made empty beside it. A grading container of it needs
/// no exec of its own before the protocol's first. Empty for an image that declares volumes
/// (what the container made there is not in the image): its containers find both with one
/// exec. An image without the label (made by an older build) is stripped anew.
const REPO_PATH: &str = "bench.repo-path";

/// How long an install may take.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Repository of images built from task environments (Harbor's `environment/Dockerfile`).
pub const ENV_REPO: &str = "bench-env";

/// How long an environment build may take.
const ENV_BUILD_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The identity of a build-context environment: `build:` and the digest of the context's
/// digest with the IDs of the images its Dockerfile starts from (`None` while one of them is
/// not on the daemon).
pub fn env_identity(images: &BTreeMap<String, String>, base: &TaskBase) -> Option<String> {
    let TaskBase::Build { digest, from, .. } = base else {
        return None;
    };
    let ids: Option<Vec<&String>> = from.iter().map(|f| images.get(f)).collect();
    Some(format!("build:{}", crate::key::digest_of(&(digest, ids?))))
}

/// bench's own directory in a container.
const STATE: &str = "/tmp/bench";

/// The repository directory of images that do not name their own.
const DEFAULT_REPO: &str = "/testbed";

/// Moves to the repository: `dir`, or the directory holding .git one level below it.
fn cd_repo(dir: &str) -> String {
    format!(
        "cd {} || exit 97\n[ -d .git ] || {{ g=$(find . -maxdepth 2 -mindepth 2 -type d -name .git -print -quit); [ -n \"$g\" ] && cd \"${{g%/.git}}\"; }}\n",
        super::shell_quote(dir)
    )
}

fn failed(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Failed(e.to_string())
}

/// Resources of every container.
#[derive(Debug, Clone, Copy)]
pub struct Resources {
    pub cpus: f64,
    pub memory_bytes: u64,
    pub pids: u64,
}

/// One apply's docker backend.
pub struct DockerBackend {
    pub host: DockerHost,
    pub run_id: String,
    /// Identifies the store (label `bench.store`), so an apply holding its lock can sweep.
    pub store_label: String,
    /// Image reference -> ID, resolved before any graph was built.
    pub images: BTreeMap<String, String>,
    pub resources: Resources,
    pub containers: usize,
    builds: Mutex<HashMap<String, Arc<OnceCell<String>>>>,
    /// Stripped images made or found in this apply, by reference.
    stripped: Mutex<HashMap<String, Arc<OnceCell<StrippedImage>>>>,
    count: std::sync::atomic::AtomicUsize,
    /// Where it reports the images it builds.
    events: Events,
}

impl DockerBackend {
    pub fn new(
        host: DockerHost,
        run_id: String,
        store_label: String,
        images: BTreeMap<String, String>,
        resources: Resources,
        containers: usize,
    ) -> DockerBackend {
        DockerBackend {
            host,
            run_id,
            store_label,
            images,
            resources,
            containers,
            builds: Mutex::new(HashMap::new()),
            stripped: Mutex::new(HashMap::new()),
            count: Default::default(),
            events: Events::default(),
        }
    }

    /// The backend, reporting to `events` (the default: plain lines on stderr).
    pub fn with_events(self, events: Events) -> DockerBackend {
        DockerBackend { events, ..self }
    }

    fn spec(&self, image: String, address: &str, key: &str, network: NetworkMode) -> ContainerSpec {
        let n = self
            .count
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ContainerSpec {
            image,
            name: format!("bench-{}-{}-{n}", self.run_id, &key[..12.min(key.len())]),
            labels: ContainerSpec::labels(&self.run_id, address, &self.store_label),
            cpus: self.resources.cpus,
            memory_bytes: self.resources.memory_bytes,
            pids: self.resources.pids,
            network,
            hardening: None,
            gpus: 0,
        }
    }

    /// The image a sandbox of `base` starts from: the task's image, or for a build context the
    /// image built from it (once per context and base images, tagged `bench-env:<digest>`;
    /// reused when the daemon has it).
    async fn task_image(&self, base: &TaskBase) -> Result<String, SandboxError> {
        let TaskBase::Build { context, .. } = base else {
            return self.image_of(base);
        };
        let tag = format!(
            "{ENV_REPO}:{}",
            &env_identity(&self.images, base).unwrap_or_default()[6..22]
        );
        self.build_once(
            &tag,
            || Ok(context.to_vec()),
            "Dockerfile",
            ENV_BUILD_TIMEOUT,
        )
        .await
    }

    /// The image `tag` built from the build context `context` makes (`dockerfile` its path
    /// there; made only for a build): reused when the daemon has it; within one apply,
    /// concurrent sandboxes wait for one build.
    async fn build_once(
        &self,
        tag: &str,
        context: impl FnOnce() -> Result<Vec<u8>, SandboxError>,
        dockerfile: &str,
        timeout: Duration,
    ) -> Result<String, SandboxError> {
        let cell = {
            let mut builds = self.builds.lock().unwrap_or_else(|p| p.into_inner());
            builds.entry(tag.to_string()).or_default().clone()
        };
        cell.get_or_try_init(|| async {
            if let Some(id) = self.host.image_id(tag).await.map_err(failed)? {
                return Ok(id);
            }
            let id = self
                .host
                .build_image(context()?, dockerfile, tag, timeout)
                .await
                .map_err(failed)?;
            self.events.emit(Event::ImageBuilt(ImageBuilt {
                kind: ImageKind::Environment,
                image: tag.to_string(),
                base: None,
            }));
            Ok(id)
        })
        .await
        .cloned()
    }

    /// A number unique in this backend (names of containers and networks).
    fn next_count(&self) -> usize {
        self.count
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    fn image_of(&self, base: &TaskBase) -> Result<String, SandboxError> {
        match base {
            TaskBase::Image { image, .. } => self.images.get(image).cloned().ok_or_else(|| {
                failed(format!(
                    "image {image} is not on the Docker daemon; build or pull it (bench never pulls)"
                ))
            }),
            TaskBase::Dir { path, .. } => Err(failed(format!(
                "the task's base is a local tree ({}); the docker backend runs tasks with an image",
                path.display()
            ))),
            TaskBase::Build { from, .. } => {
                let missing: Vec<&str> = from
                    .iter()
                    .filter(|f| !self.images.contains_key(*f))
                    .map(String::as_str)
                    .collect();
                Err(failed(format!(
                    "the task's environment starts FROM {}, not on the Docker daemon; build or pull it (bench never pulls)",
                    missing.join(", ")
                )))
            }
        }
    }

    async fn build(
        &self,
        base_id: &str,
        install: &InstallSpec,
        tag: &str,
        cancel: &CancellationToken,
    ) -> Result<String, SandboxError> {
        let reference = format!("{AGENT_REPO}:{tag}");
        if let Some(id) = self.host.image_id(&reference).await.map_err(failed)? {
            return Ok(id);
        }
        // Installs may use the network (the default bridge).
        let mut spec = self.spec(
            base_id.to_string(),
            &format!("install/{tag}"),
            tag,
            NetworkMode::Bridge,
        );
        spec.name = format!("bench-{}-install-{tag}", self.run_id);
        // The runtime tarball, downloaded and verified on the host (the container may have no
        // network, or no curl).
        let runtime = match install.runtime.clone() {
            Some(rt) => Some(
                tokio::task::spawn_blocking(move || crate::harness::runtime::fetch(&rt))
                    .await
                    .map_err(failed)?
                    .map_err(failed)?,
            ),
            None => None,
        };
        let runtime_path = install.runtime.as_ref().map(|rt| {
            format!(
                "/tmp/bench-install/{}",
                crate::harness::runtime::tarball_path(rt)
            )
        });
        let c = Container::start(&self.host, &spec).await.map_err(failed)?;
        let result = async {
            let paths: Vec<String> = install
                .files
                .iter()
                .map(|f| format!("/tmp/bench-install/{}", f.path))
                .collect();
            let mut put: Vec<(&str, &[u8], u32)> = install
                .files
                .iter()
                .zip(&paths)
                .map(|(f, p)| (p.as_str(), f.content.bytes(), f.mode))
                .collect();
            if let (Some(path), Some(bytes)) = (&runtime_path, &runtime) {
                put.push((path.as_str(), bytes.as_slice(), 0o644));
            }
            // The directory exists even without files.
            put.push(("/tmp/bench-install/.bench", b"", 0o644));
            c.put_files(&put).await.map_err(failed)?;
            let (unpack, link) = match &install.runtime {
                Some(rt) => (
                    crate::harness::runtime::unpack_script(rt),
                    crate::harness::runtime::link_script(rt),
                ),
                None => (String::new(), String::new()),
            };
            let script = format!(
                "set -e\ncd /tmp/bench-install\n{unpack}{}\n{link}\ncd /\nrm -rf /tmp/bench-install\n",
                install.commands.join("\n")
            );
            let env = [("HOME".to_string(), "/root".to_string())];
            let r = c
                .exec(&script, "/", &env, INSTALL_TIMEOUT, cancel)
                .await
                .map_err(failed)?;
            if r.cancelled {
                return Err(SandboxError::Cancelled);
            }
            if r.exit_code != Some(0) {
                let out = String::from_utf8_lossy(&r.output);
                let lines: Vec<&str> = out.lines().collect();
                let tail = lines[lines.len().saturating_sub(20)..].join("\n");
                return Err(failed(format!(
                    "cannot build the agent image on {}: the install commands {}:\n{tail}",
                    short(base_id),
                    if r.timed_out {
                        format!(
                            "timed out after {}",
                            humantime::format_duration(INSTALL_TIMEOUT)
                        )
                    } else {
                        format!("exited with {:?}", r.exit_code)
                    },
                )));
            }
            let labels = HashMap::from([
                ("bench.agent-image".to_string(), "1".to_string()),
                ("bench.base-image".to_string(), base_id.to_string()),
            ]);
            c.commit(AGENT_REPO, tag, labels).await.map_err(failed)
        }
        .await;
        let removed = c.destroy().await;
        let id = result?;
        removed.map_err(failed)?;
        self.events.emit(Event::ImageBuilt(ImageBuilt {
            kind: ImageKind::Agent,
            image: reference.to_string(),
            base: Some(base_id.to_string()),
        }));
        Ok(id)
    }
}

/// A stripped grading image: its ID and, when it was made by this build's strip, its
/// repository's real path (label [`REPO_PATH`]).
#[derive(Debug, Clone)]
struct StrippedImage {
    id: String,
    repo: Option<String>,
}

impl DockerBackend {
    /// The image of `image_id` whose repository (`repo_dir`) has its history stripped to
    /// `base` and checked fail-closed, built now unless it exists (reused across grades,
    /// applies and stores on the daemon; within one apply, concurrent grades wait for one
    /// build). Its tag digests the image, the base, the directory and the strip and check
    /// scripts, so a change to any of them strips anew.
    async fn stripped_image(
        &self,
        image_id: &str,
        base: &str,
        repo_dir: &str,
        before: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<StrippedImage, SandboxError> {
        let tag = stripped_tag(image_id, base, repo_dir, before);
        let cell = {
            let mut stripped = self.stripped.lock().unwrap_or_else(|p| p.into_inner());
            stripped
                .entry(format!("{STRIPPED_REPO}:{tag}"))
                .or_default()
                .clone()
        };
        cell.get_or_try_init(|| self.strip_image(image_id, base, repo_dir, before, &tag, cancel))
            .await
            .cloned()
    }

    async fn strip_image(
        &self,
        image_id: &str,
        base: &str,
        repo_dir: &str,
        before: Option<&str>,
        tag: &str,
        cancel: &CancellationToken,
    ) -> Result<StrippedImage, SandboxError> {
        let reference = format!("{STRIPPED_REPO}:{tag}");
        // Reused only when bench made it: its label says the check passed at this base (grades
        // from it skip the check, see `Sandbox::checked_at_start`).
        if let Some((id, labels)) = self.host.image_labels(&reference).await.map_err(failed)?
            && labels.get(HISTORY_CHECKED).map(String::as_str) == Some(base)
            && let Some(repo) = labels.get(REPO_PATH)
        {
            let repo = Some(repo.clone()).filter(|p| p.starts_with('/'));
            return Ok(StrippedImage { id, repo });
        }
        let mut spec = self.spec(
            image_id.to_string(),
            &format!("strip/{tag}"),
            tag,
            NetworkMode::None,
        );
        spec.name = format!("bench-{}-strip-{tag}", self.run_id);
        let c = Container::start(&self.host, &spec).await.map_err(failed)?;
        let result = async {
            let repo = strip_in(&c, image_id, base, repo_dir, before, cancel).await?;
            let mut labels = HashMap::from([
                ("bench.stripped-image".to_string(), "1".to_string()),
                ("bench.base-image".to_string(), image_id.to_string()),
                (HISTORY_CHECKED.to_string(), base.to_string()),
            ]);
            // A volume of the image would hide what the container made there: its containers
            // then find the repository and make bench's directory themselves.
            let volumes = self.host.image_volumes(image_id).await.map_err(failed)?;
            let repo = repo.filter(|_| volumes.is_empty());
            labels.insert(REPO_PATH.to_string(), repo.clone().unwrap_or_default());
            let id = c.commit(STRIPPED_REPO, tag, labels).await.map_err(failed)?;
            Ok(StrippedImage { id, repo })
        }
        .await;
        let removed = c.destroy().await;
        let image = result?;
        removed.map_err(failed)?;
        Ok(image)
    }
}

/// In the container `c` of `image_id`: the script `before` the strip, the strip of the history
/// of `repo_dir` to `base` and the fail-closed check, then bench's directory emptied and made
/// anew (its side and home directories, as a sandbox's start makes them). Returns the
/// repository's real path (`None` when it could not be read as one absolute path).
async fn strip_in(
    c: &Container,
    image_id: &str,
    base: &str,
    repo_dir: &str,
    before: Option<&str>,
    cancel: &CancellationToken,
) -> Result<Option<String>, SandboxError> {
    let env = [
        ("BENCH_STATE".to_string(), STATE.to_string()),
        ("BENCH_BASE".to_string(), base.to_string()),
    ];
    let steps = before
        .map(|b| (b, "prepare (before the strip)"))
        .into_iter()
        .chain([
            (super::repo::STRIP_SCRIPT, "strip"),
            (super::repo::CHECK_SCRIPT, "check"),
        ]);
    for (script, what) in steps {
        let r = c
            .exec(
                &format!("mkdir -p {STATE}\n{}{script}", cd_repo(repo_dir)),
                "/",
                &env,
                Duration::from_secs(1800),
                cancel,
            )
            .await
            .map_err(failed)?;
        if r.cancelled {
            return Err(SandboxError::Cancelled);
        }
        if r.exit_code != Some(0) {
            return Err(failed(format!(
                "cannot {what} the history of {} for grading: {}",
                short(image_id),
                String::from_utf8_lossy(&r.output).trim()
            )));
        }
    }
    let r = c
        .exec(
            &format!(
                "rm -rf {STATE}\n{}\n{}pwd -P",
                start_dirs(),
                cd_repo(repo_dir)
            ),
            "/",
            &[],
            Duration::from_secs(60),
            cancel,
        )
        .await
        .map_err(failed)?;
    if r.exit_code != Some(0) {
        return Err(failed(format!("cannot clean {STATE} after the strip")));
    }
    let out = String::from_utf8_lossy(&r.output).trim().to_string();
    Ok((out.starts_with('/') && !out.contains('\n')).then_some(out))
}

/// The command that makes a sandbox's own directories (bench's state, its side and home).
fn start_dirs() -> String {
    format!("mkdir -p {STATE}/side {STATE}/home")
}

/// The tag of the stripped image of `image_id` at `base` (see [`STRIPPED_REPO`]).
pub fn stripped_tag(image_id: &str, base: &str, repo_dir: &str, before: Option<&str>) -> String {
    let mut v = serde_json::json!({
        "schema": 1,
        "image": image_id,
        "base": base,
        "repo_dir": repo_dir,
        "strip": crate::key::digest(super::repo::STRIP_SCRIPT.as_bytes()),
        "check": crate::key::digest(super::repo::CHECK_SCRIPT.as_bytes()),
    });
    // Absent when there is none, so the tags of images made before it existed stay the same.
    if let Some(b) = before {
        v["before"] = crate::key::digest(b.as_bytes()).into();
    }
    let d = crate::key::digest_of(&v);
    d[..16].to_string()
}

/// The tag of the agent image built by `install` on the image `base_image_id` (the first 16 hex
/// digits of the digest of everything it is built from).
pub fn agent_tag(base_image_id: &str, install: &InstallSpec) -> String {
    let listing: Vec<(&str, u32, &str)> = install
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.mode, f.content.digest()))
        .collect();
    let mut inputs = serde_json::json!({
        "schema": 1,
        "base": base_image_id,
        "install": install.commands,
        "files": crate::key::digest_of(&listing),
    });
    // Only with a runtime: the tags of other agent images are unchanged.
    if let Some(rt) = &install.runtime {
        inputs["runtime"] = serde_json::json!(rt);
    }
    let digest = crate::key::digest_of(&inputs);
    digest[..16].to_string()
}

fn short(id: &str) -> &str {
    let id = id.strip_prefix("sha256:").unwrap_or(id);
    &id[..12.min(id.len())]
}

#[async_trait]
impl Backend for DockerBackend {
    fn base_commit(&self, base: &TaskBase) -> Option<String> {
        match base {
            TaskBase::Image { base_commit, .. } => Some(base_commit.clone()),
            TaskBase::Dir { .. } | TaskBase::Build { .. } => None,
        }
    }

    async fn create(
        &self,
        spec: &SandboxSpec<'_>,
        cancel: &CancellationToken,
    ) -> Result<Box<dyn Sandbox>, SandboxError> {
        if matches!(spec.base, TaskBase::Build { .. })
            && env_identity(&self.images, spec.base).is_none()
        {
            return Err(self.image_of(spec.base).unwrap_err());
        }
        let repo_dir = spec.repo_dir.unwrap_or(DEFAULT_REPO);
        let (image, stripped, known_repo) = match (&spec.image, spec.stripped) {
            (Some(i), _) => (i.clone(), None, None),
            (None, Some(base)) if spec.task_env.is_none() => {
                let original = self.task_image(spec.base).await?;
                let image = self
                    .stripped_image(&original, base, repo_dir, spec.before_strip, cancel)
                    .await?;
                (image.id, Some(base.to_string()), image.repo)
            }
            (None, _) => (self.task_image(spec.base).await?, None, None),
        };
        let (mode, egress, services) = self.networks(spec, cancel).await?;
        let mut cspec = self.spec(image, spec.address, spec.key, mode);
        cspec.hardening = spec.hardening.cloned();
        if let Some(t) = &spec.task_env {
            cspec.cpus = t.cpus;
            cspec.memory_bytes = t.memory_bytes;
            cspec.gpus = t.gpus;
        }
        let started = match Container::start(&self.host, &cspec).await {
            Ok(c) => match (&services, &spec.network) {
                // The services' network besides the policy's own.
                (Some(svc), Network::Open | Network::Allowlist(_)) => {
                    match c.set_network(&svc.network, true).await {
                        Ok(()) => Ok(c),
                        Err(e) => {
                            let _ = c.destroy().await;
                            Err(e)
                        }
                    }
                }
                _ => Ok(c),
            },
            Err(e) => Err(e),
        };
        let c = match started {
            Ok(c) => c,
            Err(e) => {
                release(&self.host, egress, services).await;
                return Err(failed(e));
            }
        };
        let enter = match &spec.task_env {
            // The task's workdir as it is: no repository is looked for.
            Some(_) => format!(
                "mkdir -p {d} && cd {d} || exit 97\n",
                d = super::shell_quote(repo_dir)
            ),
            None => cd_repo(repo_dir),
        };
        let mut sandbox = DockerSandbox {
            c,
            policy_network: spec.network != Network::None,
            egress,
            services,
            stripped,
            fresh: std::sync::atomic::AtomicBool::new(true),
            paths: SandboxPaths {
                repo: String::new(),
                workdir: repo_dir.to_string(),
                state: STATE.to_string(),
                side: format!("{STATE}/side"),
                home: format!("{STATE}/home"),
            },
        };
        // A container of a stripped image bench made starts with its directories and knows
        // its repository (found when the image was made).
        if let Some(repo) = known_repo {
            sandbox.paths.repo = repo;
            return Ok(Box::new(sandbox));
        }
        let r = sandbox
            .c
            .exec(
                &format!("{}\n{enter}pwd -P", start_dirs()),
                "/",
                &[],
                Duration::from_secs(60),
                cancel,
            )
            .await;
        let repo = match r {
            Ok(r) if r.exit_code == Some(0) => {
                Ok(String::from_utf8_lossy(&r.output).trim().to_string())
            }
            Ok(r) if r.cancelled => Err(SandboxError::Cancelled),
            Ok(r) => Err(failed(format!(
                "no repository at {repo_dir} in the image: {}",
                String::from_utf8_lossy(&r.output).trim()
            ))),
            Err(e) => Err(failed(e)),
        };
        match repo {
            Ok(repo) => {
                sandbox.paths.repo = repo;
                Ok(Box::new(sandbox))
            }
            Err(e) => {
                let _ = Box::new(sandbox).destroy().await;
                Err(e)
            }
        }
    }

    async fn agent_image(
        &self,
        base: &TaskBase,
        install: &InstallSpec,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, SandboxError> {
        let base_id = self.task_image(base).await?;
        let tag = agent_tag(&base_id, install);
        let cell = {
            let mut builds = self.builds.lock().unwrap_or_else(|p| p.into_inner());
            builds.entry(tag.clone()).or_default().clone()
        };
        cell.get_or_try_init(|| self.build(&base_id, install, &tag, cancel))
            .await
            .cloned()
            .map(Some)
    }

    fn sandbox_cap(&self) -> Option<usize> {
        Some(self.containers)
    }

    async fn finish(&self) {
        // Every node removed its containers; this catches anything a crash of a node left.
        if let Ok(left) = self
            .host
            .list(&[format!("bench.run={}", self.run_id)])
            .await
        {
            for (id, _, _) in left {
                let _ = self.host.remove(&id).await;
            }
        }
        if let Ok(left) = self
            .host
            .networks(&[format!("bench.run={}", self.run_id)])
            .await
        {
            for (name, _) in left {
                let _ = self.host.remove_network(&name).await;
            }
        }
    }
}

/// How long a service's build may take.
const SERVICE_BUILD_TIMEOUT: Duration = Duration::from_secs(30 * 60);

impl DockerBackend {
    /// Starts `services` for the sandbox of `spec` on a network of their own (`services.rs`).
    async fn start_services(
        &self,
        spec: &SandboxSpec<'_>,
        services: &[crate::tasks::ServiceSpec],
        cancel: &CancellationToken,
    ) -> Result<Services, SandboxError> {
        let mut images = Vec::new();
        for s in services {
            images.push((s, self.service_image(spec.base, s).await?));
        }
        let network = format!(
            "bench-{}-{}-svc{}",
            self.run_id,
            &spec.key[..12.min(spec.key.len())],
            self.next_count()
        );
        let labels = ContainerSpec::labels(&self.run_id, spec.address, &self.store_label);
        let limits = services::Limits {
            cpus: self.resources.cpus,
            memory_bytes: self.resources.memory_bytes,
            pids: self.resources.pids,
        };
        services::start(&self.host, network, &labels, &images, limits, cancel).await
    }

    /// The image a service runs: its prebuilt `image` (resolved before the run), or the one
    /// built from its directory of the task's environment.
    async fn service_image(
        &self,
        base: &TaskBase,
        s: &crate::tasks::ServiceSpec,
    ) -> Result<String, SandboxError> {
        if let Some(image) = &s.image {
            return self.images.get(image).cloned().ok_or_else(|| {
                failed(format!(
                    "service {}: image {image} is not on the Docker daemon; build or pull it (bench never pulls)",
                    s.name
                ))
            });
        }
        let (TaskBase::Build { context, .. }, Some(build)) = (base, &s.build) else {
            return Err(failed(format!(
                "service {}: no image and no build context (a task's services need its environment/ directory)",
                s.name
            )));
        };
        let env = env_identity(&self.images, base).ok_or_else(|| {
            failed(format!(
                "service {}: an image its environment starts from is not on the Docker daemon; build or pull it (bench never pulls)",
                s.name
            ))
        })?;
        let sub = || {
            services::sub_context(context, &build.context)
                .map_err(|e| failed(format!("service {}: its build context: {e}", s.name)))
        };
        self.build_once(
            &services::service_tag(&env, s),
            sub,
            &build.dockerfile,
            SERVICE_BUILD_TIMEOUT,
        )
        .await
    }

    /// The networks of a sandbox of `spec`: the mode its container starts in, the egress
    /// proxy of an allowlist, and the task's services on a network of their own (started
    /// first). Grading has no network unless its task opts in: a patch's code cannot fetch the
    /// fix (or anything) at grade time. Agents sit alone on an internal network whose one
    /// reachable address is their egress proxy (their model endpoints, nothing else). Harbor
    /// tasks pass their own policy the same way; a task with services joins their network
    /// too (`services.rs`), starting on it when its policy gives no network.
    async fn networks(
        &self,
        spec: &SandboxSpec<'_>,
        cancel: &CancellationToken,
    ) -> Result<(NetworkMode, Option<Egress>, Option<Services>), SandboxError> {
        let services = match spec.task_env.as_ref().map(|t| &t.services) {
            Some(list) if !list.is_empty() => Some(self.start_services(spec, list, cancel).await?),
            _ => None,
        };
        Ok(match &spec.network {
            Network::None => match &services {
                Some(s) => (NetworkMode::Named(s.network.clone()), None, services),
                None => (NetworkMode::None, None, None),
            },
            Network::Open => (NetworkMode::Bridge, None, services),
            Network::Allowlist(allow) => match Egress::start(self, spec, allow.clone()).await {
                Ok(e) => (NetworkMode::Named(e.network.clone()), Some(e), services),
                Err(e) => {
                    release(&self.host, None, services).await;
                    return Err(e);
                }
            },
        })
    }
}

/// Removes a sandbox's services and egress proxy (after its container).
async fn release(host: &DockerHost, egress: Option<Egress>, services: Option<Services>) {
    if let Some(s) = services {
        s.remove(host).await;
    }
    if let Some(e) = egress {
        e.remove(host).await;
    }
}

/// The docker facts of a task: its image ID and the outcome-changing limits.
pub fn docker_facts(
    images: &BTreeMap<String, String>,
    base: &TaskBase,
    r: &Resources,
) -> BackendFacts {
    BackendFacts {
        kind: BackendKind::Docker,
        image: match base {
            TaskBase::Image { image, .. } => images.get(image).cloned(),
            TaskBase::Build { .. } => env_identity(images, base),
            TaskBase::Dir { .. } => None,
        },
        memory_bytes: Some(r.memory_bytes),
        pids: Some(r.pids),
        isolation: "container".into(),
    }
}

/// A container of a task's (or agent's) image.
pub struct DockerSandbox {
    c: Container,
    /// The base its repository's history was stripped to, and checked at, in its image.
    stripped: Option<String>,
    /// True until anything but bench's own start step runs in the container: only then is the
    /// repository exactly the stripped image's, checked when the image was made.
    fresh: std::sync::atomic::AtomicBool,
    /// Whether its policy gave it a network (the bridge, or the egress proxy's).
    policy_network: bool,
    /// The agent phase's proxy and internal network, removed with the container.
    egress: Option<Egress>,
    /// The task's services and their network, removed with the container.
    services: Option<Services>,
    paths: SandboxPaths,
}

/// An agent sandbox's own internal network and the proxy listening on its gateway.
pub struct Egress {
    network: String,
    proxy: EgressProxy,
}

impl Egress {
    async fn start(
        backend: &DockerBackend,
        spec: &SandboxSpec<'_>,
        allow: Vec<super::egress::Endpoint>,
    ) -> Result<Egress, SandboxError> {
        let n = backend.next_count();
        let network = format!(
            "bench-{}-{}-net{n}",
            backend.run_id,
            &spec.key[..12.min(spec.key.len())]
        );
        let labels = ContainerSpec::labels(&backend.run_id, spec.address, &backend.store_label);
        let gateway = backend
            .host
            .create_internal_network(&network, &labels)
            .await
            .map_err(failed)?;
        match EgressProxy::start(gateway, allow).await {
            Ok(proxy) => Ok(Egress { network, proxy }),
            Err(e) => {
                let _ = backend.host.remove_network(&network).await;
                Err(failed(format!(
                    "cannot start the egress proxy on {gateway} (network {network}): {e}"
                )))
            }
        }
    }

    async fn remove(self, host: &DockerHost) {
        drop(self.proxy);
        let _ = host.remove_network(&self.network).await;
    }
}

#[async_trait]
impl Sandbox for DockerSandbox {
    fn paths(&self) -> &SandboxPaths {
        &self.paths
    }

    fn stripped_to(&self) -> Option<&str> {
        self.stripped.as_deref()
    }

    fn checked_at_start(&self) -> Option<(&str, &str)> {
        self.stripped
            .as_deref()
            .filter(|_| self.fresh.load(std::sync::atomic::Ordering::SeqCst))
            .map(|base| {
                (
                    base,
                    "history check passed (when the stripped grading image was made)",
                )
            })
    }

    fn base_env(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = [
            ("HOME", self.paths.home.as_str()),
            ("GIT_AUTHOR_NAME", "bench"),
            ("GIT_AUTHOR_EMAIL", "bench@localhost"),
            ("GIT_COMMITTER_NAME", "bench"),
            ("GIT_COMMITTER_EMAIL", "bench@localhost"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        if let Some(e) = &self.egress {
            env.extend(e.proxy.env());
        }
        env
    }

    async fn exec(
        &self,
        script: &str,
        env: &[(String, String)],
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<ExecResult, SandboxError> {
        self.fresh.store(false, std::sync::atomic::Ordering::SeqCst);
        let mut all = self.base_env();
        all.extend_from_slice(env);
        let r = self
            .c
            .exec(script, &self.paths.repo, &all, timeout, cancel)
            .await
            .map_err(failed)?;
        if r.cancelled {
            return Err(SandboxError::Cancelled);
        }
        Ok(r)
    }

    async fn put_files(&self, files: &[(&str, &[u8], u32)]) -> Result<(), SandboxError> {
        self.fresh.store(false, std::sync::atomic::Ordering::SeqCst);
        self.c.put_files(files).await.map_err(failed)
    }

    async fn get_file(&self, path: &str) -> Result<Vec<u8>, SandboxError> {
        self.c.get_file(path).await.map_err(failed)
    }

    async fn get_dir(
        &self,
        path: &str,
        cap: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, SandboxError> {
        self.c.get_dir(path, cap).await.map_err(failed)
    }

    async fn destroy(self: Box<Self>) -> Result<(), SandboxError> {
        let this = *self;
        let host = this.c.host().clone();
        let removed = this.c.destroy().await.map_err(failed);
        release(&host, this.egress, this.services).await;
        removed
    }

    async fn snapshot(&self, exclude: &[&str]) -> Result<Vec<u8>, SandboxError> {
        self.c.snapshot(exclude).await.map_err(failed)
    }

    async fn restore(&self, snapshot: &[u8]) -> Result<(), SandboxError> {
        self.c.restore(snapshot).await.map_err(failed)
    }

    async fn end_processes(&self) -> Result<(), SandboxError> {
        self.fresh.store(false, std::sync::atomic::Ordering::SeqCst);
        self.c.end_processes().await.map_err(failed)
    }

    async fn set_network(&self, on: bool) -> Result<(), SandboxError> {
        // An agent behind the egress proxy is on its own network, not the bridge; a task's
        // services are on theirs.
        let mut networks = Vec::new();
        if self.policy_network || self.services.is_none() {
            networks.push(
                self.egress
                    .as_ref()
                    .map_or("bridge", |e| e.network.as_str()),
            );
        }
        if let Some(s) = &self.services {
            networks.push(s.network.as_str());
        }
        for n in networks {
            self.c.set_network(n, on).await.map_err(failed)?;
        }
        Ok(())
    }

    async fn set_policy_network(&self, on: bool) -> Result<(), SandboxError> {
        if !self.policy_network {
            return Ok(());
        }
        let network = self
            .egress
            .as_ref()
            .map_or("bridge", |e| e.network.as_str());
        self.c.set_network(network, on).await.map_err(failed)
    }
}
