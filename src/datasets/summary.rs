//! The fields `bench tasks` samples by and lists (instance id, repo, language, created_at),
//! read without the rest of a row. From parquet only those columns are decoded; their cells
//! are checked as the full readers check them (null, unreadable date, duplicate id) and a row
//! the caller's filter drops is never copied out of the decoded columns. Files of another
//! container (JSON lines) or with those columns of an unusual type are read whole by
//! [`super::read_file`] and summarised. Not here: the other fields and their checks; plan and
//! apply read every field ([`super::read_files`]), because the sample key covers whole tasks.

use std::collections::HashMap;
use std::path::PathBuf;

use arrow_array::ArrayRef;

use crate::tasks::{SampleRow, Task};
use crate::types::DatasetFormat;

use super::error::{CellProblem, DatasetError};
use super::parquet::{is_string, read_arrays, str_at};
use super::table::parse_date;
use super::{read_file, swe_bench_live};

/// A task's listing fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSummary {
    pub instance_id: String,
    pub repo: String,
    pub language: Option<String>,
    /// RFC 3339 in UTC, as in [`Task::created_at`].
    pub created_at: String,
}

impl TaskSummary {
    /// The row the sample filters read.
    pub fn row(&self) -> SampleRow<'_> {
        SampleRow {
            instance_id: &self.instance_id,
            repo: &self.repo,
            language: self.language.as_deref(),
            created: self.created_at.parse().ok(),
        }
    }

    /// The listing fields of a whole task.
    pub fn of(task: &Task) -> TaskSummary {
        TaskSummary {
            instance_id: task.instance_id.clone(),
            repo: task.repo.clone(),
            language: task.language.clone(),
            created_at: task.created_at.clone(),
        }
    }
}

/// The decoded, checked listing columns of one file.
enum Source {
    Columns {
        ids: Vec<ArrayRef>,
        repos: Vec<ArrayRef>,
        /// `None`: the language is the same for every row.
        languages: Option<Vec<ArrayRef>>,
        fixed_language: Option<String>,
        created: Vec<jiff::Timestamp>,
    },
    Tasks(Vec<Task>),
}

fn cells(chunks: &[ArrayRef]) -> impl Iterator<Item = Option<&str>> {
    chunks
        .iter()
        .flat_map(|a| (0..a.len()).map(move |i| str_at(a.as_ref(), i)))
}

/// The columns every file of `format` must have (as the full reader requires them).
fn required(format: DatasetFormat) -> Vec<&'static str> {
    super::format(format).map_or_else(Vec::new, |f| f.required())
}

/// Reads one parquet file's listing columns, or `None` when one of them is not a string
/// column (the full reader then decides what its cells mean).
fn read_columns(
    format: DatasetFormat,
    path: &std::path::Path,
    file: &str,
) -> Result<Option<Source>, DatasetError> {
    let multilang = format == DatasetFormat::SweBenchLive;
    let wanted: &[&str] = if multilang {
        &["instance_id", "repo", "created_at", "language"]
    } else {
        &["instance_id", "repo", "created_at"]
    };
    let arrays = read_arrays(path, file, wanted)?;
    if let Some(missing) = required(format)
        .into_iter()
        .find(|c| !arrays.all_columns.iter().any(|a| a == c))
    {
        return Err(DatasetError::MissingColumn {
            file: file.to_string(),
            column: missing.to_string(),
        });
    }
    let rows = arrays.rows;
    let mut columns: HashMap<String, Vec<ArrayRef>> = arrays.columns.into_iter().collect();
    if columns
        .values()
        .any(|chunks| chunks.iter().any(|a| !is_string(a.data_type())))
    {
        return Ok(None);
    }
    let mut take = |name: &str| columns.remove(name).unwrap_or_default();
    let (ids, repos, dates) = (take("instance_id"), take("repo"), take("created_at"));
    let languages = multilang
        .then(|| take("language"))
        .filter(|l| !l.is_empty() || rows == 0);
    let fixed_language = if multilang {
        swe_bench_live::language_of_file(file)
    } else {
        Some("python".to_string())
    };
    let cell = |row: usize, column: &str, problem| DatasetError::Cell {
        file: file.to_string(),
        row: row + 1,
        column: column.to_string(),
        problem,
    };
    let mut created = Vec::with_capacity(rows);
    for (row, ((date, id), repo)) in cells(&dates)
        .zip(cells(&ids))
        .zip(cells(&repos))
        .enumerate()
    {
        let date = date.ok_or_else(|| cell(row, "created_at", CellProblem::Null))?;
        created.push(
            parse_date(date)
                .ok_or_else(|| cell(row, "created_at", CellProblem::BadDate(date.to_string())))?,
        );
        id.ok_or_else(|| cell(row, "instance_id", CellProblem::Null))?;
        repo.ok_or_else(|| cell(row, "repo", CellProblem::Null))?;
    }
    Ok(Some(Source::Columns {
        ids,
        repos,
        languages,
        fixed_language,
        created,
    }))
}

