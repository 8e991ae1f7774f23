//! Opening the backend of a manifest's `[backend]`: the one place above the sandboxes that asks
//! which kind it is. [`open`] builds the backend an apply runs on (local workspaces, one Docker
//! daemon, or a pool of them), [`resolve_images`] and [`images_present`] answer for the task
//! and agent images (nothing on the local backend), [`warm_up`] starts what a backend's first
//! use would wait for. Callers pass a [`BackendConfig`], a view of the manifest's section, so
//! nothing here reads a manifest. Not what runs in a sandbox (`sandbox.rs` and its
//! implementations).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::docker::DockerHost;
use super::docker_backend::{DockerBackend, Resources};
use super::local::LocalBackend;
use super::pool::PoolBackend;
use super::sandbox::Backend;
use crate::events::Events;
use crate::types::{BackendKind, DockerHostSpec};

/// What the backend is made from: the manifest's `[backend]` (and `[limits] containers`).
#[derive(Debug, Clone, Copy)]
pub struct BackendConfig<'a> {
    pub kind: BackendKind,
    /// docker: the daemon (`None`: DOCKER_HOST, else the local socket).
    pub host: Option<&'a str>,
    /// docker: a pool of daemons; empty: the single `host`.
    pub hosts: &'a [DockerHostSpec],
    /// docker: image reference -> ID, resolved before planning.
    pub images: &'a BTreeMap<String, String>,
    pub resources: Resources,
    /// Containers at once (per host of a pool without its own `containers`).
    pub containers: usize,
}

impl BackendConfig<'_> {
    /// Whether tasks run from container images (which are resolved, pulled and keyed by ID).
    pub fn uses_images(&self) -> bool {
        self.kind == BackendKind::Docker
    }

    /// Whether bench pulls the task images it lacks onto the daemon before anything runs: one
    /// daemon, yes; a pool (`[backend] hosts`) never pulls (each host runs the tasks whose
    /// image it holds, see `pool.rs`), so its images are not looked for on this machine's
    /// daemon either.
    pub fn pulls_images(&self) -> bool {
        self.uses_images() && self.hosts.is_empty()
    }
}

/// Starts, in the background, what the backend's first use waits for: the local jail's probe
/// (part of local keys), so it runs while the datasets load.
pub fn warm_up(config: &BackendConfig<'_>) {
    if config.kind == BackendKind::Local {
        std::thread::spawn(super::jail::isolation);
    }
}

/// What of this machine the backend's keys depend on: on the local backend, the jail's
/// isolation mode (`None` elsewhere).
pub fn machine_fact(config: &BackendConfig<'_>) -> Option<&'static str> {
    (config.kind == BackendKind::Local).then(super::jail::isolation)
}

/// Where an apply's backend lives.
pub struct OpenSpec<'a> {
    pub config: BackendConfig<'a>,
    /// The store's root (its label on containers) and its directory for workspaces.
    pub store_root: &'a Path,
    pub tmp: PathBuf,
    /// Paths a local sandbox's commands must not see (the store, local datasets).
    pub hidden: Vec<PathBuf>,
    pub run_id: &'a str,
    pub events: &'a Events,
    /// Whether the caller holds the store's lock (an apply): then containers of the store's
    /// other runs are leftovers of dead runs and are swept. A worker shares its store with
    /// other workers running now: only containers of dead processes are swept.
    pub store_locked: bool,
}

/// The backend an apply runs on. Docker: connects, and sweeps the leftovers of dead runs of the
/// same store before starting (the caller holds the store's lock); a pool connects to every
/// host. Local: warns once when sandboxes run without namespaces.
pub async fn open(spec: OpenSpec<'_>) -> Result<Arc<dyn Backend>, String> {
    let c = spec.config;
    let store_label =
        crate::key::digest(spec.store_root.display().to_string().as_bytes())[..16].to_string();
    match c.kind {
        BackendKind::Local => {
            super::jail::warn_if_unavailable(spec.events);
            Ok(Arc::new(LocalBackend::new(spec.tmp, spec.hidden)))
        }
        BackendKind::Docker if !c.hosts.is_empty() => Ok(Arc::new(
            PoolBackend::start(
                c.hosts,
                spec.run_id,
                &store_label,
                c.images,
                c.resources,
                c.containers,
                spec.events.clone(),
            )
            .await?,
        )),
        BackendKind::Docker => {
            let host = DockerHost::connect(c.host).await?;
            let store = spec.store_locked.then_some(store_label.as_str());
            let removed = host.sweep(store, Some(spec.run_id)).await?;
            if !removed.is_empty() {
                spec.events.note(format!(
                    "removed {} containers left by dead runs: {}",
                    removed.len(),
                    removed.join(", ")
                ));
            }
            Ok(Arc::new(
                DockerBackend::new(
                    host,
                    spec.run_id.to_string(),
                    store_label,
                    c.images.clone(),
                    c.resources,
                    c.containers,
                )
                .with_events(spec.events.clone()),
            ))
        }
    }
}

/// The IDs of the images `refs` names, as the daemon (or every reachable host of a pool) has
/// them: keys use IDs, never tags. An image no daemon has is left out. Local: none.
pub async fn resolve_images(
    config: &BackendConfig<'_>,
    refs: &BTreeSet<String>,
    events: &Events,
) -> Result<BTreeMap<String, String>, String> {
    if !config.uses_images() || refs.is_empty() {
        return Ok(BTreeMap::new());
    }
    if !config.hosts.is_empty() {
        return super::pool::resolve_images(config.hosts, refs, events).await;
    }
    let d = DockerHost::connect(config.host).await?;
    let mut images = BTreeMap::new();
    for r in refs {
        if let Some(id) = d.image_id(r).await? {
            images.insert(r.clone(), id);
        }
    }
    Ok(images)
}

/// Which of `refs` exist where the backend runs agents (a pool: on any reachable host).
/// Local: none.
pub async fn images_present(
    config: &BackendConfig<'_>,
    refs: &BTreeSet<String>,
) -> Result<BTreeSet<String>, String> {
    if !config.uses_images() || refs.is_empty() {
        return Ok(BTreeSet::new());
    }
    if !config.hosts.is_empty() {
        return super::pool::images_on_any(config.hosts, refs).await;
    }
    let d = DockerHost::connect(config.host).await?;
    let mut present = BTreeSet::new();
    for r in refs {
        if d.image_id(r).await?.is_some() {
            present.insert(r.clone());
        }
    }
    Ok(present)
}
