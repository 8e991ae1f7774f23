//! Content-addressed bytes: a value that enters a key by its blake3 digest while its reader
//! holds the bytes.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Bytes that enter a key by their blake3 digest.
#[derive(Clone)]
pub struct Blob {
    digest: String,
    /// `None` only for a blob read back from its digest (a stored job): never executed.
    bytes: Option<Arc<Vec<u8>>>,
}

impl Blob {
    pub fn new(bytes: Vec<u8>) -> Blob {
        Blob {
            digest: crate::key::digest(&bytes),
            bytes: Some(Arc::new(bytes)),
        }
    }

    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The content. Jobs built for execution always hold it.
    pub fn bytes(&self) -> &[u8] {
        self.bytes
            .as_deref()
            .expect("jobs built for execution hold their content")
    }
}

impl PartialEq for Blob {
    fn eq(&self, other: &Self) -> bool {
        self.digest == other.digest
    }
}

impl fmt::Debug for Blob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Blob({})", self.digest)
    }
}

impl Serialize for Blob {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.digest)
    }
}

impl<'de> Deserialize<'de> for Blob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Blob {
            digest: String::deserialize(d)?,
            bytes: None,
        })
    }
}
