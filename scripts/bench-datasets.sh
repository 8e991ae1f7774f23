#!/usr/bin/env bash
# Dataset loading, whole process, side by side: `bench tasks --json` against a pyarrow script
# and a polars script doing the same work on the same file (load, filter on created_at and
# language, the seeded blake3 sample, the same JSON on stdout), interleaved rounds, medians
# and ratios of wall time and peak RSS (scripts/bench_compare.py). The three outputs are
# checked to be byte-identical first.
#
# The file: ROWS rows shaped like SWE-bench-Live MultiLang (the columns of
# src/datasets/fixtures.rs plus a `language` column over 8 languages, short text fields,
# snappy), written by pyarrow in row groups of ROW_GROUP rows (default 1000, the batch size
# Hugging Face `datasets` writes its parquet files with). pyarrow, polars and blake3 (the
# Python binding of the hash the sample uses) are installed with pip if missing.
#
# With IN_PROCESS=1, then, in process (examples/datasets_bench.rs, which needs the
# dev-dependencies built in release: a long first build): what plan and apply do with the same
# rows (every column into tasks, the task set with every task's digest and the snapshot).
#
#   scripts/bench-datasets.sh                          # 100000 rows, 7 rounds
#   ROWS=20000 ROUNDS=3 ROW_GROUP=100000 scripts/bench-datasets.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROWS=${ROWS:-100000}
ROUNDS=${ROUNDS:-7}
ROW_GROUP=${ROW_GROUP:-1000}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$ROOT"

python3 -c 'import pyarrow, polars, blake3' 2>/dev/null ||
  python3 -m pip install --quiet pyarrow polars blake3 >&2
cargo build --release --bin bench >&2
BENCH="$ROOT/target/release/bench"

mkdir -p "$WORK/data"
python3 - "$WORK/data/test-00000-of-00001.parquet" "$ROWS" "$ROW_GROUP" <<'PY'
import sys
import pyarrow as pa, pyarrow.parquet as pq
path, n, group = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
langs = ["c", "cpp", "cs", "go", "java", "js", "rust", "ts"]
ids = [f"{langs[i % 8]}-org__repo{i % 500}-{i}" for i in range(n)]
repos = [i.rsplit("-", 1)[0].replace("__", "/", 1) for i in ids]
s = lambda f: pa.array([f(i) for i in range(n)], pa.string())
l = lambda f: pa.array([f(i) for i in range(n)], pa.list_(pa.string()))
table = pa.table({
    "repo": pa.array(repos, pa.string()),
    "instance_id": pa.array(ids, pa.string()),
    "base_commit": s(lambda i: "0123456789abcdef0123456789abcdef01234567"),
    "patch": s(lambda i: f"diff --git a/src/lib b/src/lib\n+fix {ids[i]}\n"),
    "test_patch": s(lambda i: "diff --git a/tests/t b/tests/t\n+test\n"),
    "problem_statement": s(lambda i: f"Bug in {repos[i]}"),
    "hints_text": s(lambda i: ""),
    "created_at": s(lambda i: f"{2025 + (i // 7) % 2}-{1 + (i // 3) % 12:02}-{1 + i % 28:02}T{i % 24:02}:00:00Z"),
    "pull_number": s(lambda i: str(i)),
    "issue_numbers": l(lambda i: ["1"]),
    "rebuild_cmds": l(lambda i: ["cd /testbed && make"]),
    "test_cmds": l(lambda i: ["cd /testbed && make test 2>&1 | tee t.log"]),
    "print_cmds": l(lambda i: ["cat /testbed/t.log"]),
    "log_parser": s(lambda i: "def parser(log: str) -> dict[str, str]:\n    return {}\n"),
    "FAIL_TO_PASS": l(lambda i: [f"tests::case_{i}_{k}" for k in range(3)]),
    "PASS_TO_PASS": l(lambda i: ["tests::still_ok", 'tests::"quoted" name']),
    "docker_image": s(lambda i: "starryzhang/sweb.eval.x86_64." + ids[i].replace("__", "_1776_").lower()),
    "language": s(lambda i: langs[i % 8]),
})
pq.write_table(table, path, compression="snappy", row_group_size=group)
PY
cat >"$WORK/m.toml" <<'TOML'
version = 1
name = "bench-datasets"
[datasets.live]
format = "swe-bench-live"
path = "data"
[stages.sample]
kind = "sample"
dataset = "live"
since = 2025-07-01
until = 2026-01-01
languages = ["rust"]
limit = 50
seed = 7
TOML

