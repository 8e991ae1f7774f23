//! The normalised trajectory: one schema for every built-in harness's conversation (messages,
//! tool calls with their arguments and results, token usage and cost per model call,
//! timestamps), read from what each CLI wrote: Claude Code's transcript JSONL (or its
//! `--output-format json` result), Codex's session rollout JSONL (or its `exec --json`
//! events), mini-swe-agent's trajectory JSON, aider's chat history markdown with its analytics
//! log, OpenCode's session storage (or its `export` JSON). Anything else is one text message.
//!
//! A stored trajectory holds every agent run of a solve in order (`===== role: agent =====`
//! sections, see `stages/solve.rs`' ledger), so review and best-of teams show each role's run.
//! Not where usage is counted for the report (`harness/usage.rs` does that): this is for
//! reading, and a record it cannot parse is kept as a text step, never dropped.

mod aider;
mod claude;
mod codex;
mod mini;
mod opencode;
mod sections;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::jobs::Tokens;
use crate::manifest::Price;

pub use sections::{RawRun, split};

/// The longest text a step keeps (the raw output holds the rest).
pub const MAX_TEXT: usize = 16 * 1024;

/// One thing that happened in a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Step {
    /// `message`, `reasoning`, `tool_call`, `tool_result`, `error` or `event`.
    pub kind: &'static str,
    /// `system`, `user`, `assistant` or `tool`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A tool call's (or result's) tool name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Links a tool result to its call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// The model call this step ends, when the harness recorded its tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Tokens>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// RFC 3339 when the harness recorded one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The text was cut at [`MAX_TEXT`].
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

impl Step {
    pub fn message(role: &str, text: impl Into<String>) -> Step {
        let mut s = Step {
            kind: "message",
            role: Some(role.to_string()),
            ..Step::default()
        };
        s.set_text(text.into());
        s
    }

    pub fn tool_call(tool: &str, call_id: Option<String>, arguments: Value) -> Step {
        Step {
            kind: "tool_call",
            role: Some("assistant".into()),
            tool: Some(tool.to_string()),
            call_id,
            arguments: Some(arguments),
            ..Step::default()
        }
    }

    pub fn tool_result(call_id: Option<String>, output: impl Into<String>) -> Step {
        let mut s = Step {
            kind: "tool_result",
            role: Some("tool".into()),
            call_id,
            ..Step::default()
        };
        s.set_text(output.into());
        s
    }

    /// Sets the text, cut at [`MAX_TEXT`] on a character boundary.
    pub fn set_text(&mut self, mut text: String) {
        if text.len() > MAX_TEXT {
            let mut cut = MAX_TEXT;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            self.truncated = true;
        }
        self.text = Some(text);
    }
}

/// A file of the run the trajectory kept (or listed), with where its bytes are in the blob.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunFile {
    pub path: String,
    pub bytes: u64,
    pub start: u64,
}

/// One agent run of a solve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    pub role: String,
    pub agent: String,
    /// Which reader made the steps: `claude-code`, `codex`, `mini-swe-agent`, `aider`,
    /// `opencode` or `text`.
    pub format: &'static str,
    pub steps: Vec<Step>,
    pub files: Vec<RunFile>,
    /// Caches listed by name and size, their content left out.
    pub left_out: Vec<String>,
    /// The run's section of the raw blob.
    pub raw_start: u64,
    pub raw_end: u64,
}

impl Run {
    /// Tokens over the steps that carry usage.
    pub fn totals(&self) -> Tokens {
        self.steps
            .iter()
            .filter_map(|s| s.usage)
            .fold(Tokens::default(), |a, t| Tokens {
                input: a.input + t.input,
                cached_input: a.cached_input + t.cached_input,
                cache_write: a.cache_write + t.cache_write,
                output: a.output + t.output,
            })
    }

    /// The sum of the steps' costs, when every step with usage has one.
    pub fn cost_usd(&self) -> Option<f64> {
        let with_usage: Vec<&Step> = self.steps.iter().filter(|s| s.usage.is_some()).collect();
        if with_usage.is_empty() {
            return None;
        }
        with_usage.iter().map(|s| s.cost_usd).sum()
    }
}

/// Every run of a stored trajectory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trajectory {
    pub runs: Vec<Run>,
}

