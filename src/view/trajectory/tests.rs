//! The readers on what the real CLIs wrote: `tests/fixtures/trajectories/` holds stored
//! trajectories recorded by the real-CLI tests (see its README), one per harness.

use std::collections::BTreeMap;

use super::*;
use crate::jobs::Tokens;
use crate::manifest::Price;

fn fixture(name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/trajectories")
        .join(name);
    fs_err::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn plain_output_is_one_text_message() {
    let t = parse(b"===== worker: fixer =====\nfixed it\n", &BTreeMap::new());
    assert_eq!(t.runs.len(), 1);
    assert_eq!(t.runs[0].format, "text");
    assert_eq!(t.runs[0].steps[0].text.as_deref(), Some("fixed it\n"));
}

fn price() -> BTreeMap<String, Price> {
    BTreeMap::from([(
        "gpt-test".to_string(),
        Price {
            input: 1.0,
            cached_input: 0.5,
            cache_write: 1.25,
            output: 4.0,
        },
    )])
}

/// The one run of a fixture, with its steps of `kind`.
fn run_of(name: &str) -> Run {
    let t = parse(&fixture(name), &price());
    assert_eq!(t.runs.len(), 1, "{name}");
    t.runs.into_iter().next().unwrap()
}

fn of_kind<'a>(r: &'a Run, kind: &str) -> Vec<&'a Step> {
    r.steps.iter().filter(|s| s.kind == kind).collect()
}

/// Each call's result follows it and names its call.
fn results_follow_calls(r: &Run) {
    for (i, s) in r.steps.iter().enumerate() {
        if s.kind == "tool_call" {
            let next = &r.steps[i + 1];
            assert_eq!(next.kind, "tool_result", "{:?}", r.steps);
            assert_eq!(next.call_id, s.call_id);
        }
    }
}

#[test]
fn claude_codes_transcript() {
    let r = run_of("claude.txt");
    assert_eq!(
        (r.role.as_str(), r.agent.as_str(), r.format),
        ("worker", "claude-code@claude-sonnet-4-5", "claude-code")
    );
    let calls = of_kind(&r, "tool_call");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].tool.as_deref(), Some("Bash"));
    let cmd = calls[0].arguments.as_ref().unwrap()["command"]
        .as_str()
        .unwrap();
    assert!(cmd.starts_with("cat > 'datecal.py'"), "{cmd}");
    results_follow_calls(&r);
    // The two model calls the server was scripted with: vusage(3120, 1024, 512, 187) and
    // vusage(3388, 3072, 0, 23), each once although Claude Code repeats a message's usage.
    let used: Vec<Tokens> = r.steps.iter().filter_map(|s| s.usage).collect();
    assert_eq!(
        used,
        [
            Tokens {
                input: 3120,
                cached_input: 1024,
                cache_write: 512,
                output: 187
            },
            Tokens {
                input: 3388,
                cached_input: 3072,
                cache_write: 0,
                output: 23
            },
        ]
    );
    assert!(r.steps.iter().all(|s| s.timestamp.is_some()));
    assert_eq!(r.steps[0].role.as_deref(), Some("user"));
    assert!(r.steps.last().unwrap().text.as_deref() == Some("Done: the fix is written."));
}

#[test]
fn codex_session_rollout() {
    let r = run_of("codex.txt");
    assert_eq!(r.format, "codex");
    let calls = of_kind(&r, "tool_call");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].tool.as_deref(), Some("exec_command"));
    assert!(
        calls[0].arguments.as_ref().unwrap()["cmd"]
            .as_str()
            .unwrap()
            .contains("datecal.py")
    );
    results_follow_calls(&r);
    let used: Vec<Tokens> = r.steps.iter().filter_map(|s| s.usage).collect();
    assert_eq!(
        used,
        [
            Tokens {
                input: 4410,
                cached_input: 2048,
                cache_write: 256,
                output: 96
            },
            Tokens {
                input: 4702,
                cached_input: 4352,
                cache_write: 0,
                output: 17
            },
        ]
    );
    // Priced per call from the table (the model is the agent's).
    let t = &used[0];
    let want = crate::harness::pricing::cost_of_tokens(t, &price()["gpt-test"]);
    let first = r.steps.iter().find(|s| s.usage.is_some()).unwrap();
    assert_eq!(first.cost_usd, Some(want));
    assert!(r.cost_usd().unwrap() > want);
    assert!(
        r.left_out.len() > 10,
        "its caches are listed: {}",
        r.left_out.len()
    );
    assert!(r.steps.iter().all(|s| s.timestamp.is_some()));
}

