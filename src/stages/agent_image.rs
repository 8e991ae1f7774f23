//! Agent images for the docker backend: a harness's `install` commands (with its
//! `install_files`) run once on top of a task image, and the container is committed as
//! `bench-agent:<digest>`. The digest covers the task image's ID, the commands and the files, so
//! an edit to any of them builds a new image, and an existing image with the tag is reused,
//! across solves, applies and stores on the same daemon. Within one apply, concurrent solves of
//! the same task image wait for one build.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use crate::backend::docker::{Container, ContainerSpec};
use crate::harness::install::{files_digest, install_files};
use crate::manifest::{Harness, Manifest};

use super::WorkError;
use super::docker::DockerRun;

/// Repository of agent images.
pub const AGENT_REPO: &str = "bench-agent";

/// How long an install may take.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(30 * 60);

fn infra(e: impl std::fmt::Display) -> WorkError {
    WorkError::Infra(e.to_string())
}

/// The tag of the agent image of `harness` on the image `base_image_id` (the first 16 hex
/// digits of the digest of everything it is built from).
pub fn agent_tag(base_image_id: &str, harness: &Harness) -> Result<String, String> {
    let files = install_files(&harness.install_files)?;
    let mut inputs = serde_json::json!({
        "schema": 1,
        "base": base_image_id,
        "install": harness.install,
        "files": files_digest(&files),
    });
    // Only with a runtime: the tags of other agent images are unchanged.
    if let Some(rt) = &harness.runtime {
        inputs["runtime"] = serde_json::json!(rt);
    }
    let digest = crate::key::digest_of(&inputs);
    Ok(digest[..16].to_string())
}

type Builds = Mutex<HashMap<String, Arc<OnceCell<String>>>>;
static BUILDS: LazyLock<Builds> = LazyLock::new(Default::default);

/// The image an agent of `harness` runs in on top of `base_image_id`: the base itself when the
/// harness installs nothing, else its agent image (built now unless it exists).
pub async fn image_for(
    ctx: &DockerRun,
    m: &Manifest,
    base_image_id: &str,
    harness: &Harness,
    cancel: &CancellationToken,
) -> Result<String, WorkError> {
    if !harness.installs() {
        return Ok(base_image_id.to_string());
    }
    let tag = agent_tag(base_image_id, harness).map_err(|e| {
        infra(format!(
            "harness `{}`: cannot read its install files: {e}",
            harness.name
        ))
    })?;
    let cell = {
        let mut builds = BUILDS.lock().unwrap_or_else(|p| p.into_inner());
        builds.entry(tag.clone()).or_default().clone()
    };
    cell.get_or_try_init(|| build(ctx, m, base_image_id, harness, &tag, cancel))
        .await
        .cloned()
}

async fn build(
    ctx: &DockerRun,
    m: &Manifest,
    base_image_id: &str,
    harness: &Harness,
    tag: &str,
    cancel: &CancellationToken,
) -> Result<String, WorkError> {
    let reference = format!("{AGENT_REPO}:{tag}");
    if let Some(id) = ctx.host.image_id(&reference).await.map_err(infra)? {
        return Ok(id);
    }
    let mut files = install_files(&harness.install_files).map_err(infra)?;
    // The runtime tarball, downloaded and verified on the host (the container may have no
    // network, or no curl).
    if let Some(rt) = harness.runtime.clone() {
        let bytes = tokio::task::spawn_blocking(move || crate::harness::runtime::fetch(&rt))
            .await
            .map_err(infra)?
            .map_err(|e| infra(format!("harness `{}`: {e}", harness.name)))?;
        files.push(crate::harness::install::InstallFile {
            path: crate::harness::runtime::tarball_path(harness.runtime.as_ref().expect("set")),
            bytes: bytes.to_vec(),
            mode: 0o644,
        });
    }
    let spec = ContainerSpec {
        image: base_image_id.to_string(),
        name: format!("bench-{}-install-{tag}", ctx.run_id),
        labels: ContainerSpec::labels(
            &ctx.run_id,
            &format!("install/{}", harness.name),
            &ctx.store_label,
        ),
        cpus: m.backend.cpus,
        memory_bytes: m.backend.memory_bytes,
        pids: m.backend.pids,
    };
    let c = Container::start(&ctx.host, &spec).await.map_err(infra)?;
    let result = async {
        let paths: Vec<String> = files
            .iter()
            .map(|f| format!("/tmp/bench-install/{}", f.path))
            .collect();
        let mut put: Vec<(&str, &[u8], u32)> = files
            .iter()
            .zip(&paths)
            .map(|(f, p)| (p.as_str(), f.bytes.as_slice(), f.mode))
            .collect();
        // The directory exists even without files.
        put.push(("/tmp/bench-install/.bench", b"", 0o644));
        c.put_files(&put).await.map_err(infra)?;
        let (unpack, link) = match &harness.runtime {
            Some(rt) => (
                crate::harness::runtime::unpack_script(rt),
                crate::harness::runtime::link_script(rt),
            ),
            None => (String::new(), String::new()),
        };
        let script = format!(
            "set -e\ncd /tmp/bench-install\n{unpack}{}\n{link}\ncd /\nrm -rf /tmp/bench-install\n",
            harness.install.join("\n")
        );
        let env = [("HOME".to_string(), "/root".to_string())];
        let r = c
            .exec(&script, "/", &env, INSTALL_TIMEOUT, cancel)
            .await
            .map_err(infra)?;
        if r.cancelled {
            return Err(WorkError::Cancelled);
        }
        if r.exit_code != Some(0) {
            let out = String::from_utf8_lossy(&r.output);
            let tail: String = out.lines().rev().take(20).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
            return Err(infra(format!(
                "cannot build the agent image of harness `{}` on {}: the install commands {}:\n{tail}",
                harness.name,
                short(base_image_id),
                if r.timed_out {
                    format!("timed out after {}", humantime::format_duration(INSTALL_TIMEOUT))
                } else {
                    format!("exited with {:?}", r.exit_code)
                },
            )));
        }
        let labels = HashMap::from([
            ("bench.agent-image".to_string(), "1".to_string()),
            ("bench.harness".to_string(), harness.name.clone()),
            ("bench.base-image".to_string(), base_image_id.to_string()),
        ]);
        c.commit(AGENT_REPO, tag, labels).await.map_err(infra)
    }
    .await;
    let removed = c.destroy().await;
    let id = result?;
    removed.map_err(infra)?;
    eprintln!(
        "built agent image {reference} (harness `{}` on {})",
        harness.name,
        short(base_image_id)
    );
    Ok(id)
}

fn short(id: &str) -> &str {
    let id = id.strip_prefix("sha256:").unwrap_or(id);
    &id[..12.min(id.len())]
}
