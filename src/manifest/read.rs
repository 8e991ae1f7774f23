//! Reading one manifest file from disk without letting the path turn against the user: regular
//! files only (never a FIFO, device, socket or directory, and never blocking on one), at most
//! [`MAX_MANIFEST_BYTES`] even if the file grows while it is read, and UTF-8 text.
//!
//! This module knows files, not TOML: parsing, `extends` and the diagnostics that name the
//! `extends` value are `tree.rs`'s job. Its errors never carry any of the file's content.

use std::fs::{File, FileType, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

/// The largest manifest bench reads: 4 MiB (real manifests are a few KiB).
pub const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;

/// Why a manifest file could not be read. Messages read after "failed to read manifest".
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The path names something other than a regular file.
    #[error("{path} is {kind}, not a regular file")]
    NotRegular { path: PathBuf, kind: &'static str },
    /// The file is larger than [`MAX_MANIFEST_BYTES`] (or grew past it while being read).
    #[error(
        "{path} is too large: {}{size} bytes, {} bytes over the limit of {MAX_MANIFEST_BYTES} bytes",
        if *at_least { "at least " } else { "" },
        size - MAX_MANIFEST_BYTES
    )]
    TooLarge {
        path: PathBuf,
        size: u64,
        /// The size was found by reading past the limit: the file is at least `size` bytes.
        at_least: bool,
    },
    /// The file is not UTF-8 text.
    #[error("{path} is not UTF-8 text")]
    NotUtf8 { path: PathBuf },
    /// Opening, inspecting or reading the file failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl ReadError {
    /// A short label for the span of the path that named the file.
    pub fn label(&self) -> &'static str {
        match self {
            ReadError::NotRegular { .. } => "not a regular file",
            ReadError::TooLarge { .. } => "too large",
            ReadError::NotUtf8 { .. } => "not UTF-8 text",
            ReadError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound => {
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

/// Reads the manifest at `path` as text.
///
/// The type is checked twice: on the path before opening (so a device is never even opened),
/// and on the opened descriptor (so a file swapped for a FIFO in between is still refused). The
/// open is non-blocking, so a FIFO cannot hang it either way.
pub fn read_manifest(path: &Path) -> Result<String, ReadError> {
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io_err)?;
    check_type(path, meta.file_type())?;
    check_size(path, meta.len(), false)?;
    let file = open_checked(path)?;
    read_bounded(path, file)
}

/// Opens `path` without blocking (a FIFO with no writer opens at once) and checks what was
/// opened: a regular file within the size limit.
fn open_checked(path: &Path) -> Result<File, ReadError> {
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path)
        .map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    check_type(path, meta.file_type())?;
    check_size(path, meta.len(), false)?;
    Ok(file)
}

/// Reads at most [`MAX_MANIFEST_BYTES`]: a file that grew after its size was checked is refused,
/// not read to the end.
fn read_bounded(path: &Path, file: File) -> Result<String, ReadError> {
    let mut bytes = Vec::new();
    file.take(MAX_MANIFEST_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    check_size(path, bytes.len() as u64, true)?;
    String::from_utf8(bytes).map_err(|_| ReadError::NotUtf8 {
        path: path.to_path_buf(),
    })
}

fn check_size(path: &Path, size: u64, at_least: bool) -> Result<(), ReadError> {
    if size > MAX_MANIFEST_BYTES {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            size,
            at_least,
        });
    }
    Ok(())
}

fn check_type(path: &Path, t: FileType) -> Result<(), ReadError> {
    let kind = if t.is_file() {
        return Ok(());
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    };
    Err(ReadError::NotRegular {
        path: path.to_path_buf(),
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.toml");
        std::fs::write(&p, "version = 1\n").unwrap();
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
        // A regular file swapped for a FIFO after the path was checked: the open itself does
        // not block, and what was opened is checked again.
        let err = open_checked(&p).unwrap_err();
        assert!(
            matches!(err, ReadError::NotRegular { kind: "a FIFO", .. }),
            "{err}"
        );
    }

    #[test]
    fn refuses_a_file_over_the_limit_and_says_by_how_much() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.toml");
        let f = File::create(&p).unwrap();
        f.set_len(MAX_MANIFEST_BYTES + 10).unwrap();
        let err = read_manifest(&p).unwrap_err();
        assert!(
            matches!(err, ReadError::TooLarge { size, at_least: false, .. } if size == MAX_MANIFEST_BYTES + 10),
            "{err}"
        );
        assert!(err.to_string().contains("10 bytes over the limit"), "{err}");

        std::fs::write(&p, vec![b'#'; MAX_MANIFEST_BYTES as usize]).unwrap();
        assert_eq!(
            read_manifest(&p).unwrap().len(),
            MAX_MANIFEST_BYTES as usize
        );
    }

    #[test]
    fn the_bounded_reader_stops_past_the_limit() {
        // A file whose size was fine when checked but grew before the read: the reader sees
        // more than the limit and stops there.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("grows.toml");
        std::fs::write(&p, vec![b'#'; MAX_MANIFEST_BYTES as usize + 4096]).unwrap();
        let err = read_bounded(&p, File::open(&p).unwrap()).unwrap_err();
        assert!(
            matches!(err, ReadError::TooLarge { size, at_least: true, .. } if size == MAX_MANIFEST_BYTES + 1),
            "{err}"
        );
    }

    #[test]
    fn refuses_binary_without_quoting_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bin.toml");
        std::fs::write(&p, b"secret\xff\xfe").unwrap();
        let err = read_manifest(&p).unwrap_err();
        assert!(matches!(err, ReadError::NotUtf8 { .. }), "{err}");
        assert!(!err.to_string().contains("secret"), "{err}");
    }
}
