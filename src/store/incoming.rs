//! A blob arriving in pieces (a download): written to a temp file in the store's `objects/`
//! while it is hashed and counted, refused as soon as it grows past its cap, and renamed into
//! place only once its content hashes to the digest it was asked for. Memory stays at one
//! piece whatever the blob's size; a refused or failed blob leaves nothing behind.

use std::io::Write;

use super::layout::{Store, StoreError};
use crate::types::Digest;

/// Why an incoming blob was not stored.
#[derive(Debug)]
pub enum IncomingError {
    /// It grew past the cap (bytes seen so far, the cap).
    TooLarge {
        seen: u64,
        cap: u64,
    },
    /// Its content hashes to another digest.
    Mismatch {
        actual: Digest,
    },
    Store(StoreError),
}

impl std::fmt::Display for IncomingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IncomingError::TooLarge { seen, cap } => write!(
                f,
                "it is larger than the cap of {} (refused after {}; `[cache] max_object_size` sets the cap)",
                bytesize::ByteSize(*cap),
                bytesize::ByteSize(*seen)
            ),
            IncomingError::Mismatch { actual } => write!(
                f,
                "it does not match its digest (it hashes to {}): tampered or torn",
                &actual.as_str()[..12]
            ),
            IncomingError::Store(e) => write!(f, "cannot store it: {e}"),
        }
    }
}

/// A blob being received for a digest.
pub struct IncomingBlob<'a> {
    store: &'a Store,
    digest: Digest,
    cap: u64,
    seen: u64,
    hasher: blake3::Hasher,
    file: tempfile::NamedTempFile,
}

impl Store {
    /// Starts receiving the blob `digest`, refused past `cap` bytes.
    pub fn incoming_blob(&self, digest: &Digest, cap: u64) -> Result<IncomingBlob<'_>, StoreError> {
        let dir = self.blob_path(digest);
        let dir = dir.parent().expect("a blob path has a shard directory");
        fs_err::create_dir_all(dir)?;
        use std::os::unix::fs::PermissionsExt;
        let file = tempfile::Builder::new()
            .prefix(".tmp-")
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(dir)?;
        Ok(IncomingBlob {
            store: self,
            digest: digest.clone(),
            cap,
            seen: 0,
            hasher: blake3::Hasher::new(),
            file,
        })
    }
}

impl IncomingBlob<'_> {
    /// Takes the next piece. Past the cap, the blob is refused (and its temp file removed when
    /// this is dropped).
    pub fn write(&mut self, piece: &[u8]) -> Result<(), IncomingError> {
        self.seen += piece.len() as u64;
        if self.seen > self.cap {
            return Err(IncomingError::TooLarge {
                seen: self.seen,
                cap: self.cap,
            });
        }
        self.hasher.update(piece);
        self.file
            .write_all(piece)
            .map_err(|e| IncomingError::Store(e.into()))
    }

    /// Verifies the content against the digest and commits it atomically. Returns its size.
    pub fn finish(mut self) -> Result<u64, IncomingError> {
        let actual = Digest::from_hash(&self.hasher.finalize());
        if actual != self.digest {
            return Err(IncomingError::Mismatch { actual });
        }
        let io = |e: std::io::Error| IncomingError::Store(e.into());
        self.file.flush().map_err(io)?;
        self.file.as_file().sync_all().map_err(io)?;
        let path = self.store.blob_path(&self.digest);
        self.file.persist(&path).map_err(|e| io(e.error))?;
        if let Some(dir) = path.parent()
            && let Ok(d) = fs_err::File::open(dir)
        {
            let _ = d.sync_all();
        }
        Ok(self.seen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blob_arrives_in_pieces_and_is_stored_only_when_whole_and_right() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(d.path()).unwrap();
        let data = b"hello, pieces".repeat(1000);
        let digest = Digest::of(&data);
        let mut inc = s.incoming_blob(&digest, 1 << 20).unwrap();
        for piece in data.chunks(777) {
            inc.write(piece).unwrap();
        }
        assert_eq!(inc.finish().unwrap(), data.len() as u64);
        assert_eq!(s.get_blob(&digest).unwrap(), data);

        // Wrong content: refused, nothing stored, no temp file left.
        let other = Digest::of(b"other");
        let mut inc = s.incoming_blob(&other, 1 << 20).unwrap();
        inc.write(b"not other").unwrap();
        assert!(matches!(inc.finish(), Err(IncomingError::Mismatch { .. })));
        assert!(!s.has_blob(&other));

        // Past the cap: refused at the piece that crosses it.
        let big = vec![7u8; 5000];
        let digest = Digest::of(&big);
        let mut inc = s.incoming_blob(&digest, 4096).unwrap();
        inc.write(&big[..4000]).unwrap();
        let e = inc.write(&big[4000..]).unwrap_err();
        assert!(e.to_string().contains("max_object_size"), "{e}");
        drop(inc);
        assert!(!s.has_blob(&digest));
        let shard = s.blob_path(&digest).parent().unwrap().to_path_buf();
        let left: Vec<_> = fs_err::read_dir(shard).unwrap().flatten().collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
