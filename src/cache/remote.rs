//! The engine's view of a remote cache: "have you got key K" ([`RemoteCache::peek`],
//! [`RemoteCache::fetch`]) and "take the record of K and its blobs" ([`RemoteCache::push`]).
//! What answers is a transport detail of the implementation ([`super::ObjectCache`]).
//!
//! A remote that fails (unreachable, refusing) is given up for the rest of the process: every
//! later call answers at once with [`Fetch::Unreachable`] or an error, so a cache that is down
//! costs one timeout, and no node fails because of it.

use thiserror::Error;

use crate::jobs::Kind;
use crate::store::{ActionRecord, Store, StoreError};
use crate::types::Digest;

#[derive(Debug, Error)]
pub enum CacheError {
    #[error("the remote cache {url} is unreachable: {message}")]
    Unreachable { url: String, message: String },
    #[error(
        "no signing key to sign uploads with: run `bench cache keygen`, or set BENCH_CACHE_KEY_FILE or BENCH_CACHE_KEY"
    )]
    NoSigningKey,
    #[error("the local store has no valid record for {0}")]
    NotLocal(String),
    #[error("the local store cannot give blob {digest}: {source}")]
    Blob { digest: String, source: StoreError },
    #[error("the remote cache {url} cannot give blob {digest}: {message}")]
    NoBlob {
        url: String,
        digest: String,
        message: String,
    },
    #[error("cannot open the remote cache {url}: {message}")]
    Open { url: String, message: String },
}

/// A record fetched whole: verified, trusted, its blobs verified and in the local store, then
/// the record committed there.
#[derive(Debug)]
pub struct Fetched {
    /// The record (light: `job` is null, as lookups read it).
    pub record: ActionRecord,
    /// Blobs downloaded (those the local store lacked) and their bytes.
    pub blobs: usize,
    pub bytes: u64,
}

/// The answer to "fetch key K".
#[derive(Debug)]
pub enum Fetch {
    Hit(Box<Fetched>),
    /// No entry for K by any trusted signer.
    Miss,
    /// Something is there but unusable (signed by no trusted key, a bad signature, a record or
    /// blob that fails verification): a miss, with the reason to report.
    Rejected(String),
    /// The remote failed; it is given up for the rest of this process.
    Unreachable(String),
}

/// The answer to "would you serve key K" (the record only; nothing is written).
#[derive(Debug)]
pub enum Peek {
    Trusted(Box<ActionRecord>),
    Miss,
    Rejected(String),
    Unreachable(String),
}

/// What `bench cache status` shows of a remote.
#[derive(Debug, Default, serde::Serialize)]
pub struct RemoteStatus {
    pub url: String,
    /// Entries (signed records) by signer (the public key), and how many of them are trusted.
    pub entries_by_signer: std::collections::BTreeMap<String, usize>,
    pub blobs: usize,
    pub blob_bytes: u64,
}

/// A remote cache.
#[async_trait::async_trait]
pub trait RemoteCache: Send + Sync {
    /// Where it is (for notes).
    fn url(&self) -> &str;
    /// Why it was given up, if it was.
    fn down(&self) -> Option<String>;
    /// Whether uploads are possible (a signing key is loaded).
    fn can_push(&self) -> bool;
    /// The record a trusted signer stored for `key`, verified (a record of another kind than
    /// `kind`, the kind of the node asking, is refused); nothing is written.
    async fn peek(&self, key: &str, kind: Kind) -> Peek;
    /// The record of `key` with its blobs, verified as [`RemoteCache::peek`] verifies it, into
    /// `store` (blobs first, each downloaded once per process and streamed to disk under the
    /// size cap, the record last): afterwards the local store holds it as if it had been
    /// computed here.
    async fn fetch(&self, key: &str, kind: Kind, store: &Store) -> Fetch;
    /// Uploads the local record of `key` and its blobs, signed (blobs first, the entry last, so
    /// no entry is visible before everything it refers to). `skip_present`: nothing is sent when
    /// this signer's entry for `key` is there already. Returns whether it uploaded.
    async fn push(&self, key: &str, store: &Store, skip_present: bool) -> Result<bool, CacheError>;
    /// Uploads the blobs `digests` of the local store that the remote lacks (a shipped job's
    /// inputs); none needs a signature: each is named by its content. Returns how many it sent.
    async fn put_blobs(&self, digests: &[Digest], store: &Store) -> Result<usize, CacheError>;
    /// The blob `digest` into `store`, streamed, capped and verified (a worker's inputs).
    async fn get_blob(&self, digest: &Digest, store: &Store) -> Result<(), CacheError>;
    /// What the remote holds.
    async fn status(&self) -> Result<RemoteStatus, CacheError>;
}
