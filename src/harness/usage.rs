//! Reading usage and cost from agent CLIs' real output formats.
//!
//! - `claude-json`: `claude -p --output-format json` prints one JSON object with `total_cost_usd`,
//!   `usage` (`input_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`,
//!   `output_tokens`), `is_error` and the final message in `result`.
//! - `codex-jsonl`: `codex exec --json` prints one JSON event per line; `turn.completed` events
//!   carry `usage` (`input_tokens`, `cached_input_tokens`, `output_tokens`), `item.completed`
//!   events with an `agent_message` item carry the messages. Tokens are priced by the pricing
//!   table.
//! - `aider`: `Tokens: 2.3k sent, 150 received. Cost: $0.01 message, $0.05 session.` lines.
//! - `mini-swe-agent`: its trajectory JSON (`info.model_stats.instance_cost`, `api_calls`).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::manifest::{Price, UsageFormat};

/// What one agent run used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
    /// Dollars; `None` when the run cannot be priced.
    pub cost_usd: Option<f64>,
    /// The agent's final message (for reviewers' and judges' verdicts).
    pub final_message: String,
    /// The CLI reported an error.
    pub is_error: bool,
}

impl Usage {
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

fn u(v: &serde_json::Value, k: &str) -> u64 {
    v.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0)
}

