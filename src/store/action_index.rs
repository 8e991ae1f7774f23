//! The packed action index: `index/actions.idx`, one file holding, for every completed key, its
//! light record (what planning and applying read: the output and the blobs, not the job) and the
//! stat of the record file it was read from. A no-op apply reads this one file instead of one
//! record file per completed node.
//!
//! DESIGN. The per-record files under `actions/` stay the source of truth; the index is a cache
//! that is trusted for a key only while the record file is provably the one the entry was made
//! from:
//!
//! - Each entry holds the record file's `(size, mtime_ns, ctime_ns, inode)` as read (fstat of the
//!   open file, before its bytes were read and verified) and the checksum of the record's body.
//!   A lookup stats the record file (one `statx`, no open, no read) and uses the entry only if all
//!   four match. Any write to the file changes its ctime (which no user call can set back: even
//!   `touch -d` restoring the mtime moves the ctime to now), a replaced file has another inode or
//!   ctime, and a removed file is a miss. A mismatch reads and verifies the record file as
//!   before (checksum, schema, key, output type): an edited or corrupt record is caught exactly as
//!   without the index.
//! - "Racy" entries, as in git's index: a file changed within the same timestamp tick as it was
//!   statted would keep its stat. So an entry is written only if the file's ctime is at least
//!   [`RACY_NS`](crate::files::RACY_NS) older than the moment the entry is made, and an entry is trusted only under the
//!   same condition; a freshly written record is read from its file until it has aged.
//! - Entries are appended (one `write` and an `fsync` per apply, under the store's lock), each
//!   framed as `len: u32 LE | blake3(payload)[..16] | payload (JSON)`. A torn or corrupt entry
//!   (a crash mid-append, a flipped bit) fails its length or checksum: it and everything after
//!   it are ignored, and the next append truncates the file to the last good entry first. The
//!   last entry of a key wins. When dead entries outnumber live ones the file is rewritten
//!   atomically (temp file, fsync, rename), and `bench gc` rewrites it with the kept keys only.
//! - Stat-checking every entry costs one `statx` per completed key (about 1 µs each, on two
//!   threads); not checking would let an edited record be believed, so it is not skipped.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::layout::Store;
use super::records::ActionRecord;
use crate::files::FileStamp;

/// The index file's first line; another one (another version) is ignored and rewritten.
const MAGIC: &[u8] = b"bench-action-index 1\n";

/// One entry: a key's light record and the stamp of the file it was read from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub key: String,
    pub stamp: FileStamp,
    /// When the entry was made (ns since the epoch, wall clock).
    pub made_ns: i128,
    /// The checksum in the record file's header (blake3 of its body).
    pub sum: String,
    /// The light record (`job` is null).
    pub rec: ActionRecord,
}

/// The index as read: the last entry of each key, and where the good entries end.
#[derive(Debug, Default)]
pub struct Loaded {
    pub entries: HashMap<String, Entry>,
    /// Entries read (duplicates included).
    pub count: usize,
    /// Byte length of the valid prefix (header and whole entries).
    pub good_len: u64,
    /// Whether the file had anything after its valid prefix (a torn or corrupt tail), or a
    /// header this bench does not read.
    pub damaged: bool,
}

fn frame(e: &Entry, out: &mut Vec<u8>) {
    let payload = serde_json::to_vec(e).expect("index entries serialize");
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&blake3::hash(&payload).as_bytes()[..16]);
    out.extend_from_slice(&payload);
}

