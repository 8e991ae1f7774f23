#!/usr/bin/env bash
# Regenerates the REAL test-log fixtures in tests/fixtures/logs/ by running small demo
# projects (scripts/logfix/demo/) with the real test runners, capturing the human-readable
# log and, from the runner's own machine-readable output, the expected parser result
# (scripts/logfix/truth.py). CI does not run this; the generated files are checked in.
#
# Needs: python3 (+ venv/pip, reaching PyPI for pytest, pytest-reportlog and Django; without
# Django its fixture is skipped with a message), cargo, go,
# cmake/ctest (>= 3.21 for --output-junit), node (>= 20), npm and script(1) for vitest. On Debian:
#   apt-get install -y golang-go cmake nodejs
# Frameworks whose runner is missing are skipped with a warning.
#
# vitest 1.x and 2.x (the vitest/v1-* and v2-* fixtures) need npm and the npm registry; where
# it cannot be reached the script says so and keeps those fixtures, which were written from
# the reporters' source. Hand-written fixtures (jest, the other vitest cases, maven, dotnet and
# the hand-written cases of other parsers, see tests/fixtures/logs/README.md) are not touched.
#
# Usage: scripts/gen-log-fixtures.sh [WORKDIR]   (default /tmp/bench-logfix; wiped first,
# fixed so that paths inside the logs are stable between regenerations)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
HELP="$ROOT/scripts/logfix"
OUT="$ROOT/tests/fixtures/logs"
WORK=${1:-/tmp/bench-logfix}
TRUTH="python3 $HELP/truth.py"

rm -rf "$WORK"
mkdir -p "$WORK"
cp -r "$HELP/demo/." "$WORK/"

# Pinned runner versions (PyPI); the system runners (node, go, cargo, cmake) are checked below.
PYTEST_VERSION=9.2.0
REPORTLOG_VERSION=1.0.0
DJANGO_VERSION=5.2.19
NODE_MAJOR=20

have() { command -v "$1" >/dev/null 2>&1; }
# ONLY="pytest unittest django cargo go ctest node vitest junit" (default: all) limits the run.
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }
say() { printf '== %s\n' "$*" >&2; }
# write FRAMEWORK CASE LOGFILE EXPECTED_JSON_FILE
put() {
  mkdir -p "$OUT/$1"
  cp "$3" "$OUT/$1/$2.log"
  cp "$4" "$OUT/$1/$2.expected.json"
  say "wrote $1/$2 ($(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$4") tests)"
}

