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


class TestBrokenClass(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("class setup failed")

    def test_never_runs(self):
        pass
