//! A real Slurm cluster on this machine, for tests: Debian's slurmctld and two slurmd (nodes
//! `n1` and `n2`, one CPU each, one partition `main`), authenticated by a munged of its own,
//! all started as root in a fresh temp dir from a `slurm.conf` written there. Clients find it
//! through `SLURM_CONF` ([`SlurmCluster::env`], [`SlurmCluster::command`]).
//!
//! Several clusters run at once (nextest runs tests in parallel processes): each has its own
//! loopback ports picked at start, directory, `ClusterName` and munge socket and key, and reads
//! nothing of `/etc/slurm` or `/etc/munge`.
//!
//! Two slurmd on one host: Debian builds Slurm with `--enable-multiple-slurmd` (its
//! libslurmfull lacks the "Duplicated NodeHostName %s in the config file" error that only
//! builds without it compile), so each slurmd runs with `-N NODE`, both nodes share
//! `NodeHostname=localhost` and `NodeAddr=127.0.0.1`, and each slurmd listens on its node's
//! `Port=`: both nodes register, jobs run on both, a killed slurmd's node goes down alone. No
//! namespaces are needed.
//!
//! Every process of the cluster is found through the directory: the daemons run in it, and
//! every slurmstepd holds its node's log file in it open (the jobs are the slurmstepds'
//! children). [`SlurmCluster::kill_node`] kills a node the way a machine dies: its slurmd, its
//! slurmstepds and their jobs. Dropping the cluster kills every process that works in the
//! directory or holds a file of it open, and their descendants; each daemon also gets SIGKILL
//! if the thread that started it dies (`setpriv --pdeathsig`), so a killed test leaves at most
//! its jobs behind. Start a cluster on the test's own thread, not in `spawn_blocking` (a
//! blocking thread that idles out would take the daemons with it).

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The cluster's nodes.
pub const NODES: [&str; 2] = ["n1", "n2"];

/// The cluster's partition (the default).
pub const PARTITION: &str = "main";

/// A partition over the same nodes with a higher priority tier: a job of it preempts (cancels)
/// the jobs of [`PARTITION`] it needs the CPUs of.
pub const URGENT: &str = "urgent";

/// How long the cluster may take to start, and a restarted node to be back.
const START_TIMEOUT: Duration = Duration::from_secs(90);

/// The commands the cluster needs.
const PROGRAMS: &[&str] = &[
    "munged",
    "slurmctld",
    "slurmd",
    "setpriv",
    "sbatch",
    "squeue",
    "sinfo",
    "scancel",
];

/// Whether a Slurm cluster can run here (Slurm's daemons and commands, munged, root): under CI
/// a missing piece panics, elsewhere the test is skipped with a note.
pub fn slurm_ready() -> bool {
    let missing: Vec<&str> = PROGRAMS
        .iter()
        .copied()
        .filter(|p| find_program(p).is_none())
        .collect();
    let problem = if !missing.is_empty() {
        Some(format!(
            "{} missing (Debian: apt-get install slurmctld slurmd slurm-client munge)",
            missing.join(", ")
        ))
    } else if !is_root() {
        Some("not root (slurmd runs jobs as root here)".to_string())
    } else {
        None
    };
    match problem {
        None => true,
        Some(p) if super::ci() => panic!("CI=true but {p}"),
        Some(p) => {
            eprintln!("note: skipping a slurm test: {p}");
            false
        }
    }
}

/// Whether this process runs as root (the owner of `/proc/self` is its effective user).
fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    fs_err::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// `program` on `PATH` (or in /usr/sbin, where Debian puts the daemons).
fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// A running cluster; dropping it stops everything it started.
pub struct SlurmCluster {
    dir: tempfile::TempDir,
    name: String,
    conf: PathBuf,
    munged: Option<Child>,
    slurmctld: Option<Child>,
    slurmd: BTreeMap<String, Child>,
}

impl SlurmCluster {
    /// Starts a cluster and waits until both nodes are idle. A daemon that exits while the
    /// cluster starts (a port picked free and taken before the daemon bound it) makes it start
    /// again from scratch, twice at most.
    pub fn start() -> SlurmCluster {
        let mut problems = Vec::new();
        for _ in 0..3 {
            match SlurmCluster::try_start() {
                Ok(cluster) => return cluster,
                Err(problem) => problems.push(problem),
            }
        }
        panic!(
            "the Slurm cluster did not start:\n{}",
            problems.join("\n---\n")
        );
    }

