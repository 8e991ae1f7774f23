import unittest

from roman import to_roman


class TestRoman(unittest.TestCase):
    def test_one(self):
        self.assertEqual(to_roman(1), "I")

    def test_small_additive(self):
        self.assertEqual(to_roman(3), "III")
        self.assertEqual(to_roman(7), "VII")
        self.assertEqual(to_roman(30), "XXX")


if __name__ == "__main__":
    unittest.main()
