//! Per-node rows (`results.parquet`) and SWE-bench predictions (`predictions.jsonl`).

use std::borrow::Cow;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use serde::{Deserialize, Serialize};

/// One solve or grade node of the report's inputs: a row of `results.parquet`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeRow {
    /// `solve` or `grade` (a name bench writes is held without a copy per row).
    pub node: Cow<'static, str>,
    /// The node's address (`grade/<task>/<team>/<replicate>`).
    pub address: String,
    /// The node's key; `None` when it never ran.
    pub key: Option<String>,
    pub task: String,
    pub repo: Option<String>,
    pub language: Option<String>,
    pub team: String,
    pub replicate: u32,
    /// `ok`, `failed` (infrastructure error) or `not_run`.
    pub status: Cow<'static, str>,
    /// Grade nodes: the verdict.
    pub resolved: Option<bool>,
    /// Solve nodes: the agent hit the timeout; grade nodes: the solve or the tests did.
    pub timed_out: Option<bool>,
    /// An infrastructure error (the node failed).
    pub errored: bool,
    pub error: Option<String>,
    /// Grade nodes: the patch applied.
    pub patch_applied: Option<bool>,
    /// Grade nodes of protocols that grade as SWE-bench does: `RESOLVED_FULL`,
    /// `RESOLVED_PARTIAL` or `RESOLVED_NO` (`get_resolution_status`).
    #[serde(default)]
    pub resolution: Option<String>,
    /// Solve nodes: model spend (`None`: unknown).
    pub cost_usd: Option<f64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Solve nodes: the patch size.
    pub patch_bytes: Option<u64>,
    /// The node's own duration (solve: the agents; grade: the tests).
    pub duration_s: Option<f64>,
    /// Grade nodes of scored tasks (Harbor): the reward's `reward` field, the report's score,
    /// and where the verifier ran (`in-place`, `fresh`, `oracle`, `nop`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verifier: Option<String>,
}

/// A team's resolve rate and intervals, repeated on each of its rows of `results.parquet` (the
/// report's numbers, computed when it renders; not part of any key).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TeamColumns {
    pub rate: f64,
    pub wilson_low: f64,
    pub wilson_high: f64,
    pub cluster_low: Option<f64>,
    pub cluster_high: Option<f64>,
}

/// The Arrow schema of `results.parquet`.
pub fn results_schema() -> Schema {
    let s = |n: &str, null: bool| Field::new(n, DataType::Utf8, null);
    let b = |n: &str| Field::new(n, DataType::Boolean, true);
    Schema::new(vec![
        s("node", false),
        s("address", false),
        s("key", true),
        s("task", false),
        s("repo", true),
        s("language", true),
        s("team", false),
        Field::new("replicate", DataType::UInt32, false),
        s("status", false),
        b("resolved"),
        b("timed_out"),
        Field::new("errored", DataType::Boolean, false),
        s("error", true),
        b("patch_applied"),
        s("resolution", true),
        Field::new("cost_usd", DataType::Float64, true),
        Field::new("input_tokens", DataType::UInt64, true),
        Field::new("output_tokens", DataType::UInt64, true),
        Field::new("patch_bytes", DataType::UInt64, true),
        Field::new("duration_s", DataType::Float64, true),
        Field::new("reward", DataType::Float64, true),
        Field::new("score", DataType::Float64, true),
        s("verifier", true),
        Field::new("team_rate", DataType::Float64, true),
        Field::new("team_wilson_low", DataType::Float64, true),
        Field::new("team_wilson_high", DataType::Float64, true),
        Field::new("team_cluster_low", DataType::Float64, true),
        Field::new("team_cluster_high", DataType::Float64, true),
    ])
}

/// Rows encoded per Arrow batch: the writer's own mini-batch (`write_batch_size`, 1,024 by
/// default), so that writing in batches cuts the column chunks where one batch would and the
/// bytes are the same, while the arrays hold one batch's rows, not every row.
const ROWS_PER_BATCH: usize = 1024;

