//! Reading what an agent run spent, and the error it reported, from the agent CLIs' real output
//! formats. Not where a run's outcome is decided (`evidence.rs`) nor what it cost in dollars
//! (`pricing.rs`).
//!
//! Tokens follow OpenAI's convention: `input_tokens` counts every input token, cache hits
//! (`cached_input_tokens`) and cache writes (`cache_write_tokens`) included.
//!
//! - `claude-json`: `claude -p --output-format json` prints one JSON object with `total_cost_usd`,
//!   `usage` (`input_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`,
//!   `output_tokens`), `num_turns`, `is_error`, the final message (or the error) in `result`, and
//!   `modelUsage.<model>.costBasis`: the dollar figure is kept as exact only when every model
//!   was priced by the CLI (`costBasis` not `unknown`, no `[claude-code:unrecognized_model]`
//!   warning); for a model it cannot price (a gateway's custom name) it is a guess, dropped, and
//!   the tokens are priced from the table. When there is no result object (bench's timeout
//!   killed it), its transcript under the home (`.claude/projects/*/*.jsonl`) is read: each
//!   distinct `assistant` message's `usage` is a call, `system`/`api_error` records the errors.
//! - `codex-jsonl`: `codex exec --json` prints one JSON event per line; each `turn.completed`
//!   carries `usage` (`input_tokens`, `cached_input_tokens`, `cache_write_input_tokens`,
//!   `output_tokens`), `item.completed` events with an `agent_message` item carry the messages,
//!   `error` events (`Reconnecting... n/5 (unexpected status 401 ...)` while it retries) and
//!   `turn.failed` the error.
//! - `aider`: the per-message `message_send` events of its analytics log (`--analytics-log`,
//!   printed after a `----- bench: aider analytics -----` line by the built-in command) give
//!   exact prompt and completion tokens per call; its printed `Tokens: 2.3k sent, 1.0k cache
//!   write, 2.0k cache hit, 150 received.` lines (the `Cost:` part may be on the next line, and
//!   is rounded) give the cache split, scaled to the exact totals. Its errors (`litellm.*Error`
//!   lines, `The API provider ...`) are read from the output even when it exits 0.
//! - `mini-swe-agent`: its trajectory JSON (the last printed object with `info.model_stats`):
//!   per-call `usage` of every `extra.response` in `messages`; the `exit` message carries the
//!   error. `info.model_stats.instance_cost` is litellm's estimate, not a bill: not kept.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::types::UsageFormat;

/// What one agent run used, as the agent recorded it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Every input token, cache hits and cache writes included.
    pub input_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cached_input_tokens: u64,
    /// Input tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
    /// Model calls the agent recorded.
    pub calls: u32,
    /// The harness's own cost figure, only when it is exact (claude's `total_cost_usd`). The
    /// pricing table wins over it for a model the table prices (`pricing::recorded_cost`).
    pub reported_cost_usd: Option<f64>,
    /// The agent's own error message, when it reported one.
    pub error: Option<String>,
    /// The agent's final message (for reviewers' and judges' verdicts).
    pub final_message: String,
}

/// Whether the run reached its model: it recorded a call, a token or a cost.
pub fn reached_model(u: &Usage) -> bool {
    u.calls > 0
        || u.input_tokens > 0
        || u.output_tokens > 0
        || u.reported_cost_usd.is_some_and(|c| c > 0.0)
}

fn u(v: &serde_json::Value, k: &str) -> u64 {
    v.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0)
}

fn s(v: &serde_json::Value, ptr: &str) -> Option<String> {
    v.pointer(ptr)
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
}

/// Whether an error message is the model API refusing the caller: a bad or missing key, no
/// permission, no credit or quota, a rate limit (the errors no retry within a run cures).
pub fn is_refusal(message: &str) -> bool {
    static REFUSAL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)\b(401|403|429)\b|unauthori[sz]ed|authentication|invalid[ _-]?(x-)?api[ _-]?key|incorrect api key|api key not valid|permission[ _]denied|permission_error|insufficient[ _]quota|exceeded your current quota|quota|credit balance|billing|rate[ _-]?limit",
        )
        .expect("refusal regex")
    });
    REFUSAL.is_match(message)
}

