//! File helpers every layer uses: the one atomic write (`atomic.rs`), file stamps
//! (`stamp.rs`) and stats relative to an open directory (`dir.rs`). They import nothing of
//! bench.
//!
//! Not here: reading regular files with limits (`regular_file.rs`), the store's layout
//! (`store/`).

mod atomic;
mod dir;
mod stamp;

pub use atomic::{sweep_temp_files_under, write_atomic, write_atomic_with};
pub use dir::{Dir, DirHandle, Stat, StatUnder};
pub use stamp::{FileStamp, RACY_NS, exe_stamp, now_ns};

/// Writes `text` to `path` and sets its mtime back to what it was (an edit that a size and
/// mtime check cannot see: what the stat signatures' tests make).
#[cfg(test)]
pub(crate) fn write_keeping_mtime(path: &std::path::Path, text: &str) {
    let mtime = fs_err::metadata(path).unwrap().modified().unwrap();
    fs_err::write(path, text).unwrap();
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
}
