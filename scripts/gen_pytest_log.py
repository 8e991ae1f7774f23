#!/usr/bin/env python3
"""Writes a realistic generated `pytest -v -rA` log of about SIZE_MB megabytes to PATH:
progress lines (with reasons and percentages), captured output, tracebacks, warnings, and the
short test summary (`SKIPPED [1] path:line: reason` lines included). Seeded, so the same
arguments give the same bytes. Used by scripts/bench-parsers.sh and bench-parsers-all.sh.

    gen_pytest_log.py PATH SIZE_MB
"""
import random, sys
path, size_mb = sys.argv[1], int(sys.argv[2])
target = size_mb * 1024 * 1024
rng = random.Random(42)
outcomes = ["PASSED"] * 85 + ["FAILED"] * 6 + ["SKIPPED"] * 4 + ["ERROR"] * 2 + ["XFAIL"] * 2 + ["XPASS"]
noise = [
    "    def test_something(self):",
    ">       assert result == expected",
    "E       AssertionError: assert {'a': 1, 'b': 2} == {'a': 1, 'b': 3}",
    "E         Differing items:",
    "E         {'b': 2} != {'b': 3}",
    "src/package/module.py:123: in helper",
    "    return self._compute(value, options=options, retries=3, timeout=30.0)",
    "----------------------------- Captured stdout call -----------------------------",
    "DEBUG    package.module:module.py:88 connecting to database at localhost:5432",
    "INFO     package.worker:worker.py:42 processed 128 items in 0.034s",
    "  /usr/lib/python3/site-packages/pkg/_compat.py:12: DeprecationWarning: the imp module is deprecated",
]
results = []
with open(path, "w") as f:
    f.write("============================= test session starts ==============================\n")
    f.write("platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.6.0 -- /usr/bin/python3\n")
    f.write("collected many items\n\n")
    written, i = 0, 0
    body_target = target * 0.82
    while written < body_target:
        mod = f"tests/unit/pkg_{i // 400:04d}/test_module_{i // 40:05d}.py"
        name = f"{mod}::TestClass{i % 7}::test_case_{i}"
        if i % 9 == 0:
            name += f"[param {i % 13}-value{i % 5}]"
        o = rng.choice(outcomes)
        results.append((name, o, mod))
        reason = " (reason text)" if o in ("SKIPPED", "XFAIL", "XPASS") else ""
        line = f"{name} {o}{reason}".ljust(70) + f" [{(i % 100):3d}%]\n"
        for _ in range(rng.randint(2, 9)):
            line += rng.choice(noise) + "\n"
        f.write(line)
        written += len(line)
        i += 1
    f.write("\n=========================== short test summary info ============================\n")
    order = {"PASSED": 0, "SKIPPED": 1, "XFAIL": 2, "XPASS": 3, "ERROR": 4, "FAILED": 5}
    for name, o, mod in sorted(results, key=lambda r: order[r[1]]):
        if o == "SKIPPED":
            f.write(f"SKIPPED [1] {mod}:10: reason text\n")
        elif o in ("FAILED", "ERROR"):
            f.write(f"{o} {name} - AssertionError: assert 1 == 2\n")
        elif o in ("XFAIL", "XPASS"):
            f.write(f"{o} {name} - reason text\n")
        else:
            f.write(f"{o} {name}\n")
    f.write(f"===== {len(results)} tests in 123.45s (0:02:03) =====\n")
