//! The `docker` backend on bollard: connect (DOCKER_HOST or the manifest's `[backend] host`),
//! resolve image identities, and run containers that are labelled, limited, and removed on every
//! path.
//!
//! A [`Container`] runs an idle PID 1 (`sleep infinity`); commands run through exec with
//! combined output, the exit code and a timeout. On a timeout every process in the container
//! except PID 1 is killed (`kill -9 -1` from a second exec): one container runs one command at a
//! time, so that is exactly the command and everything it started. Files go in and out through
//! the archive API (tar). [`Container::destroy`] removes the container on normal paths; the
//! `Drop` guard removes it (force) on every other path: errors, panics, cancellation.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptions, DownloadFromContainerOptions, ListContainersOptions,
    RemoveContainerOptions, UploadToContainerOptions,
};
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::ExecResult;
use crate::types::DockerTls;

/// How long a host may take to connect (ssh: the tunnel to come up).
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// TLS files of the tcp hosts connected in this process, by address: the `Container` drop
/// guard reconnects from a fresh runtime and needs them.
pub(super) static TLS: Mutex<BTreeMap<String, DockerTls>> = Mutex::new(BTreeMap::new());

/// A new connection to `addr` (a [`DockerHost::host`]), with the TLS files it was connected
/// with, if any.
pub async fn reconnect(addr: &str) -> Result<DockerHost, String> {
    let tls = TLS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(addr)
        .cloned();
    match tls {
        Some(tls) => connect_tls(addr, &tls).await,
        None => DockerHost::connect(Some(addr)).await,
    }
}

pub(super) async fn connect_tls(addr: &str, tls: &DockerTls) -> Result<DockerHost, String> {
    for (what, p) in [
        ("CA", &tls.ca),
        ("certificate", &tls.cert),
        ("key", &tls.key),
    ] {
        if !p.is_file() {
            return Err(format!(
                "host {addr}: the TLS {what} file {} does not exist; fix its path in `[backend] hosts` (relative to the manifest)",
                p.display()
            ));
        }
    }
    let client = bollard::Docker::connect_with_ssl(
        addr,
        &tls.key,
        &tls.cert,
        &tls.ca,
        600,
        bollard::API_DEFAULT_VERSION,
    )
    .map_err(|e| format!("host {addr}: cannot set up TLS: {e}"))?;
    match tokio::time::timeout(CONNECT_TIMEOUT, client.ping()).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            return Err(format!(
                "cannot reach the Docker daemon at {addr} over TLS: {e}; check that it runs with --tlsverify and that ca, cert and key are the ones it trusts"
            ));
        }
        Err(_) => {
            return Err(format!(
                "cannot reach the Docker daemon at {addr}: no answer within {} s",
                CONNECT_TIMEOUT.as_secs()
            ));
        }
    }
    let ncpu = client
        .info()
        .await
        .ok()
        .and_then(|i| i.ncpu)
        .map(|n| n as f64);
    Ok(DockerHost {
        client,
        host: addr.to_string(),
        ncpu,
    })
}

/// Label every bench container carries.
pub const LABEL: &str = "bench";

/// Where the daemon is, as the user gave it (for messages and for reconnecting).
fn host_string(host: Option<&str>) -> String {
    host.map(str::to_string)
        .or_else(|| std::env::var("DOCKER_HOST").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "unix:///var/run/docker.sock".to_string())
}

/// A connection to one Docker daemon.
#[derive(Clone, Debug)]
pub struct DockerHost {
    pub client: Docker,
    /// `unix:///...` or `tcp://...`.
    pub host: String,
    /// The daemon's CPU count: a container's CPU limit is capped to it (the daemon refuses more).
    pub ncpu: Option<f64>,
}

impl DockerHost {
    /// Connects to `host` (the manifest's `[backend] host`), else DOCKER_HOST, else the local
    /// socket, and checks that the daemon answers. Errors name the address and DOCKER_HOST.
    pub async fn connect(host: Option<&str>) -> Result<DockerHost, String> {
        let addr = host_string(host);
        let unreachable = |e: &dyn std::fmt::Display| {
            format!(
                "cannot reach the Docker daemon at {addr} ({}): {e}; start Docker, or point DOCKER_HOST (or `[backend] host`) at a running daemon",
                match (host, std::env::var("DOCKER_HOST")) {
                    (Some(_), _) => "from the manifest's [backend] host".to_string(),
                    (None, Ok(h)) if !h.is_empty() => format!("DOCKER_HOST={h}"),
                    _ => "DOCKER_HOST is not set".to_string(),
                }
            )
        };
        let client = if addr.starts_with("unix://") || addr.starts_with('/') {
            let path = addr.trim_start_matches("unix://");
            Docker::connect_with_unix(path, 600, bollard::API_DEFAULT_VERSION)
        } else if addr.starts_with("tcp://") || addr.starts_with("http://") {
            Docker::connect_with_http(&addr, 600, bollard::API_DEFAULT_VERSION)
        } else {
            return Err(format!(
                "unsupported Docker address `{addr}` (DOCKER_HOST or [backend] host): use unix:///path or tcp://host:port"
            ));
        }
        .map_err(|e| unreachable(&e))?;
        match tokio::time::timeout(Duration::from_secs(20), client.ping()).await {
            Ok(Ok(_)) => {
                let ncpu = match client.info().await {
                    Ok(i) => i.ncpu.map(|n| n as f64),
                    Err(_) => None,
                };
                Ok(DockerHost {
                    client,
                    host: addr,
                    ncpu,
                })
            }
            Ok(Err(e)) => Err(unreachable(&e)),
            Err(_) => Err(unreachable(&"no answer within 20 s")),
        }
    }

