//! The local backend's sandbox (bubblewrap) and scrubbing, with hostile agents and patches:
//! a patch that dumps every environment it can see at grade time finds none of bench's, nothing
//! secret reaches the store or the reports in any encoding, an agent's `setsid` background
//! process neither delays Ctrl-C nor survives it, and the same after `kill -9` of bench with a
//! relative store; unjailed too, for an escapee that also left the workspace.
//!
//! Under CI (CI=true) a missing or broken bwrap fails these tests.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::{Sandbox, stderr};

fn bwrap_ready() -> bool {
    let ok = Command::new("bwrap")
        .args([
            "--die-with-parent",
            "--unshare-all",
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "true",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").is_err(),
            "bwrap is missing or cannot create namespaces, and CI=true: install bubblewrap"
        );
        eprintln!("skipping: bwrap unavailable");
    }
    ok
}

fn random(tag: &str) -> String {
    let mut b = [0u8; 12];
    fs_err::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
        .expect("urandom");
    format!(
        "{tag}{}",
        b.iter().map(|x| format!("{x:02x}")).collect::<String>()
    )
}

/// One team whose agent leaks what it is given and plants an environment dump in its patch.
fn leaky_manifest(sb: &Sandbox) {
    fs_err::write(
        sb.path("quickstart/agents/leaky.sh"),
        r#"set -u
# The agent itself: what it was passed, raw and encoded, in its output and in its patch.
for v in "$WIDGET_SETTING" "$LEAK_DB_URL"; do
  echo "raw: $v"
  printf '%s' "$v" | base64 -w0; echo
  printf 'x%s' "$v" | base64 -w0; echo
  python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$v"
done
printf '%s\n%s\n' "$WIDGET_SETTING" "$(printf '%s' "$WIDGET_SETTING" | base64 -w0)" > leak.txt
# The patch: at grade time, when the tests import roman, dump every environment in sight.
cat >> roman.py <<'PY'

def _dump():
    import base64, os, sys
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
    seen = []
    for p in pids:
        try:
            with open(f"/proc/{p}/environ", "rb") as f:
                seen.append(f.read())
        except OSError:
            pass
    blob = b"\n".join(seen) + b"\n" + "\n".join(f"{k}={v}" for k, v in os.environ.items()).encode()
    sys.stderr.write(f"ENVDUMP pids={len(pids)}\n")
    sock = any(os.path.exists(p) for p in ("/run/docker.sock", "/var/run/docker.sock"))
    sys.stderr.write(f"DOCKERSOCK={sock}\n")
    sys.stderr.write(blob.decode(errors="replace") + "\n")
    sys.stderr.write(base64.b64encode(blob).decode() + "\n")

_dump()
PY
echo done
"#,
    )
    .unwrap();
    sb.edit(
        "quickstart.toml",
        "teams = [\"oracle\", \"nop\", \"fixer\"]",
        "teams = [\"nop\", \"leaky\"]",
    );
    sb.append(
        "quickstart.toml",
        r#"
[teams.leaky]
topology = "solo"
worker = "leaky"

[harnesses.leaky]
kind = "command"
command = "sh {{script}}"
script = "quickstart/agents/leaky.sh"
env = ["WIDGET_SETTING", "LEAK_DB_URL"]
"#,
    );
    sb.edit(
        "quickstart.toml",
        "seed = 7",
        "seed = 7\ninstance_ids = [\"quickstart__roman-1\"]",
    );
}