/// Encodes the rows (in the order given) as a Parquet file, uncompressed, without timestamps
/// or other varying metadata: the same rows give the same bytes. Each row also carries its
/// team's numbers from `teams` (null for a team the report does not list) and its cost from
/// `cost` (the report's pricing). One row group, written [`ROWS_PER_BATCH`] rows at a time.
pub fn results_parquet(
    rows: &[&NodeRow],
    teams: &std::collections::BTreeMap<String, TeamColumns>,
    cost: &dyn Fn(&NodeRow) -> Option<f64>,
) -> Result<Vec<u8>, String> {
    write_parquet(rows, teams, cost, ROWS_PER_BATCH)
}

/// [`results_parquet`] with `per_batch` rows per Arrow batch.
fn write_parquet(
    rows: &[&NodeRow],
    teams: &std::collections::BTreeMap<String, TeamColumns>,
    cost: &dyn Fn(&NodeRow) -> Option<f64>,
    per_batch: usize,
) -> Result<Vec<u8>, String> {
    let schema = Arc::new(results_schema());
    let props = WriterProperties::builder()
        .set_created_by(format!("bench {}", env!("CARGO_PKG_VERSION")))
        .build();
    let mut buf = Vec::new();
    let mut writer =
        ArrowWriter::try_new(&mut buf, schema.clone(), Some(props)).map_err(|e| e.to_string())?;
    // An empty file still has its (empty) row group, as one empty batch gave.
    let mut chunks: Vec<&[&NodeRow]> = rows.chunks(per_batch.max(1)).collect();
    if chunks.is_empty() {
        chunks.push(&[]);
    }
    for chunk in chunks {
        let batch = RecordBatch::try_new(schema.clone(), columns(chunk, teams, cost))
            .map_err(|e| e.to_string())?;
        writer.write(&batch).map_err(|e| e.to_string())?;
    }
    writer.close().map_err(|e| e.to_string())?;
    Ok(buf)
}

/// The columns of `results.parquet` for `rows`.
fn columns(
    rows: &[&NodeRow],
    teams: &std::collections::BTreeMap<String, TeamColumns>,
    cost: &dyn Fn(&NodeRow) -> Option<f64>,
) -> Vec<ArrayRef> {
    let team = |r: &NodeRow| teams.get(&r.team);
    let strs = |f: &dyn Fn(&NodeRow) -> Option<&str>| -> ArrayRef {
        Arc::new(rows.iter().map(|r| f(r)).collect::<StringArray>())
    };
    let bools = |f: &dyn Fn(&NodeRow) -> Option<bool>| -> ArrayRef {
        Arc::new(rows.iter().map(|r| f(r)).collect::<BooleanArray>())
    };
    let u64s = |f: &dyn Fn(&NodeRow) -> Option<u64>| -> ArrayRef {
        Arc::new(rows.iter().map(|r| f(r)).collect::<UInt64Array>())
    };
    let f64s = |f: &dyn Fn(&NodeRow) -> Option<f64>| -> ArrayRef {
        Arc::new(rows.iter().map(|r| f(r)).collect::<Float64Array>())
    };
    vec![
        strs(&|r| Some(&r.node)),
        strs(&|r| Some(&r.address)),
        strs(&|r| r.key.as_deref()),
        strs(&|r| Some(&r.task)),
        strs(&|r| r.repo.as_deref()),
        strs(&|r| r.language.as_deref()),
        strs(&|r| Some(&r.team)),
        Arc::new(
            rows.iter()
                .map(|r| Some(r.replicate))
                .collect::<UInt32Array>(),
        ),
        strs(&|r| Some(&r.status)),
        bools(&|r| r.resolved),
        bools(&|r| r.timed_out),
        bools(&|r| Some(r.errored)),
        strs(&|r| r.error.as_deref()),
        bools(&|r| r.patch_applied),
        strs(&|r| r.resolution.as_deref()),
        f64s(cost),
        u64s(&|r| r.input_tokens),
        u64s(&|r| r.output_tokens),
        u64s(&|r| r.patch_bytes),
        f64s(&|r| r.duration_s),
        f64s(&|r| r.reward),
        f64s(&|r| r.score),
        strs(&|r| r.verifier.as_deref()),
        f64s(&|r| team(r).map(|t| t.rate)),
        f64s(&|r| team(r).map(|t| t.wilson_low)),
        f64s(&|r| team(r).map(|t| t.wilson_high)),
        f64s(&|r| team(r).and_then(|t| t.cluster_low)),
        f64s(&|r| team(r).and_then(|t| t.cluster_high)),
    ]
}

