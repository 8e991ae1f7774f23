//! OpenCode: its session storage under the home (`.local/share/opencode/storage/message/
//! <session>/<message>.json` with `role`, `time.created` in ms, `modelID`, `tokens`
//! (`input`, `output`, `cache.read`, `cache.write`) and `cost`; `storage/part/<message>/
//! <part>.json` with `type` `text`, `reasoning`, `tool` (`tool`, `callID`, `state.input`,
//! `state.output`, `state.status`) or `step-finish`), or the JSON `opencode export` prints
//! (`{info, messages: [{info, parts}]}`, the same objects).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Step, str_at, u64_at};
use crate::jobs::Tokens;

fn tokens(t: &Value) -> Tokens {
    let read = u64_at(t, "/cache/read");
    let write = u64_at(t, "/cache/write");
    Tokens {
        input: u64_at(t, "/input") + read + write,
        cached_input: read,
        cache_write: write,
        output: u64_at(t, "/output") + u64_at(t, "/reasoning"),
    }
}

fn millis(v: &Value, ptr: &str) -> Option<String> {
    v.pointer(ptr)
        .and_then(Value::as_i64)
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map(|t| t.to_string())
}

pub fn read(output: &str, files: &[(String, String)]) -> Option<Vec<Step>> {
    let messages = stored(files).or_else(|| exported(output))?;
    let mut steps = Vec::new();
    for (info, parts) in messages {
        let role = str_at(&info, "/role").unwrap_or_else(|| "assistant".into());
        let ts = millis(&info, "/time/created");
        let mut these = Vec::new();
        for p in &parts {
            let mut s = match str_at(p, "/type").as_deref().unwrap_or("") {
                "text" => Step::message(&role, str_at(p, "/text").unwrap_or_default()),
                "reasoning" => {
                    let mut s = Step::message(&role, str_at(p, "/text").unwrap_or_default());
                    s.kind = "reasoning";
                    s
                }
                "tool" => {
                    let call = Step::tool_call(
                        &str_at(p, "/tool").unwrap_or_default(),
                        str_at(p, "/callID"),
                        p.pointer("/state/input").cloned().unwrap_or(Value::Null),
                    );
                    let mut call = call;
                    call.timestamp = millis(p, "/state/time/start").or(ts.clone());
                    these.push(call);
                    let out = str_at(p, "/state/output")
                        .or_else(|| str_at(p, "/state/error"))
                        .unwrap_or_default();
                    let mut r = Step::tool_result(str_at(p, "/callID"), out);
                    r.tool = str_at(p, "/tool");
                    r.is_error = Some(str_at(p, "/state/status").as_deref() == Some("error"));
                    r.timestamp = millis(p, "/state/time/end");
                    r
                }
                _ => continue,
            };
            if s.timestamp.is_none() {
                s.timestamp.clone_from(&ts);
            }
            these.push(s);
        }
        if role == "assistant"
            && let Some(t) = info.get("tokens")
        {
            if these.is_empty() {
                these.push(Step::message("assistant", ""));
            }
            if let Some(last) = these.last_mut() {
                last.usage = Some(tokens(t));
                last.cost_usd = info.get("cost").and_then(Value::as_f64);
                last.model = str_at(&info, "/modelID");
            }
        }
        steps.extend(these);
    }
    Some(steps)
}

/// Messages and their parts from the storage files, ordered by creation time then id.
fn stored(files: &[(String, String)]) -> Option<Vec<(Value, Vec<Value>)>> {
    let mut messages: BTreeMap<String, Value> = BTreeMap::new();
    let mut parts: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
    for (path, text) in files {
        let Some(rel) = path.split("opencode/storage/").nth(1) else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            continue;
        };
        if rel.starts_with("message/") {
            let id = str_at(&v, "/id").unwrap_or_else(|| rel.to_string());
            messages.insert(id, v);
        } else if rel.starts_with("part/") {
            let msg = str_at(&v, "/messageID").unwrap_or_default();
            let id = str_at(&v, "/id").unwrap_or_else(|| rel.to_string());
            parts.entry(msg).or_default().push((id, v));
        }
    }
    if messages.is_empty() {
        return None;
    }
    let mut out: Vec<(Value, Vec<Value>)> = messages
        .into_iter()
        .map(|(id, info)| {
            let mut p = parts.remove(&id).unwrap_or_default();
            p.sort_by(|a, b| a.0.cmp(&b.0));
            (info, p.into_iter().map(|(_, v)| v).collect())
        })
        .collect();
    out.sort_by_key(|(info, _)| {
        (
            info.pointer("/time/created")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            str_at(info, "/id"),
        )
    });
    Some(out)
}

/// `opencode export`'s JSON in the output.
fn exported(output: &str) -> Option<Vec<(Value, Vec<Value>)>> {
    let start = output.find('{')?;
    let v: Value = serde_json::from_str(output[start..].trim()).ok()?;
    let messages = v.get("messages")?.as_array()?;
    Some(
        messages
            .iter()
            .map(|m| {
                (
                    m.get("info").cloned().unwrap_or(Value::Null),
                    m.get("parts")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default(),
                )
            })
            .collect(),
    )
}
