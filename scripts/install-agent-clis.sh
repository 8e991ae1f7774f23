#!/usr/bin/env bash
# Installs the real agent CLIs the tests drive (tests/real_clis.rs), pinned, from PyPI, under
# $BENCH_AGENTS (default /opt/bench-agents), each linked into $BENCH_AGENTS/bin:
# - mini-swe-agent and aider, each in its own venv (their entry points);
# - Claude Code and Codex, native executables bundled in PyPI wheels: `claude-agent-sdk` ships
#   `claude_agent_sdk/_bundled/claude`, `openai-codex-cli-bin` ships `codex_cli_bin/bin/codex`;
#   only the wheel is unpacked (`--no-deps`: the SDK's Python side is not used).
# Idempotent: a CLI already at its pinned version is kept.
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
# name package==version path-of-the-executable-in-the-wheel link-name
bundled() {
  local name=$1 spec=$2 exe=$3 link=$4
  local dir="$root/$name"
  if [ -x "$dir/$exe" ] && [ "$(cat "$dir/.pinned" 2>/dev/null)" = "$spec" ]; then
    ln -sf "$dir/$exe" "$root/bin/$link"
    return
  fi
  rm -rf "$dir.new"
  python3 -m pip install -q --disable-pip-version-check --no-deps --no-compile --target "$dir.new" "$spec"
  chmod +x "$dir.new/$exe"
  echo "$spec" > "$dir.new/.pinned"
  rm -rf "$dir"
  mv "$dir.new" "$dir"
  ln -sf "$dir/$exe" "$root/bin/$link"
}
install mini mini-swe-agent==2.4.6 mini
install aider aider-chat==0.86.2 aider
# Pins match the built-in harnesses' `version` (src/harness/builtin.toml).
bundled claude claude-agent-sdk==0.2.189 claude_agent_sdk/_bundled/claude claude
bundled codex openai-codex-cli-bin==0.162.1 codex_cli_bin/bin/codex codex
echo "agent CLIs in $root/bin: $(ls "$root/bin" | tr '\n' ' ')"