    /// The image's ID (`sha256:...`), or `None` when the daemon does not have it.
    pub async fn image_id(&self, image: &str) -> Result<Option<String>, String> {
        match self.client.inspect_image(image).await {
            Ok(i) => Ok(i.id),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(None),
            Err(e) => Err(format!("cannot inspect image {image}: {e}")),
        }
    }

    /// The image's ID and labels, `None` when the daemon has no such image.
    pub async fn image_labels(
        &self,
        image: &str,
    ) -> Result<Option<(String, HashMap<String, String>)>, String> {
        match self.client.inspect_image(image).await {
            Ok(i) => Ok(i.id.map(|id| {
                let labels = i.config.and_then(|c| c.labels).unwrap_or_default();
                (id, labels)
            })),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(None),
            Err(e) => Err(format!("cannot inspect image {image}: {e}")),
        }
    }

    /// The paths the image declares as volumes (its `VOLUME` lines).
    pub async fn image_volumes(&self, image: &str) -> Result<Vec<String>, String> {
        let i = self
            .client
            .inspect_image(image)
            .await
            .map_err(|e| format!("cannot inspect image {image}: {e}"))?;
        Ok(i.config.and_then(|c| c.volumes).unwrap_or_default())
    }

    /// bench containers (label `bench=1`), optionally narrowed by more `label=value` filters:
    /// (id, name, labels).
    pub async fn list(
        &self,
        extra: &[String],
    ) -> Result<Vec<(String, String, HashMap<String, String>)>, String> {
        let mut labels = vec![format!("{LABEL}=1")];
        labels.extend(extra.iter().cloned());
        let opts = ListContainersOptions {
            all: true,
            filters: Some(HashMap::from([("label".to_string(), labels)])),
            ..Default::default()
        };
        let list = self
            .client
            .list_containers(Some(opts))
            .await
            .map_err(|e| format!("cannot list containers on {}: {e}", self.host))?;
        Ok(list
            .into_iter()
            .filter_map(|c| {
                let name = c
                    .names
                    .and_then(|n| n.into_iter().next())
                    .unwrap_or_default()
                    .trim_start_matches('/')
                    .to_string();
                Some((c.id?, name, c.labels.unwrap_or_default()))
            })
            .collect())
    }

    /// Builds `tag` from a build context tarball (`dockerfile` its path there), never pulling a
    /// base image the daemon lacks... as far as the daemon allows (`pull` unset); returns the
    /// image's ID. The build's output is kept for the error of a failed build.
    pub async fn build_image(
        &self,
        context: Vec<u8>,
        dockerfile: &str,
        tag: &str,
        timeout: Duration,
    ) -> Result<String, String> {
        let options = bollard::query_parameters::BuildImageOptionsBuilder::new()
            .dockerfile(dockerfile)
            .t(tag)
            .rm(true)
            .forcerm(true)
            .build();
        let mut log = String::new();
        let run = async {
            let mut stream =
                self.client
                    .build_image(options, None, Some(bollard::body_full(context.into())));
            while let Some(item) = stream.next().await {
                let info = item.map_err(|e| format!("{e}"))?;
                if let Some(s) = info.stream {
                    log.push_str(&s);
                }
                if let Some(d) = info.error_detail {
                    return Err(d.message.unwrap_or_default());
                }
            }
            Ok::<(), String>(())
        };
        let result = tokio::time::timeout(timeout, run).await;
        let tail = |log: &str| {
            let lines: Vec<&str> = log.lines().collect();
            lines[lines.len().saturating_sub(20)..].join("\n")
        };
        match result {
            Err(_) => Err(format!(
                "building {tag} timed out after {}:\n{}",
                humantime::format_duration(timeout),
                tail(&log)
            )),
            Ok(Err(e)) => Err(format!("cannot build {tag}: {e}\n{}", tail(&log))),
            Ok(Ok(())) => self.image_id(tag).await?.ok_or_else(|| {
                format!("the build of {tag} ended without an image:\n{}", tail(&log))
            }),
        }
    }

