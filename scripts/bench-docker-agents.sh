#!/usr/bin/env bash
# Reproducible benchmark: what agent teams cost on the docker backend, with the fake `claude`
# CLI (tests/fakes/claude, instant, no model) installed into an agent image through
# `install_files`, so the figures are bench's own overhead: building the agent image once,
# preparing a sandbox per agent run (history strip, fail-closed check, snapshot), collecting
# the diff, removing the container.
#
# Usage: scripts/bench-docker-agents.sh [TASKS]   (default 4; all tasks share one image)
# Prints: the apply with the image build, the same apply with the image reused, and seconds
# per solve for solo (1 sandbox), review (coder + 2 reviewer sandboxes) and best-of-3 (3
# workers + judge).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-4}
cd "$ROOT"
scripts/build-test-images.sh
cargo build --release --quiet --bin bench
BENCH="$ROOT/target/release/bench"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

base=$(docker run --rm --entrypoint cat bench-test-calc:1 /fixture-shas | sed -n 's/^base=//p')
for i in $(seq 1 "$N"); do
  d="$WORK/tasks/t$i"
  mkdir -p "$d"
  cat >"$d/task.toml" <<TOML
instance_id = "t$i"
repo = "fixture/calc"
language = "python"
created_at = 2026-08-01T00:00:00Z
problem_statement = "add() subtracts ($i)"
image = "bench-test-calc:1"
base_commit = "$base"
test_cmds = ["cd /testbed && python3 -m unittest -v tests.test_mul"]
log_parser = "unittest"
FAIL_TO_PASS = []
PASS_TO_PASS = ["test_mul (tests.test_mul.T.test_mul)"]
TOML
  : >"$d/gold.patch"
  : >"$d/test.patch"
done

manifest() { # $1 = team list, $2 = manifest path
  cat >"$2" <<TOML
version = 1
name = "agents-bench"

[backend]
kind = "docker"
cpus = 1
memory = "1GiB"

[limits]
jobs = 1

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
teams = $1
timeout = "5m"

[teams]
solo = "solo:worker=claude@claude-haiku-5-5"
review = "review:coder=claude@claude-haiku-5-5,reviewer=claude@claude-sonnet-5-5,rounds=2"
best = "best:workers=claude@m1+claude@m2+claude@m3,judge=claude@judge"

[harnesses.claude-code]
install_files = ["$ROOT/tests/fakes/claude"]
install = ["install -m 0755 claude /usr/local/bin/claude"]
TOML
}

timed_apply() { # $1 = manifest; prints seconds
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$WORK" && ANTHROPIC_API_KEY=sk-ant-bench-fake "$BENCH" apply -q "$1" >/dev/null 2>"$WORK/err") \
    || { cat "$WORK/err" >&2; exit 1; }
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}

# Agent images of this harness on the task image: removed, so the first apply builds one.
docker images -q bench-agent | sort -u | xargs -r docker image rm -f >/dev/null 2>&1 || true

echo "tasks: $N (one task image, jobs = 1)"
manifest '["solo"]' "$WORK/solo.toml"
with_build=$(timed_apply solo.toml)
rm -rf "$WORK/.bench" "$WORK/reports"
reused=$(timed_apply solo.toml)
echo "solo apply with the agent image build: ${with_build} s; image reused: ${reused} s"
python3 -c "print(f'agent image build (difference): {$with_build - $reused:.2f} s')"
python3 -c "print(f'solo: {$reused / $N:.2f} s per solve (1 sandbox)')"
for team in review best; do
  rm -rf "$WORK/.bench" "$WORK/reports"
  manifest "[\"$team\"]" "$WORK/$team.toml"
  s=$(timed_apply "$team.toml")
  sandboxes=$([ "$team" = review ] && echo 3 || echo 4)
  python3 -c "print(f'$team: {$s / $N:.2f} s per solve ($sandboxes sandboxes, {$s / $N / $sandboxes:.2f} s each)')"
done
