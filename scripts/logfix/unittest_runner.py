#!/usr/bin/env python3
"""Run unittest discovery with verbose (-v) console output and, in the same run, record each
result as JSON lines (the ground truth for the `unittest` fixtures). The Django demo project
(demo/django/site_conf/runner.py) uses the same result class through Django's own runner.

Each record holds `id` (`str(test)`: `test_x (mod.Class.test_x)` on Python >= 3.11), the
`description` verbose mode prints (the id and, for a test with a docstring, a second line with
its first line), `subtest` (the description of the subtest when the result is one's, whose
`id` is then its parent test's) and `status` (pass / fail / skip: unittest's own classes under bench's status mapping,
docs/parsers.md: an expected failure is fail, an unexpected success pass).

    python3 -u unittest_runner.py START_DIR RESULTS.jsonl
"""
import contextlib
import json
import sys
import unittest


class RecordingResult(unittest.TextTestResult):
    sink = None

    def _record(self, test, status):
        subtest = None
        if isinstance(test, unittest.case._SubTest):
            subtest = str(test)
            test = test.test_case
        RecordingResult.sink.write(json.dumps({
            "id": str(test),
            "description": self.getDescription(test),
            "subtest": subtest,
            "status": status,
        }) + "\n")

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "pass")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "fail")

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "fail")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skip")

    # bench's status mapping (docs/parsers.md): what the body did, whatever was expected.
    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._record(test, "fail")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record(test, "pass")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._record(subtest, "skip" if issubclass(err[0], unittest.SkipTest) else "fail")


@contextlib.contextmanager
def open_sink(path):
    with open(path, "w", encoding="utf-8") as sink:
        RecordingResult.sink = sink
        try:
            yield
        finally:
            RecordingResult.sink = None


def main():
    start, results = sys.argv[1], sys.argv[2]
    with open_sink(results):
        suite = unittest.defaultTestLoader.discover(start, top_level_dir=start)
        runner = unittest.TextTestRunner(verbosity=2, resultclass=RecordingResult)
        result = runner.run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