/// Parses `output` in `format`. `None` when the output holds no usage report at all. `home`
/// holds the files the agent left in its home directory (path relative to it, content): a
/// CLI's own transcript, read when its output has no report (it was killed).
pub fn parse_usage(format: UsageFormat, output: &str, home: &[(String, Vec<u8>)]) -> Option<Usage> {
    match format {
        UsageFormat::ClaudeJson => claude(output).or_else(|| claude_transcript(home)),
        UsageFormat::CodexJsonl => codex(output),
        UsageFormat::Aider => aider(output),
        UsageFormat::MiniSweAgent => mini(output),
    }
}

fn claude(output: &str) -> Option<Usage> {
    let v = output
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
        .find(|v| {
            v.get("total_cost_usd").is_some()
                || v.get("type").and_then(|t| t.as_str()) == Some("result")
        })
        .or_else(|| serde_json::from_str::<serde_json::Value>(output.trim()).ok())?;
    let usage = v.get("usage").cloned().unwrap_or_default();
    let cached = u(&usage, "cache_read_input_tokens");
    let written = u(&usage, "cache_creation_input_tokens");
    let result = s(&v, "/result").unwrap_or_default();
    let is_error = v
        .get("is_error")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let input = u(&usage, "input_tokens") + cached + written;
    let output_tokens = u(&usage, "output_tokens");
    Some(Usage {
        input_tokens: input,
        cached_input_tokens: cached,
        cache_write_tokens: written,
        output_tokens,
        calls: if input + output_tokens > 0 {
            u(&v, "num_turns").max(1) as u32
        } else {
            0
        },
        reported_cost_usd: claude_priced(&v, output)
            .then(|| v.get("total_cost_usd").and_then(serde_json::Value::as_f64))
            .flatten(),
        error: is_error.then(|| result.clone()),
        final_message: result,
    })
}

/// Whether Claude Code priced every model of the run itself: each `modelUsage` entry's
/// `costBasis` is known (`list`, ...) and it printed no `unrecognized_model` warning.
fn claude_priced(v: &serde_json::Value, output: &str) -> bool {
    let unknown_basis = v
        .get("modelUsage")
        .and_then(serde_json::Value::as_object)
        .into_iter()
        .flatten()
        .any(|(_, m)| m.get("costBasis").and_then(|b| b.as_str()) == Some("unknown"));
    !unknown_basis && !output.contains("[claude-code:unrecognized_model]")
}

/// Claude Code's transcripts (`.claude/projects/<project>/<session>.jsonl` under its home): the
/// calls that were answered (distinct `assistant` messages with `usage`, tokens summed once per
/// message) and the last API error (`system` records with subtype `api_error`). `None` without
/// a transcript.
fn claude_transcript(home: &[(String, Vec<u8>)]) -> Option<Usage> {
    let mut usage = Usage::default();
    let mut seen = false;
    let mut messages = std::collections::BTreeSet::new();
    for (path, bytes) in home {
        if !(path.starts_with(".claude/projects/") && path.ends_with(".jsonl")) {
            continue;
        }
        seen = true;
        for line in String::from_utf8_lossy(bytes).lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line.trim()) else {
                continue;
            };
            match v.get("type").and_then(|t| t.as_str()) {
                Some("assistant") => {
                    let Some(u) = v.pointer("/message/usage") else {
                        continue;
                    };
                    let id = s(&v, "/message/id").unwrap_or_else(|| line.to_string());
                    if !messages.insert(id) {
                        continue;
                    }
                    let cached = self::u(u, "cache_read_input_tokens");
                    let written = self::u(u, "cache_creation_input_tokens");
                    usage.input_tokens += self::u(u, "input_tokens") + cached + written;
                    usage.cached_input_tokens += cached;
                    usage.cache_write_tokens += written;
                    usage.output_tokens += self::u(u, "output_tokens");
                    usage.calls += 1;
                }
                Some("system") if s(&v, "/subtype").as_deref() == Some("api_error") => {
                    usage.error = s(&v, "/error/formatted")
                        .or_else(|| s(&v, "/error/message"))
                        .or_else(|| Some(line.trim().to_string()));
                }
                _ => {}
            }
        }
    }
    seen.then_some(usage)
}

