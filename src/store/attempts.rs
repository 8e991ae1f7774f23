//! Attempts: the earlier results of a node that `bench apply --rerun` ran again.
//!
//! ```text
//! .bench/attempts/<key>.json   the key's earlier attempts, oldest first
//! ```
//!
//! A node's key names its job; its record (`actions/`) is the latest attempt, the one every
//! reader (apply, plan, status, report, view) uses. Before a rerun replaces that record, the
//! record is filed here with the pair's outcome at that time and what replaced it (the run,
//! the selection, the deadline), so no attempt is ever lost and the report can give the
//! first-attempt figures beside the counting ones. Attempts are outside every key: nothing is
//! keyed by them, and a remote cache never receives them.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::layout::{Store, StoreError};
use super::records::ActionRecord;
use crate::types::Digest;

/// Version of the attempts file's shape.
pub const ATTEMPTS_SCHEMA: u32 = 1;

/// One key's earlier attempts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attempts {
    pub schema: u32,
    pub key: String,
    /// Oldest first; the key's record in `actions/` is the attempt after the last of these.
    pub earlier: Vec<Attempt>,
}

/// An attempt that a rerun replaced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attempt {
    /// Its record as it was stored.
    pub record: ActionRecord,
    /// The pair's outcome then, as the report words it: `resolved`, `unresolved`,
    /// `timed out`, `errored` (the agent crashed), `not graded`.
    pub outcome: String,
    /// The key of its grade, where it was graded (that record stays in the store).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grade_key: Option<String>,
    /// What replaced it.
    pub replaced_by: Replacement,
}

/// The rerun that replaced an attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replacement {
    /// The apply that ran it.
    pub run_id: String,
    /// What `--rerun` selected the pair by (`timed-out`, `errored`, `failed`, or a team).
    pub selected_by: String,
    /// The solve deadline the new attempt ran under, in milliseconds.
    pub timeout_ms: u64,
    /// When it started (RFC 3339).
    pub at: String,
}

impl Store {
    fn attempts_dir(&self) -> PathBuf {
        self.root().join("attempts")
    }

    fn attempts_path(&self, key: &Digest) -> PathBuf {
        self.attempts_dir().join(format!("{key}.json"))
    }

