//! File stamps, as git's index keeps them: the stat `(size, mtime_ns, ctime_ns, inode)` that
//! identifies one version of a file, and the "racy" rule for trusting it (a file changed within
//! the same timestamp tick as it was statted may keep its stat). The store's action index and
//! the task-file digest cache are built on them.

use std::os::unix::fs::MetadataExt;

use serde::{Deserialize, Serialize};

/// A record file changed less than this long before it was statted may still carry its old
/// stat (timestamps move in ticks): its entry is not trusted.
pub const RACY_NS: i128 = 2_000_000_000;

/// The stat that identifies one version of a record file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub ino: u64,
}

impl FileStamp {
    pub fn of(m: &std::fs::Metadata) -> FileStamp {
        FileStamp {
            size: m.len(),
            mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
            ctime_ns: m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128,
            ino: m.ino(),
        }
    }

    /// Whether an entry made at `made_ns` with this stamp can be trusted (not racy).
    pub fn settled(&self, made_ns: i128, racy_ns: i128) -> bool {
        made_ns - self.ctime_ns.max(self.mtime_ns) >= racy_ns
    }
}

/// The stat of the running bench executable (another build may derive keys and digests
/// differently), as text for a fingerprint.
pub fn exe_stamp() -> Option<String> {
    let exe = fs_err::metadata("/proc/self/exe").ok()?;
    Some(format!("{:?}", FileStamp::of(&exe)))
}

pub fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}
