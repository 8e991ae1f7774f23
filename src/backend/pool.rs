//! A pool of Docker daemons behind the one [`Backend`] trait (`[backend] hosts`): each host is
//! a [`DockerBackend`] of its own (its own connection, agent and stripped images, container
//! names), and this module decides where each sandbox goes.
//!
//! Scheduling: a sandbox goes to a reachable host that holds the task image (bench never
//! pulls), preferring one that already holds the image it will start from (the agent image of
//! its harness, the stripped image of its grading), then the least loaded (sandboxes over the
//! host's `containers`), then the first listed (deterministic). A host is full at its
//! `containers`, or (when it sets `cpus`) when the CPUs its sandboxes reserve would pass them. The sandboxes of
//! one node that overlap in time (a review's coder and reviewer) stay on one host, never
//! waiting for each other. Agent images are built on the host that runs the agent: the image
//! [`Backend::agent_image`] returns names its host, so the agent's sandbox starts there.
//!
//! Image identity: keys carry a task image's ID (`sha256:` of its config: a content digest,
//! the same on every daemon that holds the same image, pulled or loaded). Hosts that hold
//! different images under one tag are refused before anything runs ([`resolve_images`]); a host
//! that lacks an image simply runs none of its tasks.
//!
//! A lost host: when an operation on a host fails, the host is pinged; if it does not answer it
//! is marked unreachable for the rest of the apply. The nodes that had sandboxes there fail as
//! infrastructure errors and [`Backend::retry`] tells the dispatcher to run them again (on the
//! other hosts); completed nodes are in the store already. Containers are removed on every
//! path on their own host, and `finish` sweeps the run's leftovers on every host.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::docker::{CONNECT_TIMEOUT, DockerHost, TLS, connect_tls};
use super::docker_backend::{AGENT_REPO, DockerBackend, Resources, STRIPPED_REPO};
use super::exec::ExecResult;
use super::sandbox::{Backend, Sandbox, SandboxError, SandboxPaths, SandboxSpec};
use crate::events::{BackendSummary, Event, Events, HostSummary};
use crate::tasks::TaskBase;
use crate::types::DockerHostSpec;
use crate::types::InstallSpec;

/// How long a host may take to answer a ping before it counts as unreachable.
const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// An agent image as the pool hands it out: `PREFIX<host index>:<image id>`.
const PREFIX: &str = "bench-pool-host-";

/// The phrase every error of a lost host carries (how [`Backend::retry`] recognises them).
fn lost(name: &str) -> String {
    format!("on host {name}, which became unreachable")
}

/// An `ssh -L` forwarding a local socket to the remote daemon's, killed on drop.
struct Tunnel {
    child: std::process::Child,
    dir: std::path::PathBuf,
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs_err::remove_dir_all(&self.dir);
    }
}

/// `ssh://[user@]host[:port][/socket]` -> (destination, port, remote socket).
fn parse_ssh(url: &str) -> Result<(String, Option<u16>, String), String> {
    let rest = url.strip_prefix("ssh://").unwrap_or(url);
    let (authority, socket) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/var/run/docker.sock".to_string()),
    };
    let (dest, port) = match authority.rsplit_once(':') {
        Some((d, p)) => (
            d.to_string(),
            Some(
                p.parse::<u16>()
                    .map_err(|_| format!("host {url}: `{p}` is not a port"))?,
            ),
        ),
        None => (authority.to_string(), None),
    };
    if dest.is_empty() || dest.ends_with('@') {
        return Err(format!(
            "host {url}: no host name; write ssh://[user@]host[:port][/path/docker.sock]"
        ));
    }
    Ok((dest, port, socket))
}

