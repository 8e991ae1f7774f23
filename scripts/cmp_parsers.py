#!/usr/bin/env python3
"""Checks that two `bench` binaries write the same bytes for `bench parse-log` of every
built-in parser over the logs `bench_parsers_all.py` makes (each parser's largest fixture
repeated to SIZE MB with renamed tests), and optionally counts each one's instructions.

    cmp_parsers.py --base OLD --bench NEW [--size 10] [--only NAME,..] [--callgrind]

Prints one line per parser: `same` or `DIFFERENT` (exit status 1 if any differ) and the JSON's
size; with --callgrind, each binary's instruction count (`valgrind --tool=callgrind`, user
space only, so independent of the machine's load) over the same log, and grep's
(`grep -c -E` of bench_parsers_all.py's status words).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_parsers_all as bpa  # noqa: E402


def instructions(argv, work):
    out = os.path.join(work, "callgrind.out")
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    found = re.search(r"Collected : (\d+)", run.stderr)
    if not found:
        sys.exit(f"callgrind of {argv} printed no count:\n{run.stderr}")
    os.remove(out)
    return int(found.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--bench", required=True)
    ap.add_argument("--size", type=int, default=10)
    ap.add_argument("--only", default="")
    ap.add_argument("--callgrind", action="store_true")
    args = ap.parse_args()
    parsers = sorted(
        d for d in os.listdir(bpa.FIXTURES) if os.path.isdir(os.path.join(bpa.FIXTURES, d))
    )
    if args.only:
        parsers = [p for p in parsers if p in args.only.split(",")]
    work = tempfile.mkdtemp(prefix="cmp-parsers-")
    differ = 0
    for parser in parsers:
        log = os.path.join(work, f"{parser}.log")
        if parser in bpa.GENERATED:
            gen = os.path.join(bpa.ROOT, "scripts", "gen_pytest_log.py")
            subprocess.run([sys.executable, gen, log, str(args.size)], check=True)
        else:
            bpa.replicate(args.base, parser, log, args.size)
        outs = []
        for binary in (args.base, args.bench):
            argv = [binary, "parse-log", "--parser", parser, log]
            outs.append(subprocess.run(argv, capture_output=True, check=True).stdout)
        same = outs[0] == outs[1]
        differ += not same
        line = f"{parser}: {'same' if same else 'DIFFERENT'}, {len(outs[1])} bytes of JSON"
        if args.callgrind:
            counts = [
                instructions([b, "parse-log", "--parser", parser, log], work)
                for b in (args.base, args.bench)
            ]
            grep = instructions(["grep", "-c", "-E", bpa.GREP, log], work)
            change = (counts[1] - counts[0]) / counts[0] * 100
            line += (
                f"; instructions {counts[0] / 1e6:.0f} M -> {counts[1] / 1e6:.0f} M"
                f" ({change:+.1f}%), grep {grep / 1e6:.2f} M"
            )
        print(line, flush=True)
        os.remove(log)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
