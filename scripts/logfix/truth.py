#!/usr/bin/env python3
"""Derive expected parser results (name -> pass/fail/skip) from a test runner's own
machine-readable output, applying bench's documented naming rule for each parser.

Used by scripts/gen-log-fixtures.sh. Deliberately independent of the Rust parsers: it reads
JSON event streams and XML reports, never the human-readable log. Output: sorted JSON on
stdout.

    truth.py pytest-reportlog FILE {live|swebench} [summary-only]
                                    (summary-only: the log has no -v lines, so tests that
                                    pytest reports as SKIPPED, which the -rA summary names
                                    only as "SKIPPED [N] file:line", are left out)
    truth.py unittest FILE          (JSONL written by unittest_runner.py, also through
                                    Django's runner)
    truth.py cargo-json FILE        (cargo test ... --format json 2>&1)
    truth.py go-json FILE [PACKAGES] (go test -json; with PACKAGES, a file listing the
                                    packages as `go list` prints them, events are replayed
                                    package by package in that order, which is the order
                                    in which `go test -v` prints its buffered output)
    truth.py junit FILE...          (JUnit XML files)
    truth.py junit-log FILE         (the JUnit XML documents a log holds, `cat *.xml` style)
    truth.py ctest-junit FILE       (ctest --output-junit, read with CTest's own verdicts)
    truth.py node FILE {leaf|path}  (JSONL written by reporter.mjs; leaf: a test's own name,
                                    path: its groups' names and its own joined by ' > ')
    truth.py vitest FILE {pipe|tty} (JSONL written by vitest-reporter.mjs; pipe: only the tests
                                    whose result reached the reporters, which vitest 1.x/2.x
                                    print a line for off a terminal; tty: every test, as the
                                    final tree lists them)
"""
import json
import sys
import xml.etree.ElementTree as ET


def pytest_reportlog(path, mapping, summary_only=False):
    # Per node id, the pytest outcome word as the -rA summary would print it, last wins.
    outcome = {}
    for line in open(path, encoding="utf-8"):
        rep = json.loads(line)
        kind = rep.get("$report_type")
        nodeid = rep.get("nodeid")
        if kind == "CollectReport":
            if rep["outcome"] == "failed" and nodeid:
                outcome[nodeid] = "ERROR"
            continue
        if kind != "TestReport":
            continue
        when, res = rep["when"], rep["outcome"]
        xfail = "wasxfail" in rep
        if when == "setup":
            if res == "failed":
                outcome[nodeid] = "ERROR"
            elif res == "skipped":
                outcome[nodeid] = "XFAIL" if xfail else "SKIPPED"
        elif when == "call":
            if res == "passed":
                outcome[nodeid] = "XPASS" if xfail else "PASSED"
            elif res == "failed":
                outcome[nodeid] = "FAILED"
            else:
                outcome[nodeid] = "XFAIL" if xfail else "SKIPPED"
        elif when == "teardown" and res == "failed":
            outcome[nodeid] = "ERROR"
    if mapping == "live":
        table = {"PASSED": "pass", "XPASS": "pass", "SKIPPED": "skip",
                 "FAILED": "fail", "ERROR": "fail", "XFAIL": "fail"}
    else:
        table = {"PASSED": "pass", "XFAIL": "pass", "FAILED": "fail", "ERROR": "fail",
                 "SKIPPED": "skip", "XPASS": "skip"}
    return {k: table[v] for k, v in outcome.items() if not (summary_only and v == "SKIPPED")}


def unittest_results(path):
    # bench's unittest rule: a test is named by its id (`str(test)`, the first line of the
    # verbose description, never the docstring line); a subtest's result belongs to its
    # parent test. Per test: fail if any result of it or of its subtests is a failure, else
    # pass if any is a pass, else skip (a test whose only result is a skipped subtest).
    results = {}
    for line in open(path, encoding="utf-8"):
        rec = json.loads(line)
        results.setdefault(rec["id"], set()).add(rec["status"])
    out = {}
    for name, statuses in results.items():
        out[name] = next(s for s in ("fail", "pass", "skip") if s in statuses)
    return out


def cargo_json(path):
    out = {}
    suite = None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        stripped = line.strip()
        if line.startswith(" ") and stripped.startswith("Running "):
            suite = stripped[len("Running "):].strip()
            continue
        if line.startswith(" ") and stripped.startswith("Doc-tests "):
            suite = stripped
            continue
        if not stripped.startswith("{"):
            continue
        try:
            ev = json.loads(stripped)
        except ValueError:
            continue
        if ev.get("type") != "test" or "name" not in ev:
            continue
        status = {"started": "fail", "ok": "pass", "failed": "fail", "ignored": "skip"}.get(ev["event"])
        if status is None:
            continue
        name = ev["name"] if suite is None else f"{suite}::{ev['name']}"
        out[name] = status
    return out


