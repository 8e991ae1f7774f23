#!/usr/bin/env bash
# Times `bench view` (issue 29) on a synthetic store of 1,000 tasks x 4 teams (one grading log of
# 50 MB) against an 8 x 3 baseline written the same way in the same run: the viewer's start, the
# experiment page until interactive (the page's own clock, headless Chromium through
# chromedriver), a filter to one team, and the 50 MB log's first page against reading the whole
# blob. Prints markdown rows for BENCHMARKS.md.
#   scripts/bench-view.sh [tasks] [teams]      (PROFILE=release for a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${PROFILE:-dev}"
flag=(); dir=debug
if [ "$profile" = release ]; then flag=(--release); dir=release; fi
command -v chromium >/dev/null && command -v chromedriver >/dev/null ||
  { echo "needs chromium and chromedriver (apt-get install chromium chromium-driver)" >&2; exit 1; }
cargo build -q "${flag[@]}" --bin bench --example view_bench
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"target/$dir/examples/view_bench" "target/$dir/bench" "$work" "${1:-1000}" "${2:-4}"