    /// One attempt of [`SlurmCluster::start`]: `Err` when a daemon exited early; a cluster that
    /// does not come up in time panics with the daemons' log tails.
    fn try_start() -> Result<SlurmCluster, String> {
        let dir = tempfile::Builder::new()
            .prefix("bench-slurm-")
            .tempdir()
            .expect("a temp dir");
        let root = dir.path().to_path_buf();
        // Ports are picked by binding port 0 on loopback, all held until the config is written.
        let listeners: Vec<TcpListener> = (0..=NODES.len())
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free loopback port"))
            .collect();
        let ports: Vec<u16> = listeners
            .iter()
            .map(|l| l.local_addr().expect("an address").port())
            .collect();
        let name = format!("bench{}", ports[0]);
        let conf = root.join("slurm.conf");
        write(&conf, &slurm_conf(&root, &name, &ports));
        write_key(&root.join("munge.key"));
        for d in ["state", "spool/n1", "spool/n2"] {
            fs_err::create_dir_all(root.join(d)).expect("a cluster directory");
        }
        drop(listeners);
        let mut cluster = SlurmCluster {
            dir,
            name,
            conf,
            munged: None,
            slurmctld: None,
            slurmd: BTreeMap::new(),
        };
        let socket = root.join("munge.socket");
        cluster.munged = Some(cluster.spawn(
            "munged",
            &[
                "--foreground".to_string(),
                format!("--socket={}", socket.display()),
                format!("--key-file={}", root.join("munge.key").display()),
                format!("--pid-file={}", root.join("munged.pid").display()),
                format!("--log-file={}", root.join("munged.log").display()),
                format!("--seed-file={}", root.join("munged.seed").display()),
            ],
            "munged.out",
        ));
        cluster.wait_for("munged's socket", |_| socket.exists())?;
        cluster.slurmctld = Some(cluster.spawn("slurmctld", &["-D".into()], "slurmctld.out"));
        for node in NODES {
            cluster.start_slurmd(node);
        }
        cluster.wait_for("both nodes idle", |c| {
            c.try_nodes()
                .is_some_and(|n| n.values().filter(|s| *s == "idle").count() == NODES.len())
        })?;
        Ok(cluster)
    }

