//! Task images before a run, on the docker backend: which ones the manifest's tasks start
//! from, which the daemon lacks, what their registries say of them (for `bench plan`), the
//! disk check, the pulls (apply and `bench pull`, before any node starts), the store's record
//! of what bench pulled, and the images `bench gc --images` may remove. Talking to Docker and
//! registries is `backend/pull.rs`; this module decides what to ask for.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::backend::credentials::{CredentialsError, DockerConfig};
use crate::backend::disk::{self, DiskNeed};
use crate::backend::docker::DockerHost;
use crate::backend::pull::{self, PullError, PullProgress, Pulled};
use crate::manifest::Manifest;
use crate::store::{Store, StoreError};
use crate::tasks::{TaskBase, TaskSet};

/// The image references the tasks of `datasets` start from (a build context: its `FROM`s).
pub fn image_refs(datasets: &BTreeMap<String, TaskSet>) -> BTreeSet<String> {
    datasets
        .values()
        .flat_map(|d| d.tasks.values())
        .flat_map(|t| match &t.base {
            TaskBase::Image { image, .. } => vec![image.clone()],
            TaskBase::Build { from, .. } => from.clone(),
            TaskBase::Dir { .. } => vec![],
        })
        .collect()
}

/// An image a plan would pull, as its registry describes it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ImageToPull {
    pub image: String,
    pub registry: String,
    /// The manifest digest the tag resolves to.
    pub digest: Option<String>,
    /// Compressed bytes for this platform, when the registry lists them.
    pub compressed_bytes: Option<u64>,
    /// What went wrong asking the registry (the pull would fail the same way).
    pub error: Option<String>,
}

/// The references of `refs` the daemon lacks, asked of their registries (blocking).
pub fn describe_pulls(missing: &[String]) -> Vec<ImageToPull> {
    let config = DockerConfig::load();
    missing
        .iter()
        .map(|r| {
            let registry = crate::backend::image_ref::ImageRef::parse(r)
                .map(|i| i.registry)
                .unwrap_or_default();
            let res = match &config {
                Ok(c) => pull::resolve(std::slice::from_ref(r), c)
                    .map(|mut v| v.remove(0))
                    .map_err(|e| pull::render_errors(&e)),
                Err(e) => Err(e.to_string()),
            };
            match res {
                Ok(item) => ImageToPull {
                    image: r.clone(),
                    registry,
                    digest: Some(item.resolved.digest),
                    compressed_bytes: item.resolved.size,
                    error: None,
                },
                Err(e) => ImageToPull {
                    image: r.clone(),
                    registry,
                    digest: None,
                    compressed_bytes: None,
                    error: Some(e),
                },
            }
        })
        .collect()
}

