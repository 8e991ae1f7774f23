//! A signed entry of the remote cache: one node key's record, as the local store writes it
//! (header line with its checksum, then the JSON body), under a header line naming its signer
//! and carrying the signature.
//!
//! ```text
//! bench-cache-entry 1 ed25519:<signer> <signature, base64url>\n
//! bench-record 2 <blake3 of the body>\n
//! { ...the record... }
//! ```
//!
//! The signature covers the domain tag, the key and the record's exact bytes, so an entry
//! cannot be replayed under another key and no byte of the record can change unnoticed.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::signing::{PublicKey, Signer};

/// The first word of an entry.
pub const ENTRY_MAGIC: &str = "bench-cache-entry";
const ENTRY_VERSION: &str = "1";

/// A decoded entry whose signature verified against the key it names.
#[derive(Debug)]
pub struct Entry {
    pub signer: PublicKey,
    /// The record file's bytes (checked by the store before use).
    pub record: Vec<u8>,
}

fn message(key: &str, record: &[u8]) -> Vec<u8> {
    let mut m = format!("{ENTRY_MAGIC} {ENTRY_VERSION}\n{key}\n").into_bytes();
    m.extend_from_slice(record);
    m
}

impl Entry {
    /// The signed bytes of `record` (a record file) for `key`.
    pub fn encode(key: &str, record: &[u8], signer: &Signer) -> Vec<u8> {
        let sig = URL_SAFE_NO_PAD.encode(signer.sign(&message(key, record)));
        let mut out =
            format!("{ENTRY_MAGIC} {ENTRY_VERSION} {} {sig}\n", signer.public()).into_bytes();
        out.extend_from_slice(record);
        out
    }

    /// Decodes an entry for `key` and verifies its signature against the signer it names (the
    /// caller decides whether it trusts that signer). The error says what is wrong.
    pub fn decode(key: &str, bytes: &[u8]) -> Result<Entry, String> {
        let nl = memchr::memchr(b'\n', bytes).ok_or("it has no header line")?;
        let header = std::str::from_utf8(&bytes[..nl]).map_err(|_| "its header is not text")?;
        let record = &bytes[nl + 1..];
        let words: Vec<&str> = header.split(' ').collect();
        let [magic, version, signer, sig] = words[..] else {
            return Err("it is not a bench cache entry (bad header)".into());
        };
        if magic != ENTRY_MAGIC {
            return Err("it is not a bench cache entry (no header)".into());
        }
        if version != ENTRY_VERSION {
            return Err(format!(
                "its format version is {version}, this bench reads {ENTRY_VERSION}"
            ));
        }
        let signer = PublicKey::parse(signer).map_err(|e| format!("its signer: {e}"))?;
        let sig = URL_SAFE_NO_PAD
            .decode(sig)
            .map_err(|_| "its signature is not base64url")?;
        if !signer.verify(&message(key, record), &sig) {
            return Err(format!(
                "its signature does not verify against its signer {signer} (forged or edited)"
            ));
        }
        Ok(Entry {
            signer,
            record: record.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_verifies_and_any_edit_or_replay_does_not() {
        let d = tempfile::tempdir().unwrap();
        let s = super::super::signing::generate_key_file(&d.path().join("k")).unwrap();
        let bytes = Entry::encode("k1", b"bench-record 2 abc\n{\"x\":1}", &s);
        let e = Entry::decode("k1", &bytes).unwrap();
        assert_eq!(e.signer, s.public());
        assert_eq!(e.record, b"bench-record 2 abc\n{\"x\":1}");
        // Replayed under another key.
        assert!(
            Entry::decode("k2", &bytes)
                .unwrap_err()
                .contains("signature")
        );
        // One byte of the record flipped.
        let mut edited = bytes.clone();
        let last = edited.len() - 2;
        edited[last] ^= 1;
        assert!(
            Entry::decode("k1", &edited)
                .unwrap_err()
                .contains("signature")
        );
        // Not an entry at all.
        assert!(Entry::decode("k1", b"{}").is_err());
    }
}
