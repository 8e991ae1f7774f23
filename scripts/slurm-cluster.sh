#!/usr/bin/env bash
# A throwaway Slurm cluster on this machine, to try `[execution] engine = "slurm"` without a real
# one (and for scripts/bench-slurm.sh). The recipe of tests/common/slurm.rs: Debian's slurmctld
# and N slurmd (nodes n1..nN, one CPU each, one partition `main`), authenticated by a munged of
# their own (its own key and socket), all run as root in DIR from a slurm.conf written there.
# Nothing of /etc/slurm or /etc/munge is read, so several clusters can run at once.
#
#   scripts/slurm-cluster.sh start DIR [N]   # N nodes (default 2); DIR must not exist or be empty
#   eval "$(scripts/slurm-cluster.sh start /tmp/slurm 2)"   # the same, exporting SLURM_CONF
#   scripts/slurm-cluster.sh stop DIR
#
# `start` prints one line on stdout, `export SLURM_CONF=DIR/slurm.conf`: the Slurm commands
# (sbatch, squeue, sinfo) and bench find the cluster through it. Progress goes to stderr.
#
# Several slurmd on one host: Debian builds Slurm with --enable-multiple-slurmd, so each runs as
# `slurmd -D -N nI`, every node has NodeHostname=localhost, NodeAddr=127.0.0.1 and a Port of its
# own. Each daemon is started in DIR (its working directory) and holds a log file of DIR open,
# as does every slurmstepd of a node (the jobs are their children): `stop` kills every process
# whose working directory or an open file is in DIR, and their descendants, with SIGKILL. Logs
# are DIR/*.log and DIR/*.out.
#
# Needs root, munged, slurmctld, slurmd and the Slurm client commands (Debian: apt-get install
# slurmctld slurmd slurm-client munge), and python3 (to pick free loopback ports).
set -euo pipefail

usage() {
  sed -n '8,11p' "$0" | sed 's/^# *//' >&2
  exit 2
}

