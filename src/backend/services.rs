//! A trial's services on Docker (a Harbor task's `environment/docker-compose.yaml`, read by
//! `datasets/harbor_compose.rs`): before the agent's container starts, a network of the trial's
//! own is made, each service's image is built (from its directory of the task's environment;
//! tagged `bench-service:<digest>`, the digest covering the environment's identity and the
//! service, reused while the daemon has it) or resolved (a prebuilt `image`, pulled before the
//! run like the environment's `FROM` images), and
//! the services are started on that network in their dependency order, each reachable by its
//! name, each waited for (running; healthy when it has a healthcheck). The agent's container
//! joins the network besides its own policy's (`docker_backend.rs`), and leaves it when its
//! network is cut for the verifier.
//!
//! The network is internal with no address of the host on it
//! (`com.docker.network.bridge.inhibit_ipv4`): its members reach each other and nothing
//! else: not the internet, not the host. Services get the backend's limits, no published ports,
//! mounts or extra privileges (the reader refuses them). Containers and network carry the run's
//! labels and are removed with the agent's sandbox; a crash leaves them to the apply's
//! `finish` or `bench clean`, like any container of bench's.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bollard::models::{
    ContainerCreateBody, EndpointSettings, HealthConfig, HealthStatusEnum, HostConfig,
    NetworkingConfig,
};
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::docker::{Container, DockerHost};
use super::sandbox::SandboxError;
use crate::tasks::ServiceSpec;

/// Repository of images built for services.
pub const SERVICE_REPO: &str = "bench-service";

/// How long a service without a healthcheck is watched for an early exit.
const SETTLE: Duration = Duration::from_millis(500);

/// At most this long for a service to become healthy, whatever its healthcheck says.
const HEALTHY_CAP: Duration = Duration::from_secs(10 * 60);

fn failed(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Failed(e.to_string())
}

/// A trial's running services and their network.
pub struct Services {
    pub network: String,
    containers: Vec<Container>,
}

impl Services {
    /// Removes the services, then their network.
    pub async fn remove(self, host: &DockerHost) {
        for c in self.containers {
            let _ = c.destroy().await;
        }
        let _ = host.remove_network(&self.network).await;
    }
}

/// The files of a build context tarball under `dir` (`""`: all of it), re-rooted there.
pub fn sub_context(context: &[u8], dir: &str) -> Result<Vec<u8>, String> {
    if dir.is_empty() {
        return Ok(context.to_vec());
    }
    let lead = format!("{}/", dir.trim_end_matches('/'));
    let mut out = tar::Builder::new(Vec::new());
    let mut a = tar::Archive::new(context);
    for e in a.entries().map_err(|e| e.to_string())? {
        let mut e = e.map_err(|e| e.to_string())?;
        let path = e.path().map_err(|e| e.to_string())?.display().to_string();
        let Some(rel) = path.strip_prefix(&lead).filter(|r| !r.is_empty()) else {
            continue;
        };
        let rel = rel.to_string();
        let mut header = e.header().clone();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut bytes).map_err(|e| e.to_string())?;
        out.append_data(&mut header, rel, bytes.as_slice())
            .map_err(|e| e.to_string())?;
    }
    out.into_inner().map_err(|e| e.to_string())
}

/// The tag of a service's built image: the environment's identity (its context and every
/// image it starts from) and the service's build.
pub fn service_tag(env: &str, service: &ServiceSpec) -> String {
    let d = crate::key::digest_of(&(env, &service.name, &service.build));
    format!("{SERVICE_REPO}:{}", &d[6..22])
}

/// The limits every service gets (the backend's).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub cpus: f64,
    pub memory_bytes: u64,
    pub pids: u64,
}

/// Starts `services` (each with its image ID, in order) on `network`, made here: internal,
/// with no address of the host on it, labelled `labels`. On any failure what was started is
/// removed.
pub async fn start(
    host: &DockerHost,
    network: String,
    labels: &HashMap<String, String>,
    services: &[(&ServiceSpec, String)],
    limits: Limits,
    cancel: &CancellationToken,
) -> Result<Services, SandboxError> {
    host.create_isolated_network(&network, labels)
        .await
        .map_err(failed)?;
    let mut started = Services {
        network,
        containers: Vec::new(),
    };
    for (s, image) in services {
        let body = body(s, image.clone(), &started.network, labels, limits, host);
        let name = format!("{}-{}", started.network, s.name);
        let c = match Container::create_started(host, &name, body).await {
            Ok(c) => match wait_ready(host, &c, s, cancel).await {
                Ok(()) => Ok(c),
                Err(e) => {
                    let _ = c.destroy().await;
                    Err(e)
                }
            },
            Err(e) => Err(failed(format!("service {}: {e}", s.name))),
        };
        match c {
            Ok(c) => started.containers.push(c),
            Err(e) => {
                started.remove(host).await;
                return Err(e);
            }
        }
    }
    Ok(started)
}

