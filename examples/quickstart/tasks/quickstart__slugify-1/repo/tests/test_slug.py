import unittest

from slug import slugify


class TestSlugify(unittest.TestCase):
    def test_simple(self):
        self.assertEqual(slugify("hello world"), "hello-world")

    def test_lowercases(self):
        self.assertEqual(slugify("ABC"), "abc")


if __name__ == "__main__":
    unittest.main()