# ---------------------------------------------------------------- pytest
if want pytest; then
  say pytest
  python3 -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install -q "pytest==$PYTEST_VERSION" "pytest-reportlog==$REPORTLOG_VERSION"
  (
    cd "$WORK/pytest"
    # -v and -rA together: progress lines and the short summary; the report log and the
    # JUnit XML come from the same run.
    "$WORK/venv/bin/python" -m pytest -v -rA -p no:cacheprovider --continue-on-collection-errors \
      --report-log="$WORK/pytest.reportlog.jsonl" --junitxml="$WORK/pytest.junit.xml" \
      tests >"$WORK/pytest-v-rA.log" 2>&1 || true
    # -rA only, as SWE-bench-Live runs it (skipped tests cannot be named from this log).
    "$WORK/venv/bin/python" -m pytest -rA -p no:cacheprovider --continue-on-collection-errors \
      --report-log="$WORK/pytest-rA.reportlog.jsonl" tests >"$WORK/pytest-rA.log" 2>&1 || true
  )
  $TRUTH pytest-reportlog "$WORK/pytest.reportlog.jsonl" live >"$WORK/pytest-live.json"
  $TRUTH pytest-reportlog "$WORK/pytest.reportlog.jsonl" swebench >"$WORK/pytest-swebench.json"
  put pytest verbose-and-summary "$WORK/pytest-v-rA.log" "$WORK/pytest-live.json"
  put pytest-swebench verbose-and-summary "$WORK/pytest-v-rA.log" "$WORK/pytest-swebench.json"
  # Summary-only log: SKIPPED lines carry no test id, so skipped tests are absent.
  $TRUTH pytest-reportlog "$WORK/pytest-rA.reportlog.jsonl" live summary-only >"$WORK/pytest-rA-live.json"
  $TRUTH pytest-reportlog "$WORK/pytest-rA.reportlog.jsonl" swebench summary-only >"$WORK/pytest-rA-swebench.json"
  put pytest summary-only "$WORK/pytest-rA.log" "$WORK/pytest-rA-live.json"
  put pytest-swebench summary-only "$WORK/pytest-rA.log" "$WORK/pytest-rA-swebench.json"
  # -v -s -rA: captured output off, so each test's output comes between its id and its status
  # (a status alone on a later line, or glued to output without a newline, which only the
  # summary's `SKIPPED [N] file:line` tells).
  (
    cd "$WORK/pytest-s"
    "$WORK/venv/bin/python" -m pytest -v -s -rA -p no:cacheprovider \
      --report-log="$WORK/pytest-s.reportlog.jsonl" tests >"$WORK/pytest-s.log" 2>&1 || true
  )
  $TRUTH pytest-reportlog "$WORK/pytest-s.reportlog.jsonl" live >"$WORK/pytest-s-live.json"
  $TRUTH pytest-reportlog "$WORK/pytest-s.reportlog.jsonl" swebench >"$WORK/pytest-s-swebench.json"
  put pytest capture-off "$WORK/pytest-s.log" "$WORK/pytest-s-live.json"
  put pytest-swebench capture-off "$WORK/pytest-s.log" "$WORK/pytest-s-swebench.json"
fi

# ---------------------------------------------------------------- unittest
if want unittest; then
  say unittest
  (
    cd "$WORK/unittest"
    python3 -u "$HELP/unittest_runner.py" . "$WORK/unittest.results.jsonl" >"$WORK/unittest.log" 2>&1 || true
  )
  $TRUTH unittest "$WORK/unittest.results.jsonl" >"$WORK/unittest.json"
  put unittest verbose "$WORK/unittest.log" "$WORK/unittest.json"
fi

# ---------------------------------------------------------------- Django's runner (unittest)
# `manage.py test --verbosity 2 --parallel 1`, as SWE-bench runs Django's runtests.py; the
# project's TEST_RUNNER is Django's DiscoverRunner with the recording result class.
if want django; then
  say django
  if "$WORK/venv/bin/pip" install -q "django==$DJANGO_VERSION"; then
    (
      cd "$WORK/django"
      BENCH_LOGFIX_HELP="$HELP" BENCH_LOGFIX_RESULTS="$WORK/django.results.jsonl" \
        "$WORK/venv/bin/python" -u manage.py test --verbosity 2 --parallel 1 >"$WORK/django.log" 2>&1 || true
    )
    $TRUTH unittest "$WORK/django.results.jsonl" >"$WORK/django.json"
    put unittest django-verbosity-2 "$WORK/django.log" "$WORK/django.json"
  else
    say "django could not be installed from PyPI: skipping (the committed fixture stays)"
  fi
fi

# ---------------------------------------------------------------- cargo
if want cargo && have cargo; then
  say cargo
  (
    cd "$WORK/cargo"
    export CARGO_TARGET_DIR="$WORK/cargo/target" CARGO_TERM_COLOR=never RUSTC_BOOTSTRAP=1
    cargo build --tests -q 2>/dev/null || true
    cargo test --no-fail-fast >"$WORK/cargo-human.log" 2>&1 || true
    cargo test --no-fail-fast -- -Z unstable-options --format json >"$WORK/cargo-json.log" 2>&1 || true
    cd "$WORK/cargo-crash"
    cargo test --no-fail-fast -- -Z unstable-options --format json >"$WORK/cargo-crash.log" 2>&1 || true
  )
  # Same build, same suites: the JSON run is the ground truth for the human run.
  $TRUTH cargo-json "$WORK/cargo-json.log" >"$WORK/cargo.json"
  $TRUTH cargo-json "$WORK/cargo-crash.log" >"$WORK/cargo-crash.json"
  put cargo workspace "$WORK/cargo-human.log" "$WORK/cargo.json"
  put cargo-json workspace "$WORK/cargo-json.log" "$WORK/cargo.json"
  put cargo-json crash "$WORK/cargo-crash.log" "$WORK/cargo-crash.json"
