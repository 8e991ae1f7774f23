//! A column-oriented view of one dataset file, whatever its container (parquet or JSON lines):
//! the readers convert to it, the row mappers take cells out of it. Cells are moved out
//! (`take_*`), never cloned.

use std::collections::HashMap;

use super::error::{CellProblem, DatasetError};

/// One column's values.
#[derive(Debug)]
pub enum Column {
    /// A string column (parquet Utf8 / LargeUtf8 / Utf8View, or an integer shown as a string).
    Str(Vec<Option<String>>),
    /// A list-of-strings column.
    List(Vec<Option<Vec<String>>>),
    /// JSON values (JSON lines): each cell has its own type.
    Json(Vec<Option<serde_json::Value>>),
    /// A column of a type no reader maps; its cells are reported as the wrong type if read.
    Unsupported(String),
}

/// The columns of one file.
#[derive(Debug)]
pub struct Table {
    /// The file as shown in errors (a dataset-relative path).
    pub file: String,
    pub rows: usize,
    pub columns: HashMap<String, Column>,
}

fn json_type(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
    .to_string()
}

/// Parses a JSON-encoded list of strings (`"[\"a\", \"b\"]"`), as classic SWE-bench stores
/// FAIL_TO_PASS / PASS_TO_PASS.
fn parse_json_list(s: &str) -> Result<Vec<String>, CellProblem> {
    serde_json::from_str::<Vec<String>>(s).map_err(|_| CellProblem::BadList(s.to_string()))
}

fn json_to_list(v: serde_json::Value) -> Result<Vec<String>, CellProblem> {
    match v {
        serde_json::Value::String(s) => parse_json_list(&s),
        serde_json::Value::Array(items) => items
            .into_iter()
            .map(|i| match i {
                serde_json::Value::String(s) => Ok(s),
                other => Err(CellProblem::WrongType {
                    expected: "a list of strings",
                    found: format!("a list holding {}", json_type(&other)),
                }),
            })
            .collect(),
        other => Err(CellProblem::WrongType {
            expected: "a list of strings",
            found: json_type(&other),
        }),
    }
}

impl Table {
    pub fn has(&self, column: &str) -> bool {
        self.columns.contains_key(column)
    }

    /// Errors unless every column in `names` exists.
    pub fn require(&self, names: &[&str]) -> Result<(), DatasetError> {
        match names.iter().find(|n| !self.has(n)) {
            Some(n) => Err(DatasetError::MissingColumn {
                file: self.file.clone(),
                column: n.to_string(),
            }),
            None => Ok(()),
        }
    }

    pub fn cell_error(&self, row: usize, column: &str, problem: CellProblem) -> DatasetError {
        DatasetError::Cell {
            file: self.file.clone(),
            row: row + 1,
            column: column.to_string(),
            problem,
        }
    }

