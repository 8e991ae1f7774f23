//! How large each kind of file bench reads from a dataset may be. A limit turns a hostile or
//! mistaken file (a patch linked to `/dev/zero`, a multi-gigabyte log checked into `repo/`) into
//! an error naming the task and the file, instead of memory running out. Limits never change a
//! result that is computed, only whether it can be: they are in no key.
//!
//! Each limit has a default and an environment variable that replaces it (a size such as
//! `64MiB` or a number of bytes). Not here: the manifest's own limit (`manifest::read`).

use std::sync::OnceLock;

/// The size limits of the files of a dataset, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileLimits {
    /// A local task's `task.toml` (`BENCH_MAX_TASK_TOML`, default 4 MiB).
    pub task_toml: u64,
    /// A local task's `test.patch` and `gold.patch` (`BENCH_MAX_PATCH`, default 64 MiB).
    pub patch: u64,
    /// One file under a local task's `repo/` (`BENCH_MAX_REPO_FILE`, default 1 GiB).
    pub repo_file: u64,
    /// A dataset file (JSONL, parquet, a predictions file) (`BENCH_MAX_DATASET_FILE`, default
    /// 16 GiB).
    pub dataset_file: u64,
}

const MIB: u64 = 1024 * 1024;

impl Default for FileLimits {
    fn default() -> FileLimits {
        FileLimits {
            task_toml: 4 * MIB,
            patch: 64 * MIB,
            repo_file: 1024 * MIB,
            dataset_file: 16 * 1024 * MIB,
        }
    }
}

/// The environment variable of each limit, with its field.
pub const VARIABLES: [&str; 4] = [
    "BENCH_MAX_TASK_TOML",
    "BENCH_MAX_PATCH",
    "BENCH_MAX_REPO_FILE",
    "BENCH_MAX_DATASET_FILE",
];

impl FileLimits {
    /// The limits with those of `get` (a variable's value by name) in place of the defaults.
    pub fn with(get: impl Fn(&str) -> Option<String>) -> Result<FileLimits, String> {
        let mut l = FileLimits::default();
        let fields = [
            &mut l.task_toml,
            &mut l.patch,
            &mut l.repo_file,
            &mut l.dataset_file,
        ];
        for (var, field) in VARIABLES.iter().zip(fields) {
            if let Some(v) = get(var) {
                *field = match v.trim().parse::<bytesize::ByteSize>() {
                    Ok(b) if b.as_u64() > 0 => b.as_u64(),
                    _ => {
                        return Err(format!(
                            "{var}=`{v}` is not a size; write one such as `64MiB` or `1048576`"
                        ));
                    }
                };
            }
        }
        Ok(l)
    }

    /// The limits of this process: the defaults, with the environment's variables in their
    /// place. A variable that is not a size is an error (read once).
    pub fn current() -> Result<FileLimits, String> {
        static LIMITS: OnceLock<Result<FileLimits, String>> = OnceLock::new();
        LIMITS
            .get_or_init(|| FileLimits::with(|v| std::env::var(v).ok()))
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_replace_defaults_and_a_bad_one_is_named() {
        let l = FileLimits::with(|v| (v == "BENCH_MAX_PATCH").then(|| "1KiB".to_string()));
        assert_eq!(
            l,
            Ok(FileLimits {
                patch: 1024,
                ..FileLimits::default()
            })
        );
        let l = FileLimits::with(|v| (v == "BENCH_MAX_REPO_FILE").then(|| "12".to_string()));
        assert_eq!(l.map(|l| l.repo_file), Ok(12));
        let e = FileLimits::with(|v| (v == "BENCH_MAX_TASK_TOML").then(|| "big".to_string()));
        assert!(e.unwrap_err().contains("BENCH_MAX_TASK_TOML=`big`"));
    }
}