/// Parses `output` in `format`. `None` when the output holds no usage report at all.
pub fn parse_usage(
    format: UsageFormat,
    output: &str,
    model: Option<&str>,
    pricing: &BTreeMap<String, Price>,
) -> Option<Usage> {
    match format {
        UsageFormat::ClaudeJson => {
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
            Some(Usage {
                input_tokens: u(&usage, "input_tokens")
                    + cached
                    + u(&usage, "cache_creation_input_tokens"),
                cached_input_tokens: cached,
                output_tokens: u(&usage, "output_tokens"),
                cost_usd: v.get("total_cost_usd").and_then(serde_json::Value::as_f64),
                final_message: v
                    .get("result")
                    .and_then(|r| r.as_str())
                    .unwrap_or("")
                    .to_string(),
                is_error: v
                    .get("is_error")
                    .and_then(serde_json::Value::as_bool)
                    .unwrap_or(false),
            })
        }
        UsageFormat::CodexJsonl => {
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
                        usage.output_tokens += u(&t, "output_tokens");
                    }
                    Some("turn.failed") | Some("error") => {
                        seen = true;
                        usage.is_error = true;
                    }
                    Some("item.completed") => {
                        let item = v.get("item").cloned().unwrap_or_default();
                        if item.get("type").and_then(|t| t.as_str()) == Some("agent_message") {
                            usage.final_message = item
                                .get("text")
                                .and_then(|t| t.as_str())
                                .unwrap_or("")
                                .to_string();
                        }
                    }
                    _ => {}
                }
            }
            if !seen {
                return None;
            }
            usage.cost_usd = model.and_then(|m| pricing.get(m)).map(|p| {
                let uncached = usage.input_tokens.saturating_sub(usage.cached_input_tokens) as f64;
                (uncached * p.input
                    + usage.cached_input_tokens as f64 * p.cached_input
                    + usage.output_tokens as f64 * p.output)
                    / 1e6
            });
            Some(usage)
        }
        UsageFormat::Aider => {
            static RE: LazyLock<Regex> = LazyLock::new(|| {
                Regex::new(r"Tokens: ([\d.,]+)(k?) sent(?:, [\d.,]+k? cache [a-z]+)*, ([\d.,]+)(k?) received\. Cost: \$([\d.]+) message, \$([\d.]+) session\.")
                    .expect("aider regex")
            });
            let num = |s: &str, k: &str| {
                let v: f64 = s.replace(',', "").parse().unwrap_or(0.0);
                (if k == "k" { v * 1000.0 } else { v }) as u64
            };
            let mut usage = Usage::default();
            let mut seen = false;
            for c in RE.captures_iter(output) {
                seen = true;
                usage.input_tokens += num(&c[1], &c[2]);
                usage.output_tokens += num(&c[3], &c[4]);
                usage.cost_usd = c[6].parse().ok();
            }
            usage.final_message = output.to_string();
            seen.then_some(usage)
        }
        UsageFormat::MiniSweAgent => {
            let start = output.find("{\n").or_else(|| output.find('{'))?;
            let v: serde_json::Value = serde_json::Deserializer::from_str(&output[start..])
                .into_iter::<serde_json::Value>()
                .next()?
                .ok()?;
            let stats = v.pointer("/info/model_stats")?;
            Some(Usage {
                cost_usd: stats
                    .get("instance_cost")
                    .and_then(serde_json::Value::as_f64),
                final_message: v
                    .pointer("/info/submission")
                    .and_then(|s| s.as_str())
                    .unwrap_or("")
                    .to_string(),
                input_tokens: u(stats, "input_tokens"),
                output_tokens: u(stats, "output_tokens"),
                ..Default::default()
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pricing() -> BTreeMap<String, Price> {
        BTreeMap::from([(
            "gpt-6-luna".to_string(),
            Price {
                input: 0.10,
                cached_input: 0.01,
                output: 0.50,
            },
        )])
    }

    #[test]
    fn claude_json() {
        let out = r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":1234,"num_turns":3,"result":"APPROVE","session_id":"s","total_cost_usd":0.0421,"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":300}}"#;
        let u = parse_usage(
            UsageFormat::ClaudeJson,
            out,
            Some("claude-haiku-5-5"),
            &pricing(),
        )
        .unwrap();
        assert_eq!(u.cost_usd, Some(0.0421));
        assert_eq!(u.input_tokens, 2110);
        assert_eq!(u.cached_input_tokens, 2000);
        assert_eq!(u.output_tokens, 300);
        assert_eq!(u.final_message, "APPROVE");
    }

    #[test]
    fn codex_jsonl_priced_by_table() {
        let out = concat!(
            "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n",
            "{\"type\":\"turn.started\"}\n",
            "{\"type\":\"item.completed\",\"item\":{\"id\":\"i\",\"type\":\"agent_message\",\"text\":\"PICK: 2\"}}\n",
            "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":1000000,\"cached_input_tokens\":500000,\"output_tokens\":100000}}\n"
        );
        let u = parse_usage(UsageFormat::CodexJsonl, out, Some("gpt-6-luna"), &pricing()).unwrap();
        let want = (500000.0 * 0.10 + 500000.0 * 0.01 + 100000.0 * 0.50) / 1e6;
        assert!((u.cost_usd.unwrap() - want).abs() < 1e-12);
        assert_eq!(u.final_message, "PICK: 2");
        let unpriced =
            parse_usage(UsageFormat::CodexJsonl, out, Some("other"), &pricing()).unwrap();
        assert_eq!(unpriced.cost_usd, None);
    }

    #[test]
    fn aider_session_cost() {
        let out = "Tokens: 2.3k sent, 150 received. Cost: $0.01 message, $0.01 session.\nTokens: 1k sent, 50 received. Cost: $0.02 message, $0.03 session.\n";
        let u = parse_usage(UsageFormat::Aider, out, None, &pricing()).unwrap();
        assert_eq!(u.cost_usd, Some(0.03));
        assert_eq!(u.input_tokens, 3300);
        assert_eq!(u.output_tokens, 200);
    }

    #[test]
    fn mini_swe_agent_trajectory() {
        let out = "running...\n{\n \"info\": {\"model_stats\": {\"instance_cost\": 0.12, \"api_calls\": 7}, \"submission\": \"done\"}, \"messages\": []}\n";
        let u = parse_usage(UsageFormat::MiniSweAgent, out, None, &pricing()).unwrap();
        assert_eq!(u.cost_usd, Some(0.12));
    }

    #[test]
    fn no_report_is_none() {
        assert!(parse_usage(UsageFormat::ClaudeJson, "boom", None, &pricing()).is_none());
        assert!(parse_usage(UsageFormat::CodexJsonl, "boom", None, &pricing()).is_none());
    }
}
