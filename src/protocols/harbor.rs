//! Harbor's verification contract (harbor `verifier.py`, Terminal-Bench 2 / Frontier-SWE), over
//! the [`Sandbox`] trait, with bench owning what the verifier reads:
//!
//! 1. every process in the sandbox ended, from outside it ([`Sandbox::end_processes`]: docker
//!    restarts the container, so its whole PID namespace dies); an agent's background process
//!    does not outlive its run (Harbor leaves it running);
//! 2. `/logs/verifier` and `/tests` emptied and recreated, `tests/` uploaded fresh to `/tests`,
//!    and both checked through the file API: `/logs/verifier` empty, `/tests` exactly `tests/`
//!    (Harbor merges `tests/` into whatever is there and never empties `/logs/verifier`, so an
//!    agent's own `reward.txt` or `/tests/test.sh` would count);
//! 3. `chmod +x /tests/test.sh`, then `/tests/test.sh > /logs/verifier/test-stdout.txt 2>&1` in
//!    the task's workdir with `verifier.env`, for `verifier.timeout_sec`; its exit code is
//!    recorded and otherwise ignored;
//! 4. `/logs/verifier` read back: `reward.txt` is `{"reward": float}` (an empty file is an
//!    error), else `reward.json`, an object whose top-level numbers (booleans excluded) are the
//!    reward's fields (the whole document is kept for scorers such as Frontier-SWE's); neither
//!    is an error (`RewardFileNotFoundError`), never a zero. A verifier past its timeout is an
//!    outcome: no reward, `timed_out`. Since step 2 proved the directory empty with nothing
//!    else running, a reward written before the verifier started never counts.
//!
//! Where it runs is the grade stage's choice (`[stages.grade] harbor`): `in-place` (default,
//! Harbor's contract) in the agent's own container right after its run, recorded by the solve
//! (its trial) and read by the grade; `fresh`, in a new container of the task image with the
//! agent's end state restored from the solve's snapshot (the paths `docker diff` lists, taken
//! after its processes ended and before `/tests` existed). Steps 1 and 2 run in both. What
//! neither mode stops: test.sh runs in the agent's end state, so an agent that replaces a
//! program test.sh runs (its interpreter, a library it imports) still runs code during
//! verification, as in Harbor.
//!
//! bench's network policy: the agent gets its task's policy (`public`: the default bridge,
//! `no-network`: none; `allowlist`: only `allowed_hosts`, through bench's egress proxy);
//! verification has no network (the container is cut off first, in place). A task whose
//! verifier explicitly asks for the network (`[verifier] network_mode = "public"` or
//! `allowed_hosts`) is refused before anything runs, and a verifier whose output shows name
//! resolution or connection failures is an error, not a zero: a task that needs the network
//! fails visibly.
//!
//! Not here: the agents themselves (`stages/solve.rs` runs them), statistics of rewards
//! (`report/`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::GradeError;
use crate::backend::{Sandbox, SandboxError, TaskEnv, shell_quote};
use crate::jobs::{
    BackendFacts, GradeJob, GradeOutput, GradingTask, HarborTrial, HarborTrialJob, PatchInput,
    ProtocolId,
};
use crate::tasks::{HarborSpec, NetworkPolicy, Task};
use crate::types::{AuditMode, HarborVerifier};

pub const VERSION: u32 = 2;

/// Paths a snapshot leaves out: the verifier's own, bench's state, the kernel's.
pub const SNAPSHOT_EXCLUDE: [&str; 6] = [
    "/tests",
    "/logs/verifier",
    "/tmp/bench",
    "/proc",
    "/sys",
    "/dev",
];

/// How much of `/logs/verifier` is read back.
const VERIFIER_LOGS_CAP: usize = 32 << 20;

