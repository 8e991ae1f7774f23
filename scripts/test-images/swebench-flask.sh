#!/usr/bin/env bash
# Fixture task image shaped like a SWE-bench pytest instance: /testbed holds a tiny repository
# named like pallets/flask at version 2.0, tested by upstream's `pytest -rA <files>` with the
# real pytest (pinned wheels in swebench-flask.wheels, unpacked here: there is no pip).
# The conda stand-in as in swebench-django.sh. /fixture-shas names the base and fix commits.
set -euo pipefail
export GIT_AUTHOR_NAME=fixture GIT_AUTHOR_EMAIL=fixture@localhost
export GIT_COMMITTER_NAME=fixture GIT_COMMITTER_EMAIL=fixture@localhost
export GIT_AUTHOR_DATE=2026-07-01T00:00:00Z GIT_COMMITTER_DATE=2026-07-01T00:00:00Z
site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "$site"
for w in /wheels/*.whl; do python3 -m zipfile -e "$w" "$site"; done
cat > /usr/local/bin/pytest <<'PY'
#!/usr/bin/python3
import sys

from pytest import console_main

sys.exit(console_main())
PY
chmod +x /usr/local/bin/pytest
pytest --version
mkdir -p /opt/miniconda3/bin /opt/miniconda3/envs/testbed/bin
cat > /opt/miniconda3/bin/activate <<'SH'
# Fixture stand-in for conda's activate script (sourced by SWE-bench eval scripts).
conda() { :; }
export PATH=/opt/miniconda3/envs/testbed/bin:$PATH
SH
ln -sf /usr/bin/python3 /opt/miniconda3/envs/testbed/bin/python
mkdir -p /testbed/src/flask /testbed/tests && cd /testbed
git init -q -b main .
cat > src/flask/__init__.py <<'PY'
from .helpers import get_root_path, url_quote

__version__ = "2.0.3"
PY
cat > src/flask/helpers.py <<'PY'
import os


def get_root_path(import_name):
    """The directory of a module (the current directory for ``__main__``)."""
    if import_name == "__main__":
        return os.getcwd()
    return os.path.dirname(os.path.abspath(import_name))


def url_quote(s):
    """Quote spaces in a URL path."""
    return s.replace(" ", "+")
PY
cat > conftest.py <<'PY'
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "src"))
PY
cat > tests/test_helpers.py <<'PY'
import sys

import pytest

import flask


def test_root_path_main():
    assert flask.get_root_path("__main__")


@pytest.mark.xfail(reason="known: relative imports")
def test_root_path_relative():
    assert flask.get_root_path(".x") == "."


@pytest.mark.skipif(sys.platform == "linux", reason="windows only")
def test_root_path_windows():
    pass


@pytest.mark.parametrize("value", ["a", "b c"])
def test_quote_keeps_words(value):
    assert value.split()[0] in flask.url_quote(value)
PY
git add -A && git commit -qm "initial"
base=$(git rev-parse HEAD)
git checkout -q -b fix
sed -i 's/return s.replace(" ", "+")/return s.replace(" ", "%20")/' src/flask/helpers.py
git commit -qam "url_quote percent-encodes spaces"
fix=$(git rev-parse HEAD)
git checkout -q main
git branch -q -D fix
test "$(git rev-parse HEAD)" = "$base"
printf 'base=%s\nfix=%s\n' "$base" "$fix" > /fixture-shas