fn codex(output: &str) -> Option<Usage> {
    let mut usage = Usage::default();
    let mut seen = false;
    for line in output.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line.trim()) else {
            continue;
        };
        match v.get("type").and_then(|t| t.as_str()) {
            Some("turn.completed") => {
                seen = true;
                let t = v.get("usage").cloned().unwrap_or_default();
                usage.input_tokens += u(&t, "input_tokens");
                usage.cached_input_tokens += u(&t, "cached_input_tokens");
                usage.cache_write_tokens += u(&t, "cache_write_input_tokens");
                usage.output_tokens += u(&t, "output_tokens");
                usage.calls += 1;
            }
            Some("turn.failed") | Some("error") => {
                seen = true;
                usage.error = s(&v, "/error/message")
                    .or_else(|| s(&v, "/message"))
                    .or_else(|| Some(line.trim().to_string()));
            }
            Some("item.completed") if s(&v, "/item/type").as_deref() == Some("agent_message") => {
                usage.final_message = s(&v, "/item/text").unwrap_or_default();
            }
            _ => {}
        }
    }
    seen.then_some(usage)
}

/// The line before aider's analytics log in the built-in command's output.
pub const AIDER_ANALYTICS_MARKER: &str = "----- bench: aider analytics -----";

fn aider(output: &str) -> Option<Usage> {
    static TOKENS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?m)^Tokens: ([\d.,]+k?) sent(?:, ([\d.,]+k?) cache write)?(?:, ([\d.,]+k?) cache hit)?, ([\d.,]+k?) received\.",
        )
        .expect("aider tokens regex")
    });
    static ERROR: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?m)^(?:litellm\.(?:AuthenticationError|RateLimitError|APIConnectionError|APIError|InternalServerError|ServiceUnavailableError|BadRequestError|NotFoundError|PermissionDeniedError|Timeout|ContextWindowExceededError)|The API provider|Missing these environment variables|Model .* not found|Unknown model|Error: ).*$",
        )
        .expect("aider error regex")
    });
    let (printed, analytics) = match output.rfind(AIDER_ANALYTICS_MARKER) {
        Some(at) => (
            &output[..at],
            Some(&output[at + AIDER_ANALYTICS_MARKER.len()..]),
        ),
        None => (output, None),
    };
    let num = |m: Option<regex::Match>| -> f64 {
        m.map_or(0.0, |m| {
            let t = m.as_str().replace(',', "");
            match t.strip_suffix('k') {
                Some(k) => k.parse::<f64>().unwrap_or(0.0) * 1000.0,
                None => t.parse().unwrap_or(0.0),
            }
        })
    };
    // Printed lines: rounded ("2.3k"), but the only place aider shows its cache split.
    let (mut sent, mut written, mut hit, mut received, mut lines) = (0.0, 0.0, 0.0, 0.0, 0u32);
    for c in TOKENS.captures_iter(printed) {
        lines += 1;
        sent += num(c.get(1));
        written += num(c.get(2));
        hit += num(c.get(3));
        received += num(c.get(4));
    }
    // Analytics events: exact per-call prompt and completion tokens.
    let mut exact: Option<(u64, u64, u32)> = None;
    for line in analytics.unwrap_or("").lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line.trim()) else {
            continue;
        };
        if v.get("event").and_then(|e| e.as_str()) != Some("message_send") {
            continue;
        }
        let p = v.get("properties").cloned().unwrap_or_default();
        let e = exact.get_or_insert((0, 0, 0));
        e.0 += u(&p, "prompt_tokens");
        e.1 += u(&p, "completion_tokens");
        e.2 += 1;
    }
    let error = ERROR
        .find_iter(printed)
        .last()
        .map(|m| m.as_str().trim().to_string());
    if lines == 0 && exact.is_none() && error.is_none() {
        return None;
    }
    let mut usage = Usage {
        error,
        final_message: printed.to_string(),
        ..Default::default()
    };
    match exact {
        Some((prompt, completion, calls)) => {
            // aider's `sent` (its analytics `prompt_tokens`) is the provider's prompt tokens
            // plus cache writes: every input token.
            usage.input_tokens = prompt;
            usage.output_tokens = completion;
            usage.calls = calls;
            // The cache split is only printed (exact below 1,000 tokens a message, else to
            // 100 or 1,000): kept as printed, within the exact total.
            usage.cached_input_tokens = (hit as u64).min(prompt);
            usage.cache_write_tokens = (written as u64).min(prompt - usage.cached_input_tokens);
        }
        None => {
            usage.input_tokens = sent as u64;
            usage.cached_input_tokens = hit as u64;
            usage.cache_write_tokens = written as u64;
            usage.output_tokens = received as u64;
            usage.calls = lines;
        }
    }
    Some(usage)
}

/// The line before mini's trajectory in the built-in command's output.
pub const MINI_TRAJECTORY_MARKER: &str = "----- bench: mini trajectory -----";

