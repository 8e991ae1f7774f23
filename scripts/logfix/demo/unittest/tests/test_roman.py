import sys
import unittest


class TestRoman(unittest.TestCase):
    def test_four(self):
        self.assertEqual("IV", "IV")

    def test_fails(self):
        self.assertEqual(1, 2)

    def test_errors(self):
        raise ValueError("boom")

    @unittest.skip("not today")
    def test_skipped(self):
        pass

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(1, 2)

    @unittest.expectedFailure
    def test_unexpected_success(self):
        pass

    def test_docstring(self):
        """Checks that a docstring replaces the name in verbose output."""
        self.assertTrue(True)

    def test_docstring_fails(self):
        """A failing test with a docstring."""
        self.fail("nope")

    def test_noisy(self):
        print("some output the test prints")
        print("and a second line")
        sys.stdout.flush()

    def test_ünïcode(self):
        pass

    def test_subtests(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertNotEqual(i, 1)

    def test_subtests_pass(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 3)

    def test_subtests_docstring(self):
        """Subtests of a test with a docstring ... that has dots."""
        for word in ["a", "bb"]:
            with self.subTest(word=word):
                self.assertEqual(len(word), 1)

    def test_subtest_message_and_bare(self):
        with self.subTest("lookup", key="k"):
            {}["k"]
        with self.subTest():
            self.fail("bare subtest")

    def test_subtest_skipped(self):
        for i in range(2):
            with self.subTest(i=i):
                if i:
                    self.skipTest("odd")


class TestBrokenClass(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("class setup failed")

    def test_never_runs(self):
        pass
