//! Reports: statistics (exact, tested against reference values) and their rendering.

pub mod stats;
