//! The dataset-format seam, as Cargo's `Source`: what bench needs to know of one format (which
//! protocol grades its tasks, which columns its table files hold, how a row becomes a task) is
//! one [`Format`] value, found by [`format`]. Code outside `datasets/` asks the format, never
//! matches on which one it is.
//!
//! Not here: the directory formats' own readers (`local` task directories in `tasks/`, brain
//! bench's YAML files in `brain_bench.rs`, Harbor's task directories in `harbor.rs`): those read
//! a path, not a table, and are chosen by where the dataset comes from (`run/datasets.rs`).

use super::error::DatasetError;
use super::table::Table;
use super::{common, swe_bench, swe_bench_live, swe_bench_pro, swe_rebench};
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

/// A format read from table files by plain functions (every built-in one).
struct TableFormat {
    id: DatasetFormat,
    protocol: ProtocolId,
    columns: fn() -> Vec<&'static str>,
    required: fn() -> Vec<&'static str>,
    rows: fn(&mut Table) -> Result<Vec<Task>, DatasetError>,
}

impl Format for TableFormat {
    fn id(&self) -> DatasetFormat {
        self.id
    }

    fn protocol(&self) -> ProtocolId {
        self.protocol
    }

    fn columns(&self) -> Vec<&'static str> {
        (self.columns)()
    }

    fn required(&self) -> Vec<&'static str> {
        (self.required)()
    }

    fn rows(&self, table: &mut Table) -> Result<Vec<Task>, DatasetError> {
        (self.rows)(table)
    }
}

fn common_columns() -> Vec<&'static str> {
    common::COMMON_COLUMNS.to_vec()
}

// The formats bench reads. `local`, `brain-bench` and `harbor` are directory formats: a table
// file given for them is read as SWE-bench rows.
static LOCAL: TableFormat = TableFormat {
    id: DatasetFormat::Local,
    protocol: ProtocolId::Local,
    columns: swe_bench::columns,
    required: common_columns,
    rows: swe_bench::rows,
};

static SWE_BENCH_LIVE: TableFormat = TableFormat {
    id: DatasetFormat::SweBenchLive,
    protocol: ProtocolId::SweBenchLive,
    columns: swe_bench_live::multilang_columns,
    required: swe_bench_live::multilang_required,
    rows: swe_bench_live::multilang,
};

static SWE_BENCH_LIVE_PYTHON: TableFormat = TableFormat {
    id: DatasetFormat::SweBenchLivePython,
    protocol: ProtocolId::SweBenchLive,
    columns: swe_bench_live::python_columns,
    required: swe_bench_live::python_required,
    rows: swe_bench_live::python,
};

static SWE_BENCH: TableFormat = TableFormat {
    id: DatasetFormat::SweBench,
    protocol: ProtocolId::SweBench,
    columns: swe_bench::columns,
    required: common_columns,
    rows: swe_bench::rows,
};

static SWE_BENCH_PRO: TableFormat = TableFormat {
    id: DatasetFormat::SweBenchPro,
    protocol: ProtocolId::SweBenchPro,
    columns: swe_bench_pro::columns,
    required: swe_bench_pro::required,
    rows: swe_bench_pro::rows,
};

static SWE_REBENCH: TableFormat = TableFormat {
    id: DatasetFormat::SweRebench,
    protocol: ProtocolId::SweBench,
    columns: swe_rebench::columns,
    required: common_columns,
    rows: swe_rebench::rows,
};

static BRAIN_BENCH: TableFormat = TableFormat {
    id: DatasetFormat::BrainBench,
    protocol: ProtocolId::BrainBench,
    columns: swe_bench::columns,
    required: common_columns,
    rows: swe_bench::rows,
};

static HARBOR: TableFormat = TableFormat {
    id: DatasetFormat::Harbor,
    protocol: ProtocolId::Harbor,
    columns: swe_bench::columns,
    required: common_columns,
    rows: swe_bench::rows,
};

/// The format `id` names: the one place that matches on which format it is.
pub fn format(id: DatasetFormat) -> &'static dyn Format {
    match id {
        DatasetFormat::Local => &LOCAL,
        DatasetFormat::SweBenchLive => &SWE_BENCH_LIVE,
        DatasetFormat::SweBenchLivePython => &SWE_BENCH_LIVE_PYTHON,
        DatasetFormat::SweBench => &SWE_BENCH,
        DatasetFormat::SweBenchPro => &SWE_BENCH_PRO,
        DatasetFormat::SweRebench => &SWE_REBENCH,
        DatasetFormat::BrainBench => &BRAIN_BENCH,
        DatasetFormat::Harbor => &HARBOR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_name_finds_its_own_entry() {
        for name in DatasetFormat::NAMES {
            let id = DatasetFormat::parse(name).unwrap();
            assert_eq!(format(id).id(), id, "{name}");
        }
    }
}