/// Why the images could not be made ready. Nothing has run when this is returned.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("{0}")]
    Docker(String),
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
    #[error("cannot pull the task images:\n  - {}", pull::render_errors(.0))]
    Pull(Vec<PullError>),
    #[error("{0}")]
    Disk(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What to count in the disk check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskScope {
    /// Task images to pull and agent images to build (apply).
    Apply,
    /// Task images to pull only (`bench pull`).
    PullsOnly,
}

/// What [`prepare`] did.
#[derive(Debug, Default)]
pub struct Prepared {
    pub pulled: Vec<Pulled>,
    /// Referenced images the daemon already had.
    pub present: usize,
    pub need: DiskNeed,
    /// Things the user should know (e.g. a disk that could not be measured).
    pub notes: Vec<String>,
}

/// Makes the task images of a docker manifest ready before anything runs: resolves the
/// missing ones at their registries (every denied or missing image is an error here), checks
/// the daemon's disk, pulls (at most `[limits] pulls` at once), and records the pulls in the
/// store (the caller holds its lock). Local manifests and pools (which never pull): nothing.
pub async fn prepare(
    m: &Manifest,
    datasets: &BTreeMap<String, TaskSet>,
    store: &Store,
    scope: DiskScope,
    events: &crate::events::Events,
) -> Result<Prepared, PrepareError> {
    let mut out = Prepared::default();
    let config = super::backend_config(m);
    if config.uses_images() && !config.pulls_images() && scope == DiskScope::PullsOnly {
        out.notes.push(
            "`[backend] hosts`: bench pulls no image onto a pool's hosts; each runs the tasks whose image it holds (`docker pull` or `docker load` them on each host)"
                .to_string(),
        );
    }
    if !config.pulls_images() {
        return Ok(out);
    }
    let refs: Vec<String> = image_refs(datasets).into_iter().collect();
    if refs.is_empty() {
        return Ok(out);
    }
    let host = DockerHost::connect(m.backend.host.as_deref())
        .await
        .map_err(PrepareError::Docker)?;
    let mut present = BTreeMap::new();
    let mut missing = Vec::new();
    for r in &refs {
        match host.image_id(r).await.map_err(PrepareError::Docker)? {
            Some(id) => {
                present.insert(r.clone(), id);
            }
            None => missing.push(r.clone()),
        }
    }
    out.present = present.len();
    let items = if missing.is_empty() {
        Vec::new()
    } else {
        let config = DockerConfig::load()?;
        let asked = missing.clone();
        tokio::task::spawn_blocking(move || pull::resolve(&asked, &config))
            .await
            .map_err(|e| PrepareError::Docker(e.to_string()))?
            .map_err(PrepareError::Pull)?
    };
    // The disk: images to pull, and (apply) the agent images its solves would build, counted
    // by planning with the registry digests standing in for the IDs of images not pulled yet.
    out.need = DiskNeed {
        images_to_pull: items.len(),
        pull_compressed_bytes: items.iter().filter_map(|i| i.resolved.size).sum(),
        pull_unknown_size: items.iter().filter(|i| i.resolved.size.is_none()).count(),
        agent_images_to_build: 0,
    };
    let free = disk::daemon_free(&host).await;
    let reserve = disk::reserve().map_err(PrepareError::Disk)?;
    // Planning the solves costs a graph expansion: skipped when even one agent image per task
    // image and installing harness would fit (a no-op apply stays cheap).
    let installing = m.harnesses.values().filter(|h| h.installs()).count() as u64;
    let bound = DiskNeed {
        agent_images_to_build: (refs.len() as u64 * installing) as usize,
        ..out.need.clone()
    };
    let fits =
        matches!(&free, disk::DiskFree::Known { free, .. } if bound.bytes() + reserve <= *free);
    if scope == DiskScope::Apply && installing > 0 && !fits {
        let mut planning = m.clone();
        planning.backend.images = present.clone();
        for i in &items {
            planning
                .backend
                .images
                .insert(i.image.original.clone(), i.resolved.digest.clone());
        }
        let report = super::plan(
            &planning,
            Some(store),
            datasets,
            super::PlanOptions::default(),
            None,
        )
        .map_err(PrepareError::Docker)?;
        for a in &report.agent_images {
            if host
                .image_id(&a.image)
                .await
                .map_err(PrepareError::Docker)?
                .is_none()
            {
                out.need.agent_images_to_build += 1;
            }
        }
    }
    if let Some(note) =
        disk::check(&out.need, &free, reserve, &host.host).map_err(PrepareError::Disk)?
    {
        out.notes.push(note);
    }
    if items.is_empty() {
        return Ok(out);
    }
    let progress = PullProgress::new(events.clone());
    out.pulled = pull::pull_all(&host, items, m.limits.pulls, &progress)
        .await
        .map_err(PrepareError::Pull)?;
    let mut record = store.pulled_images()?;
    for p in &out.pulled {
        record.pulled(&p.id, &p.reference, &p.registry, &p.digest);
    }
    store.save_pulled_images(&record)?;
    Ok(out)
}

/// Marks the pulled images among the manifest's resolved images used now (the order
/// `gc --pulled` removes them in); the caller holds the store's lock.
pub fn mark_used(m: &Manifest, store: &Store) -> Result<(), StoreError> {
    let mut record = store.pulled_images()?;
    if record.used(m.backend.images.values()) {
        store.save_pulled_images(&record)?;
    }
    Ok(())
}

/// An image `bench gc --images` removes (or would).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct GcImage {
    pub id: String,
    pub references: Vec<String>,
    pub size_bytes: u64,
    /// Pulled images: when an apply last used it.
    pub last_used: Option<jiff::Timestamp>,
}

/// What `bench gc --images` found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImageGcReport {
    pub dry_run: bool,
    /// Images bench built (agent and stripped images, label `bench.base-image`) on the task
    /// images this store knows, children before their bases, each generation oldest first.
    pub built: Vec<GcImage>,
    /// Task images bench pulled that no recorded manifest reaches, least recently used first.
    pub pulled: Vec<GcImage>,
    /// Pulled images kept because a recorded manifest uses them.
    pub kept_pulled: Vec<String>,
    pub removed_bytes: u64,
    /// Images the daemon would not remove (e.g. used by a container).
    pub errors: Vec<String>,
}

/// The label of the images bench builds on another image (agent and stripped images).
pub const BASE_LABEL: &str = "bench.base-image";

