"""Whether any of a fixed set of byte literals occurs: one Hyperscan pass, no copy.

Redaction asks of every recorded frame whether one of its hints occurs in
the frame's lower case (core/redact.py); the answer is almost always no.
Lower-casing a frame copies it (about 6 instructions a byte) before the
automaton reads it again. Hyperscan (Intel's literal and regular expression
matcher, BSD-3, static wheels; not on Windows) folds ASCII case itself while
it reads, at about 5 instructions a byte for a set of literals, and its
case-insensitive mode folds ASCII letters only: exactly what
``bytes.lower()`` changes. So "no literal occurs in ``data`` without regard
to ASCII case" is "no lower-case literal occurs in ``data.lower()``".

``LiteralSearch.found`` answers True or False, or None where Hyperscan cannot
answer (no wheel for the platform, a CPU without the instructions it needs,
any error of a search): the caller then asks its own slower search.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

#: The ``hyperscan`` module once a database was compiled (loading its library
#: costs ~9 ms, which a command that never searches need not pay); None before.
hyperscan: Any = None

#: Hyperscan's block mode takes a length of 32 bits: longer data is not searched.
MAX_LENGTH = (1 << 31) - 1


def _pattern(literal: bytes) -> bytes:
    """``literal`` as a Hyperscan pattern: ASCII letters and digits as such, others ``\\xHH``."""
    return b"".join(
        bytes((byte,)) if chr(byte).isascii() and chr(byte).isalnum() else b"\\x%02x" % byte
        for byte in literal
    )


def _stop(*_match: object) -> bool:
    """Hyperscan's match handler: the first match ends the search."""
    return True


class _Scratch(threading.local):
    """Each thread's Hyperscan scratch space and the database it was made for.

    A search needs scratch space no other search is using at the same time,
    and it releases the interpreter lock; Hyperscan's "in use" flag is no lock,
    so threads that search at once each keep their own.
    """

    of: tuple[Any, Any] = (None, None)


class LiteralSearch:
    """Whether any of some byte literals occurs in a haystack, each with or without ASCII case."""

    __slots__ = ("_database", "_literals", "_scratch")

    def __init__(self, literals: Iterable[tuple[bytes, bool]]) -> None:
        """``literals``: (literal, caseless) pairs; a caseless literal matches in any ASCII case."""
        self._literals = tuple(dict.fromkeys(literals))
        if not self._literals or not all(literal for literal, _ in self._literals):
            raise ValueError("LiteralSearch needs at least one literal, none of them empty")
        #: None until the first search compiles it; False where Hyperscan cannot run.
        self._database: Any = None
        self._scratch = _Scratch()

    def _compile(self) -> Any:
        """The Hyperscan database of the literals; False where Hyperscan cannot run here."""
        global hyperscan
        try:
            import hyperscan as module
        except ImportError:  # no wheel for the platform (Windows)
            return False
        hyperscan = module
        single = module.HS_FLAG_SINGLEMATCH
        try:
            database = module.Database(mode=module.HS_MODE_BLOCK)
            database.compile(
                expressions=[_pattern(literal) for literal, _ in self._literals],
                ids=list(range(len(self._literals))),
                flags=[
                    single | module.HS_FLAG_CASELESS if fold else single
                    for _, fold in self._literals
                ],
            )
        except module.error:  # a CPU without the instructions it needs
            return False
        return database

    def found(self, data: bytes) -> bool | None:
        """Whether a literal occurs in ``data``; None when Hyperscan cannot tell here."""
        database, scratch = self._scratch.of
        if database is None or len(data) > MAX_LENGTH:
            # This thread's first search (or data Hyperscan cannot take).
            return self._first_found(data)
        try:
            # Positional: the binding parses keywords by making a str of each name.
            database.scan(data, _stop, 0, None, scratch)
        except hyperscan.ScanTerminated:
            return True
        except hyperscan.error:
            return None
        return False

    def _first_found(self, data: bytes) -> bool | None:
        """``found`` in a thread without its scratch space yet: compile, make it, search."""
        database = self._database
        if database is None:
            database = self._database = self._compile()
        if database is False or len(data) > MAX_LENGTH:
            return None
        try:
            scratch = hyperscan.Scratch(database)
        except hyperscan.error:
            return None
        self._scratch.of = (database, scratch)
        return self.found(data)