def go_json(path, packages=None):
    out = {}
    events = [json.loads(line) for line in open(path, encoding="utf-8") if line.startswith("{")]
    if packages:
        order = {p: i for i, p in enumerate(open(packages, encoding="utf-8").read().split())}
        events.sort(key=lambda ev: order.get(ev.get("Package"), len(order)))  # stable
    for ev in events:
        status = {"pass": "pass", "fail": "fail", "skip": "skip"}.get(ev.get("Action"))
        if status and ev.get("Test"):
            out[ev["Test"]] = status
    return out


def junit(paths):
    out = {}
    for path in paths:
        root = ET.parse(path).getroot()
        for case in root.iter("testcase"):
            cls, name = case.get("classname") or "", case.get("name") or ""
            full = name if not cls or cls == name else f"{cls}.{name}"
            tags = {child.tag for child in case}
            # bench's status mapping (docs/parsers.md): pytest's xfail, written as
            # <skipped type="pytest.xfail">, ran and failed: fail.
            xfail = any(child.tag == "skipped" and child.get("type") == "pytest.xfail"
                        for child in case)
            if tags & {"failure", "error"} or xfail:
                out[full] = "fail"
            elif "skipped" in tags:
                out[full] = "skip"
            else:
                out[full] = "pass"
    return out


def junit_log(path):
    # The XML documents of a log that concatenates reports (`cat *.xml` with shell noise):
    # each <testsuites> or <testsuite> element up to its end tag, read as a report.
    import re
    import tempfile
    text = open(path, encoding="utf-8").read()
    matches = [m.group(0) for m in re.finditer(r"<(testsuites?)\b.*?</\1>", text, flags=re.S)]
    paths = []
    for doc in matches:
        f = tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False, encoding="utf-8")
        f.write(doc)
        f.close()
        paths.append(f.name)
    return junit(paths)


def ctest_junit(path):
    # CTest's JUnit output disagrees with its own console verdict in two cases: a DISABLED
    # test has no child element (generic JUnit rule: pass) and a test whose executable is
    # missing has <skipped> (generic rule: skip), while CTest's summary lists the former
    # under "did not run" and the latter under "FAILED". Use the status attribute and the
    # skip reason to recover CTest's verdicts.
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        status = case.get("status")
        children = {child.tag: child for child in case}
        if "failure" in children or "error" in children or status == "fail":
            verdict = "fail"
        elif status == "disabled":
            verdict = "skip"
        elif "skipped" in children:
            message = children["skipped"].get("message") or ""
            verdict = "skip" if message.startswith("SKIP_") else "fail"
        else:
            verdict = "pass"
        out[case.get("name")] = verdict
    return out


def node(path, naming):
    # Events of reporter.mjs, in completion order per file: a test's subtests finish before
    # it, at nesting + 1. bench's rule (tap.rs, node_test.rs, docs/parsers.md): every test is
    # counted, a group (a describe block or a parent test) too, with the result node gives it;
    # skipped and todo tests are skip. Names are the test's own (`leaf`) or the group names and
    # its own joined with " > " (`path`).
    by_file = {}
    for line in open(path, encoding="utf-8"):
        ev = json.loads(line)
        by_file.setdefault(ev["file"], []).append(ev)
    out = {}
    for events in by_file.values():
        done = []  # [outermost nesting reached, names] of every finished test
        for ev in events:
            if ev.get("skip") or ev.get("todo"):
                status = "skip"
            else:
                status = "pass" if ev["type"] == "test:pass" else "fail"
            n = ev["nesting"]
            # The tests finished one level deeper are this one's descendants.
            for d in done:
                if d[0] == n + 1:
                    d[0] = n
                    d[1].insert(0, ev["name"])
            done.append([n, [ev["name"]], status])
        for _, names, status in done:
            out[names[-1] if naming == "leaf" else " > ".join(names)] = status
    return out


def vitest(path, mode):
    # Records of vitest-reporter.mjs. bench's rule (vitest.rs, docs/parsers.md): pass, fail,
    # and skip for skipped and todo tests alike. Off a terminal vitest 1.x/2.x print no line
    # for a test without a result (todo, `it.skip`), so `pipe` leaves those out.
    out = {}
    for line in open(path, encoding="utf-8"):
        rec = json.loads(line)
        if mode == "pipe" and not rec["reported"]:
            continue
        if rec["mode"] in ("skip", "todo") or rec["state"] in ("skip", "todo", None):
            status = "skip"
        else:
            status = "pass" if rec["state"] == "pass" else "fail"
        out[rec["name"]] = status
    return out


def main(argv):
    kind, rest = argv[1], argv[2:]
    result = {
        "pytest-reportlog": lambda: pytest_reportlog(rest[0], rest[1], rest[2:] == ["summary-only"]),
        "unittest": lambda: unittest_results(rest[0]),
        "cargo-json": lambda: cargo_json(rest[0]),
        "go-json": lambda: go_json(rest[0], rest[1] if len(rest) > 1 else None),
        "junit": lambda: junit(rest),
        "junit-log": lambda: junit_log(rest[0]),
        "ctest-junit": lambda: ctest_junit(rest[0]),
        "node": lambda: node(rest[0], rest[1]),
        "vitest": lambda: vitest(rest[0], rest[1]),
    }[kind]()
    json.dump(result, sys.stdout, indent=2, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv)
