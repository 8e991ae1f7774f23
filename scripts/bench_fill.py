#!/usr/bin/env python3
"""A local fill by bench against the bare floor of the same work, side by side, interleaved.

    bench_fill.py --bench PATH [--base PATH] [--no-loop] [--sizes 100,1000] [--teams 2]
                  [--jobs 2] [--rounds 3] [--work DIR] [--out FILE]

Per size N: scripts/gen_bench_manifest.py writes N tasks and a manifest (gold, solve and grade
stages, TEAMS teams: `oracle` applies the gold patch, `nop1`.. change nothing, `[limits] jobs`
JOBS). Then ROUNDS rounds, the order alternating, each from nothing:

- bench: `bench apply -q` of the manifest into an empty store (every node runs in bench's
  local sandboxes, bubblewrap jails where bwrap works), with BENCH_TIMINGS=1 so bench prints
  its own CPU time and peak memory (getrusage of its process, not of the jails and tests it
  ran);
- loop: a bare loop doing the same workspaces, patches and tests (scripts/fill_task.sh) in one
  bubblewrap jail per task, JOBS tasks at a time (a pool of JOBS threads): no store, no keys,
  no records, no history check, no log parser.

--base PATH times a second bench binary (a build of main) the same way in the same rounds, as a
third side, with its own CPU per task and peak memory; --no-loop leaves the loop out (to
compare two builds of bench only).

Each side's "cores busy" is the CPU time of its whole process tree (every process it ran:
jails, git, tests; read from a cgroup v2 made for the run, see Tree) over its wall time: 2.0 on this 2-core machine means both cores
worked throughout; bench below the loop means it left a core idle (on locks, on itself).

Prints a Markdown table per size (medians, and the ratio bench / loop taken per round, then
the median) and writes all of them to --out. The environment passes through (BENCH_NO_BWRAP=1
runs bench unjailed; the loop then runs without bwrap too). PATH gets this Python's directory
first, so both run the same python3 (not a version manager's shim).
"""

import argparse
import concurrent.futures
import os
import re
import resource
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


