//! Implementation versions. Each is part of the keys of the nodes its code serves, so a change
//! to what the code produces reruns exactly those nodes. A golden test
//! (`tests/implementations.rs`) digests each implementation's output on its own fixtures and
//! fails when the output changes while the version does not: bump the version, then update
//! `tests/golden/implementations.json` (`BENCH_UPDATE_GOLDEN=1`).
//!
//! Versions that live beside their code: each built-in parser's (`parsers::parser_version`),
//! each protocol's (`protocols::version`), each harness adapter's (`harness::adapter_version`),
//! the grading view's (`tasks::GRADING_VIEW`).

/// The sampler (`tasks::sample`).
pub const SAMPLE: u32 = 2;
/// The team logic (`stages/solve/teams.rs`): how topologies run agents and pick a patch.
pub const SOLVE: u32 = 2;
/// The report renderer (`report/`, `stages/report.rs`). 10: the gold check's invalid and
/// errored tasks are listed with why (`gold.reasons`: the patch did not apply, FAIL_TO_PASS tests
/// still failing, PASS_TO_PASS tests broken, an infrastructure error). 9: the pricing table prices a run whose
/// model it prices, even when the harness printed its own total (`jobs::solve::recorded_cost`);
/// the priced-runs cell says when runs are priced by the harness's own figure. 8: clustered intervals use Student t
/// with G - 1 degrees of freedom; the note under the table against the baseline says Holm's p
/// decides, and a line names the teams whose interval and p disagree. 7: report.html has the
/// "By language" and "By repository" tables and names the gold check's invalid and errored
/// tasks; a team with no priced run shows its cost as unknown (not `≥ $0.00`); cost-chart
/// labels do not overlap.
pub const REPORT: u32 = 10;
/// The grading view of a task (`Task::grading_digest`, in every gold check's and grade's key),
/// defined beside it in `tasks/task.rs`.
pub use crate::tasks::GRADING_VIEW;
