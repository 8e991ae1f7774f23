#!/usr/bin/env python3
"""The alternative bench's no-op apply is measured against: a Python script that resumes a
benchmark from one JSONL file of completed results.

    jsonl_resume.py fill DIR       # DIR from gen_bench_manifest.py: writes DIR/results.jsonl
    jsonl_resume.py resume DIR     # what a rerun of a finished benchmark does

`resume` is the lean script a user would write: list the task directories, read and hash each
task's files (task.toml, gold.patch, test.patch and repo/; so an edited task is noticed),
derive the key of every (stage, task, team) node from the task's hash, load the JSONL of
completed results into a dict, find what is left to run (nothing, after `fill`), and write a
summary (resolved per team) to DIR/resume-report.md. `fill` writes one line per node with the
fields a light bench record holds (key, outcome, patch digest, blobs, timing).
"""

import hashlib
import json
import os
import sys


def team_names(manifest):
    # The teams of gen_bench_manifest.py's manifest: the `[teams.NAME]` tables.
    out = []
    with open(manifest, encoding="utf-8") as f:
        for line in f:
            if line.startswith("[teams."):
                out.append(line.strip()[len("[teams.") : -1])
    return out


def task_digest(d):
    h = hashlib.blake2b(digest_size=32)
    for name in ("task.toml", "gold.patch", "test.patch"):
        with open(os.path.join(d, name), "rb") as f:
            h.update(f.read())
    repo = os.path.join(d, "repo")
    for root, _, files in os.walk(repo):
        for name in sorted(files):
            p = os.path.join(root, name)
            h.update(os.path.relpath(p, repo).encode())
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def node_keys(d):
    """(key, stage, task, team) of every node, from the task files."""
    teams = team_names(os.path.join(d, "bench.toml"))
    tasks_dir = os.path.join(d, "tasks")
    out = []
    for task in sorted(os.listdir(tasks_dir)):
        digest = task_digest(os.path.join(tasks_dir, task))
        out.append((hashlib.blake2b(f"gold {digest}".encode()).hexdigest(), "gold", task, ""))
        for team in teams:
            for stage in ("solve", "grade"):
                k = hashlib.blake2b(f"{stage} {team} {digest}".encode()).hexdigest()
                out.append((k, stage, task, team))
    return out


def fill(d):
    with open(os.path.join(d, "results.jsonl"), "w", encoding="utf-8") as f:
        for key, stage, task, team in node_keys(d):
            rec = {
                "key": key,
                "stage": stage,
                "task": task,
                "team": team,
                "output": {"resolved": team == "oracle" or stage == "gold", "patch_applied": True},
                "blobs": {"log": hashlib.blake2b(key.encode()).hexdigest()},
                "bench_version": "0.1.0",
                "started_at": "2026-12-01T00:00:00.000000Z",
                "duration_ms": 123,
            }
            f.write(json.dumps(rec) + "\n")


def resume(d):
    keys = node_keys(d)
    done = {}
    with open(os.path.join(d, "results.jsonl"), encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            done[r["key"]] = r
    todo = [k for k in keys if k[0] not in done]
    resolved = {}
    for key, stage, task, team in keys:
        r = done.get(key)
        if stage == "grade" and r is not None:
            resolved[team] = resolved.get(team, 0) + (1 if r["output"]["resolved"] else 0)
    with open(os.path.join(d, "resume-report.md"), "w", encoding="utf-8") as f:
        f.write("| team | resolved |\n|---|---|\n")
        for team, n in sorted(resolved.items()):
            f.write(f"| {team} | {n} |\n")
    print(f"{len(keys)} nodes, {len(todo)} to run")
    return 0 if not todo else 2


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("fill", "resume"):
        sys.exit(__doc__)
    if sys.argv[1] == "fill":
        fill(sys.argv[2])
    else:
        sys.exit(resume(sys.argv[2]))
