//! Claude Code: its transcript under the home (`.claude/projects/<dir>/<session>.jsonl`: one
//! record per line, `user` and `assistant` messages with `text`, `thinking`, `tool_use` and
//! `tool_result` blocks, a `timestamp` each, and the assistant message's `usage`, repeated on
//! every record of one message id), else the `--output-format json` result object it printed
//! (the final message, the run's usage and `total_cost_usd`).

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Step, content_text, str_at, u64_at};
use crate::jobs::Tokens;

fn tokens(u: &Value) -> Tokens {
    let read = u64_at(u, "/cache_read_input_tokens");
    let write = u64_at(u, "/cache_creation_input_tokens");
    Tokens {
        input: u64_at(u, "/input_tokens") + read + write,
        cached_input: read,
        cache_write: write,
        output: u64_at(u, "/output_tokens"),
    }
}

pub fn read(output: &str, files: &[(String, String)]) -> Option<Vec<Step>> {
    let transcripts: Vec<&(String, String)> = files
        .iter()
        .filter(|(p, _)| p.contains(".claude/projects/") && p.ends_with(".jsonl"))
        .collect();
    if !transcripts.is_empty() {
        let mut steps = Vec::new();
        for (_, text) in transcripts {
            steps.extend(transcript(text));
        }
        return Some(steps);
    }
    result_object(output)
}

fn transcript(text: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    // Usage is counted once per assistant message id (its records each repeat it).
    let mut counted = BTreeSet::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            if !line.trim().is_empty() {
                steps.push(Step::message("event", line.to_string()));
            }
            continue;
        };
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        let ts = str_at(&v, "/timestamp");
        if kind != "user" && kind != "assistant" {
            if kind == "system"
                && let Some(t) = str_at(&v, "/content")
            {
                let mut s = Step::message("system", t);
                s.kind = "event";
                s.timestamp = ts;
                steps.push(s);
            }
            continue;
        }
        let msg = v.get("message").cloned().unwrap_or(Value::Null);
        let role = str_at(&msg, "/role").unwrap_or_else(|| kind.to_string());
        let model = str_at(&msg, "/model");
        let content = msg.get("content").cloned().unwrap_or(Value::Null);
        let mut these = Vec::new();
        match &content {
            Value::Array(blocks) => {
                for b in blocks {
                    match b.get("type").and_then(Value::as_str).unwrap_or("") {
                        "text" => these.push(Step::message(
                            &role,
                            content_text(&Value::Array(vec![b.clone()])),
                        )),
                        "thinking" => {
                            let mut s =
                                Step::message(&role, str_at(b, "/thinking").unwrap_or_default());
                            s.kind = "reasoning";
                            these.push(s);
                        }
                        "tool_use" => these.push(Step::tool_call(
                            &str_at(b, "/name").unwrap_or_default(),
                            str_at(b, "/id"),
                            b.get("input").cloned().unwrap_or(Value::Null),
                        )),
                        "tool_result" => {
                            let mut s = Step::tool_result(
                                str_at(b, "/tool_use_id"),
                                content_text(b.get("content").unwrap_or(&Value::Null)),
                            );
                            s.is_error = b.get("is_error").and_then(Value::as_bool);
                            these.push(s);
                        }
                        _ => {}
                    }
                }
            }
            other => {
                let t = content_text(other);
                if !t.is_empty() {
                    these.push(Step::message(&role, t));
                }
            }
        }
        if role == "assistant"
            && let Some(u) = msg.get("usage")
            && counted.insert(str_at(&msg, "/id").unwrap_or_else(|| line.to_string()))
            && let Some(last) = these.last_mut()
        {
            last.usage = Some(tokens(u));
            last.model.clone_from(&model);
        }
        for mut s in these {
            s.timestamp.clone_from(&ts);
            if s.model.is_none() {
                s.model.clone_from(&model);
            }
            steps.push(s);
        }
    }
    steps
}

/// The `--output-format json` object: `{"type": "result", "result": ..., "usage": ...}`.
fn result_object(output: &str) -> Option<Vec<Step>> {
    let v = output.lines().rev().find_map(|l| {
        serde_json::from_str::<Value>(l.trim())
            .ok()
            .filter(|v| v.get("type").and_then(Value::as_str) == Some("result"))
    })?;
    let mut s = Step::message("assistant", str_at(&v, "/result").unwrap_or_default());
    if v.get("is_error").and_then(Value::as_bool) == Some(true) {
        s.kind = "error";
    }
    s.usage = v.get("usage").map(tokens);
    s.cost_usd = v.get("total_cost_usd").and_then(Value::as_f64);
    Some(vec![s])
}
