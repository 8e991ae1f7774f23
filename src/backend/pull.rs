//! Pulling task images through the Docker API before anything runs: which references the
//! daemon lacks, what their registries say of them (digest, size; a denied or missing image is
//! an error here, before any node starts), and the pulls themselves: `repository@digest` (the
//! digest resolved once, so what is pulled is what was planned), tagged afterwards as the
//! reference names it, with the user's credentials, a limit on concurrent pulls, retries with
//! backoff on transient errors, and per-layer progress (bars on a terminal, lines with bytes
//! otherwise). Not the scheduling of nodes, and not the store's record of pulled images
//! (`store/images.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bollard::auth::DockerCredentials;
use bollard::query_parameters::{CreateImageOptionsBuilder, TagImageOptionsBuilder};
use futures_util::StreamExt;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use super::credentials::{Credentials, CredentialsError, DockerConfig};
use super::docker::DockerHost;
use super::image_ref::{BadReference, ImageRef};
use super::registry::{RegistryClient, RegistryError, Resolved};
use crate::events::{Event, Events, ImagePull};

/// Pulls at once, unless the manifest says otherwise.
pub const DEFAULT_CONCURRENT_PULLS: usize = 3;

/// Attempts of one registry request or pull (transient errors only).
const ATTEMPTS: u32 = 4;

/// An image to pull, as its registry described it.
#[derive(Debug, Clone)]
pub struct PullItem {
    pub image: ImageRef,
    pub resolved: Resolved,
    creds: Option<Credentials>,
}

/// One finished pull.
#[derive(Debug, Clone)]
pub struct Pulled {
    pub reference: String,
    pub registry: String,
    pub digest: String,
    /// The image ID (`sha256:...`) on the daemon.
    pub id: String,
    /// Bytes downloaded (layers the daemon already had count nothing).
    pub downloaded: u64,
    pub seconds: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error(transparent)]
    Reference(#[from] BadReference),
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("the Docker daemon at {host} could not pull {image} from {registry}: {message}")]
    Daemon {
        host: String,
        image: String,
        registry: String,
        message: String,
    },
}

/// Backoff before attempt `n` (1-based retries): 1 s, 2 s, 4 s.
fn backoff(n: u32) -> Duration {
    Duration::from_secs(1 << (n - 1).min(4))
}

/// Asks each reference's registry for its digest and size (blocking; run it off the async
/// runtime). Every failure is reported, not only the first.
pub fn resolve(
    references: &[String],
    config: &DockerConfig,
) -> Result<Vec<PullItem>, Vec<PullError>> {
    let mut items = Vec::new();
    let mut errors = Vec::new();
    // A registry that did not answer after the retries is not asked again for its other
    // images (a dataset of 70 Hub images without a network fails in seconds, not minutes).
    let mut unreachable: HashMap<String, RegistryError> = HashMap::new();
    for r in references {
        let registry = ImageRef::parse(r).map(|i| i.registry).unwrap_or_default();
        if let Some(RegistryError::Unreachable { reason, .. }) = unreachable.get(&registry) {
            errors.push(PullError::Registry(RegistryError::Unreachable {
                image: r.clone(),
                registry: registry.clone(),
                reason: reason.clone(),
            }));
            continue;
        }
        match resolve_one(r, config) {
            Ok(i) => items.push(i),
            Err(PullError::Registry(e)) if e.transient() => {
                unreachable.insert(registry, e.clone());
                errors.push(PullError::Registry(e));
            }
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(items)
    } else {
        Err(errors)
    }
}

fn resolve_one(reference: &str, config: &DockerConfig) -> Result<PullItem, PullError> {
    let image = ImageRef::parse(reference)?;
    let creds = config.for_image(&image)?;
    let mut attempt = 1;
    let resolved = loop {
        match RegistryClient::new(&image, creds.as_ref()).resolve() {
            Ok(r) => break r,
            Err(e) if e.transient() && attempt < ATTEMPTS => {
                std::thread::sleep(backoff(attempt));
                attempt += 1;
            }
            Err(e) => return Err(e.into()),
        }
    };
    if let Some(pin) = &image.digest
        && pin != &resolved.digest
    {
        return Err(RegistryError::Protocol {
            image: image.original.clone(),
            registry: image.registry.clone(),
            reason: format!("asked for {pin}, the registry answered {}", resolved.digest),
        }
        .into());
    }
    Ok(PullItem {
        image,
        resolved,
        creds,
    })
}

/// Progress of concurrent pulls: lines as `image_pull` events, and on a terminal a bar per
/// layer in the reporter's bars.
#[derive(Clone)]
pub struct PullProgress {
    bars: Option<MultiProgress>,
    events: Events,
}

impl PullProgress {
    /// Layer bars when the reporter draws bars (a terminal, not quiet), lines otherwise.
    pub fn new(events: Events) -> PullProgress {
        PullProgress {
            bars: events.multi_progress(),
            events,
        }
    }

    fn line(&self, image: &ImageRef, line: String) {
        self.events.emit(Event::ImagePull(ImagePull {
            image: image.to_string(),
            line,
        }));
    }
}

fn bytes(n: u64) -> String {
    bytesize::ByteSize(n).display().iec().to_string()
}

fn short(d: &str) -> &str {
    let d = d.strip_prefix("sha256:").unwrap_or(d);
    &d[..12.min(d.len())]
}

/// One layer's state in a pull.
#[derive(Default)]
struct Layer {
    current: u64,
    total: u64,
    done: bool,
    bar: Option<ProgressBar>,
}

/// Pulls `items` on `host`, at most `limit` at once; returns them in `items`' order.
pub async fn pull_all(
    host: &DockerHost,
    items: Vec<PullItem>,
    limit: usize,
    progress: &PullProgress,
) -> Result<Vec<Pulled>, Vec<PullError>> {
    let sem = Arc::new(tokio::sync::Semaphore::new(limit.max(1)));
    let tasks = items.into_iter().map(|item| {
        let sem = sem.clone();
        async move {
            let _permit = sem.acquire().await.expect("the semaphore is never closed");
            pull_one(host, &item, progress).await
        }
    });
    let results = futures_util::future::join_all(tasks).await;
    let mut ok = Vec::new();
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(p) => ok.push(p),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(ok)
    } else {
        Err(errors)
    }
}

