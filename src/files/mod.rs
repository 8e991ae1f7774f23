//! File helpers every layer uses: the one atomic write (`atomic.rs`) and file stamps
//! (`stamp.rs`). They import nothing of bench.
//!
//! Not here: reading regular files with limits (`regular_file.rs`), the store's layout
//! (`store/`).

mod atomic;
mod stamp;

pub use atomic::{sweep_temp_files_under, write_atomic, write_atomic_with};
pub use stamp::{FileStamp, RACY_NS, exe_stamp, now_ns};