/// What a verifier run left: recorded by the solve (in place) or the grade (fresh), read by
/// [`reward_of`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifierRun {
    /// `in-place`, `fresh`, `oracle` or `nop`.
    pub mode: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// Whether the verifier had a network.
    pub network: bool,
    /// `/logs/verifier/reward.txt`, `reward.json` as written (`None`: absent).
    pub reward_txt: Option<String>,
    pub reward_json: Option<String>,
    /// `/logs/verifier/test-stdout.txt` (test.sh's output).
    pub stdout: String,
    /// Why the verifier could not run in this sandbox (its reset failed: the agent's end state
    /// defeated it), recorded by an in-place trial so a `fresh` grade still runs from the
    /// snapshot; an in-place grade of such a run is an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a solve of `task` reads to run it as a Harbor trial (the agent in the task's own
/// environment, then its snapshot and the verifier): this protocol's version and the task's
/// grading view. `None` for a task that is not a Harbor task.
pub fn trial_job(task: &Arc<Task>) -> Option<HarborTrialJob> {
    task.harbor.as_ref().map(|_| HarborTrialJob {
        protocol: VERSION,
        task: GradingTask::new(task),
    })
}

/// The grade job of a Harbor trial's result under `mode`: in place, the trial's verifier
/// record; fresh, its snapshot of the agent's end state. The verifier runs in the trial's own
/// environment (`stages/harbor.rs`), not in a grading sandbox, so the job carries neither a
/// grading sandbox's hardening nor its network; the patch audit only flags.
pub fn trial_grade(
    backend: BackendFacts,
    task: &Arc<Task>,
    trial: &HarborTrial,
    mode: HarborVerifier,
    timeout: Duration,
) -> GradeJob {
    let record = match mode {
        HarborVerifier::InPlace => trial.verification.clone(),
        HarborVerifier::Fresh => trial.snapshot.clone(),
    };
    let mut job = GradeJob::new(
        ProtocolId::Harbor,
        backend,
        GradingTask::new(task),
        PatchInput::Stored(record),
        timeout,
        AuditMode::Flag,
    );
    job.harbor = Some(mode);
    job
}

/// The resources a sandbox of `spec` gets, and for a `phase` where something runs before the
/// verifier (an agent, the oracle) the task's services beside it. A verifier alone gets no
/// services (it runs without network) unless it reaches them ([`verifier_reaches_services`]).
pub fn task_env(spec: &HarborSpec, phase: crate::backend::Phase) -> TaskEnv {
    let e = &spec.config.environment;
    TaskEnv {
        cpus: e.cpus.max(1) as f64,
        memory_bytes: (e.memory_mb.max(1) as u64) << 20,
        storage_bytes: (e.storage_mb.max(0) as u64) << 20,
        gpus: e.gpus.max(0) as u32,
        services: if phase == crate::backend::Phase::Agent || verifier_reaches_services(spec) {
            spec.services.clone()
        } else {
            Vec::new()
        },
    }
}

/// Cuts a sandbox of `spec` (started on `network`) off before its verifier runs: every
/// network, or, when the verifier reaches the task's services, all but theirs. Returns whether
/// the verifier keeps a network.
pub async fn cut_for_verifier(
    s: &dyn Sandbox,
    spec: &HarborSpec,
    network: &crate::backend::Network,
) -> Result<bool, SandboxError> {
    let own = *network != crate::backend::Network::None;
    if verifier_reaches_services(spec) {
        if own {
            s.set_policy_network(false).await?;
        }
        Ok(true)
    } else {
        if own || !spec.services.is_empty() {
            s.set_network(false).await?;
        }
        Ok(false)
    }
}

