"""Sum a numeric column of a CSV file with a header row.

usage: python3 csvsum.py FILE COLUMN
"""

import sys


def column_total(path, column):
    """Return the sum of the values in the column named `column`.

    Blank lines are ignored. Raises ValueError if the column does not exist.
    """
    with open(path, newline="") as fh:
        lines = fh.read().splitlines()
    header = lines[0].split(",")
    idx = header.index(column)
    total = 0.0
    for line in lines[1:]:
        if not line.strip():
            continue
        fields = line.split(",")
        total += float(fields[idx])
    return total


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        sys.stderr.write("usage: csvsum.py FILE COLUMN\n")
        return 2
    total = column_total(argv[0], argv[1])
    print("%g" % total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