#[test]
fn a_patch_dumping_every_environment_at_grade_time_finds_no_secret_and_none_is_stored() {
    if !bwrap_ready() {
        return;
    }
    let sb = Sandbox::quickstart();
    leaky_manifest(&sb);
    let api_key = random("fake-service-key-");
    let passed = random("widget-");
    let db_pw = random("pw");
    let db_url = format!("postgres://app:{db_pw}@db:5432/prod");
    // Named like nothing secret and passed to no agent: only the sandbox keeps it from a patch.
    let unrelated = random("unrelated-config-");
    let out = Command::new(common::bench_bin())
        .args(["apply", "quickstart.toml"])
        .current_dir(sb.dir.path())
        .env_remove("BENCH_STORE")
        .env("NO_COLOR", "1")
        .env("FAKE_SERVICE_API_KEY", &api_key)
        .env("WIDGET_SETTING", &passed)
        .env("LEAK_DB_URL", &db_url)
        .env("UNRELATED_CONFIG", &unrelated)
        .output()
        .expect("bench");
    assert!(out.status.success(), "{}", stderr(&out));
    let mut stored = common::everything(&sb.path(".bench"));
    stored.extend(common::everything(&sb.path("reports")));
    let text = String::from_utf8_lossy(&stored);
    // The dump ran at grade time, inside its own PID namespace (a handful of processes, none of
    // them bench).
    let line = text
        .lines()
        .find(|l| l.starts_with("ENVDUMP pids="))
        .expect("the planted dump ran while grading");
    let pids: usize = line["ENVDUMP pids=".len()..].trim().parse().unwrap();
    assert!(pids < 10, "the grading code saw {pids} processes");
    // The Docker socket (root on the host) is not in the jail.
    assert!(
        text.contains("DOCKERSOCK=False"),
        "the docker socket is visible"
    );
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    for secret in [&api_key, &passed, &db_pw, &unrelated] {
        for form in [secret.clone(), b64(secret)] {
            assert!(!text.contains(&form), "{form} is stored");
        }
    }
    assert!(text.contains("[REDACTED]"), "nothing was scrubbed");
}

fn processes_with(marker: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in fs_err::read_dir("/proc").into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmd) = fs_err::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(marker) && !cmd.contains("bwrap") {
                out.push(format!("{name}: {cmd}"));
            }
        }
    }
    out
}

/// An agent that starts `setsid sleep <marker>` in the background and then waits.
fn lingering_manifest(sb: &Sandbox, secs: &str) {
    fs_err::write(
        sb.path("quickstart/agents/linger.sh"),
        format!("setsid sleep {secs} >/dev/null 2>&1 < /dev/null &\nsleep {secs}\n"),
    )
    .unwrap();
    sb.edit(
        "quickstart.toml",
        "teams = [\"oracle\", \"nop\", \"fixer\"]",
        "teams = [\"nop\", \"linger\"]",
    );
    sb.edit(
        "quickstart.toml",
        "seed = 7",
        "seed = 7\ninstance_ids = [\"quickstart__roman-1\"]",
    );
    sb.edit(
        "quickstart.toml",
        "timeout = \"2m\"\n\n[stages.grade]",
        "timeout = \"20m\"\n\n[stages.grade]",
    );
    sb.append(
        "quickstart.toml",
        r#"
[teams.linger]
topology = "solo"
worker = "linger"

[harnesses.linger]
kind = "command"
command = "sh {{script}}"
script = "quickstart/agents/linger.sh"
"#,
    );
}