#[test]
fn codex_exec_events_without_a_rollout() {
    // The printed `exec --json` events alone (the output before the files).
    let bytes = fixture("codex.txt");
    let raw = split(&bytes);
    let end = raw[0].output.1 as usize;
    let t = parse(&bytes[..end], &price());
    let r = &t.runs[0];
    assert_eq!(r.format, "codex");
    let calls = of_kind(r, "tool_call");
    assert_eq!(calls[0].tool.as_deref(), Some("command_execution"));
    results_follow_calls(r);
    assert_eq!(of_kind(r, "tool_result")[0].exit_code, Some(0));
    assert_eq!(r.totals().input, 9112);
    assert!(
        !of_kind(r, "error").is_empty(),
        "its reconnect errors are kept"
    );
}

#[test]
fn mini_swe_agent_trajectory() {
    let r = run_of("mini.txt");
    assert_eq!(r.format, "mini-swe-agent");
    let calls = of_kind(&r, "tool_call");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].tool.as_deref(), Some("bash"));
    assert!(
        calls[0].arguments.as_ref().unwrap()["command"]
            .as_str()
            .unwrap()
            .contains("datecal.py")
    );
    results_follow_calls(&r);
    let used: Vec<Tokens> = r.steps.iter().filter_map(|s| s.usage).collect();
    // usage(1834, 212, 0, 0) and usage(2391, 35, 1792, 0): prompt, completion, cached, write.
    assert_eq!(
        used,
        [
            Tokens {
                input: 1834,
                cached_input: 0,
                cache_write: 0,
                output: 212
            },
            Tokens {
                input: 2391,
                cached_input: 1792,
                cache_write: 0,
                output: 35
            },
        ]
    );
    assert_eq!(r.steps[0].role.as_deref(), Some("system"));
    assert!(
        r.steps
            .iter()
            .any(|s| s.text.as_deref() == Some("exit: Submitted"))
    );
}

#[test]
fn aider_chat_history_with_analytics() {
    let r = run_of("aider.txt");
    assert_eq!(r.format, "aider");
    let user: Vec<&Step> = r
        .steps
        .iter()
        .filter(|s| s.role.as_deref() == Some("user"))
        .collect();
    assert_eq!(user.len(), 1);
    assert!(
        user[0]
            .text
            .as_deref()
            .unwrap()
            .starts_with("You are working in a git repository")
    );
    let replies: Vec<&Step> = r
        .steps
        .iter()
        .filter(|s| s.role.as_deref() == Some("assistant"))
        .collect();
    assert_eq!(replies.len(), 2);
    assert!(replies[0].text.as_deref().unwrap().contains("datecal.py"));
    // Exact tokens per call from the analytics log: usage(2466, 301) and usage(2790, 301).
    let used: Vec<(u64, u64)> = replies
        .iter()
        .map(|s| s.usage.map(|t| (t.input, t.output)).unwrap())
        .collect();
    assert_eq!(used, [(2466, 301), (2790, 301)]);
    // The analytics log's redacted model name gives way to the agent's.
    assert_eq!(replies[0].model.as_deref(), Some("openai/fake-aider"));
    assert!(r.steps.iter().any(|s| {
        s.text
            .as_deref()
            .is_some_and(|t| t.contains("Applied edit to datecal.py"))
    }));
}

#[test]
fn opencode_session_storage() {
    let r = run_of("opencode.txt");
    assert_eq!(r.format, "opencode");
    let calls = of_kind(&r, "tool_call");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].tool.as_deref(), Some("bash"));
    assert_eq!(
        calls[0].arguments.as_ref().unwrap()["command"],
        "python3 -m unittest"
    );
    results_follow_calls(&r);
    assert_eq!(of_kind(&r, "tool_result")[0].text.as_deref(), Some("OK\n"));
    let used: Vec<Tokens> = r.steps.iter().filter_map(|s| s.usage).collect();
    assert_eq!(
        used,
        [
            Tokens {
                input: 1500,
                cached_input: 1000,
                cache_write: 100,
                output: 50
            },
            Tokens {
                input: 1800,
                cached_input: 1200,
                cache_write: 0,
                output: 20
            },
        ]
    );
    // OpenCode's own cost figure is kept.
    assert_eq!(r.cost_usd(), Some(0.75));
    assert_eq!(r.steps[0].role.as_deref(), Some("user"));
    assert_eq!(
        r.steps[0].timestamp.as_deref(),
        Some("2026-12-04T10:00:00Z")
    );
}

#[test]
fn a_review_team_shows_each_roles_run() {
    let mut blob = fixture("codex.txt");
    let review = fixture("claude.txt");
    let review = String::from_utf8(review)
        .unwrap()
        .replacen("===== worker:", "===== reviewer (round 1):", 1)
        .replace("----- worker ", "----- reviewer (round 1) ");
    blob.extend_from_slice(review.as_bytes());
    let t = parse(&blob, &price());
    let roles: Vec<(&str, &str)> = t.runs.iter().map(|r| (r.role.as_str(), r.format)).collect();
    assert_eq!(
        roles,
        [("worker", "codex"), ("reviewer (round 1)", "claude-code")]
    );
    assert_eq!(t.runs[0].raw_end, t.runs[1].raw_start);
}
