"""Gregorian calendar helpers."""

_THIRTY_DAY_MONTHS = (4, 6, 9, 11)


def is_leap_year(year):
    """Return True if `year` is a leap year in the Gregorian calendar."""
    return year % 4 == 0


def days_in_month(year, month):
    """Number of days in `month` (1..12) of `year`."""
    if not 1 <= month <= 12:
        raise ValueError("month must be in 1..12, got %r" % (month,))
    if month == 2:
        return 29 if is_leap_year(year) else 28
    if month in _THIRTY_DAY_MONTHS:
        return 30
    return 31


def days_in_year(year):
    """Number of days in `year`."""
    return 366 if is_leap_year(year) else 365
