//! Agent harnesses: the built-in definitions (data, in `builtin.toml`), the pricing table
//! (`pricing.toml`), usage readers for the agent CLIs' real output formats (`usage`), the cost of
//! a run (`pricing`), whether a run reached its model (`evidence`), the files a CLI writes for
//! itself (`own_files`), provider keys (`provider`), runtime tarballs for agent images
//! (`runtime`), and the scrubbing of everything agents leave behind.

pub mod evidence;
pub mod own_files;
pub mod pricing;
pub mod provider;
pub mod runtime;
pub mod scrub;
pub mod teams;
pub mod usage;

/// The built-in harness definitions, as TOML.
pub const BUILTIN_HARNESSES: &str = include_str!("builtin.toml");

/// The built-in pricing table, as TOML.
pub const BUILTIN_PRICING: &str = include_str!("pricing.toml");

pub mod install;

/// The version of bench's adapter for a harness: how it is invoked and how its output is read.
/// Part of the keys of the solves that run it.
pub fn adapter_version(
    kind: crate::manifest::HarnessKind,
    usage: Option<crate::manifest::UsageFormat>,
) -> u32 {
    use crate::manifest::HarnessKind;
    match (kind, usage) {
        // 2xx and 2: the script's files are copied beside it (1xx and 1 ran the script alone).
        (HarnessKind::Command, Some(u)) => 200 + u.version(),
        (HarnessKind::Command, None) => 2,
        _ => 1,
    }
}
