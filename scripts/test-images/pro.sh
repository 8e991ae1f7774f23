#!/usr/bin/env bash
# workdir: /app
# Fixture task image for the swe-bench-pro protocol: a tiny Python project at /app (where
# SWE-bench Pro images keep their repository), checked out at its base commit, whose history
# holds two fixes (task A: `add`, with a new test file; task B: `greet`, with an edited test
# file), as real SWE-bench Pro images do: their before_repo_set_cmd checks the hidden tests out
# of the fix commit. `python` is python3 (upstream's entry script calls `python`).
# /fixture/ (outside the repository) holds the shas and each task's gold and test patches.
set -euo pipefail
export GIT_AUTHOR_NAME=fixture GIT_AUTHOR_EMAIL=fixture@localhost
export GIT_COMMITTER_NAME=fixture GIT_COMMITTER_EMAIL=fixture@localhost
export GIT_AUTHOR_DATE=2026-07-01T00:00:00Z GIT_COMMITTER_DATE=2026-07-01T00:00:00Z
[ -e /usr/bin/python ] || ln -s python3 /usr/bin/python
mkdir -p /app/tests /fixture && cd /app
git init -q -b main .
cat > calc.py <<'PY'
def add(a, b):
    return a - b


def mul(a, b):
    return a * b


def greet(name):
    return "hello " + name
PY
: > tests/__init__.py
cat > tests/test_calc.py <<'PY'
import unittest

from calc import greet, mul


class T(unittest.TestCase):
    def test_mul(self):
        self.assertEqual(mul(2, 3), 6)

    def test_greet_plain(self):
        self.assertTrue(greet("x").startswith("hello"))
PY
git add -A && git commit -qm "initial"
base=$(git rev-parse HEAD)

# Task A: add adds; a new test file, one test named by a docstring with quotes.
git checkout -q -b fix-a
sed -i 's/return a - b/return a + b/' calc.py
cat > tests/test_add.py <<'PY'
import unittest

from calc import add


class T(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_quoted(self):
        """add keeps "it's" sum"""
        self.assertEqual(add(-1, 1), 0)
PY
git add -A && git commit -qm "FIX-A: add adds"
fix_a=$(git rev-parse HEAD)
git diff "$base" "$fix_a" -- calc.py > /fixture/gold-a.patch
git diff "$base" "$fix_a" -- tests > /fixture/test-a.patch

# Task B: greet capitalizes; an edited test file.
git checkout -q main
git checkout -q -b fix-b
sed -i 's/return "hello " + name/return "Hello, " + name.capitalize()/' calc.py
sed -i 's/startswith("hello")/startswith("Hello")/' tests/test_calc.py
cat >> tests/test_calc.py <<'PY'

    def test_greet(self):
        self.assertEqual(greet("ann"), "Hello, Ann")
PY
git commit -qam "FIX-B: greet capitalizes"
fix_b=$(git rev-parse HEAD)
git diff "$base" "$fix_b" -- calc.py > /fixture/gold-b.patch
git diff "$base" "$fix_b" -- tests > /fixture/test-b.patch

git checkout -q main
test "$(git rev-parse HEAD)" = "$base"
printf 'base=%s\nfix_a=%s\nfix_b=%s\n' "$base" "$fix_a" "$fix_b" > /fixture/shas