/// Reads the stored trajectory at `path`.
pub fn read_file(path: &Path, pricing: &BTreeMap<String, Price>) -> std::io::Result<Trajectory> {
    Ok(parse(&fs_err::read(path)?, pricing))
}

/// Normalises a stored trajectory.
pub fn parse(bytes: &[u8], pricing: &BTreeMap<String, Price>) -> Trajectory {
    let runs = split(bytes)
        .into_iter()
        .map(|raw| normalise(&raw, bytes, pricing))
        .collect();
    Trajectory { runs }
}

fn normalise(raw: &RawRun, bytes: &[u8], pricing: &BTreeMap<String, Price>) -> Run {
    let output = String::from_utf8_lossy(&bytes[raw.output.0 as usize..raw.output.1 as usize]);
    let files: Vec<(String, String)> = raw
        .files
        .iter()
        .map(|f| {
            let end = (f.start + f.bytes).min(bytes.len() as u64);
            (
                f.path.clone(),
                String::from_utf8_lossy(&bytes[f.start as usize..end as usize]).into_owned(),
            )
        })
        .collect();
    let model = raw.agent.split_once('@').map(|(_, m)| m.to_string());
    let (format, mut steps) = claude::read(&output, &files)
        .map(|s| ("claude-code", s))
        .or_else(|| codex::read(&output, &files).map(|s| ("codex", s)))
        .or_else(|| mini::read(&output).map(|s| ("mini-swe-agent", s)))
        .or_else(|| aider::read(&output, &files).map(|s| ("aider", s)))
        .or_else(|| opencode::read(&output, &files).map(|s| ("opencode", s)))
        .unwrap_or_else(|| ("text", text_steps(&output)));
    for s in &mut steps {
        if s.model.is_none() && s.usage.is_some() {
            s.model.clone_from(&model);
        }
        if s.cost_usd.is_none()
            && let (Some(t), Some(p)) = (s.usage, s.model.as_ref().and_then(|m| price(pricing, m)))
        {
            s.cost_usd = Some(crate::harness::pricing::cost_of_tokens(&t, p));
        }
    }
    Run {
        role: raw.role.clone(),
        agent: raw.agent.clone(),
        format,
        steps,
        files: raw
            .files
            .iter()
            .map(|f| RunFile {
                path: f.path.clone(),
                bytes: f.bytes,
                start: f.start,
            })
            .collect(),
        left_out: raw.left_out.clone(),
        raw_start: raw.start,
        raw_end: raw.end,
    }
}

/// The price of `model`: its name as given, or without a provider prefix (`openai/x` -> `x`).
fn price<'a>(pricing: &'a BTreeMap<String, Price>, model: &str) -> Option<&'a Price> {
    pricing.get(model).or_else(|| {
        model
            .split_once('/')
            .and_then(|(_, bare)| pricing.get(bare))
    })
}

/// A run nothing else reads: its output as one message (when it has any).
fn text_steps(output: &str) -> Vec<Step> {
    if output.trim().is_empty() {
        Vec::new()
    } else {
        vec![Step::message("assistant", output.to_string())]
    }
}

/// A JSON value's string at `ptr`.
fn str_at(v: &Value, ptr: &str) -> Option<String> {
    v.pointer(ptr).and_then(Value::as_str).map(str::to_string)
}

fn u64_at(v: &Value, ptr: &str) -> u64 {
    v.pointer(ptr).and_then(Value::as_u64).unwrap_or(0)
}

/// Tokens from an OpenAI-style usage object (`prompt_tokens`, `completion_tokens`,
/// `prompt_tokens_details.cached_tokens`, litellm's `cache_creation_input_tokens`).
fn openai_tokens(u: &Value) -> Option<Tokens> {
    if !u.is_object() {
        return None;
    }
    Some(Tokens {
        input: u64_at(u, "/prompt_tokens"),
        cached_input: u64_at(u, "/prompt_tokens_details/cached_tokens"),
        cache_write: u64_at(u, "/cache_creation_input_tokens"),
        output: u64_at(u, "/completion_tokens"),
    })
}

/// Texts of a content value: a string, or an array of `{type: text, text}` blocks.
fn content_text(c: &Value) -> String {
    match c {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| {
                p.get("text")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .or_else(|| p.as_str().map(str::to_string))
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;
