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

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::TryStreamExt;
use object_store::path::Path as ObjPath;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, RetryConfig};

use super::entry::Entry;
use super::remote::{CacheError, Fetch, Fetched, Peek, RemoteCache, RemoteStatus};
use super::signing::{PublicKey, Signer};
use crate::store::Store;

const ROOT: &str = "bench-cache-v1";

/// A remote cache on an object store.
pub struct ObjectCache {
    url: String,
    objects: Arc<dyn ObjectStore>,
    root: ObjPath,
    trust: Vec<PublicKey>,
    signer: Option<Arc<Signer>>,
    down: Mutex<Option<String>>,
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
/// WebDAV, `file:///dir`). Nothing is contacted yet.
pub fn open(
    url: &str,
    trust: Vec<PublicKey>,
    signer: Option<Arc<Signer>>,
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
            let dir = parsed
                .to_file_path()
                .map_err(|()| bad("not a local path".into()))?;
            fs_err::create_dir_all(&dir).map_err(|e| bad(e.to_string()))?;
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
    })
}

enum Got {
    Bytes(bytes::Bytes),
    Missing,
}

impl ObjectCache {
    fn entry_path(&self, key: &str, signer: &PublicKey) -> ObjPath {
        self.root.clone().join("ac").join(key).join(signer.id())
    }

    fn blob_path(&self, digest: &str) -> ObjPath {
        self.root.clone().join("cas").join(digest)
    }

    fn give_up(&self, e: &object_store::Error) -> String {
        let message = e.to_string();
        let mut down = self.down.lock().unwrap_or_else(|p| p.into_inner());
        down.get_or_insert(message).clone()
    }

    fn unreachable(&self, message: String) -> CacheError {
        CacheError::Unreachable {
            url: self.url.clone(),
            message,
        }
    }

    async fn get(&self, path: &ObjPath) -> Result<Got, String> {
        if let Some(m) = self.down() {
            return Err(m);
        }
        match self.objects.get(path).await {
            Ok(r) => match r.bytes().await {
                Ok(b) => Ok(Got::Bytes(b)),
                Err(e) => Err(self.give_up(&e)),
            },
            Err(object_store::Error::NotFound { .. }) => Ok(Got::Missing),
            Err(e) => Err(self.give_up(&e)),
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

    /// The first trusted signer's entry for `key` (in `trust` order), verified; or why none.
    async fn trusted_entry(&self, key: &str) -> Result<Option<Entry>, Peek> {
        let mut rejected = None;
        for signer in &self.trust {
            match self.get(&self.entry_path(key, signer)).await {
                Ok(Got::Missing) => {}
                Ok(Got::Bytes(b)) => match Entry::decode(key, &b) {
                    Ok(e) if e.signer == *signer => return Ok(Some(e)),
                    Ok(e) => {
                        rejected.get_or_insert(format!(
                            "the entry under {signer} is signed by {} instead",
                            e.signer
                        ));
                    }
                    Err(why) => {
                        rejected.get_or_insert(format!("the entry under {signer}: {why}"));
                    }
                },
                Err(m) => return Err(Peek::Unreachable(m)),
            }
        }
        if let Some(r) = rejected {
            return Err(Peek::Rejected(r));
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

    fn peeked(&self, key: &str, entry: &Entry) -> Peek {
        match Store::verify_record_bytes(&entry.record, key) {
            Ok(rec) => Peek::Trusted(Box::new(rec)),
            Err(why) => Peek::Rejected(format!(
                "the entry signed by {} holds an invalid record: {why}",
                entry.signer
            )),
        }
    }
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

    async fn peek(&self, key: &str) -> Peek {
        match self.trusted_entry(key).await {
            Ok(Some(e)) => self.peeked(key, &e),
            Ok(None) => Peek::Miss,
            Err(p) => p,
        }
    }

    async fn fetch(&self, key: &str, store: &Store) -> Fetch {
        let entry = match self.trusted_entry(key).await {
            Ok(Some(e)) => e,
            Ok(None) => return Fetch::Miss,
            Err(Peek::Rejected(r)) => return Fetch::Rejected(r),
            Err(Peek::Unreachable(m)) => return Fetch::Unreachable(m),
            Err(_) => return Fetch::Miss,
        };
        let rec = match self.peeked(key, &entry) {
            Peek::Trusted(r) => r,
            Peek::Rejected(r) => return Fetch::Rejected(r),
            _ => return Fetch::Miss,
        };
        let (mut blobs, mut bytes) = (0, 0);
        for digest in rec.blob_refs() {
            if store.has_blob(&digest) {
                continue;
            }
            let data = match self.get(&self.blob_path(&digest)).await {
                Ok(Got::Bytes(b)) => b,
                Ok(Got::Missing) => {
                    return Fetch::Rejected(format!("its blob {digest} is missing on the remote"));
                }
                Err(m) => return Fetch::Unreachable(m),
            };
            // Verified before use: a blob that does not hash to its name is never a result.
            let actual = crate::key::digest(&data);
            if actual != digest {
                return Fetch::Rejected(format!(
                    "its blob {digest} on the remote does not match its digest (it hashes to {}): tampered or torn",
                    &actual[..12]
                ));
            }
            if let Err(e) = store.put_blob(&data) {
                return Fetch::Rejected(format!("cannot store its blob {digest}: {e}"));
            }
            blobs += 1;
            bytes += data.len() as u64;
        }
        // The record last: committed locally only once everything it refers to is here.
        match store.put_action_bytes(key, &entry.record) {
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
        for digest in rec.blob_refs() {
            let data = store.get_blob(&digest).map_err(|source| CacheError::Blob {
                digest: digest.clone(),
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
