//! The shared remote cache: results computed on one machine reused by others. Records travel
//! signed (ed25519) by the machine that computed them and are accepted only from the keys a
//! manifest's `[cache] trust` lists; blobs travel by digest and are verified before use. The
//! engine talks to it through [`RemoteCache`] ("have you got key K", "take record R and its
//! blobs") and never sees the transport (S3, GCS, Azure, WebDAV, a directory).
//!
//! Not here: what to ask for and when (the dispatcher in `run/apply.rs` and the plan), and the
//! local store's layout (`store/`).

mod entry;
mod object;
mod remote;
mod signing;

pub use entry::{ENTRY_MAGIC, Entry};
pub use object::{ObjectCache, open};
pub use remote::{CacheError, Fetch, Fetched, Peek, RemoteCache, RemoteStatus};
pub use signing::{
    KEY_ENV, KEY_FILE_ENV, KeyError, PublicKey, Signer, default_key_path, generate_key_file,
    load_signer, read_key_file,
};
