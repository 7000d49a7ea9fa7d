"""Splitting a filter expression into tokens that remember where they start.

Every token carries its character offset so that the parser can point a caret
at the exact place an expression goes wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcpsniff.filter.errors import FilterError

#: Token kinds.
WORD = "word"  # a bare word: field name, keyword, value or free text
STRING = "string"  # a quoted string, escapes resolved
OP = "op"  # a comparison operator
LPAREN = "("
RPAREN = ")"
AND = "and"
OR = "or"
NOT = "not"
END = "end"

#: Comparison operators, longest first so that ``<=`` is not read as ``<``.
OPERATORS = ("==", "!=", "!~", "<=", ">=", "~", "<", ">", "=")
#: Symbolic spellings of the boolean keywords (Wireshark accepts both).
_SYMBOLS = {"&&": AND, "||": OR, "!": NOT}
_KEYWORDS = {"and": AND, "or": OR, "not": NOT}
#: Characters that end a bare word.
_STOP = set(" \t\r\n()\"'=!<>~&|")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"}


@dataclass(frozen=True, slots=True)
class Token:
    """One token: its kind, its text (quotes removed for strings) and its offset."""

    kind: str
    text: str
    pos: int


def tokenize(source: str) -> list[Token]:
    """The tokens of ``source``, ending with an ``END`` token. Raises ``FilterError``."""
    tokens: list[Token] = []
    i, n = 0, len(source)
    while i < n:
        ch = source[i]
        if ch.isspace():
            i += 1
            continue
        if ch in "()":
            tokens.append(Token(ch, ch, i))
            i += 1
            continue
        if ch in "\"'":
            start = i
            text, i = _string(source, i)
            tokens.append(Token(STRING, text, start))
            continue
        two = source[i : i + 2]
        if two in _SYMBOLS:
            tokens.append(Token(_SYMBOLS[two], two, i))
            i += 2
            continue
        op = next((o for o in OPERATORS if source.startswith(o, i)), None)
        if op is not None:
            tokens.append(Token(OP, "==" if op == "=" else op, i))
            i += len(op)
            continue
        if ch == "!":
            tokens.append(Token(NOT, ch, i))
            i += 1
            continue
        if ch in "&|":
            raise FilterError(f"unexpected {ch!r} (use 'and' / 'or', or && / ||)", source, i)
        start = i
        while i < n and source[i] not in _STOP:
            i += 1
        word = source[start:i]
        kind = _KEYWORDS.get(word.lower(), WORD)
        tokens.append(Token(kind, word, start))
    tokens.append(Token(END, "", n))
    return tokens


def _string(source: str, start: int) -> tuple[str, int]:
    """A quoted string starting at ``start``: its text and the offset after it."""
    quote = source[start]
    out: list[str] = []
    i = start + 1
    while i < len(source):
        ch = source[i]
        if ch == quote:
            return "".join(out), i + 1
        if ch == "\\" and i + 1 < len(source):
            nxt = source[i + 1]
            # An unknown escape keeps its backslash: regexes need \d, \s, \.
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    raise FilterError(f"unterminated string (no closing {quote})", source, start)
