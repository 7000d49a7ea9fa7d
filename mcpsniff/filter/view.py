"""One message of a trace joined with what concerns it: the thing a filter judges.

A trace stores a frame, then the message records parsed from it, then the
findings raised while analysing it; a response names the frame of its request
only by ``answers``. ``ViewBuilder`` turns that record stream back into one
``MessageView`` per message (and per transport event), carrying the paired
request's method and tool, the latency, the findings and, for a
``notifications/cancelled``, what it cancelled and how long after. ``show``,
``check``, ``stats``, the web UI and the exporters all build views with it,
so that a filter means the same thing everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from mcpsniff.core.ids import IdKey, id_key
from mcpsniff.core.model import (
    ERROR,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    UNPARSED,
    EventRecord,
    FindingRecord,
    FrameRecord,
    MessageRecord,
    Record,
)
from mcpsniff.core.trace_context import TRACEPARENT, TraceContext, extract, slim
from mcpsniff.trace.codec import exact_loads

#: ``kind`` of a view made from a transport event.
EVENT = "event"
#: ``kind`` of a view made from a finding that arrived after its messages were emitted.
FINDING = "finding"
TOOLS_CALL = "tools/call"
CANCELLED = "notifications/cancelled"
PROGRESS = "notifications/progress"
_TRACEPARENT_BYTES = TRACEPARENT.encode()
#: Requests still waiting for an answer that a builder remembers, per trace.
_PENDING_LIMIT = 200_000

FindingsIndex = dict[tuple[str, int], list[FindingRecord]]


@dataclass(slots=True)
class Cancellation:
    """What a ``notifications/cancelled`` cancelled, when the builder saw that request."""

    request_seq: int
    method: str | None
    tool: str | None
    #: Seconds between the request and its cancellation.
    after_s: float
    #: Whether an answer had arrived before the cancellation.
    answered: bool


@dataclass(slots=True)
class MessageView:
    """One message (or transport event) with its context, as filters and commands see it.

    ``method``, ``tool`` and ``target`` of a response are those of the request it answers;
    ``findings`` are the findings whose ``seq`` names this message's frame (or
    this event).
    """

    session: str
    seq: int
    t: float | None
    kind: str
    direction: str | None = None
    index: int | None = None
    method: str | None = None
    tool: str | None = None
    target: str | None = None
    has_id: bool = False
    id: Any = None
    error_code: Any = None
    latency_ms: float | None = None
    #: A ``tools/call`` result with ``isError: true`` (MCP server/tools, Error Handling).
    is_error: bool = False
    findings: list[FindingRecord] = field(default_factory=list)
    message: MessageRecord | None = None
    frame: FrameRecord | None = None
    event: EventRecord | None = None
    #: For a ``notifications/cancelled``: the request it cancelled, when known.
    cancellation: Cancellation | None = None
    #: The W3C trace context in ``params._meta`` (a request's or notification's own;
    #: a response's is its request's, with ``trace_inherited`` set).
    trace: TraceContext | None = None
    trace_inherited: bool = False

    @property
    def body(self) -> Any:
        """The message's JSON value (a batch element for batch members); ``None`` if not JSON."""
        return message_body(self.frame, self.index)

    @property
    def raw(self) -> bytes:
        """The bytes of the frame this message came in (empty for events and findings)."""
        return self.frame.raw if self.frame is not None else b""


def _may_carry_trace(raw: bytes) -> bool:
    """Whether ``raw`` may hold a ``traceparent`` key: the cheap test before parsing.

    Most traffic carries no trace context, so the body is parsed only for the
    messages that may. A key spelt with JSON escapes ("trace\\u0070arent")
    is still the key; a lone backslash is looked for first because a one-byte
    search is several times faster than a two-byte one (stats reads every request).
    """
    return _TRACEPARENT_BYTES in raw or (b"\\" in raw and b"\\u" in raw)


def _may_flag_error(raw: bytes) -> bool:
    """Whether ``raw`` may hold an ``isError`` key: the cheap test before parsing a result.

    A batch of 100,000 results parses into over a million objects, 120 MB, for
    a flag almost no result carries; the key spelt with escapes is still the key.
    """
    return b"isError" in raw or (b"\\" in raw and b"\\u" in raw)


def message_body(frame: FrameRecord | None, index: int | None) -> Any:
    """The JSON value of a frame (or of element ``index`` of its batch), or ``None``."""
    if frame is None:
        return None
    value = frame.value
    if value is UNPARSED:
        try:
            value = exact_loads(frame.raw)
        except ValueError:
            value = None
        frame.value = value
    if index is not None:
        return value[index] if isinstance(value, list) and 0 <= index < len(value) else None
    return value


