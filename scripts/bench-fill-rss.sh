#!/usr/bin/env bash
# The peak RSS of a local fill: `bench apply` of scripts/gen_bench_manifest.py's manifest
# (2 teams, 2 jobs) on a fresh store, under `/usr/bin/time -v`, per size, for one or two builds
# (interleaved per size, BASE first, each on its own manifests and stores). Prints per build
# and size the peak RSS, the wall time and the apply's exit code, then each build's peak RSS at
# the last size over that at the first (issue 50 asks for at most 1.10 from 300 to 1,000 tasks).
#
# Usage: scripts/bench-fill-rss.sh [SIZES]    (default "300 1000"; each size is N tasks)
# Env:   BIN   the bench binary to measure (required)
#        BASE  a second build to measure in the same run, interleaved with BIN per size
#        WORK  a directory for the manifests and stores (default a new one in /var/tmp)
#        BENCH_NO_BWRAP=1 passes through (no jails: faster, the same work in bench itself)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIZES=${1:-"300 1000"}
WORK=${WORK:-$(mktemp -d /var/tmp/bench-fill-rss.XXXXXX)}
: "${BIN:?BIN: the bench binary to measure}"
[ -x /usr/bin/time ] || { echo "GNU time is needed (Debian: apt-get install time)" >&2; exit 1; }
mkdir -p "$WORK"
RESULTS="$WORK/rss.tsv"
: >"$RESULTS"
measure() { # NAME BIN DIR N
    local name=$1 bin=$2 d=$3 n=$4
    [ -f "$d/bench.toml" ] ||
        python3 "$ROOT/scripts/gen_bench_manifest.py" "$d" --tasks "$n" --teams 2 --jobs 2 >/dev/null
    rm -rf "$d/store" "$d/reports"
    local code=0
    (cd "$d" && /usr/bin/time -v -o "$d/time.txt" "$bin" apply -q bench.toml --store store \
        >"$d/apply.log" 2>&1) || code=$?
    local rss wall
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$d/time.txt")
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$d/time.txt")
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$n" "$rss" "$wall" "$code" "$(cut -d' ' -f1-3 /proc/loadavg)" |
        tee -a "$RESULTS"
}
for n in $SIZES; do
    if [ -n "${BASE:-}" ]; then
        measure BASE "$BASE" "$WORK/base/n$n" "$n"
    fi
    measure BIN "$BIN" "$WORK/n$n" "$n"
done
python3 - "$RESULTS" <<'EOF'
import collections, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
by = collections.defaultdict(dict)
print("\nbuild  tasks  peak RSS (MiB)  wall  exit  load (1, 5, 15 min) at the end")
for name, n, rss, wall, code, load in rows:
    by[name][int(n)] = int(rss)
    print(f"{name:5}  {n:>5}  {int(rss) / 1024:14.1f}  {wall}  {code}  {load}")
for name, sizes in by.items():
    lo, hi = min(sizes), max(sizes)
    if lo != hi:
        print(f"{name}: peak RSS at {hi} tasks / at {lo} tasks = {sizes[hi] / sizes[lo]:.3f}")
EOF
