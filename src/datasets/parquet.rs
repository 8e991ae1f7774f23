//! Parquet files (the Hub's format) into a [`Table`]: only the wanted columns are decoded
//! (projection), strings and lists of strings are mapped, other types are kept as
//! "unsupported" so reading them names the type.

use std::collections::HashMap;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::error::DatasetError;
use super::table::{Column, Table};

/// Reads the columns of `wanted` that the file has.
pub fn read_parquet(path: &Path, file: &str, wanted: &[&str]) -> Result<Table, DatasetError> {
    let perr = |e: &dyn std::fmt::Display| DatasetError::Parquet {
        file: file.to_string(),
        message: e.to_string(),
    };
    let f = std::fs::File::open(path).map_err(|source| DatasetError::Io {
        file: file.to_string(),
        source,
    })?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| perr(&e))?;
    let schema = builder.schema().clone();
    let mut names = Vec::new();
    let mut indices = Vec::new();
    for (i, field) in schema.fields().iter().enumerate() {
        if wanted.contains(&field.name().as_str()) {
            indices.push(i);
            names.push(field.name().clone());
        }
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), indices);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(8192)
        .build()
        .map_err(|e| perr(&e))?;
    let mut columns: HashMap<String, Column> = HashMap::new();
    let mut rows = 0;
    for batch in reader {
        let batch = batch.map_err(|e| perr(&e))?;
        rows += batch.num_rows();
        for (name, array) in names.iter().zip(batch.columns()) {
            append(
                columns.entry(name.clone()).or_insert_with(|| empty(array)),
                array,
            );
        }
    }
    for name in names {
        columns.entry(name).or_insert(Column::Str(Vec::new()));
    }
    Ok(Table {
        file: file.to_string(),
        rows,
        columns,
    })
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

fn empty(a: &ArrayRef) -> Column {
    match a.data_type() {
        t if is_string(t) => Column::Str(Vec::new()),
        DataType::Int32 | DataType::Int64 | DataType::Null => Column::Str(Vec::new()),
        DataType::List(f) | DataType::LargeList(f) if is_string(f.data_type()) => {
            Column::List(Vec::new())
        }
        other => Column::Unsupported(other.to_string()),
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
        Column::Json(_) | Column::Unsupported(_) => {}
    }
}