fn mini(output: &str) -> Option<Usage> {
    // The trajectory is the last JSON object (possibly pretty-printed) with `info.model_stats`,
    // after the built-in command's marker when there is one; other JSON is skipped.
    let mut traj = None;
    let mut at = output.rfind(MINI_TRAJECTORY_MARKER).unwrap_or(0);
    while let Some(rel) = output[at..].find('{') {
        let start = at + rel;
        let mut stream =
            serde_json::Deserializer::from_str(&output[start..]).into_iter::<serde_json::Value>();
        match stream.next() {
            Some(Ok(v)) => {
                let end = start + stream.byte_offset();
                if v.pointer("/info/model_stats").is_some() {
                    traj = Some(v);
                }
                at = end.max(start + 1);
            }
            _ => at = start + 1,
        }
    }
    let v = traj?;
    let mut usage = Usage {
        final_message: s(&v, "/info/submission").unwrap_or_default(),
        ..Default::default()
    };
    for m in v
        .get("messages")
        .and_then(|m| m.as_array())
        .into_iter()
        .flatten()
    {
        if let Some(r) = m.pointer("/extra/response/usage") {
            usage.calls += 1;
            add_openai_usage(&mut usage, r);
        }
        if m.get("role").and_then(|r| r.as_str()) == Some("exit") {
            let status = s(m, "/extra/exit_status").unwrap_or_default();
            let text = s(m, "/extra/exception_str")
                .or_else(|| s(m, "/content"))
                .unwrap_or_default();
            if status != "Submitted" && (!status.is_empty() || !text.is_empty()) {
                usage.error = Some(if text.is_empty() || text == status {
                    status
                } else {
                    format!("{status}: {text}")
                });
            }
        }
    }
    // `info.model_stats.api_calls` is not used: it counts attempts, a call that failed too.
    Some(usage)
}

