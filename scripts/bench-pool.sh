#!/usr/bin/env bash
# Reproducible benchmark: grades per minute of one task set on one Docker host and on a pool of
# two (`[backend] hosts`), with the same total concurrency. Both daemons are extra `dockerd`
# processes started here (own data root, exec root, socket, a bridge of their own, no iptables) on
# THIS machine, so they share its cores: the figure to read is the wall time per node of the
# pool against one host (the pool's scheduling overhead), not a speedup. Usage:
#   scripts/bench-pool.sh [tasks, default 16] [containers per host, default 2] [rounds, default 2]
# Needs root, dockerd, and bench-test-calc:1 on the machine's daemon
# (scripts/build-test-images.sh). BENCH_PROFILE=release uses a release build (default debug).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-16}
C=${2:-2}
ROUNDS=${3:-2}
IMAGE=bench-test-calc:1
profile=${BENCH_PROFILE:-debug}
flag=
[ "$profile" = release ] && flag=--release
target=${CARGO_TARGET_DIR:-target}
[ "$(id -u)" = 0 ] || { echo "bench-pool.sh: run as root (it starts dockerd)" >&2; exit 2; }
docker image inspect "$IMAGE" >/dev/null 2>&1 ||
  { echo "bench-pool.sh: $IMAGE is missing: run scripts/build-test-images.sh" >&2; exit 2; }
cargo build $flag --quiet --bin bench
BENCH=$(realpath "$target/$profile/bench")

work=$(mktemp -d /tmp/bp-bench.XXXXXX)
pids=()
bridges=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 150); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$p" 2>/dev/null || true
  done
  grep " $work" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  rm -rf "$work"
  for b in "${bridges[@]}"; do ip link del "$b" 2>/dev/null || true; done
}
trap cleanup EXIT

driver=$(docker info --format '{{.Driver}}')
start_daemon() { # name, address pool octet
  local d=$work/$1
  mkdir -p "$d"
  echo '{}' > "$d/daemon.json"
  # A bridge of its own: `--bridge=none` would make dockerd delete the machine daemon's docker0.
  ip link show "bpbr$2" >/dev/null 2>&1 || {
    ip link add "bpbr$2" type bridge && ip addr add "192.168.$2.1/24" dev "bpbr$2" && ip link set "bpbr$2" up
  }
  bridges+=("bpbr$2")
  dockerd --config-file "$d/daemon.json" --data-root "$d/data" --exec-root "$d/exec" \
    --pidfile "$d/pid" -H "unix://$d/sock" --bridge="bpbr$2" --iptables=false --ip-masq=false \
    --storage-driver "$driver" --default-address-pool "base=10.$2.0.0/16,size=24" \
    >"$d/log" 2>&1 &
  pids+=($!)
  for _ in $(seq 300); do docker -H "unix://$d/sock" info >/dev/null 2>&1 && return; sleep 0.2; done
  echo "dockerd $1 did not start:" >&2; tail -5 "$d/log" >&2; exit 1
}
start_daemon a 241
start_daemon b 242
A=unix://$work/a/sock
B=unix://$work/b/sock
docker save -o "$work/image.tar" "$IMAGE"
docker -H "$A" load -q -i "$work/image.tar" >/dev/null
docker -H "$B" load -q -i "$work/image.tar" >/dev/null
rm "$work/image.tar"

base=$(docker run --rm --entrypoint cat "$IMAGE" /fixture-shas | sed -n 's/^base=//p')
tasks=$work/tasks
for i in $(seq -w 1 "$N"); do
  mkdir -p "$tasks/t$i"
  cat > "$tasks/t$i/task.toml" <<EOF
instance_id = "t$i"
repo = "fixture/calc"
language = "python"
created_at = 2026-08-01T00:00:00Z
problem_statement = "add() subtracts"
image = "$IMAGE"
base_commit = "$base"
test_cmds = ["cd /testbed && python3 -m unittest -v tests.test_add tests.test_mul > /tmp/unittest.log 2>&1"]
print_cmds = ["cat /tmp/unittest.log"]
log_parser = "unittest"
FAIL_TO_PASS = ["test_add (tests.test_add.T.test_add)"]
PASS_TO_PASS = ["test_mul (tests.test_mul.T.test_mul)"]
EOF
  printf 'diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,5 +1,5 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \n \n def mul(a, b):\n' > "$tasks/t$i/gold.patch"
  printf '%s\n' 'diff --git a/tests/test_add.py b/tests/test_add.py' 'new file mode 100644' '--- /dev/null' '+++ b/tests/test_add.py' '@@ -0,0 +1,8 @@' '+import unittest' '+' '+from calc import add' '+' '+' '+class T(unittest.TestCase):' '+    def test_add(self):' '+        self.assertEqual(add(2, 3), 5)' > "$tasks/t$i/test.patch"
done

manifest() { # dir, [backend] lines, jobs
  mkdir -p "$1"
  ln -sfn "$tasks" "$1/tasks"
  cat > "$1/m.toml" <<EOF
version = 1
name = "bench-pool"

[backend]
kind = "docker"
cpus = 1
memory = "1GiB"
$2

[limits]
jobs = $3
containers = $3

[datasets.fx]
format = "local"
path = "tasks"

[stages.sample]
kind = "sample"
dataset = "fx"
since = 2026-07-01
seed = 1

[stages.gold]
kind = "gold"
needs = ["sample"]
timeout = "120s"
EOF
}

# The same total concurrency everywhere: 2C sandboxes at once.
J=$((2 * C))
one_host="host = \"$A\""
pool_one="hosts = [{ url = \"$A\", containers = $J }]"
pool_two="hosts = [{ url = \"$A\", containers = $C }, { url = \"$B\", containers = $C }]"

run() { # label, backend lines -> seconds
  local d=$work/run-$RANDOM$RANDOM
  manifest "$d" "$2" "$J"
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$d" && NO_COLOR=1 "$BENCH" apply -q m.toml >/dev/null 2>"$d/err") ||
    { echo "apply failed ($1):" >&2; cat "$d/err" >&2; exit 1; }
  t1=$(date +%s.%N)
  rm -rf "$d"
  echo "$t0 $t1" | awk '{printf "%.3f", $2 - $1}'
}

# Warm-up: both daemons build their stripped grading image once (reused by every later run,
# as in real use), outside the measured runs.
run warm-a "hosts = [{ url = \"$A\" }]" >/dev/null
run warm-b "hosts = [{ url = \"$B\" }]" >/dev/null

echo "tasks $N, $J sandboxes at once, profile $profile, $(nproc) cores"
printf '%-6s %-22s %10s %14s %16s\n' round backend seconds grades/min "ms/node vs 1"
for r in $(seq "$ROUNDS"); do
  s1=$(run one "$one_host")
  sp1=$(run pool1 "$pool_one")
  sp2=$(run pool2 "$pool_two")
  for pair in "one host (host =)|$s1" "pool of one host|$sp1" "pool of two hosts|$sp2"; do
    label=${pair%|*}
    s=${pair#*|}
    awk -v r="$r" -v l="$label" -v s="$s" -v n="$N" -v b="$s1" \
      'BEGIN { printf "%-6s %-22s %10.2f %14.1f %12.0f %.2fx\n", r, l, s, n * 60 / s, s * 1000 / n, s / b }'
  done
done
