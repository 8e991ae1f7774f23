#!/usr/bin/env bash
# A local fill by bench against a bare loop doing the same workspaces and tests in one
# bubblewrap jail per task, side by side and interleaved (scripts/bench_fill.py says how).
# Release build.
#
# Usage: scripts/bench-fill.sh [--sizes 100,1000] [--teams 2] [--jobs 2] [--rounds 3]
#                              [--work DIR] [--out FILE] [--base BIN] [--no-loop]
# (--base times another bench build in the same rounds; --no-loop leaves the loop out.)
# Env:   BIN  a bench binary to time instead of this repo's release build
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${BIN:-}" ]; then
    (cd "$ROOT" && cargo build -q --release --bin bench)
    BIN="$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/bench"
fi
exec python3 "$ROOT/scripts/bench_fill.py" --bench "$BIN" "$@"
