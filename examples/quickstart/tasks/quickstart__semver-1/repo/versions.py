"""Compare dotted release versions like "1.4.2" (an optional leading "v" is ignored)."""


def parse(version):
    """Split a version string into a 3-tuple of components.

    Missing trailing components count as zero: "1.2" == "1.2.0".
    """
    text = version.strip()
    if text[:1] in ("v", "V"):
        text = text[1:]
    parts = text.split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError("invalid version: %r" % (version,))
    parts += ["0"] * (3 - len(parts))
    return tuple(parts)


def compare(a, b):
    """Return -1 if a < b, 0 if a == b, 1 if a > b."""
    pa, pb = parse(a), parse(b)
    return (pa > pb) - (pa < pb)


def latest(versions):
    """Return the newest version from an iterable of version strings."""
    return max(versions, key=parse)
