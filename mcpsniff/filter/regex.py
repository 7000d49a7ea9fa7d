"""The ``~`` operator's regular expressions: RE2, which runs in time linear in the text.

Python's ``re`` backtracks: ``(.|.)*z`` against a 60-character method name
takes longer than the universe, and it holds the interpreter lock while it
does, so one request froze the whole web UI (its event loop, its SIGTERM
handler) and one typed filter froze ``show``, ``check`` and ``stats``. The text
comes from traffic, so a peer sets that cost. RE2 (Google's engine, the
``google-re2`` wheel) guarantees time linear in the text and memory bounded by
its ``max_mem`` option, whatever the pattern.

RE2's syntax is Python's without the features that need backtracking:
backreferences (``\\1``, ``(?P=name)``) and lookaround (``(?=``, ``(?!``,
``(?<=``, ``(?<!``) are refused with a one-line error and a caret, as every
other bad pattern is. Repetition counts are at most 1000 (``x{1001}``).
"""

from __future__ import annotations

from collections.abc import Callable

import re2

from mcpsniff.filter.errors import FilterError

#: Memory one compiled pattern may use (RE2 refuses a bigger program: "pattern too large").
PATTERN_MEMORY = 8 << 20

Search = Callable[[str], bool]

_OPTIONS = re2.Options()
_OPTIONS.case_sensitive = False
_OPTIONS.max_mem = PATTERN_MEMORY
# RE2 logs every refused pattern to stderr through absl; the filter's own
# one-line error says it instead.
_OPTIONS.log_errors = False


def compile_search(pattern: str, source: str, where: int) -> Search:
    """A case-insensitive search for ``pattern``; ``FilterError`` at ``where`` when it is bad.

    ``where`` is the offset of the pattern's first character in ``source``;
    the caret points at the part RE2 named when it can be found there.
    """
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FilterError(
            "bad regular expression: a lone surrogate cannot be searched for",
            source,
            where + exc.start,
        ) from None
    try:
        compiled = re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        message, fragment = _reason(exc)
        raise FilterError(
            f"bad regular expression: {message}", source, where + _position(pattern, fragment)
        ) from None
    except (OverflowError, ValueError, MemoryError) as exc:  # whatever the binding raises
        raise FilterError(f"bad regular expression: {exc}", source, where) from None
    search = compiled.search

    def matches(text: str) -> bool:
        # RE2 reads UTF-8; a lone surrogate (legal in a JSON string) cannot be
        # encoded as such, so it is searched as U+FFFD.
        try:
            return search(text) is not None
        except UnicodeEncodeError:
            return search(text.encode("utf-8", "replace").decode("utf-8")) is not None

    return matches


def _reason(exc: BaseException) -> tuple[str, str]:
    """RE2's message (``"missing ]: [abc"``) whole, and the fragment it names."""
    arg = exc.args[0] if exc.args else ""
    text = arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)
    _what, sep, fragment = text.partition(": ")
    return (text, fragment) if sep else (text, "")


def _position(pattern: str, fragment: str) -> int:
    """Where ``fragment`` starts in ``pattern`` (0 when RE2 named none or it is not there)."""
    if not fragment:
        return 0
    found = pattern.find(fragment)
    return max(found, 0)
