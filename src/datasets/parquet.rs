//! Parquet files (the Hub's format): only the wanted columns are decoded (projection), in
//! parallel (row groups split across threads, or columns when the file has one row group),
//! into arrow arrays ([`read_arrays`]) or into a [`Table`] ([`read_parquet`]), where strings
//! and lists of strings are mapped and other types are kept as "unsupported" so reading them
//! names the type. Not here: what a row means (the row mappers).

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};

use super::error::DatasetError;
use super::table::{Column, Table};

/// Rows per decoded batch.
const BATCH: usize = 16 * 1024;

/// The decoded columns of one file.
pub struct Arrays {
    /// Every top-level column of the file, in schema order (to check required columns without
    /// decoding them).
    pub all_columns: Vec<String>,
    /// The wanted columns the file has, in schema order: each a run of arrays that together
    /// hold every row in order. All columns are split at the same rows.
    pub columns: Vec<(String, Vec<ArrayRef>)>,
    pub rows: usize,
}

/// One thread's share: some row groups, some columns (indexes into the schema, ascending).
struct Unit {
    row_groups: Range<usize>,
    columns: Vec<usize>,
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// Splits the work over `threads`: by row groups when there are several, else by columns.
fn units(row_groups: usize, columns: &[usize], threads: usize) -> Vec<Unit> {
    if threads > 1 && row_groups > 1 {
        let n = threads.min(row_groups);
        (0..n)
            .map(|i| Unit {
                row_groups: row_groups * i / n..row_groups * (i + 1) / n,
                columns: columns.to_vec(),
            })
            .collect()
    } else if threads > 1 && columns.len() > 1 {
        let n = threads.min(columns.len());
        (0..n)
            .map(|i| Unit {
                row_groups: 0..row_groups,
                columns: columns.iter().copied().skip(i).step_by(n).collect(),
            })
            .collect()
    } else {
        vec![Unit {
            row_groups: 0..row_groups,
            columns: columns.to_vec(),
        }]
    }
}

/// Reads the columns of `wanted` that the file has.
pub fn read_arrays(path: &Path, file: &str, wanted: &[&str]) -> Result<Arrays, DatasetError> {
    let perr = |e: &dyn std::fmt::Display| DatasetError::Parquet {
        file: file.to_string(),
        message: e.to_string(),
    };
    // A dataset file is opened as a regular file only (never a FIFO or a device); parquet
    // reads it by ranges, so only the type is checked here, not a size.
    let open = || {
        crate::regular_file::open(path, u64::MAX).map_err(|source| DatasetError::File {
            file: file.to_string(),
            source,
        })
    };
    let meta =
        ArrowReaderMetadata::load(&open()?, ArrowReaderOptions::default()).map_err(|e| perr(&e))?;
    let all_columns: Vec<String> = meta
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let indices: Vec<usize> = (0..all_columns.len())
        .filter(|&i| wanted.contains(&all_columns[i].as_str()))
        .collect();
    let row_groups = meta.metadata().num_row_groups();
    let read_unit = |unit: &Unit| -> Result<Vec<RecordBatch>, DatasetError> {
        // A file handle of its own: clones of one handle share the read position.
        let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(open()?, meta.clone());
        let mask = ProjectionMask::roots(builder.parquet_schema(), unit.columns.iter().copied());
        builder
            .with_projection(mask)
            .with_row_groups(unit.row_groups.clone().collect())
            .with_batch_size(BATCH)
            .build()
            .map_err(|e| perr(&e))?
            .map(|b| b.map_err(|e| perr(&e)))
            .collect()
    };
    let units = units(row_groups, &indices, threads());
    let results: Vec<Result<Vec<RecordBatch>, DatasetError>> = std::thread::scope(|s| {
        let handles: Vec<_> = units[1..]
            .iter()
            .map(|u| s.spawn(|| read_unit(u)))
            .collect();
        let mut out = vec![read_unit(&units[0])];
        out.extend(
            handles
                .into_iter()
                .map(|h| h.join().expect("parquet thread")),
        );
        out
    });
    let mut columns: Vec<(String, Vec<ArrayRef>)> = indices
        .iter()
        .map(|&i| (all_columns[i].clone(), Vec::new()))
        .collect();
    for (unit, batches) in units.iter().zip(results) {
        for batch in batches? {
            for (&index, array) in unit.columns.iter().zip(batch.columns()) {
                let slot = indices.binary_search(&index).expect("a projected column");
                columns[slot].1.push(array.clone());
            }
        }
    }
    let rows = match columns.first() {
        Some((_, chunks)) => chunks.iter().map(|a| a.len()).sum(),
        None => usize::try_from(meta.metadata().file_metadata().num_rows()).unwrap_or(0),
    };
    Ok(Arrays {
        all_columns,
        columns,
        rows,
    })
}

/// Reads the columns of `wanted` that the file has, as a [`Table`] (columns converted in
/// parallel).
pub fn read_parquet(path: &Path, file: &str, wanted: &[&str]) -> Result<Table, DatasetError> {
    let arrays = read_arrays(path, file, wanted)?;
    let rows = arrays.rows;
    let mut pending: Vec<Option<(String, Vec<ArrayRef>)>> =
        arrays.columns.into_iter().map(Some).collect();
    let n = threads().min(pending.len()).max(1);
    // Column i goes to thread i % n; threads return their columns in order.
    let mut shares: Vec<Vec<(String, Vec<ArrayRef>)>> = (0..n).map(|_| Vec::new()).collect();
    for (i, c) in pending.iter_mut().enumerate() {
        shares[i % n].push(c.take().expect("taken once"));
    }
    let convert = |share: Vec<(String, Vec<ArrayRef>)>| -> Vec<(String, Column)> {
        share
            .into_iter()
            .map(|(name, chunks)| (name, to_column(&chunks)))
            .collect()
    };
    let converted: Vec<Vec<(String, Column)>> = std::thread::scope(|s| {
        let mut shares = shares.into_iter();
        let first = shares.next().unwrap_or_default();
        let handles: Vec<_> = shares.map(|sh| s.spawn(move || convert(sh))).collect();
        let mut out = vec![convert(first)];
        out.extend(
            handles
                .into_iter()
                .map(|h| h.join().expect("convert thread")),
        );
        out
    });
    let columns: HashMap<String, Column> = converted.into_iter().flatten().collect();
    Ok(Table {
        file: file.to_string(),
        rows,
        columns,
    })
}

fn to_column(chunks: &[ArrayRef]) -> Column {
    let Some(first) = chunks.first() else {
        return Column::Str(Vec::new());
    };
    let mut col = empty(first);
    for a in chunks {
        append(&mut col, a);
    }
    col
}

pub fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// The string at `i` of a string array (`None`: null). `a` must be of a type [`is_string`]
/// accepts.
pub fn str_at(a: &dyn Array, i: usize) -> Option<&str> {
    if a.is_null(i) {
        return None;
    }
    Some(match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>().value(i),
        DataType::LargeUtf8 => a.as_string::<i64>().value(i),
        DataType::Utf8View => a.as_string_view().value(i),
        other => unreachable!("str_at on a {other} array"),
    })
}

