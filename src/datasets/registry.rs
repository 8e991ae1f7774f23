//! The registered dataset formats: the built-in ones, each a [`TableFormat`] of its module's
//! functions, and the one list ([`FORMATS`]) a new format joins; lookups by id and by name.
//!
//! Not here: what a format is (`format.rs`).

use super::error::DatasetError;
use super::format::Format;
use super::table::Table;
use super::{
    common, swe_bench, swe_bench_live, swe_bench_multimodal, swe_bench_pro, swe_rebench,
    swe_rebench_v2,
};
use crate::jobs::ProtocolId;
use crate::tasks::Task;
use crate::types::DatasetFormat;

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

static SWE_BENCH_MULTIMODAL: TableFormat = TableFormat {
    id: DatasetFormat::SweBenchMultimodal,
    protocol: ProtocolId::SweBench,
    columns: swe_bench_multimodal::columns,
    required: swe_bench_multimodal::required,
    rows: swe_bench_multimodal::rows,
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

static SWE_REBENCH_V2: TableFormat = TableFormat {
    id: DatasetFormat::SweRebenchV2,
    protocol: ProtocolId::SweRebenchV2,
    columns: swe_rebench_v2::columns,
    required: swe_rebench_v2::required,
    rows: swe_rebench_v2::rows,
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

/// Every dataset format bench reads, in the order manifests' help lists them: the one list a
/// new format joins.
static FORMATS: [&dyn Format; 10] = [
    &LOCAL,
    &SWE_BENCH_LIVE,
    &SWE_BENCH_LIVE_PYTHON,
    &SWE_BENCH,
    &SWE_BENCH_MULTIMODAL,
    &SWE_BENCH_PRO,
    &SWE_REBENCH,
    &SWE_REBENCH_V2,
    &BRAIN_BENCH,
    &HARBOR,
];

/// The format `id` names, if one is registered under it.
pub fn format(id: DatasetFormat) -> Option<&'static dyn Format> {
    all().find(|f| f.id() == id)
}

/// The registered formats, the test-only ones after the rest.
fn all() -> impl Iterator<Item = &'static dyn Format> {
    FORMATS.iter().chain(TEST_FORMATS.iter()).copied()
}

/// The toy benchmark's format (`toy.rs`), registered in test builds only.
#[cfg(test)]
static TEST_FORMATS: [&dyn Format; 1] = [&super::toy::Toy];
#[cfg(not(test))]
static TEST_FORMATS: [&dyn Format; 0] = [];

/// The format registered under the name a manifest writes.
pub fn format_named(name: &str) -> Option<&'static dyn Format> {
    all().find(|f| f.id().name() == name)
}

/// The names of every registered format.
pub fn format_names() -> Vec<&'static str> {
    all().map(|f| f.id().name()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_name_finds_its_own_entry_and_its_protocol_is_registered() {
        let names = format_names();
        assert_eq!(
            names[..FORMATS.len()],
            [
                "local",
                "swe-bench-live",
                "swe-bench-live-python",
                "swe-bench",
                "swe-bench-multimodal",
                "swe-bench-pro",
                "swe-rebench",
                "swe-rebench-v2",
                "brain-bench",
                "harbor"
            ]
        );
        for name in names {
            let f = format_named(name).unwrap();
            assert_eq!(f.id().name(), name);
            assert_eq!(format(f.id()).unwrap().id(), f.id());
            assert!(crate::protocols::is_registered(f.protocol()), "{name}");
        }
    }
}
