//! The store's directory layout and its primitive operations.
//!
//! ```text
//! .bench/
//!   CACHEDIR.TAG  .gitignore
//!   objects/ab/cdef...       blobs by blake3
//!   actions/ab/cdef....json  key -> ActionRecord
//!   runs/<time>-<id>.json    one RunRecord per apply
//!   index/<hash>.json        one Index per manifest path
//!   locks/                   the apply lock
//!   tmp/                     workspaces of running nodes
//! ```

use std::path::{Path, PathBuf};

use thiserror::Error;

use super::atomic::write_atomic;
use super::records::{ActionRecord, Index, RECORD_SCHEMA, RunRecord};

/// Errors of store operations; every one names the path involved.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("store I/O failed")]
    Io(#[from] std::io::Error),
    #[error(
        "blob {digest} is corrupt (content hash {actual}); it was removed and will be recomputed"
    )]
    Corrupt { digest: String, actual: String },
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

fn shard(dir: &Path, name: &str, ext: &str) -> PathBuf {
    let (a, b) = name.split_at(2.min(name.len()));
    dir.join(a).join(format!("{b}{ext}"))
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

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    pub fn blob_path(&self, digest: &str) -> PathBuf {
        shard(&self.root.join("objects"), digest, "")
    }

    fn action_path(&self, key: &str) -> PathBuf {
        shard(&self.root.join("actions"), key, ".json")
    }

    /// Stores bytes, returning their digest. Already-present blobs are not rewritten.
    pub fn put_blob(&self, bytes: &[u8]) -> Result<String, StoreError> {
        let digest = crate::key::digest(bytes);
        let path = self.blob_path(&digest);
        if !path.exists() {
            write_atomic(&path, bytes)?;
        }
        Ok(digest)
    }

    /// Reads a blob and verifies its content hash. A corrupt blob is removed and reported.
    pub fn get_blob(&self, digest: &str) -> Result<Vec<u8>, StoreError> {
        let path = self.blob_path(digest);
        let bytes = fs_err::read(&path)?;
        let actual = crate::key::digest(&bytes);
        if actual != digest {
            let _ = fs_err::remove_file(&path);
            return Err(StoreError::Corrupt {
                digest: digest.to_string(),
                actual,
            });
        }
        Ok(bytes)
    }

    pub fn has_blob(&self, digest: &str) -> bool {
        self.blob_path(digest).is_file()
    }

    /// The cached result of a key. A record that cannot be read is treated as absent (and will
    /// be overwritten by a rerun), never as a result.
    pub fn get_action(&self, key: &str) -> Option<ActionRecord> {
        let bytes = std::fs::read(self.action_path(key)).ok()?;
        let rec: ActionRecord = serde_json::from_slice(&bytes).ok()?;
        (rec.key == key && rec.schema == RECORD_SCHEMA).then_some(rec)
    }

    /// Like [`Store::get_action`], without the key inputs (`inputs` is null): what planning and
    /// applying need, at a fraction of the parsing cost.
    pub fn get_action_light(&self, key: &str) -> Option<ActionRecord> {
        #[derive(serde::Deserialize)]
        struct Light {
            schema: u32,
            key: String,
            node: String,
            address: String,
            #[serde(rename = "inputs")]
            _inputs: serde::de::IgnoredAny,
            output: serde_json::Value,
            blobs: std::collections::BTreeMap<String, String>,
            bench_version: String,
            started_at: String,
            duration_ms: u64,
        }
        let bytes = std::fs::read(self.action_path(key)).ok()?;
        let l: Light = serde_json::from_slice(&bytes).ok()?;
        (l.key == key && l.schema == RECORD_SCHEMA).then_some(ActionRecord {
            schema: l.schema,
            key: l.key,
            node: l.node,
            address: l.address,
            inputs: serde_json::Value::Null,
            output: l.output,
            blobs: l.blobs,
            bench_version: l.bench_version,
            started_at: l.started_at,
            duration_ms: l.duration_ms,
        })
    }

    pub fn has_action(&self, key: &str) -> bool {
        self.action_path(key).is_file()
    }

    /// Records a result atomically.
    pub fn put_action(&self, record: &ActionRecord) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(record).expect("records serialize");
        write_atomic(&self.action_path(&record.key), &bytes)?;
        Ok(())
    }

    fn index_path(&self, manifest: &Path) -> PathBuf {
        let h = crate::key::digest(manifest.to_string_lossy().as_bytes());
        self.root.join("index").join(format!("{}.json", &h[..32]))
    }

    /// The index of a manifest (empty if it never ran on this store).
    pub fn load_index(&self, manifest: &Path) -> Index {
        std::fs::read(self.index_path(manifest))
            .ok()
            .and_then(|b| serde_json::from_slice::<Index>(&b).ok())
            .unwrap_or_else(|| Index {
                schema: RECORD_SCHEMA,
                manifest_path: manifest.display().to_string(),
                nodes: Default::default(),
            })
    }

    pub fn save_index(&self, manifest: &Path, index: &Index) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(index).expect("indexes serialize");
        write_atomic(&self.index_path(manifest), &bytes)?;
        Ok(())
    }

    pub fn run_path(&self, id: &str) -> PathBuf {
        self.root.join("runs").join(format!("{id}.json"))
    }

    pub fn save_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(run).expect("runs serialize");
        write_atomic(&self.run_path(&run.id), &bytes)?;
        Ok(())
    }

    /// Every run record, oldest first. Unreadable ones are skipped.
    pub fn runs(&self) -> Vec<RunRecord> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(self.root.join("runs"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        paths.sort();
        paths
            .iter()
            .filter_map(|p| serde_json::from_slice(&std::fs::read(p).ok()?).ok())
            .collect()
    }

    /// Every action key in the store.
    pub fn action_keys(&self) -> Vec<String> {
        list_sharded(&self.root.join("actions"), ".json")
    }

    /// Every blob digest in the store.
    pub fn blob_digests(&self) -> Vec<String> {
        list_sharded(&self.root.join("objects"), "")
    }

    pub fn remove_action(&self, key: &str) -> std::io::Result<()> {
        fs_err::remove_file(self.action_path(key))
    }

    pub fn remove_blob(&self, digest: &str) -> std::io::Result<()> {
        fs_err::remove_file(self.blob_path(digest))
    }
}

fn list_sharded(dir: &Path, ext: &str) -> Vec<String> {
    let mut out = Vec::new();
    for shard in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let prefix = shard.file_name().to_string_lossy().into_owned();
        if prefix.len() != 2 {
            continue;
        }
        for f in std::fs::read_dir(shard.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = f.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            if let Some(stem) = name.strip_suffix(ext) {
                out.push(format!("{prefix}{stem}"));
            }
        }
    }
    out.sort();
    out
}
