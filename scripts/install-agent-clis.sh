#!/usr/bin/env bash
# Installs the real agent CLIs the tests drive (tests/real_clis.rs), pinned, from PyPI, each in
# its own venv under $BENCH_AGENTS (default /opt/bench-agents), with its entry point linked into
# $BENCH_AGENTS/bin. Idempotent: a CLI already at its pinned version is kept.
set -euo pipefail
root="${BENCH_AGENTS:-/opt/bench-agents}"
mkdir -p "$root/bin"
install() { # name package==version entry-point
  local name=$1 spec=$2 entry=$3
  local venv="$root/$name"
  if [ -x "$venv/bin/$entry" ] && "$venv/bin/python" -m pip show "${spec%%==*}" 2>/dev/null \
      | grep -qx "Version: ${spec##*==}"; then
    ln -sf "$venv/bin/$entry" "$root/bin/$entry"
    return
  fi
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$spec"
  ln -sf "$venv/bin/$entry" "$root/bin/$entry"
}
install mini mini-swe-agent==2.4.6 mini
install aider aider-chat==0.86.2 aider
echo "agent CLIs in $root/bin: $(ls "$root/bin" | tr '\n' ' ')"