    /// Removes a container (force; its processes are killed). A missing container is fine.
    pub async fn remove(&self, id: &str) -> Result<(), String> {
        match self
            .client
            .remove_container(
                id,
                Some(RemoveContainerOptions {
                    force: true,
                    v: true,
                    ..Default::default()
                }),
            )
            .await
        {
            Ok(()) => Ok(()),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            // "removal already in progress"
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409, ..
            }) => Ok(()),
            Err(e) => Err(format!("cannot remove container {id}: {e}")),
        }
    }

    /// Creates an internal network (no route out, no outside DNS: Docker drops its traffic to
    /// anything but its own members and the host's address on it) labelled like containers,
    /// and returns the host's address on it (its gateway).
    pub async fn create_internal_network(
        &self,
        name: &str,
        labels: &HashMap<String, String>,
    ) -> Result<std::net::IpAddr, String> {
        self.new_internal_network(name, labels, HashMap::new())
            .await?;
        let net = self
            .client
            .inspect_network(
                name,
                None::<bollard::query_parameters::InspectNetworkOptions>,
            )
            .await
            .map_err(|e| format!("cannot inspect network {name}: {e}"));
        let gateway = net.ok().and_then(|n| {
            n.ipam?
                .config?
                .into_iter()
                .find_map(|c| c.gateway?.parse::<std::net::IpAddr>().ok())
        });
        match gateway {
            Some(g) => Ok(g),
            None => {
                let _ = self.remove_network(name).await;
                Err(format!(
                    "network {name} has no IPv4 gateway on {}",
                    self.host
                ))
            }
        }
    }

    /// Creates an internal network on which the host has no address
    /// (`com.docker.network.bridge.inhibit_ipv4`): its members reach each other and nothing
    /// else, the host included. Labelled like containers.
    pub async fn create_isolated_network(
        &self,
        name: &str,
        labels: &HashMap<String, String>,
    ) -> Result<(), String> {
        let options = HashMap::from([(
            "com.docker.network.bridge.inhibit_ipv4".to_string(),
            "true".to_string(),
        )]);
        self.new_internal_network(name, labels, options).await
    }

    /// Creates an internal bridge network with the driver's `options`, labelled `labels`.
    async fn new_internal_network(
        &self,
        name: &str,
        labels: &HashMap<String, String>,
        options: HashMap<String, String>,
    ) -> Result<(), String> {
        use bollard::models::NetworkCreateRequest;
        self.client
            .create_network(NetworkCreateRequest {
                name: name.to_string(),
                internal: Some(true),
                driver: Some("bridge".to_string()),
                labels: Some(labels.clone()),
                options: (!options.is_empty()).then_some(options),
                ..Default::default()
            })
            .await
            .map(|_| ())
            .map_err(|e| format!("cannot create network {name} on {}: {e}", self.host))
    }

    /// Removes a network of bench's. A missing one is fine.
    pub async fn remove_network(&self, name: &str) -> Result<(), String> {
        match self.client.remove_network(name).await {
            Ok(()) => Ok(()),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            Err(e) => Err(format!("cannot remove network {name}: {e}")),
        }
    }

    /// bench networks (label `bench=1`), narrowed by more `label=value` filters: (name, labels).
    pub async fn networks(
        &self,
        extra: &[String],
    ) -> Result<Vec<(String, HashMap<String, String>)>, String> {
        let mut labels = vec![format!("{LABEL}=1")];
        labels.extend(extra.iter().cloned());
        let list = self
            .client
            .list_networks(Some(bollard::query_parameters::ListNetworksOptions {
                filters: Some(HashMap::from([("label".to_string(), labels)])),
            }))
            .await
            .map_err(|e| format!("cannot list networks on {}: {e}", self.host))?;
        let mut out: Vec<(String, HashMap<String, String>)> = list
            .into_iter()
            .filter_map(|n| Some((n.name?, n.labels.unwrap_or_default())))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Removes bench containers that no live bench process owns: those whose `bench.pid` is not
    /// alive on this host, and (`store`, when the caller holds that store's lock) every
    /// container of that store not of `keep_run`. Returns the names removed.
    pub async fn sweep(
        &self,
        store: Option<&str>,
        keep_run: Option<&str>,
    ) -> Result<Vec<String>, String> {
        let me = hostname();
        let mut removed = Vec::new();
        for (id, name, labels) in self.list(&[]).await? {
            let run = labels.get("bench.run").map(String::as_str);
            if keep_run.is_some() && run == keep_run {
                continue;
            }
            let ours_store =
                store.is_some() && labels.get("bench.store").map(String::as_str) == store;
            let dead = labels.get("bench.host") == Some(&me)
                && labels
                    .get("bench.pid")
                    .and_then(|p| p.parse::<i32>().ok())
                    .is_some_and(|p| !pid_alive(p));
            if ours_store || dead {
                self.remove(&id).await?;
                removed.push(name);
            }
        }
        // Then their networks (a network with a container attached cannot go).
        for (name, labels) in self.networks(&[]).await? {
            let run = labels.get("bench.run").map(String::as_str);
            if keep_run.is_some() && run == keep_run {
                continue;
            }
            let ours_store =
                store.is_some() && labels.get("bench.store").map(String::as_str) == store;
            let dead = labels.get("bench.host") == Some(&me)
                && labels
                    .get("bench.pid")
                    .and_then(|p| p.parse::<i32>().ok())
                    .is_some_and(|p| !pid_alive(p));
            if (ours_store || dead) && self.remove_network(&name).await.is_ok() {
                removed.push(name);
            }
        }
        Ok(removed)
    }
}