/// A service's container: its own command and environment, the limits, on `network` where
/// its name is an alias.
fn body(
    s: &ServiceSpec,
    image: String,
    network: &str,
    labels: &HashMap<String, String>,
    limits: Limits,
    host: &DockerHost,
) -> ContainerCreateBody {
    let mut labels = labels.clone();
    labels.insert("bench.service".into(), s.name.clone());
    let ms = |m: u64| (m as i64) * 1_000_000;
    ContainerCreateBody {
        image: Some(image),
        entrypoint: s.entrypoint.clone(),
        cmd: s.command.clone(),
        env: Some(s.environment.clone()),
        working_dir: s.working_dir.clone(),
        user: s.user.clone(),
        labels: Some(labels),
        healthcheck: s.healthcheck.as_ref().map(|h| HealthConfig {
            test: Some(h.test.clone()),
            interval: Some(ms(h.interval_ms)),
            timeout: Some(ms(h.timeout_ms)),
            start_period: Some(ms(h.start_period_ms)),
            retries: Some(h.retries as i64),
            ..Default::default()
        }),
        host_config: Some(HostConfig {
            nano_cpus: Some((limits.cpus.min(host.ncpu.unwrap_or(f64::MAX)) * 1e9) as i64),
            memory: Some(limits.memory_bytes as i64),
            pids_limit: Some(limits.pids as i64),
            network_mode: Some(network.to_string()),
            ..Default::default()
        }),
        networking_config: Some(NetworkingConfig {
            endpoints_config: Some(HashMap::from([(
                network.to_string(),
                EndpointSettings {
                    aliases: Some(vec![s.name.clone()]),
                    ..Default::default()
                },
            )])),
        }),
        ..Default::default()
    }
}

/// Waits until a service runs (and, with a healthcheck, is healthy); an exit, an unhealthy
/// verdict or the cap is an error with the service's last output.
async fn wait_ready(
    host: &DockerHost,
    c: &Container,
    s: &ServiceSpec,
    cancel: &CancellationToken,
) -> Result<(), SandboxError> {
    let started = Instant::now();
    let cap = s.healthcheck.as_ref().map_or(SETTLE, |h| {
        let each = Duration::from_millis(h.interval_ms + h.timeout_ms);
        (Duration::from_millis(h.start_period_ms) + each * (h.retries as u32 + 2)).min(HEALTHY_CAP)
    });
    loop {
        if cancel.is_cancelled() {
            return Err(SandboxError::Cancelled);
        }
        let state = host
            .client
            .inspect_container(&c.id, None)
            .await
            .map_err(|e| failed(format!("service {}: cannot inspect it: {e}", s.name)))?
            .state
            .unwrap_or_default();
        if state.running != Some(true) {
            return Err(failed(format!(
                "service {} exited (code {}) before the agent's container started:\n{}",
                s.name,
                state.exit_code.unwrap_or_default(),
                logs_tail(host, &c.id).await
            )));
        }
        let health = state.health.and_then(|h| h.status);
        match (&s.healthcheck, health) {
            (None, _) if started.elapsed() >= SETTLE => return Ok(()),
            (Some(_), Some(HealthStatusEnum::HEALTHY)) => return Ok(()),
            (Some(_), Some(HealthStatusEnum::UNHEALTHY)) => {
                return Err(failed(format!(
                    "service {} is unhealthy (its healthcheck failed {} times):\n{}",
                    s.name,
                    s.healthcheck.as_ref().map_or(0, |h| h.retries),
                    logs_tail(host, &c.id).await
                )));
            }
            _ if started.elapsed() > cap => {
                return Err(failed(format!(
                    "service {} was not healthy after {}:\n{}",
                    s.name,
                    humantime::format_duration(Duration::from_secs(cap.as_secs())),
                    logs_tail(host, &c.id).await
                )));
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// The last 20 lines a container printed.
async fn logs_tail(host: &DockerHost, id: &str) -> String {
    let opts = bollard::query_parameters::LogsOptionsBuilder::new()
        .stdout(true)
        .stderr(true)
        .tail("20")
        .build();
    let mut out = String::new();
    let mut stream = host.client.logs(id, Some(opts));
    while let Some(Ok(chunk)) = stream.next().await {
        out.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sub_context_holds_one_directory_re_rooted() {
        let mut b = tar::Builder::new(Vec::new());
        for (p, text) in [
            ("Dockerfile", "FROM a\n"),
            ("server/", ""),
            ("server/Dockerfile", "FROM b\n"),
            ("server/app/", ""),
            ("server/app/serve.py", "print(1)\n"),
            ("serverless.txt", "no\n"),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(if p.ends_with('/') {
                tar::EntryType::Directory
            } else {
                tar::EntryType::Regular
            });
            h.set_mode(0o644);
            h.set_size(text.len() as u64);
            b.append_data(&mut h, p, text.as_bytes()).unwrap();
        }
        let ctx = b.into_inner().unwrap();
        let sub = sub_context(&ctx, "server").unwrap();
        let mut names: Vec<String> = tar::Archive::new(sub.as_slice())
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        names.sort();
        assert_eq!(names, ["Dockerfile", "app/", "app/serve.py"]);
        assert_eq!(sub_context(&ctx, "").unwrap(), ctx);
        let s = |name: &str| ServiceSpec {
            name: name.into(),
            image: None,
            build: Some(crate::tasks::ServiceBuild {
                context: "server".into(),
                dockerfile: "Dockerfile".into(),
            }),
            entrypoint: None,
            command: None,
            environment: Vec::new(),
            working_dir: None,
            user: None,
            healthcheck: None,
            depends_on: Vec::new(),
        };
        assert_ne!(
            service_tag("build:a", &s("x")),
            service_tag("build:b", &s("x"))
        );
        assert_ne!(
            service_tag("build:a", &s("x")),
            service_tag("build:a", &s("y"))
        );
    }
}