/// The images bench built on the images in `known` (labelled [`BASE_LABEL`] with one of their
/// IDs), and those built on them in turn (agent images on stripped images), children before
/// their bases and each generation oldest first, as `bench gc --images` removes them.
async fn built_images(
    host: &DockerHost,
    mut known: BTreeSet<String>,
) -> Result<Vec<GcImage>, PrepareError> {
    use bollard::query_parameters::ListImagesOptions;
    let opts = ListImagesOptions {
        all: false,
        filters: Some(std::collections::HashMap::from([(
            "label".to_string(),
            vec![BASE_LABEL.to_string()],
        )])),
        ..Default::default()
    };
    let mut list =
        host.client.list_images(Some(opts)).await.map_err(|e| {
            PrepareError::Docker(format!("cannot list images on {}: {e}", host.host))
        })?;
    list.sort_by(|a, b| a.created.cmp(&b.created).then(a.id.cmp(&b.id)));
    // Generations: images built on a known image, then images built on those (agent images on
    // stripped images), ...; removed in reverse, children first.
    let mut generations: Vec<Vec<GcImage>> = Vec::new();
    loop {
        let mut next = Vec::new();
        list.retain(|i| {
            let on_known = i.labels.get(BASE_LABEL).is_some_and(|b| known.contains(b));
            if on_known {
                let mut refs: Vec<String> = i
                    .repo_tags
                    .iter()
                    .filter(|t| t.as_str() != "<none>:<none>")
                    .cloned()
                    .collect();
                refs.sort();
                if refs.is_empty() {
                    refs.push(i.id.clone());
                }
                next.push(GcImage {
                    id: i.id.clone(),
                    references: refs,
                    size_bytes: i.size.max(0) as u64,
                    last_used: None,
                });
            }
            !on_known
        });
        if next.is_empty() {
            break;
        }
        known.extend(next.iter().map(|i| i.id.clone()));
        generations.push(next);
    }
    Ok(generations.into_iter().rev().flatten().collect())
}

/// Lists (and unless `dry_run`, removes) the images bench built on the task images this store
/// knows (`reachable`: the image IDs its recorded manifests' tasks start from, and the images
/// it pulled), and with `pulled`, the task images it pulled whose IDs are not in `reachable`.
/// Images built for other stores' tasks on the same daemon are left to their own gc.
pub async fn gc_images(
    host: &DockerHost,
    store: Option<&Store>,
    reachable: &BTreeSet<String>,
    pulled: bool,
    dry_run: bool,
) -> Result<ImageGcReport, PrepareError> {
    use bollard::query_parameters::RemoveImageOptions;
    let mut report = ImageGcReport {
        dry_run,
        ..Default::default()
    };
    let mut record = match store {
        Some(s) => s.pulled_images()?,
        None => Default::default(),
    };
    let mut known: BTreeSet<String> = reachable.clone();
    known.extend(record.images.keys().cloned());
    report.built = built_images(host, known).await?;
    if pulled {
        for (id, p) in record.by_last_use() {
            if reachable.contains(id) {
                report.kept_pulled.push(id.clone());
                continue;
            }
            let Ok(i) = host.client.inspect_image(id).await else {
                continue; // no longer on the daemon
            };
            // Only the names bench pulled it as (the user may have tagged it otherwise).
            let tags: BTreeSet<String> = i.repo_tags.unwrap_or_default().into_iter().collect();
            let mut refs: Vec<String> = p
                .references
                .iter()
                .filter(|r| tags.contains(*r))
                .cloned()
                .collect();
            if refs.is_empty() {
                refs.push(id.clone());
            }
            report.pulled.push(GcImage {
                id: id.clone(),
                references: refs,
                size_bytes: i.size.unwrap_or(0).max(0) as u64,
                last_used: Some(p.last_used),
            });
        }
    }
    report.removed_bytes = report
        .built
        .iter()
        .chain(&report.pulled)
        .map(|i| i.size_bytes)
        .sum();
    if dry_run {
        return Ok(report);
    }
    let mut removed_bytes = 0;
    let mut gone = Vec::new();
    for (i, is_pulled) in report
        .built
        .iter()
        .map(|i| (i, false))
        .chain(report.pulled.iter().map(|i| (i, true)))
    {
        let mut ok = true;
        for r in &i.references {
            if let Err(e) = host
                .client
                .remove_image(r, None::<RemoveImageOptions>, None)
                .await
            {
                ok = false;
                report
                    .errors
                    .push(format!("cannot remove {r} ({}): {e}", i.id));
            }
        }
        if ok {
            removed_bytes += i.size_bytes;
            if is_pulled {
                gone.push(i.id.clone());
            }
        }
    }
    report.removed_bytes = removed_bytes;
    if let Some(s) = store
        && !gone.is_empty()
    {
        for id in gone {
            record.images.remove(&id);
        }
        s.save_pulled_images(&record)?;
    }
    Ok(report)
}
