#!/usr/bin/env bash
# What placing nodes on Slurm costs (issue 46), on throwaway clusters of this machine
# (scripts/slurm-cluster.sh: one-CPU slurmd, all on these cores, so no figure here is a speedup
# of more hardware: it is bench's cost per node, and how the work spreads).
#
#   (a) the quickstart (8 tasks: 8 gold grades, 24 solves, 24 grades) applied locally into a
#       fresh store (the baseline), against the same manifest with `[execution] engine =
#       "slurm"` on a 2-node cluster (a fresh store and a fresh shared cache: everything runs),
#       both 2 nodes at a time (`limits.jobs` is this machine's 2 CPUs; `max_jobs = 2`, one job
#       per Slurm CPU, so no job waits in Slurm's queue). Per node, from the event stream of
#       `bench apply --message-format json`, each line stamped as it arrives: the span from
#       `node_started` to `node_finished` as the apply sees it, the work itself (the record's
#       `duration_ms`, measured where the node ran), and on Slurm the span to the job's
#       submission (`node_placed` queued: the input root staged and uploaded, sbatch).
#   (b) TASKS quickstart-shaped tasks (copies of the 8 with new instance ids, in a temp dir;
#       team oracle only: TASKS gold grades, solves and grades) on a 1-node cluster against a
#       2-node one, `max_jobs` at its default (64): wall time and nodes per minute.
#
#   scripts/bench-slurm.sh                # ROUNDS=1 TASKS=100 PARTS="a b"
#
# Environment (all optional): ROUNDS (default 1), TASKS (default 100), PARTS ("a", "b" or
# "a b"), BIN (the bench binary; default: a release build made here), KEEP=1 keeps the work
# directory. Needs root and Slurm's daemons (see scripts/slurm-cluster.sh), git and python3.
# Prints markdown tables on stdout; progress on stderr.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROUNDS=${ROUNDS:-1}
TASKS=${TASKS:-100}
PARTS=${PARTS:-"a b"}
if [ -z "${BIN:-}" ]; then
  (cd "$ROOT" && cargo build --release -q)
  BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/bench
fi
BIN=$(realpath "$BIN")
CLUSTER=$ROOT/scripts/slurm-cluster.sh

WORK=$(mktemp -d /tmp/bench-slurm.XXXXXX)
chmod 0755 "$WORK" # munged wants every directory above its socket searchable by all
clusters=()
cleanup() {
  local c
  for c in "${clusters[@]}"; do "$CLUSTER" stop "$c" 2>/dev/null || true; done
  if [ "${KEEP:-}" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# The workers' signing key; its public half goes in `[cache] trust`.
export XDG_CONFIG_HOME=$WORK/config
"$BIN" cache keygen --out "$WORK/worker.key" >"$WORK/keygen.out"
PUB=$(grep -o 'ed25519:[A-Za-z0-9_+/=-]*' "$WORK/keygen.out" | head -1)
export BENCH_CACHE_KEY_FILE=$WORK/worker.key

# cluster_up NAME N: a cluster of N nodes in $WORK/NAME, SLURM_CONF exported.
cluster_up() {
  clusters+=("$WORK/$1")
  local export_line
  export_line=$("$CLUSTER" start "$WORK/$1" "$2")
  eval "$export_line"
}
cluster_down() {
  "$CLUSTER" stop "$WORK/$1"
  unset SLURM_CONF
}

# experiment DIR TASKS_DIR TEAMS EXTRA: the quickstart manifest in DIR, its dataset TASKS_DIR,
# its teams TEAMS (a TOML list), EXTRA appended.
experiment() {
  local dir=$1 tasks=$2 teams=$3 extra=$4
  mkdir -p "$dir"
  cp -a "$ROOT/examples/quickstart" "$dir/quickstart"
  sed -e "s|^path = \"quickstart/tasks\"|path = \"$tasks\"|" \
    -e "s|^teams = \[\"oracle\", \"nop\", \"fixer\"\]|teams = $teams|" \
    "$ROOT/examples/quickstart.toml" >"$dir/quickstart.toml"
  # A report's baseline must be one of its teams: without nop, the first team listed.
  case $teams in
  *'"nop"'*) ;;
  *) sed -i -e "s|^baseline = \"nop\"|baseline = $(sed -E 's/^\[("[^"]*").*/\1/' <<<"$teams")|" "$dir/quickstart.toml" ;;
  esac
  printf '%s\n' "$extra" >>"$dir/quickstart.toml"
}

