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
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

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

fn io(e: nix::Error) -> std::io::Error {
    std::io::Error::from(e)
}

fn stat_at(fd: BorrowedFd<'_>, name: &Path, follow: bool) -> std::io::Result<Stat> {
    let flags = if follow {
        AtFlags::empty()
    } else {
        AtFlags::AT_SYMLINK_NOFOLLOW
    };
    fstatat(fd, name, flags).map(|s| Stat::of(&s)).map_err(io)
}

fn open_at(fd: BorrowedFd<'_>, name: &Path, follow: bool) -> std::io::Result<Dir> {
    let mut flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    if !follow {
        flags |= OFlag::O_NOFOLLOW;
    }
    nix::dir::Dir::openat(fd, name, flags, Mode::empty())
        .map(Dir)
        .map_err(io)
}

/// An open directory, listed and statted relative to its descriptor (one thread at a time:
/// [`Dir::handle`] gives one to share).
#[derive(Debug)]
pub struct Dir(nix::dir::Dir);

impl Dir {
    /// Opens the directory at `path` (following a symlink, as `metadata` does).
    pub fn open(path: &Path) -> std::io::Result<Dir> {
        open_at(nix::fcntl::AT_FDCWD, path, true)
    }

    /// Opens the directory `name` relative to this one; `follow`: a symlink to a directory is
    /// followed (else it is an error).
    pub fn open_at(&self, name: &Path, follow: bool) -> std::io::Result<Dir> {
        open_at(self.0.as_fd(), name, follow)
    }

    /// The stat of this directory itself.
    pub fn stat_self(&self) -> std::io::Result<Stat> {
        fstat(self.0.as_fd()).map(|s| Stat::of(&s)).map_err(io)
    }

    /// The stat of `name` relative to this directory; `follow`: of a symlink's target (as
    /// `metadata`), else of the link itself (as `symlink_metadata`).
    pub fn stat(&self, name: &Path, follow: bool) -> std::io::Result<Stat> {
        stat_at(self.0.as_fd(), name, follow)
    }

    /// The names in this directory (not `.` and `..`), sorted.
    pub fn names(&mut self) -> std::io::Result<Vec<OsString>> {
        let mut names = Vec::new();
        for e in self.0.iter() {
            let e = e.map_err(io)?;
            let n = e.file_name().to_bytes();
            if n != b"." && n != b".." {
                names.push(OsStr::from_bytes(n).to_os_string());
            }
        }
        names.sort();
        Ok(names)
    }

    /// Another descriptor of this directory, to stat and open beneath it from other threads.
    pub fn handle(&self) -> std::io::Result<DirHandle> {
        self.0.as_fd().try_clone_to_owned().map(DirHandle)
    }
}

/// A directory's descriptor that threads share: stats and opens beneath it, no listing.
#[derive(Debug)]
pub struct DirHandle(OwnedFd);

impl DirHandle {
    /// [`Dir::stat`].
    pub fn stat(&self, name: &Path, follow: bool) -> std::io::Result<Stat> {
        stat_at(self.0.as_fd(), name, follow)
    }

    /// [`Dir::open_at`].
    pub fn open_at(&self, name: &Path, follow: bool) -> std::io::Result<Dir> {
        open_at(self.0.as_fd(), name, follow)
    }
}

/// Stats of many paths under one root, each taken relative to the root's descriptor: the walk
/// is the path's components under the root, not the root's own (a store's records are two
/// components down, a report's artifacts three or four). Parents are not opened one by one: a
/// directory open costs more than the few components it would save. A path that cannot be
/// statted is `None`, as a failed stat of the full path would be; the result is the one of a
/// stat of `root/path`.
#[derive(Debug)]
pub struct StatUnder {
    root: Option<DirHandle>,
}

impl StatUnder {
    /// Stats under `root` (a root that cannot be opened makes every stat `None`).
    pub fn new(root: &Path) -> StatUnder {
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        StatUnder {
            root: openat(nix::fcntl::AT_FDCWD, root, flags, Mode::empty())
                .ok()
                .map(DirHandle),
        }
    }

    /// The stat of `root/rel`; `follow` as in [`Dir::stat`].
    pub fn stat(&self, rel: &Path, follow: bool) -> Option<Stat> {
        self.root.as_ref()?.stat(rel, follow).ok()
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
        let under = StatUnder::new(root);
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
        fs_err::remove_dir_all(root.join("a")).unwrap();
        assert_eq!(under.stat(Path::new("a/b/f"), true), None);
        assert_eq!(
            StatUnder::new(&root.join("gone")).stat(Path::new("top"), true),
            None
        );
    }

    #[test]
    fn names_are_sorted_without_dots() {
        let d = tempfile::tempdir().unwrap();
        for n in ["b", "a", "c"] {
            fs_err::write(d.path().join(n), "").unwrap();
        }
        let mut dir = Dir::open(d.path()).unwrap();
        assert_eq!(dir.names().unwrap(), ["a", "b", "c"]);
        assert_eq!(dir.names().unwrap(), ["a", "b", "c"], "read twice");
        assert!(dir.stat_self().unwrap().is_dir());
    }
}
