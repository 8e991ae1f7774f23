//! The content-addressed store: blobs by blake3, the action cache (key -> result record), the
//! run log, the per-manifest index used by `plan --explain`, locks, and garbage collection.

mod action_index;
mod attempts;
mod blobs;
mod gc;
mod images;
mod incoming;
mod layout;
mod lock;
mod records;

pub use crate::files::{
    FileStamp, RACY_NS, exe_stamp, now_ns, sweep_temp_files_under, write_atomic,
};
pub use attempts::{ATTEMPTS_SCHEMA, Attempt, Attempts, Replacement};
pub use blobs::Blobs;
pub use gc::{GcReport, gc};
pub use images::{IMAGES_SCHEMA, PulledImage, PulledImages};
pub use incoming::{IncomingBlob, IncomingError};
pub use layout::{BadBlob, Lookup, Store, StoreError, StoreStats, default_store_path};
pub use lock::{LockError, StoreLock};
pub use records::{
    ActionRecord, Index, IndexView, NodeStatus, Output, RECORD_SCHEMA, RunNode, RunRecord,
    RunStatus,
};