fn empty(a: &ArrayRef) -> Column {
    match a.data_type() {
        t if is_string(t) => Column::Str(Vec::new()),
        DataType::Int32 | DataType::Int64 | DataType::Null => Column::Str(Vec::new()),
        DataType::List(f) | DataType::LargeList(f) if is_string(f.data_type()) => {
            Column::List(Vec::new())
        }
        // A struct column (SWE-bench Multimodal's `image_assets` as swebench's publisher
        // writes it): each cell as the JSON value it encodes.
        DataType::Struct(_) => Column::Json(Vec::new()),
        other => Column::Unsupported(other.to_string()),
    }
}

/// The cell at `i` as a JSON value: strings, integers, booleans, nulls, lists and structs
/// (any other type is null).
fn json_at(a: &dyn Array, i: usize) -> serde_json::Value {
    use serde_json::Value;
    if a.is_null(i) {
        return Value::Null;
    }
    match a.data_type() {
        t if is_string(t) => Value::String(str_at(a, i).unwrap_or_default().to_string()),
        DataType::Int32 => a.as_primitive::<Int32Type>().value(i).into(),
        DataType::Int64 => a.as_primitive::<Int64Type>().value(i).into(),
        DataType::Boolean => a.as_boolean().value(i).into(),
        DataType::List(_) => {
            let v = a.as_list::<i32>().value(i);
            Value::Array((0..v.len()).map(|j| json_at(v.as_ref(), j)).collect())
        }
        DataType::LargeList(_) => {
            let v = a.as_list::<i64>().value(i);
            Value::Array((0..v.len()).map(|j| json_at(v.as_ref(), j)).collect())
        }
        DataType::Struct(fields) => {
            let st = a.as_struct();
            Value::Object(
                fields
                    .iter()
                    .zip(st.columns())
                    .map(|(f, c)| (f.name().clone(), json_at(c.as_ref(), i)))
                    .collect(),
            )
        }
        _ => Value::Null,
    }
}

