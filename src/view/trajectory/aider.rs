//! aider: its chat history (`.aider.chat.history.md`, kept in the run's output as an own file
//! after `own_files::MARKER`): `# aider chat started at <time>` opens a session, `#### ` lines
//! are the user's message, `> ` lines aider's own output (edits applied, commands run, token
//! reports), the rest the model's replies. Its analytics log (after the built-in command's
//! `----- bench: aider analytics -----` line) has a `message_send` event per model call with
//! exact tokens and a time; the n-th one is the n-th reply's usage.

use serde_json::Value;

use super::{Step, str_at, u64_at};
use crate::harness::own_files::MARKER;
use crate::jobs::Tokens;

const ANALYTICS: &str = "----- bench: aider analytics -----";

/// The chat history's text: from its own-file section of the output, or a kept file.
fn history<'a>(output: &'a str, files: &'a [(String, String)]) -> Option<&'a str> {
    let header = format!("{MARKER} .aider.chat.history.md");
    if let Some(i) = output.find(&header) {
        let body = &output[i..];
        let body = &body[body.find('\n').map_or(body.len(), |n| n + 1)..];
        let end = [body.find(MARKER), body.find(ANALYTICS)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(body.len());
        return Some(&body[..end]);
    }
    files
        .iter()
        .find(|(p, _)| p.ends_with(".aider.chat.history.md"))
        .map(|(_, t)| t.as_str())
}

/// The `message_send` events of the analytics log: tokens and time per call.
fn calls(output: &str) -> Vec<(Tokens, Option<String>, Option<String>)> {
    let Some(i) = output.find(ANALYTICS) else {
        return Vec::new();
    };
    output[i + ANALYTICS.len()..]
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .filter(|v| str_at(v, "/event").as_deref() == Some("message_send"))
        .map(|v| {
            let p = v.get("properties").cloned().unwrap_or(Value::Null);
            let time = v
                .get("time")
                .and_then(Value::as_i64)
                .and_then(|t| jiff::Timestamp::from_second(t).ok().map(|t| t.to_string()));
            (
                Tokens {
                    input: u64_at(&p, "/prompt_tokens"),
                    cached_input: 0,
                    cache_write: 0,
                    output: u64_at(&p, "/completion_tokens"),
                },
                str_at(&p, "/main_model").filter(|m| !m.contains("REDACTED")),
                time,
            )
        })
        .collect()
}

pub fn read(output: &str, files: &[(String, String)]) -> Option<Vec<Step>> {
    let text = history(output, files)?;
    let mut steps: Vec<Step> = Vec::new();
    let mut session_time: Option<String> = None;
    // The block being read: its kind and lines.
    let mut block: Option<(&str, Vec<&str>)> = None;
    let flush =
        |block: &mut Option<(&str, Vec<&str>)>, steps: &mut Vec<Step>, ts: &Option<String>| {
            if let Some((kind, lines)) = block.take() {
                let body = lines.join("\n").trim().to_string();
                if body.is_empty() {
                    return;
                }
                let mut s = match kind {
                    "user" => Step::message("user", body),
                    "tool" => {
                        let mut s = Step::tool_result(None, body);
                        s.tool = Some("aider".into());
                        s
                    }
                    _ => Step::message("assistant", body),
                };
                s.timestamp.clone_from(ts);
                steps.push(s);
            }
        };
    for line in text.lines() {
        let kind = if let Some(rest) = line.strip_prefix("# aider chat started at ") {
            flush(&mut block, &mut steps, &session_time);
            session_time = Some(rest.trim().to_string());
            continue;
        } else if line.starts_with("#### ") || line == "####" {
            "user"
        } else if line.starts_with("> ") || line == ">" {
            "tool"
        } else if line.trim().is_empty() {
            if let Some((_, lines)) = block.as_mut() {
                lines.push("");
            }
            continue;
        } else {
            "assistant"
        };
        let content = match kind {
            "user" => line.strip_prefix("#### ").unwrap_or(""),
            "tool" => line.strip_prefix("> ").unwrap_or(""),
            _ => line,
        };
        match block.as_mut() {
            Some((k, lines)) if *k == kind => lines.push(content),
            _ => {
                flush(&mut block, &mut steps, &session_time);
                block = Some((kind, vec![content]));
            }
        }
    }
    flush(&mut block, &mut steps, &session_time);
    // The n-th reply gets the n-th call's usage (and its time).
    let mut calls = calls(output).into_iter();
    for s in steps
        .iter_mut()
        .filter(|s| s.role.as_deref() == Some("assistant"))
    {
        let Some((t, model, time)) = calls.next() else {
            break;
        };
        s.usage = Some(t);
        s.model = model;
        if time.is_some() {
            s.timestamp = time;
        }
    }
    Some(steps)
}
