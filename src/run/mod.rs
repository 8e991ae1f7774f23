//! Running a manifest: loading its datasets, planning, and the apply dispatcher.

mod apply;
mod datasets;
mod plan;
mod progress;

pub use apply::{ApplyOptions, ApplyResult, apply, report_inputs};
pub use datasets::load_datasets;
pub use plan::{PlanEntry, PlanReport, plan};
pub use progress::Progress;
