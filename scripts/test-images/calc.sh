#!/usr/bin/env bash
# Fixture task image: a tiny Python project at /testbed, checked out at its base commit, whose
# history still holds the fix (a branch, a tag, a remote-tracking ref, packed refs, a stash,
# reflog entries, ORIG_HEAD and an unreachable commit), so the agent-workspace stripping is
# really tested. /fixture-shas names the base and fix commits (outside the repository).
set -euo pipefail
export GIT_AUTHOR_NAME=fixture GIT_AUTHOR_EMAIL=fixture@localhost
export GIT_COMMITTER_NAME=fixture GIT_COMMITTER_EMAIL=fixture@localhost
export GIT_AUTHOR_DATE=2026-07-01T00:00:00Z GIT_COMMITTER_DATE=2026-07-01T00:00:00Z
mkdir -p /testbed/tests && cd /testbed
git init -q -b master .
cat > calc.py <<'PY'
def add(a, b):
    return a - b


def mul(a, b):
    return a * b
PY
: > tests/__init__.py
cat > tests/test_mul.py <<'PY'
import unittest

from calc import mul


class T(unittest.TestCase):
    def test_mul(self):
        self.assertEqual(mul(2, 3), 6)
PY
printf 'calc\n====\n\nA calculator.\n' > README.md
printf '*.log\nbuild/\n' > .gitignore
git add -A && git commit -qm "initial"
printf '\nUsage: import calc.\n' >> README.md
git commit -qam "docs: usage"
base=$(git rev-parse HEAD)
# The fix, on a branch, tagged, and as a remote-tracking ref.
git checkout -q -b fix
sed -i 's/return a - b/return a + b/' calc.py
git commit -qam "FIX-SECRET-MARKER: add adds"
fix=$(git rev-parse HEAD)
git tag -a v1-fix -m "FIX-SECRET-MARKER tag"
git checkout -q master
git remote add origin https://example.invalid/calc.git
git update-ref refs/remotes/origin/master "$fix"
git update-ref refs/notes/commits "$fix"
# ORIG_HEAD and reflog entries pointing at the fix.
git reset -q --hard "$fix"
git reset -q --hard "$base"
# A stash holding the fix.
sed -i 's/return a - b/return a + b  # STASH-SECRET/' calc.py
git stash -q
# An unreachable commit.
git checkout -q -b tmp
echo "# UNREACHABLE-SECRET" >> calc.py
git commit -qam "UNREACHABLE-SECRET"
git checkout -q master
git branch -q -D tmp
git pack-refs --all
# Untracked (not ignored) build output present in the image: never part of an agent's patch.
echo "generated" > build_output.txt
test "$(git rev-parse HEAD)" = "$base"
printf 'base=%s\nfix=%s\n' "$base" "$fix" > /fixture-shas
