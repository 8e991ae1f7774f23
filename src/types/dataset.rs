//! A dataset's format: which adapter reads its rows or directories into tasks.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DatasetFormat {
    Local,
    SweBenchLive,
    SweBenchLivePython,
    SweBench,
    SweBenchPro,
    /// SWE-rebench rows (nebius/SWE-rebench): SWE-bench fields plus `install_config`.
    SweRebench,
    /// brain bench's task YAML files (seed 004), read from a `path`.
    BrainBench,
    /// Harbor task directories (Terminal-Bench 2, Frontier-SWE): `task.toml`, `instruction.md`,
    /// `environment/`, `tests/`, `solution/`.
    Harbor,
}

impl DatasetFormat {
    pub const NAMES: [&'static str; 8] = [
        "local",
        "swe-bench-live",
        "swe-bench-live-python",
        "swe-bench",
        "swe-bench-pro",
        "swe-rebench",
        "brain-bench",
        "harbor",
    ];

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "local" => DatasetFormat::Local,
            "swe-bench-live" => DatasetFormat::SweBenchLive,
            "swe-bench-live-python" => DatasetFormat::SweBenchLivePython,
            "swe-bench" => DatasetFormat::SweBench,
            "swe-bench-pro" => DatasetFormat::SweBenchPro,
            "swe-rebench" => DatasetFormat::SweRebench,
            "brain-bench" => DatasetFormat::BrainBench,
            "harbor" => DatasetFormat::Harbor,
            _ => return None,
        })
    }
}
