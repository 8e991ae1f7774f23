//! Reports: statistics (exact, tested against reference values) and their rendering.

pub mod compare;
pub mod document;
pub mod frontier;
pub mod html;
pub mod inference;
pub mod markdown;
pub mod power;
pub mod results;
pub mod stats;

pub use document::{AuditedPair, PairResolution};
