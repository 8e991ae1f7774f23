//! The real agent CLIs, mini-swe-agent 2.4.6, aider-chat 0.86.2, Claude Code 2.1.332 (the
//! executable bundled in PyPI's claude-agent-sdk 0.2.189) and Codex 0.162.1 (bundled in
//! openai-codex-cli-bin 0.162.1), installed from PyPI by `scripts/install-agent-clis.sh` (run by
//! .ci/run) into /opt/bench-agents or `$BENCH_AGENTS`, driven by bench's built-in harnesses
//! against scripted servers on loopback: tests/fakes/model_server.py (OpenAI chat completions)
//! for mini and aider, tests/fakes/vendor_server.py (Anthropic Messages, OpenAI Responses) for
//! Claude Code and Codex. The manifests add only the provider's variables (or a `base_url`) and a
//! price. Claude Code and Codex run, with bench, in a network namespace that holds only loopback
//! and their server, under `strace`, which records every `connect`/`sendto`/`sendmsg` target:
//! nothing may go anywhere but the scripted server. Under CI=true a missing CLI is a failure;
//! elsewhere these tests print a note and pass.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

const KEY: &str = "sk-test-fakeKEYvalue0123456789abcdef";

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The directory holding `mini` and `aider`, or `None` (a note; a panic under CI) without them.
fn agents_bin() -> Option<PathBuf> {
    agents_bin_with(&["mini", "aider"])
}

