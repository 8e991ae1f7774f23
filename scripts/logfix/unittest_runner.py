#!/usr/bin/env python3
"""Run unittest discovery with verbose (-v) console output and, in the same run, record each
result with its description as JSON lines (the ground truth for the `unittest` fixtures).

    python3 -u unittest_runner.py START_DIR RESULTS.jsonl
"""
import json
import sys
import unittest


class RecordingResult(unittest.TextTestResult):
    sink = None

    def _record(self, test, status):
        RecordingResult.sink.write(json.dumps({"description": self.getDescription(test), "status": status}) + "\n")

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

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._record(test, "pass")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record(test, "fail")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._record(subtest, "skip" if issubclass(err[0], unittest.SkipTest) else "fail")


def main():
    start, results = sys.argv[1], sys.argv[2]
    with open(results, "w", encoding="utf-8") as sink:
        RecordingResult.sink = sink
        suite = unittest.defaultTestLoader.discover(start, top_level_dir=start)
        runner = unittest.TextTestRunner(verbosity=2, resultclass=RecordingResult)
        result = runner.run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
