import unittest

from wrap import wrap


class TestWrap(unittest.TestCase):
    def test_empty(self):
        self.assertEqual(wrap("", 10), [])

    def test_short_text_one_line(self):
        self.assertEqual(wrap("hello", 10), ["hello"])


if __name__ == "__main__":
    unittest.main()
