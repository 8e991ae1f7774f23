//! The store's directory layout and its primitive operations.
//!
//! ```text
//! .bench/
//!   CACHEDIR.TAG  .gitignore
//!   objects/ab/cdef...       blobs by blake3
//!   actions/ab/cdef....json  key -> ActionRecord
//!   attempts/<key>.json      earlier attempts of a node `apply --rerun` ran again (attempts.rs)
//!   runs/<time>-<id>.json    one RunRecord per apply
//!   index/<hash>.json        one Index per manifest path
//!   index/<hash>.events.jsonl  the last apply's event stream per manifest (run/event_log.rs)
//!   index/files.idx          content hashes of task files by stat (a cache; tasks/digest_cache.rs)
//!   index/<hash>.tasks       a local task directory's stat signature and snapshot (tasks/dir_stamp.rs)
//!   index/actions.idx        the packed action index: key -> light record and the stat of
//!                            its record file, appended per apply (a cache; see action_index.rs)
//!   locks/                   the apply lock
//!   datasets/<hash>.json     pinned Hub dataset files: path -> blob (see datasets::hub)
//!   tmp/                     workspaces of running nodes
//! ```

use std::path::{Path, PathBuf};

use thiserror::Error;

use super::records::{ActionRecord, Index, RECORD_SCHEMA, RecordWithJob, RunRecord};
use crate::files::write_atomic;
use crate::types::Digest;

/// The first word of an action record's header line.
const RECORD_MAGIC: &str = "bench-record";

/// The digest of the empty blob (the one blob whose file is empty).
fn empty_digest() -> &'static Digest {
    static EMPTY: std::sync::OnceLock<Digest> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| Digest::of(b""))
}

/// A blob a cached result needs that is not usable: where it is and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadBlob {
    pub path: PathBuf,
    pub problem: String,
}

impl std::fmt::Display for BadBlob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "blob {} is {}", self.path.display(), self.problem)
    }
}

/// The result of looking a key up.
#[derive(Debug)]
pub enum Lookup {
    Hit(Box<ActionRecord>),
    Miss,
    /// A record exists but is not a valid one: it was removed, and the node recomputes.
    Invalid {
        path: PathBuf,
        reason: String,
    },
}

/// Decodes and verifies a record file.
fn decode_record(bytes: &[u8], key: &str, light: bool) -> Result<ActionRecord, String> {
    let nl = memchr::memchr(b'\n', bytes).ok_or("it has no header line")?;
    let header = std::str::from_utf8(&bytes[..nl]).map_err(|_| "its header is not text")?;
    let body = &bytes[nl + 1..];
    let mut words = header.split(' ');
    if words.next() != Some(RECORD_MAGIC) {
        return Err("it is not a bench record (no header)".into());
    }
    let schema = words.next().and_then(|w| w.parse::<u32>().ok());
    if schema != Some(RECORD_SCHEMA) {
        return Err(format!(
            "its format version is {}, this bench reads {RECORD_SCHEMA}",
            schema.map_or("unknown".to_string(), |s| s.to_string())
        ));
    }
    let sum = words.next().unwrap_or("");
    let actual = crate::key::digest(body);
    if sum != actual {
        return Err(format!(
            "its content does not match its checksum (edited or torn: {} != {})",
            &actual[..12],
            &sum[..12.min(sum.len())]
        ));
    }
    let rec: ActionRecord = if light {
        #[derive(serde::Deserialize)]
        struct Light {
            schema: u32,
            key: String,
            #[serde(rename = "job")]
            _job: serde::de::IgnoredAny,
            output: super::records::Output,
            blobs: super::blobs::Blobs,
            bench_version: String,
            started_at: String,
            duration_ms: u64,
        }
        let l: Light =
            serde_json::from_slice(body).map_err(|e| format!("its body does not parse: {e}"))?;
        ActionRecord {
            schema: l.schema,
            key: l.key,
            job: serde_json::Value::Null,
            output: l.output,
            blobs: l.blobs,
            bench_version: l.bench_version,
            started_at: l.started_at,
            duration_ms: l.duration_ms,
        }
    } else {
        serde_json::from_slice(body).map_err(|e| format!("its body does not parse: {e}"))?
    };
    if rec.key != key {
        return Err(format!("it holds the result of another key ({})", rec.key));
    }
    // Every digest it names becomes a path only as a checked digest: one that is not (a path
    // in disguise) makes the whole record invalid.
    rec.check_blob_refs()
        .map_err(|e| format!("it names a blob by {e}"))?;
    Ok(rec)
}

/// Reads and verifies a record file (light): the record, the stat of the file taken before its
/// bytes were read, and the checksum of its header. `None` if it is missing or invalid.
fn read_record_file(
    path: &Path,
    key: &str,
) -> Option<(ActionRecord, crate::files::FileStamp, String)> {
    use std::io::Read;
    let mut f = fs_err::File::open(path).ok()?;
    let stamp = crate::files::FileStamp::of(&f.metadata().ok()?);
    let mut bytes = Vec::with_capacity(stamp.size as usize + 1);
    f.read_to_end(&mut bytes).ok()?;
    let rec = decode_record(&bytes, key, true).ok()?;
    let header = &bytes[..memchr::memchr(b'\n', &bytes)?];
    let sum = std::str::from_utf8(header)
        .ok()?
        .rsplit(' ')
        .next()?
        .to_string();
    Some((rec, stamp, sum))
}

