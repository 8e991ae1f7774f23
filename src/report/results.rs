//! Per-node rows (`results.parquet`) and SWE-bench predictions (`predictions.jsonl`).

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use serde::{Deserialize, Serialize};

/// One solve or grade node of the report's inputs: a row of `results.parquet`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeRow {
    /// `solve` or `grade`.
    pub node: String,
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
    pub status: String,
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

/// Encodes the rows (in the order given) as a Parquet file, uncompressed, without timestamps
/// or other varying metadata: the same rows give the same bytes. Each row also carries its
/// team's numbers from `teams` (null for a team the report does not list).
pub fn results_parquet(
    rows: &[&NodeRow],
    teams: &std::collections::BTreeMap<String, TeamColumns>,
) -> Result<Vec<u8>, String> {
    let team = |r: &NodeRow| teams.get(&r.team);
    let schema = Arc::new(results_schema());
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
    let columns: Vec<ArrayRef> = vec![
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
        f64s(&|r| r.cost_usd),
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
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns).map_err(|e| e.to_string())?;
    let props = WriterProperties::builder()
        .set_created_by(format!("bench {}", env!("CARGO_PKG_VERSION")))
        .build();
    let mut buf = Vec::new();
    let mut writer =
        ArrowWriter::try_new(&mut buf, schema, Some(props)).map_err(|e| e.to_string())?;
    writer.write(&batch).map_err(|e| e.to_string())?;
    writer.close().map_err(|e| e.to_string())?;
    Ok(buf)
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
