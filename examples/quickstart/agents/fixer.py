#!/usr/bin/env python3
"""fixer: a deterministic toy "agent" for the bench quickstart.

Run as `python3 fixer.py` with the task workspace as the current directory.
The problem statement is read from the file named by $BENCH_PROBLEM_FILE (or,
failing that, from $BENCH_PROBLEM_STATEMENT).

It knows a handful of issues by keywords in the problem statement and, for a
recognised issue, applies a hard-coded textual find/replace to the workspace
files. It never looks at hidden tests or reference patches (it only sees the
workspace). On purpose it is not a very good agent:

  * three issues are fixed properly;
  * one issue (slugify) gets a plausible but wrong fix: it hard-codes "-"
    as the separator, which breaks the custom `sep` argument;
  * everything else gets "no idea" and no change.

It always exits 0; what it did is printed to stdout.
"""

import os
import sys


class Fix:
    def __init__(self, name, keywords, path, edits):
        self.name = name
        self.keywords = keywords  # all must occur (case-insensitive) in the statement
        self.path = path          # file to edit, relative to the workspace
        self.edits = edits        # list of (find, replace) pairs

    def matches(self, statement):
        low = statement.lower()
        return all(k.lower() in low for k in self.keywords)


FIXES = [
    Fix(
        "roman numerals: add the subtractive pairs",
        ["to_roman", "subtractive"],
        "roman.py",
        [(
            '    (1000, "M"),\n'
            '    (500, "D"),\n'
            '    (100, "C"),\n'
            '    (50, "L"),\n'
            '    (10, "X"),\n'
            '    (5, "V"),\n'
            '    (1, "I"),\n',
            '    (1000, "M"),\n'
            '    (900, "CM"),\n'
            '    (500, "D"),\n'
            '    (400, "CD"),\n'
            '    (100, "C"),\n'
            '    (90, "XC"),\n'
            '    (50, "L"),\n'
            '    (40, "XL"),\n'
            '    (10, "X"),\n'
            '    (9, "IX"),\n'
            '    (5, "V"),\n'
            '    (4, "IV"),\n'
            '    (1, "I"),\n',
        )],
    ),
    Fix(
        "leap years: apply the century / 400 rule",
        ["is_leap_year", "1900", "400"],
        "datecal.py",
        [(
            "    return year % 4 == 0\n",
            "    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n",
        )],
    ),
    Fix(
        "lc: count a final line without trailing newline",
        ["lc", "trailing newline"],
        "bin/lc",
        [(
            "    while IFS= read -r line; do\n",
            '    while IFS= read -r line || [ -n "$line" ]; do\n',
        )],
    ),
    # Deliberately wrong: collapses and trims, but always with "-", ignoring sep.
    Fix(
        "slugify: collapse runs of separators and trim the ends",
        ["slugify", "separator"],
        "slug.py",
        [(
            '    text = re.sub(r"[^a-z0-9]", sep, text)\n'
            "    return text\n",
            '    text = re.sub(r"[^a-z0-9]+", "-", text)\n'
            '    return text.strip("-")\n',
        )],
    ),
]


def read_statement():
    path = os.environ.get("BENCH_PROBLEM_FILE")
    if path:
        try:
            with open(path, encoding="utf-8") as fh:
                return fh.read()
        except OSError as exc:
            print("fixer: cannot read BENCH_PROBLEM_FILE %r: %s" % (path, exc))
    return os.environ.get("BENCH_PROBLEM_STATEMENT", "")


def apply(fix):
    """Apply `fix` to the workspace; return True if the file was changed."""
    if not os.path.isfile(fix.path):
        print("fixer: recognised %r but %s does not exist" % (fix.name, fix.path))
        return False
    with open(fix.path, encoding="utf-8", newline="") as fh:
        text = fh.read()
    new = text
    for find, replace in fix.edits:
        if find not in new:
            print("fixer: recognised %r but the code in %s looks different" % (fix.name, fix.path))
            return False
        new = new.replace(find, replace, 1)
    with open(fix.path, "w", encoding="utf-8", newline="") as fh:
        fh.write(new)
    print("fixer: %s -> edited %s" % (fix.name, fix.path))
    return True


def main():
    statement = read_statement()
    if not statement.strip():
        print("fixer: no problem statement given; no idea")
        return 0
    title = statement.strip().splitlines()[0]
    print("fixer: issue: %s" % title)
    for fix in FIXES:
        if fix.matches(statement):
            apply(fix)
            return 0
    print("fixer: no idea")
    return 0


if __name__ == "__main__":
    sys.exit(main())
