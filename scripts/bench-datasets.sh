#!/usr/bin/env bash
# Reproducible benchmark of dataset loading: generates a 100,000-row SWE-bench-Live
# MultiLang-shaped parquet file (snappy, list columns, with the test fixtures' writer) and times
# reading it into tasks, building the task set (digests + snapshot), and the seeded sample with
# filters. Target: load + filter under 1 s.
#
#   scripts/bench-datasets.sh            # 100000 rows, best of 5
#   ROWS=20000 RUNS=3 scripts/bench-datasets.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROWS=${ROWS:-100000}
RUNS=${RUNS:-5}
cd "$ROOT"
cargo build --release --example datasets_bench >&2
"$ROOT/target/release/examples/datasets_bench" "$ROWS" "$RUNS"
