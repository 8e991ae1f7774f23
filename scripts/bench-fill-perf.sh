#!/usr/bin/env bash
# Where the CPU per task of bench's main thread goes, and what grows with the fill: `bench
# apply` of scripts/gen_bench_manifest.py's manifest (2 teams, 2 jobs) on a fresh store under
# `perf record --no-inherit`, per size. The main thread runs the dispatcher (the apply is the
# future the runtime blocks on); --no-inherit leaves out every thread and process started
# after it: the runtime's workers and blocking threads (the nodes' work in bench) and the git,
# shells and tests they run. BENCH_TIMINGS=1 prints the whole process's CPU beside it. Prints per size bench's samples per task by function (the innermost bench:: frame
# of each sample, or the innermost frame when no bench:: frame is on the stack), then the
# functions whose samples per task grew most from the first size to the last: a cost that is
# the same per task stays level, work that is O(nodes) per node finished grows.
#
# Usage: scripts/bench-fill-perf.sh [SIZES]    (default "100 300"; each size is N tasks)
# Env:   BIN   the bench binary to profile (required; a debug build has the symbols)
#        WORK  a directory for the manifests, stores and profiles (default a new one in /var/tmp)
#        FREQ  samples per second (default 499)
#        BENCH_NO_BWRAP=1 passes through (no jails)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIZES=${1:-"100 300"}
WORK=${WORK:-$(mktemp -d /var/tmp/bench-fill-perf.XXXXXX)}
FREQ=${FREQ:-499}
: "${BIN:?BIN: the bench binary to profile}"
command -v perf >/dev/null || { echo "perf is needed (Debian: apt-get install linux-perf)" >&2; exit 1; }
mkdir -p "$WORK"
for n in $SIZES; do
    d="$WORK/n$n"
    [ -f "$d/bench.toml" ] ||
        python3 "$ROOT/scripts/gen_bench_manifest.py" "$d" --tasks "$n" --teams 2 --jobs 2 >/dev/null
    rm -rf "$d/store" "$d/reports" "$d/perf.data"
    (cd "$d" && BENCH_TIMINGS=1 perf record -q --no-inherit -g -F "$FREQ" -o "$d/perf.data" \
        "$BIN" apply -q bench.toml --store store >"$d/apply.log" 2>&1)
    grep '^usage:' "$d/apply.log" | sed "s/^/n=$n: /"
    perf script -i "$d/perf.data" -F ip,sym 2>/dev/null >"$d/stacks.txt"
    echo "n=$n load: $(cut -d' ' -f1-3 /proc/loadavg)"
done
python3 - "$WORK" $SIZES <<'EOF'
import collections, re, sys
work, sizes = sys.argv[1], [int(s) for s in sys.argv[2:]]
def per_task(n):
    agg, total = collections.Counter(), 0
    stack = []
    def flush():
        nonlocal total
        if not stack:
            return
        named = [f for f in stack if "bench::" in f]
        name = named[0] if named else stack[0]
        agg[re.sub(r"::h[0-9a-f]{16}", "", name)[:120]] += 1
        total += 1
    for line in open(f"{work}/n{n}/stacks.txt", errors="replace"):
        line = line.strip()
        if not line:
            flush()
            stack = []
            continue
        parts = line.split(None, 1)
        stack.append(parts[1] if len(parts) > 1 else parts[0])
    flush()
    return {k: v / n for k, v in agg.items()}, total / n
tables = {}
for n in sizes:
    t, total = per_task(n)
    tables[n] = t
    print(f"\n{n} tasks: {total:.1f} samples per task; most per task:")
    for name, v in sorted(t.items(), key=lambda kv: -kv[1])[:12]:
        print(f"  {v:8.2f}  {name}")
lo, hi = sizes[0], sizes[-1]
if lo != hi:
    names = set(tables[lo]) | set(tables[hi])
    grow = sorted(names, key=lambda k: -(tables[hi].get(k, 0) - tables[lo].get(k, 0)))
    print(f"\nsamples per task, {lo} -> {hi} tasks, largest growth:")
    for name in grow[:15]:
        a, b = tables[lo].get(name, 0), tables[hi].get(name, 0)
        print(f"  {a:8.2f} -> {b:8.2f}  {name}")
EOF
