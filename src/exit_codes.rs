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
