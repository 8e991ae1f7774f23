//! Pinned Hugging Face Hub datasets: files fetched from
//! `{endpoint}/datasets/{repo}/resolve/{revision}/{path}` into the store by content hash.
//!
//! - The endpoint is `HF_ENDPOINT` (default `https://huggingface.co`); `HF_TOKEN`, when set, is
//!   sent as `Authorization: Bearer ...` (never stored, never logged).
//! - A download goes to `tmp/downloads/<hash>.part` in the store; an interrupted one resumes
//!   with a `Range` request. Once complete (its length checked against the server's), the file
//!   is hashed and renamed into `objects/` as a blob.
//! - `datasets/<blake3(repo@revision)>.json` (the pin record, written atomically) maps each
//!   path to its blob digest. A stored file is verified (blake3) every time it is used: a
//!   corrupt one is deleted and fetched again, never read.
//! - A file already stored is never fetched again: reruns work offline.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::store::{Store, write_atomic};

/// Where to fetch from.
#[derive(Debug, Clone)]
pub struct HubConfig {
    pub endpoint: String,
    pub token: Option<String>,
}

impl HubConfig {
    /// `HF_ENDPOINT` (default `https://huggingface.co`) and `HF_TOKEN`.
    pub fn from_env() -> HubConfig {
        HubConfig {
            endpoint: std::env::var("HF_ENDPOINT")
                .ok()
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| "https://huggingface.co".into()),
            token: std::env::var("HF_TOKEN").ok().filter(|t| !t.is_empty()),
        }
    }

    pub fn url(&self, repo: &str, revision: &str, path: &str) -> String {
        format!(
            "{}/datasets/{repo}/resolve/{revision}/{path}",
            self.endpoint.trim_end_matches('/')
        )
    }
}

/// The pin record of one `repo@revision`.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct PinRecord {
    pub repo: String,
    pub revision: String,
    /// Dataset path -> blob digest (checked as it is read: a pin record naming anything else
    /// is not believed, and its files are fetched again).
    pub files: BTreeMap<String, crate::types::Digest>,
}

/// The pin record's path in a store.
pub fn pin_path(store: &Store, repo: &str, revision: &str) -> PathBuf {
    let h = crate::key::digest(format!("{repo}@{revision}").as_bytes());
    store.root().join("datasets").join(format!("{h}.json"))
}

/// Every blob digest the store's pin records refer to (kept by gc).
pub fn pinned_blobs(store: &Store) -> Vec<String> {
    let mut out = Vec::new();
    for e in fs_err::read_dir(store.root().join("datasets"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Some(r) = fs_err::read(e.path())
            .ok()
            .and_then(|b| serde_json::from_slice::<PinRecord>(&b).ok())
        {
            out.extend(r.files.into_values().map(|d| d.to_string()));
        }
    }
    out
}

fn load_pin(path: &Path, repo: &str, revision: &str) -> PinRecord {
    fs_err::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<PinRecord>(&b).ok())
        .filter(|r| r.repo == repo && r.revision == revision)
        .unwrap_or_else(|| PinRecord {
            repo: repo.into(),
            revision: revision.into(),
            files: BTreeMap::new(),
        })
}

