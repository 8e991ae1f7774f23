//! Stats taken relative to an open directory: what a no-op apply does thousands of times (the
//! datasets' stat signature, the record files, the blobs, a report's files). A stat of a full
//! path walks every component of it in the kernel (the path walk, not the stat, was the top of
//! the no-op's profile); `fstatat` on a directory's descriptor walks only the name given. The
//! values are the ones `std::fs::metadata` gives (size, times, inode, mode), so a stamp taken
//! either way compares equal.
//!
//! Not here: what a stat means to a caller (stamps and the racy rule are `stamp.rs`), caching
//! anything across processes.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{AtFlags, OFlag, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat};

use super::FileStamp;

/// What bench reads of a stat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub ino: u64,
    /// `st_mode`: the type and permission bits (`Permissions::mode()` of std's metadata).
    pub mode: u32,
}

impl Stat {
    fn of(s: &FileStat) -> Stat {
        Stat {
            size: s.st_size as u64,
            mtime_ns: s.st_mtime as i128 * 1_000_000_000 + s.st_mtime_nsec as i128,
            ctime_ns: s.st_ctime as i128 * 1_000_000_000 + s.st_ctime_nsec as i128,
            ino: s.st_ino,
            mode: s.st_mode,
        }
    }

    pub fn stamp(&self) -> FileStamp {
        FileStamp {
            size: self.size,
            mtime_ns: self.mtime_ns,
            ctime_ns: self.ctime_ns,
            ino: self.ino,
        }
    }

    fn kind(&self) -> SFlag {
        SFlag::from_bits_truncate(self.mode & SFlag::S_IFMT.bits())
    }

    pub fn is_dir(&self) -> bool {
        self.kind() == SFlag::S_IFDIR
    }

    pub fn is_file(&self) -> bool {
        self.kind() == SFlag::S_IFREG
    }

    pub fn is_symlink(&self) -> bool {
        self.kind() == SFlag::S_IFLNK
    }
}

/// An open directory, read and statted relative to its descriptor.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
}

fn io(e: nix::Error) -> std::io::Error {
    std::io::Error::from(e)
}

impl Dir {
    /// Opens the directory at `path` (following a symlink, as `metadata` does), readable.
    pub fn open(path: &Path) -> std::io::Result<Dir> {
        let fd = openat(
            nix::fcntl::AT_FDCWD,
            path,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(io)?;
        Ok(Dir { fd })
    }

    /// Opens the directory `name` relative to this one, readable; `follow`: a symlink to a
    /// directory is followed (else it is an error).
    pub fn open_at(&self, name: &Path, follow: bool) -> std::io::Result<Dir> {
        let mut flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        if !follow {
            flags |= OFlag::O_NOFOLLOW;
        }
        let fd = openat(self.fd.as_fd(), name, flags, Mode::empty()).map_err(io)?;
        Ok(Dir { fd })
    }

    /// Opens the directory `name` relative to this one only to stat and open beneath it
    /// (`O_PATH`: no read permission needed, nothing read).
    pub fn open_path_at(&self, name: &Path) -> std::io::Result<Dir> {
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let fd = openat(self.fd.as_fd(), name, flags, Mode::empty()).map_err(io)?;
        Ok(Dir { fd })
    }

    /// The stat of this directory itself.
    pub fn stat_self(&self) -> std::io::Result<Stat> {
        fstat(self.fd.as_fd()).map(|s| Stat::of(&s)).map_err(io)
    }

    /// The stat of `name` relative to this directory; `follow`: of a symlink's target (as
    /// `metadata`), else of the link itself (as `symlink_metadata`).
    pub fn stat(&self, name: &Path, follow: bool) -> std::io::Result<Stat> {
        let flags = if follow {
            AtFlags::empty()
        } else {
            AtFlags::AT_SYMLINK_NOFOLLOW
        };
        fstatat(self.fd.as_fd(), name, flags)
            .map(|s| Stat::of(&s))
            .map_err(io)
    }

    /// The names in this directory (not `.` and `..`), sorted.
    pub fn names(&self) -> std::io::Result<Vec<OsString>> {
        // Its own open file (the directory's offset is not shared with `self`).
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let mut dir =
            nix::dir::Dir::openat(self.fd.as_fd(), ".", flags, Mode::empty()).map_err(io)?;
        let mut names = Vec::new();
        for e in dir.iter() {
            let e = e.map_err(io)?;
            let n = e.file_name().to_bytes();
            if n != b"." && n != b".." {
                names.push(OsStr::from_bytes(n).to_os_string());
            }
        }
        names.sort();
        Ok(names)
    }
}

/// Stats of many paths under one root, each taken relative to its parent directory, which stays
/// open while the next paths share it (give paths in sorted order, and a directory is opened
/// once). A path that cannot be statted (or whose parent cannot be opened) is `None`, as a
/// failed stat of the full path would be; the result is the one of a stat of `root/path`.
#[derive(Debug)]
pub struct StatUnder {
    root: Option<Dir>,
    /// The last parent opened, relative to the root, and its descriptor (`None`: it failed).
    parent: Option<(PathBuf, Option<Dir>)>,
}

impl StatUnder {
    /// Stats under `root` (a root that cannot be opened makes every stat `None`).
    pub fn new(root: &Path) -> StatUnder {
        StatUnder {
            root: Dir::open(root).ok(),
            parent: None,
        }
    }

