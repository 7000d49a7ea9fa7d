"""Filtering a session and summing it up, with the same code as ``show`` and ``stats``.

Both re-read the trace file (``filter.load_views``), so a filter means exactly
what it means on the command line, and the figures are exactly those of
``mcpsniff stats``. Results are cached per file size, so a trace that does
not grow is read once per expression.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mcpsniff.core.error_layers import LAYER_TITLES
from mcpsniff.core.guard.fingerprint import LISTS
from mcpsniff.filter import (
    Filter,
    FilterError,
    MessageView,
    build_views,
    compile_filter,
    index_findings,
)
from mcpsniff.filter.view import FindingsIndex
from mcpsniff.guard.context_cost import session_costs
from mcpsniff.guard.inventory import InventoryError, read_inventory
from mcpsniff.stats.compute import TraceStats, compute
from mcpsniff.ui.follow import file_size, trace_records
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
        self._running: dict[tuple[Any, ...], threading.Lock] = {}

    def get(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        """The cached value for ``key``, or ``make()``'s; one ``make`` per key at a time.

        A page asks again whenever its session grows; without this, a slow
        query on a long trace would be started once per request, all at once.
        """
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            running = self._running.setdefault(key, threading.Lock())
        with running:
            with self._lock:
                if key in self._items:
                    return self._items[key]
            try:
                value = make()
            finally:
                with self._lock:
                    self._running.pop(key, None)
            self.put(key, value)
        return value

    def put(self, key: tuple[Any, ...], value: Any) -> None:
        """Remember ``value`` for ``key`` (a result another query computed on its way)."""
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > CACHE_SIZE:
                self._items.popitem(last=False)


def parse(expression: str) -> Filter | dict[str, Any]:
    """The compiled filter, or ``{"error": ..., "column": ...}`` saying what is wrong."""
    if len(expression) > EXPRESSION_LIMIT:
        return {"error": f"the filter is longer than {EXPRESSION_LIMIT} characters"}
    try:
        return compile_filter(expression)
    except FilterError as exc:
        return {"error": str(exc), "caret": exc.caret()}


def findings_index(path: Path, keep: set[str] | None = None) -> FindingsIndex:
    """The findings of the trace (of the sessions ``keep``) by (session, seq).

    The first of a filter's two passes reads no message record: those are
    most of a trace's records, and the index holds none of them.
    """
    records = trace_records(path, messages=False)
    if keep is not None:
        records = (r for r in records if r.session in keep)
    return index_findings(records)


def session_views(
    path: Path, keep: set[str] | None = None, index: FindingsIndex | None = None
) -> Iterator[MessageView]:
    """Every view of the trace, each with all its findings, as ``show --filter`` builds them.

    Read with the UI's own reader, which checks every record's shape (a
    hostile trace may hold an unhashable index or a list as a session) and
    keeps frame bodies unparsed until a field needs one. With ``keep``, only
    the views of those sessions (the others are not even paired); ``index``,
    when the findings were indexed already (``findings_index``).
    """
    if index is None:
        index = findings_index(path, keep)
    records = trace_records(path)
    if keep is not None:
        records = (r for r in records if r.session in keep)
    yield from build_views(records, index)


def matching_rows(path: Path, session: SessionModel, flt: Filter) -> list[int]:
    """The row numbers of ``session`` whose message (or event) ``flt`` matches."""
    return session_query(path, session, flt)[0]


def session_query(
    path: Path, session: SessionModel, flt: Filter
) -> tuple[list[int], dict[str, Any]]:
    """``matching_rows`` and ``session_stats`` of ``session`` from one pass over the trace.

    The page asks for both (the filter, then the stats tab); the pass is most
    of either's cost, the figures little more.
    """
    rows: list[int] = []
    stats = TraceStats()
    for view in session_views(path, {session.key}):
        if view.session != session.key:
            continue
        stats.add(view)
        if not flt.matches(view):
            continue
        n = session.row_for(view.seq, view.index)
        if n is not None:
            rows.append(n)
    return rows, _stats_json(path, session.key, stats)


def session_stats(path: Path, session: SessionModel) -> dict[str, Any]:
    """``mcpsniff stats --format json`` for one session, with the error layers' titles."""
    return _stats_json(path, session.key, compute(session_views(path, {session.key})))


def _stats_json(path: Path, key: str, stats: TraceStats) -> dict[str, Any]:
    out = stats.to_json()
    out["layer_titles"] = dict(LAYER_TITLES)
    cost = context_costs(path, [out]).get(key)
    if cost is not None:
        out["context_cost"] = cost
    return out


def context_costs(path: Path, stats: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """What each listed session's definitions cost, by session key (a pass over the trace,
    only when one of ``stats`` counted a list method)."""
    if not any(method in LISTS for figures in stats for method in figures.get("methods", ())):
        return {}
    try:
        return session_costs(read_inventory([path]))
    except InventoryError:
        return {}


def cached_key(path: Path, session: SessionModel, what: str) -> tuple[Any, ...]:
    """The cache key of a query on ``session`` of the trace at ``path`` as it is now."""
    return (str(path), file_size(path), session.key, what)
