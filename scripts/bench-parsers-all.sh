#!/usr/bin/env bash
# Times every built-in log parser against `grep -c -E` of status words over the same log, at
# 1, 10 and 50 MB (scripts/bench_parsers_all.py says how the logs are made and measured).
# Release build.
#
# Usage: scripts/bench-parsers-all.sh [--base BIN] [--sizes 1,10,50] [--rounds 3] [--only NAME,..] [--out FILE]
# Env:   BENCH_CRATE  crate to build `bench` from (default: this repo)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CRATE=${BENCH_CRATE:-$ROOT}
(cd "$CRATE" && cargo build -q --release --bin bench)
TARGET="$(cd "$CRATE" && cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release"
exec python3 "$ROOT/scripts/bench_parsers_all.py" --bench "$TARGET/bench" "$@"
