//! The Slurm client (`bench::execution::slurm`) against a real cluster on this machine
//! (tests/common/slurm.rs: slurmctld, two one-CPU slurmd `n1` and `n2`, munged): jobs run and
//! write their output, spread over both nodes, fail with their exit code, are cancelled, and
//! meet a node killed under them; sbatch's errors name sbatch and what it refused.
//!
//! Every wait polls the job's state against a generous deadline; no test asserts a duration.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use bench::execution::slurm::{JobExit, JobId, JobState, Slurm, SlurmError, Submit};
use common::slurm::{NODES, SlurmCluster, processes_using, slurm_ready};

/// How long a job may take to reach a state (a node's loss is noticed after `SlurmdTimeout`,
/// 10 s, and a requeued job waits `cred_expire`, 10 s, before it starts again).
const DEADLINE: Duration = Duration::from_secs(180);

fn client(cluster: &SlurmCluster) -> Slurm {
    Slurm::new().with_env(cluster.env())
}

/// A job running `sh -c script`, its output in the cluster's directory as `name.out`.
fn job(cluster: &SlurmCluster, name: &str, script: &str) -> Submit {
    Submit {
        name: name.into(),
        argv: vec!["sh".into(), "-c".into(), script.into()],
        output: cluster.dir().join(format!("{name}.out")),
        ..Submit::default()
    }
}

