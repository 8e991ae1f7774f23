//! The dataset-format seam, as Cargo's `Source`: what bench needs to know of one format (which
//! protocol grades its tasks, which columns its table files hold, how a row becomes a task) is
//! one [`Format`] value, registered in `registry.rs` and found by `datasets::format`. Code outside `datasets/` asks the format, never
//! matches on which one it is.
//!
//! Not here: the list of formats (`registry.rs`); the directory formats' own readers (`local` task directories in `tasks/`, brain
//! bench's YAML files in `brain_bench.rs`, Harbor's task directories in `harbor.rs`): those read
//! a path, not a table, and are chosen by where the dataset comes from (`run/datasets.rs`).

use super::error::DatasetError;
use super::table::Table;
use crate::jobs::ProtocolId;
use crate::tasks::Task;
use crate::types::DatasetFormat;

/// One dataset format.
pub trait Format: Sync {
    /// The format, as manifests name it.
    fn id(&self) -> DatasetFormat;
    /// The protocol that grades its tasks.
    fn protocol(&self) -> ProtocolId;
    /// The columns its row reader reads from a table file (parquet or JSON lines).
    fn columns(&self) -> Vec<&'static str>;
    /// The columns every table file of it must have (as the row reader requires them).
    fn required(&self) -> Vec<&'static str>;
    /// Its tasks, from a table file's rows.
    fn rows(&self, table: &mut Table) -> Result<Vec<Task>, DatasetError>;
}
