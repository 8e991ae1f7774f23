//! Node keys: blake3 over the canonical JSON encoding of a versioned `Serialize` struct holding
//! exactly what determines a node's output.
//!
//! Canonical means: the struct is turned into a `serde_json::Value` (whose objects are sorted
//! maps), then written compactly; floats are formatted by serde_json (shortest round-trip, no
//! locale); `None` is an explicit `null`. If the code changes what a node produces, bump that
//! node kind's version constant; if the encoding changes, bump [`KEY_SCHEMA`].

use serde::Serialize;
use serde_json::Value;

/// Version of the key encoding itself. Changing it invalidates every cached result.
pub const KEY_SCHEMA: u32 = 1;

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
