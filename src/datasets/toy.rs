//! A toy benchmark's dataset format, compiled into tests only: JSON lines of `instance_id`,
//! `repo`, `created_at`, `problem_statement`, `patch` and `test_cmd`, graded by the toy protocol
//! (`protocols/toy.rs`). This file, its line in `registry.rs`'s list, and the protocol's file and
//! line are the whole of the toy benchmark (docs/adding-a-benchmark.md).

use super::error::DatasetError;
use super::format::Format;
use super::table::{Table, normalize_date};
use crate::jobs::ProtocolId;
use crate::tasks::{Task, TaskBase};
use crate::types::DatasetFormat;

pub(crate) struct Toy;

const COLUMNS: [&str; 6] = [
    "instance_id",
    "repo",
    "created_at",
    "problem_statement",
    "patch",
    "test_cmd",
];

impl Format for Toy {
    fn id(&self) -> DatasetFormat {
        DatasetFormat::named("toy")
    }

    fn protocol(&self) -> ProtocolId {
        ProtocolId::named("toy")
    }

    fn columns(&self) -> Vec<&'static str> {
        COLUMNS.to_vec()
    }

    fn required(&self) -> Vec<&'static str> {
        COLUMNS.to_vec()
    }

    fn rows(&self, t: &mut Table) -> Result<Vec<Task>, DatasetError> {
        t.require(&COLUMNS)?;
        (0..t.rows)
            .map(|row| {
                let created_at = t.req_str(row, "created_at")?;
                let instance_id = t.req_str(row, "instance_id")?;
                let base = TaskBase::Image {
                    image: "toy".into(),
                    base_commit: "HEAD".into(),
                };
                Ok(Task {
                    repo: t.req_str(row, "repo")?,
                    created_at: normalize_date(&created_at).unwrap_or(created_at),
                    problem_statement: t.req_str(row, "problem_statement")?,
                    gold_patch: t.req_str(row, "patch")?,
                    test_cmds: vec![t.req_str(row, "test_cmd")?],
                    ..Task::blank(instance_id, base)
                })
            })
            .collect()
    }
}

/// The toy benchmark end to end below the graph: its rows read by name, its protocol found by
/// the format, its gold patch graded resolved and the empty patch not.
#[tokio::test]
async fn a_toy_benchmark_is_one_dataset_format_and_one_protocol() {
    use crate::protocols::toy::{MAKES_DONE, grade};
    use crate::types::AuditMode;

    let dir = tempfile::tempdir().unwrap();
    let rows = dir.path().join("toy.jsonl");
    let row = serde_json::json!({
        "instance_id": "toy-1",
        "repo": "toy/toy",
        "created_at": "2026-01-01T00:00:00Z",
        "problem_statement": "create DONE",
        "patch": MAKES_DONE,
        "test_cmd": "test -f DONE",
    });
    fs_err::write(&rows, format!("{row}\n")).unwrap();

    let format = super::format_named("toy").expect("the toy format is registered");
    assert!(super::format_names().contains(&"toy"));
    let tasks = super::read_local(format.id(), &rows).unwrap();
    assert_eq!(tasks.len(), 1);
    let protocol = format.protocol();
    assert!(crate::protocols::is_registered(protocol));

    let gold = tasks[0].gold_patch.clone();
    let g = grade(tasks[0].clone(), protocol, &gold, AuditMode::Flag).await;
    assert!(g.output.resolved, "{:?}", g.output);
    let g = grade(tasks[0].clone(), protocol, "", AuditMode::Flag).await;
    assert!(!g.output.resolved);
}
