//! Dataset presets: `source = "swe-bench/verified"` and the like name a Hub repository, the
//! format its rows are read as and, for the SWE-bench family, a pinned revision with the
//! sha256 of its test split.
//!
//! The pins are the dataset commits and file digests that several independent public
//! evaluations record for these repositories (checked against each other; the Hub cannot be
//! reached from here). A preset's pin applies when the manifest names no other `revision`
//! (or names the pin's own) and no `files`: then the file fetched must have the recorded
//! sha256, or the fetch fails and nothing is stored. A manifest that pins another revision
//! reads it unchecked, as any `repo` + `revision` dataset.

/// One preset.
#[derive(Debug)]
pub struct Preset {
    pub name: &'static str,
    /// The dataset format (a name of `datasets::format_names`).
    pub format: &'static str,
    /// The Hub dataset repository.
    pub repo: &'static str,
    /// Splits read as `data/<lang>-00000-of-00001.parquet` when no `files` are named.
    pub langs: &'static [&'static str],
    pub pin: Option<Pin>,
}

/// A preset's own revision and the sha256 of each file it reads there.
#[derive(Debug)]
pub struct Pin {
    pub revision: &'static str,
    pub files: &'static [(&'static str, &'static str)],
}

const TEST_SPLIT: &str = "data/test-00000-of-00001.parquet";

/// Every preset, by name.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "swe-bench-live/multilang",
        format: "swe-bench-live",
        repo: "SWE-bench-Live/MultiLang",
        langs: &["c", "cpp", "cs", "go", "java", "js", "rust", "ts"],
        pin: None,
    },
    Preset {
        name: "swe-bench-live/python",
        format: "swe-bench-live-python",
        repo: "SWE-bench-Live/SWE-bench-Live",
        langs: &[],
        pin: None,
    },
    Preset {
        name: "swe-bench/verified",
        format: "swe-bench",
        repo: "SWE-bench/SWE-bench_Verified",
        langs: &[],
        pin: Some(Pin {
            revision: "78f471bf655a3137b2e8a75af1501690ec009ec3",
            files: &[(
                TEST_SPLIT,
                "030cfd7f2a704c4c0226e7f104c725a3b41230b1d3517f9c915ad7ea5be3fa25",
            )],
        }),
    },
    Preset {
        name: "swe-bench/full",
        format: "swe-bench",
        repo: "SWE-bench/SWE-bench",
        langs: &[],
        pin: Some(Pin {
            revision: "c6fe717fd7a4c3ac1daa4055a4fd082c6a1d28a2",
            files: &[(
                TEST_SPLIT,
                "d4f5a245c75319fa8240c540674958c4d491e82edf274b144d43836bdcbc4567",
            )],
        }),
    },
    Preset {
        name: "swe-bench/lite",
        format: "swe-bench",
        repo: "SWE-bench/SWE-bench_Lite",
        langs: &[],
        pin: Some(Pin {
            revision: "b0dde1093fe417d83b7184254edf8199c1f0dff5",
            files: &[(
                TEST_SPLIT,
                "438e281d80587aa7be470896ce410557002fde02d2ceee3e099331d308f62dd3",
            )],
        }),
    },
    Preset {
        name: "swe-bench/multilingual",
        format: "swe-bench",
        repo: "SWE-bench/SWE-bench_Multilingual",
        langs: &[],
        pin: Some(Pin {
            revision: "846e647b9f33c0b51b739d005d13d85493c9af09",
            files: &[(
                TEST_SPLIT,
                "92abca7cb527b41a9f66d03a26ce441ff7319e3a49f985998fd56be4bb9b08b2",
            )],
        }),
    },
    Preset {
        name: "swe-bench/multimodal",
        format: "swe-bench-multimodal",
        repo: "SWE-bench/SWE-bench_Multimodal",
        langs: &[],
        pin: None,
    },
    Preset {
        name: "swe-rebench/leaderboard",
        format: "swe-rebench",
        repo: "nebius/SWE-rebench-leaderboard",
        langs: &[],
        pin: None,
    },
    Preset {
        name: "swe-rebench/full",
        format: "swe-rebench",
        repo: "nebius/SWE-rebench",
        langs: &[],
        pin: None,
    },
    Preset {
        name: "swe-rebench/v2",
        format: "swe-rebench-v2",
        repo: "nebius/SWE-rebench-V2",
        langs: &[],
        pin: None,
    },
    Preset {
        name: "swe-bench-pro/public",
        format: "swe-bench-pro",
        repo: "ScaleAI/SWE-bench_Pro",
        langs: &[],
        pin: None,
    },
];

/// The preset called `name`.
pub fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_are_commit_shas_and_sha256_digests() {
        let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
        for p in PRESETS {
            if let Some(pin) = &p.pin {
                assert!(hex(pin.revision, 40), "{}", p.name);
                assert!(!pin.files.is_empty(), "{}", p.name);
                for (_, h) in pin.files {
                    assert!(hex(h, 64), "{}", p.name);
                }
            }
        }
    }
}
