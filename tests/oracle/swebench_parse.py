#!/usr/bin/env python3
"""The official SWE-bench log parsers (the `swebench` package, 5.0.2) on fixture logs.

    python3 tests/oracle/swebench_parse.py CASES.json

CASES.json is a list of {"parser": "parse_log_jest", "log_path": "...", "instance_id": "...",
"version": "..."}: upstream's parser function name (a key of PARSER_REGISTRY), the log, and the
two TestSpec fields upstream's per-instance parsers read. Prints one JSON list, per case
{"statuses": {name: status word}} in the parser's insertion order, or {"error": "..."} when
the parser raises.
"""

import contextlib
import json
import sys
import types

from swebench.harness.log_parsers import PARSER_REGISTRY


def parse(case):
    spec = types.SimpleNamespace(
        instance_id=case.get("instance_id", ""), version=case.get("version", "")
    )
    with open(case["log_path"], encoding="utf-8", errors="replace") as f:
        log = f.read()
    try:
        # Some parsers print warnings (maven's "no BUILD result"): keep stdout for the JSON.
        with contextlib.redirect_stdout(sys.stderr):
            out = PARSER_REGISTRY[case["parser"]](log, spec)
    except Exception as e:  # upstream raises for some inputs: report it
        return {"error": f"{type(e).__name__}: {e}"}
    return {"statuses": [[k, v] for k, v in out.items()]}


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    json.dump([parse(c) for c in cases], sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
