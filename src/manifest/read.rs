//! Reading one manifest file from disk without letting the path turn against the user: regular
//! files only (never a FIFO, device, socket or directory, and never blocking on one), at most
//! [`MAX_MANIFEST_BYTES`] even if the file grows while it is read, and UTF-8 text.
//!
//! This module knows files, not TOML: parsing, `extends` and the diagnostics that name the
//! `extends` value are `tree.rs`'s job. Its errors never carry any of the file's content.

use std::path::Path;

pub use crate::regular_file::ReadError;

/// The largest manifest bench reads: 4 MiB (real manifests are a few KiB).
pub const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;

impl ReadError {
    /// A short label for the span of the path that named the file.
    pub fn label(&self) -> &'static str {
        match self {
            ReadError::NotRegular { .. } => "not a regular file",
            ReadError::TooLarge { .. } => "too large",
            ReadError::NotUtf8 { .. } => "not UTF-8 text",
            ReadError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                "this file does not exist"
            }
            ReadError::Io { .. } => "cannot be read",
        }
    }

    /// How to fix it.
    pub fn help(&self) -> String {
        match self {
            ReadError::NotRegular { .. } => {
                "name a manifest file: FIFOs, devices, sockets and directories are never read"
                    .to_string()
            }
            ReadError::TooLarge { .. } => format!(
                "a manifest is at most {} MiB; check that the path names a manifest",
                MAX_MANIFEST_BYTES / (1024 * 1024)
            ),
            ReadError::NotUtf8 { .. } => {
                "a manifest is UTF-8 TOML text; check that the path names a manifest".to_string()
            }
            ReadError::Io { .. } => {
                "check the path (relative paths resolve against the manifest that writes them) \
                 and its permissions"
                    .to_string()
            }
        }
    }
}

/// Reads the manifest at `path` as text: a regular file (checked before and after a
/// non-blocking open, see [`crate::regular_file`]) of at most [`MAX_MANIFEST_BYTES`].
pub fn read_manifest(path: &Path) -> Result<String, ReadError> {
    crate::regular_file::read_text(path, MAX_MANIFEST_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.toml");
        fs_err::write(&p, "version = 1\n").unwrap();
        assert_eq!(read_manifest(&p).unwrap(), "version = 1\n");
    }

    #[test]
    fn refuses_directories_and_devices() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_manifest(dir.path()).unwrap_err();
        assert!(
            matches!(
                err,
                ReadError::NotRegular {
                    kind: "a directory",
                    ..
                }
            ),
            "{err}"
        );
        let err = read_manifest(Path::new("/dev/zero")).unwrap_err();
        assert!(
            matches!(
                err,
                ReadError::NotRegular {
                    kind: "a character device",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn refuses_a_fifo_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fifo.toml");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::S_IRWXU).unwrap();
        // No writer ever opens the FIFO: a blocking open or read would hang this test.
        let err = read_manifest(&p).unwrap_err();
        assert!(
            matches!(err, ReadError::NotRegular { kind: "a FIFO", .. }),
            "{err}"
        );
    }

    #[test]
    fn refuses_a_file_over_the_limit_and_says_by_how_much() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.toml");
        let f = fs_err::File::create(&p).unwrap();
        f.set_len(MAX_MANIFEST_BYTES + 10).unwrap();
        let err = read_manifest(&p).unwrap_err();
        assert!(
            matches!(err, ReadError::TooLarge { size, at_least: false, .. } if size == MAX_MANIFEST_BYTES + 10),
            "{err}"
        );
        assert!(err.to_string().contains("10 bytes over the limit"), "{err}");

        fs_err::write(&p, vec![b'#'; MAX_MANIFEST_BYTES as usize]).unwrap();
        assert_eq!(
            read_manifest(&p).unwrap().len(),
            MAX_MANIFEST_BYTES as usize
        );
    }

    #[test]
    fn refuses_binary_without_quoting_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bin.toml");
        fs_err::write(&p, b"secret\xff\xfe").unwrap();
        let err = read_manifest(&p).unwrap_err();
        assert!(matches!(err, ReadError::NotUtf8 { .. }), "{err}");
        assert!(!err.to_string().contains("secret"), "{err}");
    }
}