# On Slurm: the shared cache (fresh) and the placement.
slurm_extra() { # cache dir, max_jobs line
  mkdir -p "$1"
  printf '\n[cache]\nremote = "file://%s"\ntrust = ["%s"]\n\n[execution]\nengine = "slurm"\nworker_store = "%s"\n%s\n' \
    "$1" "$PUB" "$1-worker" "$2"
}

# timed DIR: `bench apply` in DIR, every event line stamped with the seconds since the start
# (DIR/events.jsonl), the wall time in DIR/wall.
timed() {
  python3 - "$1" "$BIN" <<'EOF'
import json, subprocess, sys, time
d, exe = sys.argv[1], sys.argv[2]
t0 = time.monotonic()
p = subprocess.Popen([exe, "apply", "quickstart.toml", "--message-format", "json"], cwd=d,
                     stdout=subprocess.PIPE, stderr=open(d + "/stderr", "w"), text=True)
with open(d + "/events.jsonl", "w") as out:
    for line in p.stdout:
        t = time.monotonic() - t0
        try:
            e = json.loads(line)
        except ValueError:
            continue
        e["t"] = t
        out.write(json.dumps(e) + "\n")
rc = p.wait()
open(d + "/wall", "w").write("%.3f\n" % (time.monotonic() - t0))
if rc != 0:
    sys.exit("bench apply in %s exited %d: see %s/stderr" % (d, rc, d))
EOF
}

# summary NAME DIR...: one markdown row per run directory.
summary() {
  python3 - "$@" <<'EOF'
import json, statistics, sys
def med(xs):
    return statistics.median(xs) if xs else float("nan")
for d in sys.argv[1:]:
    ev = [json.loads(l) for l in open(d + "/events.jsonl")]
    wall = float(open(d + "/wall").read())
    started = {e["address"]: e["t"] for e in ev if e["event"] == "node_started"}
    queued = {}
    nodes = set()
    for e in ev:
        if e["event"] == "node_placed":
            queued.setdefault(e["address"], e["t"])
            if e["placement"].get("node"):
                nodes.add(e["placement"]["node"])
    span, work, ship = [], [], []
    for e in ev:
        a = e.get("address", "")
        if e["event"] != "node_finished" or a not in started or a.startswith(("sample", "report")):
            continue
        assert e["outcome"] == "done", e
        span.append((e["t"] - started[a]) * 1000)
        work.append(e["duration_ms"])
        if a in queued:
            ship.append((queued[a] - started[a]) * 1000)
    added = [s - w for s, w in zip(span, work)]
    print(json.dumps({"dir": d, "wall_s": wall, "nodes": len(span),
                      "span_ms": med(span), "work_ms": med(work), "added_ms": med(added),
                      "added_mean_ms": statistics.mean(added) if added else None,
                      "ship_ms": med(ship) if ship else None,
                      "slurm_nodes": sorted(nodes)}))
EOF
}

