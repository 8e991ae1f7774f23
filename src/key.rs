//! Keys and digests: blake3 over canonical JSON.
//!
//! - A node's key ([`digest_json`], through `jobs::Job::key`) hashes its job's compact JSON as
//!   serde writes it: struct fields in declaration order, maps sorted (bench keys them by
//!   `BTreeMap`), content-addressed parts by their digest, floats in serde_json's shortest
//!   round-trip form (no locale), `None` as an explicit `null` except where a field is skipped
//!   when empty (`skip_serializing_if`).
//! - A content digest ([`digest_of`], [`key_of`]) first turns the value into a
//!   `serde_json::Value`, whose objects are sorted maps, then hashes its compact JSON: field
//!   order does not matter.
//!
//! If the code changes what a node produces, bump that node kind's implementation version
//! (`jobs/versions.rs`); if this encoding changes, bump [`KEY_SCHEMA`].

use serde::Serialize;
use serde_json::Value;

/// Version of the key encoding itself, in every job (`schema`). Changing it invalidates every
/// cached result.
pub const KEY_SCHEMA: u32 = 2;

/// A computed key and the inputs it was computed from (kept for `plan --explain`).
#[derive(Debug, Clone)]
pub struct Keyed {
    pub key: String,
    pub inputs: Value,
}

/// Hashes `inputs` canonically.
pub fn key_of<T: Serialize>(inputs: &T) -> Keyed {
    let value = serde_json::to_value(inputs).expect("key inputs serialize as JSON");
    let bytes = serde_json::to_vec(&value).expect("JSON values serialize");
    Keyed {
        key: blake3::hash(&bytes).to_hex().to_string(),
        inputs: value,
    }
}

/// blake3 of `value`'s compact JSON (the bytes `serde_json::to_vec` gives), written straight
/// into the hasher: the same digest as `digest(&to_vec(value))` without the buffer.
pub fn digest_json<T: Serialize + ?Sized>(value: &T) -> String {
    use std::io::Write;
    let mut h = blake3::Hasher::new();
    {
        // serde_json writes in small pieces; the hasher wants large ones.
        let mut w = std::io::BufWriter::with_capacity(64 * 1024, &mut h);
        serde_json::to_writer(&mut w, value).expect("key inputs serialize as JSON");
        w.flush().expect("hashing does not fail");
    }
    h.finalize().to_hex().to_string()
}

/// blake3 of bytes, as lowercase hex.
pub fn digest(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// The bytes [`digest_of`] hashes: a value's content in canonical form (what a shipped job's
/// parts are stored as, so each is stored under the digest its key already uses).
pub fn canonical_bytes<T: Serialize>(value: &T) -> Vec<u8> {
    let value = serde_json::to_value(value).expect("key inputs serialize as JSON");
    serde_json::to_vec(&value).expect("JSON values serialize")
}

/// The canonical digest of any serializable value.
pub fn digest_of<T: Serialize>(value: &T) -> String {
    key_of(value).key
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_streamed_digest_is_the_digest_of_the_bytes() {
        let v = serde_json::json!({"b": [1, 2.5, null], "a": "x\"y\u{1}", "c": {"d": true}});
        assert_eq!(digest_json(&v), digest(&serde_json::to_vec(&v).unwrap()));
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_regardless_of_field_order() {
        let a = key_of(&json!({"a": 1, "b": [1, 2], "c": null}));
        let b = key_of(&json!({"c": null, "b": [1, 2], "a": 1}));
        assert_eq!(a.key, b.key);
        let c = key_of(&json!({"c": null, "b": [2, 1], "a": 1}));
        assert_ne!(a.key, c.key);
    }
}
