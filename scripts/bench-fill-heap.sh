#!/usr/bin/env bash
# The peak heap of a local fill, and what holds it: `bench apply` of scripts/gen_bench_manifest.py's
# manifest (2 teams) under heaptrack, per size, with a build on the system's malloc (the
# `system-alloc` feature: heaptrack hooks malloc, which mimalloc bypasses). Heap bytes, not RSS:
# the same for the same build and inputs whatever else the machine runs. Prints per size the
# peak heap and its largest holders (by the innermost bench function), then the growth per node.
#
# Usage: scripts/bench-fill-heap.sh [SIZES]    (default "100 300"; each size is N tasks, 5N+2 nodes)
# Env:   BIN   a bench built with `--features system-alloc` to measure instead of building one
#        BASE  a second such build to measure in the same run, interleaved with BIN per size
#              (BASE first), each on its own manifests and stores (BASE's under $WORK/base)
#        WORK  a directory for the manifests, stores and profiles (default a new one in /var/tmp)
#        BENCH_NO_BWRAP=1 passes through (heaptrack follows bench, not its jails' processes)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIZES=${1:-"100 300"}
WORK=${WORK:-$(mktemp -d /var/tmp/bench-fill-heap.XXXXXX)}
command -v heaptrack >/dev/null || { echo "heaptrack is needed (Debian: apt-get install heaptrack)" >&2; exit 1; }
if [ -z "${BIN:-}" ]; then
    (cd "$ROOT" && cargo build -q --release --features system-alloc --bin bench)
    TARGET=$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
    # Copied: a later build of the default features must not replace it mid-measurement.
    BIN="$WORK/bench-system-alloc"
    cp "$TARGET/release/bench" "$BIN"
fi
# One side's profile at one size: its manifest, a fresh store, `bench apply` under heaptrack.
measure() { # BIN DIR N
    local bin=$1 d=$2 n=$3
    [ -f "$d/bench.toml" ] ||
        python3 "$ROOT/scripts/gen_bench_manifest.py" "$d" --tasks "$n" --teams 2 --jobs 2 >/dev/null
    rm -rf "$d/store" "$d/heap.zst"
    (cd "$d" && heaptrack -o "$d/heap" "$bin" apply -q bench.toml --store store >"$d/apply.log" 2>&1)
    heaptrack_print --flamegraph-cost-type peak -F "$d/heap.stacks" "$d/heap.zst" >/dev/null 2>&1
}
for n in $SIZES; do
    if [ -n "${BASE:-}" ]; then
        measure "$BASE" "$WORK/base/n$n" "$n"
    fi
    measure "$BIN" "$WORK/n$n" "$n"
done
summary() { # WORK SIZES...
python3 - "$@" <<'EOF'
import collections, re, sys
work, sizes = sys.argv[1], [int(s) for s in sys.argv[2:]]
def holders(n):
    agg = collections.Counter()
    for line in open(f"{work}/n{n}/heap.stacks"):
        stack, _, cost = line.rstrip().rpartition(" ")
        named = [f for f in stack.split(";") if "bench::" in f]
        agg[re.sub(r"::h[0-9a-f]{16}", "", named[-1]) if named else "(outside bench)"] += int(cost)
    return agg
peaks = {}
for n in sizes:
    h = holders(n)
    peaks[n] = sum(h.values())
    print(f"\n{n} tasks ({5 * n + 2} nodes): peak heap {peaks[n] / 2**20:.2f} MiB; largest holders:")
    for name, b in h.most_common(8):
        print(f"  {b / 1024:9.1f} KiB  {name[:110]}")
for a, b in zip(sizes, sizes[1:]):
    per = (peaks[b] - peaks[a]) / (5 * (b - a))
    print(f"\n{a} -> {b} tasks: peak heap x{peaks[b] / peaks[a]:.2f}, {per / 1024:.2f} KiB per node added")
EOF
}
if [ -n "${BASE:-}" ]; then
    echo "== BASE ($BASE)"
    summary "$WORK/base" $SIZES
    echo
    echo "== BIN ($BIN)"
fi
summary "$WORK" $SIZES
