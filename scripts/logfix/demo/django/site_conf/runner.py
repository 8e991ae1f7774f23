"""Django's own DiscoverRunner, with a result class that also records each result as JSON
(the ground truth for the `unittest/django-*` fixtures). BENCH_LOGFIX_HELP names the
directory of unittest_runner.py, BENCH_LOGFIX_RESULTS the JSONL file to write."""
import os
import sys

from django.test.runner import DiscoverRunner

sys.path.insert(0, os.environ["BENCH_LOGFIX_HELP"])
from unittest_runner import RecordingResult, open_sink  # noqa: E402


class RecordingRunner(DiscoverRunner):
    def get_resultclass(self):
        return RecordingResult

    def run_suite(self, suite, **kwargs):
        with open_sink(os.environ["BENCH_LOGFIX_RESULTS"]):
            return super().run_suite(suite, **kwargs)
