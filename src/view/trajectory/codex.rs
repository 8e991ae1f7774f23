//! Codex: its session rollout under the home (`.codex/sessions/.../rollout-*.jsonl`: records
//! `{timestamp, type, payload}`; `response_item` payloads are `message`, `reasoning`,
//! `function_call` (arguments as a JSON string) and `function_call_output`; `event_msg`
//! `token_count` payloads carry the last call's usage), else the `exec --json` events it
//! printed (`item.completed` items: `agent_message`, `reasoning`, `command_execution`,
//! `file_change`, ...; `turn.completed` with the turn's usage; `error`, `turn.failed`).

use serde_json::Value;

use super::{Step, content_text, str_at, u64_at};
use crate::jobs::Tokens;

fn tokens(u: &Value) -> Tokens {
    Tokens {
        input: u64_at(u, "/input_tokens"),
        cached_input: u64_at(u, "/cached_input_tokens"),
        cache_write: u64_at(u, "/cache_write_input_tokens"),
        output: u64_at(u, "/output_tokens"),
    }
}

pub fn read(output: &str, files: &[(String, String)]) -> Option<Vec<Step>> {
    let rollouts: Vec<&(String, String)> = files
        .iter()
        .filter(|(p, _)| p.contains(".codex/sessions/") && p.ends_with(".jsonl"))
        .collect();
    if !rollouts.is_empty() {
        let mut steps = Vec::new();
        for (_, text) in rollouts {
            steps.extend(rollout(text));
        }
        return Some(steps);
    }
    events(output)
}

/// Attaches usage to the last assistant step since the last attachment.
fn attach(steps: &mut [Step], from: usize, t: Tokens) {
    if let Some(s) = steps[from..]
        .iter_mut()
        .rev()
        .find(|s| s.role.as_deref() == Some("assistant"))
    {
        s.usage = Some(t);
    }
}

fn rollout(text: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut since_usage = 0;
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let ts = str_at(&v, "/timestamp");
        let p = v.get("payload").cloned().unwrap_or(Value::Null);
        let ptype = str_at(&p, "/type").unwrap_or_default();
        let step = match (v.get("type").and_then(Value::as_str), ptype.as_str()) {
            (Some("response_item"), "message") => {
                let role = str_at(&p, "/role").unwrap_or_else(|| "assistant".into());
                Some(Step::message(
                    &role,
                    content_text(p.get("content").unwrap_or(&Value::Null)),
                ))
            }
            (Some("response_item"), "reasoning") => {
                let text = p
                    .get("summary")
                    .map(content_text)
                    .filter(|t| !t.is_empty())
                    .or_else(|| p.get("content").map(content_text))
                    .unwrap_or_default();
                let mut s = Step::message("assistant", text);
                s.kind = "reasoning";
                Some(s)
            }
            (Some("response_item"), "function_call" | "custom_tool_call" | "local_shell_call") => {
                let args = str_at(&p, "/arguments")
                    .or_else(|| str_at(&p, "/input"))
                    .map(|a| serde_json::from_str(&a).unwrap_or(Value::String(a)))
                    .or_else(|| p.get("action").cloned())
                    .unwrap_or(Value::Null);
                Some(Step::tool_call(
                    &str_at(&p, "/name").unwrap_or_else(|| ptype.clone()),
                    str_at(&p, "/call_id"),
                    args,
                ))
            }
            (Some("response_item"), "function_call_output" | "custom_tool_call_output") => {
                let out = match p.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    Some(o) => str_at(o, "/content").unwrap_or_else(|| o.to_string()),
                    None => String::new(),
                };
                Some(Step::tool_result(str_at(&p, "/call_id"), out))
            }
            (Some("event_msg"), "token_count") => {
                if let Some(u) = p.pointer("/info/last_token_usage") {
                    attach(&mut steps, since_usage, tokens(u));
                    since_usage = steps.len();
                }
                None
            }
            (Some("event_msg"), "error" | "stream_error") => {
                let mut s = Step::message("system", str_at(&p, "/message").unwrap_or_default());
                s.kind = "error";
                Some(s)
            }
            _ => None,
        };
        if let Some(mut s) = step {
            s.timestamp = ts;
            steps.push(s);
        }
    }
    steps
}

fn events(output: &str) -> Option<Vec<Step>> {
    let mut steps: Vec<Step> = Vec::new();
    let mut seen_event = false;
    let mut since_usage = 0;
    for line in output.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        let Some(kind) = v.get("type").and_then(Value::as_str) else {
            continue;
        };
        match kind {
            "thread.started" | "turn.started" => seen_event = true,
            "item.completed" => {
                seen_event = true;
                let item = v.get("item").cloned().unwrap_or(Value::Null);
                let id = str_at(&item, "/id");
                match str_at(&item, "/type").as_deref().unwrap_or("") {
                    "agent_message" => {
                        steps.push(Step::message(
                            "assistant",
                            str_at(&item, "/text").unwrap_or_default(),
                        ));
                    }
                    "reasoning" => {
                        let mut s =
                            Step::message("assistant", str_at(&item, "/text").unwrap_or_default());
                        s.kind = "reasoning";
                        steps.push(s);
                    }
                    "command_execution" => {
                        steps.push(Step::tool_call(
                            "command_execution",
                            id.clone(),
                            serde_json::json!({"command": item.get("command")}),
                        ));
                        let mut r = Step::tool_result(
                            id,
                            str_at(&item, "/aggregated_output").unwrap_or_default(),
                        );
                        r.exit_code = item.get("exit_code").and_then(Value::as_i64);
                        r.is_error = r.exit_code.map(|c| c != 0);
                        steps.push(r);
                    }
                    other => {
                        let mut s = Step::tool_call(other, id, item.clone());
                        s.kind = "event";
                        steps.push(s);
                    }
                }
            }
            "turn.completed" => {
                if let Some(u) = v.get("usage") {
                    attach(&mut steps, since_usage, tokens(u));
                    since_usage = steps.len();
                }
            }
            "error" | "turn.failed" => {
                seen_event = true;
                let msg = str_at(&v, "/message")
                    .or_else(|| str_at(&v, "/error/message"))
                    .unwrap_or_else(|| v.to_string());
                let mut s = Step::message("system", msg);
                s.kind = "error";
                steps.push(s);
            }
            _ => {}
        }
    }
    seen_event.then_some(steps)
}