fn wait_for(marker: &str, child: &mut std::process::Child) {
    let start = Instant::now();
    while processes_with(marker).is_empty() {
        if let Ok(Some(s)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            panic!("bench exited ({s}) before the agent started:\n{err}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "the agent never started"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn gone_within(marker: &str, limit: Duration) {
    let start = Instant::now();
    loop {
        let left = processes_with(marker);
        if left.is_empty() {
            return;
        }
        assert!(start.elapsed() < limit, "still running: {left:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn ctrl_c_ends_apply_promptly_and_kills_an_agents_setsid_process() {
    if !bwrap_ready() {
        return;
    }
    let sb = Sandbox::quickstart();
    let secs = "3071.5";
    lingering_manifest(&sb, secs);
    let mut child = Command::new(common::bench_bin())
        .args(["apply", "quickstart.toml"])
        .current_dir(sb.dir.path())
        .env_remove("BENCH_STORE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(secs, &mut child);
    let sent = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(30),
            "apply ignored Ctrl-C for 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(!status.success());
    gone_within(secs, Duration::from_secs(10));
}

/// Unjailed (a machine without bwrap): an agent's `setsid` process that also leaves the
/// workspace (`cd /`) is in no process group or directory of bench's, yet Ctrl-C and SIGTERM end
/// apply within 5 s and leave no such process.
#[test]
fn unjailed_ctrl_c_and_sigterm_end_apply_within_5_s_and_kill_a_setsid_escapee() {
    // The second escapee keeps the command's output open (a blocked reader must not hold
    // bench either).
    for (signal, secs, redirect) in [
        (
            nix::sys::signal::Signal::SIGINT,
            "3074.5",
            ">/dev/null 2>&1 < /dev/null",
        ),
        (nix::sys::signal::Signal::SIGTERM, "3075.5", ""),
    ] {
        let sb = Sandbox::quickstart();
        lingering_manifest(&sb, secs);
        fs_err::write(
            sb.path("quickstart/agents/linger.sh"),
            format!("(cd / && setsid sleep {secs} {redirect} &)\nsleep {secs}\n"),
        )
        .unwrap();
        let mut child = Command::new(common::bench_bin())
            .args(["apply", "quickstart.toml"])
            .current_dir(sb.dir.path())
            .env_remove("BENCH_STORE")
            .env("BENCH_NO_BWRAP", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for(secs, &mut child);
        // Both sleeps (the agent's own and the escapee) are running.
        let start = Instant::now();
        while processes_with(secs).len() < 2 {
            assert!(start.elapsed() < Duration::from_secs(20), "no escapee");
            std::thread::sleep(Duration::from_millis(100));
        }
        let sent = Instant::now();
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if sent.elapsed() > Duration::from_secs(5) {
                let _ = child.kill();
                panic!("{signal}: apply still running 5 s after the signal");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(!status.success(), "{signal}");
        gone_within(secs, Duration::from_millis(500));
    }
}

/// Unjailed, kill -9 of bench with an agent's `setsid` process that left the workspace: the
/// next apply's sweep finds it by its tag (not its directory) and kills it.
#[test]
fn unjailed_the_next_apply_kills_a_dead_runs_escapee_outside_its_workspace() {
    let sb = Sandbox::quickstart();
    let secs = "3076.5";
    lingering_manifest(&sb, secs);
    fs_err::write(
        sb.path("quickstart/agents/linger.sh"),
        format!("(cd / && setsid sleep {secs} >/dev/null 2>&1 < /dev/null &)\nsleep {secs}\n"),
    )
    .unwrap();
    let mut child = Command::new(common::bench_bin())
        .args(["apply", "quickstart.toml"])
        .current_dir(sb.dir.path())
        .env_remove("BENCH_STORE")
        .env("BENCH_NO_BWRAP", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(secs, &mut child);
    let start = Instant::now();
    while processes_with(secs).len() < 2 {
        assert!(start.elapsed() < Duration::from_secs(20), "no escapee");
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !processes_with(secs).is_empty(),
        "kill -9 ends nothing unjailed"
    );
    // The dead run's workspaces are removed by hand: the tag still finds the escapee.
    fs_err::remove_dir_all(sb.path(".bench/tmp")).unwrap();
    sb.edit("quickstart.toml", "worker = \"linger\"", "worker = \"nop\"");
    let out = Command::new(common::bench_bin())
        .args(["apply", "quickstart.toml"])
        .current_dir(sb.dir.path())
        .env_remove("BENCH_STORE")
        .env("BENCH_NO_BWRAP", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    gone_within(secs, Duration::from_secs(2));
}

#[test]
fn kill_9_leaves_no_jailed_process_and_the_sweep_works_with_a_relative_store() {
    if !bwrap_ready() {
        return;
    }
    // Jailed: the agent's setsid process dies with bench.
    let sb = Sandbox::quickstart();
    let secs = "3072.5";
    lingering_manifest(&sb, secs);
    let mut child = Command::new(common::bench_bin())
        .args(["--store", "./rel-store", "apply", "quickstart.toml"])
        .current_dir(sb.dir.path())
        .env_remove("BENCH_STORE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(secs, &mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    gone_within(secs, Duration::from_secs(10));

    // Unjailed (no bwrap): the agent's process outlives bench's kill -9; the next apply's sweep
    // kills it although the store was given as a relative path.
    let sb = Sandbox::quickstart();
    let secs = "3073.5";
    lingering_manifest(&sb, secs);
    fs_err::write(
        sb.path("quickstart/agents/linger.sh"),
        format!("sleep {secs}\n"),
    )
    .unwrap();
    let mut child = Command::new(common::bench_bin())
        .args(["--store", "./rel-store", "apply", "quickstart.toml"])
        .current_dir(sb.dir.path())
        .env_remove("BENCH_STORE")
        .env("BENCH_NO_BWRAP", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(secs, &mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !processes_with(secs).is_empty(),
        "without a jail the agent should outlive kill -9 (the sweep has nothing to prove)"
    );
    sb.edit("quickstart.toml", "worker = \"linger\"", "worker = \"nop\"");
    let out = Command::new(common::bench_bin())
        .args(["--store", "./rel-store", "apply", "quickstart.toml"])
        .current_dir(sb.dir.path())
        .env_remove("BENCH_STORE")
        .env("BENCH_NO_BWRAP", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    gone_within(secs, Duration::from_secs(10));
}

/// The agent's environment on the local backend is exactly the README's list (plus what its
/// shell itself sets): none of bench's own variables, credential-named or not, leak in.
#[test]
fn a_local_agent_sees_exactly_the_documented_environment() {
    let sb = Sandbox::quickstart();
    fs_err::write(
        sb.path("quickstart/agents/envnames.sh"),
        "export -p | sed -n 's/^export \\([A-Za-z_][A-Za-z0-9_]*\\).*/\\1/p' | sort > envnames.txt\n",
    )
    .unwrap();
    sb.edit(
        "quickstart.toml",
        "teams = [\"oracle\", \"nop\", \"fixer\"]",
        "teams = [\"nop\", \"envnames\"]",
    );
    sb.edit(
        "quickstart.toml",
        "seed = 7",
        "seed = 7\ninstance_ids = [\"quickstart__roman-1\"]",
    );
    sb.append(
        "quickstart.toml",
        r#"
[teams.envnames]
topology = "solo"
worker = "envnames"

[harnesses.envnames]
kind = "command"
command = "sh {{script}}"
script = "quickstart/agents/envnames.sh"
env = ["WIDGET_SETTING"]
"#,
    );
    let out = Command::new(common::bench_bin())
        .args(["apply", "quickstart.toml"])
        .current_dir(sb.dir.path())
        .env_remove("BENCH_STORE")
        .env("WIDGET_SETTING", "w")
        .env("SOME_HOST_VARIABLE", "h")
        .env("OPENAI_API_KEY", "sk-not-passed-0123456789")
        .output()
        .expect("bench");
    assert!(out.status.success(), "{}", stderr(&out));
    let patches = common::stored_patches(&sb.path(".bench"), &sb.manifest(), "envnames");
    let patch = patches.first().expect("a stored patch");
    let mut names: Vec<&str> = patch
        .lines()
        .filter_map(|l| l.strip_prefix('+'))
        .filter(|l| !l.starts_with("++"))
        .filter(|n| !matches!(*n, "PWD" | "OLDPWD" | "SHLVL" | "_"))
        .collect();
    names.sort_unstable();
    let mut expected = vec![
        "BENCH_PROBLEM_FILE",
        "BENCH_PROBLEM_STATEMENT",
        "BENCH_PROMPT",
        "BENCH_SANDBOX",
        "BENCH_SIDE_DIR",
        "BENCH_WORKDIR",
        "GIT_AUTHOR_DATE",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_NAME",
        "GIT_COMMITTER_DATE",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_NOSYSTEM",
        "HOME",
        "IS_SANDBOX",
        "LANG",
        "PATH",
        "TMPDIR",
        "WIDGET_SETTING",
    ];
    expected.sort_unstable();
    assert_eq!(names, expected, "{patch}");
}

/// A local sandbox over a one-file base, whose jail's server is this build's `bench`.
async fn jailed_sandbox(dir: &std::path::Path) -> bench::backend::LocalSandbox {
    let base = dir.join("base");
    fs_err::create_dir_all(&base).unwrap();
    fs_err::write(base.join("file.txt"), "base\n").unwrap();
    let tmp = dir.join("tmp");
    fs_err::create_dir_all(&tmp).unwrap();
    // Its jails start from a prepared root, as the local backend's do.
    bench::backend::prepare_jail_root(&bench::backend::jail::absolute(&tmp));
    let cancel = tokio_util::sync::CancellationToken::new();
    bench::backend::LocalSandbox::create(&tmp, &base, &[], &bench::backend::Network::None, &cancel)
        .await
        .unwrap()
        .with_server(env!("CARGO_BIN_EXE_bench").into())
}

/// Runs `script` in `s` with `env` and a limit: exit code, output, whether the limit struck.
async fn run_in(
    s: &bench::backend::LocalSandbox,
    script: &str,
    env: &[(String, String)],
    limit: Duration,
) -> (Option<i32>, String, bool) {
    use bench::backend::Sandbox as _;
    let cancel = tokio_util::sync::CancellationToken::new();
    let r = s.exec(script, env, limit, &cancel).await.unwrap();
    (
        r.exit_code,
        String::from_utf8_lossy(&r.output).into_owned(),
        r.timed_out,
    )
}

/// The PID namespace a command runs in.
const PIDNS: &str = "readlink /proc/self/ns/pid";

#[tokio::test]
async fn a_sandbox_s_commands_share_one_jail_and_nothing_a_command_starts_outlives_it() {
    if !bwrap_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = jailed_sandbox(dir.path()).await;
    let marker = random("outlive");
    let limit = Duration::from_secs(60);
    // A daemon that leaves the group and the session and clears its environment (no tag).
    let (code, first, _) = run_in(
        &s,
        &format!(
            "{PIDNS}; setsid env -i sh -c 'while :; do sleep 0.05; done # {marker}' >/dev/null 2>&1 </dev/null & echo started"
        ),
        &[],
        limit,
    )
    .await;
    assert_eq!(code, Some(0), "{first}");
    assert!(first.ends_with("started\n"), "{first}");
    assert!(
        processes_with(&marker).is_empty(),
        "the daemon outlived its command: {:?}",
        processes_with(&marker)
    );
    let (code, second, _) = run_in(
        &s,
        // `[o]` so that neither grep nor this script matches itself.
        &format!(
            "{PIDNS}; grep -l '[{}]{}' /proc/[0-9]*/cmdline 2>/dev/null; echo done",
            &marker[..1],
            &marker[1..]
        ),
        &[],
        limit,
    )
    .await;
    assert_eq!(code, Some(0), "{second}");
    let ns = |out: &str| out.lines().next().unwrap_or_default().to_string();
    assert_eq!(ns(&first), ns(&second), "two jails: {first} / {second}");
    let host = fs_err::read_link("/proc/self/ns/pid").unwrap();
    assert_ne!(ns(&first), host.display().to_string(), "not jailed");
    assert!(
        second.ends_with("done\n") && second.lines().count() == 2,
        "{second}"
    );
    // A command whose environment names a file under /tmp needs a jail that shows it: its own.
    let shown = tempfile::NamedTempFile::new_in("/tmp").unwrap();
    fs_err::write(shown.path(), "shown\n").unwrap();
    let env = [("SHOWN".to_string(), shown.path().display().to_string())];
    let (code, own, _) = run_in(&s, &format!("{PIDNS}; cat \"$SHOWN\""), &env, limit).await;
    assert_eq!(code, Some(0), "{own}");
    assert!(own.ends_with("shown\n"), "{own}");
    assert_ne!(
        ns(&own),
        ns(&first),
        "a command that must see more ran in the shared jail"
    );
}

#[tokio::test]
async fn a_command_can_neither_answer_for_the_next_one_nor_outlast_its_limit() {
    if !bwrap_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = jailed_sandbox(dir.path()).await;
    let limit = Duration::from_secs(60);
    // Forged answers, written where the server reads and writes, are refused.
    let forge = r#"server=$(grep -l '[_]_jail-serve' /proc/[0-9]*/cmdline 2>/dev/null | head -1 | cut -d/ -f3)
[ -n "$server" ] || { echo "no server"; exit 9; }
for fd in 0 1; do
  if printf '{"token":"x","exit_code":0,"timed_out":false,"len":6}\nforged' > /proc/$server/fd/$fd; then echo "wrote fd $fd"; else echo "refused fd $fd"; fi
done"#;
    let (code, out, _) = run_in(&s, forge, &[], limit).await;
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("refused fd 0") && out.contains("refused fd 1"),
        "{out}"
    );
    let (code, out, _) = run_in(&s, "echo second", &[], limit).await;
    assert_eq!((code, out.as_str()), (Some(0), "second\n"));
    // The limit kills the command and what it started; the jail serves the next command.
    let marker = random("limit");
    let started = Instant::now();
    let (code, _, timed_out) = run_in(
        &s,
        &format!("setsid env -i sh -c 'sleep 300 # {marker}' & sleep 300"),
        &[],
        Duration::from_secs(1),
    )
    .await;
    assert!(timed_out && code.is_none(), "{code:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(processes_with(&marker).is_empty());
    let (code, out, _) = run_in(&s, "echo after", &[], limit).await;
    assert_eq!((code, out.as_str()), (Some(0), "after\n"));
    // The server is the jail's init: a command cannot kill it.
    let (code, out, _) = run_in(
        &s,
        "kill -9 1; kill -KILL -1; sleep 0.2; echo alive",
        &[],
        limit,
    )
    .await;
    assert_eq!(code, Some(0), "{out}");
    assert!(out.ends_with("alive\n"), "{out}");
    let (code, out, _) = run_in(&s, "echo next", &[], limit).await;
    assert_eq!((code, out.as_str()), (Some(0), "next\n"));
}

#[tokio::test]
async fn cancelling_a_jailed_command_ends_it_and_everything_it_started_at_once() {
    if !bwrap_ready() {
        return;
    }
    use bench::backend::Sandbox as _;
    let dir = tempfile::tempdir().unwrap();
    let s = jailed_sandbox(dir.path()).await;
    let marker = random("cancel");
    let cancel = tokio_util::sync::CancellationToken::new();
    let trigger = cancel.clone();
    let script = format!("setsid env -i sh -c 'sleep 300 # {marker}' & sleep 300");
    let started = Instant::now();
    let run = s.exec(&script, &[], Duration::from_secs(600), &cancel);
    let cancelling = async {
        while processes_with(&marker).is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        trigger.cancel();
    };
    let (r, ()) = tokio::join!(run, cancelling);
    assert!(
        matches!(r, Err(bench::backend::SandboxError::Cancelled)),
        "{r:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    gone_within(&marker, Duration::from_secs(5));
}

#[tokio::test]
async fn a_jailed_command_run_as_root_can_neither_remount_the_host_writable_nor_unhide_the_store() {
    if !bwrap_ready() {
        return;
    }
    // Under the target directory: shown read-only inside (the jail's /tmp is its own).
    let host = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let hidden = host.path().join("store");
    fs_err::create_dir_all(&hidden).unwrap();
    fs_err::write(hidden.join("secret"), "secret\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    fs_err::create_dir_all(&base).unwrap();
    fs_err::write(base.join("file.txt"), "base\n").unwrap();
    // Its jails start from a prepared root, as the local backend's do.
    bench::backend::prepare_jail_root(&bench::backend::jail::absolute(dir.path()));
    let cancel = tokio_util::sync::CancellationToken::new();
    let s = bench::backend::LocalSandbox::create(
        dir.path(),
        &base,
        std::slice::from_ref(&hidden),
        &bench::backend::Network::None,
        &cancel,
    )
    .await
    .unwrap()
    .with_server(env!("CARGO_BIN_EXE_bench").into());
    let h = host.path().display();
    let store = hidden.display();
    let script = format!(
        "grep CapEff /proc/self/status
mount -o remount,rw,bind {h} 2>/dev/null && touch {h}/escaped 2>/dev/null
umount {store} 2>/dev/null; cat {store}/secret 2>/dev/null
mount -t tmpfs none {h} 2>/dev/null && echo mounted
echo end"
    );
    // Both ways a command runs: in the sandbox's jail, and in a jail of its own.
    let shown = tempfile::NamedTempFile::new_in("/tmp").unwrap();
    let own = [("SHOWN".to_string(), shown.path().display().to_string())];
    for env in [&[][..], &own[..]] {
        let (code, out, _) = run_in(&s, &script, env, Duration::from_secs(60)).await;
        assert_eq!(code, Some(0), "{out}");
        assert_eq!(out, "CapEff:\t0000000000000000\nend\n");
        assert!(!host.path().join("escaped").exists());
    }
}

/// What a jail shows of the host, printed by a command inside it (paths given by env).
const VIEW_SCRIPT: &str = r#"echo "id: $(id -u):$(id -g)"
grep CapEff /proc/self/status
echo "root: $(ls -A / | tr '\n' ' ')"
echo "var: $(ls -A /var | tr '\n' ' ')"
echo "var/lib: $(ls -A /var/lib | tr '\n' ' ')"
echo "run: $(ls -A /run | tr '\n' ' ')"
echo "tmp: $(ls -A /tmp | tr '\n' ' ')"
echo "var/tmp: $(ls -A /var/tmp | tr '\n' ' ')"
touch /var/tmp/x 2>/dev/null && echo "var/tmp writable"
touch /tmp/x && rm /tmp/x && echo "tmp writable"
cat "$SHOWN" >/dev/null && echo "shown file read"
cat "$STORE/secret" 2>/dev/null || echo "store hidden"
touch ./w && echo "own directory writable"
touch "$HOST/escaped" 2>/dev/null || echo "host read-only"
echo "pid 1: $(cat /proc/1/comm)"
set -- /proc/[0-9]*; echo "processes: $#"
echo "host: $(hostname)"
ls /var/lib/docker >/dev/null 2>&1 && echo "docker state shown"
test -e /run/docker.sock && echo "docker socket shown"
echo end"#;

/// Issue 50, the prepared read-only root: a jail started inside the prepared root of a store's
/// workspace directory sees exactly what a jail started from the host's tree sees (the host
/// read-only, `/tmp` empty and writable, `/var/tmp` empty and read-only, no container runtime
/// state, the store hidden, its own directory writable, no capability), and a local sandbox's
/// jails do start there (under CI, where the kernel allows it, they must).
#[test]
fn a_jail_from_the_prepared_root_sees_what_a_jail_from_the_host_sees() {
    if !bwrap_ready() {
        return;
    }
    let host = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let host_path = bench::backend::jail::absolute(host.path());
    let store = host_path.join("store");
    let tmp = store.join("tmp");
    fs_err::create_dir_all(&tmp).unwrap();
    fs_err::write(store.join("secret"), "secret\n").unwrap();
    // As the local backend does for the store's workspaces.
    bench::backend::prepare_jail_root(&tmp);
    let shown = tempfile::NamedTempFile::new_in("/tmp").unwrap();
    let jail = |writable: std::path::PathBuf| {
        fs_err::create_dir_all(&writable).unwrap();
        bench::backend::jail::Jail {
            writable,
            hidden: vec![store.clone()],
            network: false,
            visible: vec![shown.path().to_path_buf()],
        }
    };
    let prepared = jail(tmp.join("ws-view"));
    let from_host = jail(host_path.join("elsewhere").join("ws-view"));
    let env = [
        ("SHOWN", shown.path().display().to_string()),
        ("STORE", store.display().to_string()),
        ("HOST", host_path.display().to_string()),
        ("PATH", "/usr/bin:/bin".to_string()),
    ];
    let mut outputs = Vec::new();
    for j in [&prepared, &from_host] {
        let (program, args) = j.command(&j.writable, VIEW_SCRIPT).unwrap();
        outputs.push((program.clone(), run_jailed(&program, &args, &env)));
    }
    let (nested, out) = &outputs[0];
    let (direct, host_out) = &outputs[1];
    assert_eq!(direct.file_name().unwrap(), "bwrap");
    if nested.file_name().unwrap() != "nsenter" {
        assert!(
            std::env::var("CI").is_err(),
            "under CI the prepared root must be made (nested user namespaces, a fully visible /proc)"
        );
    }
    assert_eq!(out, host_out, "the views differ");
    for line in [
        "CapEff:\t0000000000000000\n",
        "var/tmp: \n",
        "tmp writable\n",
        "shown file read\n",
        "store hidden\n",
        "own directory writable\n",
        "host read-only\n",
        "pid 1: bwrap\n",
        // Its own processes only: bwrap's init and the shell.
        "processes: 2\n",
    ] {
        assert!(out.contains(line), "{line:?} missing in:\n{out}");
    }
    for line in [
        "var/tmp writable",
        "docker state shown",
        "docker socket shown",
    ] {
        assert!(!out.contains(line), "{line:?} in:\n{out}");
    }
    assert!(out.ends_with("end\n"), "{out}");
}

/// Runs a jail's program and arguments with exactly `env`: its stdout and stderr.
fn run_jailed(program: &std::path::Path, args: &[String], env: &[(&str, String)]) -> String {
    let out = std::process::Command::new(program)
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{program:?} failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Issue 50, a task's base repository made once: every workspace of a task is a copy of one
/// base repository that passed the history check when it was made, so a workspace no command
/// has touched is not checked again; one that a command ran in or a file was written to is
/// checked as any other (and fails when it must). No jailed command can reach that base (it is
/// in the hidden store) to plant anything for the task's later workspaces, and the base goes
/// with the backend.
#[tokio::test]
async fn a_task_s_workspaces_are_copies_of_one_checked_base_no_command_can_reach() {
    use bench::backend::{Backend as _, Sandbox as _, repo};
    if !bwrap_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let tmp = store.join("tmp");
    fs_err::create_dir_all(&tmp).unwrap();
    let base = dir.path().join("dataset/base");
    fs_err::create_dir_all(base.join("src")).unwrap();
    fs_err::write(base.join("src/file.txt"), "base\n").unwrap();
    // A base tree holding a repository of its own, with a commit beyond the base: not copied.
    let leak = Command::new("sh")
        .arg("-c")
        .arg("git init -q && git -c user.name=x -c user.email=x@x commit -q --allow-empty -m fix")
        .current_dir(&base)
        .status()
        .unwrap();
    assert!(leak.success());
    bench::backend::prepare_jail_root(&bench::backend::jail::absolute(&tmp));
    let backend = bench::backend::LocalBackend::new(
        tmp.clone(),
        vec![store.clone(), dir.path().join("dataset")],
    );
    let task = bench::tasks::TaskBase::Dir {
        path: base.clone(),
        digest: "0".repeat(64),
    };
    let spec = bench::backend::SandboxSpec {
        base: &task,
        phase: bench::backend::Phase::Agent,
        network: bench::backend::Network::None,
        image: None,
        address: "solve/t",
        key: "k",
        repo_dir: None,
        hardening: None,
        stripped: None,
        before_strip: None,
        task_env: None,
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    // The commit the uncached path makes of the same tree.
    let own = tempfile::tempdir().unwrap();
    let made = bench::backend::LocalSandbox::create(
        own.path(),
        &base,
        &[],
        &bench::backend::Network::None,
        &cancel,
    )
    .await
    .unwrap();
    let want = made.stripped_to().unwrap().to_string();
    let first = backend.create(&spec, &cancel).await.unwrap();
    assert_eq!(first.stripped_to(), Some(want.as_str()));
    let (head, report) = repo::clean(first.as_ref(), None, "workspace", &cancel)
        .await
        .unwrap();
    assert_eq!(
        (head.as_str(), report.as_str()),
        (want.as_str(), "history check passed")
    );
    // Not checked in the workspace itself: the check leaves its lists in `BENCH_STATE`.
    let state = std::path::Path::new(&first.paths().state);
    assert!(!state.join("all").exists());
    let bases: Vec<_> = fs_err::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("bases-")
        })
        .collect();
    assert_eq!(bases.len(), 1, "{bases:?}");
    let made_base = fs_err::read_dir(&bases[0])
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let base_repo = made_base.join("repo");
    assert_eq!(
        fs_err::read_to_string(base_repo.join("src/file.txt")).unwrap(),
        "base\n"
    );
    // An agent tries to plant a change and a ref in the base for the task's later workspaces,
    // and leaves a tag in its own.
    let r = first
        .exec(
            &format!(
                "echo solved > {b}/src/file.txt; git -C {b} tag planted; ls {b}; git tag leak; git log --all --oneline | wc -l",
                b = base_repo.display()
            ),
            &[],
            Duration::from_secs(60),
            &cancel,
        )
        .await
        .unwrap();
    let out = String::from_utf8_lossy(&r.output);
    assert!(
        out.trim_end().ends_with('1'),
        "one commit in the workspace: {out}"
    );
    assert_eq!(
        fs_err::read_to_string(base_repo.join("src/file.txt")).unwrap(),
        "base\n",
        "{out}"
    );
    // Touched: checked again, and refused.
    let refused = repo::clean(first.as_ref(), None, "workspace", &cancel)
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("refs/tags/leak"), "{refused}");
    // The next workspace is the base, unchecked again; one written to is checked.
    let second = backend.create(&spec, &cancel).await.unwrap();
    let r = second
        .exec(
            "cat src/file.txt; git tag",
            &[],
            Duration::from_secs(60),
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&r.output), "base\n");
    let third = backend.create(&spec, &cancel).await.unwrap();
    assert!(third.checked_at_start().is_some());
    let file = format!("{}/src/new.txt", third.paths().repo);
    third
        .put_files(&[(file.as_str(), b"x\n", 0o644)])
        .await
        .unwrap();
    assert!(third.checked_at_start().is_none());
    let (_, report) = repo::clean(third.as_ref(), None, "workspace", &cancel)
        .await
        .unwrap();
    assert_eq!(report, "history check passed");
    assert!(
        std::path::Path::new(&third.paths().state)
            .join("all")
            .exists()
    );
    // Still one base for the three workspaces; gone with the backend's work.
    assert_eq!(fs_err::read_dir(&bases[0]).unwrap().count(), 1);
    backend.finish().await;
    assert!(!bases[0].exists());
}
