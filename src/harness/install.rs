//! What a harness's `install_files` put into the install container: every file under the listed
//! files and directories, with its mode, in a stable order, and the digest of all of it (part of
//! the agent image's tag and of docker solve keys).

use std::path::Path;

/// One file for the install container: path relative to `/tmp/bench-install`, bytes, mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallFile {
    pub path: String,
    pub bytes: Vec<u8>,
    pub mode: u32,
}

/// Reads `paths` (files or directories): a file `x/claude` becomes `claude`; a directory
/// `tools/` contributes `tools/...` for every file below it. Sorted by path; symlinks are
/// followed; an unreadable path is an error naming it.
pub fn install_files(paths: &[impl AsRef<Path>]) -> Result<Vec<InstallFile>, String> {
    let mut out = Vec::new();
    for p in paths {
        let p = p.as_ref();
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| format!("install file {} has no file name", p.display()))?;
        collect(p, &name, &mut out)?;
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    if let Some(w) = out.windows(2).find(|w| w[0].path == w[1].path) {
        return Err(format!(
            "two install files would both be /tmp/bench-install/{}",
            w[0].path
        ));
    }
    Ok(out)
}

fn collect(p: &Path, rel: &str, out: &mut Vec<InstallFile>) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = fs_err::metadata(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    if meta.is_dir() {
        let mut entries: Vec<_> = fs_err::read_dir(p)
            .map_err(|e| format!("cannot read {}: {e}", p.display()))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        entries.sort();
        for e in entries {
            let name = e
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            collect(&e, &format!("{rel}/{name}"), out)?;
        }
    } else {
        let limit = crate::tasks::FileLimits::current()?.repo_file;
        let bytes =
            crate::regular_file::read_bytes(p, limit).map_err(|e| format!("cannot read {e}"))?;
        out.push(InstallFile {
            path: rel.to_string(),
            bytes,
            // Only the executable bits matter to an install; keep keys independent of umask.
            mode: if meta.permissions().mode() & 0o111 != 0 {
                0o755
            } else {
                0o644
            },
        });
    }
    Ok(())
}

/// The digest of the files: path, mode and content digest of each, in order.
pub fn files_digest(files: &[InstallFile]) -> String {
    let listing: Vec<(String, u32, String)> = files
        .iter()
        .map(|f| (f.path.clone(), f.mode, crate::key::digest(&f.bytes)))
        .collect();
    crate::key::digest_of(&listing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_directories_become_sorted_relative_paths() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let tool = d.path().join("tool");
        fs_err::create_dir_all(tool.join("lib")).unwrap();
        fs_err::write(tool.join("lib/b.py"), "b").unwrap();
        fs_err::write(tool.join("a.sh"), "a").unwrap();
        fs_err::set_permissions(tool.join("a.sh"), std::fs::Permissions::from_mode(0o700)).unwrap();
        let cli = d.path().join("claude");
        fs_err::write(&cli, "c").unwrap();
        let files = install_files(&[tool.clone(), cli.clone()]).unwrap();
        let listed: Vec<(&str, u32)> = files.iter().map(|f| (f.path.as_str(), f.mode)).collect();
        assert_eq!(
            listed,
            [
                ("claude", 0o644),
                ("tool/a.sh", 0o755),
                ("tool/lib/b.py", 0o644)
            ]
        );
        let before = files_digest(&files);
        fs_err::write(tool.join("lib/b.py"), "changed").unwrap();
        assert_ne!(
            files_digest(&install_files(&[tool.clone(), cli.clone()]).unwrap()),
            before
        );
        // Two paths landing on the same name are refused.
        let err = install_files(&[cli.clone(), cli]).unwrap_err();
        assert!(err.contains("/tmp/bench-install/claude"), "{err}");
        assert!(install_files(&[d.path().join("nope")]).is_err());
    }
}
