import unittest

from datecal import days_in_month, is_leap_year


class TestDatecal(unittest.TestCase):
    def test_divisible_by_four(self):
        self.assertTrue(is_leap_year(2024))

    def test_common_year(self):
        self.assertFalse(is_leap_year(2023))

    def test_month_lengths(self):
        self.assertEqual(days_in_month(2023, 1), 31)
        self.assertEqual(days_in_month(2023, 4), 30)
        self.assertEqual(days_in_month(2023, 2), 28)
        self.assertEqual(days_in_month(2024, 2), 29)


if __name__ == "__main__":
    unittest.main()