/// Whether a daemon's pull error is worth another attempt (not a denial or a missing image).
pub fn transient(message: &str) -> bool {
    let m = message.to_lowercase();
    let permanent = [
        "unauthorized",
        "denied",
        "authentication required",
        "no basic auth",
        "not found",
        "manifest unknown",
        "invalid reference",
        "no such host",
    ];
    !permanent.iter().any(|p| m.contains(p))
}

async fn pull_one(
    host: &DockerHost,
    item: &PullItem,
    progress: &PullProgress,
) -> Result<Pulled, PullError> {
    let start = Instant::now();
    let image = &item.image;
    let digest = &item.resolved.digest;
    let size = item
        .resolved
        .size
        .map_or(String::new(), |s| format!(", {}", bytes(s)));
    progress.line(
        image,
        format!(
            "pull    {image} from {} ({}{size})",
            image.registry,
            short(digest)
        ),
    );
    let mut attempt = 1;
    let downloaded =
        loop {
            match pull_stream(host, item, progress).await {
                Ok(n) => break n,
                Err(message) if transient(&message) && attempt < ATTEMPTS => {
                    progress.line(image, format!(
                    "pull    {image}: {message}; retrying in {} s (attempt {} of {ATTEMPTS})",
                    backoff(attempt).as_secs(),
                    attempt + 1
                ));
                    tokio::time::sleep(backoff(attempt)).await;
                    attempt += 1;
                }
                Err(message) => {
                    return Err(PullError::Daemon {
                        host: host.host.clone(),
                        image: image.original.clone(),
                        registry: image.registry.clone(),
                        message,
                    });
                }
            }
        };
    let daemon_err = |message: String| PullError::Daemon {
        host: host.host.clone(),
        image: image.original.clone(),
        registry: image.registry.clone(),
        message,
    };
    let pinned = image.pinned(digest);
    // The name the task uses: a tag names the pulled digest, as `docker pull` would leave it.
    if let (Some(tag), None) = (&image.tag, &image.digest) {
        host.client
            .tag_image(
                &pinned,
                Some(
                    TagImageOptionsBuilder::new()
                        .repo(&image.repository())
                        .tag(tag)
                        .build(),
                ),
            )
            .await
            .map_err(|e| daemon_err(format!("cannot tag {pinned} as {image}: {e}")))?;
    }
    let id = host
        .image_id(&image.original)
        .await
        .map_err(daemon_err)?
        .ok_or_else(|| daemon_err("the pull ended without the image".into()))?;
    let seconds = start.elapsed().as_secs_f64();
    progress.line(
        image,
        format!(
            "pulled  {image} ({}) as {}: {} downloaded in {seconds:.1} s ({}/s)",
            short(digest),
            short(&id),
            bytes(downloaded),
            bytes((downloaded as f64 / seconds.max(0.001)) as u64)
        ),
    );
    Ok(Pulled {
        reference: image.original.clone(),
        registry: image.registry.clone(),
        digest: digest.clone(),
        id,
        downloaded,
        seconds,
    })
}