pub fn hostname() -> String {
    gethostname::gethostname().to_string_lossy().into_owned()
}

fn pid_alive(pid: i32) -> bool {
    use nix::errno::Errno;
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(Errno::EPERM) => true,
        Err(_) => false,
    }
}

/// The network a container joins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkMode {
    /// None at all: no interface but loopback, no DNS.
    None,
    /// The daemon's default bridge (a route out).
    Bridge,
    /// A network of bench's own (an internal one: see [`DockerHost::create_internal_network`]).
    Named(String),
}

/// What a container is made of.
#[derive(Debug, Clone)]
pub struct ContainerSpec {
    /// An image ID (preferably) or reference.
    pub image: String,
    pub name: String,
    pub labels: HashMap<String, String>,
    pub cpus: f64,
    pub memory_bytes: u64,
    pub pids: u64,
    /// Which network the container joins.
    pub network: NetworkMode,
    /// Capabilities, privileges and swap restricted (grading sandboxes).
    pub hardening: Option<super::Hardening>,
    /// GPUs requested (Harbor's `gpus`); a daemon without them refuses the container.
    pub gpus: u32,
}

impl ContainerSpec {
    /// The standard labels: `bench=1`, run, node address, pid, host, and store.
    pub fn labels(run: &str, node: &str, store: &str) -> HashMap<String, String> {
        HashMap::from([
            (LABEL.to_string(), "1".to_string()),
            ("bench.run".to_string(), run.to_string()),
            ("bench.node".to_string(), node.to_string()),
            ("bench.pid".to_string(), std::process::id().to_string()),
            ("bench.host".to_string(), hostname()),
            ("bench.store".to_string(), store.to_string()),
        ])
    }
}

/// A running container; removed by [`Container::destroy`] or, failing that, on drop.
#[derive(Debug)]
pub struct Container {
    host: DockerHost,
    pub id: String,
    pub name: String,
    removed: bool,
}

/// Environment every exec gets: a plain PATH and git trusting any repository owner.
pub const BASE_ENV: [&str; 5] = [
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG=C.UTF-8",
    "GIT_CONFIG_COUNT=1",
    "GIT_CONFIG_KEY_0=safe.directory",
    "GIT_CONFIG_VALUE_0=*",
];

