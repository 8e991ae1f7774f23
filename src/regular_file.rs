//! Reading a file named by user input (a manifest, a dataset's task files) without letting the
//! path turn against bench: regular files only (never a FIFO, device, socket or directory, and
//! never blocking on one), at most a given number of bytes even if the file grows while it is
//! read. One helper for every such read, so a new reader cannot forget a check.
//!
//! This module knows files, not formats: what a file means, and which limit applies to it, is
//! the caller's business. Its errors never carry any of the file's content.

use std::fs::{File, FileType, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

/// Why a file could not be read. Messages read after "failed to read".
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The path names something other than a regular file.
    #[error("{path} is {kind}, not a regular file")]
    NotRegular { path: PathBuf, kind: &'static str },
    /// The file is larger than `limit` (or grew past it while being read).
    #[error(
        "{path} is too large: {}{size} bytes, {} bytes over the limit of {limit} bytes",
        if *at_least { "at least " } else { "" },
        size - limit
    )]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
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
    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::NotRegular { path, .. }
            | ReadError::TooLarge { path, .. }
            | ReadError::NotUtf8 { path }
            | ReadError::Io { path, .. } => path,
        }
    }
}

/// Reads the regular file at `path`, at most `limit` bytes.
///
/// The type is checked twice: on the path before opening (so a device is never even opened),
/// and on the opened descriptor (so a file swapped for a FIFO in between is still refused). The
/// open is non-blocking, so a FIFO cannot hang it either way. Symbolic links are followed, and
/// what they point to is checked.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = open(path, limit)?;
    read_bounded(path, file, limit)
}

/// [`read_bytes`], as UTF-8 text.
pub fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    let bytes = read_bytes(path, limit)?;
    String::from_utf8(bytes).map_err(|_| ReadError::NotUtf8 {
        path: path.to_path_buf(),
    })
}

/// The blake3 of the regular file at `path` (at most `limit` bytes), streamed: a large file is
/// never held in memory whole.
pub fn hash(path: &Path, limit: u64) -> Result<[u8; 32], ReadError> {
    let file = open(path, limit)?;
    let mut h = blake3::Hasher::new();
    let n = io::copy(&mut file.take(limit + 1), &mut h).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    check_size(path, n, limit, true)?;
    Ok(*h.finalize().as_bytes())
}

/// Opens the regular file at `path` for reading, checked before and after the open.
pub fn open(path: &Path, limit: u64) -> Result<File, ReadError> {
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = fs_err::metadata(path).map_err(io_err)?;
    check_type(path, meta.file_type())?;
    check_size(path, meta.len(), limit, false)?;
    open_checked(path, limit)
}

/// Opens `path` without blocking (a FIFO with no writer opens at once) and checks what was
/// opened: a regular file within the size limit.
fn open_checked(path: &Path, limit: u64) -> Result<File, ReadError> {
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
    check_size(path, meta.len(), limit, false)?;
    Ok(file)
}

/// Reads at most `limit` bytes: a file that grew after its size was checked is refused, not
/// read to the end.
fn read_bounded(path: &Path, file: File, limit: u64) -> Result<Vec<u8>, ReadError> {
    // Room for the size the file has now, so that what is read is held without the spare room
    // growing by doubling leaves (up to half of it: a task's patches are kept all apply). A
    // file that grew is read on as before.
    let size = file.metadata().map_or(0, |m| m.len()).min(limit);
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    check_size(path, bytes.len() as u64, limit, true)?;
    Ok(bytes)
}

fn check_size(path: &Path, size: u64, limit: u64, at_least: bool) -> Result<(), ReadError> {
    if size > limit {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            size,
            limit,
            at_least,
        });
    }
    Ok(())
}

/// What a file type is, in words: `None` for a regular file.
pub fn special_kind(t: FileType) -> Option<&'static str> {
    Some(if t.is_file() {
        return None;
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
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    })
}

fn check_type(path: &Path, t: FileType) -> Result<(), ReadError> {
    match special_kind(t) {
        None => Ok(()),
        Some(kind) => Err(ReadError::NotRegular {
            path: path.to_path_buf(),
            kind,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: u64 = 4096;

    #[test]
    fn reads_a_regular_file_and_a_link_to_one() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.toml");
        fs_err::write(&p, "version = 1\n").unwrap();
        assert_eq!(read_text(&p, LIMIT).unwrap(), "version = 1\n");
        let l = dir.path().join("link");
        std::os::unix::fs::symlink(&p, &l).unwrap();
        assert_eq!(read_bytes(&l, LIMIT).unwrap(), b"version = 1\n");
        assert_eq!(
            hash(&l, LIMIT).unwrap(),
            *blake3::hash(b"version = 1\n").as_bytes()
        );
    }

    #[test]
    fn refuses_directories_devices_and_links_to_them() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_bytes(dir.path(), LIMIT).unwrap_err();
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
        for dev in ["/dev/zero", "/dev/urandom"] {
            let l = dir.path().join(dev.trim_start_matches("/dev/"));
            std::os::unix::fs::symlink(dev, &l).unwrap();
            for err in [
                read_bytes(&l, LIMIT).unwrap_err(),
                hash(&l, LIMIT).unwrap_err(),
            ] {
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
        }
    }

    #[test]
    fn refuses_a_fifo_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fifo");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::S_IRWXU).unwrap();
        // No writer ever opens the FIFO: a blocking open or read would hang this test.
        let err = read_bytes(&p, LIMIT).unwrap_err();
        assert!(
            matches!(err, ReadError::NotRegular { kind: "a FIFO", .. }),
            "{err}"
        );
        // A regular file swapped for a FIFO after the path was checked: the open itself does
        // not block, and what was opened is checked again.
        let err = open_checked(&p, LIMIT).unwrap_err();
        assert!(
            matches!(err, ReadError::NotRegular { kind: "a FIFO", .. }),
            "{err}"
        );
    }

    #[test]
    fn refuses_a_file_over_the_limit_and_says_by_how_much() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big");
        fs_err::File::create(&p)
            .unwrap()
            .set_len(LIMIT + 10)
            .unwrap();
        let err = read_bytes(&p, LIMIT).unwrap_err();
        assert!(
            matches!(err, ReadError::TooLarge { size, at_least: false, .. } if size == LIMIT + 10),
            "{err}"
        );
        assert!(err.to_string().contains("10 bytes over the limit"), "{err}");
        assert!(matches!(hash(&p, LIMIT), Err(ReadError::TooLarge { .. })));
        fs_err::write(&p, vec![b'#'; LIMIT as usize]).unwrap();
        assert_eq!(read_bytes(&p, LIMIT).unwrap().len(), LIMIT as usize);
    }

    #[test]
    fn the_bounded_reader_stops_past_the_limit() {
        // A file whose size was fine when checked but grew before the read: the reader sees
        // more than the limit and stops there.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("grows");
        fs_err::write(&p, vec![b'#'; LIMIT as usize + 4096]).unwrap();
        let err = read_bounded(&p, File::from(fs_err::File::open(&p).unwrap()), LIMIT).unwrap_err();
        assert!(
            matches!(err, ReadError::TooLarge { size, at_least: true, .. } if size == LIMIT + 1),
            "{err}"
        );
    }

    #[test]
    fn refuses_binary_as_text_without_quoting_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bin");
        fs_err::write(&p, b"secret\xff\xfe").unwrap();
        let err = read_text(&p, LIMIT).unwrap_err();
        assert!(matches!(err, ReadError::NotUtf8 { .. }), "{err}");
        assert!(!err.to_string().contains("secret"), "{err}");
    }
}
