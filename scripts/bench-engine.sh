#!/usr/bin/env bash
# Reproducible benchmark of the bench engine (planning, caching, the store).
#
#   scripts/bench-engine.sh
#   TASKS=200 BIG_TASKS=2000 scripts/bench-engine.sh     # smaller sizes
#
# Environment (all optional):
#   TASKS      tasks of the filled manifest (default 1000; ~9 nodes per task with 4 teams)
#   TEAMS      teams (default 4: oracle, nop1, nop2, nop3)
#   BIG_TASKS  tasks of the plan-only manifest (default 11000: ~99,000 nodes)
#   RUNS       timed runs per measure (default 5; the median is reported)
#   JOBS, AGENTS   [limits] jobs / agents of the generated manifests (default: bench's own)
#   KEEP=1     keep the temp dir (its path is printed)
#
# Steps: build; generate TASKS tasks; time `bench plan` on an empty store; fill the store with
# one `bench apply -q` (runs every node for real, in git workspaces); time the no-op
# `bench apply -q` and `bench plan` on the filled store, and their peak RSS; time reading and
# JSON-parsing every record under STORE/actions (the baseline the no-op apply is compared with);
# generate BIG_TASKS tasks and time `bench plan` on an empty store. Prints a Markdown table.
# Timing uses hyperfine if installed (`apt-get install -y hyperfine`), else a loop over RUNS runs.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TASKS=${TASKS:-1000}
TEAMS=${TEAMS:-4}
BIG_TASKS=${BIG_TASKS:-11000}
RUNS=${RUNS:-5}
JOBS=${JOBS:-0}
AGENTS=${AGENTS:-0}

log() { printf '>> %s\n' "$*" >&2; }
die() { printf 'bench-engine: %s\n' "$*" >&2; exit 1; }

for tool in git python3; do
    command -v "$tool" >/dev/null || die "needs $tool"
done

# --- build (retried: the tree may be mid-edit) -----------------------------------------------
log "cargo build --release"
for attempt in 1 2 3; do
    if (cd "$ROOT" && cargo build --release -q); then break; fi
    [ "$attempt" = 3 ] && die "cargo build --release failed"
    log "build failed; retrying in 60 s"
    sleep 60