    /// A string cell (`None`: null, or no such column).
    pub fn take_str(&mut self, row: usize, column: &str) -> Result<Option<String>, DatasetError> {
        let r = match self.columns.get_mut(column) {
            None => Ok(None),
            Some(Column::Str(v)) => Ok(v[row].take()),
            Some(Column::Json(v)) => match v[row].take() {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(s)),
                Some(serde_json::Value::Number(n)) => Ok(Some(n.to_string())),
                Some(other) => Err(CellProblem::WrongType {
                    expected: "a string",
                    found: json_type(&other),
                }),
            },
            Some(Column::List(_)) => Err(CellProblem::WrongType {
                expected: "a string",
                found: "a list".into(),
            }),
            Some(Column::Unsupported(t)) => Err(CellProblem::WrongType {
                expected: "a string",
                found: t.clone(),
            }),
        };
        r.map_err(|p| self.cell_error(row, column, p))
    }

    /// A string cell that must be present and not null.
    pub fn req_str(&mut self, row: usize, column: &str) -> Result<String, DatasetError> {
        self.take_str(row, column)?
            .ok_or_else(|| self.cell_error(row, column, CellProblem::Null))
    }

    /// A list of strings: a real list, or a JSON-encoded one in a string cell.
    pub fn take_list(
        &mut self,
        row: usize,
        column: &str,
    ) -> Result<Option<Vec<String>>, DatasetError> {
        let r = match self.columns.get_mut(column) {
            None => Ok(None),
            Some(Column::List(v)) => Ok(v[row].take()),
            Some(Column::Str(v)) => v[row].take().map(|s| parse_json_list(&s)).transpose(),
            Some(Column::Json(v)) => match v[row].take() {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(value) => json_to_list(value).map(Some),
            },
            Some(Column::Unsupported(t)) => Err(CellProblem::WrongType {
                expected: "a list of strings",
                found: t.clone(),
            }),
        };
        r.map_err(|p| self.cell_error(row, column, p))
    }

    /// A JSON value: an object or list cell of JSON lines as it is, a string cell parsed as
    /// JSON (SWE-rebench's `install_config` comes either way). `None`: null or no such column.
    pub fn take_json(
        &mut self,
        row: usize,
        column: &str,
    ) -> Result<Option<serde_json::Value>, DatasetError> {
        let r = match self.columns.get_mut(column) {
            None => Ok(None),
            Some(Column::Json(v)) => match v[row].take() {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) => serde_json::from_str(&s)
                    .map(Some)
                    .map_err(|e| CellProblem::Invalid(format!("not valid JSON ({e}): {s:?}"))),
                Some(other) => Ok(Some(other)),
            },
            Some(Column::Str(v)) => match v[row].take() {
                None => Ok(None),
                Some(s) => serde_json::from_str(&s)
                    .map(Some)
                    .map_err(|e| CellProblem::Invalid(format!("not valid JSON ({e}): {s:?}"))),
            },
            Some(Column::List(_)) => Err(CellProblem::WrongType {
                expected: "a JSON object",
                found: "a list".into(),
            }),
            Some(Column::Unsupported(t)) => Err(CellProblem::WrongType {
                expected: "a JSON object, a JSON string or a parquet struct",
                found: t.clone(),
            }),
        };
        r.map_err(|p| self.cell_error(row, column, p))
    }

    /// A list that must be present (null counts as an error).
    pub fn req_list(&mut self, row: usize, column: &str) -> Result<Vec<String>, DatasetError> {
        self.take_list(row, column)?
            .ok_or_else(|| self.cell_error(row, column, CellProblem::Null))
    }
}

/// Normalizes a `created_at` value to RFC 3339 in UTC (`2025-09-07T21:34:16Z`). Accepts RFC 3339
/// with `Z` or an offset, a space instead of `T`, a date-time without offset (taken as UTC), and
/// a bare date (midnight UTC).
pub fn normalize_date(s: &str) -> Option<String> {
    parse_date(s).map(|ts| ts.to_string())
}

/// The instant a `created_at` value names, read as [`normalize_date`] reads it (whose result is
/// this instant's RFC 3339 form).
pub fn parse_date(s: &str) -> Option<jiff::Timestamp> {
    let t = s.trim();
    if let Ok(ts) = t.parse::<jiff::Timestamp>() {
        return Some(ts);
    }
    if let Ok(dt) = t.parse::<jiff::civil::DateTime>() {
        return dt
            .to_zoned(jiff::tz::TimeZone::UTC)
            .ok()
            .map(|z| z.timestamp());
    }
    if let Ok(d) = t.parse::<jiff::civil::Date>() {
        return d
            .to_zoned(jiff::tz::TimeZone::UTC)
            .ok()
            .map(|z| z.timestamp());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_normalize_to_utc_rfc3339() {
        for (input, want) in [
            ("2025-09-07T21:34:16Z", "2025-09-07T21:34:16Z"),
            ("2025-09-07 21:34:16", "2025-09-07T21:34:16Z"),
            ("2025-09-07T21:34:16", "2025-09-07T21:34:16Z"),
            ("2025-09-07T23:34:16+02:00", "2025-09-07T21:34:16Z"),
            ("2025-09-07 21:34:16+00:00", "2025-09-07T21:34:16Z"),
            ("2025-09-07", "2025-09-07T00:00:00Z"),
        ] {
            assert_eq!(normalize_date(input).as_deref(), Some(want), "{input}");
        }
        assert_eq!(normalize_date("yesterday"), None);
    }

    #[test]
    fn lists_accept_json_strings_and_lists() {
        assert_eq!(
            json_to_list(serde_json::json!("[\"a\", \"b\"]")).unwrap(),
            ["a", "b"]
        );
        assert_eq!(json_to_list(serde_json::json!(["a"])).unwrap(), ["a"]);
        assert!(matches!(
            json_to_list(serde_json::json!("not json")),
            Err(CellProblem::BadList(_))
        ));
        assert!(matches!(
            json_to_list(serde_json::json!(3)),
            Err(CellProblem::WrongType { .. })
        ));
    }
}
