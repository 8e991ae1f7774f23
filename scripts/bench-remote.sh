#!/usr/bin/env bash
# The remote cache's cost: a no-op apply served entirely from the remote (an empty local store:
# every record and blob downloaded, verified and committed, then the report written), against a
# bulk download of the same bucket with `aws s3 sync` (no verification, no store), in one run:
# interleaved rounds, medians and ratios (scripts/bench_compare.py). The remote is moto's S3
# server on loopback, as in tests/remote_cache.rs.
#
#   scripts/bench-remote.sh                       # TASKS=200 (1,802 nodes with 4 teams)
#   TASKS=1000 WORK=/work/remote-bench scripts/bench-remote.sh   # 9,002 nodes; keeps the fill
#
# Environment (all optional):
#   TASKS    generated tasks (default 200); nodes = 1 + TASKS x (1 + 2 x TEAMS) + 1
#   TEAMS    teams (default 4)
#   ROUNDS   interleaved rounds (default 5)
#   WORK     directory of the manifest, the filled store, the key and moto's data (default: a
#            temp dir, removed at the end); a filled store and bucket there are reused
#   BIN      the bench binary (default: target/release/bench, built here)
#   BASE     another bench binary (an earlier commit's) timed in the same rounds as
#            `remote-apply-base`, from its own empty store
#   MOTO     moto's venv (default /opt/bench-moto; created with moto[server], pinned)
#   AWSCLI   the aws CLI's venv (default /opt/bench-awscli; created with awscli, pinned)
#   CPU      1 (default) to end with one more run of each command (remote-apply, its base, the
#            sync) timed for CPU: its own user and system time and moto's CPU meanwhile (read
#            from /proc), and the apply's phases (BENCH_TIMINGS: when the report's record was
#            served and when its files were written); 0 to skip
#
# Filling runs every node once (`bench apply`, with BENCH_NO_BWRAP=1 like bench-noop.sh allows:
# about 0.09 s per node on 2 cores) and uploads them (write-behind); `bench cache push` then
# checks every entry is there. Each timed run starts from an empty directory.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TASKS=${TASKS:-200}
TEAMS=${TEAMS:-4}
ROUNDS=${ROUNDS:-5}
MOTO=${MOTO:-/opt/bench-moto}
AWSCLI=${AWSCLI:-/opt/bench-awscli}

log() { printf '>> %s\n' "$*" >&2; }
die() { printf 'bench-remote: %s\n' "$*" >&2; exit 1; }

if [ -z "${BIN:-}" ]; then
    log "cargo build --release"
    (cd "$ROOT" && cargo build --release -q) || die "build failed"
    BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/bench
fi
[ -x "$BIN" ] || die "no $BIN"

# moto's server and the aws CLI, pinned, each in its venv (idempotent).
if ! "$MOTO/bin/python" -m pip show moto 2>/dev/null | grep -qx "Version: 5.1.18"; then
    python3 -m venv "$MOTO"
    "$MOTO/bin/python" -m pip install -q --disable-pip-version-check 'moto[server]==5.1.18'
fi
# awscli pins its own botocore, which moto's boto3 does not accept: a venv of its own.
if ! "$AWSCLI/bin/python" -m pip show awscli 2>/dev/null | grep -qx "Version: 1.45.11"; then
    python3 -m venv "$AWSCLI"
    "$AWSCLI/bin/python" -m pip install -q --disable-pip-version-check 'awscli==1.45.11'
fi

if [ -z "${WORK:-}" ]; then
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-remote.XXXXXX")
    CLEAN_WORK=1
fi
mkdir -p "$WORK"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# moto keeps its buckets in memory: the fill is redone per run unless the bucket is reloaded,
# so the filled local store is kept in WORK and pushed again (`bench cache push`).
"$MOTO/bin/moto_server" -H 127.0.0.1 -p "$PORT" >"$WORK/moto.log" 2>&1 &
MOTO_PID=$!
cleanup() {
    kill "$MOTO_PID" 2>/dev/null || true
    wait "$MOTO_PID" 2>/dev/null || true
    [ -n "${CLEAN_WORK:-}" ] && rm -rf "$WORK"
    return 0
}
trap cleanup EXIT
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_DEFAULT_REGION=us-east-1
export AWS_ENDPOINT="http://127.0.0.1:$PORT" AWS_ALLOW_HTTP=true BENCH_NO_BWRAP=1
export XDG_CONFIG_HOME="$WORK/config" BENCH_CACHE_KEY_FILE="$WORK/signing.key"
# The generated agents run python3: the system's, not a pyenv shim (a shell script per call).
if [ -x /usr/bin/python3 ]; then
    mkdir -p "$WORK/bin" && ln -sf /usr/bin/python3 "$WORK/bin/python3"
    export PATH="$WORK/bin:$PATH"
fi
for _ in $(seq 100); do
    curl -fs -X PUT "$AWS_ENDPOINT/team-cache" >/dev/null 2>&1 && break
    sleep 0.2
done
log "work dir $WORK; moto on port $PORT; load $(cut -d' ' -f1-3 /proc/loadavg)"

D=$WORK/n$TASKS
M=$D/bench.toml
S=$WORK/filled
[ -f "$WORK/signing.key" ] || "$BIN" cache keygen --out "$WORK/signing.key" >"$WORK/signing.pub"
if [ ! -f "$M" ]; then
    python3 "$ROOT/scripts/gen_bench_manifest.py" "$D" --tasks "$TASKS" --teams "$TEAMS"
    printf '\n[cache]\nremote = "s3://team-cache/bench"\ntrust = ["%s"]\n' \
        "$(cat "$WORK/signing.pub")" >>"$M"
