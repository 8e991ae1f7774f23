//! Errors of dataset readers: every one names the file, and for a bad cell the 1-based row and
//! the column, e.g. `data/rust-00000-of-00001.parquet: row 17, column created_at: cannot parse
//! "yesterday" as a date`.

use thiserror::Error;

/// A problem reading a dataset file.
#[derive(Debug, Error)]
pub enum DatasetError {
    #[error("{file}: cannot read: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    /// Not a regular file within its size limit (a FIFO, a device, a link to one, too large).
    #[error("{file}: cannot read: {source}")]
    File {
        file: String,
        #[source]
        source: crate::regular_file::ReadError,
    },
    #[error("{file}: not a readable parquet file: {message}")]
    Parquet { file: String, message: String },
    #[error("{file}: line {line}: {message}")]
    Json {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file}: missing column {column}")]
    MissingColumn { file: String, column: String },
    #[error("{file}: row {row}, column {column}: {problem}")]
    Cell {
        file: String,
        /// 1-based.
        row: usize,
        column: String,
        problem: CellProblem,
    },
    #[error("{path}: no dataset files (.parquet, .jsonl or .json)")]
    NoFiles { path: String },
    #[error("{file}: unsupported file type (expected .parquet, .jsonl or .json)")]
    UnknownFileType { file: String },
    #[error(
        "no dataset format named `{format}` is registered in this bench (src/datasets/format.rs)"
    )]
    UnknownFormat { format: String },
}

/// What is wrong with one cell.
#[derive(Debug, Error, PartialEq)]
pub enum CellProblem {
    #[error("expected {expected}, found {found}")]
    WrongType {
        expected: &'static str,
        found: String,
    },
    #[error("is null")]
    Null,
    #[error("cannot parse {0:?} as a date")]
    BadDate(String),
    #[error("cannot parse {0:?} as a JSON list of strings")]
    BadList(String),
    #[error("cannot read {cell:?} as a Python list of strings: {message} at byte offset {offset}")]
    BadPyList {
        offset: usize,
        message: String,
        /// The cell's first 200 characters.
        cell: String,
    },
    /// A value of the right type that bench cannot use (an unknown parser name, a config
    /// without a test command): the message says which and how to fix it.
    #[error("{0}")]
    Invalid(String),
    #[error("duplicate instance_id {id:?} (first seen in {first_file}, row {first_row})")]
    Duplicate {
        id: String,
        first_file: String,
        first_row: usize,
    },
}
