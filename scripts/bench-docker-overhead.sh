#!/usr/bin/env bash
# Reproducible benchmark: bench's overhead per docker grade against a bare bollard loop and the
# docker CLI doing the same container work (see examples/docker_overhead.rs), then a SWE-bench Pro
# grade against a bare loop running upstream's entry script (examples/pro_overhead.rs). Usage:
#   scripts/bench-docker-overhead.sh [grades per run, default 20] [swe-bench]
# (`swe-bench`: the calc loop runs the swe-bench protocol on the SWE-bench fixture image instead.)
# BENCH_PROFILE=debug uses debug builds (for machines where a release build is not wanted).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-test-images.sh
profile=${BENCH_PROFILE:-release}
flag=--release
[ "$profile" = release ] || flag=
cargo build $flag --quiet --bin bench --example docker_overhead --example pro_overhead
BENCH_BIN=target/$profile/bench target/$profile/examples/docker_overhead "${1:-20}" ${2:+"$2"}
BENCH_BIN=target/$profile/bench target/$profile/examples/pro_overhead "${1:-20}"
