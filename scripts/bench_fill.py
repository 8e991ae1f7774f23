#!/usr/bin/env python3
"""A local fill by bench against the bare floor of the same work, side by side, interleaved.

    bench_fill.py --bench PATH [--sizes 100,1000] [--teams 2] [--jobs 2] [--rounds 3]
                  [--work DIR] [--out FILE]

Per size N: scripts/gen_bench_manifest.py writes N tasks and a manifest (gold, solve and grade
stages, TEAMS teams: `oracle` applies the gold patch, `nop1`.. change nothing, `[limits] jobs`
JOBS). Then ROUNDS rounds, the order alternating, each from nothing:

- bench: `bench apply -q` of the manifest into an empty store (every node runs in bench's
  local sandboxes, bubblewrap jails where bwrap works), with BENCH_TIMINGS=1 so bench prints
  its own CPU time and peak memory (getrusage of its process, not of the jails and tests it
  ran);
- loop: a bare loop doing the same workspaces, patches and tests (scripts/fill_task.sh) in one
  bubblewrap jail per task, JOBS tasks at a time (xargs -P): no store, no keys, no records, no
  history check, no log parser.

Prints a Markdown table per size (medians, and the ratio bench / loop taken per round, then
the median) and writes all of them to --out. The environment passes through (BENCH_NO_BWRAP=1
runs bench unjailed; the loop then runs without bwrap too). PATH gets this Python's directory
first, so both run the same python3 (not a version manager's shim).
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USAGE = re.compile(r"usage: user ([0-9.]+) s, sys ([0-9.]+) s, max RSS ([0-9]+) KiB")


def jail_args(work, task_root):
    """bwrap's arguments for one task of the loop: the host read-only, /tmp empty, the work
    directory writable (the floor: one recursive bind of /, no per-directory binds)."""
    return [
        "bwrap", "--die-with-parent", "--unshare-all", "--new-session",
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
        "--ro-bind", task_root, task_root, "--bind", work, work, "--chdir", work,
    ]


def run_bench(bench, manifest, store, env):
    shutil.rmtree(store, ignore_errors=True)
    start = time.perf_counter()
    p = subprocess.run(
        [bench, "apply", "-q", manifest, "--store", store],
        env={**env, "BENCH_TIMINGS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit(f"bench apply exited with {p.returncode}:\n{p.stderr[-3000:]}")
    m = USAGE.search(p.stderr)
    if not m:
        sys.exit("bench printed no usage line (is it a build with timings.rs's usage()?)")
    shutil.rmtree(store, ignore_errors=True)
    return wall, float(m.group(1)) + float(m.group(2)), int(m.group(3)) / 1024.0


def run_loop(tasks_dir, work, teams, jobs, env):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    script = os.path.join(ROOT, "scripts", "fill_task.sh")
    jailed = shutil.which("bwrap") and not env.get("BENCH_NO_BWRAP")

    def one(task):
        w = os.path.join(work, task)
        os.makedirs(w)
        argv = ["sh", script, os.path.join(tasks_dir, task), w, str(teams)]
        if jailed:
            argv = jail_args(w, tasks_dir) + argv
        return subprocess.run(argv, env=env, stdout=subprocess.DEVNULL).returncode

    tasks = sorted(os.listdir(tasks_dir))
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        codes = list(pool.map(one, tasks))
    wall = time.perf_counter() - start
    if any(codes):
        sys.exit(f"the loop failed on {sum(1 for c in codes if c)} tasks")
    shutil.rmtree(work, ignore_errors=True)
    return wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--sizes", default="100,1000")
    ap.add_argument("--teams", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work")
    ap.add_argument("--out")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="bench-fill.", dir="/var/tmp")
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    out = []
    for size in [int(x) for x in a.sizes.split(",")]:
        d = os.path.join(work, f"n{size}")
        manifest = os.path.join(d, "bench.toml")
        if not os.path.exists(manifest):
            subprocess.run(
                [sys.executable, os.path.join(ROOT, "scripts", "gen_bench_manifest.py"), d,
                 "--tasks", str(size), "--teams", str(a.teams), "--jobs", str(a.jobs)],
                check=True, stdout=subprocess.DEVNULL,
            )
        rows = {"bench": [], "loop": [], "cpu": [], "rss": [], "ratio": []}
        for r in range(a.rounds):
            order = ["bench", "loop"] if r % 2 == 0 else ["loop", "bench"]
            times = {}
            for name in order:
                if name == "bench":
                    wall, cpu, rss = run_bench(a.bench, manifest, os.path.join(d, "store"), env)
                    rows["cpu"].append(cpu / size)
                    rows["rss"].append(rss)
                else:
                    wall = run_loop(os.path.join(d, "tasks"), os.path.join(d, "loop"), a.teams,
                                    a.jobs, env)
                times[name] = wall
                rows[name].append(wall)
                print(f"n={size} round {r + 1} {name}: {wall:.1f} s", file=sys.stderr)
            rows["ratio"].append(times["bench"] / times["loop"])
        med = statistics.median
        load = open("/proc/loadavg").read().split()[:3]
        out.append(
            f"### {size} tasks x {a.teams} teams, --jobs {a.jobs}, {a.rounds} rounds, "
            f"load {' '.join(load)}\n\n"
            "| bench apply (s) | bare loop (s) | bench / loop | bench CPU per task (s) "
            "| bench peak RSS (MiB) |\n|---|---|---|---|---|\n"
            f"| {med(rows['bench']):.1f} ({min(rows['bench']):.1f} to {max(rows['bench']):.1f}) "
            f"| {med(rows['loop']):.1f} ({min(rows['loop']):.1f} to {max(rows['loop']):.1f}) "
            f"| {med(rows['ratio']):.2f}x | {med(rows['cpu']):.3f} | {med(rows['rss']):.0f} |\n"
        )
        print(out[-1])
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(out))


if __name__ == "__main__":
    main()
