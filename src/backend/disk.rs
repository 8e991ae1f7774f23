//! Disk awareness: how much of the daemon's disk an apply's images will take (task images to
//! pull, agent images to build), and how much the daemon has (`docker info`'s DockerRootDir,
//! measured with statvfs when the daemon is on this machine). A daemon on another machine
//! cannot be measured from here: the check is then skipped with a note giving the estimate.
//! Not the pulls themselves (`pull.rs`).

use std::path::PathBuf;

use super::docker::DockerHost;

/// Unpacked size over the compressed size a registry reports (gzip'd layer tarballs of task
/// images unpack to 2 to 3 times their size; the higher end, to refuse early rather than fill
/// the disk mid-run).
pub const UNPACK_FACTOR: f64 = 2.5;

/// What one agent image adds on top of its task image (a CLI and its runtime: about 1.3 GB for
/// the node-based CLIs).
pub const AGENT_IMAGE_BYTES: u64 = 1_300_000_000;

/// Space left free beyond the estimate (`BENCH_DISK_RESERVE`, e.g. `5GiB`; default 1 GiB).
pub fn reserve() -> Result<u64, String> {
    match std::env::var("BENCH_DISK_RESERVE") {
        Ok(v) if !v.is_empty() => v
            .parse::<bytesize::ByteSize>()
            .map(|b| b.as_u64())
            .map_err(|e| format!("BENCH_DISK_RESERVE={v:?} is not a size like 5GiB: {e}")),
        _ => Ok(1 << 30),
    }
}

/// The disk an apply needs on the daemon.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DiskNeed {
    /// Task images to pull, and the compressed bytes of those whose registry gave a size.
    pub images_to_pull: usize,
    pub pull_compressed_bytes: u64,
    /// Images whose registry gave no size (not counted).
    pub pull_unknown_size: usize,
    pub agent_images_to_build: usize,
}

impl DiskNeed {
    pub fn pull_bytes(&self) -> u64 {
        (self.pull_compressed_bytes as f64 * UNPACK_FACTOR) as u64
    }

    pub fn agent_bytes(&self) -> u64 {
        self.agent_images_to_build as u64 * AGENT_IMAGE_BYTES
    }

    pub fn bytes(&self) -> u64 {
        self.pull_bytes() + self.agent_bytes()
    }

    /// `2 images to pull (1.2 GiB compressed, about 3.0 GiB unpacked) and 3 agent images to
    /// build (about 3.6 GiB)`.
    pub fn describe(&self) -> String {
        let mut unknown = String::new();
        if self.pull_unknown_size > 0 {
            unknown = format!("; {} of unknown size, not counted", self.pull_unknown_size);
        }
        format!(
            "{} images to pull ({} compressed, about {} unpacked{unknown}) and {} agent images to build (about {})",
            self.images_to_pull,
            human(self.pull_compressed_bytes),
            human(self.pull_bytes()),
            self.agent_images_to_build,
            human(self.agent_bytes()),
        )
    }
}

pub fn human(n: u64) -> String {
    bytesize::ByteSize(n).display().iec().to_string()
}

/// The daemon's free disk, or why it cannot be known from here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskFree {
    Known { root: PathBuf, free: u64 },
    Unknown { reason: String },
}

/// Measures the disk of the daemon's DockerRootDir when the daemon is local.
pub async fn daemon_free(host: &DockerHost) -> DiskFree {
    let root = match host.client.info().await {
        Ok(i) => i.docker_root_dir,
        Err(e) => {
            return DiskFree::Unknown {
                reason: format!("`docker info` failed on {}: {e}", host.host),
            };
        }
    };
    let Some(root) = root.map(PathBuf::from) else {
        return DiskFree::Unknown {
            reason: format!("the daemon at {} does not say its DockerRootDir", host.host),
        };
    };
    let local = host.host.starts_with("unix://") || host.host.starts_with('/');
    if !local {
        return DiskFree::Unknown {
            reason: format!(
                "the daemon at {} is remote: its disk ({}) cannot be measured from here",
                host.host,
                root.display()
            ),
        };
    }
    match nix::sys::statvfs::statvfs(&root) {
        Ok(s) => DiskFree::Known {
            free: s.blocks_available() * s.fragment_size(),
            root,
        },
        Err(e) => DiskFree::Unknown {
            reason: format!(
                "the daemon's DockerRootDir {} is not readable on this machine ({e}; a daemon in a VM or another namespace?)",
                root.display()
            ),
        },
    }
}

/// Refuses (`Err`, with the figures) when `free` lacks `need` plus `reserve`; a note when the
/// free space cannot be known and something is needed.
pub fn check(
    need: &DiskNeed,
    free: &DiskFree,
    reserve: u64,
    host: &str,
) -> Result<Option<String>, String> {
    if need.bytes() == 0 {
        return Ok(None);
    }
    match free {
        DiskFree::Known { root, free } => {
            if need.bytes() + reserve > *free {
                Err(format!(
                    "not enough disk for this apply on the Docker daemon at {host}: {} has {} free; the apply needs about {} for {}, plus {} kept free (BENCH_DISK_RESERVE)",
                    root.display(),
                    human(*free),
                    human(need.bytes()),
                    need.describe(),
                    human(reserve)
                ))
            } else {
                Ok(None)
            }
        }
        DiskFree::Unknown { reason } => Ok(Some(format!(
            "{reason}; not checked that it has the about {} this apply needs for {}",
            human(need.bytes()),
            need.describe()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_with_the_figures() {
        let need = DiskNeed {
            images_to_pull: 2,
            pull_compressed_bytes: 1 << 30,
            pull_unknown_size: 0,
            agent_images_to_build: 1,
        };
        let free = DiskFree::Known {
            root: "/var/lib/docker".into(),
            free: 2 << 30,
        };
        let e = check(&need, &free, 1 << 30, "unix:///s").unwrap_err();
        assert!(e.contains("/var/lib/docker has 2.0 GiB free"), "{e}");
        assert!(
            e.contains("2 images to pull (1.0 GiB compressed, about 2.5 GiB unpacked)"),
            "{e}"
        );
        assert!(e.contains("1 agent images to build"), "{e}");
        let plenty = DiskFree::Known {
            root: "/".into(),
            free: 100 << 30,
        };
        assert_eq!(check(&need, &plenty, 1 << 30, "x"), Ok(None));
        let remote = DiskFree::Unknown {
            reason: "remote".into(),
        };
        assert!(
            check(&need, &remote, 0, "x")
                .unwrap()
                .unwrap()
                .contains("not checked")
        );
        assert_eq!(check(&DiskNeed::default(), &free, 0, "x"), Ok(None));
    }
}
