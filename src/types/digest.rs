//! A checked content digest: 64 lowercase hex characters (a blake3 hash), the only form in
//! which a digest read from anywhere (a record, a remote entry, an index, a URL) may become part
//! of a path. A string is a digest only once [`Digest::parse`] has said so; every store path is
//! built from a `Digest`, never from a bare string, so a record that names `ab/../../etc/x` as a
//! blob cannot make bench read, write or delete anything outside the store.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Length of a blake3 digest in hex.
pub const DIGEST_LEN: usize = 64;

/// A blake3 digest as 64 lowercase hex characters, checked on construction.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest(String);

/// Why a string is not a digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{shown}` is not a digest (a digest is {DIGEST_LEN} lowercase hex characters): {why}")]
pub struct BadDigest {
    /// The string, cut to a readable length and with control characters escaped.
    pub shown: String,
    pub why: &'static str,
}

impl Digest {
    /// `s` as a digest, if it is exactly 64 lowercase hex characters.
    pub fn parse(s: &str) -> Result<Digest, BadDigest> {
        Digest::check(s).map(|()| Digest(s.to_string()))
    }

    /// Whether `s` is a digest ([`Digest::parse`] without the copy).
    pub fn check(s: &str) -> Result<(), BadDigest> {
        let bad = |why| BadDigest {
            shown: s.chars().take(80).flat_map(char::escape_default).collect(),
            why,
        };
        if s.len() != DIGEST_LEN {
            return Err(bad("wrong length"));
        }
        if !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(bad("a character that is not lowercase hex"));
        }
        Ok(())
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(crate::key::digest(bytes))
    }

    /// The digest a blake3 hasher finished with.
    pub fn from_hash(hash: &blake3::Hash) -> Digest {
        Digest(hash.to_hex().to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }

    /// The first two characters (the shard directory) and the rest.
    pub fn split(&self) -> (&str, &str) {
        self.0.split_at(2)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Digest {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for Digest {
    type Err = BadDigest;
    fn from_str(s: &str) -> Result<Digest, BadDigest> {
        Digest::parse(s)
    }
}

impl PartialEq<str> for Digest {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Digest {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for Digest {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Digest, D::Error> {
        let s = String::deserialize(d)?;
        Digest::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_64_lowercase_hex_characters_are_a_digest() {
        let good = crate::key::digest(b"x");
        assert_eq!(Digest::parse(&good).unwrap().as_str(), good);
        assert_eq!(Digest::of(b"x"), good);
        for bad in [
            String::new(),
            "ab".to_string(),
            format!("ab/tmp/victim{}", &good[..51]),
            format!("ab/../../{}", &good[..55]),
            good.to_uppercase(),
            format!("{}g", &good[..63]),
            format!("{good}0"),
            format!("{}\n", &good[..63]),
            format!("/{}", &good[..63]),
            format!("{}é", &good[..62]),
        ] {
            let e = Digest::parse(&bad).unwrap_err();
            assert!(e.to_string().contains("is not a digest"), "{e}");
        }
        // Escaped and cut when shown.
        let e = Digest::parse(&format!("{}\n", &good[..63])).unwrap_err();
        assert!(e.shown.ends_with("\\n"), "{}", e.shown);
    }

    #[test]
    fn a_digest_travels_as_its_string_and_is_checked_on_the_way_in() {
        let d = Digest::of(b"y");
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(json, format!("\"{d}\""));
        assert_eq!(serde_json::from_str::<Digest>(&json).unwrap(), d);
        let e = serde_json::from_str::<Digest>("\"ab/tmp/victim\"").unwrap_err();
        assert!(e.to_string().contains("is not a digest"), "{e}");
    }
}
