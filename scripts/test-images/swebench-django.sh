#!/usr/bin/env bash
# Fixture task image shaped like a SWE-bench django instance: /testbed holds a tiny repository
# named like django/django at version 3.0 whose tests/runtests.py really runs Python's unittest
# at the requested verbosity, with the options of upstream's TEST_DJANGO command
# (`./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 <modules>`).
# The environment (not bench's code): /opt/miniconda3/bin/activate is a stand-in for conda that
# makes `conda activate testbed` a no-op and puts `python` (python3) on PATH; there is no pip,
# so the spec's `python -m pip install -e .` fails harmlessly as it would offline.
# /fixture-shas names the base and the fix commits.
set -euo pipefail
export GIT_AUTHOR_NAME=fixture GIT_AUTHOR_EMAIL=fixture@localhost
export GIT_COMMITTER_NAME=fixture GIT_COMMITTER_EMAIL=fixture@localhost
export GIT_AUTHOR_DATE=2026-07-01T00:00:00Z GIT_COMMITTER_DATE=2026-07-01T00:00:00Z
mkdir -p /opt/miniconda3/bin /opt/miniconda3/envs/testbed/bin
cat > /opt/miniconda3/bin/activate <<'SH'
# Fixture stand-in for conda's activate script (sourced by SWE-bench eval scripts).
conda() { :; }
export PATH=/opt/miniconda3/envs/testbed/bin:$PATH
SH
ln -sf /usr/bin/python3 /opt/miniconda3/envs/testbed/bin/python
mkdir -p /testbed/django/utils /testbed/tests/utils_tests && cd /testbed
git init -q -b main .
printf 'VERSION = (3, 0, 0, "final", 0)\n' > django/__init__.py
: > django/utils/__init__.py
cat > django/utils/text.py <<'PY'
import unicodedata


def capfirst(x):
    """Capitalize the first letter of a string."""
    return x and str(x)[0].upper() + str(x)[1:]


def slugify(value):
    """Lowercase, strip, and join words with hyphens."""
    value = str(value)
    value = value.strip().lower()
    return value.replace(" ", "_")
PY
cat > tests/runtests.py <<'PY'
#!/usr/bin/env python
"""A stand-in for Django's test runner: its options, Python's unittest underneath."""
import argparse
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

parser = argparse.ArgumentParser()
parser.add_argument("modules", nargs="*")
parser.add_argument("-v", "--verbosity", type=int, default=1)
parser.add_argument("--settings")
parser.add_argument("--parallel", type=int, default=0)
args = parser.parse_args()
if args.settings:
    __import__(args.settings)
print("Testing against Django installed in '%s'" % os.path.join(os.path.dirname(HERE), "django"))
loader = unittest.TestLoader()
if args.modules:
    suite = loader.loadTestsFromNames(args.modules)
else:
    suite = loader.discover(HERE, pattern="test*.py")
result = unittest.TextTestRunner(verbosity=args.verbosity).run(suite)
sys.exit(not result.wasSuccessful())
PY
chmod +x tests/runtests.py
printf 'DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3"}}\n' > tests/test_sqlite.py
: > tests/utils_tests/__init__.py
cat > tests/utils_tests/test_text.py <<'PY'
import unittest

from django.utils import text


class TestUtilsText(unittest.TestCase):
    def test_capfirst(self):
        self.assertEqual(text.capfirst("hello world"), "Hello world")

    @unittest.skip("needs translations")
    def test_format_lazy(self):
        pass
PY
git add -A && git commit -qm "initial"
base=$(git rev-parse HEAD)
git checkout -q -b fix
sed -i 's/return value.replace(" ", "_")/return value.replace(" ", "-")/' django/utils/text.py
git commit -qam "slugify joins with hyphens"
fix=$(git rev-parse HEAD)
git checkout -q main
git branch -q -D fix
test "$(git rev-parse HEAD)" = "$base"
printf 'base=%s\nfix=%s\n' "$base" "$fix" > /fixture-shas
