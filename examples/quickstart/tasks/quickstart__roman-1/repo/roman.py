"""Convert integers to Roman numerals."""

_NUMERALS = [
    (1000, "M"),
    (500, "D"),
    (100, "C"),
    (50, "L"),
    (10, "X"),
    (5, "V"),
    (1, "I"),
]


def to_roman(n):
    """Return the Roman numeral for an integer 1 <= n <= 3999."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError("expected an int, got %r" % (n,))
    if not 1 <= n <= 3999:
        raise ValueError("out of range (1..3999): %r" % (n,))
    out = []
    for value, symbol in _NUMERALS:
        while n >= value:
            out.append(symbol)
            n -= value
    return "".join(out)
