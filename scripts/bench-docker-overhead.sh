#!/usr/bin/env bash
# Reproducible benchmark: bench's overhead per docker grade against a bare bollard loop and the
# docker CLI doing the same container work (see examples/docker_overhead.rs). Usage:
#   scripts/bench-docker-overhead.sh [grades per run, default 20]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-test-images.sh
cargo build --release --quiet --bin bench --example docker_overhead
BENCH_BIN=target/release/bench target/release/examples/docker_overhead "${1:-20}"
