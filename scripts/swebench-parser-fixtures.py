#!/usr/bin/env python3
"""Writes the expected results of bench's upstream-compatible SWE-bench parsers
(tests/fixtures/logs/swebench-*/<case>.expected.json) by running the official parsers of the
installed `swebench` package (5.0.2) on each <case>.log: upstream's status words mapped as bench
maps them (PASSED/XFAIL -> pass, FAILED/ERROR -> fail, anything else -> skip).

    pip install swebench==5.0.2
    python3 scripts/swebench-parser-fixtures.py tests/fixtures/logs

The directory `swebench-NAME` holds logs of upstream's `parse_log_NAME` (`-` -> `_`).
tests/swebench_parsers.rs checks, status word by status word, that bench's parsers agree with
these parsers on every fixture.
"""

import json
import pathlib
import sys
import types

from swebench.harness.log_parsers import PARSER_REGISTRY


# bench's parsers for the functions upstream's `parse_log_next` and `parse_log_lighthouse`
# pick by the row's version: the dispatcher and a version that picks each.
BY_VERSION = {
    "next-v1": ("parse_log_next", "1.0"),
    "next-v2": ("parse_log_next", "1.27"),
    "lighthouse-mocha": ("parse_log_lighthouse", "9.5"),
    "lighthouse-json": ("parse_log_lighthouse", "2.0"),
}


def main(logs):
    for d in sorted(pathlib.Path(logs).glob("swebench-*")):
        name = d.name[len("swebench-"):]
        upstream, version = BY_VERSION.get(name, ("parse_log_" + name.replace("-", "_"), ""))
        spec = types.SimpleNamespace(instance_id="", version=version)
        for log in sorted(d.glob("*.log")):
            raw = PARSER_REGISTRY[upstream](log.read_text(errors="replace"), spec)
            out = {}
            for k, v in raw.items():
                out[k] = "pass" if v in ("PASSED", "XFAIL") else "fail" if v in ("FAILED", "ERROR") else "skip"
            log.with_suffix(".expected.json").write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