else
  say "cargo not found: skipping"
fi

# ---------------------------------------------------------------- go
if want go && have go; then
  say go
  (
    cd "$WORK/go"
    export GOFLAGS=-count=1 GOCACHE="$WORK/go-cache" GOPATH="$WORK/gopath" GOPROXY=off
    go test -v ./... >"$WORK/go-v.log" 2>&1 || true
    go test -json ./... >"$WORK/go-json.log" 2>"$WORK/go-json.stderr" || true
    go list ./... >"$WORK/go-packages.txt"
  )
  # `go test -v` prints each package's buffered output in package order, while `-json`
  # streams events as they happen: replay the events in package order for the -v log.
  $TRUTH go-json "$WORK/go-json.log" "$WORK/go-packages.txt" >"$WORK/go-v.json"
  $TRUTH go-json "$WORK/go-json.log" >"$WORK/go-json.json"
  put go verbose "$WORK/go-v.log" "$WORK/go-v.json"
  put go-json events "$WORK/go-json.log" "$WORK/go-json.json"
else
  say "go not found: skipping"
fi

# ---------------------------------------------------------------- ctest
if want ctest && have cmake && have ctest; then
  say ctest
  (
    cd "$WORK/ctest"
    cmake -S . -B build >/dev/null
    cd build
    ctest --output-on-failure --output-junit "$WORK/ctest.junit.xml" >"$WORK/ctest.log" 2>&1 || true
  )
  $TRUTH ctest-junit "$WORK/ctest.junit.xml" >"$WORK/ctest.json"
  put ctest output-on-failure "$WORK/ctest.log" "$WORK/ctest.json"
else
  say "cmake/ctest not found: skipping"
fi

# ---------------------------------------------------------------- node:test (TAP)
if ! want node; then
  :
elif have node && [ "$(node -p 'process.versions.node.split(".")[0]')" != "$NODE_MAJOR" ]; then
  say "node $(node --version) is not Node $NODE_MAJOR: skipping node:test (the committed fixtures stay)"
elif have node; then
  say tap
  (
    cd "$WORK/tap"
    node --test --test-reporter=tap --test-reporter-destination=stdout \
      --test-reporter="$HELP/reporter.mjs" --test-reporter-destination="$WORK/node.events.jsonl" \
      --test-reporter=junit --test-reporter-destination="$WORK/node.junit.xml" \
      math.test.mjs strings.test.mjs >"$WORK/tap.log" 2>&1 || true
  )
  $TRUTH node "$WORK/node.events.jsonl" leaf >"$WORK/tap.json"
  put tap node-test "$WORK/tap.log" "$WORK/tap.json"

  # The spec reporter (node's default on a terminal) to stdout and TAP to a file, in one run
  # with more nesting: describe blocks, a parent test that fails by itself, a failing `after`
  # hook, a skipped suite, a passing todo.
  say node-test
  (
    cd "$WORK/tap"
    node --test --test-reporter=spec --test-reporter-destination=stdout \
      --test-reporter=tap --test-reporter-destination="$WORK/node-groups.tap.log" \
      --test-reporter="$HELP/reporter.mjs" --test-reporter-destination="$WORK/node-groups.events.jsonl" \
      math.test.mjs strings.test.mjs groups.test.mjs >"$WORK/node-spec.log" 2>&1 || true
  )
  $TRUTH node "$WORK/node-groups.events.jsonl" path >"$WORK/node-path.json"
  $TRUTH node "$WORK/node-groups.events.jsonl" leaf >"$WORK/node-leaf.json"
  put node-test spec "$WORK/node-spec.log" "$WORK/node-path.json"
  put node-test tap "$WORK/node-groups.tap.log" "$WORK/node-path.json"
  put tap node-test-groups "$WORK/node-groups.tap.log" "$WORK/node-leaf.json"