    /// The keys that have earlier attempts (one directory listing).
    pub fn attempt_keys(&self) -> BTreeSet<String> {
        let mut keys = BTreeSet::new();
        for e in fs_err::read_dir(self.attempts_dir())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(d) = name
                .strip_suffix(".json")
                .and_then(|s| Digest::parse(s).ok())
            {
                keys.insert(d.into_string());
            }
        }
        keys
    }

    /// The earlier attempts of `key` that a completed rerun replaced (`None`: it has none).
    /// An attempt whose rerun never finished (the apply was killed) is still the key's record:
    /// it is not counted as an earlier one. A file that is not a valid one is an error naming
    /// it.
    pub fn attempts(&self, key: &str) -> Result<Option<Attempts>, StoreError> {
        match self.get_action_light(key) {
            super::Lookup::Hit(current) => self.attempts_before(&current),
            _ => self.attempts_since(key, None),
        }
    }

    /// [`Store::attempts`] of `current`'s key, with `current` its record as already read.
    pub fn attempts_before(&self, current: &ActionRecord) -> Result<Option<Attempts>, StoreError> {
        self.attempts_since(&current.key, Some(&current.started_at))
    }

    /// The filed attempts of `key` but one whose start is `current` (the key's record: a
    /// rerun that never replaced it).
    fn attempts_since(
        &self,
        key: &str,
        current: Option<&str>,
    ) -> Result<Option<Attempts>, StoreError> {
        let Some(mut all) = self.filed_attempts(key)? else {
            return Ok(None);
        };
        if current.is_some_and(|c| all.earlier.last().is_some_and(|a| a.record.started_at == c)) {
            all.earlier.pop();
        }
        Ok((!all.earlier.is_empty()).then_some(all))
    }

    /// The attempts file of `key` as filed, verified.
    pub(super) fn filed_attempts(&self, key: &str) -> Result<Option<Attempts>, StoreError> {
        let digest = Digest::parse(key)
            .map_err(|e| StoreError::Io(std::io::Error::other(format!("attempts: {e}"))))?;
        let path = self.attempts_path(&digest);
        let bytes = match fs_err::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let bad = |why: String| {
            StoreError::Io(std::io::Error::other(format!(
                "attempts file {} is not valid: {why}; remove it to forget those attempts",
                path.display()
            )))
        };
        let all: Attempts = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
        if all.schema != ATTEMPTS_SCHEMA {
            return Err(bad(format!(
                "its format version is {}, this bench reads {ATTEMPTS_SCHEMA}",
                all.schema
            )));
        }
        if all.key != key {
            return Err(bad(format!(
                "it holds the attempts of another key ({})",
                all.key
            )));
        }
        for a in &all.earlier {
            if a.record.key != key {
                return Err(bad(format!(
                    "an attempt holds the record of another key ({})",
                    a.record.key
                )));
            }
            a.record
                .check_blob_refs()
                .map_err(|e| bad(format!("an attempt names a blob by {e}")))?;
            if let Some(g) = &a.grade_key {
                Digest::parse(g).map_err(|e| bad(format!("a grade key {e}")))?;
            }
        }
        Ok(Some(all))
    }

    /// Files `attempt` as the latest earlier attempt of its key, before a rerun replaces the
    /// key's record (atomically). Filing the same record again (a rerun that was killed, run
    /// again) replaces its entry instead of adding one.
    pub fn file_attempt(&self, attempt: Attempt) -> Result<(), StoreError> {
        let key = attempt.record.key.clone();
        let mut all = self.filed_attempts(&key)?.unwrap_or(Attempts {
            schema: ATTEMPTS_SCHEMA,
            key: key.clone(),
            earlier: Vec::new(),
        });
        match all.earlier.last_mut() {
            Some(last) if last.record.started_at == attempt.record.started_at => *last = attempt,
            _ => all.earlier.push(attempt),
        }
        let digest = Digest::parse(&key)
            .map_err(|e| StoreError::Io(std::io::Error::other(format!("attempts: {e}"))))?;
        let body = serde_json::to_vec_pretty(&all).expect("attempts serialize");
        super::write_atomic(&self.attempts_path(&digest), &body)?;
        Ok(())
    }

    /// Every attempts file's key and stat (`None`: it could not be statted), by key: what the
    /// no-op memo checks (a report reads them).
    pub fn attempts_stamps(&self) -> Vec<(String, Option<crate::files::FileStamp>)> {
        self.attempt_keys()
            .into_iter()
            .map(|k| {
                let stamp = Digest::parse(&k)
                    .ok()
                    .and_then(|d| fs_err::symlink_metadata(self.attempts_path(&d)).ok())
                    .map(|m| crate::files::FileStamp::of(&m));
                (k, stamp)
            })
            .collect()
    }

    /// Removes `key`'s attempts (gc).
    pub fn remove_attempts(&self, key: &str) -> std::io::Result<()> {
        let digest = Digest::parse(key).map_err(std::io::Error::other)?;
        match fs_err::remove_file(self.attempts_path(&digest)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Output, RECORD_SCHEMA};

    fn record(key: &str, started_at: &str) -> ActionRecord {
        ActionRecord {
            schema: RECORD_SCHEMA,
            key: key.to_string(),
            job: serde_json::Value::Null,
            output: Output::Sample(crate::jobs::SampleOutput { tasks: vec![] }),
            blobs: Default::default(),
            bench_version: "test".into(),
            started_at: started_at.into(),
            duration_ms: 1,
        }
    }

    fn attempt(rec: ActionRecord) -> Attempt {
        Attempt {
            record: rec,
            outcome: "timed out".into(),
            grade_key: None,
            replaced_by: Replacement {
                run_id: "r".into(),
                selected_by: "timed-out".into(),
                timeout_ms: 5000,
                at: "t".into(),
            },
        }
    }

    #[test]
    fn an_attempt_counts_as_earlier_only_once_its_rerun_replaced_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = crate::key::digest(b"k");
        let first = record(&key, "2026-01-01T00:00:00Z");
        store.put_action(&first).unwrap();
        assert_eq!(store.attempts(&key).unwrap(), None);
        // Filed, but the rerun has not replaced the record yet (or was killed): not earlier.
        store.file_attempt(attempt(first.clone())).unwrap();
        assert_eq!(store.attempts(&key).unwrap(), None);
        // Filed again (a second try of the killed rerun): still one entry.
        store.file_attempt(attempt(first.clone())).unwrap();
        store
            .put_action(&record(&key, "2026-01-02T00:00:00Z"))
            .unwrap();
        let got = store.attempts(&key).unwrap().unwrap();
        assert_eq!(got.earlier.len(), 1);
        assert_eq!(got.earlier[0].record, first);
        assert_eq!(store.attempt_keys(), BTreeSet::from([key.clone()]));
        store.remove_attempts(&key).unwrap();
        assert!(store.attempt_keys().is_empty());
    }

    #[test]
    fn a_filed_attempt_of_another_key_or_naming_a_path_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = crate::key::digest(b"k");
        let other = crate::key::digest(b"other");
        let path = dir.path().join("attempts").join(format!("{key}.json"));
        let mut all = Attempts {
            schema: ATTEMPTS_SCHEMA,
            key: key.clone(),
            earlier: vec![attempt(record(&other, "a"))],
        };
        crate::store::write_atomic(&path, &serde_json::to_vec(&all).unwrap()).unwrap();
        let e = store.attempts(&key).unwrap_err().to_string();
        assert!(
            e.contains("another key") && e.contains(&path.display().to_string()),
            "{e}"
        );
        let mut rec = record(&key, "a");
        rec.blobs.insert("log".into(), "../../etc/passwd".into());
        all.earlier = vec![attempt(rec)];
        crate::store::write_atomic(&path, &serde_json::to_vec(&all).unwrap()).unwrap();
        let e = store.attempts(&key).unwrap_err().to_string();
        assert!(e.contains("names a blob"), "{e}");
        crate::store::write_atomic(&path, b"{").unwrap();
        assert!(store.attempts(&key).is_err());
    }
}