/// The directory holding the CLIs `clis`, or `None` (a note; a panic under CI) without them.
fn agents_bin_with(clis: &[&'static str]) -> Option<PathBuf> {
    let root = std::env::var_os("BENCH_AGENTS")
        .map_or_else(|| PathBuf::from("/opt/bench-agents"), PathBuf::from);
    let bin = root.join("bin");
    let missing: Vec<&str> = clis
        .iter()
        .copied()
        .filter(|c| !bin.join(c).exists())
        .collect();
    if missing.is_empty() {
        return Some(bin);
    }
    let why = format!(
        "{} not installed in {} (run scripts/install-agent-clis.sh)",
        missing.join(" and "),
        bin.display()
    );
    if ci() {
        panic!("CI=true but {why}");
    }
    eprintln!("skipped: {why}");
    None
}

/// The scripted model server, killed on drop.
struct ModelServer {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl ModelServer {
    fn start(script: &Value) -> ModelServer {
        let dir = tempfile::tempdir().unwrap();
        let script_path = dir.path().join("script.json");
        fs_err::write(&script_path, serde_json::to_vec(script).unwrap()).unwrap();
        let port_file = dir.path().join("port");
        let log = dir.path().join("served.jsonl");
        let child = Command::new("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakes/model_server.py"))
            .arg(&script_path)
            .arg(&port_file)
            .arg(&log)
            .spawn()
            .expect("python3 runs the model server");
        let started = Instant::now();
        let port = loop {
            if let Ok(p) = fs_err::read_to_string(&port_file) {
                break p.trim().parse().unwrap();
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the model server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        ModelServer {
            child,
            port,
            log,
            _dir: dir,
        }
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Every request served, in order.
    fn served(&self) -> Vec<Value> {
        fs_err::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// What the successful requests for `model` cost at `price` (input, cached, write, output per
    /// million), from the usage the server returned.
    fn cost(&self, model: &str, price: [f64; 4]) -> f64 {
        self.served()
            .iter()
            .filter(|r| r["model"] == model && r["status"] == 200)
            .map(|r| {
                let u = &r["usage"];
                let n = |v: &Value| v.as_u64().unwrap_or(0) as f64;
                let prompt = n(&u["prompt_tokens"]);
                let cached = n(&u["prompt_tokens_details"]["cached_tokens"]);
                let write = n(&u["cache_creation_input_tokens"]);
                ((prompt - cached) * price[0]
                    + cached * price[1]
                    + write * price[2]
                    + n(&u["completion_tokens"]) * price[3])
                    / 1e6
            })
            .sum()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A task's files after its gold patch: (path, content) of each file the patch touches.
fn fixed_files(task: &str) -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/quickstart/tasks");
    let d = tempfile::tempdir().unwrap();
    let ok = Command::new("cp")
        .arg("-a")
        .arg(src.join(task).join("repo"))
        .arg(d.path().join("repo"))
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let patch = src.join(task).join("gold.patch");
    let ok = Command::new("git")
        .args(["apply"])
        .arg(&patch)
        .current_dir(d.path().join("repo"))
        .status()
        .unwrap()
        .success();
    assert!(ok, "gold patch of {task} applies");
    fs_err::read_to_string(&patch)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("+++ b/"))
        .map(|p| {
            (
                p.to_string(),
                fs_err::read_to_string(d.path().join("repo").join(p)).unwrap(),
            )
        })
        .collect()
}

/// Every quickstart task: (id, a line of its problem statement that names it).
fn tasks() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/quickstart/tasks");
    let mut out: Vec<(String, String)> = fs_err::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| {
            let id = e.file_name().to_string_lossy().into_owned();
            let t: toml::Value =
                toml::from_str(&fs_err::read_to_string(e.path().join("task.toml")).unwrap())
                    .unwrap();
            let statement = t["problem_statement"].as_str().unwrap();
            let line = statement
                .lines()
                .find(|l| l.trim().len() > 20)
                .unwrap()
                .trim()
                .to_string();
            (id, line)
        })
        .collect();
    out.sort();
    out
}

/// mini's script for a task: one bash call writing the fixed files, then the submit command.
fn mini_fix(task: &str, usage: [Value; 2]) -> Vec<Value> {
    let write: Vec<String> = fixed_files(task)
        .iter()
        .map(|(p, c)| format!("cat > '{p}' <<'BENCH_EOF'\n{c}BENCH_EOF"))
        .collect();
    let [first, second] = usage;
    vec![
        json!({"content": "I will write the fix.", "tool_calls": [
            {"name": "bash", "arguments": {"command": write.join(" && ")}}], "usage": first}),
        json!({"content": "Done.", "tool_calls": [
            {"name": "bash", "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}],
            "usage": second}),
    ]
}

/// aider's script for a task: the fixed files in its `whole` edit format, twice (aider first adds
/// a mentioned file to the chat and asks again).
fn aider_fix(task: &str, usage: [Value; 2]) -> Vec<Value> {
    let body: String = fixed_files(task)
        .iter()
        .map(|(p, c)| format!("{p}\n```\n{c}```\n\n"))
        .collect();
    usage
        .into_iter()
        .map(|u| json!({"content": format!("Here is the fix.\n\n{body}"), "usage": u}))
        .collect()
}

fn usage(prompt: u64, completion: u64, cached: u64, write: u64) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completion,
           "cached_tokens": cached, "cache_write_tokens": write})
}

/// Runs bench with the CLIs on PATH and the provider's variables set.
fn bench(sb: &Sandbox, server: &ModelServer, bin: &Path, args: &[&str]) -> Output {
    bench_env(sb, server, bin, args, &[])
}

fn bench_env(
    sb: &Sandbox,
    server: &ModelServer,
    bin: &Path,
    args: &[&str],
    extra: &[(&str, &str)],
) -> Output {
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut cmd = Command::new(bench_bin());
    cmd.args(args)
        .current_dir(sb.dir.path())
        .env("PATH", path)
        .env("OPENAI_API_KEY", KEY)
        .env("OPENAI_API_BASE", server.base())
        .env("NO_COLOR", "1")
        .env_remove("BENCH_STORE");
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

const PRICE: [f64; 4] = [2.0, 0.5, 2.5, 8.0];

/// The quickstart with the real CLIs as teams: only the provider's variables in `env`, and a
/// price. `solve` is the solve stage's extra lines.
fn quickstart_with(teams: &[(&str, &str)], solve: &str, harness_env: &[&str]) -> Sandbox {
    let sb = Sandbox::quickstart();
    // The quickstart's report compares against `nop`: keep it.
    let names: Vec<String> = std::iter::once("nop")
        .chain(teams.iter().map(|(n, _)| *n))
        .map(|n| format!("\"{n}\""))
        .collect();
    sb.edit(
        "quickstart.toml",
        "teams = [\"oracle\", \"nop\", \"fixer\"]",
        &format!("teams = [{}]\n{solve}", names.join(", ")),
    );
    let mut extra = String::new();
    for (name, agent) in teams {
        extra.push_str(&format!(
            "\n[teams.{name}]\ntopology = \"solo\"\nworker = \"{agent}\"\n"
        ));
    }
    let env: Vec<String> = ["OPENAI_API_KEY", "OPENAI_API_BASE"]
        .iter()
        .chain(harness_env)
        .map(|v| format!("\"{v}\""))
        .collect();
    for h in ["mini-swe-agent", "aider"] {
        extra.push_str(&format!("\n[harnesses.{h}]\nenv = [{}]\n", env.join(", ")));
    }
    for model in ["openai/fake-mini", "openai/fake-aider"] {
        extra.push_str(&format!(
            "\n[pricing.\"{model}\"]\ninput = {}\ncached_input = {}\ncache_write = {}\noutput = {}\n",
            PRICE[0], PRICE[1], PRICE[2], PRICE[3]
        ));
    }
    sb.append("quickstart.toml", &extra);
    sb
}

fn team<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["teams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no team {name} in {r}"))
}

fn solve_patches(sb: &Sandbox, team: &str) -> Vec<String> {
    stored_patches(&sb.path(".bench"), &sb.manifest(), team)
}

fn trajectories(sb: &Sandbox) -> String {
    String::from_utf8_lossy(&everything(&sb.path(".bench/objects"))).into_owned()
}

#[test]
fn real_mini_and_aider_solve_quickstart_tasks_with_exact_costs() {
    let Some(bin) = agents_bin() else { return };
    let mut matches = Vec::new();
    for (id, line) in tasks() {
        matches.push(json!({"model": "fake-mini", "contains": line,
            "replies": mini_fix(&id, [usage(1834, 212, 0, 0), usage(2391, 35, 1792, 0)])}));
        matches.push(json!({"model": "fake-aider", "contains": line,
            "replies": aider_fix(&id, [usage(2466, 301, 0, 0), usage(2790, 301, 0, 0)]),
            "then": {"content": "Done.", "usage": usage(120, 3, 0, 0)}}));
    }
    let server = ModelServer::start(&json!({"match": matches}));
    let sb = quickstart_with(
        &[
            ("mini", "mini-swe-agent@openai/fake-mini"),
            ("aider", "aider@openai/fake-aider"),
        ],
        "limit = 2",
        &[],
    );
    let o = bench(&sb, &server, &bin, &["apply", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));

    let r = sb.report_json();
    for (name, model) in [("mini", "fake-mini"), ("aider", "fake-aider")] {
        let t = team(&r, name);
        assert_eq!(t["resolved"], 2, "{name}: {t}");
        assert_eq!(t["cost"]["priced_runs"], 2, "{name}: {t}");
        let want = server.cost(model, PRICE);
        let got = t["cost"]["total_priced_usd"].as_f64().unwrap();
        assert!(want > 0.0);
        assert!(
            (got - want).abs() < 1e-9,
            "{name}: report ${got} != served usage x price ${want}"
        );
    }
    // Each request carried the user's key.
    for req in server.served() {
        assert_eq!(req["authorization"], format!("Bearer {KEY}"));
    }
    // The patch is the agent's change only; aider's own files are kept in the trajectory.
    for p in solve_patches(&sb, "aider") {
        assert!(!p.contains(".aider") && !p.contains(".gitignore"), "{p}");
        assert!(p.contains("diff --git"), "{p}");
    }
    let stored = trajectories(&sb);
    assert!(stored.contains("own file .aider.chat.history.md"));
    assert!(!stored.contains(KEY), "the key leaked into the store");
    // A rerun runs nothing.
    let plan = bench(&sb, &server, &bin, &["plan", "quickstart.toml"]);
    assert_eq!(plan.status.code(), Some(0), "{}", stdout(&plan));
}

#[test]
fn a_401_on_the_first_call_is_an_uncached_error_naming_the_agents_message() {
    let Some(bin) = agents_bin() else { return };
    let server = ModelServer::start(&json!({"then":
        {"status": 401, "message": "Incorrect API key provided: sk-test***"}}));
    let sb = quickstart_with(
        &[
            ("mini", "mini-swe-agent@openai/fake-mini"),
            ("aider", "aider@openai/fake-aider"),
        ],
        "limit = 1",
        &[],
    );
    let o = bench(&sb, &server, &bin, &["apply", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    // mini exits 1, aider exits 0: both are errors, each named by the agent's own message.
    assert!(
        err.contains("harness `mini-swe-agent` never reached its model (no model call recorded: AuthenticationError"),
        "{err}"
    );
    assert!(
        err.contains("harness `aider` never reached its model (no model call recorded:"),
        "{err}"
    );
    assert!(err.contains("Incorrect API key provided"), "{err}");
    // Not cached: the plan still has the solves to run.
    let plan = bench(&sb, &server, &bin, &["plan", "--json", "quickstart.toml"]);
    assert_eq!(plan.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&plan.stdout).unwrap();
    let solves = v["to_run"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["address"].as_str().unwrap().starts_with("solve/"))
        .count();
    assert_eq!(solves, 2, "{v}");
}

#[test]
fn a_401_after_two_calls_is_a_result_with_its_cost() {
    let Some(bin) = agents_bin() else { return };
    let (id, line) = tasks().remove(0);
    let mut replies = mini_fix(&id, [usage(1834, 212, 0, 0), usage(2391, 35, 0, 0)]);
    // Both calls answered, but the second asks for more work instead of submitting.
    replies[1] = json!({"content": "Let me check.", "tool_calls": [
        {"name": "bash", "arguments": {"command": "git diff --stat"}}], "usage": usage(2391, 35, 0, 0)});
    let server = ModelServer::start(&json!({
        "match": [{"contains": line, "replies": replies,
                   "then": {"status": 401, "message": "Incorrect API key provided"}}],
        "then": {"status": 401, "message": "Incorrect API key provided"}}));
    let sb = quickstart_with(&[("mini", "mini-swe-agent@openai/fake-mini")], "", &[]);
    // The server by `base_url`, not by a variable passed in `env`.
    sb.edit(
        "quickstart.toml",
        "[harnesses.mini-swe-agent]\nenv = [\"OPENAI_API_KEY\", \"OPENAI_API_BASE\"]",
        &format!(
            "[harnesses.mini-swe-agent]\nenv = [\"OPENAI_API_KEY\"]\nbase_url = \"{}\"",
            server.base()
        ),
    );
    // Only the task the script knows.
    sb.edit(
        "quickstart.toml",
        "seed = 7",
        &format!("seed = 7\ninstance_ids = [\"{id}\"]"),
    );
    let o = bench(&sb, &server, &bin, &["apply", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = sb.report_json();
    let t = team(&r, "mini");
    assert_eq!(
        t["resolved"], 1,
        "the fix written before the 401 counts: {t}"
    );
    let want = server.cost("fake-mini", PRICE);
    let got = t["cost"]["total_priced_usd"].as_f64().unwrap();
    assert!((got - want).abs() < 1e-9, "${got} != ${want}");
    // 2 calls, 1834 + 2391 input and 212 + 35 output tokens: cached, no rerun.
    assert!((want - ((1834.0 + 2391.0) * 2.0 + 247.0 * 8.0) / 1e6).abs() < 1e-12);
    let plan = bench(&sb, &server, &bin, &["plan", "quickstart.toml"]);
    assert_eq!(plan.status.code(), Some(0), "{}", stdout(&plan));
}

#[test]
fn a_429_storm_or_500s_are_uncached_errors() {
    let Some(bin) = agents_bin() else { return };
    let server = ModelServer::start(&json!({
        "match": [{"model": "fake-500", "then": {"status": 500, "message": "upstream exploded"}}],
        "then": {"status": 429, "retry_after": 0, "message": "Rate limit reached for requests"}}));
    let sb = quickstart_with(
        &[
            ("mini", "mini-swe-agent@openai/fake-mini"),
            ("m500", "mini-swe-agent@openai/fake-500"),
        ],
        "limit = 1",
        &["MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT"],
    );
    let o = bench_env(
        &sb,
        &server,
        &bin,
        &["apply", "quickstart.toml"],
        &[("MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT", "1")],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    for (team, why) in [("mini", "RateLimitError"), ("m500", "InternalServerError")] {
        assert!(
            err.contains(&format!(
                "{team}/0: harness `mini-swe-agent` never reached its model (no model call recorded: {why}"
            )),
            "{err}"
        );
    }
    let served = server.served();
    for (model, status) in [("fake-mini", 429), ("fake-500", 500)] {
        let n = served
            .iter()
            .filter(|r| r["model"] == model && r["status"] == status)
            .count();
        assert!(n >= 2, "{model}: retried before giving up ({n} requests)");
    }
    let plan = bench(&sb, &server, &bin, &["plan", "quickstart.toml"]);
    assert_eq!(plan.status.code(), Some(2));
}

#[test]
fn a_hanging_model_is_a_timed_out_result() {
    let Some(bin) = agents_bin() else { return };
    let server = ModelServer::start(&json!({"then": {"hang": true}}));
    let sb = quickstart_with(
        &[("mini", "mini-swe-agent@openai/fake-mini")],
        "limit = 1",
        &[],
    );
    sb.edit(
        "quickstart.toml",
        "limit = 1\ntimeout = \"2m\"",
        "limit = 1\ntimeout = \"90s\"",
    );
    let started = Instant::now();
    let o = bench(&sb, &server, &bin, &["apply", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(started.elapsed() < Duration::from_secs(240));
    let r = sb.report_json();
    let t = team(&r, "mini");
    assert_eq!(t["timed_out"], 1, "{t}");
    assert_eq!(
        t["cost"]["priced_runs"], 0,
        "a timed-out run's cost is unknown: {t}"
    );
    assert!(server.served().iter().any(|r| r["status"] == "hang"));
}

#[test]
fn an_unpriced_model_under_a_budget_is_refused_before_anything_runs() {
    let Some(bin) = agents_bin() else { return };
    let server = ModelServer::start(&json!({}));
    let sb = quickstart_with(
        &[("aider", "aider@openai/unpriced")],
        "max_cost_usd = 0.01",
        &[],
    );
    let o = bench(&sb, &server, &bin, &["apply", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("runs `aider@openai/unpriced`, whose cost"),
        "{err}"
    );
    assert!(err.contains("nothing was run"), "{err}");
    assert!(server.served().is_empty());
    assert!(!sb.path(".bench/actions").exists());
}

#[test]
fn aider_with_cache_hits_and_writes_is_priced_from_exact_tokens() {
    let Some(bin) = agents_bin() else { return };
    let (id, line) = tasks().remove(0);
    // aider prints `Cost:` on its own line when a reply has both cache hits and writes; it knows
    // the model's price from a metadata file (passed by its own environment variable).
    let meta = tempfile::NamedTempFile::new().unwrap();
    fs_err::write(
        meta.path(),
        json!({"openai/fake-aider": {"max_input_tokens": 100000, "max_output_tokens": 4096,
            "input_cost_per_token": 2e-6, "output_cost_per_token": 8e-6,
            "cache_read_input_token_cost": 5e-7, "cache_creation_input_token_cost": 2.5e-6,
            "litellm_provider": "openai", "mode": "chat"}})
        .to_string(),
    )
    .unwrap();
    let server = ModelServer::start(&json!({"match": [{"contains": line,
        "replies": aider_fix(&id, [usage(2466, 301, 896, 512), usage(2790, 301, 896, 512)]),
        "then": {"content": "Done.", "usage": usage(980, 3, 640, 0)}}]}));
    let sb = quickstart_with(
        &[("aider", "aider@openai/fake-aider")],
        "",
        &["AIDER_MODEL_METADATA_FILE"],
    );
    // The server by `base_url`, not by a variable passed in `env`.
    sb.edit(
        "quickstart.toml",
        "[harnesses.aider]\nenv = [\"OPENAI_API_KEY\", \"OPENAI_API_BASE\", \"AIDER_MODEL_METADATA_FILE\"]",
        &format!(
            "[harnesses.aider]\nenv = [\"OPENAI_API_KEY\", \"AIDER_MODEL_METADATA_FILE\"]\nbase_url = \"{}\"",
            server.base()
        ),
    );
    sb.edit(
        "quickstart.toml",
        "seed = 7",
        &format!("seed = 7\ninstance_ids = [\"{id}\"]"),
    );
    let o = bench_env(
        &sb,
        &server,
        &bin,
        &["apply", "quickstart.toml"],
        &[("AIDER_MODEL_METADATA_FILE", meta.path().to_str().unwrap())],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let stored = trajectories(&sb);
    assert!(
        stored.contains("cache write, 896 cache hit, 301 received.\nCost: $"),
        "aider printed its cache line: {:?}",
        stored
            .lines()
            .filter(|l| l.starts_with("Tokens:") || l.starts_with("Cost:"))
            .collect::<Vec<_>>()
    );
    let t = team(&sb.report_json(), "aider").clone();
    let want = server.cost("fake-aider", PRICE);
    let got = t["cost"]["total_priced_usd"].as_f64().unwrap();
    assert!((got - want).abs() < 1e-9, "${got} != ${want}: {t}");
}

// ---------------------------------------------------------------------------------------------
// Claude Code and Codex, each against its vendor's API, scripted, in a network namespace.

const ANTHROPIC_KEY: &str = "sk-ant-api03-testGOODkey0123456789abcdef";
const CODEX_KEY: &str = "sk-proj-testGOODcodexkey0123456789abcdef";
const BAD_KEY: &str = "sk-ant-api03-testBADkey9876543210fedcba";

/// Claude Code's own list price for `claude-sonnet-4-5` (input, cache read, cache write 5m,
/// output, dollars per million tokens): what its `total_cost_usd` is computed with.
const SONNET_LIST: [f64; 4] = [3.0, 0.3, 3.75, 15.0];

/// `unshare`, `nsenter`, `ip` and `strace`, or a note (a panic under CI) without them.
fn netns_tools() -> bool {
    let missing: Vec<&str> = ["unshare", "nsenter", "ip", "strace"]
        .into_iter()
        .filter(|t| {
            !Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {t}"))
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    let why = format!("{} not installed (see .ci/run)", missing.join(", "));
    if ci() {
        panic!("CI=true but {why}");
    }
    eprintln!("skipped: {why}");
    false
}

/// tests/fakes/vendor_server.py, alone in a new network namespace (only loopback, up), killed
/// on drop. bench runs in the same namespace (`nsenter`), so the CLIs reach the server on
/// 127.0.0.1 and nothing else.
struct VendorServer {
    child: Child,
    port: u16,
    log: PathBuf,
    dir: tempfile::TempDir,
}

impl VendorServer {
    fn start(script: &Value) -> VendorServer {
        let dir = tempfile::tempdir().unwrap();
        let script_path = dir.path().join("script.json");
        fs_err::write(&script_path, serde_json::to_vec(script).unwrap()).unwrap();
        let port_file = dir.path().join("port");
        let log = dir.path().join("served.jsonl");
        let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakes/vendor_server.py");
        let child = Command::new("unshare")
            .args([
                "--net",
                "sh",
                "-c",
                "ip link set lo up && exec python3 \"$@\"",
                "sh",
            ])
            .arg(&server)
            .arg(&script_path)
            .arg(&port_file)
            .arg(&log)
            .spawn()
            .expect("unshare runs the vendor server");
        let started = Instant::now();
        let port = loop {
            if let Ok(p) = fs_err::read_to_string(&port_file) {
                break p.trim().parse().unwrap();
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the vendor server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        VendorServer {
            child,
            port,
            log,
            dir,
        }
    }

    fn netns(&self) -> String {
        format!("/proc/{}/ns/net", self.child.id())
    }

    /// Claude Code's base URL (it adds `/v1/messages`).
    fn anthropic_base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Codex's base URL (it adds `/responses`).
    fn openai_base(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    fn served(&self) -> Vec<Value> {
        fs_err::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// What the answered calls for `model` cost at `price` (input, cached, write, output per
    /// million), from the usage served (`input` counts every input token).
    fn cost(&self, model: &str, price: [f64; 4]) -> f64 {
        self.served()
            .iter()
            .filter(|r| r["model"] == model && r["status"] == 200 && !r["usage"].is_null())
            .map(|r| {
                let n = |k: &str| r["usage"][k].as_u64().unwrap() as f64;
                ((n("input") - n("cached") - n("write")) * price[0]
                    + n("cached") * price[1]
                    + n("write") * price[2]
                    + n("output") * price[3])
                    / 1e6
            })
            .sum()
    }

    /// Runs bench inside the server's namespace under strace, with the CLIs on PATH and `env`;
    /// returns its output and every connection attempt (`connect`, `sendto`, `sendmsg` to an
    /// IPv4 or IPv6 address) that was not to the server.
    fn bench(
        &self,
        sb: &Sandbox,
        bin: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> (Output, Vec<String>) {
        let trace = self.dir.path().join(format!(
            "trace-{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--net={}", self.netns()))
            .args([
                "--",
                "strace",
                "-f",
                "-qq",
                "-e",
                "trace=connect,sendto,sendmsg",
                "-o",
            ])
            .arg(&trace)
            .arg(bench_bin())
            .args(args)
            .current_dir(sb.dir.path())
            .env("PATH", path)
            .env("NO_COLOR", "1")
            .env_remove("BENCH_STORE")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("CODEX_API_KEY");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let server = format!(
            "sin_port=htons({}), sin_addr=inet_addr(\"127.0.0.1\")",
            self.port
        );
        let outside = fs_err::read_to_string(&trace)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("sa_family=AF_INET") && !l.contains(&server))
            .map(|l| l.chars().take(300).collect())
            .collect();
        (out, outside)
    }
}

impl Drop for VendorServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A shell command writing a task's fixed files.
fn write_fix(task: &str) -> String {
    fixed_files(task)
        .iter()
        .map(|(p, c)| format!("cat > '{p}' <<'BENCH_EOF'\n{c}BENCH_EOF"))
        .collect::<Vec<_>>()
        .join(" && ")
}

/// The most a Claude Code or Codex trajectory of these two-call runs may take: the
/// conversation and logs, not the caches (Codex's was about 0.9 MB with its skills and SQLite
/// files).
const TRAJECTORY_CAP: usize = 400 << 10;

/// The sizes of the stored trajectories of `team`'s solves.
fn trajectory_sizes(sb: &Sandbox, team: &str) -> Vec<usize> {
    let store = bench::store::Store::open_existing(&sb.path(".bench")).unwrap();
    let manifest = fs_err::canonicalize(sb.manifest()).unwrap();
    let mut out = Vec::new();
    for (address, key) in store.load_index(&manifest).nodes {
        if address.starts_with("solve/") && address.contains(&format!("/{team}/")) {
            let bench::store::Lookup::Hit(rec) = store.get_action(&key) else {
                panic!("no record for {address}");
            };
            out.push(
                store
                    .get_blob(&bench::types::Digest::parse(&rec.blobs["trajectory"]).unwrap())
                    .unwrap()
                    .len(),
            );
        }
    }
    assert!(!out.is_empty(), "no solve of {team}");
    out
}

fn vusage(input: u64, cached: u64, write: u64, output: u64) -> Value {
    json!({"input": input, "cached": cached, "write": write, "output": output})
}

/// Claude Code's script for a task: a `Bash` tool call writing the fix, then a final message.
fn claude_fix(task: &str, usage: [Value; 2]) -> Vec<Value> {
    let [first, second] = usage;
    vec![
        json!({"content": "I will write the fix.", "tool_calls": [{"name": "Bash",
            "arguments": {"command": write_fix(task), "description": "Write the fix"}}],
            "usage": first}),
        json!({"content": "Done: the fix is written.", "usage": second}),
    ]
}

/// Codex's script for a task: an `exec_command` function call writing the fix, then a message.
fn codex_fix(task: &str, usage: [Value; 2]) -> Vec<Value> {
    let [first, second] = usage;
    vec![
        json!({"content": "I will write the fix.", "tool_calls": [{"name": "exec_command",
            "arguments": {"cmd": write_fix(task)}}], "usage": first}),
        json!({"content": "Done: the fix is written.", "usage": second}),
    ]
}

/// The quickstart with Claude Code and Codex teams (`(team, agent)`), each harness pointed at
/// the server by `base_url`, and a price for `gpt-test` and `my-gateway-model`.
fn vendor_quickstart(server: &VendorServer, teams: &[(&str, &str)], solve: &str) -> Sandbox {
    let sb = Sandbox::quickstart();
    let names: Vec<String> = std::iter::once("nop")
        .chain(teams.iter().map(|(n, _)| *n))
        .map(|n| format!("\"{n}\""))
        .collect();
    sb.edit(
        "quickstart.toml",
        "teams = [\"oracle\", \"nop\", \"fixer\"]",
        &format!("teams = [{}]\n{solve}", names.join(", ")),
    );
    let mut extra = String::new();
    for (name, agent) in teams {
        extra.push_str(&format!(
            "\n[teams.{name}]\ntopology = \"solo\"\nworker = \"{agent}\"\n"
        ));
    }
    extra.push_str(&format!(
        "\n[harnesses.claude-code]\nbase_url = \"{}\"\n\n[harnesses.codex]\nbase_url = \"{}\"\n",
        server.anthropic_base(),
        server.openai_base()
    ));
    for model in ["gpt-test", "my-gateway-model"] {
        extra.push_str(&format!(
            "\n[pricing.\"{model}\"]\ninput = {}\ncached_input = {}\ncache_write = {}\noutput = {}\n",
            PRICE[0], PRICE[1], PRICE[2], PRICE[3]
        ));
    }
    sb.append("quickstart.toml", &extra);
    sb
}

fn good_keys() -> [(&'static str, &'static str); 2] {
    [
        ("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
        ("CODEX_API_KEY", CODEX_KEY),
    ]
}

#[test]
fn real_claude_code_and_codex_solve_quickstart_tasks_exactly_and_silently() {
    let Some(bin) = agents_bin_with(&["claude", "codex"]) else {
        return;
    };
    if !netns_tools() {
        return;
    }
    let mut matches = Vec::new();
    for (id, line) in tasks() {
        for model in ["claude-sonnet-4-5", "my-gateway-model"] {
            matches.push(json!({"model": model, "contains": line,
                "replies": claude_fix(&id, [vusage(3120, 1024, 512, 187), vusage(3388, 3072, 0, 23)])}));
        }
        matches.push(json!({"model": "gpt-test", "contains": line,
            "replies": codex_fix(&id, [vusage(4410, 2048, 256, 96), vusage(4702, 4352, 0, 17)])}));
    }
    let server =
        VendorServer::start(&json!({"keys": [ANTHROPIC_KEY, CODEX_KEY], "match": matches}));
    let sb = vendor_quickstart(
        &server,
        &[
            ("claude", "claude-code@claude-sonnet-4-5"),
            ("gateway", "claude-code@my-gateway-model"),
            ("codex", "codex@gpt-test"),
        ],
        "limit = 2",
    );
    let (o, outside) = server.bench(&sb, &bin, &["apply", "quickstart.toml"], &good_keys());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        outside.is_empty(),
        "connection attempts outside the scripted server:\n{}",
        outside.join("\n")
    );

    let r = sb.report_json();
    // Claude Code priced its known model itself (exact); the gateway's custom name and Codex
    // are priced from the table. Each figure equals the served usage at that price.
    for (name, model, price, basis) in [
        ("claude", "claude-sonnet-4-5", SONNET_LIST, "reported"),
        ("gateway", "my-gateway-model", PRICE, "table"),
        ("codex", "gpt-test", PRICE, "table"),
    ] {
        let t = team(&r, name);
        assert_eq!(t["resolved"], 2, "{name}: {t}");
        assert_eq!(t["cost"]["priced_runs"], 2, "{name}: {t}");
        assert_eq!(t["cost"]["basis"], json!({basis: 2}), "{name}: {t}");
        let want = server.cost(model, price);
        let got = t["cost"]["total_priced_usd"].as_f64().unwrap();
        assert!(want > 0.0);
        assert!(
            (got - want).abs() < 1e-9,
            "{name}: report ${got} != served usage x price ${want}"
        );
    }
    // 4 calls per team, each carrying its key.
    let served = server.served();
    for (model, key) in [
        ("claude-sonnet-4-5", ANTHROPIC_KEY.to_string()),
        ("my-gateway-model", ANTHROPIC_KEY.to_string()),
        ("gpt-test", format!("Bearer {CODEX_KEY}")),
    ] {
        let calls: Vec<&Value> = served
            .iter()
            .filter(|r| r["model"] == model && r["status"] == 200)
            .collect();
        assert_eq!(calls.len(), 4, "{model}: {served:?}");
        assert!(
            calls
                .iter()
                .all(|r| r["key"] == key.as_str() && r["stream"] == true)
        );
    }
    // Nothing but model calls: Claude Code's messages, Codex's responses (a refused WebSocket
    // upgrade, then HTTP).
    for r in &served {
        let call = (r["method"].as_str().unwrap(), r["path"].as_str().unwrap());
        assert!(
            matches!(
                call,
                ("POST", "/v1/messages?beta=true")
                    | ("POST", "/v1/responses")
                    | ("GET", "/v1/responses")
            ),
            "{r}"
        );
    }
    for team in ["claude", "gateway", "codex"] {
        for p in solve_patches(&sb, team) {
            assert!(p.contains("diff --git"), "{team}: {p}");
        }
    }
    let stored = trajectories(&sb);
    assert!(!stored.contains(ANTHROPIC_KEY) && !stored.contains(CODEX_KEY));
    // The conversations are kept; Codex's unpacked skills and SQLite files are only listed.
    assert!(
        stored.contains("file .claude/projects/"),
        "claude's transcript kept"
    );
    assert!(
        stored.contains("file .codex/sessions/"),
        "codex's session kept"
    );
    assert!(stored.contains("worker caches left out ("));
    assert!(stored.contains(".codex/skills/.system/"));
    assert!(!stored.contains("SQLite format 3"), "a database dumped");
    assert!(
        !stored.contains("1p_failed_events"),
        "claude's telemetry dump"
    );
    for team in ["claude", "codex"] {
        for n in trajectory_sizes(&sb, team) {
            eprintln!("{team}: trajectory of {n} bytes");
            assert!(n < TRAJECTORY_CAP, "{team}: a trajectory of {n} bytes");
        }
    }
    // A rerun runs nothing.
    let (plan, _) = server.bench(&sb, &bin, &["plan", "quickstart.toml"], &good_keys());
    assert_eq!(plan.status.code(), Some(0), "{}", stdout(&plan));
}

#[test]
fn a_bad_key_under_a_short_timeout_is_not_cached_and_a_good_key_then_resolves() {
    let Some(bin) = agents_bin_with(&["claude", "codex"]) else {
        return;
    };
    if !netns_tools() {
        return;
    }
    let (id, line) = tasks().remove(0);
    // One key per API: a request with any other gets the vendor's 401.
    let server = VendorServer::start(&json!({"keys": [ANTHROPIC_KEY, CODEX_KEY], "match": [
        {"model": "claude-sonnet-4-5", "contains": line,
         "replies": claude_fix(&id, [vusage(3120, 0, 0, 187), vusage(3388, 0, 0, 23)])},
        {"model": "gpt-test", "contains": line,
         "replies": codex_fix(&id, [vusage(4410, 0, 0, 96), vusage(4702, 0, 0, 17)])}]}));
    let sb = vendor_quickstart(
        &server,
        &[
            ("claude", "claude-code@claude-sonnet-4-5"),
            ("codex", "codex@gpt-test"),
        ],
        "",
    );
    sb.edit(
        "quickstart.toml",
        "seed = 7",
        &format!("seed = 7\ninstance_ids = [\"{id}\"]"),
    );
    // Claude Code retries a 401 for minutes, printing nothing: bench's timeout stops it.
    sb.edit(
        "quickstart.toml",
        "timeout = \"2m\"\n\n[stages.grade]",
        "timeout = \"30s\"\n\n[stages.grade]",
    );
    let bad = [("ANTHROPIC_API_KEY", BAD_KEY), ("CODEX_API_KEY", BAD_KEY)];
    let (o, outside) = server.bench(&sb, &bin, &["apply", "quickstart.toml"], &bad);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(outside.is_empty(), "{}", outside.join("\n"));
    let err = stderr(&o);
    assert!(
        err.contains("harness `claude-code` never reached its model (no model call recorded: the model API refused every call until bench's timeout stopped it: 401 invalid x-api-key)"),
        "{err}"
    );
    assert!(
        err.contains("harness `codex` never reached its model (no model call recorded:")
            && err.contains("401 Unauthorized"),
        "{err}"
    );
    assert!(!err.contains(BAD_KEY), "{err}");
    assert!(server.served().iter().all(|r| r["status"] != 200));
    // Not cached: both solves are still to run.
    let (plan, _) = server.bench(&sb, &bin, &["plan", "--json", "quickstart.toml"], &bad);
    assert_eq!(plan.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&plan.stdout).unwrap();
    let solves = v["to_run"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["address"].as_str().unwrap().starts_with("solve/"))
        .count();
    assert_eq!(solves, 2, "{v}");
    // The good keys: both resolve, and the results are cached.
    let (o, outside) = server.bench(&sb, &bin, &["apply", "quickstart.toml"], &good_keys());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(outside.is_empty(), "{}", outside.join("\n"));
    let r = sb.report_json();
    for name in ["claude", "codex"] {
        assert_eq!(team(&r, name)["resolved"], 1, "{name}: {r}");
    }
    let (plan, _) = server.bench(&sb, &bin, &["plan", "quickstart.toml"], &good_keys());
    assert_eq!(plan.status.code(), Some(0), "{}", stdout(&plan));
}

#[test]
fn without_the_builtins_silencing_each_cli_reaches_for_its_vendor_and_strace_sees_it() {
    let Some(bin) = agents_bin_with(&["claude", "codex"]) else {
        return;
    };
    if !netns_tools() {
        return;
    }
    let (id, line) = tasks().remove(0);
    let server = VendorServer::start(&json!({"keys": [ANTHROPIC_KEY, CODEX_KEY], "match": [
        {"model": "claude-sonnet-4-5", "contains": line,
         "replies": claude_fix(&id, [vusage(3120, 0, 0, 187), vusage(3388, 0, 0, 23)])},
        {"model": "gpt-test", "contains": line,
         "replies": codex_fix(&id, [vusage(4410, 0, 0, 96), vusage(4702, 0, 0, 17)])}]}));
    // The built-in commands less their switches: the variable, and codex's `-c`s.
    let builtin: toml::Value = toml::from_str(bench::harness::BUILTIN_HARNESSES).unwrap();
    let command = |h: &str| builtin[h]["command"].as_str().unwrap().to_string();
    let cases = [
        (
            "claude-code",
            "claude-sonnet-4-5",
            command("claude-code").replace("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 ", ""),
        ),
        (
            "codex",
            "gpt-test",
            command("codex").replace(
                "-c analytics.enabled=false -c check_for_update_on_startup=false -c feedback.enabled=false -c features.plugins=false -c features.remote_plugin=false -c features.api_key_model_discovery=false ",
                "",
            ),
        ),
    ];
    for (harness, model, loud) in cases {
        assert_ne!(
            loud,
            command(harness),
            "{harness}: the switches are in the built-in"
        );
        let sb = vendor_quickstart(&server, &[("loud", &format!("{harness}@{model}"))], "");
        sb.edit(
            "quickstart.toml",
            "seed = 7",
            &format!("seed = 7\ninstance_ids = [\"{id}\"]"),
        );
        sb.edit(
            "quickstart.toml",
            &format!("[harnesses.{harness}]\n"),
            &format!(
                "[harnesses.{harness}]\ncommand = {}\n",
                toml::Value::String(loud)
            ),
        );
        let (o, outside) = server.bench(&sb, &bin, &["apply", "quickstart.toml"], &good_keys());
        assert!(o.status.success(), "{harness}: {}", stderr(&o));
        assert_eq!(team(&sb.report_json(), "loud")["resolved"], 1, "{harness}");
        // It still solved through the server, and it tried other hosts too: their DNS lookups
        // (telemetry, analytics, plugin sync), refused in the namespace.
        let dns = outside.iter().filter(|l| l.contains("htons(53)")).count();
        assert!(dns > 0, "{harness}: no attempt outside the server seen");
        let stored = trajectories(&sb);
        if harness == "codex" {
            // Its queries name the hosts: analytics and web (chatgpt.com), plugin sync (GitHub).
            let all = outside.join("\n");
            assert!(all.contains("\\7chatgpt\\3com"), "{all}");
            assert!(all.contains("\\6github\\3com"), "{all}");
        } else {
            // Claude Code left its failed telemetry events in HOME: listed, not kept.
            assert!(
                stored.contains(".claude/telemetry/1p_failed_events."),
                "no dump"
            );
        }
    }
}

/// The vendor server on the host's own loopback (for the docker backend, whose agents reach it
/// through bench's egress proxy).
fn vendor_server_on_host(script: &Value) -> (Child, u16, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let script_path = dir.path().join("script.json");
    fs_err::write(&script_path, serde_json::to_vec(script).unwrap()).unwrap();
    let port_file = dir.path().join("port");
    let log = dir.path().join("served.jsonl");
    let child = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakes/vendor_server.py"))
        .arg(&script_path)
        .arg(&port_file)
        .arg(&log)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let port = loop {
        if let Ok(p) = fs_err::read_to_string(&port_file) {
            break p.trim().parse().unwrap();
        }
        assert!(started.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(50));
    };
    (child, port, log, dir)
}

/// On docker: the executables of the same wheels, installed into the agent image through
/// `install_files` (the containers have no network), run in the calc fixture's Debian image
/// behind the egress allowlist, which holds only the `base_url` endpoint. Each fixes the task
/// through the scripted server, with tokens and cost as served.
#[test]
fn real_claude_code_and_codex_on_docker_from_the_wheels_executables() {
    let Some(bin) = agents_bin_with(&["claude", "codex"]) else {
        return;
    };
    if !docker_ready(&[CALC_IMAGE]) {
        return;
    }
    let (base, _) = calc_shas();
    let fix = "sed -i 's/return a - b/return a + b/' calc.py";
    let replies = |tool: Value| {
        vec![
            json!({"content": "Fixing add.", "tool_calls": [tool], "usage": vusage(2100, 512, 128, 77)}),
            json!({"content": "Done.", "usage": vusage(2300, 2048, 0, 9)}),
        ]
    };
    let (mut child, port, log, _dir) = vendor_server_on_host(&json!({
        "keys": [ANTHROPIC_KEY, CODEX_KEY], "match": [
        {"model": "claude-sonnet-4-5", "replies": replies(json!({"name": "Bash",
            "arguments": {"command": fix, "description": "Fix add"}}))},
        {"model": "gpt-test", "replies": replies(json!({"name": "exec_command",
            "arguments": {"cmd": fix}}))}]}));
    let d = tempfile::tempdir().unwrap();
    let task = d.path().join("tasks/calc-1");
    fs_err::create_dir_all(&task).unwrap();
    fs_err::write(
        task.join("task.toml"),
        format!(
            "instance_id = \"calc-1\"\nrepo = \"fixture/calc\"\nlanguage = \"python\"\ncreated_at = 2026-08-01T00:00:00Z\n\
problem_statement = \"add() subtracts\"\nimage = \"{CALC_IMAGE}\"\nbase_commit = \"{base}\"\n\
test_cmds = [\"cd /testbed && python3 -m unittest -v tests.test_add tests.test_mul > /tmp/unittest.log 2>&1\"]\n\
print_cmds = [\"cat /tmp/unittest.log\"]\nlog_parser = \"unittest\"\n\
FAIL_TO_PASS = [\"test_add (tests.test_add.T.test_add)\"]\nPASS_TO_PASS = [\"test_mul (tests.test_mul.T.test_mul)\"]\n"
        ),
    )
    .unwrap();
    fs_err::write(task.join("gold.patch"), CALC_FIX).unwrap();
    fs_err::write(task.join("test.patch"), CALC_TEST_PATCH).unwrap();
    let agents = bin.parent().unwrap();
    let manifest = format!(
        r#"version = 1
name = "vendors"

[backend]
kind = "docker"
cpus = 1
memory = "2GiB"
egress = "allowlist"

[datasets.fx]
format = "local"
path = "tasks"

[stages.sample]
kind = "sample"
dataset = "fx"
since = 2026-07-01
seed = 1

[stages.solve]
kind = "solve"
needs = ["sample"]
teams = ["claude", "codex"]
timeout = "3m"

[stages.grade]
kind = "grade"
needs = ["solve"]
timeout = "2m"

[stages.report]
kind = "report"
needs = ["grade"]

[teams.claude]
topology = "solo"
worker = "claude-code@claude-sonnet-4-5"

[teams.codex]
topology = "solo"
worker = "codex@gpt-test"

[harnesses.claude-code]
base_url = "http://127.0.0.1:{port}"
endpoints = []
install_files = ["{agents}/claude/claude_agent_sdk/_bundled/claude"]
install = ["install -m 0755 claude /usr/local/bin/claude"]

[harnesses.codex]
base_url = "http://127.0.0.1:{port}/v1"
endpoints = []
install_files = ["{agents}/codex/codex_cli_bin/bin/codex"]
install = ["install -m 0755 codex /usr/local/bin/codex"]

[pricing."gpt-test"]
input = {p0}
cached_input = {p1}
cache_write = {p2}
output = {p3}
"#,
        agents = agents.display(),
        p0 = PRICE[0],
        p1 = PRICE[1],
        p2 = PRICE[2],
        p3 = PRICE[3],
    );
    fs_err::write(d.path().join("m.toml"), manifest).unwrap();
    let o = Command::new(bench_bin())
        .args(["apply", "m.toml"])
        .current_dir(d.path())
        .env("NO_COLOR", "1")
        .env_remove("BENCH_STORE")
        .envs(good_keys())
        .output()
        .unwrap();
    let served: Vec<Value> = fs_err::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    assert!(o.status.success(), "{}", stderr(&o));
    let r: Value = serde_json::from_str(
        &fs_err::read_to_string(d.path().join("reports/vendors/report.json")).unwrap(),
    )
    .unwrap();
    let cost = |model: &str, price: [f64; 4]| -> f64 {
        served
            .iter()
            .filter(|r| r["model"] == model && r["status"] == 200)
            .map(|r| {
                let n = |k: &str| r["usage"][k].as_u64().unwrap() as f64;
                ((n("input") - n("cached") - n("write")) * price[0]
                    + n("cached") * price[1]
                    + n("write") * price[2]
                    + n("output") * price[3])
                    / 1e6
            })
            .sum()
    };
    for (name, model, price, basis) in [
        ("claude", "claude-sonnet-4-5", SONNET_LIST, "reported"),
        ("codex", "gpt-test", PRICE, "table"),
    ] {
        let t = team(&r, name);
        assert_eq!(t["resolved"], 1, "{name}: {t}");
        assert_eq!(t["cost"]["basis"], json!({basis: 1}), "{name}: {t}");
        let want = cost(model, price);
        let got = t["cost"]["total_priced_usd"].as_f64().unwrap();
        assert!(
            want > 0.0 && (got - want).abs() < 1e-9,
            "{name}: ${got} != ${want}"
        );
    }
    let stored =
        String::from_utf8_lossy(&everything(&d.path().join(".bench/objects"))).into_owned();
    assert!(!stored.contains(ANTHROPIC_KEY) && !stored.contains(CODEX_KEY));
}
