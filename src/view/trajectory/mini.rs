//! mini-swe-agent: the trajectory JSON the built-in command prints after its marker line
//! (`info.model_stats`, `messages`: `system`, `user` and `assistant` messages, the assistant's
//! `extra.response.usage` per call; its actions are the bash blocks of the assistant's text,
//! or `tool_calls` where the model called tools, and their results the next `user` or `tool`
//! message).

use serde_json::Value;

use super::{Step, content_text, openai_tokens, str_at};
use crate::harness::usage::MINI_TRAJECTORY_MARKER;

/// The trajectory object after the marker (or the last JSON object with `messages` and
/// `info`).
fn trajectory(output: &str) -> Option<Value> {
    let after = output
        .rfind(MINI_TRAJECTORY_MARKER)
        .map(|i| &output[i + MINI_TRAJECTORY_MARKER.len()..])?;
    let v: Value = serde_json::from_str(after.trim()).ok()?;
    (v.get("messages").is_some()).then_some(v)
}

/// The fenced ```bash blocks of a text.
fn bash_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("```bash") {
        let body = &rest[i + 7..];
        let Some(end) = body.find("```") else { break };
        out.push(body[..end].trim_matches('\n').to_string());
        rest = &body[end + 3..];
    }
    out
}

fn timestamp(m: &Value) -> Option<String> {
    let t = m
        .pointer("/extra/timestamp")
        .or_else(|| m.get("timestamp"))?;
    match t {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => n.as_f64().and_then(|secs| {
            jiff::Timestamp::from_millisecond((secs * 1000.0) as i64)
                .ok()
                .map(|t| t.to_string())
        }),
        _ => None,
    }
}

pub fn read(output: &str) -> Option<Vec<Step>> {
    let v = trajectory(output)?;
    let mut steps = Vec::new();
    let mut n_calls = 0u32;
    for m in v.get("messages")?.as_array()? {
        let role = str_at(m, "/role").unwrap_or_else(|| "user".into());
        let text = content_text(m.get("content").unwrap_or(&Value::Null));
        let ts = timestamp(m);
        let mut these = Vec::new();
        match role.as_str() {
            "assistant" => {
                these.push(Step::message("assistant", text.clone()));
                if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
                    for c in calls {
                        let args = str_at(c, "/function/arguments")
                            .map(|a| serde_json::from_str(&a).unwrap_or(Value::String(a)))
                            .unwrap_or(Value::Null);
                        these.push(Step::tool_call(
                            &str_at(c, "/function/name").unwrap_or_default(),
                            str_at(c, "/id"),
                            args,
                        ));
                    }
                } else {
                    for (i, cmd) in bash_blocks(&text).into_iter().enumerate() {
                        n_calls += 1;
                        let _ = i;
                        these.push(Step::tool_call(
                            "bash",
                            Some(format!("action-{n_calls}")),
                            serde_json::json!({"command": cmd}),
                        ));
                    }
                }
                let usage = m.pointer("/extra/response/usage").and_then(openai_tokens);
                let model = str_at(m, "/extra/response/model");
                if let Some(last) = these.first_mut() {
                    last.usage = usage;
                    last.model = model;
                }
            }
            "tool" => these.push(Step::tool_result(str_at(m, "/tool_call_id"), text)),
            "user" if steps.iter().any(|s: &Step| s.kind == "tool_call") => {
                // An observation: the result of the last action.
                let mut s = Step::tool_result(Some(format!("action-{n_calls}")), text);
                s.role = Some("user".into());
                these.push(s);
            }
            "system" | "user" => these.push(Step::message(&role, text)),
            // mini's own records (`exit`, ...): events, when they say anything.
            r if !text.trim().is_empty() => {
                let mut s = Step::message(r, text);
                s.kind = "event";
                these.push(s);
            }
            _ => {}
        }
        for mut s in these {
            s.timestamp.clone_from(&ts);
            steps.push(s);
        }
    }
    if let Some(exit) = str_at(&v, "/info/exit_status") {
        let mut s = Step::message("system", format!("exit: {exit}"));
        s.kind = "event";
        steps.push(s);
    }
    Some(steps)
}