# The processes whose working directory, or one of whose open files, is under $1.
processes_in() {
  local dir=$1 p target
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = "$$" ] && continue
    target=$(readlink "/proc/$p/cwd" 2>/dev/null || true)
    if [ "$target" = "$dir" ] || [[ "$target" == "$dir"/* ]]; then
      echo "$p"
      continue
    fi
    for target in $(readlink /proc/"$p"/fd/* 2>/dev/null || true); do
      if [[ "$target" == "$dir"/* ]]; then
        echo "$p"
        break
      fi
    done
  done
}

# SIGKILL to the given pids and all their descendants (found before any is killed: a killed
# process's children move to init).
kill_with_descendants() {
  [ $# -gt 0 ] || return 0
  local all todo p c
  all=" $* "
  todo=("$@")
  local table
  table=$(ps -e -o pid= -o ppid=)
  while [ ${#todo[@]} -gt 0 ]; do
    p=${todo[0]}
    todo=("${todo[@]:1}")
    for c in $(awk -v pp="$p" '$2 == pp { print $1 }' <<<"$table"); do
      if [[ "$all" != *" $c "* ]]; then
        all="$all$c "
        todo+=("$c")
      fi
    done
  done
  for p in $all; do
    [ "$p" = "$$" ] || kill -KILL "$p" 2>/dev/null || true
  done
}

stop() {
  local dir
  dir=$(realpath -m "$1")
  [ -f "$dir/slurm.conf" ] || { echo "slurm-cluster.sh: no cluster in $dir (no slurm.conf)" >&2; exit 1; }
  # shellcheck disable=SC2046
  kill_with_descendants $(processes_in "$dir")
  echo "stopped the cluster in $dir" >&2
}

# Prints the last lines of every log of the cluster in $1 (to stderr).
log_tails() {
  local f
  for f in "$1"/*.log "$1"/*.out; do
    [ -f "$f" ] || continue
    echo "== $f ==" >&2
    tail -n 15 "$f" >&2
  done
}

# Each node's state as sinfo prints it, `NODE STATE` a line.
node_states() {
  sinfo --noheader --Node --format='%N %t' 2>/dev/null
}

start() {
  local dir=$1 n=$2
  [ "$(id -u)" = 0 ] || { echo "slurm-cluster.sh: run as root (slurmd runs jobs as root here)" >&2; exit 2; }
  local program
  for program in munged slurmctld slurmd sbatch squeue sinfo scancel python3; do
    command -v "$program" >/dev/null || [ -x "/usr/sbin/$program" ] ||
      { echo "slurm-cluster.sh: $program is missing (Debian: apt-get install slurmctld slurmd slurm-client munge)" >&2; exit 2; }
  done
  case $n in '' | *[!0-9]* | 0) echo "slurm-cluster.sh: N must be a positive number, not $n" >&2; exit 2 ;; esac
  if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
    echo "slurm-cluster.sh: $dir is not empty (stop its cluster and remove it first)" >&2
    exit 1
  fi
  # munged wants its socket's directory, and every one above it, searchable by all.
  mkdir -p -m 0755 "$dir"
  dir=$(realpath "$dir")
  local up=$dir
  while [ "$up" != / ]; do
    [ "$(( 0$(stat -c %a "$up") & 1 ))" = 1 ] ||
      { echo "slurm-cluster.sh: munged needs $up searchable by all (chmod o+x $up), or pick another directory" >&2; exit 1; }
    up=$(dirname "$up")
  done
  # Ports: bound on loopback port 0 by the kernel, released just before the daemons bind them.
  local ports
  read -r -a ports <<<"$(python3 -c '
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
' $((n + 1)))"
  local name="bench${ports[0]}" nodes=() i
  for i in $(seq 1 "$n"); do nodes+=("n$i"); done
  local conf=$dir/slurm.conf
  cat >"$conf" <<EOF
# A throwaway cluster of bench (scripts/slurm-cluster.sh).
ClusterName=$name
SlurmctldHost=localhost
SlurmctldPort=${ports[0]}
SlurmUser=root
SlurmdUser=root
# Its own munged: socket and key in this directory. cred_expire also delays the start of a
# requeued job (120 s by default).
AuthType=auth/munge
AuthInfo=socket=$dir/munge.socket,cred_expire=10
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmctldLogFile=$dir/slurmctld.log
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdSpoolDir=$dir/spool/%n
SlurmdLogFile=$dir/slurmd-%n.log
SlurmdPidFile=$dir/slurmd-%n.pid
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
EOF
  for i in $(seq 1 "$n"); do
    echo "NodeName=n$i NodeHostname=localhost NodeAddr=127.0.0.1 Port=${ports[$i]} CPUs=1 RealMemory=1000 State=UNKNOWN" >>"$conf"
  done
  local joined
  joined=$(IFS=,; echo "${nodes[*]}")
  echo "PartitionName=main Nodes=$joined Default=YES MaxTime=INFINITE State=UP" >>"$conf"
  # A fresh munge key: 1024 random bytes, readable by its owner only (munged checks).
  head -c 1024 /dev/urandom >"$dir/munge.key"
  chmod 0400 "$dir/munge.key"
  mkdir -p "$dir/state"
  for i in "${nodes[@]}"; do mkdir -p "$dir/spool/$i"; done
  export SLURM_CONF=$conf

  # Each daemon in its own session, in the directory, its output in a file there; its pid and
  # name in `daemons` (a background job is no group leader, so setsid execs in place).
  local daemons=()
  spawn() { # output file, program, args...
    local out=$1 program=$2
    shift 2
    (cd "$dir" && exec setsid "$(command -v "$program" || echo "/usr/sbin/$program")" "$@" \
      </dev/null >"$dir/$out" 2>&1) &
    daemons+=("$!:${out%.out}")
  }
  # Fails (logs on stderr, the cluster stopped) when a daemon has exited or $1 has passed.
  check() { # deadline, what is awaited
    local d
    for d in "${daemons[@]}"; do
      if ! kill -0 "${d%%:*}" 2>/dev/null; then
        echo "slurm-cluster.sh: ${d#*:} exited while waiting for $2" >&2
        log_tails "$dir"; stop "$dir"; exit 1
      fi
    done
    if [ $SECONDS -ge "$1" ]; then
      echo "slurm-cluster.sh: no $2 after 90 s" >&2
      node_states >&2 || true
      log_tails "$dir"; stop "$dir"; exit 1
    fi
  }
  spawn munged.out munged --foreground --socket="$dir/munge.socket" --key-file="$dir/munge.key" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munged.seed"
  local deadline=$((SECONDS + 90))
  until [ -S "$dir/munge.socket" ]; do check $deadline "munged's socket"; sleep 0.2; done
  spawn slurmctld.out slurmctld -D
  for i in "${nodes[@]}"; do spawn "slurmd-$i.out" slurmd -D -N "$i"; done
  echo "waiting for $n node(s) of cluster $name to be idle" >&2
  until [ "$(node_states | awk '$2 == "idle"' | wc -l)" -eq "$n" ]; do
    check $deadline "$n idle node(s)"
    sleep 0.2
  done
  echo "cluster $name up in $dir: nodes ${nodes[*]}, partition main (stop: $0 stop $dir)" >&2
  echo "export SLURM_CONF=$conf"
}

case ${1:-} in
  start)
    [ $# -ge 2 ] && [ $# -le 3 ] || usage
    start "$2" "${3:-2}"
    ;;
  stop)
    [ $# -eq 2 ] || usage
    stop "$2"
    ;;
  *) usage ;;
esac
