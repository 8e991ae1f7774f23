//! JSON lines (one object per line; blank lines skipped) and JSON files (a list of objects)
//! into a [`Table`].

use std::collections::HashMap;
use std::path::Path;

use super::error::DatasetError;
use super::table::{Column, Table};

/// Reads the columns of `wanted` from a `.jsonl` (or `.json` list) file.
pub fn read_json(path: &Path, file: &str, wanted: &[&str]) -> Result<Table, DatasetError> {
    let limit = crate::tasks::FileLimits::current()
        .map_err(|e| DatasetError::Json {
            file: file.to_string(),
            line: 0,
            message: e,
        })?
        .dataset_file;
    let text =
        crate::regular_file::read_text(path, limit).map_err(|source| DatasetError::File {
            file: file.to_string(),
            source,
        })?;
    let jerr = |line: usize, message: String| DatasetError::Json {
        file: file.to_string(),
        line,
        message,
    };
    let mut objects = Vec::new();
    if text.trim_start().starts_with('[') {
        let v: Vec<serde_json::Value> =
            serde_json::from_str(&text).map_err(|e| jerr(e.line(), e.to_string()))?;
        for (i, o) in v.into_iter().enumerate() {
            match o {
                serde_json::Value::Object(m) => objects.push(m),
                _ => return Err(jerr(1, format!("item {} is not an object", i + 1))),
            }
        }
    } else {
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<serde_json::Value>(line) {
                Ok(serde_json::Value::Object(m)) => objects.push(m),
                Ok(_) => return Err(jerr(i + 1, "not a JSON object".into())),
                Err(e) => return Err(jerr(i + 1, format!("not valid JSON: {e}"))),
            }
        }
    }
    let rows = objects.len();
    let mut columns: HashMap<String, Column> = HashMap::new();
    for name in wanted {
        if objects.iter().any(|o| o.contains_key(*name)) {
            columns.insert(
                name.to_string(),
                Column::Json(objects.iter_mut().map(|o| o.remove(*name)).collect()),
            );
        }
    }
    Ok(Table {
        file: file.to_string(),
        rows,
        columns,
    })
}
