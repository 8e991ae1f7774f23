//! The stat signature of a directory of local tasks, stored with the snapshot it stood for: how
//! a no-op apply knows a local dataset is unchanged without reading or parsing a task file
//! (like git's index, for a whole dataset).
//!
//! [`signature`] hashes the name, kind, mode and stat `(size, mtime_ns, ctime_ns, inode)` of
//! everything [`load_local_dir`](super::load_local_dir) reads, and more: the dataset
//! directory and each of its entries, each entry's own entries (followed, as the loader follows
//! them), and everything under each task's `repo/` but `.git` (not followed, as the tree digest
//! reads a symlink as a link), with the running executable's stat (another build may digest
//! tasks differently). `apply` (under the store's lock) takes the signature *before* it reads
//! the tasks and stores it with the snapshot it then computes, in `index/<hash of the dataset
//! path>.tasks`, checksummed; a no-op apply with a memo takes the stored snapshot when the
//! signature it takes now is the same (`run::datasets::local_snapshots`).
//!
//! Why that is never stale. Any write to a file or directory moves its ctime to the moment of
//! the write, and nothing can set a ctime back; replacing a file changes its inode; adding,
//! removing or renaming an entry moves its directory's stat. A signature is given only when
//! every stat in it is older than the racy window ([`RACY_NS`]) at the moment the walk began,
//! so a write after the walk stats a file gets a ctime the signature does not hold (a write in
//! the same timestamp tick as the stat, which could keep it, is excluded by the window). So a
//! stored signature equal to the one taken now means no task file changed since the files were
//! read for the stored snapshot; any other case is a miss, and the datasets load as always.
//!
//! The same argument lets an apply skip the manifest's task checks (every `task.toml` read and
//! parsed, `manifest::load_trusting`): the entry says whether those checks, run after its
//! signature was taken, found nothing wrong (`checked`), and an equal signature now means the
//! same files (and the same build) they passed on.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::files::{Dir, DirHandle, RACY_NS, Stat, now_ns};

const MAGIC: &str = "bench-dataset-stamp 2";

/// A stored signature and what the dataset held when it was taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirSnapshot {
    pub magic: String,
    pub signature: String,
    /// The task set's snapshot digest.
    pub snapshot: String,
    /// Its number of tasks.
    pub tasks: usize,
    /// Whether the manifest's task checks (`manifest::load`: every `task.toml`'s fields, its
    /// log parser) found nothing wrong in the tasks as they were after the signature was taken.
    pub checked: bool,
}

impl DirSnapshot {
    pub fn new(signature: String, snapshot: String, tasks: usize, checked: bool) -> DirSnapshot {
        DirSnapshot {
            magic: MAGIC.to_string(),
            signature,
            snapshot,
            tasks,
            checked,
        }
    }
}

/// The stored entry at `path`, if there is one and it verifies.
pub fn load(path: &Path) -> Option<DirSnapshot> {
    let bytes = fs_err::read(path).ok()?;
    let nl = bytes.iter().position(|&b| b == b'\n')?;
    let (sum, body) = (&bytes[..nl], &bytes[nl + 1..]);
    if sum != blake3::hash(body).to_hex().as_bytes() {
        return None;
    }
    let d: DirSnapshot = serde_json::from_slice(body).ok()?;
    (d.magic == MAGIC).then_some(d)
}

/// Stores `d` at `path` (atomically), unless it is already there. A cache: a failure to write
/// costs speed only.
pub fn save(path: &Path, d: &DirSnapshot) {
    if load(path).as_ref() == Some(d) {
        return;
    }
    let body = serde_json::to_vec(d).expect("a dataset stamp serializes");
    let mut bytes = blake3::hash(&body).to_hex().as_bytes().to_vec();
    bytes.push(b'\n');
    bytes.extend_from_slice(&body);
    let _ = crate::files::write_atomic(path, &bytes);
}

/// The signature of the local task directory `dir`, or `None` when something cannot be read or
/// some stat is too recent to trust (within the racy window). Every stat is taken relative to
/// its directory's descriptor (`files::Dir`): the same values a stat of the full path gives,
/// without walking the path each time.
pub fn signature(dir: &Path) -> Option<String> {
    let start = now_ns();
    let mut h = blake3::Hasher::new();
    h.update(MAGIC.as_bytes());
    h.update(crate::files::exe_stamp()?.as_bytes());
    let mut root = Dir::open(dir).ok()?;
    put(&mut h, b".", &root.stat_self().ok()?, start)?;
    let names = root.names().ok()?;
    let root = &root.handle().ok()?;
    // Stat-bound: spread over the CPUs as the loader does.
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(8);
    let chunk = names.len().div_ceil(threads).max(1);
    let parts: Vec<Option<Vec<[u8; 32]>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = names
            .chunks(chunk)
            .map(|c| scope.spawn(move || c.iter().map(|n| entry(root, n, start)).collect()))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("stat walks do not panic"))
            .collect()
    });
    for part in parts {
        for e in part? {
            h.update(&e);
        }
    }
    Some(h.finalize().to_hex().to_string())
}

/// One entry of the dataset directory: its stat (followed), and for a directory its entries'
/// (followed) and its `repo/` tree's.
fn entry(dir: &DirHandle, name: &OsString, start: i128) -> Option<[u8; 32]> {
    let name = Path::new(name);
    let stat = dir.stat(name, true).ok()?;
    let mut h = blake3::Hasher::new();
    put(&mut h, name.as_os_str().as_bytes(), &stat, start)?;
    if stat.is_dir() {
        let mut task = dir.open_at(name, true).ok()?;
        for n in task.names().ok()? {
            let m = task.stat(Path::new(&n), true).ok()?;
            put(&mut h, n.as_bytes(), &m, start)?;
            if n == "repo" && m.is_dir() {
                tree(&mut h, &mut task.open_at(Path::new(&n), true).ok()?, start)?;
                h.update(b"\0end repo\0");
            }
        }
    }
    h.update(b"\0end entry\0");
    Some(*h.finalize().as_bytes())
}

