"""Turn arbitrary titles into URL-friendly slugs."""

import re
import unicodedata


def slugify(text, sep="-"):
    """Return a lowercase ASCII slug of `text`, words joined by `sep`."""
    text = unicodedata.normalize("NFKD", text)
    text = text.encode("ascii", "ignore").decode("ascii")
    text = text.lower()
    text = re.sub(r"[^a-z0-9]", sep, text)
    return text
