"""Summing up a trace: counts, errors by layer and latency percentiles per method and tool.

The error layers are those of the seed article and JSON-RPC 2.0 §5.1, as
``mcpsniff.core.error_layers`` defines them: the protocol's own codes
(-32768..-32600 and -32700), implementation-defined server errors
(-32099..-32000), application codes, and tool results with ``isError: true``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mcpsniff.core.error_layers import LAYERS, TOOL_ERROR, error_layer
from mcpsniff.core.model import ERROR, NOTIFICATION, REQUEST, RESPONSE
from mcpsniff.filter import Filter, MessageView
from mcpsniff.filter.view import CANCELLED

PERCENTILES = (50, 95, 99)


def percentile(sorted_values: list[float], p: float) -> float | None:
    """The nearest-rank ``p``-th percentile of ascending ``sorted_values`` (``None`` if empty)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


@dataclass
class CallStats:
    """One method, or one tool: how often, how often it failed, how long answers took."""

    requests: int = 0
    notifications: int = 0
    responses: int = 0
    errors: int = 0
    cancelled: int = 0
    latencies: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Counts, error count and latency percentiles in milliseconds."""
        ordered = sorted(self.latencies)
        out: dict[str, Any] = {
            "requests": self.requests,
            "notifications": self.notifications,
            "responses": self.responses,
            "errors": self.errors,
            "cancelled": self.cancelled,
        }
        for p in PERCENTILES:
            out[f"p{p}_ms"] = percentile(ordered, p)
        out["max_ms"] = ordered[-1] if ordered else None
        return out


@dataclass
class _Waiting:
    method: str | None
    tool: str | None
    cancelled: bool = False


@dataclass
class TraceStats:
    """Everything ``stats`` reports about the views it was given."""

    messages: int = 0
    sessions: set[str] = field(default_factory=set)
    by_method: dict[str, CallStats] = field(default_factory=dict)
    by_tool: dict[str, CallStats] = field(default_factory=dict)
    #: layer -> code (or tool name for the tool layer) -> count
    errors_by_layer: dict[str, Counter[Any]] = field(
        default_factory=lambda: {layer: Counter() for layer in LAYERS}
    )
    cancellations: int = 0
    #: Cancellations of a request that had no answer yet, and how long it had waited.
    cancelled_waits_s: list[float] = field(default_factory=list)
    findings: Counter[str] = field(default_factory=Counter)
    _waiting: dict[tuple[str, int, int | None], _Waiting] = field(default_factory=dict)

    def add(self, view: MessageView, counted: bool = True) -> None:
        """Account for one view; ``counted`` is False for views the filter rejected.

        Rejected views are still seen, so that a matching request answered by a
        rejected response is not reported as unanswered.
        """
        kind = view.kind
        message = view.message
        if kind in (RESPONSE, ERROR) and message is not None and message.answers is not None:
            self._waiting.pop((view.session, message.answers, message.request_index), None)
        if not counted:
            return
        self.messages += 1 if message is not None else 0
        self.sessions.add(view.session)
        for finding in view.findings:
            self.findings[finding.severity] += 1
        method = view.method or "(unknown)"
        if kind == REQUEST:
            for stats in self._stats(method, view.tool):
                stats.requests += 1
            self._waiting[(view.session, view.seq, view.index)] = _Waiting(view.method, view.tool)
        elif kind == NOTIFICATION:
            for stats in self._stats(method, view.tool if method == CANCELLED else None):
                stats.notifications += 1
            if view.method == CANCELLED:
                self._cancel(view)
        elif kind in (RESPONSE, ERROR):
            for stats in self._stats(method, view.tool):
                stats.responses += 1
                if view.latency_ms is not None:
                    stats.latencies.append(view.latency_ms)
                if kind == ERROR or view.is_error:
                    stats.errors += 1
            if kind == ERROR:
                layer = error_layer(view.error_code).layer
                self.errors_by_layer[layer][_code_key(view.error_code)] += 1
            elif view.is_error:
                self.errors_by_layer[TOOL_ERROR.layer][view.tool or "(unknown tool)"] += 1

    def _stats(self, method: str, tool: str | None) -> list[CallStats]:
        found = [self.by_method.setdefault(method, CallStats())]
        if tool is not None and method != CANCELLED:
            found.append(self.by_tool.setdefault(tool, CallStats()))
        return found

    def _cancel(self, view: MessageView) -> None:
        self.cancellations += 1
        cancellation = view.cancellation
        if cancellation is None:
            return
        waiting = self._waiting.get((view.session, cancellation.request_seq, None))
        if waiting is not None:
            waiting.cancelled = True
        if not cancellation.answered:
            self.cancelled_waits_s.append(cancellation.after_s)
        if cancellation.method is not None:
            self.by_method.setdefault(cancellation.method, CallStats()).cancelled += 1
        if cancellation.tool is not None:
            self.by_tool.setdefault(cancellation.tool, CallStats()).cancelled += 1

    @property
    def unanswered(self) -> Counter[str]:
        """Requests never answered and never cancelled, by method."""
        return Counter(w.method or "(unknown)" for w in self._waiting.values() if not w.cancelled)

    def to_json(self) -> dict[str, Any]:
        """The ``stats --format json`` document."""
        return {
            "messages": self.messages,
            "sessions": len(self.sessions),
            "methods": {m: s.summary() for m, s in sorted(self.by_method.items())},
            "tools": {t: s.summary() for t, s in sorted(self.by_tool.items())},
            "errors_by_layer": {
                layer: {
                    "total": sum(codes.values()),
                    "codes" if layer != TOOL_ERROR.layer else "tools": {
                        str(code): n for code, n in codes.most_common()
                    },
                }
                for layer, codes in self.errors_by_layer.items()
            },
            "cancellations": self.cancellations,
            "cancelled_without_answer": len(self.cancelled_waits_s),
            "unanswered": dict(self.unanswered.most_common()),
            "findings": {sev: self.findings[sev] for sev in ("error", "warning", "info")},
        }


def _code_key(code: Any) -> Any:
    """An error code as a dictionary key (codes from traffic may be any JSON value)."""
    return (
        code if isinstance(code, int | str | float) and not isinstance(code, bool) else repr(code)
    )


def compute(views: Any, flt: Filter | None = None) -> TraceStats:
    """Stats over ``views`` (an iterable of ``MessageView``), keeping those ``flt`` matches."""
    stats = TraceStats()
    matches = flt.matches if flt is not None else None
    for view in views:
        stats.add(view, matches is None or matches(view))
    return stats
