//! [`ObjectCache`]: the remote cache over an object store (the `object_store` crate): S3 and
//! S3-compatible servers, Google Cloud Storage, Azure Blob Storage, WebDAV over HTTP(S), and a
//! local directory. Credentials come the way each ecosystem expects (the standard `AWS_*`,
//! `GOOGLE_*` and `AZURE_*` variables; `object_store`'s builders read them).
//!
//! Layout under the URL's path:
//!
//! ```text
//! bench-cache-v1/ac/<key>/<signer id>   one signed entry per signer (entry.rs)
//! bench-cache-v1/cas/<digest>           blobs by blake3
//! ```
//!
//! One entry per signer: a writer that no store trusts cannot displace a trusted signer's
//! entry, and two machines of one team finishing the same key write two entries (each machine's
//! own is rewritten by itself only: last writer wins, with the same content). Every object is
//! written by one put, which the object store makes visible whole or not at all (S3 and the
//! WebDAV server commit the body on completion; the local store renames a staged file), and an
//! entry is put only after every blob it refers to: an upload killed at any instant leaves no
//! entry that refers to a missing blob.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjPath;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, RetryConfig};

use super::entry::Entry;
use super::remote::{CacheError, Fetch, Fetched, Peek, RemoteCache, RemoteStatus};
use super::signing::{PublicKey, Signer};
use crate::jobs::Kind;
use crate::store::{ActionRecord, Store};
use crate::types::Digest;

const ROOT: &str = "bench-cache-v1";

/// The largest signed entry read whatever `max_object_size` says: an entry is a record, a few
/// kilobytes to a few megabytes of JSON (it is held in memory while it is verified).
const ENTRY_CAP: u64 = 64 * 1024 * 1024;

/// Blobs of one record downloaded at once.
const BLOBS_AT_ONCE: usize = 16;

/// A remote cache on an object store.
pub struct ObjectCache {
    url: String,
    objects: Arc<dyn ObjectStore>,
    root: ObjPath,
    trust: Vec<PublicKey>,
    signer: Option<Arc<Signer>>,
    down: Mutex<Option<String>>,
    /// What to add to a failure's message (S3 without credentials in the environment).
    hint: Option<String>,
    /// The largest object a fetch downloads.
    max_object_bytes: u64,
    /// Blobs fetched (or being fetched) by this process, by digest: each is downloaded once,
    /// however many records that arrive at once share it.
    blobs: Mutex<HashMap<Digest, Arc<tokio::sync::OnceCell<BlobGot>>>>,
}

/// What became of one blob a fetch needed.
#[derive(Debug, Clone)]
enum BlobGot {
    /// The local store had it.
    Here,
    /// Downloaded and verified (its size).
    Downloaded(u64),
    /// Not usable: why.
    Refused(String),
    /// The remote failed.
    Unreachable(String),
}

