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

use super::docker::{Container, ContainerSpec, DockerHost};
use super::exec::ExecResult;
use super::sandbox::{Backend, Phase, Sandbox, SandboxError, SandboxPaths, SandboxSpec};
use crate::jobs::{BackendFacts, InstallSpec};
use crate::manifest::BackendKind;
use crate::tasks::TaskBase;

/// Repository of agent images.
pub const AGENT_REPO: &str = "bench-agent";

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
    count: std::sync::atomic::AtomicUsize,
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
            count: Default::default(),
        }
    }

    fn spec(&self, image: String, address: &str, key: &str, network: bool) -> ContainerSpec {
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
        let cell = {
            let mut builds = self.builds.lock().unwrap_or_else(|p| p.into_inner());
            builds.entry(tag.clone()).or_default().clone()
        };
        let context = context.clone();
        cell.get_or_try_init(|| async {
            if let Some(id) = self.host.image_id(&tag).await.map_err(failed)? {
                return Ok(id);
            }
            let id = self
                .host
                .build_image(context.to_vec(), &tag, ENV_BUILD_TIMEOUT)
                .await
                .map_err(failed)?;
            eprintln!("built task environment {tag}");
            Ok(id)
        })
        .await
        .cloned()
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
        let mut spec = self.spec(base_id.to_string(), &format!("install/{tag}"), tag, true);
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
        eprintln!("built agent image {reference} (on {})", short(base_id));
        Ok(id)
    }
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
        let image = match &spec.image {
            Some(i) => i.clone(),
            None => self.task_image(spec.base).await?,
        };
        // Grading has no network: a patch's code cannot fetch the fix (or anything) at grade
        // time. Agents keep the default bridge (their model endpoints). A task's own
        // environment decides for itself (Harbor's policies, applied by its protocol).
        let network = match &spec.task_env {
            Some(t) => t.network,
            None => spec.phase == Phase::Agent,
        };
        let mut cspec = self.spec(image, spec.address, spec.key, network);
        cspec.hardening = spec.hardening.cloned();
        if let Some(t) = &spec.task_env {
            cspec.cpus = t.cpus;
            cspec.memory_bytes = t.memory_bytes;
            cspec.gpus = t.gpus;
        }
        let c = Container::start(&self.host, &cspec).await.map_err(failed)?;
        let repo_dir = spec.repo_dir.unwrap_or(DEFAULT_REPO);
        let enter = match &spec.task_env {
            // The task's workdir as it is: no repository is looked for.
            Some(_) => format!(
                "mkdir -p {d} && cd {d} || exit 97\n",
                d = super::shell_quote(repo_dir)
            ),
            None => cd_repo(repo_dir),
        };
        let r = c
            .exec(
                &format!("mkdir -p {STATE}/side {STATE}/home\n{enter}pwd -P"),
                "/",
                &[],
                Duration::from_secs(60),
                cancel,
            )
            .await;
        let repo = match r {
            Ok(r) if r.exit_code == Some(0) => {
                String::from_utf8_lossy(&r.output).trim().to_string()
            }
            Ok(r) if r.cancelled => {
                let _ = c.destroy().await;
                return Err(SandboxError::Cancelled);
            }
            Ok(r) => {
                let _ = c.destroy().await;
                return Err(failed(format!(
                    "no repository at {repo_dir} in the image: {}",
                    String::from_utf8_lossy(&r.output).trim()
                )));
            }
            Err(e) => {
                let _ = c.destroy().await;
                return Err(failed(e));
            }
        };
        Ok(Box::new(DockerSandbox {
            c,
            paths: SandboxPaths {
                repo,
                workdir: repo_dir.to_string(),
                state: STATE.to_string(),
                side: format!("{STATE}/side"),
                home: format!("{STATE}/home"),
            },
        }))
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
    paths: SandboxPaths,
}

#[async_trait]
impl Sandbox for DockerSandbox {
    fn paths(&self) -> &SandboxPaths {
        &self.paths
    }

    fn base_env(&self) -> Vec<(String, String)> {
        [
            ("HOME", self.paths.home.as_str()),
            ("GIT_AUTHOR_NAME", "bench"),
            ("GIT_AUTHOR_EMAIL", "bench@localhost"),
            ("GIT_COMMITTER_NAME", "bench"),
            ("GIT_COMMITTER_EMAIL", "bench@localhost"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    async fn exec(
        &self,
        script: &str,
        env: &[(String, String)],
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<ExecResult, SandboxError> {
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
        self.c.destroy().await.map_err(failed)
    }

    async fn snapshot(&self, exclude: &[&str]) -> Result<Vec<u8>, SandboxError> {
        self.c.snapshot(exclude).await.map_err(failed)
    }

    async fn restore(&self, snapshot: &[u8]) -> Result<(), SandboxError> {
        self.c.restore(snapshot).await.map_err(failed)
    }

    async fn set_network(&self, on: bool) -> Result<(), SandboxError> {
        self.c.set_network(on).await.map_err(failed)
    }
}
