//! The apply lock: one `bench apply` (or `gc --delete`) per store at a time.
//!
//! The lock is an OS file lock (`flock`) on `locks/apply.lock`, so the kernel releases it when
//! the holder dies, however it dies: a dead holder never blocks anyone. The file's content names
//! the holder (pid, host, command, since) for the error a second apply gets.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Who holds the lock.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Holder {
    pub pid: u32,
    pub host: String,
    pub command: String,
    pub since: String,
}

#[derive(Debug, Error)]
pub enum LockError {
    #[error(
        "the store {store} is in use by pid {} on {} since {}: `{}`",
        holder.pid, holder.host, holder.since, holder.command
    )]
    Held { store: String, holder: Holder },
    #[error("cannot lock the store {store}: {source}")]
    Io {
        store: String,
        source: std::io::Error,
    },
}

/// A held lock; released on drop.
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
    /// The previous holder, if it died holding the lock.
    pub took_over_from: Option<Holder>,
}

impl StoreLock {
    /// Takes the lock or names its live holder.
    pub fn acquire(store_root: &Path, command: &str) -> Result<StoreLock, LockError> {
        let path = store_root.join("locks").join("apply.lock");
        let io = |source| LockError::Io {
            store: store_root.display().to_string(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        let mut previous = String::new();
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let _ = file.read_to_string(&mut previous);
                let holder = serde_json::from_str(&previous).unwrap_or(Holder {
                    pid: 0,
                    host: "unknown".into(),
                    command: "unknown".into(),
                    since: "unknown".into(),
                });
                return Err(LockError::Held {
                    store: store_root.display().to_string(),
                    holder,
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        let _ = file.read_to_string(&mut previous);
        let took_over_from = serde_json::from_str::<Holder>(&previous).ok();
        let holder = Holder {
            pid: std::process::id(),
            host: gethostname::gethostname().to_string_lossy().into_owned(),
            command: command.to_string(),
            since: jiff::Timestamp::now().to_string(),
        };
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(
            serde_json::to_string(&holder)
                .expect("holder serializes")
                .as_bytes(),
        )
        .map_err(io)?;
        file.sync_all().map_err(io)?;
        Ok(StoreLock {
            _file: file,
            took_over_from,
        })
    }
}

impl StoreLock {
    /// Who holds the store's apply lock now, if anyone (probed without taking it for long).
    pub fn holder(store_root: &Path) -> Option<Holder> {
        let path = store_root.join("locks").join("apply.lock");
        let mut file = OpenOptions::new().read(true).write(true).open(&path).ok()?;
        match file.try_lock() {
            Ok(()) => {
                let _ = file.unlock();
                None
            }
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                serde_json::from_str(&text).ok()
            }
            Err(TryLockError::Error(_)) => None,
        }
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        // Clear the holder so a later apply does not report a takeover.
        let _ = self._file.set_len(0);
    }
}