done
BIN=$ROOT/target/release/bench
[ -x "$BIN" ] || die "no $BIN"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-engine.XXXXXX")
cleanup() {
    if [ "${KEEP:-0}" = 1 ]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
log "work dir $WORK"

HYPERFINE=$(command -v hyperfine || true)
TIME_V=/usr/bin/time
[ -x "$TIME_V" ] || TIME_V=""

# --- helpers -------------------------------------------------------------------------------

# median_time NAME EXPECTED_RC CMD...: prints the median wall time in seconds of RUNS runs of CMD
# (CMD's output discarded); dies if an exit code differs from EXPECTED_RC.
# Set PREPARE to a shell command to run before each run (not timed), e.g. to empty a store.
median_time() {
    local name=$1 want=$2
    shift 2
    if [ -n "$HYPERFINE" ]; then
        local json=$WORK/hf-$name.json args=()
        [ -n "${PREPARE:-}" ] && args+=(--prepare "$PREPARE")
        # -N: no intermediate shell; -i: a non-zero exit (plan's 2) is not a failure here.
        hyperfine -N -i --style none --runs "$RUNS" --warmup "${WARMUP:-1}" "${args[@]}" \
            --export-json "$json" -- "$(printf '%q ' "$@")" >&2
        python3 - "$json" "$want" "$name" <<'EOF'
import json, statistics, sys
r = json.load(open(sys.argv[1]))["results"][0]
codes = set(r.get("exit_codes") or [])
if codes and codes != {int(sys.argv[2])}:
    sys.exit(f"bench-engine: {sys.argv[3]}: exit codes {sorted(codes)}, expected {sys.argv[2]}")
print(f"{statistics.median(r['times']):.3f}")
EOF
    else
        local times=() i t0 t1 rc
        for ((i = 0; i < ${WARMUP:-1}; i++)); do
            [ -n "${PREPARE:-}" ] && sh -c "$PREPARE"
            "$@" >/dev/null 2>&1 || true
        done
        for ((i = 0; i < RUNS; i++)); do
            [ -n "${PREPARE:-}" ] && sh -c "$PREPARE"
            t0=$(date +%s.%N)
            rc=0
            "$@" >/dev/null 2>&1 || rc=$?
            t1=$(date +%s.%N)
            [ "$rc" = "$want" ] || die "$name: exit code $rc, expected $want"
            times+=("$(python3 -c "print($t1 - $t0)")")
        done
        printf '%s\n' "${times[@]}" | python3 -c \
            'import statistics,sys; print(f"{statistics.median(float(l) for l in sys.stdin):.3f}")'
    fi
}

# peak_rss_mib EXPECTED_RC CMD...: peak resident set size of CMD, in MiB.
peak_rss_mib() {
    local want=$1 rc=0 out=$WORK/time-v.txt
    shift
    [ -n "$TIME_V" ] || { echo "n/a"; return; }
    "$TIME_V" -v -o "$out" "$@" >/dev/null 2>&1 || rc=$?
    [ "$rc" = "$want" ] || die "$*: exit code $rc, expected $want"
    awk -F': *' '/Maximum resident set size/ { printf "%.1f\n", $2 / 1024 }' "$out"
}

# wall CMD...: one timed run, seconds.
wall() {
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >&2
    t1=$(date +%s.%N)
    python3 -c "print(f'{$t1 - $t0:.1f}')"
}

gen_args=(--teams "$TEAMS")
[ "$JOBS" != 0 ] && gen_args+=(--jobs "$JOBS")
[ "$AGENTS" != 0 ] && gen_args+=(--agents "$AGENTS")

# --- 1. generate TASKS tasks; plan on an empty store -------------------------------------
SMALL=$WORK/small
STORE=$WORK/store-small
log "generating $TASKS tasks x $TEAMS teams"
python3 "$ROOT/scripts/gen_bench_manifest.py" "$SMALL" --tasks "$TASKS" "${gen_args[@]}"
M=$SMALL/bench.toml

# The generated patches must apply with git, in either order.
first=$(find "$SMALL/tasks" -mindepth 1 -maxdepth 1 -printf "%f\n" | sort | sed -n 1p)
chk=$WORK/apply-check
cp -r "$SMALL/tasks/$first/repo" "$chk"
(cd "$chk" && git init -q && git apply --check "$SMALL/tasks/$first/gold.patch" \
    && git apply "$SMALL/tasks/$first/test.patch" && git apply "$SMALL/tasks/$first/gold.patch") \
    || die "generated patches do not apply"
rm -rf "$chk"

# count_nodes MANIFEST STORE: nodes of the plan (to run + cached, summed over stages).
count_nodes() {
    { "$BIN" plan "$1" --store "$2" --json 2>/dev/null || true; } | python3 -c '
import json, sys
print(sum(s["to_run"] + s["cached"] for s in json.load(sys.stdin)["stages"]))' || echo "?"
}
NODES=$(count_nodes "$M" "$STORE")
log "plan (empty store): $NODES nodes"
[ -d "$STORE" ] && [ -n "$(ls -A "$STORE/actions" 2>/dev/null)" ] && die "plan wrote records"

log "timing bench plan on an empty store"
PREPARE="rm -rf $STORE"
plan_fresh=$(median_time plan-fresh 2 "$BIN" plan "$M" --store "$STORE")
PREPARE=""
rm -rf "$STORE"

# --- 2. fill the store ---------------------------------------------------------------------
log "filling the store: bench apply -q (runs every node for real; minutes)"
fill_s=$(wall "$BIN" apply -q "$M" --store "$STORE")
rc=0
"$BIN" plan "$M" --store "$STORE" >/dev/null 2>&1 || rc=$?
[ "$rc" = 0 ] || die "bench plan exits $rc after the fill (expected 0: nothing to run)"
records=$(find "$STORE/actions" -type f -name '*.json' | wc -l)
records_kib=$(du -sk "$STORE/actions" | cut -f1)
log "store filled in ${fill_s}s: $records action records, ${records_kib} KiB"

# --- 3. no-op apply and plan on the filled store -------------------------------------------
log "timing the no-op bench apply -q and bench plan on the filled store"
noop_apply=$(median_time noop-apply 0 "$BIN" apply -q "$M" --store "$STORE")
plan_full=$(median_time plan-full 0 "$BIN" plan "$M" --store "$STORE")
# The no-op apply must have run nothing.
rc=0
"$BIN" plan "$M" --store "$STORE" >/dev/null 2>&1 || rc=$?
[ "$rc" = 0 ] || die "bench plan exits $rc after the no-op applies"
records_after=$(find "$STORE/actions" -type f -name '*.json' | wc -l)
[ "$records_after" = "$records" ] || die "the no-op apply added records ($records -> $records_after)"

# --- 4. peak memory ------------------------------------------------------------------------
log "peak RSS"
rss_apply=$(peak_rss_mib 0 "$BIN" apply -q "$M" --store "$STORE")
rss_plan=$(peak_rss_mib 0 "$BIN" plan "$M" --store "$STORE")

# --- 5. baseline: read every stored record -------------------------------------------------
log "timing the baseline: read (and JSON-parse) every record under STORE/actions"
READER=$WORK/read_records.py
cat >"$READER" <<'EOF'
import json, os, sys, time
t0 = time.perf_counter()
n = 0
for dirpath, _, files in os.walk(sys.argv[1]):
    for f in files:
        if f.endswith(".json"):
            with open(os.path.join(dirpath, f), "rb") as fh:
                # A record is a checksum header line, then its JSON body.
                data = fh.read()
                json.loads(data[data.index(b"\n") + 1:])
            n += 1
print(f"{time.perf_counter() - t0:.3f} {n}")
EOF
find "$STORE/actions" -type f -name '*.json' >"$WORK/record-list"
CAT=$WORK/cat-records.sh
printf '#!/bin/sh\nxargs cat < %q > /dev/null\n' "$WORK/record-list" >"$CAT"
chmod +x "$CAT"
read_cat=$(median_time read-cat 0 "$CAT")
read_py=$(median_time read-json 0 python3 "$READER" "$STORE/actions")
# The same, timed inside python (no interpreter start-up): median of RUNS runs.
read_py_inproc=$(for ((i = 0; i < RUNS; i++)); do python3 "$READER" "$STORE/actions"; done \
    | python3 -c 'import statistics,sys; print(f"{statistics.median(float(l.split()[0]) for l in sys.stdin):.3f}")')
py_start=$(median_time python-startup 0 python3 -c pass)

# --- 6. plan for ~100,000 nodes -----------------------------------------------------------
BIG=$WORK/big
BIG_STORE=$WORK/store-big
log "generating $BIG_TASKS tasks x $TEAMS teams"
gen_big=$(wall python3 "$ROOT/scripts/gen_bench_manifest.py" "$BIG" --tasks "$BIG_TASKS" "${gen_args[@]}")
BIG_NODES=$(count_nodes "$BIG/bench.toml" "$BIG_STORE")
log "timing bench plan on an empty store, $BIG_NODES nodes"
PREPARE="rm -rf $BIG_STORE"
plan_big=$(median_time plan-big 2 "$BIN" plan "$BIG/bench.toml" --store "$BIG_STORE")
PREPARE=""
rss_big=$(peak_rss_mib 2 "$BIN" plan "$BIG/bench.toml" --store "$BIG_STORE")

# --- report --------------------------------------------------------------------------------
verdict() { # verdict VALUE LIMIT -> "ok" / "MISSED (x.x times the target)"
    python3 -c "import sys; v, l = float(sys.argv[1]), float(sys.argv[2]); \
print('ok' if v <= l else f'**missed** ({v / l:.1f}x the target)')" "$1" "$2"
}
ratio=$(python3 -c "print(f'{$noop_apply / max($read_py, 1e-9):.1f}')")
ratio_cat=$(python3 -c "print(f'{$noop_apply / max($read_cat, 1e-9):.1f}')")
ratio_inproc=$(python3 -c "print(f'{$noop_apply / max($read_py_inproc, 1e-9):.1f}')")
ratio_limit=$(python3 -c "print(3 * $read_py)")
cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo "?")
timer=${HYPERFINE:+hyperfine}
timer=${timer:-date loop}

