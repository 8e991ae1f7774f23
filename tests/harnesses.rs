//! Agent harnesses, teams, budgets and secret scrubbing, with fake `claude` and `codex` CLIs
//! (tests/fakes/) that print the real output formats, on the local backend.

mod common;

use std::path::Path;
use std::process::Output;

use common::*;

const SECRET: &str = "sk-ant-test-SECRETVALUE0123456789";

fn manifest(sb: &Sandbox, body: &str) {
    let text = format!(
        r#"version = 1
name = "agents"

[datasets.quick]
format = "local"
path = "quickstart/tasks"

[stages.sample]
kind = "sample"
dataset = "quick"
seed = 7
{body}
{FAKE_CLAUDE_PRICES}"#
    );
    fs_err::write(sb.path("agents.toml"), text).unwrap();
}

fn run(sb: &Sandbox, args: &[&str], extra_env: &[(&str, &str)]) -> Output {
    let fakes = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakes");
    let path = format!("{}:{}", fakes.display(), std::env::var("PATH").unwrap());
    let mut cmd = std::process::Command::new(bench_bin());
    cmd.args(args)
        .current_dir(sb.dir.path())
        .env("PATH", path)
        .env("ANTHROPIC_API_KEY", SECRET)
        .env("CODEX_API_KEY", "codex-key-value-xyz")
        .env("NO_COLOR", "1")
        .env_remove("BENCH_STORE");
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn report(sb: &Sandbox) -> serde_json::Value {
    serde_json::from_str(&sb.read("reports/agents/report.json")).unwrap()
}

fn team<'a>(r: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    r["teams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap()
}

fn patches(sb: &Sandbox, team: &str) -> Vec<String> {
    // The solve records' patch blobs, read from the store.
    stored_patches(&sb.path(".bench"), &sb.path("agents.toml"), team)
}

const PIPELINE: &str = r#"
[stages.solve]
kind = "solve"
needs = ["sample"]
limit = 2
teams = TEAMS
timeout = "1m"

[stages.grade]
kind = "grade"
needs = ["solve"]
timeout = "1m"

[stages.report]
kind = "report"
needs = ["grade"]
"#;

