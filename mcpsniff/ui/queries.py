"""Filtering a session and summing it up, with the same code as ``show`` and ``stats``.

Both re-read the trace file (``filter.load_views``), so a filter means exactly
what it means on the command line, and the figures are exactly those of
``mcpsniff stats``. Results are cached per file size, so a trace that does
not grow is read once per expression.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpsniff.core.error_layers import LAYER_TITLES
from mcpsniff.filter import Filter, FilterError, compile_filter, load_views
from mcpsniff.stats.compute import compute
from mcpsniff.ui.follow import file_size
from mcpsniff.ui.model import SessionModel

#: Results remembered (per trace size, session and expression).
CACHE_SIZE = 64
#: Longest filter expression accepted.
EXPRESSION_LIMIT = 2000


class QueryCache:
    """A small LRU of query results keyed by (path, size, session, what)."""

    def __init__(self) -> None:
        self._items: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = make()
        with self._lock:
            self._items[key] = value
            while len(self._items) > CACHE_SIZE:
                self._items.popitem(last=False)
        return value


def parse(expression: str) -> Filter | dict[str, Any]:
    """The compiled filter, or ``{"error": ..., "column": ...}`` saying what is wrong."""
    if len(expression) > EXPRESSION_LIMIT:
        return {"error": f"the filter is longer than {EXPRESSION_LIMIT} characters"}
    try:
        return compile_filter(expression)
    except FilterError as exc:
        return {"error": str(exc), "caret": exc.caret()}


def matching_rows(path: Path, session: SessionModel, flt: Filter) -> list[int]:
    """The row numbers of ``session`` whose message (or event) ``flt`` matches."""
    rows: list[int] = []
    for view in load_views(path):
        if view.session != session.key or not flt.matches(view):
            continue
        n = session.row_for(view.seq, view.index)
        if n is not None:
            rows.append(n)
    return rows


def session_stats(path: Path, session: SessionModel) -> dict[str, Any]:
    """``mcpsniff stats --format json`` for one session, with the error layers' titles."""
    stats = compute(v for v in load_views(path) if v.session == session.key)
    out = stats.to_json()
    out["layer_titles"] = dict(LAYER_TITLES)
    return out


def cached_key(path: Path, session: SessionModel, what: str) -> tuple[Any, ...]:
    """The cache key of a query on ``session`` of the trace at ``path`` as it is now."""
    return (str(path), file_size(path), session.key, what)
