//! `bench view --static DIR`: the viewer as files that open from disk or any static host:
//! `index.html`, `app.js`, `app.css` and one `data/<path>.js` per page, log page and
//! trajectory page (the same documents the server answers with, with this machine's paths
//! made relative: [`Redactor`]). Every file is written atomically; files of an earlier export
//! that this one does not write are left alone.

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

/// Writes the viewer of `viewer` to `dir`.
pub fn export(viewer: &Viewer, dir: &Path) -> Result<Exported, ViewError> {
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
