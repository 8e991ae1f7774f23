#!/usr/bin/env bash
# Reproducible benchmark: bench's overhead per docker grade against a bare bollard loop and the
# docker CLI doing the same container work (see examples/docker_overhead.rs). Usage:
#   scripts/bench-docker-overhead.sh [grades per run, default 20] [swe-bench]
# (`swe-bench`: the swe-bench protocol on the SWE-bench fixture image; BENCH_PROFILE=debug uses
# the debug build, e.g. on a shared machine where a release build is not wanted.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-test-images.sh
if [ "${BENCH_PROFILE:-release}" = debug ]; then
  cargo build --quiet --bin bench --example docker_overhead
  BENCH_BIN=target/debug/bench target/debug/examples/docker_overhead "${1:-20}" ${2:+"$2"}
else
  cargo build --release --quiet --bin bench --example docker_overhead
  BENCH_BIN=target/release/bench target/release/examples/docker_overhead "${1:-20}" ${2:+"$2"}
fi
