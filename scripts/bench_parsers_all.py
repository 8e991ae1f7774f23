#!/usr/bin/env python3
"""Times every built-in log parser (`bench parse-log --parser NAME`) against the floor of any
parser, `grep -c -E` of status words over the same log, at several log sizes.

    bench_parsers_all.py --bench PATH [--base PATH] [--sizes 1,10,50] [--rounds 3] [--only NAME,..]
                         [--out FILE]

The logs: for the pytest parsers, scripts/gen_pytest_log.py's generated `-v -rA` log (the
log on which pytest's parser once went quadratic); for every other parser, its largest fixture
under tests/fixtures/logs/NAME/ repeated until the size is reached, each copy with its own test
names (the names the parser reads from the fixture, each with a copy number appended to its
longest identifier, wherever the name appears verbatim), so the parser's map grows with the log
as in a real run. Names a parser assembles from parts (a class and a method on two lines) keep
their fixture spelling and repeat; the table says how many distinct tests each log holds.

Per parser and size: ROUNDS interleaved rounds (bench, then grep, order alternating), wall time
of each whole process (stdout to a file), the median of each, and their ratio. `growth` is the
50 MB time over 5x the 10 MB time (1.00: linear). Prints a Markdown table and writes it to
--out. With --base, a second binary (say, main's) is timed in the same interleaved rounds
(base, bench, grep; order reversed every other round), its output checked equal to bench's,
and each size's cell shows base ms -> bench ms / grep ms (base x -> bench x).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "logs")
GENERATED = {"pytest", "pytest-swebench"}
GREP = "PASS|FAIL|ERROR|SKIP|ok|passed|failed"
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse(bench, parser, path):
    out = subprocess.run(
        [bench, "parse-log", "--parser", parser, path], capture_output=True, check=True
    )
    return json.loads(out.stdout)


def renamer(name):
    """A function of the copy number giving `name` with that number appended to its longest
    identifier (the first of equal length)."""
    tokens = list(IDENT.finditer(name))
    if not tokens:
        return lambda k: name
    best = max(tokens, key=lambda m: (len(m.group()), -m.start()))
    head, tail = name[: best.end()], name[best.end() :]
    return lambda k: f"{head}_c{k}{tail}"


def replicate(bench, parser, out_path, size_mb):
    """Writes the parser's largest fixture repeated to `size_mb` MB with renamed tests."""
    folder = os.path.join(FIXTURES, parser)
    logs = [f for f in os.listdir(folder) if f.endswith(".log")]
    fixture = max(logs, key=lambda f: (os.path.getsize(os.path.join(folder, f)), f))
    path = os.path.join(folder, fixture)
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if not text.endswith("\n"):
        text += "\n"
    names = [n for n in parse(bench, parser, path) if len(n) >= 4 and n in text]
    # Split the fixture once at every verbatim name (longest first at each position), so each
    # copy is a join of the pieces with renamed names between them.
    pieces, slots = [text], []
    if names:
        pattern = re.compile("|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)))
        pieces, slots, at = [], [], 0
        for m in pattern.finditer(text):
            pieces.append(text[at : m.start()])
            slots.append(renamer(m.group()))
            at = m.end()
        pieces.append(text[at:])
    target = size_mb * 1024 * 1024
    written, k = 0, 0
    with open(out_path, "w", encoding="utf-8") as f:
        while written < target:
            parts = [pieces[0]]
            for slot, piece in zip(slots, pieces[1:]):
                parts.append(slot(k))
                parts.append(piece)
            copy = "".join(parts)
            f.write(copy)
            written += len(copy.encode())
            k += 1
    return fixture


def timed(argv, out):
    with open(out, "wb") as sink:
        start = time.perf_counter()
        subprocess.run(argv, stdout=sink, check=argv[0] != "grep")
        return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--base", default="")
    ap.add_argument("--sizes", default="1,10,50")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    parsers = sorted(
        d for d in os.listdir(FIXTURES) if os.path.isdir(os.path.join(FIXTURES, d))
    )
    if args.only:
        parsers = [p for p in parsers if p in args.only.split(",")]
    work = tempfile.mkdtemp(prefix="bench-parsers-")
    rows = []
    for parser in parsers:
        row = {"parser": parser}
        for size in sizes:
            log = os.path.join(work, f"{parser}-{size}.log")
            if parser in GENERATED:
                gen = os.path.join(ROOT, "scripts", "gen_pytest_log.py")
                subprocess.run([sys.executable, gen, log, str(size)], check=True)
                row["source"] = "gen_pytest_log.py"
            else:
                row["source"] = replicate(args.bench, parser, log, size)
            row[f"tests{size}"] = len(parse(args.bench, parser, log))
            bench_argv = [args.bench, "parse-log", "--parser", parser, log]
            grep_argv = ["grep", "-c", "-E", GREP, log]
            order = [("bench", bench_argv), ("grep", grep_argv)]
            if args.base:
                base_argv = [args.base, "parse-log", "--parser", parser, log]
                order.insert(0, ("base", base_argv))
                if parse(args.base, parser, log) != parse(args.bench, parser, log):
                    sys.exit(f"{parser} at {size} MB: base and bench outputs differ")
            times = {which: [] for which, _ in order}
            out = os.path.join(work, "stdout")
            for r in range(args.rounds):
                for which, argv in order if r % 2 == 0 else reversed(order):
                    times[which].append(timed(argv, out))
            row[size] = (statistics.median(times["bench"]), statistics.median(times["grep"]))
            if args.base:
                row[("base", size)] = statistics.median(times["base"])
            os.remove(log)
        rows.append(row)
        print(fmt_row(row, sizes), flush=True)
    table = [header(sizes, bool(args.base))] + [fmt_row(r, sizes) for r in rows]
    worst = max(rows, key=lambda r: r[sizes[-1]][0] / r[sizes[-1]][1])
    b, g = worst[sizes[-1]]
    table.append("")
    table.append(
        f"worst at {sizes[-1]} MB: {worst['parser']}, {b * 1e3:.0f} ms against grep's "
        f"{g * 1e3:.0f} ms ({b / g:.2f}x)"
    )
    text = "\n".join(table) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


def header(sizes, base=False):
    cell = "base ms -> bench ms / grep ms (x -> x)" if base else "bench ms / grep ms (x)"
    cols = ["parser", "log"] + [f"{s} MB: {cell}" for s in sizes]
    if 10 in sizes and 50 in sizes:
        cols.append("growth 10->50")
    cols.append(f"tests at {sizes[-1]} MB")
    return "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols)


def fmt_row(row, sizes):
    cells = [row["parser"], row["source"]]
    for s in sizes:
        b, g = row[s]
        if ("base", s) in row:
            a = row[("base", s)]
            cells.append(
                f"{a * 1e3:.0f} -> {b * 1e3:.0f} / {g * 1e3:.0f} ({a / g:.2f}x -> {b / g:.2f}x)"
            )
        else:
            cells.append(f"{b * 1e3:.0f} / {g * 1e3:.0f} ({b / g:.2f}x)")
    if 10 in sizes and 50 in sizes:
        cells.append(f"{row[50][0] / (5 * row[10][0]):.2f}")
    cells.append(str(row[f"tests{sizes[-1]}"]))
    return "| " + " | ".join(cells) + " |"


if __name__ == "__main__":
    main()
