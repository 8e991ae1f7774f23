//! A sample's filters and order (all of it part of the sample's key).
//!
//! Not here: drawing the sample (`tasks/sample.rs`).

use std::collections::BTreeSet;

use serde::Serialize;

/// Filters and order of a sample; all of it is part of the sample's key.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct SampleFilters {
    /// Inclusive lower bound on `created_at`, RFC 3339.
    pub since: Option<String>,
    /// Exclusive upper bound on `created_at`, RFC 3339.
    pub until: Option<String>,
    pub repos: BTreeSet<String>,
    pub languages: BTreeSet<String>,
    pub instance_ids: BTreeSet<String>,
    pub limit: Option<u32>,
    pub seed: u64,
}
