import unittest

from django.test import SimpleTestCase, TestCase

from .models import Question


class QuestionTests(TestCase):
    def test_create(self):
        Question.objects.create(text="why?")
        self.assertEqual(Question.objects.count(), 1)

    def test_docstring(self):
        """Saving a question keeps its text ... and the text is not empty."""
        q = Question.objects.create(text="how?")
        self.assertEqual(Question.objects.get(pk=q.pk).text, "how?")

    def test_docstring_fails(self):
        """A failing test with a docstring.

        Only the first line is printed."""
        self.assertEqual(Question.objects.count(), 1)

    def test_subtests_fail(self):
        for n in range(3):
            with self.subTest(n=n):
                self.assertLess(n, 2)

    def test_subtests_pass(self):
        for n in range(3):
            with self.subTest(n=n):
                self.assertLess(n, 3)


class PlainTests(SimpleTestCase):
    def test_ok(self):
        self.assertTrue(True)

    def test_docstring_subtest(self):
        """Subtests of a test with a docstring."""
        for word in ["a", "bb"]:
            with self.subTest(word=word):
                self.assertEqual(len(word), 1)

    def test_subtest_error_with_message(self):
        with self.subTest("lookup", key="missing"):
            {}["missing"]

    def test_subtest_skipped(self):
        for n in range(2):
            with self.subTest(n=n):
                if n:
                    self.skipTest("odd")

    @unittest.skip("not today")
    def test_skipped(self):
        pass

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(1, 2)

    def test_prints(self):
        print("output the test prints")
        print("ok")

    def test_errors(self):
        raise ValueError("boom")
