//! Dataset adapters: SWE-bench-Live (MultiLang and Python), classic SWE-bench / Verified,
//! SWE-bench Multimodal, SWE-rebench and SWE-rebench V2,
//! SWE-bench Pro (`swe_bench_pro.rs`, with its Python-literal lists in `py_literal.rs`), read
//! from parquet or JSON lines, from a local path or a pinned Hugging Face Hub revision (fetched
//! into the store by content hash, see `hub`). Each produces [`crate::tasks::Task`] values, or
//! for listings only the fields the sample filters read ([`TaskSummary`]).

pub mod brain_bench;
mod common;
mod error;
pub mod fixtures;
mod format;
pub mod harbor;
pub mod harbor_compose;
pub mod hub;
mod jsonl;
mod parquet;
pub mod predictions;
mod py_literal;
mod registry;
mod summary;
mod swe_bench;
mod swe_bench_live;
mod swe_bench_multimodal;
pub mod swe_bench_pro;
mod swe_rebench;
mod swe_rebench_v2;
mod table;
#[cfg(test)]
mod toy;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use error::{CellProblem, DatasetError};
pub use format::Format;
pub use registry::{format, format_named, format_names};
pub use summary::{TaskSummary, read_summaries};
pub use table::normalize_date;

use crate::tasks::Task;
use crate::types::DatasetFormat;

/// Reads one file (by extension) with the row mapper of `format`. `file` is the name shown in
/// errors. The `local` format has no file reader.
pub fn read_file(
    format: DatasetFormat,
    path: &Path,
    file: &str,
) -> Result<Vec<Task>, DatasetError> {
    let Some(format) = self::format(format) else {
        return Err(DatasetError::UnknownFormat {
            format: format.name().to_string(),
        });
    };
    let columns = format.columns();
    let mut table = if file.ends_with(".parquet") {
        parquet::read_parquet(path, file, &columns)?
    } else if file.ends_with(".jsonl") || file.ends_with(".json") {
        jsonl::read_json(path, file, &columns)?
    } else {
        return Err(DatasetError::UnknownFileType {
            file: file.to_string(),
        });
    };
    format.rows(&mut table)
}

/// Reads several files of one dataset, in order; an instance id seen twice is an error naming
/// both places.
pub fn read_files(
    format: DatasetFormat,
    files: &[(String, PathBuf)],
) -> Result<Vec<Task>, DatasetError> {
    let mut seen: HashMap<String, (String, usize)> = HashMap::new();
    let mut out = Vec::new();
    for (name, path) in files {
        for (row, task) in read_file(format, path, name)?.into_iter().enumerate() {
            if let Some((first_file, first_row)) = seen.get(&task.instance_id) {
                return Err(DatasetError::Cell {
                    file: name.clone(),
                    row: row + 1,
                    column: "instance_id".into(),
                    problem: CellProblem::Duplicate {
                        id: task.instance_id.clone(),
                        first_file: first_file.clone(),
                        first_row: *first_row,
                    },
                });
            }
            seen.insert(task.instance_id.clone(), (name.clone(), row + 1));
            out.push(task);
        }
    }
    Ok(out)
}

fn is_data_file(name: &str) -> bool {
    name.ends_with(".parquet") || name.ends_with(".jsonl") || name.ends_with(".json")
}

/// Reads a local file, or every `.parquet` / `.jsonl` / `.json` file under a directory (sorted;
/// names in errors are relative to it, like `data/rust-00000-of-00001.parquet`).
pub fn read_local(format: DatasetFormat, path: &Path) -> Result<Vec<Task>, DatasetError> {
    read_files(format, &local_files(path)?)
}

/// The files [`read_local`] reads, with their names.
pub fn local_files(path: &Path) -> Result<Vec<(String, PathBuf)>, DatasetError> {
    if path.is_file() {
        let name = path.display().to_string();
        return Ok(vec![(name, path.to_path_buf())]);
    }
    let mut files = Vec::new();
    walk(path, path, &mut files).map_err(|source| DatasetError::Io {
        file: path.display().to_string(),
        source,
    })?;
    files.sort();
    if files.is_empty() {
        return Err(DatasetError::NoFiles {
            path: path.display().to_string(),
        });
    }
    Ok(files)
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> std::io::Result<()> {
    for entry in fs_err::read_dir(dir)? {
        let entry = entry?;
        let p = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        if entry.file_type()?.is_dir() {
            walk(root, &p, out)?;
        } else if is_data_file(&name) {
            let rel = p
                .strip_prefix(root)
                .expect("walked under root")
                .to_string_lossy()
                .into_owned();
            out.push((rel, p));
        }
    }
    Ok(())
}