    /// `SLURM_CONF`, which points the Slurm commands at this cluster.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![("SLURM_CONF".into(), self.conf.display().to_string())]
    }

    /// A command of this cluster (`sbatch`, `squeue`, ...) with its `SLURM_CONF`.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.envs(self.env());
        cmd
    }

    /// The cluster's directory (its config, state, spools and logs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The cluster's `ClusterName`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Each node's state as sinfo prints it (`idle`, `alloc`, `mix`, `down*`, ...).
    pub fn nodes(&self) -> BTreeMap<String, String> {
        self.try_nodes()
            .unwrap_or_else(|| panic!("sinfo failed\n{}", self.log_tails()))
    }

    /// [`SlurmCluster::nodes`], `None` while slurmctld does not answer.
    fn try_nodes(&self) -> Option<BTreeMap<String, String>> {
        let out = self
            .command("sinfo")
            .args(["--noheader", "--Node", "--format=%N %t"])
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())?;
        let nodes = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(n, s)| (n.to_string(), s.trim().to_string()))
            .collect();
        Some(nodes)
    }

    /// The ids of the jobs squeue lists (pending, running, completing), sorted.
    pub fn squeue_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .output("squeue", &["--noheader", "--format=%i"])
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect();
        ids.sort();
        ids
    }

    /// Kills `node` as a machine dies: SIGKILL to its slurmd, its slurmstepds and their jobs.
    /// slurmctld notices after `SlurmdTimeout` (10 s) and marks the node down.
    pub fn kill_node(&mut self, node: &str) {
        let log = self.dir().join(format!("slurmd-{node}.log"));
        let mut pids = processes_using(|p| p == log);
        if let Some(child) = self.slurmd.get(node) {
            pids.insert(child.id());
        }
        kill_with_descendants(pids);
        if let Some(mut child) = self.slurmd.remove(node) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts `node`'s slurmd again and waits until the node is idle (`ReturnToService=2`
    /// returns a down node to service when its slurmd registers).
    pub fn restart_node(&mut self, node: &str) {
        assert!(
            !self.slurmd.contains_key(node),
            "{node}'s slurmd is running: kill it first"
        );
        self.start_slurmd(node);
        if let Err(problem) = self.wait_for(&format!("{node} idle again"), |c| {
            c.try_nodes()
                .is_some_and(|n| n.get(node).is_some_and(|s| s == "idle"))
        }) {
            panic!("{problem}");
        }
    }

    fn start_slurmd(&mut self, node: &str) {
        let child = self.spawn(
            "slurmd",
            &["-D".into(), "-N".into(), node.into()],
            &format!("slurmd-{node}.out"),
        );
        self.slurmd.insert(node.to_string(), child);
    }

    /// Starts a daemon in the cluster's directory, its stdout and stderr in `out`, killed if
    /// this thread dies.
    fn spawn(&self, program: &str, args: &[String], out: &str) -> Child {
        let log = fs_err::File::create(self.dir().join(out)).expect("a daemon's output file");
        let program_path =
            find_program(program).unwrap_or_else(|| panic!("{program} not found (slurm_ready)"));
        Command::new("setpriv")
            .arg("--pdeathsig=KILL")
            .arg(program_path)
            .args(args)
            .envs(self.env())
            .current_dir(self.dir())
            .stdin(Stdio::null())
            .stdout(std::fs::File::from(
                log.try_clone().expect("a daemon's output file"),
            ))
            .stderr(std::fs::File::from(log))
            .spawn()
            .unwrap_or_else(|e| panic!("starting {program}: {e}"))
    }

    /// Polls `ready` until it holds: `Err` with the logs when a daemon has exited meanwhile,
    /// a panic with the logs after [`START_TIMEOUT`].
    fn wait_for(
        &mut self,
        what: &str,
        ready: impl Fn(&SlurmCluster) -> bool,
    ) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if ready(self) {
                return Ok(());
            }
            if let Some(daemon) = self.exited() {
                return Err(format!(
                    "{daemon} exited while waiting for {what}\n{}",
                    self.log_tails()
                ));
            }
            if Instant::now() > deadline {
                panic!(
                    "the Slurm cluster {}: no {what} after {}s\n{}",
                    self.name,
                    START_TIMEOUT.as_secs(),
                    self.log_tails()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The first daemon that has exited, if one has.
    fn exited(&mut self) -> Option<String> {
        let mut daemons: Vec<(String, &mut Child)> = Vec::new();
        daemons.extend(self.munged.as_mut().map(|c| ("munged".to_string(), c)));
        daemons.extend(
            self.slurmctld
                .as_mut()
                .map(|c| ("slurmctld".to_string(), c)),
        );
        daemons.extend(
            self.slurmd
                .iter_mut()
                .map(|(n, c)| (format!("slurmd -N {n}"), c)),
        );
        daemons.into_iter().find_map(|(name, c)| {
            let status = c.try_wait().ok().flatten()?;
            Some(format!("{name} ({status})"))
        })
    }

    /// The last lines of every log and daemon output of the cluster.
    pub fn log_tails(&self) -> String {
        let mut files: Vec<PathBuf> = fs_err::read_dir(self.dir())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "log" || x == "out"))
            .collect();
        files.sort();
        let mut out = String::new();
        for f in files {
            let text = fs_err::read_to_string(&f).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(15)..];
            out.push_str(&format!("== {} ==\n{}\n", f.display(), tail.join("\n")));
        }
        out
    }

    /// A Slurm command's stdout; a failure panics with its stderr.
    fn output(&self, program: &str, args: &[&str]) -> String {
        let out = self
            .command(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("running {program}: {e}"));
        assert!(
            out.status.success(),
            "{program} {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for SlurmCluster {
    fn drop(&mut self) {
        let dir = self.dir().to_path_buf();
        let mut pids = processes_using(|p| p.starts_with(&dir));
        let children = self
            .munged
            .iter()
            .chain(&self.slurmctld)
            .chain(self.slurmd.values());
        pids.extend(children.map(Child::id));
        kill_with_descendants(pids);
        let children = self
            .munged
            .iter_mut()
            .chain(self.slurmctld.iter_mut())
            .chain(self.slurmd.values_mut());
        for child in children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The processes (other than this one) whose working directory or one of whose open files
/// satisfies `hit`.
pub fn processes_using(hit: impl Fn(&Path) -> bool) -> BTreeSet<u32> {
    let me = std::process::id();
    let mut out = BTreeSet::new();
    for pid in all_pids() {
        if pid == me {
            continue;
        }
        let proc_dir = PathBuf::from(format!("/proc/{pid}"));
        let cwd = fs_err::read_link(proc_dir.join("cwd")).ok();
        let fds = fs_err::read_dir(proc_dir.join("fd"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| fs_err::read_link(e.path()).ok());
        if cwd.into_iter().chain(fds).any(|p| hit(&p)) {
            out.insert(pid);
        }
    }
    out
}

fn all_pids() -> Vec<u32> {
    fs_err::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// SIGKILL to `pids` and all their descendants (found before any is killed: a killed
/// process's children move to init).
fn kill_with_descendants(pids: BTreeSet<u32>) {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for pid in all_pids() {
        let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // "pid (comm) state ppid ...": the command may hold spaces and parentheses.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok());
        if let Some(ppid) = ppid {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut all = pids.clone();
    let mut todo: Vec<u32> = pids.into_iter().collect();
    while let Some(p) = todo.pop() {
        for &c in children.get(&p).into_iter().flatten() {
            if all.insert(c) {
                todo.push(c);
            }
        }
    }
    all.remove(&std::process::id());
    for pid in all {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).expect("a pid"));
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    }
}

fn write(path: &Path, text: &str) {
    fs_err::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// A fresh munge key: 1024 random bytes, readable by its owner only (munged checks).
fn write_key(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut key = vec![0u8; 1024];
    getrandom::fill(&mut key).expect("random bytes");
    fs_err::write(path, &key).expect("the munge key");
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o400)).expect("chmod");
}

/// The cluster's `slurm.conf`: slurmctld on `ports[0]`, node `NODES[i]` on `ports[i + 1]`.
fn slurm_conf(dir: &Path, name: &str, ports: &[u16]) -> String {
    let d = dir.display();
    let mut conf = format!(
        "# A test cluster of bench (tests/common/slurm.rs).
ClusterName={name}
SlurmctldHost=localhost
SlurmctldPort={ctld}
SlurmUser=root
SlurmdUser=root
# Its own munged: socket and key in this directory. cred_expire also delays the start of a
# requeued job (120 s by default).
AuthType=auth/munge
AuthInfo=socket={d}/munge.socket,cred_expire=10
CredType=cred/munge
StateSaveLocation={d}/state
SlurmctldLogFile={d}/slurmctld.log
SlurmctldPidFile={d}/slurmctld.pid
SlurmdSpoolDir={d}/spool/%n
SlurmdLogFile={d}/slurmd-%n.log
SlurmdPidFile={d}/slurmd-%n.pid
MailProg=/bin/true
# No cgroups: processes are tracked through /proc.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# A lost node is noticed within seconds, and returns to service when its slurmd registers.
SlurmdTimeout=10
SlurmctldTimeout=10
MessageTimeout=5
KillWait=5
ReturnToService=2
# The scheduler looks at pending jobs every 2 s (60 s and backfill's 30 s by default), so a
# requeued job starts soon after it may.
SchedulerParameters=sched_interval=2,bf_interval=2
# A job of the urgent partition cancels the main partition's jobs in its way (PREEMPTED).
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
",
        ctld = ports[0],
    );
    for (node, port) in NODES.iter().zip(&ports[1..]) {
        conf.push_str(&format!(
            "NodeName={node} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} CPUs=1 \
             RealMemory=1000 State=UNKNOWN\n"
        ));
    }
    conf.push_str(&format!(
        "PartitionName={PARTITION} Nodes={nodes} Default=YES MaxTime=INFINITE State=UP \
         PriorityTier=1\n\
         PartitionName={URGENT} Nodes={nodes} MaxTime=INFINITE State=UP PriorityTier=2\n",
        nodes = NODES.join(",")
    ));
    conf
}
