//! The report node's job: everything the report prints (the manifest's name and description,
//! the bench version, the backend, the datasets with their revisions and the sample's filters,
//! every pair's outcome, per-node rows, the pricing of the models used, the statistics
//! settings) and the version of the renderer. Cost is derived here at render time from the
//! stored token counts and the prices, so a price edit re-renders and reruns no solve.

use serde::{Deserialize, Serialize};

use super::{Job, KEY_SCHEMA, Kind};
use crate::stages::ReportInputs;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportJob {
    pub schema: u32,
    pub version: u32,
    pub inputs: ReportInputs,
    /// Where the files are written: a location, not an input.
    #[serde(skip)]
    pub out: super::Location,
}

impl ReportJob {
    pub fn new(inputs: ReportInputs, out: std::path::PathBuf) -> ReportJob {
        ReportJob {
            schema: KEY_SCHEMA,
            version: super::versions::REPORT,
            inputs,
            out: super::Location(out),
        }
    }
}

/// Output of a report node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportOutput {
    pub out: String,
    pub files: Vec<String>,
    pub artifacts: usize,
    pub promotion: Option<String>,
}

impl Job for ReportJob {
    const KIND: Kind = Kind::Report;
    type Output = ReportOutput;
}