# The alternatives, as someone would write them: read the columns the listing needs, filter,
# rank the kept ids by blake3(seed as 8 little-endian bytes || id) (bench's documented sample
# algorithm), take the first `limit`, print the same JSON.
cat >"$WORK/common.py" <<'PY'
import json, struct, sys
from blake3 import blake3
SINCE, UNTIL, LANG, LIMIT, SEED = "2025-07-01T00:00:00Z", "2026-01-01T00:00:00Z", "rust", 50, 7
COLUMNS = ["instance_id", "repo", "created_at", "language"]
def emit(rows):
    """rows: (instance_id, repo, created_at, language) tuples that pass the filters."""
    seed = struct.pack("<Q", SEED)
    rows.sort(key=lambda r: (blake3(seed + r[0].encode()).digest(), r[0]))
    rows = rows[:LIMIT]
    by_language, by_month = {}, {}
    for r in rows:
        by_language[r[3] or "(none)"] = by_language.get(r[3] or "(none)", 0) + 1
        by_month[r[2][:7]] = by_month.get(r[2][:7], 0) + 1
    out = [{
        "by_language": dict(sorted(by_language.items())),
        "by_month": dict(sorted(by_month.items())),
        "dataset": "live",
        "stage": "sample",
        "tasks": [{"created_at": c, "instance_id": i, "language": l, "repo": p} for i, p, c, l in rows],
    }]
    sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
PY
cat >"$WORK/tasks_pyarrow.py" <<'PY'
import sys, datetime
import pyarrow.parquet as pq, pyarrow.compute as pc
from common import COLUMNS, SINCE, UNTIL, LANG, emit
t = pq.read_table(sys.argv[1], columns=COLUMNS)
created = pc.strptime(t["created_at"], format="%Y-%m-%dT%H:%M:%SZ", unit="s")
utc = datetime.timezone.utc
since = datetime.datetime.fromisoformat(SINCE.replace("Z", "+00:00")).astimezone(utc).replace(tzinfo=None)
until = datetime.datetime.fromisoformat(UNTIL.replace("Z", "+00:00")).astimezone(utc).replace(tzinfo=None)
mask = pc.and_(pc.and_(pc.greater_equal(created, since), pc.less(created, until)),
               pc.equal(t["language"], LANG))
f = t.filter(mask)
emit(list(zip(*(f[c].to_pylist() for c in COLUMNS))))
PY
cat >"$WORK/tasks_polars.py" <<'PY'
import sys, datetime
import polars as pl
from common import COLUMNS, SINCE, UNTIL, LANG, emit
utc = datetime.timezone.utc
since = datetime.datetime.fromisoformat(SINCE.replace("Z", "+00:00"))
until = datetime.datetime.fromisoformat(UNTIL.replace("Z", "+00:00"))
created = pl.col("created_at").str.to_datetime("%Y-%m-%dT%H:%M:%SZ", time_zone="UTC")
df = (pl.scan_parquet(sys.argv[1]).select(COLUMNS)
      .filter((created >= since) & (created < until) & (pl.col("language") == LANG))
      .collect())
emit(df.rows())
PY

FILE="$WORK/data/test-00000-of-00001.parquet"
echo "file: $ROWS rows, row groups of $ROW_GROUP, $(du -k "$FILE" | cut -f1) KiB" >&2
(cd "$WORK" && "$BENCH" tasks --json m.toml >bench.json)
(cd "$WORK" && python3 tasks_pyarrow.py "$FILE" >pyarrow.json)
(cd "$WORK" && python3 tasks_polars.py "$FILE" >polars.json)
cmp "$WORK/bench.json" "$WORK/pyarrow.json"
cmp "$WORK/bench.json" "$WORK/polars.json"
echo "outputs identical ($(grep -c '"instance_id"' "$WORK/bench.json") tasks listed)" >&2

cd "$WORK"
python3 "$ROOT/scripts/bench_compare.py" --rounds "$ROUNDS" --baseline polars \
  "bench=$BENCH tasks --json m.toml" \
  "pyarrow=python3 tasks_pyarrow.py $FILE" \
  "polars=python3 tasks_polars.py $FILE"

if [ "${IN_PROCESS:-0}" = 1 ]; then
  (cd "$ROOT" && cargo build --release --example datasets_bench >&2)
  echo
  echo "In process, what plan and apply do with the same file (every column, every digest):"
  "$ROOT/target/release/examples/datasets_bench" --file "$FILE" 5
fi
