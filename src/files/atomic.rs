//! The one atomic-write helper: a temp file in the destination's directory, written, synced,
//! renamed over the destination, and the directory synced. A crash at any instant leaves either
//! the old file or the new one, never a torn one. Files are created with mode 0666 less the
//! umask (like any file a user writes), so a team can share a store.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically, creating parent directories.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// Writes what `write` writes to `path` atomically, creating parent directories: for content
/// made as it is written (a big record), so it is never held whole in memory.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs_err::create_dir_all(dir)?;
    use std::os::unix::fs::PermissionsExt;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{e} (in {})", dir.display())))?;
    let mut out = std::io::BufWriter::new(tmp.as_file_mut());
    write(&mut out)?;
    out.flush()?;
    drop(out);
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| {
        std::io::Error::new(e.error.kind(), format!("{} ({})", e.error, path.display()))
    })?;
    if let Ok(d) = fs_err::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Removes the temp files [`write_atomic`] leaves when its process dies mid-write (`.tmp-*`
/// regular files) anywhere under `dir`, links not followed: for directories outside the store
/// that bench writes atomically (a report's output directory). Call it holding the apply lock,
/// so no live writer's temp file is taken. Returns how many it removed.
pub fn sweep_temp_files_under(dir: &Path) -> usize {
    let mut removed = 0;
    for e in fs_err::read_dir(dir).into_iter().flatten().flatten() {
        match e.file_type() {
            Ok(t) if t.is_dir() => removed += sweep_temp_files_under(&e.path()),
            Ok(t)
                if t.is_file()
                    && e.file_name().to_string_lossy().starts_with(".tmp-")
                    && fs_err::remove_file(e.path()).is_ok() =>
            {
                removed += 1;
            }
            _ => {}
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_files_are_swept_at_any_depth_and_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        let deep = d.path().join("artifacts/team/task");
        fs_err::create_dir_all(&deep).unwrap();
        fs_err::write(deep.join(".tmp-abc"), b"torn").unwrap();
        fs_err::write(d.path().join(".tmp-def"), b"torn").unwrap();
        fs_err::write(deep.join("patch.diff"), b"kept").unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs_err::write(outside.path().join(".tmp-x"), b"not ours").unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("link")).unwrap();
        assert_eq!(sweep_temp_files_under(d.path()), 2);
        assert!(deep.join("patch.diff").exists());
        assert!(
            outside.path().join(".tmp-x").exists(),
            "a link is not followed"
        );
    }
}
