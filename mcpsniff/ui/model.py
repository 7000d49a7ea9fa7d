"""What the web views show of a trace: sessions, one row per message, findings.

A ``TraceModel`` is fed the records of one trace file in order (from
``follow.OffsetTail``, so it works as well on a file still being written) and
keeps, per session, a small JSON-ready row for each message and event, the
findings, and the HTTP heads of each exchange. Bodies and raw bytes are not
kept: a row remembers where its frame starts in the file, and the detail
pane reads it back. Rows are built by the filter package's ``ViewBuilder``,
so a response carries its request's method and tool exactly as in ``show``.

Every string in a row came from traffic: it is cut to a bounded length here
and shown by the page with ``textContent`` only (docs/architecture.md, invariant 6).
"""

from __future__ import annotations

import json
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mcpsniff.core import catalog, explain, spec_links
from mcpsniff.core.ids import show_id
from mcpsniff.core.model import (
    BATCH,
    ERROR,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    EventRecord,
    FindingRecord,
    FrameRecord,
    MessageRecord,
    Record,
)
from mcpsniff.core.rules.interruption import interruption_reason
from mcpsniff.core.spec_links import spec_link
from mcpsniff.filter import MessageView, ViewBuilder, cancelled_request_id, progress_values
from mcpsniff.filter.view import CANCELLED, EVENT, PROGRESS, FindingsIndex
from mcpsniff.listing.identity import Origin, SessionIdentity
from mcpsniff.listing.summary import server_name
from mcpsniff.terminal.render import fault_text
from mcpsniff.ui.follow import Header

#: Sessions the session list (and the report) holds at most, the newest (the
#: page says how many more).
SESSION_LIST_LIMIT = 2000
#: Longest traffic string kept in a row (a method, a tool, an id, an event line).
TEXT_LIMIT = 300
#: Longest finding message kept.
MESSAGE_LIMIT = 4000
#: Rows kept over all the traces one process follows (about 0.44 KB each); beyond
#: this, messages are counted, not shown (``mcpsniff show`` reads any trace whole).
ROW_LIMIT = 2_000_000


@dataclass
class RowBudget:
    """How many more rows may be kept: shared by every trace a library follows."""

    left: int = ROW_LIMIT


#: Findings kept per trace.
FINDING_LIMIT = 100_000
#: HTTP exchanges whose heads are kept per session (the oldest are forgotten first).
EXCHANGE_LIMIT = 20_000
#: Sequence numbers a finding links to.
FINDING_SEQ_LIMIT = 100
#: Findings held for the rows of the frame being read (past it, the frame is completed early).
HELD_FINDINGS = 10_000
#: Events recorded as exchange heads rather than as rows of their own.
HTTP_HEAD_EVENTS = {
    "http-request": "request",
    "http-response": "response",
    "http-end": "end",
    "sse-event": "sse",
}
#: SSE event records kept per exchange (a long stream is counted beyond this).
SSE_EVENTS_KEPT = 50
STATELESS_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


def compact(row: dict[str, Any]) -> bytes:
    """A row as compact JSON (integers beyond 64 bits, from a hostile trace, too)."""
    try:
        # orjson's result keeps its 4 KiB buffer; a copy is the row's size.
        with memoryview(orjson.dumps(row)) as view:
            return view.tobytes()
    except TypeError:
        return json.dumps(row, separators=(",", ":"), default=str).encode("utf-8", "replace")


