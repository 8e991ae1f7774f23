//! bench's exit codes, in one place.

/// Success; for `plan`, nothing would run.
pub const OK: u8 = 0;
/// An error: bad input, an unusable store, a failed precondition.
pub const ERROR: u8 = 1;
/// `plan`: work is pending.
pub const PENDING: u8 = 2;
/// `apply`: finished, but some nodes failed (infrastructure errors; retried next time).
pub const NODES_FAILED: u8 = 3;
/// `apply`: interrupted (Ctrl-C or SIGTERM); completed work is kept.
pub const INTERRUPTED: u8 = 130;
/// Standard output was closed by its reader (`bench plan --explain FILE | head -1`): bench
/// stopped quietly, as a process killed by SIGPIPE (128 + 13).
pub const STDOUT_CLOSED: u8 = 141;
