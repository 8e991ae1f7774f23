//! A dataset's format, by its name: which adapter reads its rows or directories into tasks. What
//! a name does is registered in `datasets/format.rs`, so a new format adds nothing here.

use serde::{Serialize, Serializer};

/// A dataset format, by the name manifests write (`format = "..."`); encoded as the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DatasetFormat(&'static str);

#[expect(
    non_upper_case_globals,
    reason = "the built-in formats keep the names they had as an enum's variants"
)]
impl DatasetFormat {
    pub const Local: DatasetFormat = DatasetFormat("local");
    pub const SweBenchLive: DatasetFormat = DatasetFormat("swe-bench-live");
    pub const SweBenchLivePython: DatasetFormat = DatasetFormat("swe-bench-live-python");
    pub const SweBench: DatasetFormat = DatasetFormat("swe-bench");
    pub const SweBenchPro: DatasetFormat = DatasetFormat("swe-bench-pro");
    /// SWE-rebench rows (nebius/SWE-rebench): SWE-bench fields plus `install_config`.
    pub const SweRebench: DatasetFormat = DatasetFormat("swe-rebench");
    /// SWE-rebench V2 rows (nebius/SWE-rebench-V2): `language`, `meta`, `image_name`,
    /// `install_config` with its own test command and parser; the repository at `/{name}`.
    pub const SweRebenchV2: DatasetFormat = DatasetFormat("swe-rebench-v2");
    /// SWE-bench Multimodal rows (SWE-bench/SWE-bench_Multimodal): JavaScript repositories,
    /// swebench 5.x's own eval script, image and parser, and `image_assets`.
    pub const SweBenchMultimodal: DatasetFormat = DatasetFormat("swe-bench-multimodal");
    /// brain bench's task YAML files (seed 004), read from a `path`.
    pub const BrainBench: DatasetFormat = DatasetFormat("brain-bench");
    /// Harbor task directories (Terminal-Bench 2, Frontier-SWE): `task.toml`, `instruction.md`,
    /// `environment/`, `tests/`, `solution/`.
    pub const Harbor: DatasetFormat = DatasetFormat("harbor");
}

impl DatasetFormat {
    /// The format named `name` (its registration in `datasets/format.rs` says what it does).
    pub const fn named(name: &'static str) -> DatasetFormat {
        DatasetFormat(name)
    }

    pub fn name(self) -> &'static str {
        self.0
    }
}

impl Serialize for DatasetFormat {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}