cat <<EOF

## bench engine benchmark

Machine: $(nproc) CPUs, ${cpu}; $(uname -sr). bench $("$BIN" --version 2>/dev/null | awk '{print $2}').
Sizes: TASKS=$TASKS, TEAMS=$TEAMS ($NODES nodes), BIG_TASKS=$BIG_TASKS ($BIG_NODES nodes).
Times are medians of $RUNS runs ($timer), warm page cache. Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)
(the figures are wall times: other work on the machine inflates them).

| measure | value | target |
|---|---|---|
| plan, empty store, $NODES nodes | ${plan_fresh} s | |
| fill: first \`apply -q\` (runs every node) | ${fill_s} s | |
| store: action records | $records (${records_kib} KiB) | |
| no-op \`apply -q\`, filled store | ${noop_apply} s | < 0.5 s: $(verdict "$noop_apply" 0.5) |
| plan, filled store | ${plan_full} s | |
| baseline: \`cat\` every record | ${read_cat} s | |
| baseline: read + JSON-parse every record (python process) | ${read_py} s (python start-up alone ${py_start} s) | |
| baseline: the same, timed inside python | ${read_py_inproc} s | |
| no-op apply / read+parse baseline (process) | ${ratio}x | <= 3x: $(verdict "$noop_apply" "$ratio_limit") |
| no-op apply / read+parse inside python | ${ratio_inproc}x | (info) |
| no-op apply / \`cat\` baseline | ${ratio_cat}x | (info) |
| peak RSS, no-op apply | ${rss_apply} MiB | |
| peak RSS, plan (filled store) | ${rss_plan} MiB | |
| generate $BIG_TASKS tasks | ${gen_big} s | |
| plan, empty store, $BIG_NODES nodes | ${plan_big} s | < 2 s: $(verdict "$plan_big" 2) |
| peak RSS, plan of $BIG_NODES nodes | ${rss_big} MiB | |
EOF
