#!/usr/bin/env python3
"""Simulate the quickstart end to end for three "agents" and print the verdicts.

Agents:
  nop     does nothing (empty patch)
  oracle  applies gold.patch
  fixer   runs agents/fixer.py in the workspace

For each task and agent: copy repo/ to a fresh git repository (the workspace),
let the agent work there, take `git diff` of the workspace as the model patch;
then, in another fresh copy of repo/, apply the model patch and test.patch,
run test_cmd, parse the log and call the task resolved when every FAIL_TO_PASS
test passes and every PASS_TO_PASS test passes.

usage:
  python3 tools/evaluate.py           # print the table
  python3 tools/evaluate.py --check   # also compare with EXPECTED.md, exit 1 on a mismatch
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep tools/ free of __pycache__

from derive_tests import (GIT, QUICKSTART, TASKS_DIR, TaskError, apply_patch,
                          load_task, make_workspace, run, run_tests)

FIXER = os.path.join(QUICKSTART, "agents", "fixer.py")
EXPECTED = os.path.join(QUICKSTART, "EXPECTED.md")
AGENTS = ("oracle", "nop", "fixer")


def model_patch(task_dir, task, agent, tmp):
    ws = make_workspace(task_dir, tmp)
    if agent == "oracle":
        apply_patch(ws, os.path.join(task_dir, "gold.patch"))
    elif agent == "fixer":
        problem_file = os.path.join(tmp, task["instance_id"] + ".problem.md")
        with open(problem_file, "w", encoding="utf-8") as fh:
            fh.write(task["problem_statement"])
        env = dict(os.environ)
        env["BENCH_PROBLEM_FILE"] = problem_file
        env["BENCH_PROBLEM_STATEMENT"] = task["problem_statement"]
        proc = subprocess.run([sys.executable, FIXER], cwd=ws, env=env,
                              capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise TaskError("fixer exited %d: %s" % (proc.returncode, proc.stderr))
        for line in proc.stdout.splitlines():
            print("    [%s] %s" % (task["instance_id"], line))
    run(GIT + ["add", "-A"], ws)
    return run(GIT + ["diff", "--cached", "--binary"], ws).stdout


def verdict(task_dir, task, patch, tmp):
    ws = make_workspace(task_dir, tmp)
    if patch.strip():
        patch_file = os.path.join(tmp, "model.patch")
        with open(patch_file, "w", encoding="utf-8") as fh:
            fh.write(patch)
        apply_patch(ws, patch_file)
    apply_patch(ws, os.path.join(task_dir, "test.patch"))
    results, _log = run_tests(task, ws)
    f2p_ok = all(results.get(t) == "pass" for t in task["FAIL_TO_PASS"])
    p2p_ok = all(results.get(t) == "pass" for t in task["PASS_TO_PASS"])
    return f2p_ok and p2p_ok


def read_expected():
    table = {}
    with open(EXPECTED, encoding="utf-8") as fh:
        for line in fh:
            cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            if len(cells) == 4 and "__" in cells[0]:
                table[cells[0]] = dict(zip(AGENTS, (c == "yes" for c in cells[1:])))
    return table


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    ids = sorted(d for d in os.listdir(TASKS_DIR)
                 if os.path.isfile(os.path.join(TASKS_DIR, d, "task.toml")))
    got = {}
    with tempfile.TemporaryDirectory(prefix="quickstart-eval-") as tmp:
        for tid in ids:
            task_dir = os.path.join(TASKS_DIR, tid)
            task = load_task(task_dir)
            got[tid] = {}
            for agent in AGENTS:
                patch = model_patch(task_dir, task, agent, tmp)
                got[tid][agent] = verdict(task_dir, task, patch, tmp)
    print("| task | oracle resolves | nop resolves | fixer resolves |")
    print("|---|---|---|---|")
    for tid in ids:
        print("| %s | %s |" % (tid, " | ".join("yes" if got[tid][a] else "no" for a in AGENTS)))
    total = {a: sum(got[t][a] for t in ids) for a in AGENTS}
    print("resolved: " + ", ".join("%s %d/%d" % (a, total[a], len(ids)) for a in AGENTS))
    if args.check:
        expected = read_expected()
        if expected != got:
            print("MISMATCH with EXPECTED.md: expected %r" % expected)
            return 1
        print("matches EXPECTED.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
