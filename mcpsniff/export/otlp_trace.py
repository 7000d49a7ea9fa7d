"""``export otlp``: a recorded trace's MCP operations, sent to an OpenTelemetry collector."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import Record
from mcpsniff.export.otel_spans import ExportOptions, SpanDraft, spans_of
from mcpsniff.filter import Filter
from mcpsniff.filter.view import MessageView, ViewBuilder
from mcpsniff.listing.summary import summarize
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.spool import is_stream

if TYPE_CHECKING:
    from mcpsniff.export.otlp import OtlpExporter

#: Frames a --filter remembers as matching, to judge the operations they belong to.
_MATCH_WINDOW = 200_000


@dataclass(frozen=True)
class SentTrace:
    """What ``send_trace`` did: operations sent, and whether the collector took everything."""

    operations: int
    ok: bool


def trace_service(path: Path) -> str | None:
    """The spans' ``service.name`` for the trace at ``path``: its server's name, as ``ls``
    shows it (the newest session's ``--name``, else its ``serverInfo``, else the program).

    None when the trace names no server, or is a pipe (it can be read only once).
    """
    if is_stream(path):
        return None
    summary = summarize(path)
    if summary is None or not summary.identities:
        return None
    name = summary.server
    return None if name == "?" else name


def send_trace(
    reader: TraceReader, exporter: OtlpExporter, include_content: bool, flt: Filter | None
) -> SentTrace:
    """Re-analyze ``reader``'s trace and hand its operations to ``exporter``, flushing as it goes.

    With ``flt``, only operations with a matching message are sent. Stops at the
    first flush the collector refuses. ``TraceError`` and ``OSError`` from
    reading pass on; the caller shuts the exporter down.
    """
    options = ExportOptions(include_content=include_content)
    _upstream(reader.header, options)
    operations = 0
    ok = True
    records: Iterable[Record] = replay(reader.inputs())
    matches = None
    if flt is not None:
        matches = _Matches(flt)
        records = matches.watch(records)
    for ops, lone, metrics in spans_of(iter(records), options):
        if matches is not None:
            ops = [o for o in ops if any((o.session, f) in matches for f in o.frames)]
            lone = [s for s in lone if _lone_matches(s, matches)]
        operations += len(ops)
        exporter.emit(ops, lone, metrics)
        if exporter.pending >= 2048:
            ok = exporter.flush(metrics=False) and ok
            if not ok:
                break
    ok = exporter.flush() and ok
    return SentTrace(operations, ok)


class _Matches:
    """The (session, frame seq) pairs whose messages a filter selects (bounded)."""

    def __init__(self, flt: Filter) -> None:
        self.flt = flt
        self.views = ViewBuilder()
        self.seen: OrderedDict[tuple[str, int], None] = OrderedDict()

    def watch(self, records: Iterable[Record]) -> Iterator[Record]:
        for record in records:
            self._judge(self.views.feed(record))
            yield record
        self._judge(self.views.flush())

    def _judge(self, views: list[MessageView]) -> None:
        for view in views:
            if self.flt.matches(view):
                self.seen[(view.session, view.seq)] = None
                if len(self.seen) > _MATCH_WINDOW:
                    self.seen.popitem(last=False)

    def __contains__(self, key: tuple[str, int]) -> bool:
        return key in self.seen


def _lone_matches(span: SpanDraft, matches: _Matches) -> bool:
    return any((span.session, seq) in matches for seq in span.frames)


def _upstream(header: dict[str, Any], options: ExportOptions) -> None:
    """``server.address``/``server.port`` from the upstream an HTTP trace names."""
    from urllib.parse import urlsplit

    meta = header.get("meta") if isinstance(header, dict) else None
    upstream = meta.get("upstream") if isinstance(meta, dict) else None
    if not isinstance(upstream, str):
        return
    try:
        parts = urlsplit(upstream)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return
    if parts.hostname:
        options.server_address = parts.hostname
        options.server_port = port
