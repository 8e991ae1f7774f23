#!/usr/bin/env python3
"""The official SWE-bench grader (the `swebench` package, 5.0.2) on logs bench stored.

    python3 tests/oracle/swebench_grade.py CASES.json

CASES.json is a list of {"instance": <row>, "log_parser": "parse_log_django",
"eval_type": "pass_and_fail", "eval_script": "...", "log_path": "..."}: the row as the dataset
holds it, upstream's parser for its repository, the eval script bench ran and the eval script's
whole output. For each case it builds the TestSpec with upstream's `make_test_spec`, then runs
`get_logs_eval`, `get_eval_tests_report` and `get_resolution_status`, and prints one JSON list:
{"instance_id", "found", "statuses", "tests_status", "resolution"} per case.
"""

import json
import sys

from swebench.harness.constants import FAIL_TO_PASS, PASS_TO_PASS, EvalType
from swebench.harness.grading import (
    get_eval_tests_report,
    get_logs_eval,
    get_resolution_status,
)
from swebench.harness.utils import make_test_spec


def grade(case):
    row = dict(case["instance"])
    row.setdefault("version", "")
    row["image"] = "unused"
    row["log_parser"] = case["log_parser"]
    row["eval_type"] = case["eval_type"]
    row["eval_script"] = case["eval_script"]
    spec = make_test_spec(row)
    statuses, found = get_logs_eval(spec, case["log_path"])
    ref = {
        "instance_id": spec.instance_id,
        FAIL_TO_PASS: spec.FAIL_TO_PASS,
        PASS_TO_PASS: spec.PASS_TO_PASS,
    }
    report = get_eval_tests_report(statuses, ref, eval_type=EvalType(spec.eval_type))
    return {
        "instance_id": spec.instance_id,
        "found": found,
        "statuses": statuses,
        "tests_status": {
            k: report[k] for k in (FAIL_TO_PASS, PASS_TO_PASS)
        },
        "resolution": get_resolution_status(report) if found else "RESOLVED_NO",
    }


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    json.dump([grade(c) for c in cases], sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
