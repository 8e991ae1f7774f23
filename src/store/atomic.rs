//! The one atomic-write helper: a temp file in the destination's directory, written, synced,
//! renamed over the destination, and the directory synced. A crash at any instant leaves either
//! the old file or the new one, never a torn one. Files are created with mode 0666 less the
//! umask (like any file a user writes), so a team can share a store.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically, creating parent directories.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs_err::create_dir_all(dir)?;
    use std::os::unix::fs::PermissionsExt;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{e} (in {})", dir.display())))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| {
        std::io::Error::new(e.error.kind(), format!("{} ({})", e.error, path.display()))
    })?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