/// The agent's network under the task's policy: `public` the default bridge, `no-network`
/// none, `allowlist` only its `allowed_hosts` through bench's egress proxy (a host without a
/// port allows ports 443 and 80), or why the task cannot run.
pub fn agent_network(id: &str, spec: &HarborSpec) -> Result<crate::backend::Network, GradeError> {
    use crate::backend::Network;
    use crate::backend::egress::Endpoint;
    match spec.config.agent_network() {
        NetworkPolicy::Public => Ok(Network::Open),
        NetworkPolicy::NoNetwork => Ok(Network::None),
        NetworkPolicy::Allowlist { hosts } => {
            let mut allow = Vec::new();
            for h in hosts {
                let parsed = if h.contains(':') && !h.starts_with('[') {
                    Endpoint::parse(h).map(|e| vec![e])
                } else {
                    [443, 80]
                        .iter()
                        .map(|p| Endpoint::parse(&format!("{h}:{p}")))
                        .collect()
                };
                allow.extend(parsed.map_err(|e| {
                    GradeError::Task(format!("task {id}: allowed_hosts entry `{h}`: {e}"))
                })?);
            }
            allow.sort();
            allow.dedup();
            Ok(Network::Allowlist(allow))
        }
    }
}

/// Whether the task opts its verifier into its services' network: `[verifier] allowed_hosts`
/// naming only services of its compose file (a test.sh that checks a service's state). The
/// verifier then reaches those services, still nothing else.
pub fn verifier_reaches_services(spec: &HarborSpec) -> bool {
    match &spec.config.verifier.network {
        Some(NetworkPolicy::Allowlist { hosts }) => {
            !hosts.is_empty()
                && hosts
                    .iter()
                    .all(|h| spec.services.iter().any(|s| &s.name == h))
        }
        _ => false,
    }
}