async fn connect_ssh(url: &str) -> Result<(DockerHost, Tunnel), String> {
    let (dest, port, socket) = parse_ssh(url)?;
    let dir = tempfile::Builder::new()
        .prefix("bench-ssh-")
        .tempdir()
        .map_err(|e| format!("host {url}: cannot make a directory for the ssh tunnel: {e}"))?
        .keep();
    let local = dir.join("docker.sock");
    let mut cmd = std::process::Command::new("ssh");
    cmd.args([
        "-nNT",
        "-o",
        "BatchMode=yes",
        "-o",
        "ExitOnForwardFailure=yes",
        "-o",
        "ServerAliveInterval=10",
        "-L",
    ])
    .arg(format!("{}:{socket}", local.display()));
    if let Some(p) = port {
        cmd.arg("-p").arg(p.to_string());
    }
    cmd.arg(&dest)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().map_err(|e| {
        format!(
            "host {url}: cannot run `ssh` ({e}); install the OpenSSH client or use a tcp:// address"
        )
    })?;
    let mut tunnel = Tunnel { child, dir };
    let t0 = Instant::now();
    while !local.exists() {
        if let Ok(Some(status)) = tunnel.child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = tunnel.child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            return Err(format!(
                "host {url}: ssh exited ({status}) before forwarding the daemon's socket: {}; check that `ssh {dest}` logs in without a password prompt (keys or an agent) and that {socket} exists there",
                err.trim()
            ));
        }
        if t0.elapsed() > CONNECT_TIMEOUT {
            return Err(format!(
                "host {url}: the ssh tunnel did not come up within {} s",
                CONNECT_TIMEOUT.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let host = DockerHost::connect(Some(&format!("unix://{}", local.display())))
        .await
        .map_err(|e| format!("host {url} (through ssh): {e}"))?;
    Ok((host, tunnel))
}

/// One connected host of the pool.
struct Connected {
    host: DockerHost,
    tunnel: Option<Tunnel>,
    /// The daemon's ID, name and data root (two addresses of one daemon are refused).
    daemon_id: Option<String>,
}

async fn connect(spec: &DockerHostSpec) -> Result<Connected, String> {
    let (host, tunnel) = if spec.url.starts_with("ssh://") {
        let (h, t) = connect_ssh(&spec.url).await?;
        (h, Some(t))
    } else if let Some(tls) = &spec.tls {
        TLS.lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(spec.url.clone(), tls.clone());
        (connect_tls(&spec.url, tls).await?, None)
    } else {
        let h = DockerHost::connect(Some(&spec.url)).await.map_err(|e| {
            e.replace(
                "from the manifest's [backend] host",
                "listed in the manifest's [backend] hosts",
            )
        })?;
        (h, None)
    };
    // The ID alone is not enough: daemons sharing /etc/docker share their key, hence their
    // ID; their data roots differ.
    let daemon_id = host.client.info().await.ok().and_then(|i| {
        Some(format!(
            "{} on {} at {}",
            i.id?,
            i.name.unwrap_or_default(),
            i.docker_root_dir.unwrap_or_default()
        ))
    });
    Ok(Connected {
        host,
        tunnel,
        daemon_id,
    })
}

/// Connects to every host, in order, concurrently: the reachable ones, and the errors of the
/// others. Two addresses of one daemon are an error.
async fn connect_all(
    hosts: &[DockerHostSpec],
) -> Result<Vec<(usize, Result<Connected, String>)>, String> {
    let all = futures_util::future::join_all(hosts.iter().map(connect)).await;
    let mut ids: BTreeMap<String, &str> = BTreeMap::new();
    for (spec, c) in hosts.iter().zip(&all) {
        if let Ok(Connected {
            daemon_id: Some(id),
            ..
        }) = c
            && let Some(first) = ids.insert(id.clone(), &spec.url)
        {
            return Err(format!(
                "`[backend] hosts` lists one Docker daemon twice: {first} and {} are the same daemon ({id}); list it once and give it more `containers`",
                spec.url
            ));
        }
    }
    Ok(all.into_iter().enumerate().collect())
}

/// A pool manifest's task images resolved to their IDs on every reachable host: ref -> ID.
/// A ref held under different IDs by two hosts is an error (keys carry one ID); unreachable
/// hosts are skipped with a note, all of them unreachable is an error.
pub async fn resolve_images(
    hosts: &[DockerHostSpec],
    refs: &BTreeSet<String>,
    events: &Events,
) -> Result<BTreeMap<String, String>, String> {
    let mut images: BTreeMap<String, (String, &str)> = BTreeMap::new();
    let mut down = Vec::new();
    for (i, c) in connect_all(hosts).await? {
        let url = hosts[i].url.as_str();
        let c = match c {
            Ok(c) => c,
            Err(e) => {
                down.push(e);
                continue;
            }
        };
        for r in refs {
            let Some(id) = c
                .host
                .image_id(r)
                .await
                .map_err(|e| format!("host {url}: {e}"))?
            else {
                continue;
            };
            match images.get(r) {
                Some((other, at)) if *other != id => {
                    return Err(mismatch(r, at, other, url, &id));
                }
                Some(_) => {}
                None => {
                    images.insert(r.clone(), (id, url));
                }
            }
        }
        drop(c.tunnel);
    }
    if down.len() == hosts.len() {
        return Err(format!(
            "no host of `[backend] hosts` is reachable:\n  {}",
            down.join("\n  ")
        ));
    }
    for e in down {
        events.note(format!("{e}; planning with the other hosts"));
    }
    Ok(images.into_iter().map(|(r, (id, _))| (r, id)).collect())
}

/// The images of `refs` that at least one reachable host of the pool holds.
pub async fn images_on_any(
    hosts: &[DockerHostSpec],
    refs: &BTreeSet<String>,
) -> Result<BTreeSet<String>, String> {
    let mut found = BTreeSet::new();
    for (i, c) in connect_all(hosts).await? {
        let Ok(c) = c else { continue };
        for r in refs {
            if c.host
                .image_id(r)
                .await
                .map_err(|e| format!("host {}: {e}", hosts[i].url))?
                .is_some()
            {
                found.insert(r.clone());
            }
        }
    }
    Ok(found)
}

fn mismatch(image: &str, a: &str, id_a: &str, b: &str, id_b: &str) -> String {
    format!(
        "image {image} is not the same image on every host: {a} has {}, {b} has {}; node keys carry one image ID, so the hosts must hold identical images: push it to a registry and pull it by digest on each host, or copy it (`docker save {image} | docker -H {b} load`), or remove the stale one",
        short(id_a),
        short(id_b)
    )
}

fn short(id: &str) -> &str {
    let id = id.strip_prefix("sha256:").unwrap_or(id);
    &id[..12.min(id.len())]
}

/// `bench clean` over a pool: every bench container, then every bench network, on every host.
/// Returns the names removed per host and the errors of unreachable hosts.
pub async fn clean(hosts: &[DockerHostSpec]) -> Result<(Vec<String>, Vec<String>), String> {
    let mut removed = Vec::new();
    let mut errors = Vec::new();
    for (i, c) in connect_all(hosts).await? {
        let url = &hosts[i].url;
        let c = match c {
            Ok(c) => c,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let r = async {
            for (id, name, _) in c.host.list(&[]).await? {
                c.host.remove(&id).await?;
                removed.push(format!("{name} (on {url})"));
            }
            for (name, _) in c.host.networks(&[]).await? {
                c.host.remove_network(&name).await?;
                removed.push(format!("network {name} (on {url})"));
            }
            Ok::<(), String>(())
        }
        .await;
        if let Err(e) = r {
            errors.push(format!("host {url}: {e}"));
        }
    }
    Ok((removed, errors))
}

/// One host of a running pool.
struct Member {
    name: String,
    backend: DockerBackend,
    /// Sandboxes at once.
    cap: usize,
    /// CPUs its sandboxes may reserve.
    cpus: f64,
    /// The task image refs it holds (with the pool's IDs).
    has: BTreeSet<String>,
    tunnel: Mutex<Option<Tunnel>>,
}

#[derive(Default)]
struct State {
    alive: Vec<bool>,
    /// Sandboxes alive per host, and the CPUs they reserve.
    load: Vec<usize>,
    /// Agent images handed out per host whose sandbox is not created yet (they will land
    /// there): counted as load when choosing, so one wave of solves spreads.
    pending: Vec<usize>,
    cpu: Vec<f64>,
    /// Sandboxes created per host (the summary), and nodes lost with a host.
    created: Vec<usize>,
    lost_nodes: Vec<usize>,
    /// Node key -> the host of its sandboxes, and how many are alive.
    key_host: HashMap<String, (usize, usize)>,
    /// Node key -> times retried.
    attempts: HashMap<String, usize>,
    /// (host, image reference) known to be there.
    images: HashSet<(usize, String)>,
}

struct Shared {
    members: Vec<Member>,
    state: Mutex<State>,
    wake: tokio::sync::Notify,
    resources: Resources,
    events: Events,
}

/// The docker backend over several daemons.
pub struct PoolBackend {
    shared: Arc<Shared>,
}

impl PoolBackend {
    /// Connects to every host (unreachable ones are left out with a note; none reachable is an
    /// error), sweeps the leftovers of dead runs on each, and finds which task images each
    /// holds.
    pub async fn start(
        hosts: &[DockerHostSpec],
        run_id: &str,
        store_label: &str,
        images: &BTreeMap<String, String>,
        resources: Resources,
        default_containers: usize,
        events: Events,
    ) -> Result<PoolBackend, String> {
        let mut members = Vec::new();
        let mut down = Vec::new();
        for (i, c) in connect_all(hosts).await? {
            let spec = &hosts[i];
            let c = match c {
                Ok(c) => c,
                Err(e) => {
                    down.push(e);
                    continue;
                }
            };
            let removed = c
                .host
                .sweep(Some(store_label), Some(run_id))
                .await
                .map_err(|e| format!("host {}: {e}", spec.url))?;
            if !removed.is_empty() {
                events.note(format!(
                    "removed {} containers left by dead runs on {}: {}",
                    removed.len(),
                    spec.url,
                    removed.join(", ")
                ));
            }
            let mut has = BTreeSet::new();
            let mut here = BTreeMap::new();
            for (r, id) in images {
                match c.host.image_id(r).await? {
                    Some(h) if h == *id => {
                        has.insert(r.clone());
                        here.insert(r.clone(), id.clone());
                    }
                    Some(h) => {
                        return Err(mismatch(r, "the other hosts", id, &spec.url, &h));
                    }
                    None => {}
                }
            }
            let cap = spec.containers.unwrap_or(default_containers).max(1);
            // Without `cpus`, only `containers` bounds a host (as `limits.containers` bounds
            // one `host`).
            let cpus = spec.cpus.unwrap_or(f64::MAX);
            members.push(Member {
                name: spec.url.clone(),
                backend: DockerBackend::new(
                    c.host,
                    run_id.to_string(),
                    store_label.to_string(),
                    here,
                    resources,
                    cap,
                )
                .with_events(events.clone()),
                cap,
                cpus,
                has,
                tunnel: Mutex::new(c.tunnel),
            });
        }
        if members.is_empty() {
            return Err(format!(
                "no host of `[backend] hosts` is reachable:\n  {}",
                down.join("\n  ")
            ));
        }
        for e in &down {
            events.note(format!(
                "{e}; this apply runs on the other {} hosts",
                members.len()
            ));
        }
        let n = members.len();
        Ok(PoolBackend {
            shared: Arc::new(Shared {
                members,
                state: Mutex::new(State {
                    alive: vec![true; n],
                    load: vec![0; n],
                    pending: vec![0; n],
                    cpu: vec![0.0; n],
                    created: vec![0; n],
                    lost_nodes: vec![0; n],
                    ..Default::default()
                }),
                wake: tokio::sync::Notify::new(),
                resources,
                events,
            }),
        })
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// After a failed operation on host `h`: whether it still answers. An unreachable host is
    /// marked so for the rest of the apply (with a note) and the error names it.
    async fn check(&self, h: usize, e: SandboxError) -> SandboxError {
        let SandboxError::Failed(msg) = e else {
            return e;
        };
        if !self.lock().alive[h] {
            return SandboxError::Failed(format!("{}: {msg}", lost(&self.members[h].name)));
        }
        let ping =
            tokio::time::timeout(PING_TIMEOUT, self.members[h].backend.host.client.ping()).await;
        let why = match ping {
            Ok(Ok(_)) => return SandboxError::Failed(msg),
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {} s", PING_TIMEOUT.as_secs()),
        };
        let first = {
            let mut st = self.lock();
            std::mem::replace(&mut st.alive[h], false)
        };
        if first {
            let left = self.lock().alive.iter().filter(|a| **a).count();
            self.events.note(format!(
                "host {} is unreachable ({why}); its running nodes fail and run again on the other hosts ({left} reachable)",
                self.members[h].name
            ));
            self.wake.notify_waiters();
        }
        SandboxError::Failed(format!("{}: {msg}", lost(&self.members[h].name)))
    }

    /// Whether host `h` holds `reference` (positive answers are remembered).
    async fn has_image(&self, h: usize, reference: &str) -> bool {
        if self.lock().images.contains(&(h, reference.to_string())) {
            return true;
        }
        let found = matches!(
            self.members[h].backend.host.image_id(reference).await,
            Ok(Some(_))
        );
        if found {
            self.lock().images.insert((h, reference.to_string()));
        }
        found
    }

    /// The hosts that may run a sandbox of `base`: reachable ones holding its image(s).
    fn eligible(&self, st: &State, base: &TaskBase) -> Result<Vec<usize>, String> {
        let needs: Vec<&String> = match base {
            TaskBase::Image { image, .. } => vec![image],
            TaskBase::Build { from, .. } => from.iter().collect(),
            TaskBase::Dir { .. } => vec![],
        };
        let holds = |h: usize| needs.iter().all(|r| self.members[h].has.contains(*r));
        let alive: Vec<usize> = (0..self.members.len()).filter(|h| st.alive[*h]).collect();
        if alive.is_empty() {
            return Err(format!(
                "every host of the pool is unreachable ({}); start them, or fix `[backend] hosts`",
                self.names(0..self.members.len())
            ));
        }
        let ok: Vec<usize> = alive.iter().copied().filter(|h| holds(*h)).collect();
        if ok.is_empty() {
            let held: Vec<usize> = (0..self.members.len()).filter(|h| holds(*h)).collect();
            let images = needs
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            return Err(if held.is_empty() {
                format!(
                    "image {images} is on no host of the pool ({}); build or pull it on at least one (bench never pulls)",
                    self.names(alive.iter().copied())
                )
            } else {
                format!(
                    "image {images} is only on unreachable hosts ({}); load it on a reachable one ({}) or bring the host back",
                    self.names(held.into_iter()),
                    self.names(alive.iter().copied())
                )
            });
        }
        Ok(ok)
    }

    fn names(&self, hs: impl Iterator<Item = usize>) -> String {
        hs.map(|h| self.members[h].name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The best of `hosts` with room for a sandbox of `cpus` (preferred first, then the least
    /// loaded, then the first listed); `None` when all are full.
    fn pick(&self, st: &State, hosts: &[usize], preferred: &[bool], cpus: f64) -> Option<usize> {
        hosts
            .iter()
            .zip(preferred)
            .filter(|(h, _)| {
                let h = **h;
                let m = &self.members[h];
                st.alive[h]
                    && st.load[h] < m.cap
                    && (st.load[h] == 0 || st.cpu[h] + cpus.min(m.cpus) <= m.cpus + 1e-9)
            })
            .min_by(|(a, pa), (b, pb)| {
                let ra = (st.load[**a] + st.pending[**a]) as f64 / self.members[**a].cap as f64;
                let rb = (st.load[**b] + st.pending[**b]) as f64 / self.members[**b].cap as f64;
                pb.cmp(pa)
                    .then(ra.partial_cmp(&rb).unwrap_or(std::cmp::Ordering::Equal))
                    .then(a.cmp(b))
            })
            .map(|(h, _)| *h)
    }

    fn release(&self, h: usize, key: &str, cpus: f64) {
        let mut st = self.lock();
        st.load[h] = st.load[h].saturating_sub(1);
        st.cpu[h] = (st.cpu[h] - cpus).max(0.0);
        if let Some((_, n)) = st.key_host.get_mut(key) {
            *n = n.saturating_sub(1);
        }
        drop(st);
        self.wake.notify_waiters();
    }

    /// One line of the hosts' load: `name running/cap` each, unreachable ones marked.
    fn load_line(&self) -> String {
        let st = self.lock();
        let parts: Vec<String> = self
            .members
            .iter()
            .enumerate()
            .map(|(h, m)| {
                format!(
                    "{} {}/{}{}",
                    m.name,
                    st.load[h],
                    m.cap,
                    if st.alive[h] { "" } else { " (unreachable)" }
                )
            })
            .collect();
        format!("hosts   {}", parts.join("  "))
    }
}

/// The CPUs a sandbox of `spec` reserves.
fn cpus_of(spec: &SandboxSpec<'_>, r: &Resources) -> f64 {
    spec.task_env.as_ref().map_or(r.cpus, |t| t.cpus)
}

#[async_trait]
impl Backend for PoolBackend {
    fn base_commit(&self, base: &TaskBase) -> Option<String> {
        self.shared.members[0].backend.base_commit(base)
    }

    async fn create(
        &self,
        spec: &SandboxSpec<'_>,
        cancel: &CancellationToken,
    ) -> Result<Box<dyn Sandbox>, SandboxError> {
        let s = &self.shared;
        let cpus = cpus_of(spec, &s.resources);
        // An agent image names its host.
        let (fixed, image) = match spec.image.as_deref().and_then(|i| i.strip_prefix(PREFIX)) {
            Some(rest) => {
                let (h, id) = rest.split_once(':').unwrap_or(("0", rest));
                (h.parse::<usize>().ok(), Some(id.to_string()))
            }
            None => (None, spec.image.clone()),
        };
        // Grading prefers a host that has the stripped image already.
        let want = match (spec.base, spec.stripped, &spec.task_env, &fixed) {
            (TaskBase::Image { image, .. }, Some(base), None, None) => {
                let id = s
                    .members
                    .iter()
                    .find_map(|m| m.backend.images.get(image).cloned());
                id.map(|id| {
                    format!(
                        "{STRIPPED_REPO}:{}",
                        super::docker_backend::stripped_tag(
                            &id,
                            base,
                            spec.repo_dir.unwrap_or("/testbed"),
                            spec.before_strip,
                        )
                    )
                })
            }
            _ => None,
        };
        let h = loop {
            let notified = s.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let (hosts, sticky) = {
                let st = s.lock();
                match (fixed, st.key_host.get(spec.key)) {
                    (Some(h), _) => (vec![h], false),
                    (None, Some((h, n))) if *n > 0 && st.alive[*h] => (vec![*h], true),
                    _ => (
                        s.eligible(&st, spec.base).map_err(SandboxError::Failed)?,
                        false,
                    ),
                }
            };
            if let Some(h) = fixed
                && (h >= s.members.len() || !s.lock().alive[h])
            {
                let name = s.members.get(h).map_or("?", |m| m.name.as_str());
                return Err(SandboxError::Failed(format!(
                    "{}: the agent image was built there",
                    lost(name)
                )));
            }
            let mut preferred = Vec::new();
            for h in &hosts {
                preferred.push(match &want {
                    Some(r) => s.has_image(*h, r).await,
                    None => false,
                });
            }
            {
                let mut st = s.lock();
                let pick = if sticky {
                    hosts.first().copied().filter(|h| st.alive[*h])
                } else {
                    s.pick(&st, &hosts, &preferred, cpus)
                };
                if let Some(h) = pick {
                    if fixed.is_some() {
                        st.pending[h] = st.pending[h].saturating_sub(1);
                    }
                    st.load[h] += 1;
                    st.cpu[h] += cpus.min(s.members[h].cpus);
                    let e = st.key_host.entry(spec.key.to_string()).or_insert((h, 0));
                    *e = (h, e.1 + 1);
                    break h;
                }
            }
            tokio::select! {
                _ = notified => {}
                _ = cancel.cancelled() => return Err(SandboxError::Cancelled),
                // Re-check now and then (a wake-up lost to a race costs a second at most).
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        };
        let reserved = cpus.min(s.members[h].cpus);
        let mut inner_spec = spec.clone();
        inner_spec.image = image;
        match s.members[h].backend.create(&inner_spec, cancel).await {
            Ok(inner) => {
                s.lock().created[h] += 1;
                Ok(Box::new(PoolSandbox {
                    inner: Some(inner),
                    shared: s.clone(),
                    host: h,
                    key: spec.key.to_string(),
                    cpus: reserved,
                }))
            }
            Err(e) => {
                s.release(h, spec.key, reserved);
                Err(s.check(h, e).await)
            }
        }
    }

    async fn agent_image(
        &self,
        base: &TaskBase,
        install: &InstallSpec,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, SandboxError> {
        let s = &self.shared;
        let hosts = s.eligible(&s.lock(), base).map_err(SandboxError::Failed)?;
        // Prefer a host that has the agent image already (built from the same task image ID).
        let tag = match base {
            TaskBase::Image { image, .. } => s
                .members
                .iter()
                .find_map(|m| m.backend.images.get(image))
                .map(|id| format!("{AGENT_REPO}:{}", super::agent_tag(id, install))),
            _ => None,
        };
        let mut preferred = Vec::new();
        for h in &hosts {
            preferred.push(match &tag {
                Some(t) => s.has_image(*h, t).await,
                None => false,
            });
        }
        let h = {
            let mut st = s.lock();
            let h = s.pick(&st, &hosts, &preferred, 0.0).unwrap_or_else(|| {
                // All full: the preferred, least loaded one (its sandbox waits for room).
                *hosts
                    .iter()
                    .zip(&preferred)
                    .min_by_key(|(h, p)| (!**p, st.load[**h] + st.pending[**h], **h))
                    .map(|(h, _)| h)
                    .expect("eligible hosts are not empty")
            });
            st.pending[h] += 1;
            h
        };
        match s.members[h]
            .backend
            .agent_image(base, install, cancel)
            .await
        {
            Ok(Some(id)) => {
                if let Some(t) = tag {
                    s.lock().images.insert((h, t));
                }
                Ok(Some(format!("{PREFIX}{h}:{id}")))
            }
            Ok(None) => {
                let mut st = s.lock();
                st.pending[h] = st.pending[h].saturating_sub(1);
                Ok(None)
            }
            Err(e) => {
                {
                    let mut st = s.lock();
                    st.pending[h] = st.pending[h].saturating_sub(1);
                }
                Err(s.check(h, e).await)
            }
        }
    }

    fn sandbox_cap(&self) -> Option<usize> {
        Some(self.shared.members.iter().map(|m| m.cap).sum())
    }

    async fn finish(&self) {
        let s = &self.shared;
        futures_util::future::join_all(s.members.iter().map(|m| async {
            let _ = tokio::time::timeout(Duration::from_secs(30), m.backend.finish()).await;
        }))
        .await;
        let hosts = {
            let st = s.lock();
            s.members
                .iter()
                .enumerate()
                .map(|(h, m)| HostSummary {
                    host: m.name.clone(),
                    sandboxes: st.created[h] as u64,
                    unreachable: !st.alive[h],
                    nodes_moved: st.lost_nodes[h] as u64,
                })
                .collect()
        };
        s.events
            .emit(Event::BackendSummary(BackendSummary { hosts }));
        for m in &s.members {
            m.tunnel.lock().unwrap_or_else(|p| p.into_inner()).take();
        }
    }

    fn retry(&self, key: &str, error: &str) -> Option<String> {
        let s = &self.shared;
        let mut st = s.lock();
        let host = match st.key_host.get(key) {
            Some((h, _)) if !st.alive[*h] => Some(*h),
            _ => (0..s.members.len())
                .find(|h| !st.alive[*h] && error.contains(&lost(&s.members[*h].name))),
        }?;
        let left = st.alive.iter().filter(|a| **a).count();
        let tries = st.attempts.entry(key.to_string()).or_default();
        *tries += 1;
        if left == 0 || *tries > s.members.len() {
            return None;
        }
        st.key_host.remove(key);
        st.lost_nodes[host] += 1;
        Some(format!(
            "its host {} became unreachable; running it again on the other hosts",
            s.members[host].name
        ))
    }

    fn load(&self) -> Option<String> {
        Some(self.shared.load_line())
    }
}

/// A sandbox on one host of the pool: its slot is released when it goes, and its errors are
/// checked against the host's health.
struct PoolSandbox {
    inner: Option<Box<dyn Sandbox>>,
    shared: Arc<Shared>,
    host: usize,
    key: String,
    cpus: f64,
}

impl PoolSandbox {
    fn inner(&self) -> &dyn Sandbox {
        self.inner.as_deref().expect("a live sandbox")
    }

    async fn checked<T>(&self, r: Result<T, SandboxError>) -> Result<T, SandboxError> {
        match r {
            Ok(v) => Ok(v),
            Err(e) => Err(self.shared.check(self.host, e).await),
        }
    }
}

impl Drop for PoolSandbox {
    fn drop(&mut self) {
        // The inner sandbox's own guard removes its container first.
        drop(self.inner.take());
        self.shared.release(self.host, &self.key, self.cpus);
    }
}

#[async_trait]
impl Sandbox for PoolSandbox {
    fn paths(&self) -> &SandboxPaths {
        self.inner().paths()
    }

    fn stripped_to(&self) -> Option<&str> {
        self.inner().stripped_to()
    }

    fn base_env(&self) -> Vec<(String, String)> {
        self.inner().base_env()
    }

    async fn exec(
        &self,
        script: &str,
        env: &[(String, String)],
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<ExecResult, SandboxError> {
        let r = self.inner().exec(script, env, timeout, cancel).await;
        self.checked(r).await
    }

    async fn put_files(&self, files: &[(&str, &[u8], u32)]) -> Result<(), SandboxError> {
        let r = self.inner().put_files(files).await;
        self.checked(r).await
    }

    async fn get_file(&self, path: &str) -> Result<Vec<u8>, SandboxError> {
        let r = self.inner().get_file(path).await;
        self.checked(r).await
    }

    async fn get_dir(
        &self,
        path: &str,
        cap: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, SandboxError> {
        let r = self.inner().get_dir(path, cap).await;
        self.checked(r).await
    }

    async fn destroy(mut self: Box<Self>) -> Result<(), SandboxError> {
        let inner = self.inner.take().expect("a live sandbox");
        let r = inner.destroy().await;
        self.checked(r).await
    }

    async fn snapshot(&self, exclude: &[&str]) -> Result<Vec<u8>, SandboxError> {
        let r = self.inner().snapshot(exclude).await;
        self.checked(r).await
    }

    async fn restore(&self, snapshot: &[u8]) -> Result<(), SandboxError> {
        let r = self.inner().restore(snapshot).await;
        self.checked(r).await
    }

    async fn end_processes(&self) -> Result<(), SandboxError> {
        let r = self.inner().end_processes().await;
        self.checked(r).await
    }

    async fn set_network(&self, on: bool) -> Result<(), SandboxError> {
        let r = self.inner().set_network(on).await;
        self.checked(r).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_addresses() {
        assert_eq!(
            parse_ssh("ssh://bench@gpu1:2222/run/docker.sock").unwrap(),
            (
                "bench@gpu1".to_string(),
                Some(2222),
                "/run/docker.sock".to_string()
            )
        );
        assert_eq!(
            parse_ssh("ssh://gpu1").unwrap(),
            ("gpu1".to_string(), None, "/var/run/docker.sock".to_string())
        );
        assert!(parse_ssh("ssh://bench@").is_err());
        assert!(parse_ssh("ssh://gpu1:x").is_err());
    }

    /// A pool of hosts with these (containers, cpus), connected to nothing (bollard connects
    /// lazily), all reachable and idle.
    fn pool(hosts: &[(usize, f64)]) -> Shared {
        let r = Resources {
            cpus: 1.0,
            memory_bytes: 1 << 30,
            pids: 64,
        };
        let members = hosts
            .iter()
            .enumerate()
            .map(|(i, (cap, cpus))| {
                let host = DockerHost {
                    client: bollard::Docker::connect_with_http(
                        "tcp://127.0.0.1:9",
                        1,
                        bollard::API_DEFAULT_VERSION,
                    )
                    .unwrap(),
                    host: format!("unix:///h{i}.sock"),
                    ncpu: Some(*cpus),
                };
                Member {
                    name: format!("h{i}"),
                    backend: DockerBackend::new(
                        host,
                        "run".into(),
                        "store".into(),
                        BTreeMap::new(),
                        r,
                        *cap,
                    ),
                    cap: *cap,
                    cpus: *cpus,
                    has: BTreeSet::new(),
                    tunnel: Mutex::new(None),
                }
            })
            .collect::<Vec<_>>();
        let n = members.len();
        Shared {
            members,
            state: Mutex::new(State {
                alive: vec![true; n],
                load: vec![0; n],
                pending: vec![0; n],
                cpu: vec![0.0; n],
                created: vec![0; n],
                lost_nodes: vec![0; n],
                ..Default::default()
            }),
            wake: tokio::sync::Notify::new(),
            resources: r,
            events: Events::default(),
        }
    }

    #[test]
    fn pick_prefers_the_image_then_the_least_loaded_then_the_first() {
        let p = pool(&[(2, f64::MAX), (4, f64::MAX), (2, f64::MAX)]);
        let all = [0, 1, 2];
        let mut st = p.lock();
        // Idle: the first listed.
        assert_eq!(p.pick(&st, &all, &[false; 3], 1.0), Some(0));
        // The host holding the image, even when others are idler.
        st.load[2] = 1;
        assert_eq!(p.pick(&st, &all, &[false, false, true], 1.0), Some(2));
        // The least loaded by ratio: 1/2 on h0 against 1/4 on h1.
        st.load = vec![1, 1, 1];
        assert_eq!(p.pick(&st, &all, &[false; 3], 1.0), Some(1));
        // Full hosts are skipped, preferred or not; all full: none.
        st.load = vec![2, 4, 1];
        assert_eq!(p.pick(&st, &all, &[true, true, false], 1.0), Some(2));
        st.load = vec![2, 4, 2];
        assert_eq!(p.pick(&st, &all, &[false; 3], 1.0), None);
        // Agent images handed out count as load: a wave of solves spreads.
        st.load = vec![0, 0, 0];
        st.pending = vec![1, 0, 0];
        assert_eq!(p.pick(&st, &all, &[false; 3], 0.0), Some(1));
        st.pending = vec![0, 0, 0];
        // An unreachable host never.
        st.load = vec![0, 0, 0];
        st.alive[0] = false;
        assert_eq!(p.pick(&st, &all, &[true, false, false], 1.0), Some(1));
    }

    #[test]
    fn pick_counts_reserved_cpus_but_never_starves_an_idle_host() {
        let p = pool(&[(8, 4.0)]);
        let mut st = p.lock();
        st.load[0] = 1;
        st.cpu[0] = 3.0;
        assert_eq!(p.pick(&st, &[0], &[false], 1.0), Some(0));
        assert_eq!(p.pick(&st, &[0], &[false], 2.0), None);
        // A sandbox larger than the host still runs when the host is idle.
        st.load[0] = 0;
        st.cpu[0] = 0.0;
        assert_eq!(p.pick(&st, &[0], &[false], 16.0), Some(0));
    }

    #[test]
    fn only_nodes_of_a_lost_host_are_retried_and_at_most_once_per_host() {
        let b = PoolBackend {
            shared: Arc::new(pool(&[(2, f64::MAX), (2, f64::MAX)])),
        };
        {
            let mut st = b.shared.lock();
            st.key_host.insert("k-on-0".into(), (0, 1));
            st.key_host.insert("k-on-1".into(), (1, 1));
            st.alive[1] = false;
        }
        assert!(b.retry("k-on-0", "cannot apply").is_none());
        let why = b.retry("k-on-1", "whatever").expect("retried");
        assert!(why.contains("its host h1 became unreachable"), "{why}");
        // An agent image build that failed there (no sandbox yet): known by its message.
        assert!(
            b.retry("k-new", &format!("{}: cannot build", lost("h1")))
                .is_some()
        );
        for _ in 0..2 {
            b.shared.lock().key_host.insert("k-again".into(), (1, 1));
            let _ = b.retry("k-again", "x");
        }
        b.shared.lock().key_host.insert("k-again".into(), (1, 1));
        assert!(
            b.retry("k-again", "x").is_none(),
            "retried past the hosts' count"
        );
        // No host left: nothing is retried.
        b.shared.lock().alive[0] = false;
        b.shared.lock().key_host.insert("k-last".into(), (1, 1));
        assert!(b.retry("k-last", "x").is_none());
    }

    #[test]
    fn a_mismatch_names_both_hosts_and_the_fix() {
        let m = mismatch(
            "img:1",
            "unix:///a.sock",
            "sha256:aaaaaaaaaaaaaaaa",
            "tcp://b:2376",
            "sha256:bbbbbbbbbbbbbbbb",
        );
        assert!(m.contains("unix:///a.sock has aaaaaaaaaaaa"), "{m}");
        assert!(m.contains("tcp://b:2376 has bbbbbbbbbbbb"), "{m}");
        assert!(
            m.contains("docker save img:1 | docker -H tcp://b:2376 load"),
            "{m}"
        );
    }
}