impl Container {
    /// Creates and starts a container running an idle PID 1.
    pub async fn start(host: &DockerHost, spec: &ContainerSpec) -> Result<Container, String> {
        let hardening = spec.hardening.as_ref();
        let body = ContainerCreateBody {
            image: Some(spec.image.clone()),
            entrypoint: Some(vec!["sleep".into(), "infinity".into()]),
            cmd: Some(vec![]),
            labels: Some(spec.labels.clone()),
            working_dir: Some("/".into()),
            tty: Some(false),
            host_config: Some(HostConfig {
                nano_cpus: Some((spec.cpus.min(host.ncpu.unwrap_or(f64::MAX)) * 1e9) as i64),
                memory: Some(spec.memory_bytes as i64),
                pids_limit: Some(spec.pids as i64),
                init: Some(false),
                network_mode: match &spec.network {
                    NetworkMode::None => Some("none".to_string()),
                    NetworkMode::Bridge => None,
                    NetworkMode::Named(n) => Some(n.clone()),
                },
                cap_drop: hardening.map(|_| vec!["ALL".to_string()]),
                cap_add: hardening.map(|h| h.capabilities.clone()),
                security_opt: hardening
                    .filter(|h| h.no_new_privileges)
                    .map(|_| vec!["no-new-privileges".to_string()]),
                memory_swap: hardening
                    .filter(|h| h.no_swap)
                    .map(|_| spec.memory_bytes as i64),
                device_requests: (spec.gpus > 0).then(|| {
                    vec![bollard::models::DeviceRequest {
                        count: Some(spec.gpus as i64),
                        capabilities: Some(vec![vec!["gpu".to_string()]]),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        Container::create_started(host, &spec.name, body).await
    }

    /// Creates a container `name` of `body` and starts it (its own command: see
    /// [`Container::start`] for bench's idle ones); removed by the guard from creation on.
    pub async fn create_started(
        host: &DockerHost,
        name: &str,
        body: ContainerCreateBody,
    ) -> Result<Container, String> {
        let image = body.image.clone().unwrap_or_default();
        let created = host
            .client
            .create_container(
                Some(CreateContainerOptions {
                    name: Some(name.to_string()),
                    ..Default::default()
                }),
                body,
            )
            .await
            .map_err(|e| format!("cannot create a container of {image}: {e}"))?;
        // From here on the guard removes it, whatever happens.
        let c = Container {
            host: host.clone(),
            id: created.id,
            name: name.to_string(),
            removed: false,
        };
        host.client
            .start_container(&c.id, None)
            .await
            .map_err(|e| format!("cannot start container {}: {e}", c.name))?;
        Ok(c)
    }

    pub fn host(&self) -> &DockerHost {
        &self.host
    }

    /// Runs `bash -c script` (or `sh` when the image has no bash) in `workdir`, with `env`
    /// added to [`BASE_ENV`]. Output is stdout and stderr interleaved.
    pub async fn exec(
        &self,
        script: &str,
        workdir: &str,
        env: &[(String, String)],
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<ExecResult, String> {
        let start = Instant::now();
        let mut envs: Vec<String> = BASE_ENV.iter().map(|s| s.to_string()).collect();
        envs.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        let shell = "s=$BENCH_SCRIPT; unset BENCH_SCRIPT; if command -v bash >/dev/null 2>&1; then exec bash -c \"$s\"; else exec sh -c \"$s\"; fi";
        envs.push(format!("BENCH_SCRIPT={script}"));
        let exec = self
            .host
            .client
            .create_exec(
                &self.id,
                CreateExecOptions {
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    tty: Some(false),
                    env: Some(envs),
                    cmd: Some(vec!["sh".to_string(), "-c".to_string(), shell.to_string()]),
                    working_dir: Some(workdir.to_string()),
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| format!("cannot exec in container {}: {e}", self.name))?;
        let started = self
            .host
            .client
            .start_exec(&exec.id, None)
            .await
            .map_err(|e| format!("cannot start an exec in container {}: {e}", self.name))?;
        let StartExecResults::Attached { mut output, .. } = started else {
            return Err("exec started detached".into());
        };
        let mut buf = Vec::new();
        let collect = async {
            while let Some(item) = output.next().await {
                match item {
                    Ok(chunk) => buf.extend_from_slice(&chunk.into_bytes()),
                    Err(e) => return Err(format!("lost the exec stream of {}: {e}", self.name)),
                }
            }
            Ok(())
        };
        let (timed_out, cancelled) = tokio::select! {
            r = collect => { r?; (false, false) }
            _ = tokio::time::sleep(timeout) => (true, false),
            _ = cancel.cancelled() => (false, true),
        };
        if cancelled {
            return Ok(ExecResult {
                exit_code: None,
                output: buf,
                timed_out: false,
                cancelled: true,
                duration: start.elapsed(),
            });
        }
        if timed_out {
            self.kill_all().await?;
            buf.extend_from_slice(
                format!("\n[bench: timed out after {timeout:?}; killed]\n").as_bytes(),
            );
            return Ok(ExecResult {
                exit_code: None,
                output: buf,
                timed_out: true,
                cancelled: false,
                duration: start.elapsed(),
            });
        }
        let inspect = self
            .host
            .client
            .inspect_exec(&exec.id)
            .await
            .map_err(|e| format!("cannot read the exit code in {}: {e}", self.name))?;
        Ok(ExecResult {
            exit_code: inspect.exit_code.map(|c| c as i32),
            output: buf,
            timed_out: false,
            cancelled: false,
            duration: start.elapsed(),
        })
    }

    /// Kills every process in the container except PID 1 (and the killer itself).
    async fn kill_all(&self) -> Result<(), String> {
        let exec = self
            .host
            .client
            .create_exec(
                &self.id,
                CreateExecOptions::<String> {
                    cmd: Some(vec!["sh".into(), "-c".into(), "kill -9 -1".into()]),
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| format!("cannot kill the timed-out command in {}: {e}", self.name))?;
        if let Ok(StartExecResults::Attached { mut output, .. }) =
            self.host.client.start_exec(&exec.id, None).await
        {
            let _ = tokio::time::timeout(Duration::from_secs(30), async {
                while output.next().await.is_some() {}
            })
            .await;
        }
        Ok(())
    }

    /// Writes files (path in the container, bytes, mode) through the archive API. Parent
    /// directories are created.
    pub async fn put_files(&self, files: &[(&str, &[u8], u32)]) -> Result<(), String> {
        let mut tar = tar::Builder::new(Vec::new());
        for (path, bytes, mode) in files {
            let rel = path.trim_start_matches('/');
            let mut h = tar::Header::new_gnu();
            h.set_size(bytes.len() as u64);
            h.set_mode(*mode);
            h.set_mtime(0);
            h.set_entry_type(tar::EntryType::Regular);
            tar.append_data(&mut h, rel, *bytes)
                .map_err(|e| format!("cannot pack {path}: {e}"))?;
        }
        let data = tar
            .into_inner()
            .map_err(|e| format!("cannot pack files: {e}"))?;
        self.upload(data, "copy files into").await
    }

    /// Unpacks a tar archive at `/` of the container; `what` names the step in errors.
    async fn upload(&self, data: Vec<u8>, what: &str) -> Result<(), String> {
        self.host
            .client
            .upload_to_container(
                &self.id,
                Some(UploadToContainerOptions {
                    path: "/".into(),
                    ..Default::default()
                }),
                bollard::body_full(data.into()),
            )
            .await
            .map_err(|e| format!("cannot {what} {}: {e}", self.name))
    }

    /// The archive API's tar of `path`; `None` when the path does not exist.
    async fn download(&self, path: &str) -> Result<Option<Vec<u8>>, String> {
        let mut stream = self.host.client.download_from_container(
            &self.id,
            Some(DownloadFromContainerOptions {
                path: path.to_string(),
            }),
        );
        let mut data = Vec::new();
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(c) => data.extend_from_slice(&c),
                Err(bollard::errors::Error::DockerResponseServerError {
                    status_code: 404, ..
                }) => return Ok(None),
                Err(e) => return Err(format!("cannot copy {path} out of {}: {e}", self.name)),
            }
        }
        Ok(Some(data))
    }

    /// Reads one regular file through the archive API.
    pub async fn get_file(&self, path: &str) -> Result<Vec<u8>, String> {
        let data = self
            .download(path)
            .await?
            .ok_or_else(|| format!("{path} does not exist in {}", self.name))?;
        let mut archive = tar::Archive::new(std::io::Cursor::new(data));
        let entries = archive
            .entries()
            .map_err(|e| format!("bad archive of {path}: {e}"))?;
        for entry in entries {
            let mut entry = entry.map_err(|e| format!("bad archive of {path}: {e}"))?;
            if entry.header().entry_type().is_file() {
                let mut out = Vec::new();
                std::io::Read::read_to_end(&mut entry, &mut out)
                    .map_err(|e| format!("bad archive of {path}: {e}"))?;
                return Ok(out);
            }
        }
        Err(format!("{path} is not a regular file in {}", self.name))
    }

    /// Every regular file under a directory, through the archive API: (path relative to the
    /// directory, bytes), sorted, at most `cap` bytes in all (larger files are replaced by a
    /// note). A missing directory gives nothing.
    pub async fn get_dir(&self, path: &str, cap: usize) -> Result<Vec<(String, Vec<u8>)>, String> {
        let Some(data) = self.download(path).await? else {
            return Ok(Vec::new());
        };
        let mut archive = tar::Archive::new(std::io::Cursor::new(data));
        let entries = archive
            .entries()
            .map_err(|e| format!("bad archive of {path}: {e}"))?;
        let mut out = Vec::new();
        let mut left = cap;
        for entry in entries {
            let mut entry = entry.map_err(|e| format!("bad archive of {path}: {e}"))?;
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let name = entry
                .path()
                .map_err(|e| format!("bad archive of {path}: {e}"))?
                .to_string_lossy()
                .into_owned();
            // The archive's top entry is the directory itself.
            let rel = match name.split_once('/') {
                Some((_, rest)) => rest.to_string(),
                None => name,
            };
            let size = entry.header().size().unwrap_or(0) as usize;
            if size > left {
                out.push((rel, format!("[bench: {size} bytes not kept]").into_bytes()));
                continue;
            }
            let mut bytes = Vec::with_capacity(size);
            std::io::Read::read_to_end(&mut entry, &mut bytes)
                .map_err(|e| format!("bad archive of {path}: {e}"))?;
            left -= bytes.len();
            out.push((rel, bytes));
        }
        out.sort();
        Ok(out)
    }

    /// Commits the container's filesystem as image `repo:tag` with `labels`; returns the new
    /// image's ID. The container is paused while it is committed.
    pub async fn commit(
        &self,
        repo: &str,
        tag: &str,
        labels: HashMap<String, String>,
    ) -> Result<String, String> {
        let options = bollard::query_parameters::CommitContainerOptionsBuilder::new()
            .container(&self.id)
            .repo(repo)
            .tag(tag)
            .comment("bench agent image")
            .pause(true)
            .build();
        let config = bollard::models::ContainerConfig {
            labels: Some(labels),
            ..Default::default()
        };
        let r = self
            .host
            .client
            .commit_container(options, config)
            .await
            .map_err(|e| format!("cannot commit {} as {repo}:{tag}: {e}", self.name))?;
        Ok(r.id)
    }

    /// The paths changed since the container was created (`docker diff`): (path, kind) with
    /// kind 0 modified, 1 added, 2 deleted.
    pub async fn changes(&self) -> Result<Vec<(String, u8)>, String> {
        let list = self
            .host
            .client
            .container_changes(&self.id)
            .await
            .map_err(|e| format!("cannot list the changes of {}: {e}", self.name))?
            .unwrap_or_default();
        Ok(list
            .into_iter()
            .map(|c| {
                let kind = match c.kind {
                    bollard::models::ChangeType::_0 => 0,
                    bollard::models::ChangeType::_1 => 1,
                    bollard::models::ChangeType::_2 => 2,
                };
                (c.path, kind)
            })
            .collect())
    }

    /// A snapshot of the container's changes (see `Sandbox::snapshot`): the leaves of the
    /// added/modified paths (a path none of whose descendants changed) downloaded through the
    /// archive API and re-rooted at `/`, after a `.bench-deleted` JSON list of deleted paths.
    pub async fn snapshot(&self, exclude: &[&str]) -> Result<Vec<u8>, String> {
        let excluded = |p: &str| {
            exclude
                .iter()
                .any(|e| p == *e || p.starts_with(&format!("{}/", e.trim_end_matches('/'))))
        };
        let mut changes: Vec<(String, u8)> = self
            .changes()
            .await?
            .into_iter()
            .filter(|(p, _)| !excluded(p))
            .collect();
        changes.sort();
        let deleted: Vec<&str> = changes
            .iter()
            .filter(|(_, k)| *k == 2)
            .map(|(p, _)| p.as_str())
            .collect();
        let written: Vec<&str> = changes
            .iter()
            .filter(|(_, k)| *k != 2)
            .map(|(p, _)| p.as_str())
            .collect();
        let leaves: Vec<&str> = written
            .iter()
            .copied()
            .filter(|p| {
                let prefix = format!("{}/", p.trim_end_matches('/'));
                !changes.iter().any(|(q, _)| q.starts_with(&prefix))
            })
            .collect();
        let mut out = tar::Builder::new(Vec::new());
        let list = serde_json::to_vec(&deleted).expect("paths serialize");
        let mut h = tar::Header::new_gnu();
        h.set_size(list.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_entry_type(tar::EntryType::Regular);
        out.append_data(&mut h, ".bench-deleted", list.as_slice())
            .map_err(|e| format!("cannot pack the snapshot: {e}"))?;
        for leaf in leaves {
            let Some(data) = self.download(leaf).await? else {
                continue;
            };
            // The archive is rooted at the leaf's base name: re-root it at its parent.
            let parent = std::path::Path::new(leaf.trim_start_matches('/'))
                .parent()
                .map(|p| p.to_path_buf())
                .unwrap_or_default();
            let mut archive = tar::Archive::new(std::io::Cursor::new(data));
            let entries = archive
                .entries()
                .map_err(|e| format!("bad archive of {leaf}: {e}"))?;
            for entry in entries {
                let mut entry = entry.map_err(|e| format!("bad archive of {leaf}: {e}"))?;
                let name = entry
                    .path()
                    .map_err(|e| format!("bad archive of {leaf}: {e}"))?
                    .into_owned();
                let path = parent.join(&name);
                if excluded(&format!("/{}", path.display())) {
                    continue;
                }
                let mut header = entry.header().clone();
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut entry, &mut bytes)
                    .map_err(|e| format!("bad archive of {leaf}: {e}"))?;
                let link = entry.link_name().ok().flatten().map(|l| l.into_owned());
                match link {
                    Some(target) => out
                        .append_link(&mut header, &path, &target)
                        .map_err(|e| format!("cannot pack {}: {e}", path.display()))?,
                    None => out
                        .append_data(&mut header, &path, bytes.as_slice())
                        .map_err(|e| format!("cannot pack {}: {e}", path.display()))?,
                }
            }
        }
        out.into_inner()
            .map_err(|e| format!("cannot pack the snapshot: {e}"))
    }

    /// Applies a snapshot made by [`Container::snapshot`]: the deleted paths removed, then the
    /// archive (without its list) extracted at `/`.
    pub async fn restore(&self, snapshot: &[u8]) -> Result<(), String> {
        let mut archive = tar::Archive::new(std::io::Cursor::new(snapshot));
        let mut deleted: Vec<String> = Vec::new();
        let mut rest = tar::Builder::new(Vec::new());
        let entries = archive
            .entries()
            .map_err(|e| format!("bad snapshot: {e}"))?;
        for entry in entries {
            let mut entry = entry.map_err(|e| format!("bad snapshot: {e}"))?;
            let path = entry
                .path()
                .map_err(|e| format!("bad snapshot: {e}"))?
                .into_owned();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut bytes)
                .map_err(|e| format!("bad snapshot: {e}"))?;
            if path.as_os_str() == ".bench-deleted" {
                deleted = serde_json::from_slice(&bytes)
                    .map_err(|e| format!("bad snapshot: its deleted list: {e}"))?;
                continue;
            }
            let mut header = entry.header().clone();
            let link = entry.link_name().ok().flatten().map(|l| l.into_owned());
            match link {
                Some(target) => rest.append_link(&mut header, &path, &target),
                None => rest.append_data(&mut header, &path, bytes.as_slice()),
            }
            .map_err(|e| format!("bad snapshot: {e}"))?;
        }
        let data = rest
            .into_inner()
            .map_err(|e| format!("bad snapshot: {e}"))?;
        if !deleted.is_empty() {
            let quoted: Vec<String> = deleted.iter().map(|p| super::shell_quote(p)).collect();
            let r = self
                .exec(
                    &format!("rm -rf -- {}", quoted.join(" ")),
                    "/",
                    &[],
                    Duration::from_secs(300),
                    &CancellationToken::new(),
                )
                .await?;
            if r.exit_code != Some(0) {
                return Err(format!(
                    "cannot delete the snapshot's deleted paths in {}: {}",
                    self.name,
                    String::from_utf8_lossy(&r.output).trim()
                ));
            }
        }
        self.upload(data, "restore the snapshot into").await
    }

    /// Connects the container to the default bridge, or disconnects it.
    pub async fn set_network(&self, network: &str, on: bool) -> Result<(), String> {
        let r = if on {
            self.host
                .client
                .connect_network(
                    network,
                    bollard::models::NetworkConnectRequest {
                        container: self.id.clone(),
                        endpoint_config: None,
                    },
                )
                .await
        } else {
            self.host
                .client
                .disconnect_network(
                    network,
                    bollard::models::NetworkDisconnectRequest {
                        container: self.id.clone(),
                        force: Some(true),
                    },
                )
                .await
        };
        r.map_err(|e| {
            format!(
                "cannot {} {}: {e}",
                if on {
                    "connect to the network"
                } else {
                    "cut the network of"
                },
                self.name
            )
        })
    }

    /// Removes the container (normal paths).
    /// Ends every process in the container, whatever it does: PID 1 is killed (its PID
    /// namespace dies with it, so the kernel kills everything else, which no process inside can
    /// resist or fake) and the container started again with a fresh idle PID 1, its filesystem
    /// and networks as they were. Checked from outside (the daemon's `top`): only PID 1 runs.
    pub async fn end_processes(&self) -> Result<(), String> {
        let opts = bollard::query_parameters::RestartContainerOptions {
            signal: Some("SIGKILL".into()),
            t: Some(0),
        };
        self.host
            .client
            .restart_container(&self.id, Some(opts))
            .await
            .map_err(|e| format!("cannot restart {} to end its processes: {e}", self.name))?;
        let top = self
            .host
            .client
            .top_processes(&self.id, None::<bollard::query_parameters::TopOptions>)
            .await
            .map_err(|e| format!("cannot list the processes of {}: {e}", self.name))?;
        let procs = top.processes.unwrap_or_default();
        if procs.len() != 1 {
            return Err(format!(
                "{} still runs {} processes after its restart (expected only its idle PID 1): {:?}",
                self.name,
                procs.len(),
                procs
            ));
        }
        Ok(())
    }

    pub async fn destroy(mut self) -> Result<(), String> {
        self.removed = true;
        self.host.remove(&self.id).await
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        if self.removed {
            return;
        }
        // Not removed on the normal path (an error, a panic, a cancelled task): remove it now,
        // on a thread of its own with its own connection, so this works whatever state the
        // caller's runtime is in. Blocks until the daemon confirmed (at most 60 s).
        let host = self.host.host.clone();
        let id = self.id.clone();
        let t = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                let _ = tokio::time::timeout(Duration::from_secs(60), async {
                    if let Ok(h) = reconnect(&host).await {
                        let _ = h.remove(&id).await;
                    }
                })
                .await;
            });
        });
        let _ = t.join();
    }
}
