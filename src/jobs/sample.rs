//! The sample node's job: a dataset snapshot and the filters and seed that pick tasks from it.

use serde::{Deserialize, Serialize};

use super::{Job, KEY_SCHEMA, Kind};
use crate::tasks::TaskSet;
use crate::types::SampleFilters;

/// What identifies a dataset's content: its format and the snapshot digest over every task
/// (bound to the Hub `repo@revision` where it came from).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetFacts {
    pub format: String,
    pub snapshot: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleJob {
    pub schema: u32,
    pub version: u32,
    pub dataset: DatasetFacts,
    pub filters: SampleFilters,
}

impl SampleJob {
    pub fn new(dataset: DatasetFacts, filters: SampleFilters) -> SampleJob {
        SampleJob {
            schema: KEY_SCHEMA,
            version: super::versions::SAMPLE,
            dataset,
            filters,
        }
    }

    /// Runs the sample on `set`, which must be the snapshot the job names (inputs are passed by
    /// digest; the set is the content of that digest).
    pub fn run(&self, set: &TaskSet) -> Result<SampleOutput, String> {
        if set.snapshot != self.dataset.snapshot {
            return Err(format!(
                "internal error: the dataset's snapshot is {}, the sample job names {}",
                set.snapshot, self.dataset.snapshot
            ));
        }
        Ok(SampleOutput {
            tasks: crate::tasks::sample(set, &self.filters),
        })
    }
}

/// Output of a sample node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SampleOutput {
    /// Task ids in sample order.
    pub tasks: Vec<String>,
}

impl Job for SampleJob {
    const KIND: Kind = Kind::Sample;
    type Output = SampleOutput;
}
