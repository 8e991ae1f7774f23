//! A report's promotion rule.
//!
//! Not here: rendering or judging it (`report/`).

use serde::Serialize;

/// A resolved promotion rule (`promote` of a report stage).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Promote {
    pub candidate: String,
    pub baseline: String,
    pub max_drop_points: f64,
    pub min_cost_saving_percent: f64,
}
