#!/usr/bin/env bash
# Pull throughput: `bench pull` against `docker pull` of the same image from the same loopback
# registry (Debian's docker-registry with htpasswd auth, started here on a free port), in
# interleaved rounds (the order alternates), with the image removed before every pull. The image
# is one layer of random bytes (incompressible, shared with nothing on the daemon), so every
# pull downloads and extracts all of it. Prints each round, the medians and the ratio
# bench/docker (target: within 1.2x).
#
#   scripts/bench-pull.sh [ROUNDS=5] [MIB=256]
#   BENCH=path/to/bench scripts/bench-pull.sh     # default: target/release/bench, else debug
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
MIB=${2:-256}
TARGET=${CARGO_TARGET_DIR:-target}
BENCH=${BENCH:-}
if [ -z "$BENCH" ]; then
  if [ -x "$TARGET/release/bench" ]; then BENCH="$TARGET/release/bench"; else BENCH="$TARGET/debug/bench"; fi
fi
[ -x "$BENCH" ] || { echo "no bench binary at $BENCH: cargo build --release" >&2; exit 1; }
for tool in docker-registry htpasswd python3; do
  command -v "$tool" >/dev/null || { echo "$tool is missing (apt-get install docker-registry apache2-utils)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/bench-pull.XXXXXX)
reg_pid=""
cleanup() {
  [ -n "$reg_pid" ] && kill "$reg_pid" 2>/dev/null || true
  docker rmi -f "$IMAGE" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
REG=127.0.0.1:$PORT
IMAGE=$REG/bench-pull:1
htpasswd -Bbn puller pull-pw > "$work/htpasswd"
cat > "$work/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $work/data
http:
  addr: $REG
auth:
  htpasswd:
    realm: bench-pull
    path: $work/htpasswd
EOF
docker-registry serve "$work/config.yml" >"$work/registry.log" 2>&1 &
reg_pid=$!
for _ in $(seq 100); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 1)" 2>/dev/null && break
  sleep 0.1
done
mkdir -p "$work/docker-config"
echo pull-pw | docker --config "$work/docker-config" login -u puller --password-stdin "$REG" >/dev/null 2>&1

echo "image: $MIB MiB of random bytes in one layer, pushed to $REG" >&2
mkdir -p "$work/rootfs"
head -c "$((MIB << 20))" /dev/urandom > "$work/rootfs/blob"
tar -C "$work/rootfs" -c . | docker import - "$IMAGE" >/dev/null
rm -rf "$work/rootfs"
docker --config "$work/docker-config" push "$IMAGE" >/dev/null
docker rmi -f "$IMAGE" >/dev/null

# A manifest whose one task starts from the image (bench pull runs nothing).
mkdir -p "$work/exp/tasks/t"
cat > "$work/exp/m.toml" <<EOF
version = 1
name = "bench-pull"

[backend]
kind = "docker"

[datasets.fx]
format = "local"
path = "tasks"

[stages.sample]
kind = "sample"
dataset = "fx"
since = 2026-07-01
seed = 1
EOF
cat > "$work/exp/tasks/t/task.toml" <<EOF
instance_id = "t"
repo = "fixture/pull"
created_at = 2026-08-01T00:00:00Z
problem_statement = "none"
image = "$IMAGE"
base_commit = "0000000000000000000000000000000000000000"
test_cmds = ["true"]
log_parser = "pytest"
FAIL_TO_PASS = []
PASS_TO_PASS = []
EOF
printf 'diff --git a/x b/x\n' > "$work/exp/tasks/t/gold.patch"
cp "$work/exp/tasks/t/gold.patch" "$work/exp/tasks/t/test.patch"

now() { python3 -c 'import time; print(time.monotonic())'; }
gone() { docker rmi -f "$IMAGE" >/dev/null 2>&1 || true; }
run_docker() {
  gone; local t0; t0=$(now)
  docker --config "$work/docker-config" pull -q "$IMAGE" >/dev/null
  python3 -c "print($(now) - $t0)"
}
run_bench() {
  gone; local t0; t0=$(now)
  DOCKER_CONFIG="$work/docker-config" "$BENCH" --store "$work/store" pull -q "$work/exp/m.toml" >/dev/null
  python3 -c "print($(now) - $t0)"
}
# One warm-up pull of each (page cache, registry), not counted.
run_docker >/dev/null; run_bench >/dev/null
d_times=(); b_times=()
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then d=$(run_docker); b=$(run_bench); else b=$(run_bench); d=$(run_docker); fi
  d_times+=("$d"); b_times+=("$b")
  printf 'round %d: docker pull %.2f s, bench pull %.2f s\n' "$r" "$d" "$b"
done
gone
python3 - "$MIB" "${d_times[*]}" "${b_times[*]}" <<'EOF'
import statistics, sys
mib = int(sys.argv[1])
d = [float(x) for x in sys.argv[2].split()]
b = [float(x) for x in sys.argv[3].split()]
md, mb = statistics.median(d), statistics.median(b)
print(f"median docker pull {md:.2f} s ({mib / md:.0f} MiB/s), bench pull {mb:.2f} s ({mib / mb:.0f} MiB/s)")
print(f"ratio bench/docker {mb / md:.2f}x (target: within 1.2x)")
EOF