#[test]
fn solo_review_and_best_of_with_fake_clis() {
    let sb = Sandbox::quickstart();
    let body = PIPELINE.replace("TEAMS", r#"["solo", "review", "best", "cx"]"#)
        + r#"
[teams]
solo = "solo:worker=claude@claude-haiku-5-5"
review = "review:coder=claude@claude-haiku-5-5,reviewer=claude@claude-sonnet-5-5,rounds=2"
best = "best:workers=claude@m1+claude@m2+claude@m3,judge=claude@judge"
cx = "solo:worker=codex@gpt-6-luna"
"#;
    manifest(&sb, &body);
    let o = run(&sb, &["apply", "agents.toml"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));

    // Patches: solo writes one line; review adds the fix after a REQUEST_CHANGES; best-of
    // keeps the judge's pick (worker 2).
    for p in patches(&sb, "solo") {
        assert!(p.contains("+written by claude-haiku-5-5"), "{p}");
        assert!(!p.contains("fixed after review"));
    }
    for p in patches(&sb, "review") {
        assert!(p.contains("+fixed after review"), "{p}");
    }
    for p in patches(&sb, "best") {
        assert!(p.contains("+written by m2"), "{p}");
    }
    for p in patches(&sb, "cx") {
        assert!(p.contains("+codex gpt-6-luna"), "{p}");
    }
    // Usage and cost: $0.01 per claude call; codex priced by the table.
    let r = report(&sb);
    let cost = |t: &str| team(&r, t)["cost"]["mean_usd"].as_f64().unwrap();
    assert!((cost("solo") - 0.01).abs() < 1e-9);
    // coder, reviewer (changes), fix, reviewer (approve)
    assert!((cost("review") - 0.04).abs() < 1e-9, "{}", cost("review"));
    assert!((cost("best") - 0.04).abs() < 1e-9);
    let codex = (500000.0 * 0.10 + 500000.0 * 0.01 + 100000.0 * 0.50) / 1e6;
    assert!((cost("cx") - codex).abs() < 1e-9);

    // The key never reaches the store or the report; what was scrubbed says so.
    let all = [
        everything(&sb.path(".bench")),
        everything(&sb.path("reports")),
    ]
    .concat();
    let hay = String::from_utf8_lossy(&all);
    assert!(!hay.contains(SECRET), "the API key leaked into the store");
    assert!(
        !hay.contains("sk-ant-api03-LEAKED"),
        "a key-shaped string leaked"
    );
    assert!(hay.contains("\"redacted\": true"));
    // The agent's own conversation log is kept with its trajectory (scrubbed).
    assert!(hay.contains(".claude/projects/fake/session.jsonl"));

    // Changing the reviewer's model reruns only the review team's solves.
    let text = sb
        .read("agents.toml")
        .replace("reviewer=claude@claude-sonnet-5-5", "reviewer=claude@other");
    fs_err::write(sb.path("agents.toml"), text).unwrap();
    let plan = run(&sb, &["plan", "--json", "agents.toml"], &[]);
    let v: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let to_run: Vec<&str> = v["to_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["address"].as_str().unwrap())
        .collect();
    assert!(!to_run.is_empty());
    for a in &to_run {
        assert!(a.contains("/review/") || *a == "report", "{a}");
    }
    let o = run(&sb, &["apply", "agents.toml"], &[]);
    let ran = executed(&o);
    assert_eq!(
        ran.iter().filter(|a| a.starts_with("solve/")).count(),
        2,
        "{ran:?}"
    );
    // Same patches from the new reviewer: no grade reruns.
    assert!(!ran.iter().any(|a| a.starts_with("grade/")), "{ran:?}");
}

#[test]
fn replicates_are_independent_nodes() {
    let sb = Sandbox::quickstart();
    let body = PIPELINE
        .replace("TEAMS", r#"["solo"]"#)
        .replace("limit = 2", "limit = 2\nreplicates = 3")
        + "\n[teams]\nsolo = \"solo:worker=claude@claude-haiku-5-5\"\n";
    manifest(&sb, &body);
    let o = run(&sb, &["apply", "agents.toml"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ran = executed(&o);
    assert_eq!(
        ran.iter().filter(|a| a.starts_with("solve/")).count(),
        6,
        "{ran:?}"
    );
    for rep in 0..3 {
        assert!(ran.iter().any(|a| a.ends_with(&format!("/solo/{rep}"))));
    }
}

/// Issue 49, item 10: a harness's CLI found on PATH in a directory under /tmp (a checkout
/// there) is found inside the local jail too, although the jail's /tmp is otherwise empty: the
/// PATH's directories are shown read-only. (On a machine without bwrap nothing is hidden.)
#[test]
fn a_cli_on_a_path_directory_under_tmp_runs_in_the_jail() {
    let sb = Sandbox::quickstart();
    assert!(
        sb.dir.path().starts_with("/tmp"),
        "{}",
        sb.dir.path().display()
    );
    let bin = sb.path("bin");
    fs_err::create_dir_all(&bin).unwrap();
    let fakes = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakes");
    fs_err::copy(fakes.join("claude"), bin.join("claude")).unwrap();
    let body = PIPELINE
        .replace("TEAMS", r#"["solo"]"#)
        .replace("limit = 2", "limit = 1")
        + "\n[teams]\nsolo = \"solo:worker=claude@claude-haiku-5-5\"\n";
    manifest(&sb, &body);
    let o = std::process::Command::new(bench_bin())
        .args(["apply", "agents.toml"])
        .current_dir(sb.dir.path())
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        )
        .env("ANTHROPIC_API_KEY", SECRET)
        .env("NO_COLOR", "1")
        .env_remove("BENCH_STORE")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("not found"), "{}", stderr(&o));
    for p in patches(&sb, "solo") {
        assert!(p.contains("+written by claude-haiku-5-5"), "{p}");
    }
    assert_eq!(patches(&sb, "solo").len(), 1);
}

/// Runs `apply agents.toml` with `dir` first on PATH.
fn apply_with_path(sb: &Sandbox, dir: &Path) -> std::process::Output {
    std::process::Command::new(bench_bin())
        .args(["apply", "agents.toml"])
        .current_dir(sb.dir.path())
        .env(
            "PATH",
            format!("{}:{}", dir.display(), std::env::var("PATH").unwrap()),
        )
        .env("ANTHROPIC_API_KEY", SECRET)
        .env("NO_COLOR", "1")
        .env_remove("BENCH_STORE")
        .output()
        .unwrap()
}

/// Issue 48: a CLI installed in a prefix under /tmp (a virtualenv made by a script: its `bin`
/// on PATH, what it runs in the prefix's `lib`) runs in the local jail, which shows the prefix
/// holding a PATH's `bin`; one whose `bin` entry links elsewhere under /tmp, which the jail
/// cannot show, is refused before any node runs, naming the program and the fix.
#[test]
fn a_cli_in_a_prefix_under_tmp_runs_and_one_the_jail_cannot_see_is_refused_first() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::quickstart();
    let body = PIPELINE
        .replace("TEAMS", r#"["solo"]"#)
        .replace("limit = 2", "limit = 1")
        + "\n[teams]\nsolo = \"solo:worker=claude@claude-haiku-5-5\"\n";
    manifest(&sb, &body);
    let fakes = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakes");
    // A prefix of its own under /tmp: bin/claude runs ../lib/claude.
    let prefix = tempfile::tempdir_in("/tmp").unwrap();
    let (bin, lib) = (prefix.path().join("bin"), prefix.path().join("lib"));
    fs_err::create_dir_all(&bin).unwrap();
    fs_err::create_dir_all(&lib).unwrap();
    fs_err::copy(fakes.join("claude"), lib.join("claude")).unwrap();
    fs_err::write(
        bin.join("claude"),
        "#!/bin/sh\nexec \"$(dirname \"$0\")/../lib/claude\" \"$@\"\n",
    )
    .unwrap();
    fs_err::set_permissions(bin.join("claude"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = apply_with_path(&sb, &bin);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(patches(&sb, "solo").len(), 1, "{}", stderr(&o));

    // bin/claude a link to a file in another directory under /tmp: not in the jail's view.
    let elsewhere = tempfile::tempdir_in("/tmp").unwrap();
    fs_err::copy(fakes.join("claude"), elsewhere.path().join("claude")).unwrap();
    let sb = Sandbox::quickstart();
    manifest(&sb, &body);
    let linked = tempfile::tempdir_in("/tmp").unwrap();
    let bin = linked.path().join("bin");
    fs_err::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(elsewhere.path().join("claude"), bin.join("claude")).unwrap();
    let o = apply_with_path(&sb, &bin);
    if bench::backend::jail::bwrap().is_none() && !common::ci() {
        return; // no jail here: the host is what agents see.
    }
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = common::flat(&stderr(&o));
    for needle in [
        "harness `claude-code` (run by team `solo`) starts `claude`, found on PATH at".to_string(),
        "but the local sandbox cannot run it there".to_string(),
        "install it outside /tmp (under /opt or ~/.local), or into a prefix whose `bin` is on PATH"
            .to_string(),
        "nothing was run".to_string(),
    ] {
        assert!(err.contains(&needle), "lacks {needle:?}:\n{err}");
    }
    assert!(!sb.path(".bench/actions").exists() || walk_count(&sb.path(".bench/actions")) == 0);
}

#[test]
fn budget_halts_across_applies_and_unknown_cost_halts() {
    let sb = Sandbox::quickstart();
    let body = PIPELINE
        .replace("TEAMS", r#"["solo"]"#)
        .replace("limit = 2", "max_cost_usd = 0.025\nconcurrency = 1")
        + "\n[teams]\nsolo = \"solo:worker=claude@claude-haiku-5-5\"\n";
    manifest(&sb, &body);
    let o = run(&sb, &["apply", "agents.toml"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    // $0.01 per solve: the third reaches the cap ($0.03 >= $0.025); the other five do not run.
    let solves = executed(&o)
        .into_iter()
        .filter(|a| a.starts_with("solve/"))
        .count();
    assert_eq!(solves, 3, "{}", stderr(&o));
    // Budget-skipped solves are not failures: they say so, and apply exits 0.
    let err = stderr(&o);
    assert_eq!(err.matches("not run (budget)  solve/").count(), 5, "{err}");
    assert!(!err.contains("FAILED"), "{err}");
    assert!(err.contains("5 not run (budget)"), "{err}");
    let r = report(&sb);
    assert_eq!(r["not_run"].as_array().unwrap().len(), 5);
    // A second apply (a restart) still halts: spend is read from the store.
    let again = run(&sb, &["apply", "agents.toml"], &[]);
    assert_eq!(
        executed(&again)
            .iter()
            .filter(|a| a.starts_with("solve/"))
            .count(),
        0
    );

    // An unknown cost (a timed-out run that recorded no usage, of a priced model) halts
    // launches unless allow_unpriced.
    let sb2 = Sandbox::quickstart();
    let body = PIPELINE
        .replace("TEAMS", r#"["solo"]"#)
        .replace("limit = 2", "max_cost_usd = 10\nconcurrency = 1")
        .replace(
            "timeout = \"1m\"\n\n[stages.grade]",
            "timeout = \"2s\"\n\n[stages.grade]",
        )
        + "\n[teams]\nsolo = \"solo:worker=slow@gpt-6-luna\"\n\n[harnesses.slow]\nkind = \"command\"\ncommand = \"sleep 60\"\nusage = \"codex-jsonl\"\nenv = [\"CODEX_API_KEY\"]\n";
    manifest(&sb2, &body);
    let o = run(&sb2, &["apply", "agents.toml"], &[]);
    let solves = executed(&o)
        .into_iter()
        .filter(|a| a.starts_with("solve/"))
        .count();
    assert_eq!(solves, 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("unknown cost halt"), "{}", stderr(&o));
    let r: serde_json::Value =
        serde_json::from_str(&sb2.read("reports/agents/report.json")).unwrap();
    assert_eq!(team(&r, "solo")["timed_out"], 1);

    // A budget with an unpriced harness refuses to start.
    let sb3 = Sandbox::quickstart();
    let body = PIPELINE
        .replace("TEAMS", r#"["cx"]"#)
        .replace("limit = 2", "max_cost_usd = 10")
        + "\n[teams]\ncx = \"solo:worker=codex@unpriced-model\"\n";
    manifest(&sb3, &body);
    let o = run(&sb3, &["apply", "agents.toml"], &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("whose cost"), "{}", stderr(&o));
}

#[test]
fn a_harness_that_never_reached_its_model_is_an_error_not_a_result() {
    let sb = Sandbox::quickstart();
    let body = PIPELINE
        .replace("TEAMS", r#"["solo"]"#)
        .replace("limit = 2", "limit = 1")
        + "\n[teams]\nsolo = \"solo:worker=claude@nokey\"\n";
    manifest(&sb, &body);
    let o = run(&sb, &["apply", "agents.toml"], &[]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("never reached its model"),
        "{}",
        stderr(&o)
    );
    // Not cached: the next apply retries it.
    let plan = run(&sb, &["plan", "agents.toml"], &[]);
    assert_eq!(plan.status.code(), Some(2));
    let o = run(&sb, &["apply", "agents.toml"], &[]);
    assert_eq!(o.status.code(), Some(3), "retried, and failed again");
    assert_eq!(executed(&o).len(), 0);
}

#[test]
fn missing_keys_are_named_before_anything_runs() {
    let sb = Sandbox::quickstart();
    let body = PIPELINE.replace("TEAMS", r#"["solo"]"#)
        + "\n[teams]\nsolo = \"solo:worker=claude@claude-haiku-5-5\"\n";
    manifest(&sb, &body);
    let fakes = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakes");
    let o = std::process::Command::new(bench_bin())
        .args(["apply", "agents.toml"])
        .current_dir(sb.dir.path())
        .env(
            "PATH",
            format!("{}:{}", fakes.display(), std::env::var("PATH").unwrap()),
        )
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(
            "missing environment variables needed by the teams' harnesses: ANTHROPIC_API_KEY"
        ),
        "{}",
        stderr(&o)
    );
    assert!(!sb.path(".bench/actions").exists() || walk_count(&sb.path(".bench/actions")) == 0);
}

fn walk_count(dir: &Path) -> usize {
    fs_err::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            if e.path().is_dir() {
                walk_count(&e.path())
            } else {
                1
            }
        })
        .sum()
}

#[test]
fn a_provider_key_the_harness_does_not_pass_is_named_before_anything_runs() {
    let sb = Sandbox::quickstart();
    let body = PIPELINE.replace("TEAMS", r#"["a", "m"]"#)
        + "\n[teams]\na = \"solo:worker=aider@openai/gpt-x\"\nm = \"solo:worker=mini-swe-agent@anthropic/claude-x\"\n\n[pricing.\"openai/gpt-x\"]\ninput = 1\noutput = 1\n";
    manifest(&sb, &body);
    let o = run(&sb, &["apply", "agents.toml"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // miette wraps long lines: compare the words.
    let err = common::flat(&stderr(&o));
    assert!(err.contains("reads its key from OPENAI_API_KEY"), "{err}");
    assert!(
        err.contains("reads its key from ANTHROPIC_API_KEY"),
        "{err}"
    );
    assert!(err.contains("[harnesses.aider] env"), "{err}");
    assert!(!sb.path(".bench/actions").exists() || walk_count(&sb.path(".bench/actions")) == 0);
}

#[test]
fn plan_prices_pending_solves_from_stored_costs_of_the_same_team() {
    let sb = Sandbox::quickstart();
    let body = PIPELINE.replace("TEAMS", r#"["solo"]"#)
        + "\n[teams]\nsolo = \"solo:worker=claude@claude-haiku-5-5\"\nother = \"solo:worker=claude@claude-sonnet-5-5\"\n";
    manifest(&sb, &body);
    let o = run(&sb, &["apply", "agents.toml"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Two more tasks for the same team, and a team with no history.
    let text = sb
        .read("agents.toml")
        .replace("limit = 2", "limit = 4")
        .replace(r#"teams = ["solo"]"#, r#"teams = ["solo", "other"]"#);
    fs_err::write(sb.path("agents.toml"), text).unwrap();
    let plan = run(&sb, &["plan", "agents.toml"], &[]);
    assert_eq!(plan.status.code(), Some(2));
    let out = stdout(&plan);
    assert!(
        out.contains(
            "expected spend: at least $0.0200 for 6 solves (no stored cost of team other)"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "team solo: 2 to run x $0.0100 a task (range $0.0100-$0.0100 over 2 stored solves)"
        ),
        "{out}"
    );
    assert!(
        out.contains("team other: 4 to run, no stored cost"),
        "{out}"
    );
    let json = run(&sb, &["plan", "--json", "agents.toml"], &[]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let solo = v["spend"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["team"] == "solo")
        .unwrap();
    assert_eq!(solo["pending"], 2);
    assert!((solo["expected_usd"].as_f64().unwrap() - 0.02).abs() < 1e-12);
}

/// Issue 30: a harness whose program is not installed is named before anything runs, with the
/// fix, as a missing key is (it used to validate, plan, then fail every solve with exit 127).
#[test]
fn a_missing_agent_program_is_named_before_anything_runs() {
    let sb = Sandbox::quickstart();
    let body = PIPELINE.replace("TEAMS", r#"["solo", "ghost", "nop"]"#)
        + "\n[teams]\nsolo = \"solo:worker=claude@claude-haiku-5-5\"\nghost = \"solo:worker=ghost\"\nnop = \"solo:worker=nop\"\n\n[harnesses.ghost]\nkind = \"command\"\ncommand = \"GHOST_MODE=1 bench-no-such-agent --task \\\"$(cat '{{prompt_file}}')\\\"\"\n";
    manifest(&sb, &body);
    // The fake `claude` is not on this PATH (the system's has no `claude` either).
    let o = bench_env(
        sb.dir.path(),
        &["apply", "agents.toml"],
        &[("ANTHROPIC_API_KEY", SECRET)],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = common::flat(&stderr(&o));
    for needle in [
        "harness `claude-code` (run by team `solo`) starts `claude`, which is not on PATH; install claude-code 2.1.332 so that `claude` is on PATH",
        "or run on `[backend] kind = \"docker\"`, where bench builds it into the agent image",
        "harness `ghost` (run by team `ghost`) starts `bench-no-such-agent`, which is not on PATH; install `bench-no-such-agent`, or set `[harnesses.ghost] command` to a program that exists",
        "nothing was run",
    ] {
        assert!(err.contains(needle), "lacks {needle:?}:\n{err}");
    }
    assert!(!sb.path(".bench/actions").exists() || walk_count(&sb.path(".bench/actions")) == 0);
    // With the programs there, the same manifest runs.
    let bin = sb.path("bin");
    fs_err::create_dir(&bin).unwrap();
    let ghost = bin.join("bench-no-such-agent");
    fs_err::write(&ghost, "#!/bin/sh\nexit 0\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs_err::set_permissions(&ghost, std::fs::Permissions::from_mode(0o755)).unwrap();
    let fakes = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakes");
    let path = format!(
        "{}:{}:{}",
        bin.display(),
        fakes.display(),
        std::env::var("PATH").unwrap()
    );
    let o = run(&sb, &["apply", "agents.toml"], &[("PATH", &path)]);
    assert!(!stderr(&o).contains("not on PATH"), "{}", stderr(&o));
}

/// Issue 48: Codex 0.162 ignores `OPENAI_BASE_URL`; a codex harness that passes it in `env`
/// (the convention of OpenAI's clients) would send its runs to api.openai.com. Apply refuses
/// before any node, naming the harness, the variable and the setting that works; with that
/// setting the same manifest passes preflight.
#[test]
fn a_variable_codex_ignores_is_refused_before_anything_runs() {
    let sb = Sandbox::quickstart();
    let body = PIPELINE.replace("TEAMS", r#"["cx"]"#)
        + "\n[teams]\ncx = \"solo:worker=codex@gpt-6-luna\"\n\n[harnesses.codex]\nenv = [\"CODEX_API_KEY\", \"OPENAI_BASE_URL\"]\n";
    manifest(&sb, &body);
    let url = "http://127.0.0.1:9/v1";
    let o = run(&sb, &["apply", "agents.toml"], &[("OPENAI_BASE_URL", url)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = common::flat(&stderr(&o));
    for needle in [
        "harness `codex` (run by team `cx`) passes OPENAI_BASE_URL in `env`, which codex 0.162.1 ignores (its runs would go to api.openai.com)",
        &format!("set `[harnesses.codex] base_url = \"{url}\"` instead"),
        "nothing was run",
    ] {
        assert!(err.contains(needle), "lacks {needle:?}:\n{err}");
    }
    assert!(!sb.path(".bench/actions").exists() || walk_count(&sb.path(".bench/actions")) == 0);
    // The fix: `base_url`, the variable out of `env`.
    let text = sb.read("agents.toml").replace(
        "env = [\"CODEX_API_KEY\", \"OPENAI_BASE_URL\"]",
        &format!("env = [\"CODEX_API_KEY\"]\nbase_url = \"{url}\""),
    );
    fs_err::write(sb.path("agents.toml"), text).unwrap();
    let o = run(&sb, &["apply", "agents.toml"], &[("OPENAI_BASE_URL", url)]);
    assert!(!stderr(&o).contains("ignores"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("nothing was run"), "{}", stderr(&o));
}