else
  say "node not found: skipping"
fi

# ---------------------------------------------------------------- vitest 1.x and 2.x
# `vitest run --reporter=verbose` of the pinned versions on demo/vitest, twice each: stdout a
# file (the flat lines; vitest prints none for a test without a result, such as a todo) and
# under script(1) (a terminal: the redrawn tree, then the final tree that names every test).
# The truth is vitest-reporter.mjs, a second reporter of the same run. vitest comes from npm
# only: Debian and PyPI do not package it. Without npm or the registry the committed
# vitest/v1-* and v2-* fixtures stay; they were written from the reporters' source of the
# same tags (tests/fixtures/logs/README.md).
VITEST_VERSIONS="1.6.1 2.1.8"
vitest_run() { # VERSION MODE LOG
  local cmd=(./node_modules/.bin/vitest run --reporter=verbose --reporter="$HELP/vitest-reporter.mjs")
  if [ "$2" = pipe ]; then
    env -u CI BENCH_VITEST_RESULTS="$WORK/vitest-$1-$2.jsonl" "${cmd[@]}" >"$3" 2>&1 || true
  else
    env -u CI TERM=xterm-256color BENCH_VITEST_RESULTS="$WORK/vitest-$1-$2.jsonl" \
      script -qefc "${cmd[*]}" "$3" >/dev/null 2>&1 || true
  fi
}
if ! want vitest; then
  :
elif ! have npm || ! have script; then
  say "vitest: npm or script(1) not found: the committed vitest/v1-* and v2-* fixtures (written from the reporters' source of vitest $VITEST_VERSIONS) stay"
else
  for v in $VITEST_VERSIONS; do
    say "vitest $v"
    rm -rf "$WORK/vitest/node_modules" "$WORK/vitest/package-lock.json"
    if ! (cd "$WORK/vitest" && npm install --no-save --no-audit --no-fund --silent --fetch-retries=1 "vitest@$v" >/dev/null 2>&1); then
      say "vitest $v cannot be installed: npm install failed (npm registry unreachable? Debian and PyPI do not package vitest): the committed vitest/v${v%%.*}-verbose-* fixtures, written from vitest $v's reporter source, stay"
      continue
    fi
    for mode in pipe tty; do
      (cd "$WORK/vitest" && vitest_run "$v" "$mode" "$WORK/vitest-$v-$mode.log")
      $TRUTH vitest "$WORK/vitest-$v-$mode.jsonl" "$mode" >"$WORK/vitest-$v-$mode.json"
      put vitest "v${v%%.*}-verbose-$mode" "$WORK/vitest-$v-$mode.log" "$WORK/vitest-$v-$mode.json"
    done
  done
fi

# ---------------------------------------------------------------- junit-xml
# Several real reports concatenated as `cat a.xml b.xml` would print them, with shell noise.
# Without all three reports of this run (a runner missing here, or ONLY), the committed log
# is kept and its expected result derived again from the XML documents it holds.
if want junit; then
  say junit-xml
  reports=()
  for f in "$WORK/pytest.junit.xml" "$WORK/ctest.junit.xml" "$WORK/node.junit.xml"; do
    [ -f "$f" ] && reports+=("$f")
  done
  if [ "${#reports[@]}" = 3 ]; then
    {
      echo "+ cat reports/*.xml"
      for f in "${reports[@]}"; do cat "$f"; echo; done
      echo "+ echo done"
      echo "done"
    } >"$WORK/junit.log"
    $TRUTH junit "${reports[@]}" >"$WORK/junit.json"
  else
    say "junit-xml: not every report of this run exists: the committed log is kept"
    cp "$OUT/junit-xml/concatenated.log" "$WORK/junit.log"
    $TRUTH junit-log "$WORK/junit.log" >"$WORK/junit.json"
  fi
  put junit-xml concatenated "$WORK/junit.log" "$WORK/junit.json"
fi

say "done; review with: git -C $ROOT status tests/fixtures/logs"
