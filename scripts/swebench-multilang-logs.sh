#!/usr/bin/env bash
# Regenerates the REAL logs of the upstream-compatible multilingual SWE-bench parsers
# (tests/fixtures/logs/swebench-{googletest,doctest,jq,phpunit,minitest,ruby-unit,
# rspec-transformed-json,cucumber,tap,jest-json}/) by running the small projects of
# scripts/swebench-logs/ with the real frameworks, in the shape each task's spec command asks
# for, then rewrites every expected result with the official parsers
# (scripts/swebench-parser-fixtures.py, needs `pip install swebench==5.0.2`). CI does not run
# this; the files are checked in. Paths of the work directory are rewritten to /testbed.
#
# Needs (Debian bookworm): apt-get install -y g++ cmake libgtest-dev doctest-dev automake
#   autoconf make php-cli phpunit ruby ruby-minitest ruby-test-unit ruby-rspec cucumber jq mocha
#   (mocha runs with NODE_PATH=/usr/share/nodejs).
#
# Usage: scripts/swebench-multilang-logs.sh [WORKDIR]   (default /tmp/bench-swebench-logs)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRC="$ROOT/scripts/swebench-logs"
OUT="$ROOT/tests/fixtures/logs"
WORK=${1:-/tmp/bench-swebench-logs}
rm -rf "$WORK" && mkdir -p "$WORK"
# put PARSER CASE LOG [DIR]: the log, with DIR (the project) rewritten to /testbed.
put() {
  mkdir -p "$OUT/swebench-$1"
  if [ -n "${4:-}" ]; then sed "s#$4#/testbed#g" "$3"; else cat "$3"; fi > "$OUT/swebench-$1/$2.log"
  echo "wrote swebench-$1/$2.log" >&2
}

# googletest under ctest -V (fmt's spec).
d="$WORK/gtest" && mkdir -p "$d" && cp "$SRC/CMakeLists.txt" "$SRC/ranges-test.cc" "$d/"
(cd "$d" && cmake -B build -S . >/dev/null && cmake --build build --target ranges-test >/dev/null)
(cd "$d" && ctest --test-dir build -V -R ranges-test > ../gtest.log 2>&1 || true)
put googletest ctest-verbose "$WORK/gtest.log" "$d"

# doctest's XML reporter (nlohmann/json's spec).
d="$WORK/doctest" && mkdir -p "$d" && cp "$SRC/test-udt.cpp" "$d/t.cpp"
(cd "$d" && g++ -std=c++17 t.cpp -o test-udt_cpp11 && { ./test-udt_cpp11 -s -r=xml > ../doctest.log 2>&1 || true; })
put doctest xml-reporter "$WORK/doctest.log"

# automake's make check (jq's spec).
d="$WORK/jq" && mkdir -p "$d/tests" && cp "$SRC/configure.ac" "$SRC/Makefile.am" "$d/"
printf '#!/bin/sh\necho "Test #1: . at 1"\nexit 0\n' > "$d/tests/jqtest"
printf '#!/bin/sh\necho "*** Expected 2, but got 3"\nexit 1\n' > "$d/tests/mantest"
printf '#!/bin/sh\necho "oniguruma not built"\nexit 77\n' > "$d/tests/onigtest"
printf '#!/bin/sh\nexit 99\n' > "$d/tests/shtest"
printf '#!/bin/sh\nexit 1\n' > "$d/tests/utf8test"
chmod +x "$d"/tests/*
(cd "$d" && autoreconf -fi >/dev/null 2>&1 && ./configure >/dev/null && { make check > ../jq.log 2>&1 || true; })
put jq make-check "$WORK/jq.log" "$d"

# phpunit --testdox (laravel's spec).
d="$WORK/php" && mkdir -p "$d/tests" && cp "$SRC/CalculatorTest.php" "$SRC/DatabaseConnectionsTest.php" "$d/tests/"
(cd "$d" && { phpunit --testdox --colors=never tests > ../php.log 2>&1 || true; })
put phpunit testdox "$WORK/php.log" "$d"

# Ruby: minitest -v (jekyll), test-unit -v (fluentd, faker), rspec + jq (rubocop), cucumber.
d="$WORK/rb" && mkdir -p "$d/spec" "$d/features/step_definitions"
cp "$SRC/test_site.rb" "$SRC/test_faker_internet.rb" "$SRC/rspec-cmd.sh" "$d/"
cp "$SRC/out_of_range_regexp_ref_spec.rb" "$d/spec/"
cp "$SRC/post_data.feature" "$d/features/" && cp "$SRC/post_data_steps.rb" "$d/features/step_definitions/steps.rb"
(cd "$d" && { ruby -I . test_site.rb -v -n "/static files|plain/" --seed 1 > ../minitest.log 2>&1 || true; })
put minitest verbose-shoulda-names "$WORK/minitest.log"
(cd "$d" && { ruby test_faker_internet.rb -v -n '/email/' > ../test-unit.log 2>&1 || true; })
put ruby-unit verbose "$WORK/test-unit.log"
(cd "$d" && { bash -x rspec-cmd.sh > ../rspec.log 2>&1 || true; })
put rspec-transformed-json jq-transform-traced "$WORK/rspec.log"
(cd "$d" && { cucumber --format progress --no-color features/post_data.feature:6 features/post_data.feature:11 features/post_data.feature:16 > ../cucumber.log 2>&1 || true; })
put cucumber progress "$WORK/cucumber.log"

# mocha's TAP reporter (axios's spec); node:test's TAP logs come from tap/.
d="$WORK/js" && mkdir -p "$d/test/unit/adapters" && cp "$SRC/http.js" "$d/test/unit/adapters/"
(cd "$d" && { NODE_PATH=/usr/share/nodejs mocha test/unit/adapters/http.js -R tap -g 'compression' > ../mocha.log 2>&1 || true; })
put tap mocha-tap "$WORK/mocha.log"
cp "$OUT/tap/node-test.log" "$OUT/swebench-tap/node-test.log"
cp "$OUT/tap/node-test-groups.log" "$OUT/swebench-tap/node-test-groups.log"

# A jest --json document through upstream's JEST_JSON_JQ_TRANSFORM (immutable-js 2005).
jq -r '.testResults[].assertionResults[] | "[" + (.status | ascii_upcase) + "] " + ((.ancestorTitles | join(" > ")) + (if .ancestorTitles | length > 0 then " > " else "" end) + .title)' \
  "$SRC/jest.json" > "$WORK/jest-json.log"
put jest-json jq-transform "$WORK/jest-json.log"

python3 "$ROOT/scripts/swebench-parser-fixtures.py" "$OUT"
