//! The store's record of the task images bench pulled (`images.json`): by image ID, the
//! references it was pulled as, its registry digest, when it was pulled and when an apply last
//! used it. `bench gc --images --pulled` removes only images recorded here (never one the
//! user pulled), least recently used first. Not the pulls (`backend/pull.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::layout::{Store, StoreError};

/// The schema of `images.json`.
pub const IMAGES_SCHEMA: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PulledImage {
    pub references: BTreeSet<String>,
    pub registry: String,
    pub digest: String,
    pub pulled_at: jiff::Timestamp,
    pub last_used: jiff::Timestamp,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PulledImages {
    pub schema: u32,
    /// Image ID (`sha256:...`) -> what bench knows of it.
    pub images: BTreeMap<String, PulledImage>,
}

impl Default for PulledImages {
    fn default() -> Self {
        PulledImages {
            schema: IMAGES_SCHEMA,
            images: BTreeMap::new(),
        }
    }
}

impl PulledImages {
    /// Records a pull of `id` as `reference` (now).
    pub fn pulled(&mut self, id: &str, reference: &str, registry: &str, digest: &str) {
        let now = jiff::Timestamp::now();
        let e = self
            .images
            .entry(id.to_string())
            .or_insert_with(|| PulledImage {
                references: BTreeSet::new(),
                registry: registry.to_string(),
                digest: digest.to_string(),
                pulled_at: now,
                last_used: now,
            });
        e.references.insert(reference.to_string());
        e.last_used = now;
    }

    /// Marks the recorded images among `ids` used now; whether anything changed.
    pub fn used<'a>(&mut self, ids: impl IntoIterator<Item = &'a String>) -> bool {
        let now = jiff::Timestamp::now();
        let mut changed = false;
        for id in ids {
            if let Some(e) = self.images.get_mut(id) {
                e.last_used = now;
                changed = true;
            }
        }
        changed
    }

    /// The recorded images, least recently used first (ties by ID).
    pub fn by_last_use(&self) -> Vec<(&String, &PulledImage)> {
        let mut v: Vec<_> = self.images.iter().collect();
        v.sort_by(|a, b| a.1.last_used.cmp(&b.1.last_used).then(a.0.cmp(b.0)));
        v
    }
}

impl Store {
    fn images_path(&self) -> PathBuf {
        self.root().join("images.json")
    }

    /// The record (empty when bench never pulled into this store). Unreadable is an error.
    pub fn pulled_images(&self) -> Result<PulledImages, StoreError> {
        let path = self.images_path();
        match fs_err::read(&path) {
            Ok(b) => {
                serde_json::from_slice(&b).map_err(|source| StoreError::BadRecord { path, source })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(PulledImages::default()),
            Err(e) => Err(StoreError::Io(std::io::Error::new(
                e.kind(),
                format!("{e} ({})", path.display()),
            ))),
        }
    }

    /// Writes the record atomically (the caller holds the store's lock).
    pub fn save_pulled_images(&self, images: &PulledImages) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(images).expect("the record serializes");
        super::write_atomic(&self.images_path(), &bytes)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_lru_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.pulled_images().unwrap(), PulledImages::default());
        let mut r = PulledImages::default();
        r.pulled("sha256:b", "reg/b:1", "reg", "sha256:db");
        std::thread::sleep(std::time::Duration::from_millis(5));
        r.pulled("sha256:a", "reg/a:1", "reg", "sha256:da");
        store.save_pulled_images(&r).unwrap();
        let back = store.pulled_images().unwrap();
        assert_eq!(back, r);
        let order: Vec<&str> = back
            .by_last_use()
            .iter()
            .map(|(id, _)| id.as_str())
            .collect();
        assert_eq!(order, ["sha256:b", "sha256:a"]);
        let mut back = back;
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(back.used([&"sha256:b".to_string()]));
        let order: Vec<&str> = back
            .by_last_use()
            .iter()
            .map(|(id, _)| id.as_str())
            .collect();
        assert_eq!(order, ["sha256:a", "sha256:b"]);
        fs_err::write(dir.path().join("images.json"), "{").unwrap();
        assert!(store.pulled_images().is_err());
    }
}