fi
if [ ! -f "$S/.filled" ]; then
    log "filling $S (runs every node; minutes) and uploading it as it goes"
    t0=$(date +%s)
    "$BIN" apply -q "$M" --store "$S" >/dev/null
    log "filled in $(($(date +%s) - t0)) s"
    touch "$S/.filled"
fi
# A kept store (moto's bucket lives in its memory) is uploaded again; after a fill this finds
# every entry there already.
t0=$(date +%s)
"$BIN" cache push "$M" --store "$S"
log "pushed in $(($(date +%s) - t0)) s"
nodes=$("$BIN" plan "$M" --store "$S" --json 2>/dev/null | python3 -c '
import json, sys
print(sum(s["to_run"] + s["cached"] for s in json.load(sys.stdin)["stages"]))')
records=$(find "$S/actions" -type f -name '*.json' | wc -l)
"$BIN" cache status "$M" >&2
sizes=$("$AWSCLI/bin/aws" --endpoint-url "$AWS_ENDPOINT" s3 ls --recursive --summarize \
    s3://team-cache/bench/ | tail -2 | tr '\n' ' ')
log "$nodes nodes, $records records; bucket: $sizes"

# Each run starts from nothing: the remote apply from an empty store (and no report), the
# sync into an empty directory. Removing the last run's output is done before each run and not
# timed (`--before`), and the file system's dirty pages are written out then too: deleting
# synced files can cost seconds (on one machine, mounted with `discard`, about 3 ms a file
# against 0.4 ms unsynced), and the apply's output (its store and the report, every file
# synced) is more than twice the sync's, so timing the removal charged the apply for the last
# run's clean-up.
E=$WORK/empty
cat >"$WORK/clean-apply.sh" <<SH
#!/bin/sh
rm -rf "$E" "$D/reports" && exec sync -f "$WORK"
SH
cat >"$WORK/clean-sync.sh" <<SH
#!/bin/sh
rm -rf "$WORK/sync" && exec sync -f "$WORK"
SH
cat >"$WORK/remote-apply.sh" <<SH
#!/bin/sh
exec "$BIN" apply -q "$M" --store "$E"
SH
cat >"$WORK/sync.sh" <<SH
#!/bin/sh
exec "$AWSCLI/bin/aws" --endpoint-url "$AWS_ENDPOINT" s3 sync --quiet s3://team-cache/bench "$WORK/sync"
SH
chmod +x "$WORK/clean-apply.sh" "$WORK/clean-sync.sh" "$WORK/remote-apply.sh" "$WORK/sync.sh"
base=()
if [ -n "${BASE:-}" ]; then
    [ -x "$BASE" ] || die "no $BASE"
    cat >"$WORK/remote-apply-base.sh" <<SH
#!/bin/sh
exec "$BASE" apply -q "$M" --store "$E"
SH
    chmod +x "$WORK/remote-apply-base.sh"
    base=(--before "remote-apply-base=$WORK/clean-apply.sh"
        "remote-apply-base=$WORK/remote-apply-base.sh")
fi
# A check that the remote apply really runs nothing (every node cached, the report written).
"$WORK/clean-apply.sh"
"$WORK/remote-apply.sh" >/dev/null
"$BIN" plan "$M" --store "$E" | grep -q "nothing to run: everything is in the store" ||
    die "the remote apply left work"
[ "$(find "$E/actions" -type f -name '*.json' | wc -l)" = "$records" ] ||
    die "the remote apply did not fetch every record"
echo
echo "### $nodes nodes ($TASKS tasks x $TEAMS teams, $records records) from moto on loopback, $ROUNDS rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
python3 "$ROOT/scripts/bench_compare.py" --rounds "$ROUNDS" --baseline sync \
    --out "$WORK/compare.md" --before "remote-apply=$WORK/clean-apply.sh" \
    --before "sync=$WORK/clean-sync.sh" ${base[@]+"${base[@]:0:2}"} \
    "remote-apply=$WORK/remote-apply.sh" ${base[@]+"${base[@]:2}"} "sync=$WORK/sync.sh"

# Where the time goes: on a loaded machine every run is bound by the CPU it gets, so each
# command's own CPU and the server's (moto) say more than wall times alone.
[ "${CPU:-1}" = 1 ] || exit 0
moto_cpu_ms() { awk '{print ($14 + $15) * 10}' "/proc/$MOTO_PID/stat"; }
cpu_run() {
    local name=$1 script=$2 clean=$3 before after
    "$clean"
    before=$(moto_cpu_ms)
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/cpu.txt" "$script" >/dev/null 2>"$WORK/cpu.err"
    after=$(moto_cpu_ms)
    read -r wall user sys rss <"$WORK/cpu.txt"
    printf -- '- %s: %s s wall, its CPU %s s user + %s s system, moto %s s CPU, peak RSS %s MiB; load %s\n' \
        "$name" "$wall" "$user" "$sys" "$(awk -v m=$((after - before)) 'BEGIN{printf "%.2f", m/1000}')" \
        "$((rss / 1024))" "$(cut -d' ' -f1 /proc/loadavg)"
}
echo
echo "CPU of one more run of each (after the rounds):"
echo
cpu_run remote-apply "$WORK/remote-apply.sh" "$WORK/clean-apply.sh"
[ -n "${BASE:-}" ] && cpu_run remote-apply-base "$WORK/remote-apply-base.sh" "$WORK/clean-apply.sh"
cpu_run sync "$WORK/sync.sh" "$WORK/clean-sync.sh"
echo
echo "The apply's phases (BENCH_TIMINGS=1, one more run): the report's record served, its files written:"
"$WORK/clean-apply.sh"
BENCH_TIMINGS=1 "$WORK/remote-apply.sh" 2>&1 >/dev/null |
    grep -E 'timing: .*(nodes noted|nodes admitted|returned)|^usage' | sed 's/^/    /' || true