/// Adds one OpenAI-shaped `usage` object as litellm returns it: `prompt_tokens` counts cache
/// hits (`prompt_tokens_details.cached_tokens`, or `cache_read_input_tokens`) but not cache
/// writes, which come apart as `cache_creation_input_tokens` (aider counts them the same way).
fn add_openai_usage(usage: &mut Usage, r: &serde_json::Value) {
    usage.input_tokens += u(r, "prompt_tokens") + u(r, "cache_creation_input_tokens");
    usage.output_tokens += u(r, "completion_tokens");
    let cached = r
        .pointer("/prompt_tokens_details/cached_tokens")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or_else(|| u(r, "cache_read_input_tokens"));
    usage.cached_input_tokens += cached;
    usage.cache_write_tokens += u(r, "cache_creation_input_tokens");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_json() {
        let out = r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":1234,"num_turns":3,"result":"APPROVE","session_id":"s","total_cost_usd":0.0421,"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":300}}"#;
        let u = parse_usage(UsageFormat::ClaudeJson, out, &[]).unwrap();
        assert_eq!(u.reported_cost_usd, Some(0.0421));
        assert_eq!(u.input_tokens, 2110);
        assert_eq!(u.cached_input_tokens, 2000);
        assert_eq!(u.cache_write_tokens, 100);
        assert_eq!(u.output_tokens, 300);
        assert_eq!(u.calls, 3);
        assert_eq!(u.final_message, "APPROVE");
        assert_eq!(u.error, None);
        assert!(reached_model(&u));
        let err = r#"{"type":"result","subtype":"error","is_error":true,"num_turns":0,"result":"Invalid API key · Please run /login","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}"#;
        let u = parse_usage(UsageFormat::ClaudeJson, err, &[]).unwrap();
        assert!(!reached_model(&u));
        assert_eq!(
            u.error.as_deref(),
            Some("Invalid API key · Please run /login")
        );
    }

    #[test]
    fn claude_guess_for_an_unpriced_model_is_not_kept() {
        let out = concat!(
            "[claude-code:unrecognized_model] {\"model\":\"my-gw\"}\n",
            r#"{"type":"result","is_error":false,"num_turns":2,"result":"Done.","total_cost_usd":0.00509,"usage":{"input_tokens":950,"cache_creation_input_tokens":50,"cache_read_input_tokens":1200,"output_tokens":40},"modelUsage":{"my-gw":{"inputTokens":950,"costUSD":0.00509,"costBasis":"unknown"}}}"#
        );
        let u = parse_usage(UsageFormat::ClaudeJson, out, &[]).unwrap();
        assert_eq!(u.reported_cost_usd, None);
        assert_eq!(
            (u.input_tokens, u.cached_input_tokens, u.cache_write_tokens),
            (2200, 1200, 50)
        );
        let listed = out
            .lines()
            .nth(1)
            .unwrap()
            .replace("\"unknown\"", "\"list\"");
        let u = parse_usage(UsageFormat::ClaudeJson, &listed, &[]).unwrap();
        assert_eq!(u.reported_cost_usd, Some(0.00509));
    }

    #[test]
    fn claude_transcript_when_killed() {
        let refused = concat!(
            r#"{"type":"user","message":{"role":"user","content":"fix it"}}"#,
            "\n",
            r#"{"type":"system","subtype":"api_error","level":"error","error":{"message":"401 {}","status":401,"formatted":"401 invalid x-api-key"},"retryAttempt":6}"#,
            "\n"
        );
        let home = vec![
            (
                ".claude/projects/-repo/s.jsonl".to_string(),
                refused.as_bytes().to_vec(),
            ),
            (".claude.json".to_string(), b"{}".to_vec()),
        ];
        let u = parse_usage(UsageFormat::ClaudeJson, "", &home).unwrap();
        assert!(!reached_model(&u));
        assert_eq!(u.error.as_deref(), Some("401 invalid x-api-key"));
        assert!(is_refusal(u.error.as_deref().unwrap()));
        // Answered calls: one per distinct message, tokens once each.
        let answered = concat!(
            r#"{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":10,"cache_read_input_tokens":5,"cache_creation_input_tokens":0,"output_tokens":3}}}"#,
            "\n",
            r#"{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":10,"cache_read_input_tokens":5,"cache_creation_input_tokens":0,"output_tokens":3}}}"#,
            "\n"
        );
        let home = vec![(
            ".claude/projects/-repo/s.jsonl".to_string(),
            answered.as_bytes().to_vec(),
        )];
        let u = parse_usage(UsageFormat::ClaudeJson, "killed", &home).unwrap();
        assert_eq!((u.calls, u.input_tokens, u.output_tokens), (1, 15, 3));
        assert!(parse_usage(UsageFormat::ClaudeJson, "", &[]).is_none());
    }

    #[test]
    fn refusals_are_auth_quota_and_rate_limits() {
        for m in [
            "401 invalid x-api-key",
            "Reconnecting... 2/5 (unexpected status 401 Unauthorized: Incorrect API key provided)",
            "You exceeded your current quota",
            "Your credit balance is too low",
            "litellm.RateLimitError: RateLimitError",
            "litellm.AuthenticationError: bad key",
        ] {
            assert!(is_refusal(m), "{m}");
        }
        for m in [
            "stream disconnected before completion",
            "500 upstream exploded",
            "Submitted",
        ] {
            assert!(!is_refusal(m), "{m}");
        }
    }

    #[test]
    fn codex_jsonl_sums_turns() {
        let out = concat!(
            "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n",
            "{\"type\":\"item.completed\",\"item\":{\"id\":\"i\",\"type\":\"agent_message\",\"text\":\"PICK: 2\"}}\n",
            "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":1000000,\"cached_input_tokens\":500000,\"output_tokens\":100000}}\n",
            "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":10,\"cached_input_tokens\":0,\"cache_write_input_tokens\":7,\"output_tokens\":1}}\n",
        );
        let u = parse_usage(UsageFormat::CodexJsonl, out, &[]).unwrap();
        assert_eq!(
            (
                u.input_tokens,
                u.cached_input_tokens,
                u.output_tokens,
                u.calls
            ),
            (1000010, 500000, 100001, 2)
        );
        assert_eq!(u.cache_write_tokens, 7);
        assert_eq!(u.reported_cost_usd, None);
        assert_eq!(u.final_message, "PICK: 2");
        let failed = "{\"type\":\"error\",\"message\":\"unexpected status 401 Unauthorized\"}\n";
        let u = parse_usage(UsageFormat::CodexJsonl, failed, &[]).unwrap();
        assert!(!reached_model(&u));
        assert_eq!(
            u.error.as_deref(),
            Some("unexpected status 401 Unauthorized")
        );
    }

    #[test]
    fn aider_exact_tokens_from_analytics_and_cache_split_from_lines() {
        let out = format!(
            "Aider v0.86.2\nTokens: 2.3k sent, 1.0k cache write, 1.2k cache hit, 150 received.\nCost: $0.01 message, $0.01 session.\nTokens: 1.0k sent, 50 received. Cost: $0.0034 message, $0.02 session.\n{AIDER_ANALYTICS_MARKER}\n{}\n{}\n{}\n",
            r#"{"event": "launched", "properties": {}}"#,
            r#"{"event": "message_send", "properties": {"prompt_tokens": 2300, "completion_tokens": 151, "cost": 0.0123}}"#,
            r#"{"event": "message_send", "properties": {"prompt_tokens": 1013, "completion_tokens": 50}}"#,
        );
        let u = parse_usage(UsageFormat::Aider, &out, &[]).unwrap();
        assert_eq!((u.input_tokens, u.output_tokens, u.calls), (3313, 201, 2));
        assert_eq!(u.cached_input_tokens, 1200);
        assert_eq!(u.cache_write_tokens, 1000);
        assert_eq!(u.reported_cost_usd, None, "aider's figures are rounded");
        assert_eq!(u.error, None);
    }

    #[test]
    fn aider_printed_lines_without_analytics() {
        let out = "Tokens: 2.3k sent, 150 received. Cost: $0.01 message, $0.01 session.\nTokens: 1k sent, 50 received.\n";
        let u = parse_usage(UsageFormat::Aider, out, &[]).unwrap();
        assert_eq!((u.input_tokens, u.output_tokens, u.calls), (3300, 200, 2));
    }

    #[test]
    fn aider_error_after_exit_zero() {
        let out = "Aider v0.86.2\nlitellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API key provided\nThe API provider is not able to authenticate you. Check your API key.\n";
        let u = parse_usage(UsageFormat::Aider, out, &[]).unwrap();
        assert!(!reached_model(&u));
        assert_eq!(
            u.error.as_deref(),
            Some("The API provider is not able to authenticate you. Check your API key.")
        );
        assert!(parse_usage(UsageFormat::Aider, "Aider v0.86.2\n", &[]).is_none());
    }

    #[test]
    fn mini_sums_per_call_usage_and_skips_other_json() {
        let out = r#"Loading...
{
  "not": "the trajectory"
}
{
  "info": {"model_stats": {"instance_cost": 0.0, "api_calls": 2}, "exit_status": "Submitted", "submission": "done"},
  "messages": [
    {"role": "system", "content": "s"},
    {"role": "assistant", "content": "a", "extra": {"response": {"usage": {"prompt_tokens": 1200, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 0}}}}},
    {"role": "assistant", "content": "b", "extra": {"response": {"usage": {"prompt_tokens": 1300, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 1100}, "cache_creation_input_tokens": 100}}}},
    {"role": "exit", "content": "done", "extra": {"exit_status": "Submitted", "submission": "done"}}
  ]
}
"#;
        let u = parse_usage(UsageFormat::MiniSweAgent, out, &[]).unwrap();
        assert_eq!(
            (
                u.input_tokens,
                u.cached_input_tokens,
                u.cache_write_tokens,
                u.output_tokens,
                u.calls
            ),
            (2600, 1100, 100, 50, 2)
        );
        assert_eq!(u.final_message, "done");
        assert_eq!(u.error, None);
        assert_eq!(u.reported_cost_usd, None);
    }

    #[test]
    fn mini_error_exit() {
        let out = r#"{"info": {"model_stats": {"instance_cost": 0.0, "api_calls": 1}, "exit_status": "AuthenticationError", "submission": ""},
 "messages": [{"role": "exit", "content": "litellm.AuthenticationError: bad key", "extra": {"exit_status": "AuthenticationError", "submission": "", "exception_str": "litellm.AuthenticationError: bad key"}}]}"#;
        let u = parse_usage(UsageFormat::MiniSweAgent, out, &[]).unwrap();
        assert_eq!(
            u.error.as_deref(),
            Some("AuthenticationError: litellm.AuthenticationError: bad key")
        );
        // api_calls counts the call that failed: no response, no call.
        assert_eq!(u.calls, 0);
        assert!(!reached_model(&u));
    }

    #[test]
    fn no_report_is_none() {
        assert!(parse_usage(UsageFormat::ClaudeJson, "boom", &[]).is_none());
        assert!(parse_usage(UsageFormat::CodexJsonl, "boom", &[]).is_none());
        assert!(parse_usage(UsageFormat::MiniSweAgent, "boom {", &[]).is_none());
    }
}
