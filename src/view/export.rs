//! `bench view --static DIR`: the viewer as files that open from disk or any static host:
//! `index.html`, `app.js`, `app.css` and one `data/<path>.js` per page, log page and
//! trajectory page (the same documents the server answers with, with this machine's paths
//! made relative: [`Redactor`]). The export is written to a folder beside `DIR` and then put
//! in its place, so `DIR` holds exactly one export: pages of an earlier one (a comparison
//! exported before) are gone, and an export that fails leaves the earlier one whole. `DIR` must
//! be new, empty, or an earlier export; any other folder is refused, never emptied.

use std::path::{Path, PathBuf};

use super::ViewError;
use super::assets::{FILES, data_script};
use super::data::Viewer;
use super::redact::Redactor;

/// What an export wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    pub files: usize,
    pub bytes: u64,
}

/// The data file every export writes, and how it starts: what tells an earlier export.
const SIGNATURE_FILE: &str = "data/experiment.js";
const SIGNATURE: &str = "bench.put(\"experiment\",";

/// Writes the viewer of `viewer` to `dir`, replacing an earlier export there.
pub fn export(viewer: &Viewer, dir: &Path) -> Result<Exported, ViewError> {
    let dir = std::path::absolute(dir)?;
    let dir = fs_err::canonicalize(&dir).unwrap_or(dir);
    let previous = previous_export(&dir)?;
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Err(ViewError::NotAnExport { dir });
    };
    let name = name.to_string_lossy();
    let staging = parent.join(format!(".{name}.bench-view-new"));
    let old = parent.join(format!(".{name}.bench-view-old"));
    // Left by an export that died: bench's own names, never a user's folder.
    for stale in [&staging, &old] {
        if stale.exists() {
            fs_err::remove_dir_all(stale)?;
        }
    }
    fs_err::create_dir(&staging)?;
    if dir.is_dir() {
        fs_err::set_permissions(&staging, fs_err::metadata(&dir)?.permissions())?;
    }
    let written = write_all(viewer, &staging);
    let done = match written {
        Ok(done) => done,
        Err(e) => {
            let _ = fs_err::remove_dir_all(&staging);
            return Err(e);
        }
    };
    if previous {
        fs_err::rename(&dir, &old)?;
    }
    // An empty `dir` is replaced by the rename itself.
    fs_err::rename(&staging, &dir)?;
    if previous {
        fs_err::remove_dir_all(&old)?;
    }
    Ok(done)
}

/// Whether `dir` holds an earlier export (true), is new or empty (false), or is a folder that
/// is not an export (refused).
fn previous_export(dir: &Path) -> Result<bool, ViewError> {
    let refuse = || ViewError::NotAnExport {
        dir: dir.to_path_buf(),
    };
    if !dir.exists() {
        return Ok(false);
    }
    if !dir.is_dir() {
        return Err(refuse());
    }
    if fs_err::read_dir(dir)?.next().is_none() {
        return Ok(false);
    }
    let mut head = [0u8; SIGNATURE.len()];
    let signed = fs_err::File::open(dir.join(SIGNATURE_FILE))
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| head == SIGNATURE.as_bytes());
    if signed && dir.join("index.html").is_file() {
        Ok(true)
    } else {
        Err(refuse())
    }
}

/// Writes every file of the export under `dir`.
fn write_all(viewer: &Viewer, dir: &Path) -> Result<Exported, ViewError> {
    let places: Vec<(&Path, &Path)> = viewer
        .experiments()
        .into_iter()
        .map(|e| (e.manifest.dir.as_path(), e.store.root()))
        .collect();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let redactor = Redactor::new(&places, home.as_deref());
    let mut files = 0;
    let mut bytes = 0u64;
    let mut write = |rel: &str, content: &[u8]| -> Result<(), ViewError> {
        let path = dir.join(rel);
        crate::store::write_atomic(&path, content).map_err(|source| ViewError::Write {
            path: path.clone(),
            source,
        })?;
        files += 1;
        bytes += content.len() as u64;
        Ok(())
    };
    for (name, _, content) in FILES {
        write(name, content.as_bytes())?;
    }
    for path in viewer.all_paths() {
        if let Some(data) = viewer.data(&path) {
            let data = redactor.value(data);
            write(
                &format!("data/{path}.js"),
                data_script(&path, &data).as_bytes(),
            )?;
        }
    }
    Ok(Exported { files, bytes })
}