/// Polls the state of `id` until `done` holds; panics with the last state and the cluster's
/// logs after [`DEADLINE`]. Every state seen along the way, in order, without repeats.
async fn wait_until(
    cluster: &SlurmCluster,
    slurm: &Slurm,
    id: JobId,
    what: &str,
    done: impl Fn(&JobState) -> bool,
) -> Vec<JobState> {
    let deadline = Instant::now() + DEADLINE;
    let mut seen: Vec<JobState> = Vec::new();
    loop {
        let states = slurm.states(&[id]).await.expect("squeue");
        let state = states.get(&id).expect("a state for every id asked").clone();
        if seen.last() != Some(&state) {
            seen.push(state.clone());
        }
        if done(&state) {
            return seen;
        }
        assert!(
            Instant::now() < deadline,
            "job {id}: no {what} after {}s; states seen: {seen:?}\n{}",
            DEADLINE.as_secs(),
            cluster.log_tails()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Polls until squeue lists no job.
async fn wait_for_empty_queue(cluster: &SlurmCluster) {
    let deadline = Instant::now() + DEADLINE;
    while !cluster.squeue_ids().is_empty() {
        assert!(
            Instant::now() < deadline,
            "squeue still lists {:?}",
            cluster.squeue_ids()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The pid a job wrote to `pid_file` (`echo $$ > pid_file`).
async fn job_pid(pid_file: &Path) -> u32 {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let text = fs_err::read_to_string(pid_file).unwrap_or_default();
        if text.ends_with('\n') {
            return text.trim().parse().expect("a pid");
        }
        assert!(Instant::now() < deadline, "the job wrote no pid");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether process `pid` runs (exists and is no zombie).
fn alive(pid: u32) -> bool {
    fs_err::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

fn read(path: &Path) -> String {
    fs_err::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

#[tokio::test]
async fn a_job_runs_writes_its_output_and_completes_on_a_node() {
    if !slurm_ready() {
        return;
    }
    let cluster = SlurmCluster::start();
    let slurm = client(&cluster);
    let mut submit = job(
        &cluster,
        "hello",
        r#"echo "on $SLURMD_NODENAME"; echo "$GREETING"; echo oops >&2"#,
    );
    // Quotes, spaces and `$` reach the job as written.
    submit.env = vec![("GREETING".into(), r#"it's "$HOME" & more"#.into())];
    // 90 s: Slurm counts whole minutes, rounded up.
    submit.time_limit = Some(Duration::from_secs(90));
    let id = slurm.submit(&submit).await.expect("sbatch");
    let limit = cluster
        .command("squeue")
        .args(["--noheader", "--states=all", "--format=%l", "--jobs"])
        .arg(id.to_string())
        .output()
        .expect("squeue");
    assert_eq!(String::from_utf8_lossy(&limit.stdout).trim(), "2:00");
    let seen = wait_until(&cluster, &slurm, id, "completion", JobState::is_finished).await;
    let Some(JobState::Completed { node: Some(node) }) = seen.last() else {
        panic!("states seen: {seen:?}\n{}", cluster.log_tails());
    };
    assert!(NODES.contains(&node.as_str()), "{node}");
    assert_eq!(
        read(&submit.output),
        format!("on {node}\nit's \"$HOME\" & more\noops\n")
    );
    assert!(cluster.squeue_ids().is_empty());
}

/// A shell line that waits until the file `go` exists (a job that runs until the test says).
fn wait_for_go(go: &Path) -> String {
    format!("while [ ! -e {} ]; do sleep 0.2; done", go.display())
}

#[tokio::test]
async fn jobs_spread_over_both_nodes() {
    if !slurm_ready() {
        return;
    }
    let cluster = SlurmCluster::start();
    let slurm = client(&cluster);
    // Each job holds its node's one CPU until the test creates `go`: two start, one on each
    // node, and two wait for a CPU, whatever the machine's speed.
    let go = cluster.dir().join("go");
    let mut ids = Vec::new();
    for n in 0..4 {
        let script = format!("echo $SLURMD_NODENAME; {}", wait_for_go(&go));
        let mut submit = job(&cluster, &format!("spread{n}"), &script);
        submit.cpus = Some(1);
        ids.push(slurm.submit(&submit).await.expect("sbatch"));
    }
    let deadline = Instant::now() + DEADLINE;
    let running = loop {
        let states = slurm.states(&ids).await.expect("states");
        let running: BTreeSet<String> = states
            .values()
            .filter_map(|s| match s {
                JobState::Running { node } => Some(node.clone()),
                _ => None,
            })
            .collect();
        if running.len() == NODES.len() {
            // The other two wait for a CPU.
            let pending = states
                .values()
                .filter(|s| matches!(s, JobState::Pending { .. }))
                .count();
            assert_eq!(pending, 2, "{states:?}");
            break running;
        }
        assert!(
            Instant::now() < deadline,
            "not two jobs running: {states:?}\n{}",
            cluster.log_tails()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(running, BTreeSet::from(NODES.map(String::from)));
    fs_err::write(&go, "").expect("go");
    let mut nodes = BTreeSet::new();
    for (n, id) in ids.iter().enumerate() {
        let seen = wait_until(&cluster, &slurm, *id, "completion", JobState::is_finished).await;
        let Some(JobState::Completed { node: Some(node) }) = seen.last() else {
            panic!("job {id}: {seen:?}");
        };
        // The job ran where squeue says it did.
        let output = cluster.dir().join(format!("spread{n}.out"));
        assert_eq!(read(&output).trim(), node);
        nodes.insert(node.clone());
    }
    assert_eq!(nodes, BTreeSet::from(NODES.map(String::from)));
}

#[tokio::test]
async fn a_failing_job_is_failed_with_its_exit_code() {
    if !slurm_ready() {
        return;
    }
    let cluster = SlurmCluster::start();
    let slurm = client(&cluster);
    let id = slurm
        .submit(&job(&cluster, "fails", "echo trying; exit 3"))
        .await
        .expect("sbatch");
    let seen = wait_until(&cluster, &slurm, id, "its end", JobState::is_finished).await;
    let Some(JobState::Failed { exit, node }) = seen.last() else {
        panic!("states seen: {seen:?}");
    };
    assert_eq!(*exit, JobExit { code: 3, signal: 0 });
    assert!(
        node.as_deref().is_some_and(|n| NODES.contains(&n)),
        "{node:?}"
    );
    assert!(!seen.last().unwrap().is_lost());
}

#[tokio::test]
async fn a_cancelled_running_job_is_cancelled_and_leaves_the_queue() {
    if !slurm_ready() {
        return;
    }
    let cluster = SlurmCluster::start();
    let slurm = client(&cluster);
    let id = slurm
        .submit(&job(&cluster, "long", "sleep 300"))
        .await
        .expect("sbatch");
    wait_until(&cluster, &slurm, id, "a start", |s| {
        matches!(s, JobState::Running { .. })
    })
    .await;
    slurm.cancel(&[id]).await.expect("scancel");
    let seen = wait_until(&cluster, &slurm, id, "its end", JobState::is_finished).await;
    assert_eq!(seen.last(), Some(&JobState::Cancelled), "{seen:?}");
    wait_for_empty_queue(&cluster).await;
    // Cancelling an ended job, or one slurmctld never had, is not an error.
    slurm.cancel(&[id]).await.expect("scancel of an ended job");
    let unknown: JobId = "999999".parse().unwrap();
    slurm
        .cancel(&[unknown])
        .await
        .expect("scancel of an unknown job");
}

/// With `--no-requeue`, a job whose node dies under it ends NODE_FAIL once slurmctld notices
/// (`SlurmdTimeout`): lost, worth submitting again. The node returns when its slurmd does.
#[tokio::test]
async fn a_job_that_may_not_be_requeued_ends_node_fail_when_its_node_dies() {
    if !slurm_ready() {
        return;
    }
    let mut cluster = SlurmCluster::start();
    let slurm = client(&cluster);
    let pid_file = cluster.dir().join("doomed.pid");
    let script = format!("echo $$ > {}; exec sleep 300", pid_file.display());
    let mut submit = job(&cluster, "doomed", &script);
    submit.requeue = Some(false);
    submit.extra = vec!["--nodelist=n1".into()];
    let id = slurm.submit(&submit).await.expect("sbatch");
    wait_until(&cluster, &slurm, id, "a start on n1", |s| {
        *s == JobState::Running { node: "n1".into() }
    })
    .await;
    let pid = job_pid(&pid_file).await;
    cluster.kill_node("n1");
    // The job died with its node, as on a machine that dies.
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(pid) {
        assert!(Instant::now() < deadline, "the job {pid} outlived its node");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let seen = wait_until(&cluster, &slurm, id, "its end", JobState::is_finished).await;
    assert_eq!(seen.last(), Some(&JobState::NodeFail), "{seen:?}");
    assert!(seen.last().unwrap().is_lost());
    assert!(
        cluster.nodes()["n1"].starts_with("down"),
        "{:?}",
        cluster.nodes()
    );
    cluster.restart_node("n1");
    assert_eq!(cluster.nodes()["n1"], "idle");
}

/// By default (`JobRequeue=1`, Slurm's default, and no `--no-requeue`), Slurm requeues a batch
/// job whose node dies: the same job id goes back to pending (reason `BeginTime`, for
/// `cred_expire`), then runs again from the start on the node left, and completes there.
#[tokio::test]
async fn a_job_that_may_be_requeued_runs_again_on_the_other_node_when_its_node_dies() {
    if !slurm_ready() {
        return;
    }
    let mut cluster = SlurmCluster::start();
    let slurm = client(&cluster);
    // The job cannot end before the test creates `go`, after the kill: its first run dies
    // mid-job whatever the machine's speed.
    let go = cluster.dir().join("go");
    let script = format!(
        "echo start $SLURMD_NODENAME; {}; echo done $SLURMD_NODENAME",
        wait_for_go(&go)
    );
    let submit = job(&cluster, "survivor", &script);
    let id = slurm.submit(&submit).await.expect("sbatch");
    let seen = wait_until(&cluster, &slurm, id, "a start", |s| {
        matches!(s, JobState::Running { .. })
    })
    .await;
    let Some(JobState::Running { node: first }) = seen.last() else {
        unreachable!("wait_until returns on a running state")
    };
    let first = first.clone();
    cluster.kill_node(&first);
    fs_err::write(&go, "").expect("go");
    let seen = wait_until(&cluster, &slurm, id, "its end", JobState::is_finished).await;
    let other = NODES.iter().find(|n| **n != first).unwrap().to_string();
    assert_eq!(
        seen.last(),
        Some(&JobState::Completed {
            node: Some(other.clone())
        }),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|s| matches!(s, JobState::Pending { .. })),
        "requeued jobs pend again: {seen:?}"
    );
    let output = read(&submit.output);
    assert!(
        output.ends_with(&format!("start {other}\ndone {other}\n")),
        "{output}"
    );
}

#[tokio::test]
async fn a_bad_partition_is_an_sbatch_error_naming_it() {
    if !slurm_ready() {
        return;
    }
    let cluster = SlurmCluster::start();
    let slurm = client(&cluster);
    let mut submit = job(&cluster, "nowhere", "true");
    submit.partition = Some("gpu".into());
    let err = slurm.submit(&submit).await.expect_err("no partition gpu");
    assert!(
        matches!(&err, SlurmError::Failed { program, code: Some(1), .. } if program == "sbatch"),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.starts_with("sbatch failed (exit 1): ") && message.contains("partition"),
        "{message}"
    );
    assert!(message.contains("gpu"), "{message}");
    assert!(cluster.squeue_ids().is_empty());
}

/// The resources a job asks for reach sbatch: more CPUs or memory than a node has is refused.
#[tokio::test]
async fn a_job_asking_more_than_a_node_has_is_refused() {
    if !slurm_ready() {
        return;
    }
    let cluster = SlurmCluster::start();
    let slurm = client(&cluster);
    let mut cpus = job(&cluster, "greedy", "true");
    cpus.cpus = Some(2);
    let mut mem = job(&cluster, "hungry", "true");
    mem.mem_mb = Some(1_000_000);
    for submit in [cpus, mem] {
        let err = slurm.submit(&submit).await.expect_err("too big for a node");
        assert!(
            err.to_string()
                .contains("Requested node configuration is not available"),
            "{}: {err}",
            submit.name
        );
    }
    assert!(cluster.squeue_ids().is_empty());
}

/// A job slurmctld does not know, on a cluster without accounting (sacct refuses), is gone.
#[tokio::test]
async fn an_unknown_job_is_gone() {
    if !slurm_ready() {
        return;
    }
    let cluster = SlurmCluster::start();
    let slurm = client(&cluster);
    let known = slurm
        .submit(&job(&cluster, "known", "true"))
        .await
        .expect("sbatch");
    let unknown: JobId = "999999".parse().unwrap();
    wait_until(&cluster, &slurm, known, "its end", JobState::is_finished).await;
    let states = slurm.states(&[unknown]).await.expect("states");
    assert_eq!(states[&unknown], JobState::Gone);
    let states = slurm.states(&[known, unknown]).await.expect("states");
    assert_eq!(states.len(), 2);
    assert_eq!(states[&unknown], JobState::Gone);
    assert!(matches!(states[&known], JobState::Completed { .. }));
}

/// Dropping the cluster kills its daemons and the jobs still running on it.
#[tokio::test]
async fn dropping_the_cluster_leaves_nothing_running() {
    if !slurm_ready() {
        return;
    }
    let cluster = SlurmCluster::start();
    let slurm = client(&cluster);
    let pid_file = cluster.dir().join("job.pid");
    let script = format!("echo $$ > {}; exec sleep 300", pid_file.display());
    let id = slurm
        .submit(&job(&cluster, "orphan", &script))
        .await
        .expect("sbatch");
    wait_until(&cluster, &slurm, id, "a start", |s| {
        matches!(s, JobState::Running { .. })
    })
    .await;
    let job_pid = job_pid(&pid_file).await;
    let dir = cluster.dir().to_path_buf();
    assert!(!processes_using(|p| p.starts_with(&dir)).is_empty());
    drop(cluster);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = processes_using(|p| p.starts_with(&dir));
        let job_alive = alive(job_pid);
        if left.is_empty() && !job_alive {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still running: {left:?}, the job {job_pid}: {job_alive}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn an_array_job_runs_each_task_s_command_and_each_task_has_its_own_state() {
    if !slurm_ready() {
        return;
    }
    let cluster = SlurmCluster::start();
    let slurm = client(&cluster);
    let go = cluster.dir().join("go");
    // Three tasks on two one-CPU nodes: while the first two wait for `go`, the third is
    // pending; then each ends as its own command says.
    let jobs = [
        job(&cluster, "t0", &format!("{}; echo zero", wait_for_go(&go))),
        job(&cluster, "t1", &format!("{}; exit 3", wait_for_go(&go))),
        job(&cluster, "t2", "echo two"),
    ];
    let ids = slurm.submit_array(&jobs).await.expect("sbatch --array");
    assert_eq!(ids.len(), 3);
    let base = ids[0].to_string();
    let base = base.split('_').next().unwrap();
    assert_eq!(
        ids.iter().map(JobId::to_string).collect::<Vec<_>>(),
        [0, 1, 2].map(|t| format!("{base}_{t}"))
    );
    // Each task is known by its own id, the pending one too.
    let deadline = Instant::now() + DEADLINE;
    loop {
        let states = slurm.states(&ids).await.expect("squeue");
        let running = ids
            .iter()
            .filter(|id| matches!(states[id], JobState::Running { .. }))
            .count();
        if running == 2 {
            assert!(
                matches!(states[&ids[2]], JobState::Pending { .. }),
                "{states:?}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{states:?}\n{}",
            cluster.log_tails()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    fs_err::write(&go, "").unwrap();
    let last = |seen: Vec<JobState>| seen.last().cloned().unwrap();
    let done = |s: &JobState| s.is_finished();
    assert!(matches!(
        last(wait_until(&cluster, &slurm, ids[0], "completion", done).await),
        JobState::Completed { .. }
    ));
    assert!(matches!(
        last(wait_until(&cluster, &slurm, ids[1], "failure", done).await),
        JobState::Failed {
            exit: JobExit { code: 3, .. },
            ..
        }
    ));
    assert!(matches!(
        last(wait_until(&cluster, &slurm, ids[2], "completion", done).await),
        JobState::Completed { .. }
    ));
    assert_eq!(read(&jobs[0].output), "zero\n");
    assert_eq!(read(&jobs[2].output), "two\n");
    wait_for_empty_queue(&cluster).await;
}