/// Errors of store operations; every one names the path involved.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("store I/O failed: {0}")]
    Io(#[from] std::io::Error),
    #[error(
        "blob {} is corrupt (its content hashes to {actual}); it was removed and its producer recomputes",
        path.display()
    )]
    Corrupt {
        digest: String,
        path: PathBuf,
        actual: String,
    },
    #[error("record {path} is not valid JSON: {source}")]
    BadRecord {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// The store of results.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

/// The default store of a manifest: `.bench` beside it. `--store` and `BENCH_STORE` override.
pub fn default_store_path(manifest_dir: &Path) -> PathBuf {
    manifest_dir.join(".bench")
}

fn shard(dir: &Path, name: &Digest, ext: &str) -> PathBuf {
    let (a, b) = name.split();
    dir.join(a).join(format!("{b}{ext}"))
}

/// A key as a digest, or why it is not one (a key read from an index, a remote or the command
/// line becomes a path only once checked).
fn checked_key(key: &str) -> Result<Digest, String> {
    Digest::parse(key).map_err(|e| format!("its key {e}"))
}

impl Store {
    /// Opens (creating if needed) a store at `root`.
    pub fn open(root: &Path) -> Result<Store, StoreError> {
        for d in ["objects", "actions", "runs", "index", "locks", "tmp"] {
            fs_err::create_dir_all(root.join(d))?;
        }
        let tag = root.join("CACHEDIR.TAG");
        if !tag.exists() {
            write_atomic(
                &tag,
                b"Signature: 8a477f597d28d172789f06886806bc55\n# This directory is a bench store: results keyed by content hash.\n",
            )?;
        }
        let ignore = root.join(".gitignore");
        if !ignore.exists() {
            write_atomic(&ignore, b"*\n")?;
        }
        Ok(Store {
            root: root.to_path_buf(),
        })
    }

    /// Opens an existing store without creating anything; `None` if there is none.
    pub fn open_existing(root: &Path) -> Option<Store> {
        root.join("actions").is_dir().then(|| Store {
            root: root.to_path_buf(),
        })
    }

    /// The store at `root` as it is, there or not, creating nothing: for a reader that waits
    /// for one (`bench view` opened before the first apply).
    pub fn at(root: &Path) -> Store {
        Store {
            root: root.to_path_buf(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    pub fn blob_path(&self, digest: &Digest) -> PathBuf {
        shard(&self.root.join("objects"), digest, "")
    }

    pub(super) fn action_path(&self, key: &Digest) -> PathBuf {
        shard(&self.root.join("actions"), key, ".json")
    }

    /// The record file of `key`, if `key` is a digest.
    pub fn action_file(&self, key: &str) -> Option<PathBuf> {
        Some(self.action_path(&Digest::parse(key).ok()?))
    }

    /// Stores bytes, returning their digest. Already-present blobs are not rewritten.
    pub fn put_blob(&self, bytes: &[u8]) -> Result<String, StoreError> {
        let digest = Digest::of(bytes);
        let path = self.blob_path(&digest);
        if !path.exists() {
            write_atomic(&path, bytes)?;
        }
        Ok(digest.into_string())
    }

    /// Reads a blob and verifies its content hash. A corrupt blob is removed and reported.
    pub fn get_blob(&self, digest: &Digest) -> Result<Vec<u8>, StoreError> {
        let path = self.blob_path(digest);
        let bytes = fs_err::read(&path)?;
        let actual = crate::key::digest(&bytes);
        if *digest != actual {
            let _ = fs_err::remove_file(&path);
            return Err(StoreError::Corrupt {
                digest: digest.to_string(),
                path,
                actual,
            });
        }
        Ok(bytes)
    }

    /// Removes the temp files of dead writers (`.tmp-*` left by a process killed mid-write) from
    /// every directory of the store. Call it holding the apply lock. Returns how many it removed.
    pub fn sweep_temp_files(&self) -> usize {
        fn walk(dir: &Path, depth: u32, removed: &mut usize) {
            for e in fs_err::read_dir(dir).into_iter().flatten().flatten() {
                let name = e.file_name();
                let name = name.to_string_lossy();
                match e.file_type() {
                    Ok(t)
                        if t.is_file()
                            && name.starts_with(".tmp-")
                            && fs_err::remove_file(e.path()).is_ok() =>
                    {
                        *removed += 1;
                    }
                    Ok(t) if t.is_dir() && depth > 0 => walk(&e.path(), depth - 1, removed),
                    _ => {}
                }
            }
        }
        let mut removed = 0;
        for d in ["objects", "actions", "runs", "index", "datasets"] {
            walk(&self.root.join(d), 1, &mut removed);
        }
        walk(&self.root, 0, &mut removed);
        removed
    }

    pub fn has_blob(&self, digest: &Digest) -> bool {
        self.blob_path(digest).is_file()
    }

    /// Checks the blob `digest` as a cached result that references it needs it: by stat (it is
    /// a regular file, and not empty unless it is the empty blob), and with `deep` by content
    /// too (a blob that does not hash to its name is removed). The error names the blob's path
    /// and what is wrong.
    pub fn check_blob(&self, digest: &Digest, deep: bool) -> Result<(), BadBlob> {
        let path = self.blob_path(digest);
        let bad = |problem: String| BadBlob {
            path: path.clone(),
            problem,
        };
        let meta = match fs_err::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(bad("missing".into()));
            }
            Err(e) => return Err(bad(format!("unreadable ({e})"))),
        };
        if !meta.is_file() {
            return Err(bad("not a regular file".into()));
        }
        if meta.len() == 0 && digest != empty_digest() {
            let _ = fs_err::remove_file(&path);
            return Err(bad("empty; removed".into()));
        }
        if deep {
            match self.get_blob(digest) {
                Ok(_) => {}
                Err(StoreError::Corrupt { actual, .. }) => {
                    return Err(bad(format!(
                        "corrupt (its content hashes to {actual}); removed"
                    )));
                }
                Err(e) => return Err(bad(format!("unreadable ({e})"))),
            }
        }
        Ok(())
    }

    /// The size of the blob `digest` as a regular file, if it is one.
    pub fn blob_size(&self, digest: &Digest) -> Option<u64> {
        fs_err::symlink_metadata(self.blob_path(digest))
            .ok()
            .filter(std::fs::Metadata::is_file)
            .map(|m| m.len())
    }

    /// The cached result of a key, verified: the record's checksum over its body, its schema,
    /// its key and its output's type. Anything else than a valid record is reported (with its
    /// path) as [`Lookup::Invalid`] and removed, so the node recomputes.
    pub fn get_action(&self, key: &str) -> Lookup {
        self.read_action(key, false)
    }

    /// Like [`Store::get_action`], without the job (`job` is null): what planning and applying
    /// need, at a fraction of the parsing cost. The checksum still covers the whole body.
    pub fn get_action_light(&self, key: &str) -> Lookup {
        self.read_action(key, true)
    }

    fn read_action(&self, key: &str, light: bool) -> Lookup {
        let path = match checked_key(key) {
            Ok(k) => self.action_path(&k),
            Err(reason) => {
                return Lookup::Invalid {
                    path: self.root.join("actions"),
                    reason,
                };
            }
        };
        let bytes = match fs_err::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Miss,
            Err(e) => {
                return Lookup::Invalid {
                    path,
                    reason: format!("cannot read it: {e}"),
                };
            }
        };
        match decode_record(&bytes, key, light) {
            Ok(rec) => Lookup::Hit(Box::new(rec)),
            Err(reason) => {
                // Quarantine: the node recomputes and rewrites it.
                let _ = fs_err::remove_file(&path);
                Lookup::Invalid { path, reason }
            }
        }
    }

    /// The valid records of `keys` (light, as [`Store::get_action_light`] reads them), on
    /// `threads` threads: what an apply will look up, read while it loads its datasets. They
    /// come from the packed action index (`index/actions.idx`, see `action_index.rs`) where the
    /// record file's stat still matches its entry, else from the record file, verified (and the
    /// index is then brought up to date). Misses and invalid records are left out (a lookup
    /// reads, reports and removes those). Call it holding the store's lock: it may append to
    /// the index.
    pub fn prefetch_light(
        &self,
        keys: Vec<String>,
        threads: usize,
    ) -> std::collections::HashMap<String, ActionRecord> {
        self.prefetch_light_with(keys, threads, crate::files::RACY_NS)
    }

    pub(super) fn prefetch_light_with(
        &self,
        keys: Vec<String>,
        threads: usize,
        racy_ns: i128,
    ) -> std::collections::HashMap<String, ActionRecord> {
        use super::action_index::Entry;
        use crate::files::now_ns;
        let mut loaded = self.load_action_index();
        crate::timings::mark("action index read");
        let now = now_ns();
        let chunk = keys.len().div_ceil(threads.max(1)).max(1);
        // Per key: nothing (its index entry holds, and its record is moved out of the index
        // below, not copied), or the record read from its file and a new index entry for it.
        enum Found {
            Indexed,
            Read(Box<(ActionRecord, Option<Entry>)>),
        }
        let found: Vec<(usize, Found)> = std::thread::scope(|s| {
            let loaded = &loaded;
            let handles: Vec<_> = keys
                .chunks(chunk)
                .enumerate()
                .map(|(n, part)| {
                    s.spawn(move || {
                        part.iter()
                            .enumerate()
                            .filter_map(|(i, k)| {
                                let at = n * chunk + i;
                                let path = self.action_file(k)?;
                                // A missing record file is a miss (`?`), as in a lookup.
                                if let Some(e) = loaded.entries.get(k)
                                    && stamp_of(&path)? == e.stamp
                                    && e.stamp.settled(e.made_ns, racy_ns)
                                {
                                    return Some((at, Found::Indexed));
                                }
                                let (rec, stamp, sum) = read_record_file(&path, k)?;
                                let entry = stamp.settled(now, racy_ns).then(|| Entry {
                                    key: k.clone(),
                                    stamp,
                                    made_ns: now,
                                    sum,
                                    rec: rec.clone(),
                                });
                                Some((at, Found::Read(Box::new((rec, entry)))))
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        });
        crate::timings::mark("action index entries checked");
        let mut new = Vec::new();
        let mut out = std::collections::HashMap::with_capacity(found.len());
        let mut indexed = Vec::new();
        for (at, f) in found {
            match f {
                Found::Indexed => indexed.push(at),
                Found::Read(read) => {
                    let (rec, entry) = *read;
                    new.extend(entry);
                    out.insert(keys[at].clone(), rec);
                }
            }
        }
        // The index is a cache: failing to update it costs speed, never correctness. A
        // rewrite (rare: when dead entries outnumber live ones) needs the entries whole, so it
        // is done before they are moved out.
        let live = if self.action_index_needs_rewrite(&loaded, new.len()) {
            // Entries of other manifests' keys are kept; those of keys asked for and not
            // found (removed or invalid records) are dropped.
            let found: std::collections::HashSet<&String> = out
                .keys()
                .chain(indexed.iter().map(|i| &keys[*i]))
                .collect();
            let asked: std::collections::HashSet<&String> = keys.iter().collect();
            let mut live: std::collections::HashMap<String, Entry> = loaded
                .entries
                .iter()
                .filter(|(k, _)| found.contains(*k) || !asked.contains(k))
                .map(|(k, e)| (k.clone(), e.clone()))
                .collect();
            for e in &new {
                live.insert(e.key.clone(), e.clone());
            }
            live.into_values().collect()
        } else {
            Vec::new()
        };
        let _ = self.save_action_index(&loaded, &new, || live);
        for at in indexed {
            if let Some(e) = loaded.entries.remove(&keys[at]) {
                out.insert(e.key, e.rec);
            }
        }
        // What is left of the index is not needed: skip freeing it entry by entry.
        std::mem::forget(loaded);
        out
    }

    /// The stat of a key's record file (no open, no read), if it exists.
    pub fn record_stamp(&self, key: &str) -> Option<super::FileStamp> {
        stamp_of(&self.action_file(key)?)
    }

    /// Stats of many record files and blobs (a no-op's check), each taken relative to the
    /// open `actions/` or `objects/` directory: what [`Store::record_stamp`] and
    /// [`Store::blob_size`] give, without walking the store's own path for each.
    pub fn stats(&self) -> StoreStats {
        StoreStats {
            actions: crate::files::StatUnder::new(&self.root.join("actions")),
            objects: crate::files::StatUnder::new(&self.root.join("objects")),
        }
    }

    pub fn has_action(&self, key: &str) -> bool {
        self.action_file(key).is_some_and(|p| p.is_file())
    }

    /// Records a result atomically: a header with the body's checksum, then the body.
    pub fn put_action(&self, record: &ActionRecord) -> Result<(), StoreError> {
        self.put_record(&record.key, record)
    }

    /// [`Store::put_action`] of a record whose job is written from the job itself, not from
    /// the record's JSON tree of it (a report's job: see `RecordWithJob`).
    pub fn put_action_with<J: serde::Serialize>(
        &self,
        record: &RecordWithJob<'_, J>,
    ) -> Result<(), StoreError> {
        self.put_record(record.key(), record)
    }

    fn put_record(&self, key: &str, record: &impl serde::Serialize) -> Result<(), StoreError> {
        let path = checked_key(key)
            .map(|k| self.action_path(&k))
            .map_err(|why| StoreError::Io(std::io::Error::other(format!("record: {why}"))))?;
        // The body is made twice, hashed and then written, and never held whole: a report's
        // record holds its inputs, a row per node.
        let mut hasher = blake3::Hasher::new();
        serde_json::to_writer_pretty(&mut hasher, record).expect("records serialize");
        let digest = hasher.finalize().to_hex();
        crate::files::write_atomic_with(&path, |w| {
            writeln!(w, "{RECORD_MAGIC} {RECORD_SCHEMA} {digest}")?;
            serde_json::to_writer_pretty(w, record).map_err(std::io::Error::other)
        })?;
        Ok(())
    }

    /// A key's record file as stored (header and body), with the record it holds (light),
    /// verified as a lookup verifies it; `None` if it is missing or not valid. What a remote
    /// cache uploads: the exact bytes, so a signature over them is checked on the same bytes.
    pub fn action_bytes(&self, key: &str) -> Option<(ActionRecord, Vec<u8>)> {
        let bytes = fs_err::read(self.action_file(key)?).ok()?;
        let rec = decode_record(&bytes, key, true).ok()?;
        Some((rec, bytes))
    }

    /// Verifies record-file bytes from elsewhere (a remote cache) for `key`: header, format
    /// version, checksum, key and output type. Returns the record (light) or why not.
    pub fn verify_record_bytes(bytes: &[u8], key: &str) -> Result<ActionRecord, String> {
        decode_record(bytes, key, true)
    }

    /// Commits verified record-file bytes for `key` atomically (after the blobs it refers to):
    /// a record fetched from a remote cache becomes a local record like any other.
    pub fn put_action_bytes(&self, key: &str, bytes: &[u8]) -> Result<ActionRecord, StoreError> {
        let rec = decode_record(bytes, key, true).map_err(|reason| {
            StoreError::Io(std::io::Error::other(format!(
                "record for {key} is not valid: {reason}"
            )))
        })?;
        let path = self
            .action_file(key)
            .expect("a decoded record's key is a digest");
        write_atomic(&path, bytes)?;
        Ok(rec)
    }

    /// The file-digest cache of task files (see `tasks/digest_cache.rs`).
    pub fn file_digests_path(&self) -> PathBuf {
        self.root.join("index").join("files.idx")
    }

    /// The stat signature of a local task directory and its snapshot (see
    /// `tasks/dir_stamp.rs`): `index/<hash of the directory's path>.tasks`.
    pub fn dataset_stamp_path(&self, dir: &Path) -> PathBuf {
        Store::dataset_stamp_path_in(&self.root, dir)
    }

    /// [`Store::dataset_stamp_path`] of the store at `root`, without opening it.
    pub fn dataset_stamp_path_in(root: &Path, dir: &Path) -> PathBuf {
        manifest_file_in(root, dir, "tasks")
    }

    /// A per-manifest file under `index/`: `<hash of the manifest's path>.<ext>`.
    pub fn manifest_file(&self, manifest: &Path, ext: &str) -> PathBuf {
        manifest_file_in(&self.root, manifest, ext)
    }

    fn index_path(&self, manifest: &Path) -> PathBuf {
        self.manifest_file(manifest, "json")
    }

    /// The stat of a manifest's index file, if it has one.
    pub fn index_stamp(&self, manifest: &Path) -> Option<super::FileStamp> {
        stamp_of(&self.index_path(manifest))
    }

    /// The index of a manifest (empty if it never ran on this store).
    pub fn load_index(&self, manifest: &Path) -> Index {
        fs_err::read(self.index_path(manifest))
            .ok()
            .and_then(|b| serde_json::from_slice::<Index>(&b).ok())
            .unwrap_or_else(|| Index {
                schema: RECORD_SCHEMA,
                manifest_path: manifest.display().to_string(),
                nodes: Default::default(),
            })
    }

    /// Writes a manifest's index (an [`Index`] as [`Index::view`] borrows it).
    pub fn save_index(
        &self,
        manifest: &Path,
        index: &super::records::IndexView<'_>,
    ) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(index).expect("indexes serialize");
        write_atomic(&self.index_path(manifest), &bytes)?;
        Ok(())
    }

    pub fn run_path(&self, id: &str) -> PathBuf {
        self.root.join("runs").join(format!("{id}.json"))
    }

    /// Writes a run record and, beside it, its head (`<id>.head`: status and pid), which is
    /// all [`Store::has_dead_runs`] reads: a run record holds every node's status, and every
    /// apply asks whether a run died.
    pub fn save_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        // Compact: a run record holds every node of the apply (about 130 bytes each).
        let bytes = serde_json::to_vec(run).expect("runs serialize");
        write_atomic(&self.run_path(&run.id), &bytes)?;
        self.save_run_head(&run.id, run.status, run.pid)
    }

    /// [`Store::save_run`] of a run whose `nodes` are given as their JSON (as `save_run`
    /// serializes them; the no-op memo keeps them so): the same bytes, without building the map.
    pub fn save_run_with_nodes(
        &self,
        run: &RunRecord,
        nodes_json: &[u8],
    ) -> Result<(), StoreError> {
        debug_assert!(run.nodes.is_empty());
        let mut bytes = serde_json::to_vec(run).expect("runs serialize");
        // `nodes` is the record's last field: its empty map and the record's `}` end the bytes.
        let tail = b"\"nodes\":{}}";
        if !bytes.ends_with(tail) {
            return Err(StoreError::Io(std::io::Error::other(
                "internal error: a run record does not end with its nodes",
            )));
        }
        bytes.truncate(bytes.len() - 3);
        bytes.extend_from_slice(nodes_json);
        bytes.push(b'}');
        write_atomic(&self.run_path(&run.id), &bytes)?;
        self.save_run_head(&run.id, run.status, run.pid)
    }

    fn run_head_path(&self, id: &str) -> PathBuf {
        self.root.join("runs").join(format!("{id}.head"))
    }

    /// The directory of the runs that may still be running: an empty file per run, made before
    /// its head first says `running` and removed after its head says it ended, so that
    /// [`Store::has_dead_runs`] reads the heads of these few, not of every run ever recorded.
    fn live_runs_dir(&self) -> PathBuf {
        self.root.join("runs").join("live")
    }

    fn save_run_head(
        &self,
        id: &str,
        status: super::records::RunStatus,
        pid: u32,
    ) -> Result<(), StoreError> {
        let running = status == super::records::RunStatus::Running;
        if running {
            self.mark_live(id)?;
        }
        let head = RunHead { status, pid };
        let bytes = serde_json::to_vec(&head).expect("run heads serialize");
        write_atomic(&self.run_head_path(id), &bytes)?;
        if !running {
            match fs_err::remove_file(self.live_runs_dir().join(id)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            }
        }
        Ok(())
    }

    /// Marks run `id` live (once).
    fn mark_live(&self, id: &str) -> Result<(), StoreError> {
        let live = self.live_runs_dir().join(id);
        if !live.is_file() {
            fs_err::create_dir_all(self.live_runs_dir())?;
            write_atomic(&live, b"")?;
        }
        Ok(())
    }

    /// The ids of every run record, sorted.
    fn run_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = fs_err::read_dir(self.root.join("runs"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".json").map(str::to_string)
            })
            .collect();
        ids.sort();
        ids
    }

    /// Every run record, oldest first (by start time, then id). Unreadable ones are skipped.
    pub fn runs(&self) -> Vec<RunRecord> {
        let mut runs: Vec<RunRecord> = self
            .run_ids()
            .iter()
            .filter_map(|id| serde_json::from_slice(&fs_err::read(self.run_path(id)).ok()?).ok())
            .collect();
        runs.sort_by(|a, b| {
            let t = |r: &RunRecord| r.started_at.parse::<jiff::Timestamp>().ok();
            (t(a), &a.id).cmp(&(t(b), &b.id))
        });
        runs
    }

    /// Whether a run record says "running" while no apply holds the store's lock: an apply
    /// died (its temp files may remain). Call it holding the lock. Reads the heads of the runs
    /// marked live only; in a store of a build before the marks, every head once, marking
    /// those still running.
    pub fn has_dead_runs(&self) -> bool {
        let live_dir = self.live_runs_dir();
        if !live_dir.is_dir() {
            self.mark_live_runs();
        }
        let ids: Vec<String> = fs_err::read_dir(&live_dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|id| !id.starts_with('.'))
            .collect();
        let mut dead = false;
        for id in ids {
            match self.run_head(&id) {
                Some(h) if h.status == super::records::RunStatus::Running => {
                    dead |= h.pid != std::process::id();
                }
                // Its head says it ended (the mark outlived a crash between the two writes),
                // or the run is gone: the mark goes.
                _ => {
                    let _ = fs_err::remove_file(live_dir.join(&id));
                }
            }
        }
        dead
    }

    /// Marks live the runs whose head says `running` (reading every head once), then makes
    /// the marks' directory: a store written by a build before the marks.
    fn mark_live_runs(&self) {
        if fs_err::create_dir_all(self.live_runs_dir()).is_err() {
            return;
        }
        for id in self.run_ids() {
            if self
                .run_head(&id)
                .is_some_and(|h| h.status == super::records::RunStatus::Running)
            {
                let _ = self.mark_live(&id);
            }
        }
    }

    /// A run's head; for a run of an older build (or a head lost in a crash) its record, read
    /// once and given a head.
    fn run_head(&self, id: &str) -> Option<RunHead> {
        let head = fs_err::read(self.run_head_path(id))
            .ok()
            .and_then(|b| serde_json::from_slice::<RunHead>(&b).ok());
        if head.is_some() {
            return head;
        }
        let run = fs_err::read(self.run_path(id))
            .ok()
            .and_then(|b| serde_json::from_slice::<RunRecord>(&b).ok())?;
        let _ = self.save_run_head(id, run.status, run.pid);
        Some(RunHead {
            status: run.status,
            pid: run.pid,
        })
    }

    /// Every action key in the store.
    /// The keys of the records in the shard of `key` (the directory its record would be in),
    /// from one listing of that directory: an empty set when there is none.
    pub fn action_keys_in_shard_of(&self, key: &str) -> std::collections::HashSet<String> {
        let Ok(key) = Digest::parse(key) else {
            return Default::default();
        };
        let (a, _) = key.split();
        let dir = self.root.join("actions").join(a);
        let Ok(entries) = fs_err::read_dir(&dir) else {
            return Default::default();
        };
        entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                Some(format!("{a}{}", name.strip_suffix(".json")?))
            })
            .collect()
    }

    pub fn action_keys(&self) -> Vec<String> {
        list_sharded(&self.root.join("actions"), ".json")
            .into_iter()
            .map(|d| d.as_str().to_string())
            .collect()
    }

    /// Every blob digest in the store (files whose names are not digests are not blobs).
    pub fn blob_digests(&self) -> Vec<Digest> {
        list_sharded(&self.root.join("objects"), "")
    }

    pub fn remove_action(&self, key: &str) -> std::io::Result<()> {
        let path = checked_key(key)
            .map(|k| self.action_path(&k))
            .map_err(std::io::Error::other)?;
        fs_err::remove_file(path)
    }

    pub fn remove_blob(&self, digest: &Digest) -> std::io::Result<()> {
        fs_err::remove_file(self.blob_path(digest))
    }
}

/// What [`Store::has_dead_runs`] reads of a run.
#[derive(serde::Serialize, serde::Deserialize)]
struct RunHead {
    status: super::records::RunStatus,
    pid: u32,
}

fn list_sharded(dir: &Path, ext: &str) -> Vec<Digest> {
    let mut out = Vec::new();
    for shard in fs_err::read_dir(dir).into_iter().flatten().flatten() {
        let prefix = shard.file_name().to_string_lossy().into_owned();
        if prefix.len() != 2 {
            continue;
        }
        for f in fs_err::read_dir(shard.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = f.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            if let Some(d) = name
                .strip_suffix(ext)
                .and_then(|stem| Digest::parse(&format!("{prefix}{stem}")).ok())
            {
                out.push(d);
            }
        }
    }
    out.sort();
    out
}

/// [`Store::manifest_file`] of the store at `root`.
fn manifest_file_in(root: &Path, manifest: &Path, ext: &str) -> PathBuf {
    let h = crate::key::digest(manifest.to_string_lossy().as_bytes());
    root.join("index").join(format!("{}.{ext}", &h[..32]))
}

/// Record stamps and blob sizes taken many at a time ([`Store::stats`]).
pub struct StoreStats {
    actions: crate::files::StatUnder,
    objects: crate::files::StatUnder,
}

impl StoreStats {
    /// [`Store::record_stamp`].
    pub fn record_stamp(&self, key: &str) -> Option<super::FileStamp> {
        let rel = shard(Path::new(""), &Digest::parse(key).ok()?, ".json");
        self.actions.stat(&rel, false).map(|s| s.stamp())
    }

    /// [`Store::blob_size`].
    pub fn blob_size(&self, digest: &Digest) -> Option<u64> {
        self.objects
            .stat(&shard(Path::new(""), digest, ""), false)
            .filter(crate::files::Stat::is_file)
            .map(|s| s.size)
    }
}

/// The stat that identifies one version of a file (not following a symlink), if it exists.
fn stamp_of(path: &Path) -> Option<super::FileStamp> {
    fs_err::symlink_metadata(path)
        .ok()
        .map(|m| super::FileStamp::of(&m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::SampleOutput;
    use crate::store::Output;

    const MAGIC_LEN: usize = "bench-action-index 1\n".len();

    fn record(key: &str) -> ActionRecord {
        ActionRecord {
            schema: RECORD_SCHEMA,
            key: key.to_string(),
            job: serde_json::json!({"x": 1}),
            output: Output::Sample(SampleOutput {
                tasks: vec!["a".into(), "b".into()],
            }),
            blobs: Default::default(),
            bench_version: "t".into(),
            started_at: "2026-01-01T00:00:00Z".into(),
            duration_ms: 1,
        }
    }

    #[test]
    fn a_record_reads_back_whole_and_light() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(d.path()).unwrap();
        let key = crate::key::digest(b"k");
        s.put_action(&record(&key)).unwrap();
        match s.get_action(&key) {
            Lookup::Hit(r) => assert_eq!(*r, record(&key)),
            other => panic!("{other:?}"),
        }
        match s.get_action_light(&key) {
            Lookup::Hit(r) => {
                assert!(r.job.is_null());
                assert_eq!(r.output, record(&key).output);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            s.get_action(&crate::key::digest(b"none")),
            Lookup::Miss
        ));
    }

    #[test]
    fn a_record_written_from_its_jobs_own_type_reads_back_as_the_same_record() {
        #[derive(serde::Serialize)]
        struct Job {
            zeta: u32,
            alpha: Vec<&'static str>,
            nested: std::collections::BTreeMap<&'static str, f64>,
        }
        let job = Job {
            zeta: 7,
            alpha: vec!["row \"1\"\n", "row 2"],
            nested: std::collections::BTreeMap::from([("b", 1.5), ("a", f64::NAN)]),
        };
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(d.path()).unwrap();
        let key = crate::key::digest(b"k");
        let mut rec = record(&key);
        rec.job = serde_json::Value::Null;
        s.put_action_with(&rec.with_job(&job)).unwrap();
        // Whole: the job reads back as the JSON tree `explain` would have written, the rest
        // of the record as it was; the header's checksum covers the body as written.
        rec.job = serde_json::to_value(&job).unwrap();
        match s.get_action(&key) {
            Lookup::Hit(r) => assert_eq!(*r, rec),
            other => panic!("{other:?}"),
        }
        let text = fs_err::read_to_string(s.action_file(&key).unwrap()).unwrap();
        let (header, body) = text.split_once('\n').unwrap();
        assert_eq!(
            header,
            format!(
                "{RECORD_MAGIC} {RECORD_SCHEMA} {}",
                crate::key::digest(body.as_bytes())
            )
        );
        // A key that is not a digest is refused before anything is written.
        rec.key = "../escape".into();
        assert!(s.put_action_with(&rec.with_job(&job)).is_err());
    }

    #[test]
    fn an_edited_record_is_invalid_named_and_removed() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(d.path()).unwrap();
        let key = crate::key::digest(b"k");
        s.put_action(&record(&key)).unwrap();
        let path = s.action_file(&key).unwrap();
        let text = fs_err::read_to_string(&path).unwrap();
        fs_err::write(&path, text.replace("\"a\"", "\"z\"")).unwrap();
        match s.get_action_light(&key) {
            Lookup::Invalid { path: p, reason } => {
                assert_eq!(p, path);
                assert!(reason.contains("checksum"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!path.exists(), "an invalid record is removed");
        // A valid record filed under another key is refused too.
        let other = crate::key::digest(b"other");
        s.put_action(&record(&other)).unwrap();
        fs_err::create_dir_all(s.action_file(&key).unwrap().parent().unwrap()).unwrap();
        fs_err::copy(s.action_file(&other).unwrap(), s.action_file(&key).unwrap()).unwrap();
        assert!(matches!(s.get_action(&key), Lookup::Invalid { .. }));
        // A record without the header (an older format) is refused, not believed.
        fs_err::write(s.action_file(&key).unwrap(), b"{}").unwrap();
        assert!(matches!(s.get_action(&key), Lookup::Invalid { .. }));
    }

    #[test]
    fn the_action_index_serves_settled_records_and_never_an_edited_one() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(d.path()).unwrap();
        let keys: Vec<String> = (0..5)
            .map(|i| crate::key::digest(format!("k{i}").as_bytes()))
            .collect();
        for k in &keys {
            s.put_action(&record(k)).unwrap();
        }
        let idx = s.action_index_path();
        // Just written: racy, read from the files and not indexed.
        let got = s.prefetch_light(keys.clone(), 2);
        assert_eq!(got.len(), 5);
        assert_eq!(s.load_action_index().entries.len(), 0);
        // Settled (a zero racy window stands for two seconds passing): indexed once.
        std::thread::sleep(std::time::Duration::from_millis(30));
        let got = s.prefetch_light_with(keys.clone(), 2, 0);
        assert_eq!(got.len(), 5);
        assert!(got.values().all(|r| r.job.is_null()));
        let loaded = s.load_action_index();
        assert_eq!((loaded.entries.len(), loaded.count), (5, 5));
        assert!(!loaded.damaged);
        // A second read appends nothing.
        let len = fs_err::metadata(&idx).unwrap().len();
        s.prefetch_light_with(keys.clone(), 2, 0);
        assert_eq!(fs_err::metadata(&idx).unwrap().len(), len);
        // An edited record (same size, mtime set back) is not served from the index: its
        // ctime moved, the file is read, and its checksum fails.
        let path = s.action_file(&keys[0]).unwrap();
        let before = fs_err::metadata(&path).unwrap();
        let text = fs_err::read_to_string(&path).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(30));
        fs_err::write(&path, text.replace("\"a\"", "\"z\"")).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(before.modified().unwrap())
            .unwrap();
        let got = s.prefetch_light_with(keys.clone(), 2, 0);
        assert!(
            !got.contains_key(&keys[0]),
            "an edited record is never served"
        );
        assert_eq!(got.len(), 4);
        assert!(matches!(
            s.get_action_light(&keys[0]),
            Lookup::Invalid { .. }
        ));
        // A removed record is a miss, whatever the index holds.
        s.remove_action(&keys[1]).unwrap();
        let got = s.prefetch_light_with(keys.clone(), 2, 0);
        assert!(!got.contains_key(&keys[1]));
        // A torn tail (a crash mid-append) is ignored, then truncated by the next append.
        let mut bytes = fs_err::read(&idx).unwrap();
        let whole = bytes.len();
        bytes.extend_from_slice(&[7, 0, 0, 0, 1, 2, 3]);
        fs_err::write(&idx, &bytes).unwrap();
        let loaded = s.load_action_index();
        assert!(loaded.damaged);
        assert_eq!(loaded.good_len as usize, whole);
        s.put_action(&record(&keys[1])).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let got = s.prefetch_light_with(keys.clone(), 2, 0);
        assert_eq!(got.len(), 4);
        let loaded = s.load_action_index();
        assert!(!loaded.damaged, "the torn tail was cut");
        assert!(loaded.entries.contains_key(&keys[1]));
        // A flipped bit inside an entry fails its checksum: that entry and the rest are
        // ignored, and the records are read from their files.
        let mut bytes = fs_err::read(&idx).unwrap();
        let at = MAGIC_LEN + 30;
        bytes[at] ^= 1;
        fs_err::write(&idx, &bytes).unwrap();
        assert_eq!(s.load_action_index().entries.len(), 0);
        assert_eq!(s.prefetch_light_with(keys.clone(), 2, 0).len(), 4);
        // gc's compaction keeps what it is told to.
        let keep: std::collections::BTreeSet<String> = keys[2..4].iter().cloned().collect();
        assert_eq!(s.compact_action_index(&keep).unwrap(), 2);
        assert_eq!(s.load_action_index().count, 2);
    }

    #[test]
    fn a_corrupt_blob_is_an_error_naming_its_path() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(d.path()).unwrap();
        let digest = Digest::parse(&s.put_blob(b"patch").unwrap()).unwrap();
        assert_eq!(s.get_blob(&digest).unwrap(), b"patch");
        fs_err::write(s.blob_path(&digest), b"garbage").unwrap();
        let e = s.get_blob(&digest).unwrap_err().to_string();
        assert!(
            e.contains(&s.blob_path(&digest).display().to_string()),
            "{e}"
        );
        assert!(!s.has_blob(&digest), "a corrupt blob is removed");
        // Written again, it is whole again.
        s.put_blob(b"patch").unwrap();
        assert_eq!(s.get_blob(&digest).unwrap(), b"patch");
    }

    #[test]
    fn temp_files_of_dead_writers_are_swept() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(d.path()).unwrap();
        let digest = Digest::parse(&s.put_blob(b"x").unwrap()).unwrap();
        let shard = s.blob_path(&digest).parent().unwrap().to_path_buf();
        fs_err::write(shard.join(".tmp-abc"), b"torn").unwrap();
        fs_err::write(d.path().join("runs/.tmp-def"), b"torn").unwrap();
        assert_eq!(s.sweep_temp_files(), 2);
        assert!(s.has_blob(&digest));
    }

    #[test]
    fn runs_are_ordered_by_start_time_not_id() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(d.path()).unwrap();
        let run = |id: &str, started: &str| RunRecord {
            schema: RECORD_SCHEMA,
            id: id.into(),
            manifest_path: "m".into(),
            manifest_hash: "h".into(),
            resolved_manifest: serde_json::Value::Null,
            bench_version: "t".into(),
            command: "c".into(),
            host: "h".into(),
            pid: 1,
            started_at: started.into(),
            ended_at: None,
            status: super::super::RunStatus::Complete,
            nodes: Default::default(),
            placements: Default::default(),
        };
        s.save_run(&run("b-first", "2026-01-01T00:00:00.100Z"))
            .unwrap();
        s.save_run(&run("a-second", "2026-01-01T00:00:00.900Z"))
            .unwrap();
        let ids: Vec<String> = s.runs().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, ["b-first", "a-second"]);
        assert!(!s.has_dead_runs());
        // A run left `running` by another process is dead; its head is what is read, and a
        // record without a head (an older build's) is read whole once and given one.
        let mut dead = run("c-dead", "2026-01-01T00:00:01.000Z");
        dead.status = super::super::RunStatus::Running;
        dead.pid = std::process::id() + 1;
        s.save_run(&dead).unwrap();
        assert!(s.has_dead_runs());
        fs_err::remove_file(d.path().join("runs/c-dead.head")).unwrap();
        assert!(s.has_dead_runs());
        assert!(d.path().join("runs/c-dead.head").is_file());
        // The head alone decides: a record rewritten complete with its head says so.
        dead.status = super::super::RunStatus::Complete;
        s.save_run(&dead).unwrap();
        assert!(!s.has_dead_runs());
        // Heads are not runs.
        assert_eq!(s.runs().len(), 3);
        // Only the runs marked live have their heads read: an ended run's mark is gone, and a
        // dead run's head unreadable without its mark is not looked at.
        let live = d.path().join("runs/live");
        assert_eq!(fs_err::read_dir(&live).unwrap().count(), 0);
        dead.status = super::super::RunStatus::Running;
        s.save_run(&dead).unwrap();
        assert!(live.join("c-dead").is_file() && s.has_dead_runs());
        fs_err::remove_file(live.join("c-dead")).unwrap();
        assert!(!s.has_dead_runs());
        // A mark whose head says the run ended (a crash between the two writes) goes.
        write_atomic(&live.join("a-second"), b"").unwrap();
        assert!(!s.has_dead_runs());
        assert!(!live.join("a-second").exists());
        // A store of a build before the marks: every head read once, the running ones marked.
        fs_err::remove_dir_all(&live).unwrap();
        assert!(s.has_dead_runs());
        let marked: Vec<_> = fs_err::read_dir(&live)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(marked, ["c-dead"]);
        // This process's own running run is not dead.
        let mut mine = run("d-mine", "2026-01-01T00:00:02.000Z");
        mine.status = super::super::RunStatus::Running;
        mine.pid = std::process::id();
        dead.status = super::super::RunStatus::Failed;
        s.save_run(&dead).unwrap();
        s.save_run(&mine).unwrap();
        assert!(!s.has_dead_runs() && live.join("d-mine").is_file());
    }
}