class Tree:
    """The CPU time of a whole process tree (bench and every jail, git and test it ran, or the
    loop's jails), read from a cgroup v2 made for it: this process moves into the cgroup for
    the run (its children are born there) and back out after. Process accounting cannot do
    this: bwrap's outer process does not reap its jail's init, so a jail's CPU never reaches
    RUSAGE_CHILDREN. None where no cgroup v2 can be made (not root, no cgroup2 mount)."""

    ROOTS = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]

    def __init__(self, name):
        self.path, self.home = None, None
        for root in self.ROOTS:
            if os.path.exists(os.path.join(root, "cgroup.procs")) and \
                    os.path.exists(os.path.join(root, "cpu.stat")):
                mine = [line.split(":", 2)[2].strip() for line in open("/proc/self/cgroup")
                        if line.startswith("0::")]
                home = os.path.join(root, mine[0].lstrip("/")) if mine else root
                path = os.path.join(home, f"bench-fill.{os.getpid()}.{name}")
                try:
                    os.mkdir(path)
                    with open(os.path.join(path, "cgroup.procs"), "w") as f:
                        f.write(str(os.getpid()))
                except OSError:
                    if os.path.isdir(path):
                        os.rmdir(path)
                    continue
                self.path, self.home = path, home
                return

    def close(self):
        """Moves this process back, reads the tree's CPU seconds and removes the cgroup."""
        if self.path is None:
            return None
        with open(os.path.join(self.home, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        usage = None
        for _ in range(100):  # a jail's last processes may take a moment to leave
            stat = dict(line.split() for line in open(os.path.join(self.path, "cpu.stat")))
            usage = int(stat["usage_usec"]) / 1e6
            try:
                os.rmdir(self.path)
                break
            except OSError:
                time.sleep(0.05)
        return usage


def run_bench(bench, manifest, store, env):
    shutil.rmtree(store, ignore_errors=True)
    tree = Tree("bench")
    start = time.perf_counter()
    p = subprocess.run(
        [bench, "apply", "-q", manifest, "--store", store],
        env={**env, "BENCH_TIMINGS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - start
    cpu = tree.close()
    busy = cpu / wall if cpu is not None else None
    if p.returncode != 0:
        sys.exit(f"bench apply exited with {p.returncode}:\n{p.stderr[-3000:]}")
    m = USAGE.search(p.stderr)
    if not m:
        sys.exit("bench printed no usage line (is it a build with timings.rs's usage()?)")
    shutil.rmtree(store, ignore_errors=True)
    return wall, float(m.group(1)) + float(m.group(2)), int(m.group(3)) / 1024.0, busy


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
    tree = Tree("loop")
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        codes = list(pool.map(one, tasks))
    wall = time.perf_counter() - start
    cpu = tree.close()
    busy = cpu / wall if cpu is not None else None
    if any(codes):
        sys.exit(f"the loop failed on {sum(1 for c in codes if c)} tasks")
    shutil.rmtree(work, ignore_errors=True)
    return wall, busy


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--sizes", default="100,1000")
    ap.add_argument("--teams", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work")
    ap.add_argument("--out")
    ap.add_argument("--base")
    ap.add_argument("--no-loop", action="store_true")
    a = ap.parse_args()
    sides = ["bench"] + (["base"] if a.base else []) + ([] if a.no_loop else ["loop"])
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
        rows = {k: [] for k in ["bench", "loop", "base", "cpu", "rss", "cpu_base", "rss_base",
                                "ratio", "ratio_base", "busy_bench", "busy_loop", "busy_base"]}
        for r in range(a.rounds):
            order = sides if r % 2 == 0 else sides[::-1]
            times = {}
            for name in order:
                if name in ("bench", "base"):
                    binary = a.bench if name == "bench" else a.base
                    wall, cpu, rss, busy = run_bench(binary, manifest, os.path.join(d, "store"),
                                                     env)
                    tail = "" if name == "bench" else "_base"
                    rows["cpu" + tail].append(cpu / size)
                    rows["rss" + tail].append(rss)
                else:
                    wall, busy = run_loop(os.path.join(d, "tasks"), os.path.join(d, "loop"),
                                          a.teams, a.jobs, env)
                rows[f"busy_{name}"].append(busy)
                times[name] = wall
                rows[name].append(wall)
                shown = f"{busy:.2f}" if busy is not None else "unmeasured"
                print(f"n={size} round {r + 1} {name}: {wall:.1f} s, {shown} cores busy",
                      file=sys.stderr)
            if "loop" in times:
                rows["ratio"].append(times["bench"] / times["loop"])
            if "base" in times:
                rows["ratio_base"].append(times["bench"] / times["base"])
        med = statistics.median

        def span(xs, fmt="{:.1f}"):
            if not xs:
                return "not run"
            return f"{fmt.format(med(xs))} ({fmt.format(min(xs))} to {fmt.format(max(xs))})"

        def ratio(xs):
            return f"{med(xs):.2f}x" if xs else "not run"

        def busy(xs):
            xs = [x for x in xs if x is not None]
            return f"{med(xs):.2f}" if xs else "unmeasured"

        load = open("/proc/loadavg").read().split()[:3]
        out.append(
            f"### {size} tasks x {a.teams} teams, --jobs {a.jobs}, {a.rounds} rounds, "
            f"load {' '.join(load)}\n\n"
            "| bench apply (s) | bare loop (s) | bench / loop | bench CPU per task (s) "
            "| bench peak RSS (MiB) | cores busy: bench / loop |\n|---|---|---|---|---|---|\n"
            f"| {span(rows['bench'])} | {span(rows['loop'])} | {ratio(rows['ratio'])} "
            f"| {span(rows['cpu'], '{:.4f}')} | {span(rows['rss'], '{:.0f}')} "
            f"| {busy(rows['busy_bench'])} / {busy(rows['busy_loop'])} |\n"
        )
        if a.base:
            out[-1] += (
                "\n| base apply (s) | bench / base | base CPU per task (s) | base peak RSS (MiB) "
                "| cores busy: base |\n|---|---|---|---|---|\n"
                f"| {span(rows['base'])} | {ratio(rows['ratio_base'])} "
                f"| {span(rows['cpu_base'], '{:.4f}')} | {span(rows['rss_base'], '{:.0f}')} "
                f"| {busy(rows['busy_base'])} |\n"
            )
        print(out[-1])
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(out))


if __name__ == "__main__":
    main()
