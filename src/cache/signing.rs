//! Signing keys and public keys of the remote cache.
//!
//! A machine signs the records it uploads with its ed25519 signing key, read from
//! `BENCH_CACHE_KEY` (the key file's text), `BENCH_CACHE_KEY_FILE` (a path), or the default file
//! `$XDG_CONFIG_HOME/bench/cache.key` (`~/.config/bench/cache.key`). The key never enters the
//! manifest, the store or a report. A public key is written `ed25519:<base64url, no padding>`,
//! as `[cache] trust` lists it.

use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier, VerifyingKey};
use thiserror::Error;

/// The environment variable holding a signing key's text (as `bench cache keygen` writes it).
pub const KEY_ENV: &str = "BENCH_CACHE_KEY";
/// The environment variable naming a signing key file.
pub const KEY_FILE_ENV: &str = "BENCH_CACHE_KEY_FILE";
/// The first word of a key file.
const KEY_MAGIC: &str = "bench-cache-key";
/// The prefix of a public key's text.
const PUBLIC_PREFIX: &str = "ed25519:";

#[derive(Debug, Error)]
pub enum KeyError {
    #[error("cannot read the signing key {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the signing key from {origin} is not a bench cache key (expected `{KEY_MAGIC} 1 <base64url>`, as `bench cache keygen` writes)"
    )]
    Malformed { origin: String },
    #[error("{path} exists already; remove it first or choose another path with --out")]
    Exists { path: PathBuf },
    #[error("cannot write the signing key {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no randomness for a new key: {0}")]
    Random(String),
}

/// A public key of the cache (a signer's identity).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PublicKey([u8; 32]);

impl PublicKey {
    /// Parses `ed25519:<base64url>`; the error says what is wrong.
    pub fn parse(text: &str) -> Result<PublicKey, String> {
        let b64 = text
            .strip_prefix(PUBLIC_PREFIX)
            .ok_or_else(|| format!("a public key starts with `{PUBLIC_PREFIX}`"))?;
        let bytes = URL_SAFE_NO_PAD
            .decode(b64)
            .map_err(|e| format!("its key is not base64url (no padding): {e}"))?;
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|b: Vec<u8>| format!("an ed25519 public key is 32 bytes, not {}", b.len()))?;
        VerifyingKey::from_bytes(&bytes)
            .map_err(|_| "it is not a valid ed25519 point".to_string())?;
        Ok(PublicKey(bytes))
    }

    /// The path-safe name of this key (its base64url), under which its entries are stored.
    pub fn id(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.0)
    }

    /// Verifies `signature` over `message`.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        let (Ok(key), Ok(sig)) = (
            VerifyingKey::from_bytes(&self.0),
            Signature::from_slice(signature),
        ) else {
            return false;
        };
        key.verify(message, &sig).is_ok()
    }
}

impl std::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{PUBLIC_PREFIX}{}", self.id())
    }
}

/// A machine's signing key. Its `Debug` shows the public half only.
pub struct Signer {
    key: SigningKey,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer({})", self.public())
    }
}

impl Signer {
    pub fn public(&self) -> PublicKey {
        PublicKey(self.key.verifying_key().to_bytes())
    }

    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        self.key.sign(message).to_bytes().to_vec()
    }

    fn from_text(text: &str, origin: &str) -> Result<Signer, KeyError> {
        let malformed = || KeyError::Malformed {
            origin: origin.to_string(),
        };
        let mut words = text.split_whitespace();
        if words.next() != Some(KEY_MAGIC) || words.next() != Some("1") {
            return Err(malformed());
        }
        let seed = words
            .next()
            .and_then(|w| URL_SAFE_NO_PAD.decode(w).ok())
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .ok_or_else(malformed)?;
        Ok(Signer {
            key: SigningKey::from_bytes(&seed),
        })
    }

    fn to_text(&self) -> String {
        format!(
            "{KEY_MAGIC} 1 {}\n# public key: {}\n",
            URL_SAFE_NO_PAD.encode(self.key.to_bytes()),
            self.public()
        )
    }
}

/// The default key file: `$XDG_CONFIG_HOME/bench/cache.key`, else `~/.config/bench/cache.key`.
pub fn default_key_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("bench").join("cache.key"))
}

/// This machine's signing key: `BENCH_CACHE_KEY`, else the file `BENCH_CACHE_KEY_FILE` names,
/// else the default file. `Ok(None)`: none is configured (results are then not uploaded).
pub fn load_signer() -> Result<Option<Signer>, KeyError> {
    if let Some(text) = std::env::var_os(KEY_ENV).filter(|v| !v.is_empty()) {
        return Signer::from_text(&text.to_string_lossy(), KEY_ENV).map(Some);
    }
    let (path, explicit) = match std::env::var_os(KEY_FILE_ENV).filter(|v| !v.is_empty()) {
        Some(p) => (PathBuf::from(p), true),
        None => match default_key_path() {
            Some(p) => (p, false),
            None => return Ok(None),
        },
    };
    match fs_err::read_to_string(&path) {
        Ok(text) => Signer::from_text(&text, &path.display().to_string()).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => Ok(None),
        Err(source) => Err(KeyError::Read { path, source }),
    }
}

/// The signing key in the file `path` (as `bench cache keygen` writes it).
pub fn read_key_file(path: &Path) -> Result<Signer, KeyError> {
    let text = fs_err::read_to_string(path).map_err(|source| KeyError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Signer::from_text(&text, &path.display().to_string())
}

/// Writes a new signing key to `path` (mode 0600, never over an existing file) and returns it.
pub fn generate_key_file(path: &Path) -> Result<Signer, KeyError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| KeyError::Random(e.to_string()))?;
    let signer = Signer {
        key: SigningKey::from_bytes(&seed),
    };
    let write_err = |source| KeyError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs_err::create_dir_all(dir).map_err(write_err)?;
    }
    // Created exclusively with its final mode: the key is never readable by others, and an
    // existing key is never replaced (a lost key cannot be recovered).
    let mut f = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(KeyError::Exists {
                path: path.to_path_buf(),
            });
        }
        Err(e) => return Err(write_err(e)),
    };
    f.write_all(signer.to_text().as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(write_err)?;
    Ok(signer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_reads_back_and_signs_what_its_public_key_verifies() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("k/cache.key");
        let s = generate_key_file(&path).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = fs_err::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let text = fs_err::read_to_string(&path).unwrap();
        let back = Signer::from_text(&text, "t").unwrap();
        assert_eq!(back.public(), s.public());
        let sig = s.sign(b"message");
        let public = PublicKey::parse(&s.public().to_string()).unwrap();
        assert!(public.verify(b"message", &sig));
        assert!(!public.verify(b"messagE", &sig));
        // Another key's signature does not verify.
        let other = generate_key_file(&d.path().join("other.key")).unwrap();
        assert!(!public.verify(b"message", &other.sign(b"message")));
        // Never over an existing key.
        assert!(matches!(
            generate_key_file(&path),
            Err(KeyError::Exists { .. })
        ));
    }

    #[test]
    fn bad_public_keys_say_what_is_wrong() {
        assert!(PublicKey::parse("abc").unwrap_err().contains("ed25519:"));
        assert!(
            PublicKey::parse("ed25519:!!")
                .unwrap_err()
                .contains("base64")
        );
        assert!(
            PublicKey::parse("ed25519:AAAA")
                .unwrap_err()
                .contains("32 bytes")
        );
        assert!(Signer::from_text("nope", "here").is_err());
    }
}
