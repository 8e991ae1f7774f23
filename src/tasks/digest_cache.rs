//! The content-hash cache of task files, like git's index: `index/files.idx` in the store maps a
//! file's path to the blake3 of its content and the stat it had when it was hashed
//! `(size, mtime_ns, ctime_ns, inode)`. Hashing a task's `repo/` tree (its digest enters every
//! key of the task) then stats each file and reads only those whose stat differs.
//!
//! DESIGN. The cache never decides a digest on its own: a file is hashed from its content
//! whenever its stat differs from the entry's (any write moves the ctime, which cannot be set
//! back), and an entry is made or trusted only if the file's ctime is at least
//! [`RACY_NS`](crate::files::RACY_NS) older than the moment it was hashed (a file changed in the
//! same timestamp tick as it was hashed may keep its stat). The file is written whole and
//! atomically (temp file, fsync, rename) by `apply` under the store's lock, only when something
//! was hashed anew, and ends with the blake3 of everything before it: a file that does not
//! verify is ignored (everything is hashed again). `bench gc` removes it (rebuilt by the next
//! apply).

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::files::{FileStamp, RACY_NS, now_ns};

const MAGIC: &[u8] = b"bench-file-digests 1\n";

type Slot = (FileStamp, [u8; 32]);

/// Content hashes of files by their stat.
#[derive(Debug, Default)]
pub struct DigestCache {
    old: HashMap<PathBuf, Slot>,
    new: Mutex<HashMap<PathBuf, Slot>>,
    now: i128,
}

impl DigestCache {
    /// The cache stored at `path` (empty if there is none or it does not verify).
    pub fn load(path: &Path) -> DigestCache {
        let old = fs_err::read(path)
            .ok()
            .and_then(|b| parse(&b))
            .unwrap_or_default();
        DigestCache {
            old,
            new: Mutex::default(),
            now: now_ns(),
        }
    }

    /// An empty cache: every file is hashed.
    pub fn empty() -> DigestCache {
        DigestCache {
            now: now_ns(),
            ..Default::default()
        }
    }

    /// The blake3 of the regular file at `path`, whose metadata is `meta`, at most `limit` bytes
    /// (read only as a regular file: see [`crate::regular_file`]).
    pub fn content_hash(
        &self,
        path: &Path,
        meta: &std::fs::Metadata,
        limit: u64,
    ) -> Result<[u8; 32], crate::regular_file::ReadError> {
        let stamp = FileStamp::of(meta);
        if let Some((s, h)) = self.old.get(path)
            && *s == stamp
        {
            return Ok(*h);
        }
        let hash = crate::regular_file::hash(path, limit)?;
        if stamp.settled(self.now, RACY_NS) {
            self.new
                .lock()
                .expect("digest cache lock")
                .insert(path.to_path_buf(), (stamp, hash));
        }
        Ok(hash)
    }

    /// Writes the cache to `path` if anything was hashed anew. Call it holding the store's lock.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let new = self.new.lock().expect("digest cache lock");
        if new.is_empty() {
            return Ok(());
        }
        let mut all: Vec<(&PathBuf, &Slot)> = self
            .old
            .iter()
            .filter(|(p, _)| !new.contains_key(*p))
            .chain(new.iter())
            .collect();
        all.sort_by(|a, b| a.0.cmp(b.0));
        let mut buf = MAGIC.to_vec();
        for (p, (s, h)) in all {
            let p = p.as_os_str().as_bytes();
            buf.extend_from_slice(&(p.len() as u32).to_le_bytes());
            buf.extend_from_slice(p);
            buf.extend_from_slice(&s.size.to_le_bytes());
            buf.extend_from_slice(&s.mtime_ns.to_le_bytes());
            buf.extend_from_slice(&s.ctime_ns.to_le_bytes());
            buf.extend_from_slice(&s.ino.to_le_bytes());
            buf.extend_from_slice(h);
        }
        let sum = *blake3::hash(&buf).as_bytes();
        buf.extend_from_slice(&sum);
        crate::files::write_atomic(path, &buf)
    }
}

fn parse(b: &[u8]) -> Option<HashMap<PathBuf, Slot>> {
    let body = b.strip_prefix(MAGIC)?;
    let (body, sum) = body.split_at(body.len().checked_sub(32)?);
    if blake3::hash(&b[..MAGIC.len() + body.len()]).as_bytes() != sum {
        return None;
    }
    let mut out = HashMap::new();
    let mut at = 0usize;
    let take = |at: &mut usize, n: usize| -> Option<&[u8]> {
        let s = body.get(*at..*at + n)?;
        *at += n;
        Some(s)
    };
    while at < body.len() {
        let len = u32::from_le_bytes(take(&mut at, 4)?.try_into().ok()?) as usize;
        let p = PathBuf::from(std::ffi::OsStr::from_bytes(take(&mut at, len)?));
        let size = u64::from_le_bytes(take(&mut at, 8)?.try_into().ok()?);
        let mtime_ns = i128::from_le_bytes(take(&mut at, 16)?.try_into().ok()?);
        let ctime_ns = i128::from_le_bytes(take(&mut at, 16)?.try_into().ok()?);
        let ino = u64::from_le_bytes(take(&mut at, 8)?.try_into().ok()?);
        let h: [u8; 32] = take(&mut at, 32)?.try_into().ok()?;
        out.insert(
            p,
            (
                FileStamp {
                    size,
                    mtime_ns,
                    ctime_ns,
                    ino,
                },
                h,
            ),
        );
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_hash_is_used_only_while_the_stat_matches() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("a.py");
        fs_err::write(&f, b"one").unwrap();
        let cache_file = d.path().join("files.idx");
        // Settled (its ctime older than the racy window): recorded and saved.
        let mut c = DigestCache::load(&cache_file);
        c.now += RACY_NS + 1;
        let m = fs_err::metadata(&f).unwrap();
        assert_eq!(
            c.content_hash(&f, &m, 1 << 20).unwrap(),
            *blake3::hash(b"one").as_bytes()
        );
        c.save(&cache_file).unwrap();
        let c = DigestCache::load(&cache_file);
        assert_eq!(c.old.len(), 1);
        // A stale entry (the file rewritten, its mtime set back) is not believed.
        std::thread::sleep(std::time::Duration::from_millis(30));
        fs_err::write(&f, b"two").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(m.modified().unwrap())
            .unwrap();
        let m2 = fs_err::metadata(&f).unwrap();
        assert_eq!(
            c.content_hash(&f, &m2, 1 << 20).unwrap(),
            *blake3::hash(b"two").as_bytes()
        );
        // A cache file that does not verify is ignored.
        let mut bytes = fs_err::read(&cache_file).unwrap();
        let n = bytes.len();
        bytes[n - 40] ^= 1;
        fs_err::write(&cache_file, &bytes).unwrap();
        assert!(DigestCache::load(&cache_file).old.is_empty());
    }
}