def bounded(value: Any, limit: int = TEXT_LIMIT) -> str | None:
    """``value`` as a string of at most ``limit`` characters (``None`` stays ``None``)."""
    if value is None:
        return None
    if type(value) is str and len(value) <= limit and value.isascii():
        return value  # the common case, first
    text = value if isinstance(value, str) else show_id(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    if text.isascii():
        return text
    # A lone surrogate (from an id or method with "\ud800") cannot be written as UTF-8.
    return text.encode("utf-8", "replace").decode("utf-8")


@dataclass
class SessionModel:
    """One session of a trace, as the views show it."""

    trace: str
    key: str
    number: int
    name: str
    transport: str | None = None
    version: str | None = None
    client: str | None = None
    start: float | None = None
    last: float | None = None
    ended: bool = False
    #: Why the session was stopped (a forwarded signal, a killed server), if it was.
    interrupted: str | None = None
    messages: int = 0
    dropped_rows: int = 0
    #: One compact JSON object per row (about a quarter of a dict's memory); a row is
    #: a dict only while its frame's views are being built (see ``TraceModel._seal``).
    rows: list[Any] = field(default_factory=list)
    #: The file offset of each row's frame or event record.
    offsets: list[int] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    severities: Counter[str] = field(default_factory=Counter)
    exchanges: OrderedDict[int, dict[str, Any]] = field(default_factory=OrderedDict)
    by_key: dict[tuple[int, int | None], int] = field(default_factory=dict)
    #: Its name, peers and ending, as ``show``, ``check``, ``stats`` and ``ls`` word them.
    identity: SessionIdentity = field(default_factory=lambda: SessionIdentity(""))

    @property
    def id(self) -> str:
        return f"{self.trace}:{self.number}"

    def summary(self, live: bool = False) -> dict[str, Any]:
        """The session-list entry (``live``: still being recorded)."""
        identity = self.identity
        identity.messages = self.messages
        identity.findings = self.severities
        identity.start, identity.last = self.start, self.last
        return {
            "title": bounded(identity.title(live, clock=False), 1000),
            "label": bounded(identity.origin.name),
            "serverLabel": bounded(identity.server_label),
            "clientLabel": bounded(identity.client_label),
            "ending": bounded(identity.state(live)),
            "failed": identity.failed,
            "id": self.id,
            "trace": self.trace,
            "key": bounded(self.key),
            "name": bounded(identity.name),
            "client": bounded(self.client),
            "transport": bounded(self.transport),
            "version": bounded(self.version),
            "start": self.start,
            "last": self.last,
            "ended": self.ended,
            "interrupted": bounded(self.interrupted),
            "messages": self.messages,
            "rows": len(self.rows),
            "dropped": self.dropped_rows,
            "findings": {s: self.severities[s] for s in ("error", "warning", "info")},
        }

    def set_version(self, version: str) -> None:
        """The session's protocol version; the findings seen before it link its pages too."""
        if version == self.version:
            return
        self.version = version
        for entry in self.findings:
            entry["spec"] = spec_link(entry["rule"], version)

    def row(self, n: int) -> dict[str, Any]:
        """Row ``n`` as a dict."""
        value = self.rows[n]
        return value if isinstance(value, dict) else orjson.loads(value)

    def all_rows(self) -> Iterator[dict[str, Any]]:
        """Every row as a dict, in order."""
        for n in range(len(self.rows)):
            yield self.row(n)

    def rows_json(self, start: int, end: int) -> bytes:
        """Rows ``start`` to ``end`` as one JSON array."""
        parts = [r if isinstance(r, bytes) else orjson.dumps(r) for r in self.rows[start:end]]
        return b"[" + b",".join(parts) + b"]"

    def rows_of(self, seq: int) -> list[int]:
        """The rows of frame (or event) ``seq``: its message, or a batch and its elements."""
        n = self.by_key.get((seq, None))
        if n is None:
            return []
        # A batch's elements are the rows right after it (one frame's views, in order).
        return list(range(n, n + 1 + self.row(n).get("batch", 0)))

    def row_for(self, seq: int, index: int | None) -> int | None:
        """The row number of the message at frame ``seq`` (batch element ``index``)."""
        return self.by_key.get((seq, index))


class TraceModel:
    """Everything the views show of one trace file, built incrementally."""

    def __init__(
        self,
        path: Path,
        trace_id: str,
        budget: RowBudget | None = None,
        findings: FindingsIndex | None = None,
        on_view: Callable[[MessageView], None] | None = None,
    ) -> None:
        """``findings``: the trace's findings indexed (``filter.index_findings``), so that
        each view carries all of its own; ``on_view``: called with every view built,
        in trace order (the report sums the sessions up from the same pass)."""
        self.path = path
        self.id = trace_id
        self.budget = budget if budget is not None else RowBudget()
        self.header: dict[str, Any] = {}
        self.sessions: dict[str, SessionModel] = {}
        # The rows need no findings (they come from the finding records): an empty
        # index keeps the builder from making views of them.
        self._builder = ViewBuilder(findings if findings is not None else {})
        self._on_view = on_view
        self._name = "?"
        self._origin = Origin()
        self._frame_offset = -1
        self._rows = 0
        self._findings = 0
        #: The batch row of the frame being read, to number its elements under it.
        self._batch: tuple[str, int, int] | None = None
        #: Rows of the frame being built, still dicts (a batch row counts its elements).
        self._unsealed: list[tuple[SessionModel, int]] = []
        #: Findings read since the last frame or event, linked once its rows exist.
        self._held: list[FindingRecord] = []

    # ------------------------------------------------------------------ input

    def feed(self, offset: int, item: Record | Header) -> None:
        """Take the next record of the trace (or a header line) at file ``offset``."""
        if isinstance(item, Header):
            self._views(self._builder.flush())
            if not self.header:
                self.header = item.value
            self._name = server_name(item.value)
            self._origin = Origin.of(item.value)
            return
        if isinstance(item, MessageRecord):
            self._builder.feed(item)
            return
        if isinstance(item, FindingRecord):
            # A finding may stand between the message records of its frame (a
            # batch's own finding comes before its elements' records): the
            # frame's views are complete only at the next frame, event or
            # header, so the finding waits for them. (Completing them here
            # dropped the elements that followed: a batch in a 2025-06-18
            # session showed as "batch of 0", its requests nowhere.)
            if len(self._held) >= HELD_FINDINGS:
                self._views(self._builder.flush())  # bounded: a hostile run of findings
            self._held.append(item)
            return
        self._views(self._builder.feed(item))
        self._frame_offset = offset
        if isinstance(item, FrameRecord):
            session = self._session(item.session, item.t)
            if session.transport is None:
                session.transport = item.transport
        elif isinstance(item, EventRecord):
            self._session(item.session, item.t)

    def flush(self) -> None:
        """Complete the views of the last frame (at the end of what is written so far)."""
        self._views(self._builder.flush())

    # ------------------------------------------------------------------ sessions

    def _session(self, key: str, t: float | None) -> SessionModel:
        session = self.sessions.get(key)
        if session is None:
            session = SessionModel(self.id, key, len(self.sessions), self._name, start=t)
            session.identity = SessionIdentity(key, self._origin)
            self.sessions[key] = session
        if t is not None:
            if session.start is None:
                session.start = t
            if session.last is None or t > session.last:
                session.last = t
        return session

    def _views(self, views: list[MessageView]) -> None:
        try:
            self._build(views)
        finally:
            self._seal()
            held, self._held = self._held, []
            for finding in held:
                self._finding(finding)

    def _seal(self) -> None:
        """Store the rows just built as compact JSON: their frame is complete."""
        for session, n in self._unsealed:
            session.rows[n] = compact(session.rows[n])
        self._unsealed.clear()

    def _build(self, views: list[MessageView]) -> None:
        on_view = self._on_view
        for view in views:
            if on_view is not None:
                on_view(view)
            session = self._session(view.session, view.t)
            if view.kind == EVENT:
                self._event(session, view)
                continue
            session.messages += 1 if view.kind != BATCH else 0
            self._learn(session, view)
            if self.budget.left <= 0:
                session.dropped_rows += 1
                continue
            self._add_row(session, view, self._frame_offset)

    def _add_row(self, session: SessionModel, view: MessageView, offset: int) -> None:
        n = len(session.rows)
        row: dict[str, Any] = {"n": n, "seq": view.seq, "t": view.t, "kind": view.kind}
        if view.direction is not None:
            row["dir"] = view.direction
        if view.index is not None:
            row["index"] = view.index
            batch = self._batch
            if batch is not None and batch[0] == view.session and batch[1] == view.seq:
                parent = session.rows[batch[2]]
                if isinstance(parent, dict):  # the batch row of this very frame
                    row["parent"] = batch[2]
                    parent["batch"] += 1
        elif view.kind == BATCH:
            row["batch"] = 0
            self._batch = (view.session, view.seq, n)
        if view.method is not None:
            row["method"] = bounded(view.method)
        if view.tool is not None:
            row["tool"] = bounded(view.tool)
        if view.target is not None:
            row["target"] = bounded(view.target)
        if view.has_id:
            row["id"] = bounded(show_id(view.id))
        if view.latency_ms is not None:
            row["latency"] = view.latency_ms
        if view.error_code is not None:
            row["code"] = bounded(view.error_code)
        if view.is_error:
            row["isError"] = True
        trace = view.trace
        if trace is not None:
            # For the filter's trace.id / trace.problem, as in filter/fields.py.
            if trace.trace_id is not None:
                row["traceId"] = trace.trace_id
            elif trace.problem is not None:
                row["traceProblem"] = trace.problem
        frame = view.frame
        if frame is not None:
            row["size"] = len(frame.raw)
            if frame.meta:
                exchange = frame.meta.get("exchange")
                if isinstance(exchange, int):
                    row["exchange"] = exchange
            if frame.transport != "stdio":
                row["transport"] = bounded(frame.transport, 20)
        message = view.message
        if message is not None and message.answers is not None:
            pair = session.row_for(message.answers, message.request_index)
            if pair is not None:
                # The request's row is sealed; readers give it its answer from here.
                row["pair"] = pair
        if view.kind == NOTIFICATION:
            note = annotation(view)
            if note:
                row["note"] = note
        if view.cancellation is not None:
            cancelled = session.row_for(view.cancellation.request_seq, None)
            if cancelled is not None:
                row["cancels"] = cancelled
        if view.kind == BATCH:
            # Its elements, which follow, count themselves in it: a dict until its frame ends.
            session.rows.append(row)
            self._unsealed.append((session, n))
        else:
            # Nothing changes a message's row once made: compact now, not at the frame's
            # end (a batch of 100,000 elements held 100,000 dicts until then).
            session.rows.append(compact(row))
        session.offsets.append(offset)
        session.by_key[(view.seq, view.index)] = n
        self._rows += 1
        self.budget.left -= 1

    def _event(self, session: SessionModel, view: MessageView) -> None:
        event = view.event
        assert event is not None
        data = event.data if isinstance(event.data, dict) else {}
        if event.event == "session-start" and isinstance(data.get("transport"), str):
            session.transport = data["transport"]
        if event.event == "session-end":
            session.ended = True
        session.identity.saw_event(event.event, data)
        if session.interrupted is None:
            session.interrupted = interruption_reason(event.event, data)
        part = HTTP_HEAD_EVENTS.get(event.event)
        exchange = data.get("exchange")
        if part is not None and isinstance(exchange, int):
            heads = session.exchanges.setdefault(exchange, {})
            if part == "sse":
                events = heads.setdefault("sse", [])
                if len(events) < SSE_EVENTS_KEPT:
                    events.append(data)
                heads["sseCount"] = heads.get("sseCount", 0) + 1
            else:
                heads[part] = data
            if len(session.exchanges) > EXCHANGE_LIMIT:
                session.exchanges.popitem(last=False)
            status = data.get("status")
            # The proxy's view adds information where HTTP failed: such a response is a row.
            if not (part == "response" and isinstance(status, int) and status >= 400):
                return
        if self.budget.left <= 0:
            session.dropped_rows += 1
            return
        n = len(session.rows)
        row: dict[str, Any] = {
            "n": n,
            "seq": event.seq,
            "t": event.t,
            "kind": EVENT,
            "event": bounded(event.event),
            "detail": event_detail(event.event, data),
        }
        session.rows.append(compact(row))
        session.offsets.append(self._frame_offset)
        session.by_key[(event.seq, None)] = n
        self._rows += 1
        self.budget.left -= 1

    def _learn(self, session: SessionModel, view: MessageView) -> None:
        """The protocol version, server and client names, from the messages that carry them."""
        kind, method = view.kind, view.method
        if method in ("initialize", "server/discover") and kind in (REQUEST, RESPONSE):
            session.identity.saw_body(view.direction, view.body)
        if method == "initialize" and kind in (REQUEST, RESPONSE):
            body = view.body
            if not isinstance(body, dict):
                return
            part = body.get("params") if kind == REQUEST else body.get("result")
            if not isinstance(part, dict):
                return
            version = part.get("protocolVersion")
            if isinstance(version, str) and (kind == RESPONSE or session.version is None):
                session.set_version(version)
            info = part.get("serverInfo" if kind == RESPONSE else "clientInfo")
            if isinstance(info, dict) and isinstance(info.get("name"), str):
                if kind == RESPONSE:
                    session.name = info["name"]
                else:
                    session.client = info["name"]
        elif kind == REQUEST and session.version is None:
            body = view.body
            params = body.get("params") if isinstance(body, dict) else None
            meta = params.get("_meta") if isinstance(params, dict) else None
            version = meta.get(STATELESS_VERSION_KEY) if isinstance(meta, dict) else None
            if isinstance(version, str):
                session.set_version(version)
            if method == "server/discover" and isinstance(meta, dict):
                info = meta.get("io.modelcontextprotocol/clientInfo")
                if isinstance(info, dict) and isinstance(info.get("name"), str):
                    session.client = info["name"]
        elif kind == RESPONSE and method == "server/discover":
            body = view.body
            result = body.get("result") if isinstance(body, dict) else None
            info = result.get("serverInfo") if isinstance(result, dict) else None
            meta = result.get("_meta") if isinstance(result, dict) else None
            if info is None and isinstance(meta, dict):
                # 2026-07-28: "io.modelcontextprotocol/serverInfo" in the result's _meta.
                info = meta.get(SERVER_INFO_KEY)
            if isinstance(info, dict) and isinstance(info.get("name"), str):
                session.name = info["name"]

    def _finding(self, finding: FindingRecord) -> None:
        session = self._session(finding.session, None)
        if session.interrupted is not None:
            finding = _interrupted(finding, session.interrupted)
        session.severities[finding.severity] += 1
        if self._findings >= FINDING_LIMIT:
            return
        self._findings += 1
        rows: list[int] = []
        for seq in finding.seq[:FINDING_SEQ_LIMIT]:
            rows.extend(session.rows_of(seq))
        entry = finding_entry(finding, len(session.findings), rows, session.version)
        session.findings.append(entry)

    # ------------------------------------------------------------------ output

    def session_list(self) -> list[dict[str, Any]]:
        """The summaries of this trace's sessions, in order of appearance."""
        return [s.summary() for s in self.sessions.values()]

    def session(self, number: int) -> SessionModel | None:
        """The ``number``-th session (its position in the trace)."""
        for session in self.sessions.values():
            if session.number == number:
                return session
        return None


def _interrupted(finding: FindingRecord, reason: str) -> FindingRecord:
    """A recorder older than the interruption verdict called a request in flight at
    Ctrl-C unanswered (an error): show it as the info ``check`` now gives."""
    data = finding.data if isinstance(finding.data, dict) else {}
    if finding.rule != "JR-RESP-REQUIRED" or finding.severity != "error" or "cause" in data:
        return finding
    data = {**data, "cause": "interrupted", "reason": reason}
    message = f"{finding.message} (in flight when the session was stopped: {reason})"
    return FindingRecord(finding.rule, "info", message, finding.session, finding.seq, data)


def annotation(view: MessageView) -> str | None:
    """What ``show`` adds under a message: progress values, what a cancellation cancelled."""
    if view.kind != NOTIFICATION:
        return None
    if view.method == PROGRESS:
        values = progress_values(view)
        if not values:
            return None
        text = f"progress {bounded(values.get('progress'), 40)}"
        if "total" in values:
            text += f"/{bounded(values['total'], 40)}"
        if "message" in values:
            text += f" {bounded(values['message'], 120)}"
        return text
    if view.method == CANCELLED:
        present, request_id = cancelled_request_id(view)
        if not present:
            return "cancels no requestId"
        text = f"cancels requestId={bounded(request_id, 80)}"
        cancellation = view.cancellation
        if cancellation is not None and not cancellation.answered:
            text += f", unanswered after {cancellation.after_s:.2f} s"
        return text
    return None


def finding_entry(
    finding: FindingRecord, n: int, rows: list[int], version: str | None = None
) -> dict[str, Any]:
    """A finding as the page shows it, with its rule's description and spec reference
    (``spec``: the rule's page in the session's ``version``)."""
    rule = bounded(finding.rule, 80) or "?"
    try:
        # Markdown emphasis (**MUST NOT**) reads as noise in a page that shows it as text.
        source = spec_links.plain_source(catalog.get(finding.rule)).replace("**", "")
    except KeyError:
        source = ""
    data = finding.data if isinstance(finding.data, dict) else {}
    cause = data.get("cause")
    return {
        "n": n,
        "rule": rule,
        "severity": finding.severity if finding.severity in SEVERITY_RANK else "info",
        "message": bounded(finding.message, MESSAGE_LIMIT),
        "seq": finding.seq[:FINDING_SEQ_LIMIT],
        "rows": rows,
        "cause": bounded(cause) if cause is not None else None,
        "description": explain.description(finding.rule),
        "source": source,
        "spec": spec_link(finding.rule, version if isinstance(version, str) else None),
    }


def event_detail(name: str, data: dict[str, Any]) -> str:
    """One line saying what an event carries (a stderr line, an exit status, an error)."""
    if name == "fault":
        return bounded(fault_text(data)) or ""
    for key in ("line", "text", "error", "status", "exit", "signal", "reason", "url", "outcome"):
        if key in data:
            value = data[key]
            return bounded(f"{key}: {value if isinstance(value, str) else repr(value)}") or ""
    if not data:
        return ""
    shown = ", ".join(f"{k}={v!r}" for k, v in list(data.items())[:4])
    return bounded(shown) or ""


def severity_of(findings: list[dict[str, Any]]) -> str | None:
    """The highest severity among ``findings``."""
    best = None
    for finding in findings:
        if best is None or SEVERITY_RANK[finding["severity"]] > SEVERITY_RANK[best]:
            best = finding["severity"]
    return best


def is_error_row(row: dict[str, Any]) -> bool:
    """Whether a row is a JSON-RPC error or a tool error."""
    return row.get("kind") == ERROR or bool(row.get("isError"))
