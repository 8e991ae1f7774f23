#!/bin/sh
# The bare floor of one task of scripts/gen_bench_manifest.py's pipeline, run by
# scripts/bench-fill.sh inside one bubblewrap jail per task: the same workspaces and tests bench
# runs for the task, one after another, with nothing else (no store, no keys, no records, no
# history check, no parse of the log beyond grep).
#
#   fill_task.sh TASK_DIR WORK_DIR TEAMS
#
# Per task: the gold check (a workspace with the gold patch and one with none, each with the
# hidden test patch and the tests run), then per team a solve (a workspace, the agent: the
# oracle applies the gold patch, the others change nothing, and the diff read) and a grade (a
# workspace, the candidate and the test patch applied, the tests run).
set -eu
task=$1
work=$2
teams=$3
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=bench \
    GIT_AUTHOR_EMAIL=bench@localhost GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@localhost \
    GIT_AUTHOR_DATE=2000-01-01T00:00:00Z GIT_COMMITTER_DATE=2000-01-01T00:00:00Z
test_cmd=$(sed -n 's/^test_cmd = "\(.*\)"$/\1/p' "$task/task.toml")

workspace() {
    ws=$(mktemp -d "$work/ws-XXXXXX")
    mkdir "$ws/repo" "$ws/state"
    cd "$ws/repo"
    cp -a "$task/repo/." .
    git init -q -b main && git add -A && git commit -q --no-gpg-sign -m base
}

grade() { # $1: the candidate patch (empty: none); prints 1 when the tests pass
    workspace
    if [ -s "$1" ]; then git apply --reject --whitespace=nowarn "$1" >/dev/null 2>&1 || true; fi
    git apply --whitespace=nowarn "$task/test.patch"
    if sh -c "$test_cmd" > "$ws/state/log" 2>&1 && grep -q '^OK' "$ws/state/log"; then
        echo 1
    else
        echo 0
    fi
    cd "$work" && rm -rf "$ws"
}

solve() { # $1: the team; writes the patch to $2
    workspace
    if [ "$1" = oracle ]; then git apply --whitespace=nowarn "$task/gold.patch"; fi
    git add -A && git diff --cached --binary --no-color HEAD > "$2"
    cd "$work" && rm -rf "$ws"
}

: > "$work/empty.patch"
gold=$(grade "$task/gold.patch")
empty=$(grade "$work/empty.patch")
[ "$gold" = 1 ] && [ "$empty" = 0 ] || { echo "gold check failed: $task" >&2; exit 1; }
for t in $(seq 1 "$teams"); do
    team=$([ "$t" = 1 ] && echo oracle || echo "nop$((t - 1))")
    solve "$team" "$work/$team.patch"
    grade "$work/$team.patch" > "$work/$team.resolved"
done
