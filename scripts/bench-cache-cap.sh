#!/usr/bin/env bash
# The memory of a fetch from the shared cache when someone planted a large object where a blob
# was (issue 45): the quickstart served from a directory remote into an empty store, once clean
# (the baseline) and once with PLANTED MiB of zeros at the report's blob, under the default cap
# (the object is streamed to disk, found not to be the blob, and refused) and under a 1 MiB cap
# (refused by its stated size, unread). Peak RSS (GNU time's %M) of each, and the ratio to the
# baseline measured in the same run.
#
#   scripts/bench-cache-cap.sh                 # PLANTED=300, ROUNDS=3
#
# Environment (all optional): PLANTED (MiB, default 300), ROUNDS (default 3), BIN (the bench
# binary; default: target/release/bench, built here).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PLANTED=${PLANTED:-300}
ROUNDS=${ROUNDS:-3}
if [ -z "${BIN:-}" ]; then
    (cd "$ROOT" && cargo build --release -q)
    BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/bench
fi
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (Debian's time)" >&2; exit 1; }

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/remote"
export XDG_CONFIG_HOME="$WORK/config"
"$BIN" cache keygen --out "$WORK/key" > "$WORK/keygen.out"
PUB=$(grep -o 'ed25519:[A-Za-z0-9_-]*' "$WORK/keygen.out" | head -1)

machine() { # DIR [EXTRA]: the quickstart in DIR on the directory remote, trusting PUB
    mkdir -p "$1"
    cp -a "$ROOT/examples/quickstart" "$ROOT/examples/quickstart.toml" "$1/"
    printf '\n[cache]\nremote = "file://%s"\ntrust = ["%s"]\npush = false\n%s' \
        "$WORK/remote" "$PUB" "${2:-}" >> "$1/quickstart.toml"
}

# The filler uploads everything.
machine "$WORK/fill"
sed -i 's/^push = false$/push = true/' "$WORK/fill/quickstart.toml"
(cd "$WORK/fill" && BENCH_CACHE_KEY_FILE="$WORK/key" "$BIN" apply -q quickstart.toml > /dev/null)
BLOB=$(python3 - "$WORK/fill/.bench" <<'EOF'
import glob, json, sys
for f in glob.glob(sys.argv[1] + '/actions/*/*.json'):
    r = json.loads(open(f).read().split('\n', 1)[1])
    if 'report' in r['output']:
        print(r['blobs']['report.md'])
EOF
)
CAS="$WORK/remote/bench-cache-v1/cas/$BLOB"
cp "$CAS" "$WORK/blob.good"

peak() { # NAME EXTRA PLANT: one fetch into an empty store; prints peak RSS in KiB
    rm -rf "$WORK/$1"
    machine "$WORK/$1" "$2"
    if [ "$3" = yes ]; then truncate -s 0 "$CAS"; truncate -s "${PLANTED}M" "$CAS"; else cp "$WORK/blob.good" "$CAS"; fi
    (cd "$WORK/$1" && /usr/bin/time -f '%M' -o "$WORK/$1.rss" "$BIN" apply -q quickstart.toml > /dev/null 2>&1)
    cat "$WORK/$1.rss"
}

printf 'round  clean_kib  planted_default_cap_kib  planted_1MiB_cap_kib  ratio_default  ratio_capped\n'
for r in $(seq "$ROUNDS"); do
    base=$(peak clean "" no)
    streamed=$(peak streamed "" yes)
    capped=$(peak capped 'max_object_size = "1MiB"' yes)
    printf '%5s  %9s  %23s  %20s  %13s  %12s\n' "$r" "$base" "$streamed" "$capped" \
        "$(python3 -c "print(f'{$streamed/$base:.2f}x')")" "$(python3 -c "print(f'{$capped/$base:.2f}x')")"
done
