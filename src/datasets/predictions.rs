//! SWE-bench predictions files: `{instance_id, model_name_or_path, model_patch}` records as a
//! JSON list, a JSON object keyed by instance id, or JSON lines. Read by the `predictions`
//! harness; written by `bench export` (what it exports: `graph/export.rs`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

/// One prediction, as written by `bench export`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Prediction {
    pub instance_id: String,
    pub model_name_or_path: String,
    pub model_patch: String,
}

fn patch_of(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Object(o) => o
            .get("model_patch")
            .or_else(|| o.get("patch"))
            .and_then(|p| p.as_str())
            .map(String::from),
        _ => None,
    }
}

/// The patch a predictions harness gives `instance_id` (`None`: no or an empty prediction).
/// The file is read and parsed once per process, not once per solve node.
pub fn prediction_for(
    harness: &crate::types::Harness,
    instance_id: &str,
) -> Result<Option<String>, String> {
    Ok(predictions(harness)?
        .get(instance_id)
        .filter(|p| !p.trim().is_empty())
        .cloned())
}

/// The digest of a predictions harness's patches, as this process's solves read them (the
/// file is read once per process): part of the no-op memo's fingerprint (`run/noop.rs`).
pub fn predictions_digest(harness: &crate::types::Harness) -> Result<String, String> {
    Ok(crate::key::digest(
        &serde_json::to_vec(&*predictions(harness)?).expect("predictions serialize"),
    ))
}

/// A predictions harness's file, read and parsed once per process.
fn predictions(
    harness: &crate::types::Harness,
) -> Result<std::sync::Arc<BTreeMap<String, String>>, String> {
    type Cache = std::sync::Mutex<
        std::collections::HashMap<std::path::PathBuf, std::sync::Arc<BTreeMap<String, String>>>,
    >;
    static CACHE: std::sync::LazyLock<Cache> = std::sync::LazyLock::new(Default::default);
    let path = harness
        .path
        .as_deref()
        .ok_or_else(|| format!("harness `{}` has no predictions file", harness.name))?;
    let cached = CACHE
        .lock()
        .expect("the predictions cache is not poisoned")
        .get(path)
        .cloned();
    Ok(match cached {
        Some(p) => p,
        None => {
            let p = std::sync::Arc::new(load_predictions(path)?);
            CACHE
                .lock()
                .expect("the predictions cache is not poisoned")
                .insert(path.to_path_buf(), p.clone());
            p
        }
    })
}

/// instance id -> patch. A record without a patch (null) maps to nothing.
pub fn load_predictions(path: &Path) -> Result<BTreeMap<String, String>, String> {
    let limit = crate::tasks::FileLimits::current()?.dataset_file;
    let text = crate::regular_file::read_text(path, limit)
        .map_err(|e| format!("cannot read predictions: {e}"))?;
    let bad = |what: String| format!("predictions {}: {what}", path.display());
    let mut out = BTreeMap::new();
    let mut add = |v: &serde_json::Value, at: String| -> Result<(), String> {
        let id = v
            .get("instance_id")
            .and_then(|i| i.as_str())
            .ok_or_else(|| bad(format!("{at}: no `instance_id`")))?;
        if let Some(p) = patch_of(v) {
            out.insert(id.to_string(), p);
        }
        Ok(())
    };
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let items: Vec<serde_json::Value> =
            serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        for (i, v) in items.iter().enumerate() {
            add(v, format!("item {}", i + 1))?;
        }
    } else if trimmed.starts_with('{')
        && let Ok(serde_json::Value::Object(map)) = serde_json::from_str(&text)
        && !map.contains_key("instance_id")
    {
        // Keyed by instance id: `{"id": {"model_patch": "..."}}`.
        for (id, v) in map {
            if let Some(p) = patch_of(&v) {
                out.insert(id, p);
            }
        }
    } else {
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: serde_json::Value =
                serde_json::from_str(line).map_err(|e| bad(format!("line {}: {e}", i + 1)))?;
            add(&v, format!("line {}", i + 1))?;
        }
    }
    Ok(out)
}

/// JSON lines, one prediction per line, in the given order.
pub fn to_jsonl(preds: &[Prediction]) -> String {
    preds
        .iter()
        .map(|p| serde_json::to_string(p).expect("predictions serialize") + "\n")
        .collect()
}

/// Predictions grouped by team (`model_name_or_path`), each sorted by instance id.
pub fn by_team(preds: Vec<Prediction>) -> BTreeMap<String, Vec<Prediction>> {
    let mut out: BTreeMap<String, Vec<Prediction>> = BTreeMap::new();
    for p in preds {
        out.entry(p.model_name_or_path.clone()).or_default().push(p);
    }
    for v in out.values_mut() {
        v.sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_encodings_read_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let rec = |id: &str| serde_json::json!({"instance_id": id, "model_name_or_path": "m", "model_patch": format!("diff {id}\n")});
        let list = serde_json::json!([rec("a"), rec("b")]).to_string();
        let keyed = serde_json::json!({"a": rec("a"), "b": rec("b")}).to_string();
        let lines = format!("{}\n\n{}\n", rec("a"), rec("b"));
        for (name, text) in [("l.json", list), ("k.json", keyed), ("p.jsonl", lines)] {
            let p = dir.path().join(name);
            fs_err::write(&p, text).unwrap();
            let got = load_predictions(&p).unwrap();
            assert_eq!(got.len(), 2, "{name}");
            assert_eq!(got["b"], "diff b\n", "{name}");
        }
        // A single JSON-lines record is not mistaken for a keyed object.
        let p = dir.path().join("one.jsonl");
        fs_err::write(&p, rec("a").to_string()).unwrap();
        assert_eq!(load_predictions(&p).unwrap().len(), 1);
    }
}