/// Everything under a task's `repo/` but `.git`, not followed.
fn tree(h: &mut blake3::Hasher, dir: &mut Dir, start: i128) -> Option<()> {
    for n in dir.names().ok()? {
        if n == ".git" {
            continue;
        }
        let m = dir.stat(Path::new(&n), false).ok()?;
        put(h, n.as_bytes(), &m, start)?;
        if m.is_dir() {
            tree(h, &mut dir.open_at(Path::new(&n), false).ok()?, start)?;
            h.update(b"\0end dir\0");
        }
    }
    Some(())
}

/// Hashes one name and its stat; `None` if the stat is within the racy window of `start`.
fn put(h: &mut blake3::Hasher, name: &[u8], m: &Stat, start: i128) -> Option<()> {
    let s = m.stamp();
    if !s.settled(start, RACY_NS) {
        return None;
    }
    let kind: &[u8] = if m.is_symlink() {
        b"l"
    } else if m.is_dir() {
        b"d"
    } else if m.is_file() {
        b"f"
    } else {
        b"o"
    };
    h.update(&(name.len() as u64).to_le_bytes());
    h.update(name);
    h.update(kind);
    h.update(&m.mode.to_le_bytes());
    h.update(&s.size.to_le_bytes());
    h.update(&s.mtime_ns.to_le_bytes());
    h.update(&s.ctime_ns.to_le_bytes());
    h.update(&s.ino.to_le_bytes());
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A dataset of two tasks whose files are older than the racy window (mtime set back; the
    /// ctime is not, so the tests give the window by sleeping where they need it).
    fn dataset() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for t in ["t1", "t2"] {
            let r = d.path().join(t).join("repo/src");
            fs_err::create_dir_all(&r).unwrap();
            fs_err::write(d.path().join(t).join("task.toml"), "x = 1\n").unwrap();
            fs_err::write(d.path().join(t).join("gold.patch"), "gold\n").unwrap();
            fs_err::write(r.join("a.py"), "A = 1\n").unwrap();
            fs_err::create_dir_all(d.path().join(t).join("repo/.git")).unwrap();
        }
        d
    }

    fn settle() {
        std::thread::sleep(std::time::Duration::from_millis(2100));
    }

    #[test]
    fn a_fresh_file_gives_no_signature_and_a_settled_tree_a_stable_one() {
        let d = dataset();
        assert_eq!(signature(d.path()), None, "files within the racy window");
        settle();
        let s = signature(d.path()).expect("settled");
        assert_eq!(signature(d.path()), Some(s));
    }

    #[test]
    fn every_edit_the_loader_could_see_changes_the_signature() {
        let d = dataset();
        type Edit = fn(&Path);
        let edits: [(&str, Edit); 7] = [
            ("same-size edit, mtime kept", |p| {
                crate::files::write_keeping_mtime(&p.join("t1/gold.patch"), "GOLD\n")
            }),
            ("repo file edited", |p| {
                fs_err::write(p.join("t2/repo/src/a.py"), "A = 2\n").unwrap()
            }),
            ("repo file added", |p| {
                fs_err::write(p.join("t2/repo/src/b.py"), "").unwrap()
            }),
            ("exec bit", |p| {
                fs_err::set_permissions(
                    p.join("t1/repo/src/a.py"),
                    std::fs::Permissions::from_mode(0o755),
                )
                .unwrap()
            }),
            ("task added", |p| {
                fs_err::create_dir_all(p.join("t3")).unwrap();
                fs_err::write(p.join("t3/task.toml"), "").unwrap();
            }),
            ("task removed", |p| {
                fs_err::remove_dir_all(p.join("t2")).unwrap()
            }),
            ("file replaced by a rename", |p| {
                fs_err::write(p.join("t1/new"), "x = 1\n").unwrap();
                fs_err::rename(p.join("t1/new"), p.join("t1/task.toml")).unwrap();
            }),
        ];
        // All datasets made and settled at once, edited, then settled again.
        let sets: Vec<_> = edits.iter().map(|_| dataset()).collect();
        settle();
        let before: Vec<String> = sets.iter().map(|d| signature(d.path()).unwrap()).collect();
        for ((_, edit), d) in edits.iter().zip(&sets) {
            edit(d.path());
        }
        settle();
        for (((what, _), d), before) in edits.iter().zip(&sets).zip(before) {
            let after = signature(d.path());
            assert!(after.is_some(), "{what}");
            assert_ne!(after, Some(before), "{what}");
        }
        // `.git` under repo/ is not read by the tree digest: a change there is not a change.
        let base = signature(d.path()).unwrap();
        fs_err::write(d.path().join("t1/repo/.git/HEAD"), "ref\n").unwrap();
        settle();
        assert_eq!(signature(d.path()), Some(base));
    }

    #[test]
    fn a_stored_entry_round_trips_and_a_damaged_one_is_ignored() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("index/x.tasks");
        let e = DirSnapshot::new("sig".into(), "snap".into(), 3, true);
        save(&p, &e);
        assert_eq!(load(&p), Some(e));
        let mut bytes = fs_err::read(&p).unwrap();
        let at = bytes.len() - 3;
        bytes[at] ^= 1;
        fs_err::write(&p, &bytes).unwrap();
        assert_eq!(load(&p), None);
    }
}