fn strings(a: &dyn Array) -> Vec<Option<String>> {
    match a.data_type() {
        DataType::Utf8 => a
            .as_string::<i32>()
            .iter()
            .map(|s| s.map(str::to_owned))
            .collect(),
        DataType::LargeUtf8 => a
            .as_string::<i64>()
            .iter()
            .map(|s| s.map(str::to_owned))
            .collect(),
        DataType::Utf8View => a
            .as_string_view()
            .iter()
            .map(|s| s.map(str::to_owned))
            .collect(),
        DataType::Int32 => a
            .as_primitive::<Int32Type>()
            .iter()
            .map(|v| v.map(|v| v.to_string()))
            .collect(),
        DataType::Int64 => a
            .as_primitive::<Int64Type>()
            .iter()
            .map(|v| v.map(|v| v.to_string()))
            .collect(),
        _ => vec![None; a.len()],
    }
}

fn list_item(values: ArrayRef) -> Vec<String> {
    strings(values.as_ref()).into_iter().flatten().collect()
}

fn append(col: &mut Column, a: &ArrayRef) {
    match col {
        Column::Str(v) => v.extend(strings(a.as_ref())),
        Column::List(v) => match a.data_type() {
            DataType::List(_) => {
                let l = a.as_list::<i32>();
                v.extend((0..l.len()).map(|i| (!l.is_null(i)).then(|| list_item(l.value(i)))));
            }
            DataType::LargeList(_) => {
                let l = a.as_list::<i64>();
                v.extend((0..l.len()).map(|i| (!l.is_null(i)).then(|| list_item(l.value(i)))));
            }
            _ => v.extend(std::iter::repeat_n(None, a.len())),
        },
        Column::Json(v) => {
            v.extend((0..a.len()).map(|i| (!a.is_null(i)).then(|| json_at(a.as_ref(), i))))
        }
        Column::Unsupported(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_cells_read_as_json() {
        use arrow_array::builder::{ListBuilder, StringBuilder};
        use arrow_array::{Int64Array, StructArray};
        use arrow_schema::Field;
        use std::sync::Arc;
        let mut urls = ListBuilder::new(StringBuilder::new());
        urls.values().append_value("https://x/a.png");
        urls.append(true);
        urls.append(false);
        let urls: ArrayRef = Arc::new(urls.finish());
        let n: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None]));
        let st: ArrayRef = Arc::new(StructArray::from(vec![
            (
                Arc::new(Field::new(
                    "problem_statement",
                    urls.data_type().clone(),
                    true,
                )),
                urls,
            ),
            (Arc::new(Field::new("n", DataType::Int64, true)), n),
        ]));
        let mut col = empty(&st);
        append(&mut col, &st);
        let Column::Json(v) = col else {
            panic!("a JSON column")
        };
        assert_eq!(
            v,
            [
                Some(serde_json::json!({"problem_statement": ["https://x/a.png"], "n": 1})),
                Some(serde_json::json!({"problem_statement": null, "n": null})),
            ]
        );
    }

    #[test]
    fn work_splits_by_row_groups_then_columns() {
        let u = units(5, &[0, 2, 3], 2);
        assert_eq!(u.len(), 2);
        assert_eq!(
            (u[0].row_groups.clone(), u[1].row_groups.clone()),
            (0..2, 2..5)
        );
        assert!(u.iter().all(|u| u.columns == [0, 2, 3]));
        let u = units(1, &[0, 2, 3], 2);
        assert_eq!(u.len(), 2);
        assert_eq!(
            (u[0].columns.clone(), u[1].columns.clone()),
            (vec![0, 3], vec![2])
        );
        assert!(u.iter().all(|u| u.row_groups == (0..1)));
        assert_eq!(units(1, &[4], 2).len(), 1);
        assert_eq!(units(9, &[4], 1).len(), 1);
    }
}