# make_tasks DIR N: N copies of the quickstart's tasks, instance ids quickstart__NAME-K.
make_tasks() {
  local dir=$1 n=$2 i=0 k=1 t name
  mkdir -p "$dir"
  local src=("$ROOT"/examples/quickstart/tasks/*/)
  while [ $i -lt "$n" ]; do
    for t in "${src[@]}"; do
      [ $i -lt "$n" ] || break
      name=$(basename "$t")
      name="${name%-1}-x$k"
      cp -a "$t" "$dir/$name"
      sed -i "s|^instance_id = .*|instance_id = \"$name\"|" "$dir/$name/task.toml"
      i=$((i + 1))
    done
    k=$((k + 1))
  done
}

echo "machine: $(nproc) CPUs, $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg); bench $("$BIN" --version)" >&2

if [[ " $PARTS " == *" a "* ]]; then
  cluster_up cluster-a 2
  rows_a=()
  for r in $(seq 1 "$ROUNDS"); do
    for how in local slurm; do
      d=$WORK/a$r-$how
      if [ $how = local ]; then
        experiment "$d" quickstart/tasks '["oracle", "nop", "fixer"]' ""
      else
        experiment "$d" quickstart/tasks '["oracle", "nop", "fixer"]' "$(slurm_extra "$WORK/a$r-cache" "max_jobs = 2")"
      fi
      echo "(a) round $r: the quickstart, $how (load $(cut -d' ' -f1 /proc/loadavg))" >&2
      timed "$d"
      rows_a+=("$r $how $(summary "$d")")
    done
  done
  cluster_down cluster-a
  echo
  echo "(a) the quickstart, local against Slurm (2 nodes), 2 nodes at a time; per node: medians over the gold grades, solves and grades"
  echo
  echo "| round | placement | wall | wall / local | nodes run | span per node | work per node | added per node (span - work) | to submission (ship) | Slurm nodes used |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows_a[@]}" | python3 -c '
import json, sys
local = {}
for line in sys.stdin:
    r, how, doc = line.split(" ", 2)
    s = json.loads(doc)
    if how == "local":
        local[r] = s["wall_s"]
    ratio = s["wall_s"] / local[r]
    ship = "%.0f ms" % s["ship_ms"] if s["ship_ms"] is not None else "-"
    used = ", ".join(s["slurm_nodes"]) or "-"
    print("| %s | %s | %.1f s | %.2fx | %d | %.0f ms | %.0f ms | %.0f ms | %s | %s |" % (
        r, how, s["wall_s"], ratio, s["nodes"], s["span_ms"], s["work_ms"], s["added_ms"], ship, used))
'
fi

if [[ " $PARTS " == *" b "* ]]; then
  make_tasks "$WORK/tasks$TASKS" "$TASKS"
  rows_b=()
  for r in $(seq 1 "$ROUNDS"); do
    for n in 1 2; do
      cluster_up "cluster-b$r-$n" "$n"
      d=$WORK/b$r-$n
      experiment "$d" "$WORK/tasks$TASKS" '["oracle"]' "$(slurm_extra "$WORK/b$r-$n-cache" "")"
      echo "(b) round $r: $TASKS tasks on $n Slurm node(s) (load $(cut -d' ' -f1 /proc/loadavg))" >&2
      timed "$d"
      rows_b+=("$r $n $(summary "$d")")
      cluster_down "cluster-b$r-$n"
    done
  done
  echo
  echo "(b) $TASKS quickstart-shaped tasks (team oracle: gold grades, solves, grades), one Slurm node against two"
  echo
  echo "| round | Slurm nodes | wall | wall / 1 node | nodes run | nodes per minute | work per node | added per node (span - work, queueing included) |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows_b[@]}" | python3 -c '
import json, sys
one = {}
for line in sys.stdin:
    r, n, doc = line.split(" ", 2)
    s = json.loads(doc)
    if n == "1":
        one[r] = s["wall_s"]
    print("| %s | %s | %.1f s | %.2fx | %d | %.1f | %.0f ms | %.0f ms |" % (
        r, n, s["wall_s"], s["wall_s"] / one[r], s["nodes"], s["nodes"] * 60 / s["wall_s"],
        s["work_ms"], s["added_ms"]))
'
fi