/// Reads the listing fields of several files of one dataset, in order, keeping the rows
/// `keep` accepts; an instance id seen twice (kept or not) is an error naming both places, as
/// in [`super::read_files`].
pub fn read_summaries(
    format: DatasetFormat,
    files: &[(String, PathBuf)],
    keep: &dyn Fn(&SampleRow<'_>) -> bool,
) -> Result<Vec<TaskSummary>, DatasetError> {
    let mut sources = Vec::with_capacity(files.len());
    for (name, path) in files {
        // SWE-bench Pro rows have no created_at and their language column is `repo_language`;
        // SWE-rebench V2's language is normalised and SWE-bench Multimodal's is not python:
        // they are read whole.
        let whole = [
            DatasetFormat::SweBenchPro,
            DatasetFormat::SweRebenchV2,
            DatasetFormat::SweBenchMultimodal,
        ];
        let columns = if name.ends_with(".parquet") && !whole.contains(&format) {
            read_columns(format, path, name)?
        } else {
            None
        };
        sources.push(match columns {
            Some(s) => s,
            None => Source::Tasks(read_file(format, path, name)?),
        });
    }
    let mut seen: HashMap<&str, (usize, usize)> = HashMap::new();
    let mut out = Vec::new();
    for (f, source) in sources.iter().enumerate() {
        match source {
            Source::Columns {
                ids,
                repos,
                languages,
                fixed_language,
                created,
            } => {
                let mut langs: Box<dyn Iterator<Item = Option<&str>>> = match languages {
                    Some(l) => Box::new(cells(l)),
                    None => Box::new(std::iter::repeat(None)),
                };
                for (row, ((id, repo), created)) in
                    cells(ids).zip(cells(repos)).zip(created).enumerate()
                {
                    let (id, repo) = (id.expect("checked"), repo.expect("checked"));
                    let language = langs.next().flatten().or(fixed_language.as_deref());
                    if let Some(&(first_file, first_row)) = seen.get(id) {
                        return Err(duplicate(files, f, row, id, first_file, first_row));
                    }
                    seen.insert(id, (f, row));
                    let r = SampleRow {
                        instance_id: id,
                        repo,
                        language,
                        created: Some(*created),
                    };
                    if keep(&r) {
                        out.push(TaskSummary {
                            instance_id: id.to_string(),
                            repo: repo.to_string(),
                            language: language.map(str::to_string),
                            created_at: created.to_string(),
                        });
                    }
                }
            }
            Source::Tasks(tasks) => {
                for (row, t) in tasks.iter().enumerate() {
                    if let Some(&(first_file, first_row)) = seen.get(t.instance_id.as_str()) {
                        return Err(duplicate(
                            files,
                            f,
                            row,
                            &t.instance_id,
                            first_file,
                            first_row,
                        ));
                    }
                    seen.insert(&t.instance_id, (f, row));
                    let s = TaskSummary::of(t);
                    if keep(&s.row()) {
                        out.push(s);
                    }
                }
            }
        }
    }
    Ok(out)
}

fn duplicate(
    files: &[(String, PathBuf)],
    file: usize,
    row: usize,
    id: &str,
    first_file: usize,
    first_row: usize,
) -> DatasetError {
    DatasetError::Cell {
        file: files[file].0.clone(),
        row: row + 1,
        column: "instance_id".into(),
        problem: CellProblem::Duplicate {
            id: id.to_string(),
            first_file: files[first_file].0.clone(),
            first_row: first_row + 1,
        },
    }
}
