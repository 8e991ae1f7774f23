#!/usr/bin/env bash
# bench's no-op apply side by side with the JSONL resume script (scripts/jsonl_resume.py), in
# one run: interleaved rounds, medians and ratios (scripts/bench_compare.py), per size.
#
#   scripts/bench-noop.sh                          # SIZES="1000 3000 9000" (tasks, x 4 teams)
#   WORK=/work/noop-bench SIZES=1000 scripts/bench-noop.sh   # reuse (or keep) filled stores
#
# Environment (all optional):
#   SIZES    task counts, ascending (default "1000 3000 9000": 9,002, 27,002 and 81,002 nodes
#            with 4 teams)
#   TEAMS    teams (default 4)
#   ROUNDS   interleaved rounds per size (default 7)
#   WORK     directory of the generated manifests and the store (default: a temp dir, removed
#            at the end); a store already filled is reused
#   STORE    the store (default WORK/store). All sizes share it: the generated tasks 1..N are
#            the same for every N, so filling a larger size runs only its new tasks' nodes
#   BIN      the bench binary (default: target/release/bench, built here)
#   OLD      another bench binary to time beside it (e.g. a build of main), optional
#
# The environment passes through to every bench command: `BENCH_NO_BWRAP=1` fills and times the
# store without bubblewrap (keys record the jail mode, so one mode throughout). Filling with bwrap
# is bound by the kernel's mount-namespace locks (about 0.15 s per node here, whatever --jobs),
# without it by the CPU (about 0.09 s per node, 2 cores); the no-op itself never starts a jail
# (with bwrap its one probe, `bwrap ... true`, runs on a thread beside the datasets' stat walk).
#
# Per size: generate the manifest (gen_bench_manifest.py), fill its store with one real
# `bench apply -q` (every node runs, in git workspaces: minutes per 1,000 tasks), write the
# JSONL of the same nodes (jsonl_resume.py fill), let the records age past the index's racy
# window (2 s) and run one no-op apply (it builds the packed action index and writes the no-op
# memo), then time `bench apply -q` (from the memo), the same with BENCH_NO_NOOP_MEMO=1 (the
# full path, no memo read or written) and `jsonl_resume.py resume` (and OLD) in ROUNDS
# interleaved rounds.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SIZES=${SIZES:-1000 3000 9000}
TEAMS=${TEAMS:-4}
ROUNDS=${ROUNDS:-7}

log() { printf '>> %s\n' "$*" >&2; }
die() { printf 'bench-noop: %s\n' "$*" >&2; exit 1; }

if [ -z "${BIN:-}" ]; then
    log "cargo build --release"
    (cd "$ROOT" && cargo build --release -q) || die "build failed"
    BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/bench
fi
[ -x "$BIN" ] || die "no $BIN"

if [ -z "${WORK:-}" ]; then
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-noop.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK"
log "work dir $WORK; load $(cut -d' ' -f1-3 /proc/loadavg)"

for T in $SIZES; do
    D=$WORK/n$T
    M=$D/bench.toml
    S=${STORE:-$WORK/store}
    [ -f "$M" ] || python3 "$ROOT/scripts/gen_bench_manifest.py" "$D" --tasks "$T" --teams "$TEAMS"
    rc=0
    "$BIN" plan "$M" --store "$S" >/dev/null 2>&1 || rc=$?
    if [ "$rc" != 0 ]; then
        log "filling $S (runs every node; minutes)"
        t0=$(date +%s)
        "$BIN" apply -q "$M" --store "$S" >/dev/null
        log "filled in $(($(date +%s) - t0)) s"
    fi
    [ -f "$D/results.jsonl" ] || python3 "$ROOT/scripts/jsonl_resume.py" fill "$D"
    sleep 2.1
    "$BIN" apply -q "$M" --store "$S" >/dev/null
    nodes=$("$BIN" plan "$M" --store "$S" --json 2>/dev/null | python3 -c '
import json, sys
print(sum(s["to_run"] + s["cached"] for s in json.load(sys.stdin)["stages"]))')
    records=$(find "$S/actions" -type f -name '*.json' | wc -l)
    log "$T tasks: $nodes nodes, $records records; timing"
    # bench takes the no-op memo (run/noop.rs); bench-full is the same binary without it.
    cmds=("bench=$BIN apply -q $M --store $S"
        "bench-full=env BENCH_NO_NOOP_MEMO=1 $BIN apply -q $M --store $S"
        "jsonl=python3 $ROOT/scripts/jsonl_resume.py resume $D")
    [ -n "${OLD:-}" ] && cmds+=("old=$OLD apply -q $M --store $S")
    echo
    echo "### $nodes nodes ($T tasks x $TEAMS teams, $records records), $ROUNDS rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    python3 "$ROOT/scripts/bench_compare.py" --rounds "$ROUNDS" --baseline jsonl \
        --out "$D/compare.md" "${cmds[@]}"
done