fn save_pin(path: &Path, rec: &PinRecord) -> Result<(), String> {
    let bytes = serde_json::to_vec_pretty(rec).expect("pin records serialize");
    write_atomic(path, &bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A file's blake3 and, with `sha256`, its sha256 too, both from one read of it.
fn hash_file_and_sha256(
    path: &Path,
    sha256: bool,
) -> std::io::Result<(crate::types::Digest, Option<String>)> {
    use sha2::Digest;
    let mut f = fs_err::File::open(path)?;
    let mut b3 = blake3::Hasher::new();
    let mut sha = sha256.then(sha2::Sha256::new);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        b3.update(&buf[..n]);
        if let Some(h) = &mut sha {
            h.update(&buf[..n]);
        }
    }
    Ok((
        crate::types::Digest::from_hash(&b3.finalize()),
        sha.map(|h| format!("{:x}", h.finalize())),
    ))
}

fn hash_file(path: &Path) -> std::io::Result<crate::types::Digest> {
    let mut h = blake3::Hasher::new();
    h.update_reader(fs_err::File::open(path)?)?;
    Ok(crate::types::Digest::from_hash(&h.finalize()))
}

/// Makes every file of `repo@revision` available in the store, verified, and returns
/// (dataset path, blob path) pairs in the order of `files`. With `fetch` false nothing is
/// downloaded: `Ok(None)` when some file is not stored (or was corrupt). A file named in
/// `sha256` (a preset's pin) must have that sha256 when fetched, or it is refused unstored.
pub fn ensure_files(
    store: &Store,
    cfg: &HubConfig,
    repo: &str,
    revision: &str,
    files: &[String],
    sha256: &BTreeMap<String, String>,
    fetch: bool,
) -> Result<Option<Vec<(String, PathBuf)>>, String> {
    let pin = pin_path(store, repo, revision);
    let mut rec = load_pin(&pin, repo, revision);
    let mut out = Vec::new();
    for file in files {
        if let Some(d) = rec.files.get(file).cloned() {
            let blob = store.blob_path(&d);
            match hash_file(&blob) {
                Ok(actual) if actual == d => {
                    out.push((file.clone(), blob));
                    continue;
                }
                Ok(actual) => {
                    eprintln!(
                        "warning: {repo}@{revision}/{file}: the stored copy is corrupt (blake3 {actual}, expected {d}); removed{}",
                        if fetch { ", fetching it again" } else { "" }
                    );
                    let _ = fs_err::remove_file(&blob);
                }
                Err(_) => {}
            }
            rec.files.remove(file);
            save_pin(&pin, &rec)?;
        }
        if !fetch {
            return Ok(None);
        }
        let url = cfg.url(repo, revision, file);
        let part = store.tmp_dir().join("downloads").join(format!(
            "{}.part",
            &crate::key::digest(format!("{repo}@{revision}/{file}").as_bytes())[..32]
        ));
        // One downloader per file across processes (`bench tasks` runs without the store
        // lock): wait for the holder, then use what it stored.
        if let Some(dir) = part.parent() {
            fs_err::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        let lock_path = part.with_extension("lock");
        let lock = fs_err::File::create(&lock_path)
            .map_err(|e| format!("{}: {e}", lock_path.display()))?;
        lock.lock()
            .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
        if let Some(d) = load_pin(&pin, repo, revision).files.get(file)
            && hash_file(&store.blob_path(d)).is_ok_and(|h| &h == d)
        {
            rec.files.insert(file.clone(), d.clone());
            out.push((file.clone(), store.blob_path(d)));
            continue;
        }
        download(cfg, &url, &part).map_err(|e| format!("cannot fetch {url}: {e}"))?;
        let want = sha256.get(file);
        let (digest, got) = hash_file_and_sha256(&part, want.is_some())
            .map_err(|e| format!("{}: {e}", part.display()))?;
        if let (Some(want), Some(got)) = (want, got)
            && &got != want
        {
            let _ = fs_err::remove_file(&part);
            return Err(format!(
                "{url}: the file served has sha256 {got}, but the preset pins {repo}@{revision}/{file} to {want}; \
                 nothing was stored (check HF_ENDPOINT, or pin a `revision` and `files` of your own to read other bytes)"
            ));
        }
        let blob = store.blob_path(&digest);
        if blob.is_file() && hash_file(&blob).is_ok_and(|h| h == digest) {
            let _ = fs_err::remove_file(&part);
        } else {
            if let Some(dir) = blob.parent() {
                fs_err::create_dir_all(dir).map_err(|e| e.to_string())?;
            }
            fs_err::rename(&part, &blob)
                .map_err(|e| format!("cannot move {} into the store: {e}", part.display()))?;
        }
        rec.files.insert(file.clone(), digest);
        save_pin(&pin, &rec)?;
        drop(lock);
        out.push((file.clone(), blob));
    }
    Ok(Some(out))
}

/// Downloads `url` into `part`, resuming from its current length when it exists.
fn download(cfg: &HubConfig, url: &str, part: &Path) -> Result<(), String> {
    if let Some(dir) = part.parent() {
        fs_err::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(30)))
        .build()
        .new_agent();
    let mut retried_from_scratch = false;
    loop {
        let have = fs_err::metadata(part).map_or(0, |m| m.len());
        let mut req = agent.get(url).header("Accept-Encoding", "identity");
        if let Some(t) = &cfg.token {
            req = req.header("Authorization", &format!("Bearer {t}"));
        }
        if have > 0 {
            req = req.header("Range", &format!("bytes={have}-"));
        }
        let mut resp = req.call().map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let (append, total) = match status {
            200 => (
                false,
                header("content-length").and_then(|l| l.parse::<u64>().ok()),
            ),
            206 => {
                // `bytes START-END/TOTAL`: it must start where the partial file ends.
                let cr = header("content-range").unwrap_or_default();
                let start = cr
                    .strip_prefix("bytes ")
                    .and_then(|r| r.split('-').next())
                    .and_then(|s| s.parse::<u64>().ok());
                if start != Some(have) {
                    return Err(format!(
                        "unexpected Content-Range {cr:?} for a resume at {have}"
                    ));
                }
                (true, cr.rsplit('/').next().and_then(|t| t.parse().ok()))
            }
            416 if !retried_from_scratch => {
                // The partial file is not a prefix the server recognizes: start over.
                let _ = fs_err::remove_file(part);
                retried_from_scratch = true;
                continue;
            }
            401 | 403 => {
                return Err(format!(
                    "HTTP {status}: access denied (set HF_TOKEN for gated or private datasets)"
                ));
            }
            other => return Err(format!("HTTP {other}")),
        };
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(part)
            .map_err(|e| format!("{}: {e}", part.display()))?;
        let mut reader = resp.body_mut().as_reader();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            // Bytes received so far stay in the partial file: the next attempt resumes.
            let n = reader
                .read(&mut buf)
                .map_err(|e| format!("interrupted ({e}); the next run resumes"))?;
            if n == 0 {
                break;
            }
            f.write_all(&buf[..n]).map_err(|e| e.to_string())?;
        }
        f.sync_all().map_err(|e| e.to_string())?;
        let len = fs_err::metadata(part).map_or(0, |m| m.len());
        if let Some(t) = total
            && len != t
        {
            return Err(format!("received {len} of {t} bytes; the next run resumes"));
        }
        return Ok(());
    }
}
