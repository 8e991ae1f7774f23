//! Writers of small datasets in each supported shape, for tests and the loading benchmark
//! (`examples/datasets_bench.rs`): bench ships no dataset files; tests make theirs.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

/// The row shapes bench reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// SWE-bench-Live MultiLang: real lists, `docker_image`, Python `log_parser`.
    MultiLang,
    /// SWE-bench-Live Python: lists, no image, `log_parser = "pytest"`.
    LivePython,
    /// Classic SWE-bench: all strings, test lists JSON-encoded.
    SweBench,
}

/// One fixture row (the fields tests vary).
#[derive(Debug, Clone)]
pub struct Row {
    pub instance_id: String,
    pub repo: String,
    pub created_at: String,
    pub fail_to_pass: Vec<String>,
    pub pass_to_pass: Vec<String>,
}

impl Row {
    /// A row for `owner__name-N`.
    pub fn new(instance_id: &str, created_at: &str) -> Row {
        let repo = instance_id
            .rsplit_once('-')
            .map_or(instance_id, |(r, _)| r)
            .replacen("__", "/", 1);
        Row {
            instance_id: instance_id.into(),
            repo,
            created_at: created_at.into(),
            fail_to_pass: vec![format!("tests::{instance_id}_fixed")],
            pass_to_pass: vec!["tests::still_ok".into(), "tests::\"quoted\" name".into()],
        }
    }
}

enum Data {
    Str(Vec<String>),
    List(Vec<Vec<String>>),
}

fn columns(shape: Shape, rows: &[Row]) -> Vec<(&'static str, Data)> {
    let s = |f: &dyn Fn(&Row) -> String| Data::Str(rows.iter().map(f).collect());
    let l = |f: &dyn Fn(&Row) -> Vec<String>| Data::List(rows.iter().map(f).collect());
    let mut c = vec![
        ("repo", s(&|r| r.repo.clone())),
        ("instance_id", s(&|r| r.instance_id.clone())),
        (
            "base_commit",
            s(&|_| "0123456789abcdef0123456789abcdef01234567".into()),
        ),
        (
            "patch",
            s(&|r| format!("diff --git a/src/lib b/src/lib\n+fix {}\n", r.instance_id)),
        ),
        (
            "test_patch",
            s(&|_| "diff --git a/tests/t b/tests/t\n+test\n".into()),
        ),
        ("problem_statement", s(&|r| format!("Bug in {}", r.repo))),
        ("hints_text", s(&|_| String::new())),
        ("created_at", s(&|r| r.created_at.clone())),
    ];
    match shape {
        Shape::MultiLang => c.extend([
            (
                "pull_number",
                s(&|r| r.instance_id.rsplit('-').next().unwrap_or("1").into()),
            ),
            ("issue_numbers", l(&|_| vec!["1".into()])),
            ("rebuild_cmds", l(&|_| vec!["cd /testbed && make".into()])),
            (
                "test_cmds",
                l(&|_| vec!["cd /testbed && make test 2>&1 | tee t.log".into()]),
            ),
            ("print_cmds", l(&|_| vec!["cat /testbed/t.log".into()])),
            (
                "log_parser",
                s(&|_| "def parser(log: str) -> dict[str, str]:\n    return {}\n".into()),
            ),
            ("FAIL_TO_PASS", l(&|r| r.fail_to_pass.clone())),
            ("PASS_TO_PASS", l(&|r| r.pass_to_pass.clone())),
            (
                "docker_image",
                s(&|r| {
                    format!(
                        "starryzhang/sweb.eval.x86_64.{}",
                        r.instance_id.replace("__", "_1776_").to_lowercase()
                    )
                }),
            ),
        ]),
        Shape::LivePython => c.extend([
            ("pull_number", s(&|_| "1".into())),
            ("issue_numbers", l(&|_| vec!["1".into()])),
            ("test_cmds", l(&|_| vec!["pytest -rA".into()])),
            ("log_parser", s(&|_| "pytest".into())),
            ("FAIL_TO_PASS", l(&|r| r.fail_to_pass.clone())),
            ("PASS_TO_PASS", l(&|r| r.pass_to_pass.clone())),
        ]),
        Shape::SweBench => c.extend([
            ("version", s(&|_| "1.0".into())),
            (
                "environment_setup_commit",
                s(&|_| "0123456789abcdef0123456789abcdef01234567".into()),
            ),
            (
                "FAIL_TO_PASS",
                s(&|r| serde_json::to_string(&r.fail_to_pass).expect("json")),
            ),
            (
                "PASS_TO_PASS",
                s(&|r| serde_json::to_string(&r.pass_to_pass).expect("json")),
            ),
        ]),
    }
    c
}

/// The arrow columns of `rows` in `shape`.
pub fn arrays(shape: Shape, rows: &[Row]) -> Vec<(&'static str, ArrayRef)> {
    columns(shape, rows)
        .into_iter()
        .map(|(name, data)| {
            let a: ArrayRef = match data {
                Data::Str(v) => Arc::new(StringArray::from(v)),
                Data::List(v) => {
                    let mut b = ListBuilder::new(StringBuilder::new());
                    for items in v {
                        for i in items {
                            b.values().append_value(i);
                        }
                        b.append(true);
                    }
                    Arc::new(b.finish())
                }
            };
            (name, a)
        })
        .collect()
}

/// Writes `rows` as a snappy-compressed parquet file of `shape`.
pub fn write_parquet(path: &Path, shape: Shape, rows: &[Row]) -> Result<(), String> {
    let arrays = arrays(shape, rows);
    let batch = RecordBatch::try_from_iter(arrays).map_err(|e| e.to_string())?;
    let file = fs_err::File::create(path).map_err(|e| e.to_string())?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut w =
        ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(|e| e.to_string())?;
    w.write(&batch).map_err(|e| e.to_string())?;
    w.close().map_err(|e| e.to_string())?;
    Ok(())
}

/// Writes `rows` as JSON lines of `shape`.
pub fn write_jsonl(path: &Path, shape: Shape, rows: &[Row]) -> Result<(), String> {
    let cols = columns(shape, rows);
    let mut out = String::new();
    for i in 0..rows.len() {
        let mut obj = serde_json::Map::new();
        for (name, data) in &cols {
            let v = match data {
                Data::Str(v) => serde_json::json!(v[i]),
                Data::List(v) => serde_json::json!(v[i]),
            };
            obj.insert(name.to_string(), v);
        }
        out.push_str(&serde_json::Value::Object(obj).to_string());
        out.push('\n');
    }
    fs_err::write(path, out).map_err(|e| e.to_string())
}
