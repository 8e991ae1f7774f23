#!/usr/bin/env python3
"""Derive FAIL_TO_PASS / PASS_TO_PASS for the quickstart tasks by running them.

For every task under examples/quickstart/tasks/ this does what SWE-bench-Live
does when it validates an instance:

  1. copy repo/ to a temporary directory, `git init` and commit it;
  2. `git apply` test.patch and run test_cmd with `sh -c` -> "pre" statuses;
  3. `git apply` gold.patch and run test_cmd again      -> "post" statuses;
  4. FAIL_TO_PASS = tests that pass post but not pre,
     PASS_TO_PASS = tests that pass both pre and post.

It also checks the task's metadata, that every FAIL_TO_PASS test really
*fails* pre, that all FAIL_TO_PASS and PASS_TO_PASS tests pass post, and that
with gold.patch alone (no hidden tests) the repository's own visible tests, if
it has a tests/ directory, still pass.

usage:
  python3 tools/derive_tests.py            # check and rewrite the lists in task.toml
  python3 tools/derive_tests.py --check    # check only; exit 1 if a task.toml is out of date
  python3 tools/derive_tests.py TASK_ID... # restrict to some tasks

Needs only python3 (3.11+, for tomllib), git and a POSIX sh.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
QUICKSTART = os.path.dirname(HERE)
TASKS_DIR = os.path.join(QUICKSTART, "tasks")

REQUIRED_FIELDS = (
    "instance_id",
    "repo",
    "language",
    "created_at",
    "problem_statement",
    "test_cmd",
    "log_parser",
)
INSTANCE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*__[A-Za-z0-9][A-Za-z0-9._-]*-[0-9]+$")
CREATED_MIN = datetime.datetime(2026, 7, 1, tzinfo=datetime.timezone.utc)
CREATED_MAX = datetime.datetime(2026, 11, 1, tzinfo=datetime.timezone.utc)
TEST_TIMEOUT = 120

GIT = [
    "git",
    "-c", "user.name=quickstart",
    "-c", "user.email=quickstart@example.invalid",
    "-c", "commit.gpgsign=false",
    "-c", "core.autocrlf=false",
    "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicPrefix=false",
]


# --------------------------------------------------------------------------
# Log parsers (same rules as the bench parsers of the same names)
# --------------------------------------------------------------------------

_UNITTEST_LINE = re.compile(r"^(?P<name>\S.*?) \.\.\. (?P<status>.*)$")


def parse_unittest(log):
    """`python3 -m unittest -v` lines: "NAME ... ok|FAIL|ERROR|skipped ..."."""
    results = {}
    for line in log.splitlines():
        m = _UNITTEST_LINE.match(line)
        if not m:
            continue
        status = m.group("status").strip()
        if status == "ok":
            results[m.group("name")] = "pass"
        elif status in ("FAIL", "ERROR"):
            results[m.group("name")] = "fail"
        elif status.startswith("skipped"):
            results[m.group("name")] = "skip"
    return results


_TAP_LINE = re.compile(r"^(?P<not>not )?ok\b(?:\s+\d+)?(?:\s*-)?\s*(?P<desc>.*)$")
_TAP_SKIP = re.compile(r"\s+#\s*SKIP\b.*$", re.IGNORECASE)


def parse_tap(log):
    """TAP lines: "ok N - name", "not ok N - name", "ok N - name # SKIP why"."""
    results = {}
    for line in log.splitlines():
        m = _TAP_LINE.match(line)
        if not m:
            continue
        desc = m.group("desc")
        skipped = _TAP_SKIP.search(desc) is not None
        name = _TAP_SKIP.sub("", desc).strip()
        if not name:
            continue
        if skipped:
            results[name] = "skip"
        elif m.group("not"):
            results[name] = "fail"
        else:
            results[name] = "pass"
    return results


PARSERS = {"unittest": parse_unittest, "tap": parse_tap}


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


class TaskError(Exception):
    pass


def run(cmd, cwd, check=True, **kw):
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, **kw)
    if check and proc.returncode != 0:
        raise TaskError("command failed (%d): %s\n%s%s" % (
            proc.returncode, " ".join(cmd), proc.stdout, proc.stderr))
    return proc


def load_task(task_dir):
    path = os.path.join(task_dir, "task.toml")
    with open(path, "rb") as fh:
        task = tomllib.load(fh)
    problems = []
    for field in REQUIRED_FIELDS:
        if field not in task:
            problems.append("missing field %r" % field)
    if problems:
        raise TaskError("; ".join(problems))
    name = os.path.basename(task_dir.rstrip(os.sep))
    if task["instance_id"] != name:
        problems.append("instance_id %r != directory name %r" % (task["instance_id"], name))
    if not INSTANCE_ID_RE.match(task["instance_id"]):
        problems.append("instance_id %r does not match owner__name-N" % task["instance_id"])
    if task["language"] not in ("python", "shell"):
        problems.append("language must be python or shell")
    if task["log_parser"] not in PARSERS:
        problems.append("unknown log_parser %r" % task["log_parser"])
    created = task["created_at"]
    if not isinstance(created, datetime.datetime) or created.tzinfo is None:
        problems.append("created_at must be an offset TOML datetime")
    elif not CREATED_MIN <= created < CREATED_MAX:
        problems.append("created_at %s outside 2026-07-01..2026-10-31" % created.isoformat())
    if not task["problem_statement"].strip():
        problems.append("empty problem_statement")
    for fname in ("repo", "test.patch", "gold.patch"):
        if not os.path.exists(os.path.join(task_dir, fname)):
            problems.append("missing %s" % fname)
    if problems:
        raise TaskError("; ".join(problems))
    return task


def make_workspace(task_dir, parent):
    """Copy repo/ into a fresh git repository (one commit); return its path."""
    ws = tempfile.mkdtemp(prefix="ws-", dir=parent)
    shutil.copytree(os.path.join(task_dir, "repo"), ws, dirs_exist_ok=True)
    run(GIT + ["init", "-q", "."], ws)
    run(GIT + ["add", "-A"], ws)
    run(GIT + ["commit", "-q", "--no-verify", "-m", "base"], ws)
    return ws


def apply_patch(ws, patch_path):
    run(GIT + ["apply", "--check", patch_path], ws)
    run(GIT + ["apply", patch_path], ws)


def run_tests(task, ws):
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("PYTHONPATH", None)
    try:
        proc = subprocess.run(
            ["sh", "-c", task["test_cmd"]], cwd=ws, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=TEST_TIMEOUT, stdin=subprocess.DEVNULL)
        log = proc.stdout
    except subprocess.TimeoutExpired as exc:
        log = (exc.stdout or b"").decode("utf-8", "replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
    return PARSERS[task["log_parser"]](log), log


def derive(task_dir, tmp):
    """Return (task, f2p, p2p, notes) for one task; raise TaskError on a defect."""
    task = load_task(task_dir)
    test_patch = os.path.join(task_dir, "test.patch")
    gold_patch = os.path.join(task_dir, "gold.patch")

    ws = make_workspace(task_dir, tmp)
    apply_patch(ws, test_patch)
    pre, pre_log = run_tests(task, ws)
    apply_patch(ws, gold_patch)
    post, post_log = run_tests(task, ws)

    if not post:
        raise TaskError("no test results parsed after gold patch:\n" + post_log)
    # Keep the order in which the tests ran (post run).
    f2p = [t for t in post if post[t] == "pass" and pre.get(t) != "pass"]
    p2p = [t for t in post if post[t] == "pass" and pre.get(t) == "pass"]

    problems = []
    if not f2p:
        problems.append("FAIL_TO_PASS is empty")
    if len(p2p) < 2:
        problems.append("fewer than 2 PASS_TO_PASS tests")
    for t in f2p:
        if pre.get(t) != "fail":
            problems.append("F2P test %r did not run-and-fail before gold (status %r)" % (t, pre.get(t)))
    not_passing_post = [t for t in post if post[t] == "fail"]
    if not_passing_post:
        problems.append("tests failing after gold patch: %r" % not_passing_post)
    broken = [t for t in pre if pre[t] == "pass" and post.get(t) != "pass"]
    if broken:
        problems.append("gold patch breaks tests: %r" % broken)

    # Gold patch alone: the repository's own (visible) tests must still pass.
    notes = []
    if os.path.isdir(os.path.join(task_dir, "repo", "tests")):
        ws2 = make_workspace(task_dir, tmp)
        apply_patch(ws2, gold_patch)
        own, own_log = run_tests(task, ws2)
        if not own:
            problems.append("visible tests produced no results with gold patch alone:\n" + own_log)
        elif any(s != "pass" for s in own.values()):
            problems.append("visible tests fail with gold patch alone: %r" % own)
        else:
            notes.append("%d visible tests pass with gold alone" % len(own))
    if problems:
        raise TaskError("; ".join(problems))
    return task, f2p, p2p, notes


def toml_list(key, items):
    if not items:
        return "%s = []\n" % key
    body = "".join("    %s,\n" % json.dumps(item) for item in items)
    return "%s = [\n%s]\n" % (key, body)


def set_list(text, key, items):
    new = toml_list(key, items)
    pattern = re.compile(r"^%s = \[.*?\]\n" % re.escape(key), re.MULTILINE | re.DOTALL)
    if pattern.search(text):
        return pattern.sub(lambda _m: new, text, count=1)
    if not text.endswith("\n"):
        text += "\n"
    return text + new


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="do not write task.toml; fail if its lists differ")
    ap.add_argument("tasks", nargs="*", help="task ids (default: all)")
    args = ap.parse_args(argv)

    ids = args.tasks or sorted(
        d for d in os.listdir(TASKS_DIR)
        if os.path.isfile(os.path.join(TASKS_DIR, d, "task.toml")))
    failures = 0
    seen_created = {}
    with tempfile.TemporaryDirectory(prefix="quickstart-derive-") as tmp:
        for tid in ids:
            task_dir = os.path.join(TASKS_DIR, tid)
            try:
                task, f2p, p2p, notes = derive(task_dir, tmp)
            except (TaskError, OSError, tomllib.TOMLDecodeError) as exc:
                print("FAIL %s: %s" % (tid, exc))
                failures += 1
                continue
            created = task["created_at"]
            if created in seen_created:
                print("FAIL %s: created_at equals that of %s" % (tid, seen_created[created]))
                failures += 1
            seen_created[created] = tid

            toml_path = os.path.join(task_dir, "task.toml")
            with open(toml_path, encoding="utf-8") as fh:
                text = fh.read()
            new_text = set_list(set_list(text, "FAIL_TO_PASS", f2p), "PASS_TO_PASS", p2p)
            state = "up to date"
            if new_text != text:
                if args.check:
                    state = "OUT OF DATE"
                    failures += 1
                else:
                    with open(toml_path, "w", encoding="utf-8") as fh:
                        fh.write(new_text)
                    state = "updated"
            print("ok   %s: %d FAIL_TO_PASS, %d PASS_TO_PASS (%s)%s" % (
                tid, len(f2p), len(p2p), state,
                "; " + "; ".join(notes) if notes else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
