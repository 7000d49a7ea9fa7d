"""A regular expression compiled when first used, not when its module is imported.

``re.compile`` runs Python code (the parser and compiler of ``re``): the
133 patterns ``mcpsniff check`` used to compile at import cost about 105
million instructions, a sixth of its start-up, paid before the first
record is read and, with ``--jobs``, before any worker starts
(docs/performance.md, "Start-up"). Most of them belong to verdicts a
clean session never reaches (hidden instructions in a tool description,
a diagnosis of broken JSON, a secret in a value). ``lazy`` gives such a
pattern a stand-in that compiles it at the first method call or attribute
read and from then on hands out the compiled pattern's own bound methods,
so a pattern in use costs what the compiled one costs.
"""

from __future__ import annotations

import re
from typing import Any, AnyStr, cast

#: What a stand-in answers once compiled: ``re.Pattern``'s methods and attributes.
_ATTRIBUTES = (
    "search",
    "match",
    "fullmatch",
    "finditer",
    "findall",
    "sub",
    "subn",
    "split",
    "scanner",
    "pattern",
    "flags",
    "groups",
    "groupindex",
)


class _LazyPattern:
    """Compiles its pattern on first use, then answers with the compiled pattern's attributes."""

    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        # Called only for what the instance does not hold yet: the first use.
        if name.startswith("__") or name not in _ATTRIBUTES:
            raise AttributeError(name)
        compiled = re.compile(*self._source)
        for attribute in _ATTRIBUTES:
            setattr(self, attribute, getattr(compiled, attribute))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self._source[0]!r}, {self._source[1]!r})"


def lazy(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """A stand-in for ``re.compile(pattern, flags)``, compiled at its first use.

    It has ``re.Pattern``'s methods and attributes (``search``, ``sub``,
    ``pattern``...), not its type: give it to the functions of ``re`` as
    ``pattern.pattern`` if ever, and never to ``isinstance``.
    """
    return cast("re.Pattern[AnyStr]", _LazyPattern(pattern, flags))


__all__ = ["lazy"]