/// One pull through the API; the bytes downloaded, or the daemon's message.
async fn pull_stream(
    host: &DockerHost,
    item: &PullItem,
    progress: &PullProgress,
) -> Result<u64, String> {
    let image = &item.image;
    let options = CreateImageOptionsBuilder::new()
        .from_image(&image.repository())
        .tag(&item.resolved.digest)
        .build();
    let creds = item.creds.as_ref().map(|c| DockerCredentials {
        username: (!c.username.is_empty()).then(|| c.username.clone()),
        password: (!c.password.is_empty()).then(|| c.password.clone()),
        identitytoken: c.identity_token.clone(),
        serveraddress: Some(image.auth_key().to_string()),
        ..Default::default()
    });
    let layers: Mutex<BTreeMap<String, Layer>> = Mutex::new(BTreeMap::new());
    let mut last_line = Instant::now();
    let style = ProgressStyle::with_template(
        "{prefix:>20} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta} {msg}",
    )
    .expect("template is valid")
    .progress_chars("=> ");
    let mut stream = host.client.create_image(Some(options), None, creds);
    while let Some(info) = stream.next().await {
        let info = info.map_err(|e| e.to_string())?;
        if let Some(e) = info.error_detail {
            return Err(e.message.unwrap_or_else(|| "unknown error".into()));
        }
        let (Some(id), Some(status)) = (info.id, info.status) else {
            continue;
        };
        // Lines about the image itself ("Pulling from ...") carry the tag as id.
        if id.len() != 12 {
            continue;
        }
        let mut layers = layers.lock().unwrap_or_else(|p| p.into_inner());
        let layer = layers.entry(id.clone()).or_default();
        if let Some(d) = &info.progress_detail
            && status == "Downloading"
        {
            layer.current = d.current.unwrap_or(0).max(0) as u64;
            layer.total = d.total.unwrap_or(0).max(0) as u64;
            if let Some(mp) = &progress.bars {
                let bar = layer.bar.get_or_insert_with(|| {
                    let b = mp.add(ProgressBar::new(layer.total));
                    b.set_style(style.clone());
                    b.set_prefix(id.clone());
                    b
                });
                bar.set_length(layer.total);
                bar.set_position(layer.current);
            }
        }
        match status.as_str() {
            "Download complete" => {
                layer.current = layer.total;
                if let Some(b) = &layer.bar {
                    b.set_position(layer.total);
                    b.set_message("downloaded");
                }
                if progress.bars.is_none() {
                    progress.line(
                        image,
                        format!(
                            "pull    {image}: layer {id} downloaded {}",
                            bytes(layer.total)
                        ),
                    );
                }
            }
            "Already exists" => {
                layer.done = true;
                progress.line(
                    image,
                    format!("pull    {image}: layer {id} already on the daemon"),
                );
            }
            "Pull complete" => {
                layer.done = true;
                if let Some(b) = layer.bar.take() {
                    b.finish_and_clear();
                }
            }
            _ => {}
        }
        if progress.bars.is_none() && last_line.elapsed() > Duration::from_secs(5) {
            last_line = Instant::now();
            let (cur, tot) = layers
                .values()
                .filter(|l| !l.done)
                .fold((0, 0), |(c, t), l| (c + l.current, t + l.total));
            if tot > 0 {
                progress.line(
                    image,
                    format!(
                        "pull    {image}: {} / {} of the layers in progress",
                        bytes(cur),
                        bytes(tot)
                    ),
                );
            }
        }
    }
    let layers = layers.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(layers.values().map(|l| l.total).sum())
}

/// The references of `refs` the daemon lacks.
pub async fn missing(host: &DockerHost, refs: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for r in refs {
        if host.image_id(r).await?.is_none() {
            out.push(r.clone());
        }
    }
    Ok(out)
}

/// Messages of several errors, one per line, in a stable order.
pub fn render_errors(errors: &[PullError]) -> String {
    let mut v: Vec<String> = errors.iter().map(ToString::to_string).collect();
    v.sort();
    v.dedup();
    v.join("\n  - ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_and_missing_images_are_not_retried() {
        for m in [
            "unauthorized: authentication required",
            "pull access denied for x, repository does not exist",
            "manifest for x:1 not found: manifest unknown",
        ] {
            assert!(!transient(m), "{m}");
        }
        for m in [
            "net/http: TLS handshake timeout",
            "read tcp 127.0.0.1:1->127.0.0.1:2: connection reset by peer",
            "unexpected EOF",
        ] {
            assert!(transient(m), "{m}");
        }
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(3), Duration::from_secs(4));
    }

    #[test]
    fn an_unreachable_registry_is_asked_once() {
        // Port 9 on loopback: nothing listens (connection refused, a transient error).
        let refs: Vec<String> = (0..3).map(|i| format!("127.0.0.1:9/img{i}:1")).collect();
        let t = Instant::now();
        let errors = resolve(&refs, &DockerConfig::default()).unwrap_err();
        assert_eq!(errors.len(), 3);
        // One image's four attempts (1 + 2 + 4 s of backoff), not three images'.
        assert!(t.elapsed() < Duration::from_secs(12), "{:?}", t.elapsed());
        let text = render_errors(&errors);
        assert!(
            text.contains("cannot reach registry 127.0.0.1:9 for 127.0.0.1:9/img2:1"),
            "{text}"
        );
    }
}
