"""Greedy word wrapping."""


def wrap(text, width):
    """Split `text` into lines of at most `width` characters.

    Words are never broken: a word longer than `width` gets a line of its own.
    """
    if width < 1:
        raise ValueError("width must be positive, got %r" % (width,))
    lines = []
    current = ""
    for word in text.split():
        if not current:
            current = word
        elif len(current) + 1 + len(word) < width:
            current += " " + word
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def fill(text, width):
    """Like wrap(), but return a single string with newline-separated lines."""
    return "\n".join(wrap(text, width))