    /// The stat of `root/rel`; `follow` as in [`Dir::stat`].
    pub fn stat(&mut self, rel: &Path, follow: bool) -> Option<Stat> {
        let root = self.root.as_ref()?;
        let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
            return root.stat(rel, follow).ok();
        };
        if parent.as_os_str().is_empty() || rel.is_absolute() {
            return root.stat(rel, follow).ok();
        }
        if self.parent.as_ref().is_none_or(|(p, _)| p != parent) {
            self.parent = Some((parent.to_path_buf(), root.open_path_at(parent).ok()));
        }
        let (_, dir) = self.parent.as_ref()?;
        dir.as_ref()?.stat(Path::new(name), follow).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_stat_is_the_full_paths_stat() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        fs_err::create_dir_all(root.join("a/b")).unwrap();
        fs_err::write(root.join("a/b/f"), "12345").unwrap();
        fs_err::write(root.join("top"), "x").unwrap();
        std::os::unix::fs::symlink("b/f", root.join("a/link")).unwrap();
        let mut under = StatUnder::new(root);
        for (rel, follow) in [
            ("a/b/f", true),
            ("top", false),
            ("a/link", true),
            ("a/link", false),
            ("a/b", true),
        ] {
            let full = root.join(rel);
            let m = if follow {
                fs_err::metadata(&full)
            } else {
                fs_err::symlink_metadata(&full)
            }
            .unwrap();
            let s = under.stat(Path::new(rel), follow).unwrap();
            assert_eq!(s.stamp(), FileStamp::of(&m), "{rel}");
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(s.mode, m.permissions().mode(), "{rel}");
            assert_eq!(s.is_symlink(), m.file_type().is_symlink(), "{rel}");
            assert_eq!(s.is_dir(), m.is_dir(), "{rel}");
            assert_eq!(s.is_file(), m.is_file(), "{rel}");
        }
        assert_eq!(under.stat(Path::new("a/b/missing"), true), None);
        assert_eq!(under.stat(Path::new("no/such"), true), None);
        // A parent removed after it was opened: its file is gone too.
        fs_err::remove_dir_all(root.join("a")).unwrap();
        assert_eq!(under.stat(Path::new("a/b/f"), true), None);
        assert_eq!(StatUnder::new(&root.join("gone")).stat(Path::new("top"), true), None);
    }

    #[test]
    fn names_are_sorted_without_dots() {
        let d = tempfile::tempdir().unwrap();
        for n in ["b", "a", "c"] {
            fs_err::write(d.path().join(n), "").unwrap();
        }
        let dir = Dir::open(d.path()).unwrap();
        assert_eq!(dir.names().unwrap(), ["a", "b", "c"]);
        assert_eq!(dir.names().unwrap(), ["a", "b", "c"], "read twice");
        assert!(dir.stat_self().unwrap().is_dir());
    }
}
