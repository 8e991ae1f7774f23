#!/usr/bin/env python3
"""Runs several commands side by side, interleaved, and reports medians and ratios.

    bench_compare.py --rounds 7 --baseline NAME --out table.md \
        NAME=CMD [NAME=CMD ...]

Each CMD is a shell-free command line (split with shlex). `--before NAME=CMD` (repeatable)
runs CMD, untimed, before every run of NAME (warm-up included): the clean-up that puts it back
at its start (removing the last run's output), which is no part of what is measured. One
warm-up run of each command
first (page cache, Python bytecode), then ROUNDS rounds; in each round every command runs once,
in an order rotated from round to round, so a load burst on the shared machine hits all of
them alike. Per run: wall time (perf_counter around the child) and peak RSS (GNU time's %M:
/usr/bin/time runs each command, so the figure is the command's own, not a fork of this
Python). stdout goes to a regular file (GNU grep stops at the first match when its stdout is
/dev/null, so /dev/null would flatter it). Prints a
Markdown table (median, min, max of time; median peak RSS; time and RSS as ratios to the
baseline, computed per round and then the median taken) and writes it to --out.
"""

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

TMP = tempfile.mkdtemp()


def run(argv, before=None):
    if before:
        subprocess.run(before, check=True)
    rss_file = os.path.join(TMP, "rss")
    with open(os.path.join(TMP, "stdout"), "wb") as out:
        start = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss_file, *argv], stdout=out)
        wall = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit(f"{argv[0]} exited with {p.returncode}")
    with open(rss_file) as f:
        kib = int(f.read().split()[-1])
    return wall, kib / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--out")
    ap.add_argument("--before", action="append", default=[], metavar="NAME=CMD")
    ap.add_argument("commands", nargs="+")
    a = ap.parse_args()
    cmds = []
    for c in a.commands:
        name, _, line = c.partition("=")
        cmds.append((name, shlex.split(line)))
    names = [n for n, _ in cmds]
    before = {}
    for c in a.before:
        name, _, line = c.partition("=")
        if name not in names:
            sys.exit(f"--before {name}: not one of {names}")
        before[name] = shlex.split(line)
    if a.baseline not in names:
        sys.exit(f"baseline {a.baseline} is not one of {names}")
    for name, argv in cmds:
        run(argv, before.get(name))
    times = {n: [] for n in names}
    rss = {n: [] for n in names}
    loads = []
    for r in range(a.rounds):
        k = r % len(cmds)
        for name, argv in cmds[k:] + cmds[:k]:
            t, m = run(argv, before.get(name))
            times[name].append(t)
            rss[name].append(m)
        loads.append(os.getloadavg()[0])
    base = a.baseline
    lines = [
        f"| command ({a.rounds} interleaved rounds) | time, median (min to max) | "
        f"peak RSS, median | time / {base} | RSS / {base} |",
        "|---|---|---|---|---|",
    ]
    for n in names:
        tr = statistics.median(t / b for t, b in zip(times[n], times[base]))
        mr = statistics.median(m / b for m, b in zip(rss[n], rss[base]))
        lines.append(
            f"| {n} | {statistics.median(times[n]) * 1e3:.0f} ms "
            f"({min(times[n]) * 1e3:.0f} to {max(times[n]) * 1e3:.0f}) | "
            f"{statistics.median(rss[n]):.0f} MiB | {tr:.2f}x | {mr:.2f}x |"
        )
    lines.append("")
    lines.append(f"Per round (ms, and / {base}; load average after the round):")
    lines.append("")
    for r in range(a.rounds):
        each = ", ".join(
            f"{n} {times[n][r] * 1e3:.0f} ({times[n][r] / times[base][r]:.2f}x)"
            for n in names
        )
        lines.append(f"- round {r + 1}: {each}; load {loads[r]:.1f}")
    load = os.getloadavg()[0]
    lines.append("")
    lines.append(f"(load average at the end: {load:.1f}; {os.cpu_count()} CPUs)")
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