/// A line of `predictions.jsonl` (the SWE-bench predictions format).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub instance_id: String,
    pub model_name_or_path: String,
    pub model_patch: String,
}

/// JSON lines, in the order given.
pub fn predictions_jsonl(predictions: &[Prediction]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in predictions {
        out.extend(serde_json::to_vec(p).expect("predictions serialize"));
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: usize) -> NodeRow {
        let solve = i.is_multiple_of(2);
        NodeRow {
            node: if solve { "solve" } else { "grade" }.into(),
            address: format!("grade/task-{i}/team/0"),
            key: (!i.is_multiple_of(7)).then(|| format!("{i:064x}")),
            task: format!("task-{}", i / 4),
            repo: Some(format!("owner/repo-{}", i % 13)),
            language: (!i.is_multiple_of(5)).then(|| "python".into()),
            team: format!("team-{}", i % 3),
            replicate: (i % 2) as u32,
            status: if i.is_multiple_of(11) { "failed" } else { "ok" }.into(),
            resolved: (!solve).then_some(i.is_multiple_of(3)),
            timed_out: Some(i.is_multiple_of(17)),
            errored: i.is_multiple_of(11),
            // Long, varied errors: the string columns fill several data pages.
            error: (i.is_multiple_of(11)).then(|| format!("error {i} {}", "x".repeat(i % 3000))),
            patch_applied: (!solve).then_some(true),
            resolution: (!solve).then(|| "RESOLVED_NO".into()),
            cost_usd: None,
            input_tokens: solve.then_some(i as u64 * 31),
            output_tokens: solve.then_some(i as u64 * 7),
            patch_bytes: solve.then_some(i as u64),
            duration_s: Some(i as f64 / 8.0),
            reward: None,
            score: (i.is_multiple_of(4)).then_some(0.5),
            verifier: None,
        }
    }

    /// Written a batch at a time, the file has the bytes of the rows written as one batch
    /// (what the report wrote before), for no rows, fewer than a batch, and many batches with
    /// pages cut inside them; a batch size off the writer's mini-batch would cut elsewhere.
    #[test]
    fn batches_give_the_bytes_of_one_batch() {
        let teams = std::collections::BTreeMap::from([(
            "team-1".to_string(),
            TeamColumns {
                rate: 0.5,
                wilson_low: 0.25,
                wilson_high: 0.75,
                cluster_low: None,
                cluster_high: Some(0.8),
            },
        )]);
        let cost = |r: &NodeRow| (r.node == "solve").then_some(r.replicate as f64 + 0.125);
        for n in [0, 1, 1023, 1024, 1025, 9000] {
            let rows: Vec<NodeRow> = (0..n).map(row).collect();
            let rows: Vec<&NodeRow> = rows.iter().collect();
            let whole = write_parquet(&rows, &teams, &cost, usize::MAX).expect("one batch");
            let batched = results_parquet(&rows, &teams, &cost).expect("batches");
            assert!(whole == batched, "{n} rows: the batched file differs");
        }
    }

    /// A row's kind and status held as bench's own names are written, and read back, as the
    /// strings they replace: a row read from JSON (owned names) writes the bytes it was read
    /// from and equals the row with borrowed names.
    #[test]
    fn rows_with_borrowed_names_are_the_rows_with_strings() {
        for i in 0..40 {
            let r = row(i);
            assert!(matches!(r.node, Cow::Borrowed(_)) && matches!(r.status, Cow::Borrowed(_)));
            let json = serde_json::to_string(&r).unwrap();
            let mut value: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert_eq!(value["node"], if i % 2 == 0 { "solve" } else { "grade" });
            assert_eq!(value["status"], if i % 11 == 0 { "failed" } else { "ok" });
            let back: NodeRow = serde_json::from_str(&json).unwrap();
            assert!(matches!(back.node, Cow::Owned(_)));
            assert_eq!(back, r);
            assert_eq!(serde_json::to_string(&back).unwrap(), json);
            // A name bench does not write is read as it is.
            value["status"] = "something else".into();
            let other: NodeRow = serde_json::from_value(value).unwrap();
            assert_eq!(other.status, "something else");
        }
    }
}