/// Refuses a task whose verifier explicitly asks for the network: bench verifies with none,
/// except that a task may let its verifier reach its own services.
pub fn check_verifier_network(id: &str, spec: &HarborSpec) -> Result<(), GradeError> {
    if verifier_reaches_services(spec) {
        return Ok(());
    }
    match &spec.config.verifier.network {
        Some(p @ (NetworkPolicy::Public | NetworkPolicy::Allowlist { .. })) => {
            Err(GradeError::Task(format!(
                "task {id}'s verifier needs the network ([verifier] network_mode = {}), which bench's grading policy blocks (verifiers run with no network, so a downloaded checker cannot be swapped in); vendor what test.sh downloads into the environment image{}",
                p.describe(),
                if spec.services.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", or let it reach only the task's services with `[verifier] allowed_hosts = [{}]`",
                        spec.services
                            .iter()
                            .map(|s| format!("\"{}\"", s.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            )))
        }
        _ => Ok(()),
    }
}

/// Refuses a `fresh` grade of a task whose verifier reaches its services: their state, which
/// the agent's trial changed, is in no snapshot.
pub fn check_fresh(id: &str, spec: &HarborSpec) -> Result<(), GradeError> {
    if verifier_reaches_services(spec) {
        return Err(GradeError::Task(format!(
            "task {id}'s verifier reaches its services ([verifier] allowed_hosts), whose state the agent's trial changed and no snapshot holds, so it cannot be verified fresh; grade it in place (`[stages.grade] harbor = \"in-place\"`)"
        )));
    }
    Ok(())
}

/// The files of a tarball (relative path, mode, bytes), directories left implied.
pub fn untar(bytes: &[u8]) -> Result<Vec<(String, u32, Vec<u8>)>, String> {
    let mut out = Vec::new();
    let mut a = tar::Archive::new(bytes);
    for e in a.entries().map_err(|e| e.to_string())? {
        let mut e = e.map_err(|e| e.to_string())?;
        if e.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let path = e
            .path()
            .map_err(|e| e.to_string())?
            .to_string_lossy()
            .into_owned();
        let mode = e.header().mode().unwrap_or(0o644);
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut b).map_err(|e| e.to_string())?;
        out.push((path, mode, b));
    }
    Ok(out)
}

/// Uploads a tarball's files under `dir` (merged into what is there).
pub async fn upload_dir(s: &dyn Sandbox, dir: &str, tarball: &[u8]) -> Result<(), GradeError> {
    let files = untar(tarball).map_err(|e| GradeError::Task(format!("bad task tarball: {e}")))?;
    let paths: Vec<String> = files.iter().map(|(p, _, _)| format!("{dir}/{p}")).collect();
    let put: Vec<(&str, &[u8], u32)> = files
        .iter()
        .zip(&paths)
        .map(|((_, m, b), p)| (p.as_str(), b.as_slice(), *m))
        .collect();
    s.put_files(&put).await?;
    Ok(())
}

/// Runs the oracle: `solution/` uploaded to `/solution`, `bash /solution/solve.sh` in the
/// workdir with `solution.env`. Returns its exit code, output and whether it timed out.
pub async fn run_oracle(
    s: &dyn Sandbox,
    spec: &HarborSpec,
    solution: &[u8],
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<crate::backend::ExecResult, SandboxError> {
    upload_dir(s, "/solution", solution)
        .await
        .map_err(|e| match e {
            GradeError::Sandbox(s) => s,
            GradeError::Task(m) => SandboxError::Failed(m),
        })?;
    let env: Vec<(String, String)> = spec
        .config
        .solution_env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    s.exec(
        &format!(
            "cd {} && bash /solution/solve.sh",
            shell_quote(&spec.workdir)
        ),
        &env,
        timeout,
        cancel,
    )
    .await
}

/// What bench runs before the verifier: `/logs` made a real directory again if the agent
/// replaced it (a link would carry the agent's own `verifier/` in), then `/logs/verifier` and
/// `/tests` removed whatever they hold (files, links, a replaced `test.sh`) and made empty.
const RESET: &str = "if [ -L /logs ] || { [ -e /logs ] && [ ! -d /logs ]; }; then rm -f /logs || exit 1; fi; rm -rf /logs/verifier /tests && mkdir -p /logs/verifier /logs/agent /tests";

/// Harbor's verifier in `s`: bench owns what it reads. Every process in the sandbox is ended
/// first (from outside it: an agent's background writer is gone before anything is reset);
/// `/logs/verifier` and `/tests` are emptied and `tests/` uploaded fresh, both checked through
/// the archive API (so a reward written before this point, or a planted test file, is proven
/// gone, whatever the sandbox's own shell did); then test.sh runs and `/logs/verifier` is read.
/// A reward can then only come from test.sh's own run.
pub async fn verify(
    s: &dyn Sandbox,
    spec: &HarborSpec,
    mode: &str,
    network: bool,
    cancel: &CancellationToken,
) -> Result<VerifierRun, GradeError> {
    let started = Instant::now();
    s.end_processes().await?;
    let r = s.exec(RESET, &[], Duration::from_secs(60), cancel).await?;
    if r.exit_code != Some(0) {
        return Err(GradeError::Task(format!(
            "cannot empty /logs/verifier and /tests before the verifier: {}",
            String::from_utf8_lossy(&r.output).trim()
        )));
    }
    upload_dir(s, "/tests", spec.tests.bytes()).await?;
    check_reset(s, spec.tests.bytes()).await?;
    let env: Vec<(String, String)> = spec
        .config
        .verifier
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let timeout = Duration::from_secs_f64(spec.config.verifier.timeout_sec);
    let run = s
        .exec(
            &format!(
                "cd {} && chmod +x /tests/test.sh && /tests/test.sh > /logs/verifier/test-stdout.txt 2>&1",
                shell_quote(&spec.workdir)
            ),
            &env,
            timeout,
            cancel,
        )
        .await?;
    let files: BTreeMap<String, Vec<u8>> = s
        .get_dir("/logs/verifier", VERIFIER_LOGS_CAP)
        .await?
        .into_iter()
        .collect();
    let text = |name: &str| {
        files
            .get(name)
            .map(|b| String::from_utf8_lossy(b).into_owned())
    };
    Ok(VerifierRun {
        mode: mode.to_string(),
        exit_code: run.exit_code,
        timed_out: run.timed_out,
        duration_ms: started.elapsed().as_millis() as u64,
        network,
        reward_txt: text("reward.txt"),
        reward_json: text("reward.json"),
        stdout: text("test-stdout.txt")
            .unwrap_or_else(|| String::from_utf8_lossy(&run.output).into_owned()),
        error: None,
    })
}

/// Checks, through the sandbox's file API rather than its shell, that `/logs/verifier` holds no
/// file and `/tests` exactly the task's `tests/`.
async fn check_reset(s: &dyn Sandbox, tests: &[u8]) -> Result<(), GradeError> {
    let left = s.get_dir("/logs/verifier", VERIFIER_LOGS_CAP).await?;
    if !left.is_empty() {
        let names: Vec<&str> = left.iter().map(|(n, _)| n.as_str()).collect();
        return Err(GradeError::Task(format!(
            "/logs/verifier still holds {} after bench emptied it, before the verifier ran (the sandbox did not run bench's reset); nothing there may count as a reward",
            names.join(", ")
        )));
    }
    let mut want: Vec<(String, Vec<u8>)> = untar(tests)
        .map_err(|e| GradeError::Task(format!("bad task tarball: {e}")))?
        .into_iter()
        .map(|(p, _, b)| (p.trim_start_matches("./").to_string(), b))
        .collect();
    want.sort();
    // Room for exactly the task's files: anything beyond them shows as a difference anyway.
    let size: usize = want.iter().map(|(_, b)| b.len()).sum();
    let got = s.get_dir("/tests", size + 1).await?;
    if got != want {
        let names = |v: &[(String, Vec<u8>)]| {
            v.iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(GradeError::Task(format!(
            "/tests holds [{}] after bench reset it, not the task's tests/ [{}] (the sandbox did not run bench's reset); the verifier does not run on planted files",
            names(&got),
            names(&want)
        )));
    }
    Ok(())
}

/// Lines of a verifier's output that say it could not reach the network.
fn network_failures(out: &str) -> Vec<&str> {
    const SIGNS: [&str; 7] = [
        "Temporary failure in name resolution",
        "Could not resolve host",
        "Name or service not known",
        "Network is unreachable",
        "No address associated with hostname",
        "getaddrinfo failed",
        "nodename nor servname provided",
    ];
    out.lines()
        .filter(|l| SIGNS.iter().any(|s| l.contains(s)))
        .take(3)
        .collect()
}

/// A reward: its numeric fields and, for `reward.json`, the whole document.
pub type Reward = (BTreeMap<String, f64>, Option<serde_json::Value>);

/// Reads a verifier run's reward: `reward.txt` first, then `reward.json`; neither, an empty
/// reward.txt, or a reward.json that is not an object of numbers is an error naming the file.
pub fn parse_reward(run: &VerifierRun) -> Result<Reward, String> {
    if let Some(t) = &run.reward_txt {
        let t = t.trim();
        if t.is_empty() {
            return Err(
                "/logs/verifier/reward.txt is empty (RewardFileEmptyError): the verifier must write a number"
                    .into(),
            );
        }
        let v: f64 = t.parse().map_err(|_| {
            format!(
                "/logs/verifier/reward.txt holds {:?}, not a number",
                t.chars().take(80).collect::<String>()
            )
        })?;
        if !v.is_finite() {
            return Err(format!(
                "/logs/verifier/reward.txt holds {v}, not a finite number"
            ));
        }
        return Ok((BTreeMap::from([("reward".to_string(), v)]), None));
    }
    if let Some(j) = &run.reward_json {
        let doc: serde_json::Value = serde_json::from_str(j)
            .map_err(|e| format!("/logs/verifier/reward.json is not JSON: {e}"))?;
        let obj = doc.as_object().ok_or_else(|| {
            "/logs/verifier/reward.json is not an object of named numbers".to_string()
        })?;
        let fields: BTreeMap<String, f64> = obj
            .iter()
            .filter_map(|(k, v)| match v {
                serde_json::Value::Number(n) => n.as_f64().map(|f| (k.clone(), f)),
                _ => None,
            })
            .filter(|(_, f)| f.is_finite())
            .collect();
        if fields.is_empty() {
            return Err("/logs/verifier/reward.json has no numeric field".into());
        }
        return Ok((fields, Some(doc)));
    }
    Err(
        "no reward: the verifier wrote neither /logs/verifier/reward.txt nor reward.json (RewardFileNotFoundError); a missing reward is an error, not a zero"
            .into(),
    )
}

/// The grade of a verifier run: the reward (resolved when `reward` is at least 1), or, for a
/// run past its timeout, unresolved with `timed_out`. A missing or unreadable reward, or a
/// network failure of a verifier without a network, is an error.
pub fn grade_of(id: &str, run: &VerifierRun) -> Result<GradeOutput, GradeError> {
    let mut out = GradeOutput {
        patch_applied: true,
        timed_out: run.timed_out,
        test_exit_code: run.exit_code,
        duration_ms: run.duration_ms,
        verifier: Some(run.mode.clone()),
        ..Default::default()
    };
    if let Some(e) = &run.error {
        return Err(GradeError::Task(format!("task {id}: {e}")));
    }
    if run.timed_out {
        return Ok(out);
    }
    if !run.network {
        let lines = network_failures(&run.stdout);
        if !lines.is_empty() {
            return Err(GradeError::Task(format!(
                "task {id}: the verifier ran without a network (bench's grading policy) and its output shows it needed one: {}; vendor what test.sh downloads into the environment image",
                lines.join(" | ")
            )));
        }
    }
    let (fields, doc) =
        parse_reward(run).map_err(|e| GradeError::Task(format!("task {id}: {e}")))?;
    out.resolved = fields.get("reward").is_some_and(|r| *r >= 1.0);
    out.reward = Some(fields);
    out.reward_json = doc;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(txt: Option<&str>, json: Option<&str>) -> VerifierRun {
        VerifierRun {
            mode: "fresh".into(),
            reward_txt: txt.map(String::from),
            reward_json: json.map(String::from),
            ..Default::default()
        }
    }

    #[test]
    fn rewards_as_harbor_reads_them() {
        let g = grade_of("t", &run(Some("1\n"), None)).unwrap();
        assert!(g.resolved);
        assert_eq!(g.reward.unwrap()["reward"], 1.0);
        // reward.txt wins over reward.json.
        let g = grade_of("t", &run(Some("0"), Some("{\"reward\": 1}"))).unwrap();
        assert!(!g.resolved);
        let g = grade_of(
            "t",
            &run(None, Some("{\"reward\": 0.5, \"accuracy\": 0.95, \"ok\": true, \"name\": \"x\", \"sub\": {\"a\": 1}}")),
        )
        .unwrap();
        assert!(!g.resolved);
        let r = g.reward.unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r["accuracy"], 0.95);
        assert_eq!(g.reward_json.unwrap()["sub"]["a"], 1);
        for (txt, json, why) in [
            (Some("  \n"), None, "empty"),
            (Some("high"), None, "not a number"),
            (None, Some("[1]"), "not an object"),
            (None, Some("{\"a\": \"b\"}"), "no numeric field"),
            (None, None, "neither"),
        ] {
            let e = grade_of("t", &run(txt, json)).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
        // A timeout is an outcome without a reward.
        let mut r = run(None, None);
        r.timed_out = true;
        let g = grade_of("t", &r).unwrap();
        assert!(g.timed_out && !g.resolved && g.reward.is_none());
        // A verifier without a network whose output shows it needed one fails visibly.
        let mut r = run(Some("0"), None);
        r.stdout = "curl: (6) Could not resolve host: pypi.org\n".into();
        let e = grade_of("t", &r).unwrap_err().to_string();
        assert!(e.contains("needed one"), "{e}");
        r.network = true;
        assert!(grade_of("t", &r).is_ok());
        // A verifier that could not run is an error, whatever else the record holds.
        let mut r = run(Some("1"), None);
        r.error = Some("/logs/verifier still holds reward.txt".into());
        let e = grade_of("t", &r).unwrap_err().to_string();
        assert!(e.contains("still holds"), "{e}");
    }
}