/// Parses an index file's bytes; never fails (what does not verify is left out). The frames
/// are found first (lengths only), then checksummed and parsed on two threads.
pub fn parse(bytes: &[u8]) -> Loaded {
    let mut l = Loaded::default();
    if bytes.is_empty() {
        return l;
    }
    if !bytes.starts_with(MAGIC) {
        l.damaged = true;
        return l;
    }
    let mut frames: Vec<(usize, usize)> = Vec::new();
    let mut at = MAGIC.len();
    while let Some(head) = bytes.get(at..at + 20) {
        let len = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as usize;
        if bytes.len() < at + 20 + len {
            break;
        }
        frames.push((at, len));
        at += 20 + len;
    }
    let check = |&(at, len): &(usize, usize)| -> Option<Entry> {
        let payload = &bytes[at + 20..at + 20 + len];
        if blake3::hash(payload).as_bytes()[..16] != bytes[at + 4..at + 20] {
            return None;
        }
        serde_json::from_slice::<Entry>(payload)
            .ok()
            .filter(|e| e.rec.key == e.key)
    };
    let half = frames.len().div_ceil(2).max(1);
    let parsed: Vec<Option<Entry>> = std::thread::scope(|s| {
        let parts: Vec<_> = frames
            .chunks(half)
            .map(|part| s.spawn(move || part.iter().map(check).collect::<Vec<_>>()))
            .collect();
        parts
            .into_iter()
            .flat_map(|h| h.join().expect("index parsing does not panic"))
            .collect()
    });
    l.good_len = MAGIC.len() as u64;
    l.entries.reserve(parsed.len());
    // Everything from the first entry that fails on is ignored (and truncated on append).
    for ((at, len), e) in frames.iter().zip(parsed) {
        let Some(e) = e else { break };
        l.good_len = (at + 20 + len) as u64;
        l.count += 1;
        l.entries.insert(e.key.clone(), e);
    }
    l.damaged = l.good_len != bytes.len() as u64;
    l
}

impl Store {
    pub(super) fn action_index_path(&self) -> PathBuf {
        self.root().join("index").join("actions.idx")
    }

    /// Reads the action index (empty if there is none or it does not verify).
    pub fn load_action_index(&self) -> Loaded {
        parse(&fs_err::read(self.action_index_path()).unwrap_or_default())
    }

    /// Whether [`Store::save_action_index`] of `new` entries rewrites the index whole (there is
    /// none yet, or dead entries outnumber live ones) rather than appending.
    pub fn action_index_needs_rewrite(&self, loaded: &Loaded, new: usize) -> bool {
        let total = loaded.count + new;
        let live_count = loaded.entries.len() + new;
        loaded.good_len == 0 || total > 2 * live_count + 64
    }

    /// Appends `new` to the index (truncating a damaged tail first), or rewrites it whole with
    /// `live` when it holds mostly dead entries. Call it holding the store's lock.
    pub fn save_action_index(
        &self,
        loaded: &Loaded,
        new: &[Entry],
        live: impl FnOnce() -> Vec<Entry>,
    ) -> std::io::Result<()> {
        let path = self.action_index_path();
        if self.action_index_needs_rewrite(loaded, new.len()) {
            return write_whole(&path, &live());
        }
        if new.is_empty() && !loaded.damaged {
            return Ok(());
        }
        let mut f = std::fs::OpenOptions::new().write(true).open(&path)?;
        if loaded.damaged {
            f.set_len(loaded.good_len)?;
        }
        use std::io::Seek;
        f.seek(std::io::SeekFrom::Start(loaded.good_len))?;
        let mut buf = Vec::new();
        for e in new {
            frame(e, &mut buf);
        }
        f.write_all(&buf)?;
        f.sync_data()
    }

    /// Rewrites the index with the entries of `keep` only (what `bench gc` keeps), dropping the
    /// entries whose record file changed. Call it holding the store's lock.
    pub fn compact_action_index(
        &self,
        keep: &std::collections::BTreeSet<String>,
    ) -> std::io::Result<usize> {
        let loaded = self.load_action_index();
        let entries: Vec<Entry> = loaded
            .entries
            .into_values()
            .filter(|e| keep.contains(&e.key))
            .filter(|e| self.record_stamp(&e.key) == Some(e.stamp))
            .collect();
        let n = entries.len();
        write_whole(&self.action_index_path(), &entries)?;
        Ok(n)
    }
}

fn write_whole(path: &Path, entries: &[Entry]) -> std::io::Result<()> {
    let mut buf = MAGIC.to_vec();
    let mut sorted: Vec<&Entry> = entries.iter().collect();
    sorted.sort_by(|a, b| a.key.cmp(&b.key));
    for e in sorted {
        frame(e, &mut buf);
    }
    super::write_atomic(path, &buf)
}