/// Whether the standard variable `var` allows plain HTTP (a local S3-compatible server).
fn env_allows_http(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// Short timeouts and few retries: a cache that is down must cost little, never a node.
fn client_options(allow_http: bool) -> ClientOptions {
    ClientOptions::new()
        .with_timeout(Duration::from_secs(30))
        .with_connect_timeout(Duration::from_secs(3))
        .with_allow_http(allow_http)
}

fn retry() -> RetryConfig {
    RetryConfig {
        backoff: Default::default(),
        max_retries: 2,
        retry_timeout: Duration::from_secs(10),
    }
}

/// Opens the remote cache at `url` (`s3://bucket/prefix`, `gs://`, `az://`, `http(s)://` for
/// WebDAV, `file:///dir`). Nothing is contacted yet. A fetch downloads no object larger than
/// `max_object_bytes`.
pub fn open(
    url: &str,
    trust: Vec<PublicKey>,
    signer: Option<Arc<Signer>>,
    max_object_bytes: u64,
) -> Result<ObjectCache, CacheError> {
    let bad = |message: String| CacheError::Open {
        url: url.to_string(),
        message,
    };
    let parsed = url::Url::parse(url).map_err(|e| bad(e.to_string()))?;
    let prefix = parsed.path().trim_matches('/').to_string();
    let objects: Arc<dyn ObjectStore> = match parsed.scheme() {
        "s3" | "s3a" => Arc::new(
            object_store::aws::AmazonS3Builder::from_env()
                .with_url(url)
                .with_client_options(client_options(env_allows_http("AWS_ALLOW_HTTP")))
                .with_retry(retry())
                .build()
                .map_err(|e| bad(e.to_string()))?,
        ),
        "gs" => Arc::new(
            object_store::gcp::GoogleCloudStorageBuilder::from_env()
                .with_url(url)
                .with_client_options(client_options(false))
                .with_retry(retry())
                .build()
                .map_err(|e| bad(e.to_string()))?,
        ),
        "az" | "azure" | "abfs" | "abfss" => Arc::new(
            object_store::azure::MicrosoftAzureBuilder::from_env()
                .with_url(url)
                .with_client_options(client_options(env_allows_http("AZURE_ALLOW_HTTP")))
                .with_retry(retry())
                .build()
                .map_err(|e| bad(e.to_string()))?,
        ),
        "http" | "https" => {
            let base = &parsed[..url::Position::BeforePath];
            Arc::new(
                object_store::http::HttpBuilder::new()
                    .with_url(base)
                    .with_client_options(client_options(parsed.scheme() == "http"))
                    .with_retry(retry())
                    .build()
                    .map_err(|e| bad(e.to_string()))?,
            )
        }
        "file" => {
            let dir = local_dir(&parsed).map_err(bad)?;
            Arc::new(
                object_store::local::LocalFileSystem::new_with_prefix(&dir)
                    .map_err(|e| bad(e.to_string()))?,
            )
        }
        other => {
            return Err(bad(format!(
                "unknown scheme `{other}` (s3://, gs://, az://, http(s):// or file://)"
            )));
        }
    };
    // s3://bucket/prefix (the bucket is the host), https://host/prefix: the prefix is the path.
    let root = if parsed.scheme() == "file" || prefix.is_empty() {
        ObjPath::from(ROOT)
    } else {
        ObjPath::from(format!("{prefix}/{ROOT}"))
    };
    Ok(ObjectCache {
        url: url.to_string(),
        objects,
        root,
        trust,
        signer,
        down: Mutex::new(None),
        hint: matches!(parsed.scheme(), "s3" | "s3a")
            .then(aws_credentials_hint)
            .flatten(),
        max_object_bytes,
        blobs: Mutex::new(HashMap::new()),
    })
}

/// The directory of a `file://` remote: an absolute path (`file:///dir`; `file://dir` names a
/// host) that exists (a misspelt path must not be a new, empty cache).
pub fn local_dir(url: &url::Url) -> Result<std::path::PathBuf, String> {
    if let Some(host) = url
        .host_str()
        .filter(|h| !h.is_empty() && *h != "localhost")
    {
        return Err(format!(
            "`file://{host}{}` names the host `{host}`; a local directory is written with three slashes: file:///{host}{}",
            url.path(),
            url.path()
        ));
    }
    let dir = url
        .to_file_path()
        .map_err(|()| "not a local path".to_string())?;
    if !dir.is_dir() {
        return Err(format!(
            "the directory {} does not exist: create it (`mkdir -p {}`) to start a shared cache there, or fix the path",
            dir.display(),
            dir.display()
        ));
    }
    Ok(dir)
}

/// Without credentials in the environment, S3 clients ask the instance metadata service
/// (169.254.169.254) and fail there with its raw error: this says what is missing.
fn aws_credentials_hint() -> Option<String> {
    let set = |v: &str| std::env::var_os(v).is_some_and(|x| !x.is_empty());
    let any = [
        "AWS_ACCESS_KEY_ID",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ]
    .iter()
    .any(|v| set(v));
    (!any).then(|| {
        "no AWS credentials are set in the environment, so the instance metadata service was asked for them: \
         export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_DEFAULT_REGION; AWS_ENDPOINT and \
         AWS_ALLOW_HTTP=true for an S3-compatible server on plain HTTP); AWS profiles are not read"
            .to_string()
    })
}

/// Runs `f`, a store write that syncs to disk, without holding up the other requests: on a
/// multi-threaded runtime the worker's other tasks move to another thread meanwhile, so the
/// fetches in flight keep downloading and their syncs overlap (a disk commits concurrent syncs
/// together: one at a time costs several milliseconds each). Elsewhere it runs in place.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Why an object over the cap was not downloaded.
fn cap_note(what: &str, size: u64, cap: u64) -> String {
    format!(
        "{what} is {} on the remote, over the cap of {}; not downloaded (`[cache] max_object_size` sets the cap)",
        bytesize::ByteSize(size),
        bytesize::ByteSize(cap)
    )
}

enum Got {
    Bytes(Vec<u8>),
    Missing,
    /// Larger than the cap: its size (as the remote states it, or as far as it was read).
    TooLarge(u64),
}

impl ObjectCache {
    fn entry_path(&self, key: &str, signer: &PublicKey) -> ObjPath {
        self.root.clone().join("ac").join(key).join(signer.id())
    }

    fn blob_path(&self, digest: &Digest) -> ObjPath {
        self.root.clone().join("cas").join(digest.as_str())
    }

    fn give_up(&self, e: &object_store::Error) -> String {
        let message = match &self.hint {
            Some(h) => format!("{e} ({h})"),
            None => e.to_string(),
        };
        let mut down = self.down.lock().unwrap_or_else(|p| p.into_inner());
        down.get_or_insert(message).clone()
    }

    fn unreachable(&self, message: String) -> CacheError {
        CacheError::Unreachable {
            url: self.url.clone(),
            message,
        }
    }

    /// An object, read whole into memory, refused unread past `cap` bytes (as the remote
    /// states its size, and as its bytes arrive).
    async fn get(&self, path: &ObjPath, cap: u64) -> Result<Got, String> {
        if let Some(m) = self.down() {
            return Err(m);
        }
        let r = match self.objects.get(path).await {
            Ok(r) => r,
            Err(object_store::Error::NotFound { .. }) => return Ok(Got::Missing),
            Err(e) => return Err(self.give_up(&e)),
        };
        if r.meta.size > cap {
            return Ok(Got::TooLarge(r.meta.size));
        }
        let mut out = Vec::with_capacity(r.meta.size as usize);
        let mut pieces = r.into_stream();
        while let Some(piece) = pieces.next().await {
            let piece = piece.map_err(|e| self.give_up(&e))?;
            if (out.len() + piece.len()) as u64 > cap {
                return Ok(Got::TooLarge((out.len() + piece.len()) as u64));
            }
            out.extend_from_slice(&piece);
        }
        Ok(Got::Bytes(out))
    }

    /// The blob `digest` into `store`, once per process: concurrent fetches that need it wait
    /// for one download. Returns what became of it, and whether this call downloaded it.
    async fn fetch_blob(&self, digest: &Digest, store: &Store) -> (BlobGot, bool) {
        let cell = self
            .blobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(digest.clone())
            .or_default()
            .clone();
        let mine = AtomicBool::new(false);
        let got = cell
            .get_or_init(|| async {
                mine.store(true, Ordering::Relaxed);
                self.download_blob(digest, store).await
            })
            .await
            .clone();
        (got, mine.load(Ordering::Relaxed))
    }

    /// Streams the blob `digest` to the store's disk (never whole in memory), capped, verified
    /// against its digest before it is renamed into place.
    async fn download_blob(&self, digest: &Digest, store: &Store) -> BlobGot {
        if store.has_blob(digest) {
            return BlobGot::Here;
        }
        if let Some(m) = self.down() {
            return BlobGot::Unreachable(m);
        }
        let cap = self.max_object_bytes;
        let r = match self.objects.get(&self.blob_path(digest)).await {
            Ok(r) => r,
            Err(object_store::Error::NotFound { .. }) => {
                return BlobGot::Refused(format!("its blob {digest} is missing on the remote"));
            }
            Err(e) => return BlobGot::Unreachable(self.give_up(&e)),
        };
        if r.meta.size > cap {
            return BlobGot::Refused(cap_note(&format!("its blob {digest}"), r.meta.size, cap));
        }
        let mut incoming = match store.incoming_blob(digest, cap) {
            Ok(i) => i,
            Err(e) => return BlobGot::Refused(format!("cannot store its blob {digest}: {e}")),
        };
        let mut pieces = r.into_stream();
        while let Some(piece) = pieces.next().await {
            let piece = match piece {
                Ok(p) => p,
                Err(e) => return BlobGot::Unreachable(self.give_up(&e)),
            };
            if let Err(e) = incoming.write(&piece) {
                return BlobGot::Refused(format!("its blob {digest} on the remote: {e}"));
            }
        }
        // Verified before use: a blob that does not hash to its name is never a result.
        match blocking(|| incoming.finish()) {
            Ok(size) => BlobGot::Downloaded(size),
            Err(e) => BlobGot::Refused(format!("its blob {digest} on the remote: {e}")),
        }
    }

    async fn put(&self, path: &ObjPath, bytes: Vec<u8>) -> Result<(), CacheError> {
        if let Some(m) = self.down() {
            return Err(self.unreachable(m));
        }
        match self.objects.put(path, bytes.into()).await {
            Ok(_) => Ok(()),
            Err(e) => Err(self.unreachable(self.give_up(&e))),
        }
    }

    /// The first valid entry for `key` of a trusted signer (in `trust` order): signed by that
    /// signer, holding a valid record of `key` whose kind is `kind`. An invalid entry (forged,
    /// misfiled, oversized) does not hide the next signer's; when none is valid, the reasons.
    async fn trusted_entry(&self, key: &str, kind: Kind) -> Result<Option<Trusted>, Peek> {
        let mut rejected = Vec::new();
        let cap = self.max_object_bytes.min(ENTRY_CAP);
        for signer in &self.trust {
            match self.get(&self.entry_path(key, signer), cap).await {
                Ok(Got::Missing) => {}
                Ok(Got::TooLarge(size)) => {
                    rejected.push(cap_note(&format!("the entry under {signer}"), size, cap));
                }
                Ok(Got::Bytes(b)) => match accept(key, kind, signer, &b) {
                    Ok(t) => return Ok(Some(t)),
                    Err(why) => rejected.push(why),
                },
                Err(m) => return Err(Peek::Unreachable(m)),
            }
        }
        if !rejected.is_empty() {
            return Err(Peek::Rejected(rejected.join("; ")));
        }
        // No trusted entry: say so when there are entries by others (never used).
        let prefix = self.root.clone().join("ac").join(key);
        let others: Vec<String> = match self
            .objects
            .list(Some(&prefix))
            .map_ok(|m| m.location.filename().unwrap_or_default().to_string())
            .try_collect()
            .await
        {
            Ok(v) => v,
            // A listing is only for this note (a WebDAV server may not list): a plain miss.
            Err(_) => return Ok(None),
        };
        if others.is_empty() {
            return Ok(None);
        }
        Err(Peek::Rejected(format!(
            "signed only by keys this manifest does not trust ({}); add one to `[cache] trust` to accept it",
            others
                .iter()
                .map(|id| format!("ed25519:{id}"))
                .collect::<Vec<_>>()
                .join(", ")
        )))
    }

    /// Every object under the root: one recursive listing, or (a WebDAV server that refuses
    /// a recursive PROPFIND, as nginx does) a walk one level at a time.
    async fn list_all(&self) -> Result<Vec<object_store::ObjectMeta>, CacheError> {
        if let Ok(all) = self.objects.list(Some(&self.root)).try_collect().await {
            return Ok(all);
        }
        let (mut out, mut todo) = (Vec::new(), vec![self.root.clone()]);
        while let Some(dir) = todo.pop() {
            let level = self
                .objects
                .list_with_delimiter(Some(&dir))
                .await
                .map_err(|e| self.unreachable(self.give_up(&e)))?;
            out.extend(level.objects);
            todo.extend(level.common_prefixes);
        }
        Ok(out)
    }
}

/// A trusted signer's valid entry: its record's bytes and the record (light).
struct Trusted {
    record_bytes: Vec<u8>,
    record: ActionRecord,
}

/// Checks the entry under `signer` for `key`: its signature, by that signer; its record (header,
/// checksum, key, every digest it names); and the record's kind against the node's.
fn accept(key: &str, kind: Kind, signer: &PublicKey, bytes: &[u8]) -> Result<Trusted, String> {
    let entry =
        Entry::decode(key, bytes).map_err(|why| format!("the entry under {signer}: {why}"))?;
    if entry.signer != *signer {
        return Err(format!(
            "the entry under {signer} is signed by {} instead",
            entry.signer
        ));
    }
    let record = Store::verify_record_bytes(&entry.record, key)
        .map_err(|why| format!("the entry signed by {signer} holds an invalid record: {why}"))?;
    if record.kind() != kind {
        return Err(format!(
            "the entry signed by {signer} holds a {} result where a {} node's result belongs (misfiled)",
            record.kind().name(),
            kind.name()
        ));
    }
    Ok(Trusted {
        record_bytes: entry.record,
        record,
    })
}

#[async_trait::async_trait]
impl RemoteCache for ObjectCache {
    fn url(&self) -> &str {
        &self.url
    }

    fn down(&self) -> Option<String> {
        self.down.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn can_push(&self) -> bool {
        self.signer.is_some()
    }

    async fn peek(&self, key: &str, kind: Kind) -> Peek {
        match self.trusted_entry(key, kind).await {
            Ok(Some(t)) => Peek::Trusted(Box::new(t.record)),
            Ok(None) => Peek::Miss,
            Err(p) => p,
        }
    }

    async fn fetch(&self, key: &str, kind: Kind, store: &Store) -> Fetch {
        let trusted = match self.trusted_entry(key, kind).await {
            Ok(Some(t)) => t,
            Ok(None) => return Fetch::Miss,
            Err(Peek::Rejected(r)) => return Fetch::Rejected(r),
            Err(Peek::Unreachable(m)) => return Fetch::Unreachable(m),
            Err(_) => return Fetch::Miss,
        };
        let digests = match trusted.record.blob_digests() {
            Ok(d) => d,
            Err(e) => return Fetch::Rejected(format!("its record names a blob by {e}")),
        };
        // A record's blobs download side by side (a report's are many); the first that fails,
        // in the record's order, is the answer, as if they had come one by one.
        let got: Vec<(BlobGot, bool)> = futures_util::stream::iter(digests)
            .map(|digest| async move { self.fetch_blob(&digest, store).await })
            .buffered(BLOBS_AT_ONCE)
            .collect()
            .await;
        let (mut blobs, mut bytes) = (0, 0);
        for answer in got {
            match answer {
                (BlobGot::Here, _) => {}
                (BlobGot::Downloaded(size), mine) => {
                    if mine {
                        blobs += 1;
                        bytes += size;
                    }
                }
                (BlobGot::Refused(why), _) => return Fetch::Rejected(why),
                (BlobGot::Unreachable(m), _) => return Fetch::Unreachable(m),
            }
        }
        // The record last: committed locally only once everything it refers to is here.
        match blocking(|| store.put_action_bytes(key, &trusted.record_bytes)) {
            Ok(record) => Fetch::Hit(Box::new(Fetched {
                record,
                blobs,
                bytes,
            })),
            Err(e) => Fetch::Rejected(format!("cannot store its record: {e}")),
        }
    }

    async fn push(&self, key: &str, store: &Store, skip_present: bool) -> Result<bool, CacheError> {
        let signer = self.signer.as_ref().ok_or(CacheError::NoSigningKey)?;
        let entry_path = self.entry_path(key, &signer.public());
        if skip_present {
            if let Some(m) = self.down() {
                return Err(self.unreachable(m));
            }
            match self.objects.head(&entry_path).await {
                Ok(_) => return Ok(false),
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(self.unreachable(self.give_up(&e))),
            }
        }
        let (rec, record_bytes) = store
            .action_bytes(key)
            .ok_or_else(|| CacheError::NotLocal(key.to_string()))?;
        let digests = rec
            .blob_digests()
            .map_err(|e| CacheError::NotLocal(format!("{key} (it names a blob by {e})")))?;
        for digest in digests {
            let data = store.get_blob(&digest).map_err(|source| CacheError::Blob {
                digest: digest.to_string(),
                source,
            })?;
            // Always sent (content-addressed, so harmless): a blob found tampered with on the
            // remote is healed by the next upload of a record that uses it.
            self.put(&self.blob_path(&digest), data).await?;
        }
        // The entry last: it becomes visible only when its blobs are.
        let entry = Entry::encode(key, &record_bytes, signer);
        self.put(&entry_path, entry).await?;
        Ok(true)
    }

    async fn put_blobs(&self, digests: &[Digest], store: &Store) -> Result<usize, CacheError> {
        let mut sent = 0;
        for digest in digests {
            if let Some(m) = self.down() {
                return Err(self.unreachable(m));
            }
            let path = self.blob_path(digest);
            match self.objects.head(&path).await {
                Ok(_) => continue,
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(self.unreachable(self.give_up(&e))),
            }
            let data = store.get_blob(digest).map_err(|source| CacheError::Blob {
                digest: digest.to_string(),
                source,
            })?;
            self.put(&path, data).await?;
            sent += 1;
        }
        Ok(sent)
    }

    async fn get_blob(&self, digest: &Digest, store: &Store) -> Result<(), CacheError> {
        let no_blob = |message: String| CacheError::NoBlob {
            url: self.url.clone(),
            digest: digest.to_string(),
            message,
        };
        match self.fetch_blob(digest, store).await.0 {
            BlobGot::Here | BlobGot::Downloaded(_) => Ok(()),
            BlobGot::Refused(m) => Err(no_blob(m)),
            BlobGot::Unreachable(m) => Err(self.unreachable(m)),
        }
    }

    async fn status(&self) -> Result<RemoteStatus, CacheError> {
        let mut status = RemoteStatus {
            url: self.url.clone(),
            ..Default::default()
        };
        let ac = self.root.clone().join("ac");
        let cas = self.root.clone().join("cas");
        for meta in self.list_all().await? {
            if meta.location.prefix_matches(&ac) {
                let id = meta.location.filename().unwrap_or_default();
                *status
                    .entries_by_signer
                    .entry(format!("ed25519:{id}"))
                    .or_default() += 1;
            } else if meta.location.prefix_matches(&cas) {
                status.blobs += 1;
                status.blob_bytes += meta.size;
            }
        }
        Ok(status)
    }
}
