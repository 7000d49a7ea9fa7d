"""Fitting traffic text into a fixed-width terminal column.

A name from a trace header is escaped first (``terminal_safe``: ``\\x1b`` is
four visible characters), and only then measured, cut and padded, so the
columns line up on what the terminal really shows. A cut never splits an
escape (``\\x1`` would read as another character), and a wide character (CJK,
East Asian Width W or F) counts two columns, a combining mark none.
"""

from __future__ import annotations

import unicodedata

from mcpsniff.core.escape import terminal_safe

ELLIPSIS = "…"


def _char_width(char: str) -> int:
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_width(text: str) -> int:
    """The columns ``text`` (already terminal-safe) takes on a terminal."""
    if text.isascii():
        return len(text)
    return sum(_char_width(c) for c in text)


def fit(text: str, width: int) -> str:
    """``text`` escaped, cut with ``…`` to at most ``width`` columns, escapes kept whole."""
    pieces = [terminal_safe(c) for c in text]
    if display_width("".join(pieces)) <= width:
        return "".join(pieces)
    room = width - 1  # for the ellipsis
    out: list[str] = []
    used = 0
    for piece in pieces:
        w = display_width(piece)
        if used + w > room:
            break
        out.append(piece)
        used += w
    return "".join(out) + ELLIPSIS


def pad(text: str, width: int) -> str:
    """``fit(text, width)`` padded with spaces to exactly ``width`` columns."""
    shown = fit(text, width)
    return shown + " " * max(0, width - display_width(shown))