def _params(view: MessageView) -> dict[str, Any]:
    body = view.body
    params = body.get("params") if isinstance(body, dict) else None
    return params if isinstance(params, dict) else {}


def cancelled_request_id(view: MessageView) -> tuple[bool, Any]:
    """``(present, requestId)`` of a ``notifications/cancelled``."""
    params = _params(view)
    return ("requestId" in params, params.get("requestId"))


def progress_values(view: MessageView) -> dict[str, Any]:
    """``progressToken``, ``progress``, ``total`` and ``message`` of a progress notification."""
    params = _params(view)
    return {k: params[k] for k in ("progressToken", "progress", "total", "message") if k in params}


@dataclass(slots=True)
class _Pending:
    seq: int
    t: float
    method: str | None
    tool: str | None
    target: str | None
    direction: str
    key: IdKey | None
    answered: bool = False
    trace: TraceContext | None = None


class ViewBuilder:
    """Turns trace records, in trace order, into ``MessageView`` objects.

    ``feed`` returns the views completed by a record: a frame's views are
    complete when the next frame or event arrives (its findings follow it), or
    at ``flush``. With a ``findings_index`` (see ``index_findings``) every view
    gets all its findings, even those raised later (an unanswered request is
    reported at session end), and finding records in the stream are ignored.
    Without one, a finding that arrives after its message was emitted becomes
    a view of its own, of kind ``"finding"``.
    """

    def __init__(self, findings_index: FindingsIndex | None = None, stream: bool = False) -> None:
        """``stream`` (with a ``findings_index``): return each message's view as soon as
        its record is read, not its frame's views together at the next frame."""
        self._index = findings_index
        # With an index a view is complete when made (its findings come from the index,
        # no finding record joins it later): a batch of 100,000 elements then need not
        # hold 100,000 views at once. A model that links findings to a frame's rows
        # wants them together, and does not stream.
        self._stream = stream and findings_index is not None
        self._frame: FrameRecord | None = None
        #: The last frame searched for a traceparent, and the answer.
        self._scanned: FrameRecord | None = None
        self._scanned_may_carry = False
        #: The last frame searched for an isError key, and the answer.
        self._error_scanned: FrameRecord | None = None
        self._error_may = False
        self._views: list[MessageView] = []
        self._event_view: MessageView | None = None
        #: Requests by (session, frame seq, batch index), to pair responses.
        self._by_seq: dict[tuple[str, int, int | None], _Pending] = {}
        #: The same requests by (session, direction, id key), for cancellations.
        self._by_id: dict[tuple[str, str, IdKey], _Pending] = {}

    def feed(self, record: Record) -> list[MessageView]:
        """The views that became complete with ``record``."""
        if isinstance(record, MessageRecord):
            if self._frame is not None and record.frame == self._frame.seq:
                view = self._message_view(self._frame, record)
                if self._stream:
                    return [view]
                self._views.append(view)
            return []
        if isinstance(record, FindingRecord):
            if self._index is not None:
                return []
            current = [*self._views, *([self._event_view] if self._event_view else [])]
            attached = False
            for view in current:
                if view.session == record.session and view.seq in record.seq:
                    view.findings.append(record)
                    attached = True
            if attached:
                return []
            return [self._finding_view(record)]
        done = self.flush()
        if isinstance(record, FrameRecord):
            self._frame = record
        elif isinstance(record, EventRecord):
            self._event_view = MessageView(
                record.session,
                record.seq,
                record.t,
                EVENT,
                findings=self._findings_of(record.session, record.seq),
                event=record,
            )
        return done

    def flush(self) -> list[MessageView]:
        """The views of the frame or event being collected."""
        done = self._views
        if self._event_view is not None:
            done.append(self._event_view)
        self._views = []
        self._event_view = None
        self._frame = None
        # The frame is complete: a builder kept for a growing trace (the UI's)
        # must not hold its bytes and parsed body, a batch's million objects.
        self._scanned = None
        self._error_scanned = None
        return done

    def _findings_of(self, session: str, seq: int) -> list[FindingRecord]:
        if self._index is None:
            return []
        # Shared, not copied: with an index no finding is ever appended to a view,
        # and a batch of 10,000 elements would otherwise copy its frame's list 10,000 times.
        return self._index.get((session, seq)) or []

    def _may_carry_trace(self, frame: FrameRecord) -> bool:
        """``_may_carry_trace(frame.raw)``, found once per frame, not once per batch element."""
        if frame is not self._scanned:
            self._scanned = frame
            self._scanned_may_carry = _may_carry_trace(frame.raw)
        return self._scanned_may_carry

    def _may_flag_error(self, frame: FrameRecord) -> bool:
        """``_may_flag_error(frame.raw)``, found once per frame, not once per batch element."""
        if frame is not self._error_scanned:
            self._error_scanned = frame
            self._error_may = _may_flag_error(frame.raw)
        return self._error_may

    def _message_view(self, frame: FrameRecord, message: MessageRecord) -> MessageView:
        view = MessageView(
            message.session,
            frame.seq,
            frame.t,
            message.kind,
            message.direction,
            message.index,
            message.method,
            None,
            message.target,
            message.has_id,
            message.id,
            message.error_code,
            message.latency_ms,
            findings=self._findings_of(message.session, frame.seq),
            message=message,
            frame=frame,
        )
        kind = message.kind
        if kind in (REQUEST, NOTIFICATION) and self._may_carry_trace(frame):
            view.trace = extract(view.body)
        if kind == REQUEST:
            if message.method == TOOLS_CALL:
                view.tool = message.target
            self._remember(view)
        elif kind in (RESPONSE, ERROR) and message.answers is not None:
            request = self._by_seq.pop(
                (message.session, message.answers, message.request_index), None
            )
            if request is not None:
                request.answered = True
                if request.key is not None:
                    self._by_id.pop((message.session, request.direction, request.key), None)
                view.method = request.method
                view.tool = request.tool
                view.target = request.target
                if request.trace is not None:
                    view.trace = request.trace
                    view.trace_inherited = True
            if kind == RESPONSE and view.method == TOOLS_CALL and self._may_flag_error(frame):
                body = view.body
                result = body.get("result") if isinstance(body, dict) else None
                view.is_error = isinstance(result, dict) and result.get("isError") is True
        elif kind == NOTIFICATION and message.method == CANCELLED:
            self._cancellation(view)
        return view

    def _remember(self, view: MessageView) -> None:
        if len(self._by_seq) >= _PENDING_LIMIT:
            # A trace full of unanswered requests must not grow memory without end.
            self._by_seq.clear()
            self._by_id.clear()
        key = id_key(view.id) if view.has_id else None
        pending = _Pending(
            view.seq,
            view.t or 0.0,
            view.method,
            view.tool,
            view.target,
            view.direction or "",
            key,
            # Only what a response inherits (trace-id, problem): not the sender's
            # text, which up to 200,000 unanswered requests would each keep.
            trace=slim(view.trace) if view.trace is not None else None,
        )
        self._by_seq[(view.session, view.seq, view.index)] = pending
        if key is not None:
            self._by_id[(view.session, pending.direction, key)] = pending

    def _cancellation(self, view: MessageView) -> None:
        present, request_id = cancelled_request_id(view)
        if not present:
            return
        try:
            key = id_key(request_id)
        except TypeError:
            return
        # The requestor cancels its own request: same direction as the request.
        pending = self._by_id.get((view.session, view.direction or "", key))
        if pending is None:
            return
        view.tool = pending.tool
        view.cancellation = Cancellation(
            pending.seq,
            pending.method,
            pending.tool,
            round((view.t or 0.0) - pending.t, 3),
            pending.answered,
        )

    def _finding_view(self, finding: FindingRecord) -> MessageView:
        data = finding.data
        method = data.get("method") if isinstance(data.get("method"), str) else None
        return MessageView(
            finding.session,
            finding.seq[0] if finding.seq else 0,
            None,
            FINDING,
            method=method,
            findings=[finding],
        )


def index_findings(records: Iterable[Record]) -> FindingsIndex:
    """Findings by (session, seq) for every seq they name: the first pass over a trace."""
    index: FindingsIndex = {}
    for record in records:
        if isinstance(record, FindingRecord):
            for seq in record.seq:
                index.setdefault((record.session, seq), []).append(record)
    return index


def build_views(
    records: Iterable[Record], findings_index: FindingsIndex | None = None
) -> Iterator[MessageView]:
    """Every view of a record stream, in trace order (each as soon as it is complete)."""
    builder = ViewBuilder(findings_index, stream=True)
    for record in records:
        yield from builder.feed(record)
    yield from builder.flush()
