"""MCP traffic as OpenTelemetry spans and metric points: pure, no OpenTelemetry import.

This module turns mcpsniff records (frames, messages, findings, events) into
span *descriptions* following the OpenTelemetry semantic conventions for MCP
(``docs/gen-ai/mcp.md`` in open-telemetry/semantic-conventions-genai, status
Development). :mod:`mcpsniff.export.otlp` hands them to the OpenTelemetry SDK.

mcpsniff sees both ends of the wire, which no instrumentation library does, so
every request becomes **two** spans: the CLIENT span of the side that sent it
("reported by the MCP client when it initiates the request ... or by the MCP
server when server initiates the operation") and the SERVER span of the side
that received it, its child ("The MCP client span becomes a parent of the MCP
server span regardless of transport used"). Both carry the times the relay saw
the request and its response. When the request carries a W3C ``traceparent``
in ``params._meta`` ("inject traceparent and tracestate to the MCP message
params._meta ... and extract them on the receiver side to use as the remote
parent"), the CLIENT span is a child of that span, so the pair appears inside
the agent's own trace. Notifications get the same pair with no duration.

Findings become span events named by rule id. Memory is bounded: at most
``MAX_PENDING`` unanswered requests per session are remembered (the oldest is
then exported as unanswered), sessions are forgotten when they end, and at
most ``MAX_SESSIONS`` open ones are kept (the least recently active is then
given up, its requests exported as unanswered).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from mcpsniff.core import trace_context
from mcpsniff.core.model import (
    C2S,
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
from mcpsniff.core.redact import redact_json_value, redact_text
from mcpsniff.export.safe_text import export_text

#: The 2026-07-28 era has no sessions: ``mcp.session.id`` is not set for it.
STATELESS_VERSION = "2026-07-28"
PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
#: Unanswered requests remembered per session before the oldest is given up.
MAX_PENDING = 4096
#: Open sessions remembered before the least recently active one is given up
#: (a trace of 200,000 sessions that never end cost an export 2.2 GB and 240 s).
MAX_SESSIONS = 10_000
#: Longest attribute value copied from traffic.
MAX_ATTRIBUTE = 1024
#: Longest opt-in content attribute (tool arguments or result, as JSON).
MAX_CONTENT = 16384
#: Findings attached to one span at most; the rest are counted in an attribute.
MAX_EVENTS = 64

AttributeValue = str | int | float | bool


@dataclass(frozen=True, slots=True)
class TraceParent:
    """A remote parent from a W3C ``traceparent`` (and ``tracestate``)."""

    trace_id: int
    span_id: int
    flags: int
    state: str | None = None


def parse_traceparent(value: object, state: object = None) -> TraceParent | None:
    """The parent a ``traceparent`` value names, or None if it is not a valid one.

    The check is ``core/trace_context.py``'s, the one ``show`` reports with: W3C
    Trace Context Level 1 (lowercase hex, no all-zero ids, no version ``ff``,
    exactly four fields in version 00). A ``tracestate`` that is not valid is
    left out, as W3C §3.3 lets a receiver discard it; the parent still stands.
    """
    context = trace_context.parse(value, state)
    if context.trace_id is None or context.parent_id is None or context.flags is None:
        return None
    tracestate = context.tracestate if context.tracestate_problem is None else None
    return TraceParent(
        int(context.trace_id, 16), int(context.parent_id, 16), context.flags, tracestate
    )


@dataclass(slots=True)
class SpanEvent:
    """A finding on a span: named by rule id."""

    name: str
    t: float
    attributes: dict[str, AttributeValue]


@dataclass(slots=True)
class SpanDraft:
    """One span to export; ``kind`` is ``client``, ``server`` or ``internal``."""

    name: str
    kind: str
    start: float
    end: float
    attributes: dict[str, AttributeValue]
    status_error: bool = False
    status_message: str | None = None
    events: list[SpanEvent] = field(default_factory=list)
    #: For a lone finding span: its session and the frames the finding names.
    session: str = ""
    frames: tuple[int, ...] = ()


@dataclass(slots=True)
class Operation:
    """A request or notification as both sides saw it: CLIENT span, SERVER child."""

    session: str
    client: SpanDraft
    server: SpanDraft
    parent: TraceParent | None = None
    #: The frames (seq) whose findings belong to this operation.
    frames: tuple[int, ...] = ()
    answered: bool = True


@dataclass(slots=True)
class MetricPoint:
    """One histogram measurement, in seconds."""

    name: str
    value: float
    attributes: dict[str, AttributeValue]


@dataclass(slots=True)
class ExportOptions:
    """What the user asked to include."""

    #: Opt-in ``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result``.
    include_content: bool = False
    #: Redact credentials in that content (on unless the trace was recorded unredacted
    #: and the user said so explicitly).
    redact_content: bool = True
    #: ``server.address`` / ``server.port`` of the real upstream (HTTP).
    server_address: str | None = None
    server_port: int | None = None


@dataclass(slots=True)
class _Pending:
    # Not the request itself: a peer's 100 MB request must not stay in memory
    # for as long as it is unanswered.
    op: Operation
    method: str


@dataclass(slots=True)
class _SessionState:
    transport: str = "stdio"
    version: str | None = None
    #: The HTTP client's address and port as the relay saw it (SERVER spans' client.*).
    client: tuple[str, int] | None = None
    #: The server's host as an exchange named it (the addon's traces: many servers).
    server_host: tuple[str, int | None] | None = None
    session_id: str | None = None
    start: float | None = None
    last: float = 0.0
    pending: OrderedDict[tuple[int, int | None], _Pending] = field(default_factory=OrderedDict)
    #: Operations finished but not yet taken, so that findings reported right
    #: after their frame still reach them.
    by_frame: dict[int, Operation] = field(default_factory=dict)
    #: Ended: forgotten at the next take(), once the findings of its end are in.
    ended: bool = False


class SpanBuilder:
    """Feed records in capture order; :meth:`take` returns what is complete.

    One builder serves one capture (all its sessions). It never raises on bad
    traffic: whatever it cannot interpret is left out of the attributes.
    """

    def __init__(self, options: ExportOptions | None = None) -> None:
        self.options = options or ExportOptions()
        #: Least recently active first (see ``_state``).
        self._sessions: OrderedDict[str, _SessionState] = OrderedDict()
        self._done: list[Operation] = []
        self._lone: list[SpanDraft] = []
        self._metrics: list[MetricPoint] = []
        #: Requests given up because too many were unanswered at once.
        self.evicted = 0
        #: While set (the live sink's queue is full), new requests and notifications
        #: are not turned into spans (counted in ``shed``); those in flight still are.
        self.shedding = False
        self.shed = 0

    # ------------------------------------------------------------------ input

    def feed(self, record: Record) -> None:
        """Take one record of the capture."""
        if isinstance(record, MessageRecord):
            self._message(record)
        elif isinstance(record, FindingRecord):
            self._finding(record)
        elif isinstance(record, FrameRecord):
            state = self._state(record.session)
            state.transport = record.transport
            self._seen(state, record.t)
        elif isinstance(record, EventRecord):
            self._event(record)

    def take(self) -> tuple[list[Operation], list[SpanDraft], list[MetricPoint]]:
        """Finished operations, lone finding spans and metric points since the last call."""
        done, lone, metrics = self._done, self._lone, self._metrics
        self._done, self._lone, self._metrics = [], [], []
        for key in [k for k, state in self._sessions.items() if state.ended]:
            del self._sessions[key]
        for state in self._sessions.values():
            state.by_frame.clear()
        return done, lone, metrics

    def finish(self) -> None:
        """The capture ended: sessions still open end now (their requests unanswered)."""
        for key, state in list(self._sessions.items()):
            self._end_session(key, state.last, {})

    # ------------------------------------------------------------------ records

    def _state(self, session: str) -> _SessionState:
        state = self._sessions.get(session)
        if state is None:
            if len(self._sessions) >= MAX_SESSIONS:
                self._give_up_oldest()
            state = self._sessions[session] = _SessionState()
        else:
            self._sessions.move_to_end(session)
        return state

    def _give_up_oldest(self) -> None:
        """Forget the least recently active session; its requests go out as unanswered."""
        _, state = self._sessions.popitem(last=False)
        if state.ended:
            return  # its spans are out already; only late findings would have found it
        for pending in state.pending.values():
            self.evicted += 1
            self._unanswered(state, pending, state.last, "mcpsniff_dropped")

    @staticmethod
    def _seen(state: _SessionState, t: float) -> None:
        if state.start is None:
            state.start = t
        if t > state.last:
            state.last = t

    def _event(self, record: EventRecord) -> None:
        if record.event == "session-end" and record.session not in self._sessions:
            return  # given up (MAX_SESSIONS) or never seen: nothing to end, nothing to evict for
        state = self._state(record.session)
        self._seen(state, record.t)
        data = record.data if isinstance(record.data, dict) else {}
        if record.event == "session-start":
            transport = data.get("transport")
            if isinstance(transport, str):
                state.transport = transport
        elif record.event in ("http-request", "http-response"):
            sid = _header(data.get("headers"), "mcp-session-id")
            if sid is not None:
                state.session_id = export_text(sid, 256)
            peer = data.get("client")
            if record.event == "http-request" and isinstance(peer, str):
                state.client = _host_port(peer)
            host = data.get("host")
            if record.event == "http-request" and isinstance(host, str) and host:
                state.server_host = _host_port(host) or (export_text(host, 256), None)
        elif record.event == "session-end":
            self._end_session(record.session, record.t, data)

    def _message(self, message: MessageRecord) -> None:
        state = self._state(message.session)
        t = message.sent_at or state.last
        self._seen(state, t)
        obj = message.obj if isinstance(message.obj, dict) else None
        if message.kind in (REQUEST, NOTIFICATION) and isinstance(message.method, str):
            if self.shedding:
                self.shed += 1
                return
            self._request(state, message, obj, t)
        elif message.kind in (RESPONSE, ERROR) and message.answers is not None:
            self._response(state, message, obj, t)

    def _request(
        self, state: _SessionState, message: MessageRecord, obj: dict[str, Any] | None, t: float
    ) -> None:
        method = message.method or ""
        params = obj.get("params") if obj is not None else None
        params = params if isinstance(params, dict) else {}
        meta = params.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        version = meta.get(PROTOCOL_VERSION_META)
        if isinstance(version, str):
            state.version = export_text(version, 64)
        attributes = self._common(state, message.direction)
        attributes["mcp.method.name"] = export_text(method, MAX_ATTRIBUTE)
        is_request = message.kind == REQUEST
        # "SHOULD NOT capture this attribute when the id is null or omitted."
        if is_request and message.has_id and message.id is not None:
            attributes["jsonrpc.request.id"] = export_text(_id_text(message.id), MAX_ATTRIBUTE)
        target = None
        name = params.get("name")
        if method == "tools/call" and isinstance(name, str):
            target = attributes["gen_ai.tool.name"] = export_text(name, MAX_ATTRIBUTE)
            # "SHOULD be set to execute_tool when the operation describes a tool call."
            attributes["gen_ai.operation.name"] = "execute_tool"
            if self.options.include_content and "arguments" in params:
                attributes["gen_ai.tool.call.arguments"] = self._content(params["arguments"])
        elif method == "prompts/get" and isinstance(name, str):
            target = attributes["gen_ai.prompt.name"] = export_text(name, MAX_ATTRIBUTE)
        uri = params.get("uri")
        if isinstance(uri, str) and method in _URI_METHODS:
            attributes["mcp.resource.uri"] = self._free_text(uri, MAX_ATTRIBUTE)
        # "{mcp.method.name} {target}", target the tool or prompt name when applicable.
        span_name = f"{attributes['mcp.method.name']} {target}" if target else method
        span_name = export_text(span_name, MAX_ATTRIBUTE)
        client = SpanDraft(span_name, "client", t, t, dict(attributes))
        server = SpanDraft(span_name, "server", t, t, attributes)
        if state.client is not None and message.direction == C2S:
            # "client.address ... When observed from the server side": the MCP client.
            server.attributes["client.address"] = state.client[0]
            server.attributes["client.port"] = state.client[1]
        parent = None
        if trace_context.TRACEPARENT in meta:
            parent = parse_traceparent(
                meta[trace_context.TRACEPARENT], meta.get(trace_context.TRACESTATE)
            )
        op = Operation(message.session, client, server, parent, (message.frame,))
        if not is_request:
            self._complete(state, op, t)
            return
        key = (message.frame, message.index)
        state.pending[key] = _Pending(op, method)
        state.by_frame[message.frame] = op
        if len(state.pending) > MAX_PENDING:
            _, oldest = state.pending.popitem(last=False)
            self.evicted += 1
            self._unanswered(state, oldest, t, "mcpsniff_dropped")

    def _response(
        self, state: _SessionState, message: MessageRecord, obj: dict[str, Any] | None, t: float
    ) -> None:
        pending = state.pending.pop((message.answers or 0, message.request_index), None)
        if pending is None:
            return
        op = pending.op
        op.frames = (*op.frames, message.frame)
        error_type: str | None = None
        description: str | None = None
        extra: dict[str, AttributeValue] = {}
        if message.kind == ERROR and obj is not None:
            error = obj.get("error")
            error = error if isinstance(error, dict) else {}
            code = error.get("code")
            # "SHOULD be set to the string representation of the JSON-RPC error code."
            error_type = export_text(_id_text(code), 64) if code is not None else "_OTHER"
            extra["rpc.response.status_code"] = error_type
            text = error.get("message")
            description = self._free_text(text, MAX_ATTRIBUTE) if isinstance(text, str) else None
        elif obj is not None:
            result = obj.get("result")
            if pending.method == "initialize" and isinstance(result, dict):
                version = result.get("protocolVersion")
                if isinstance(version, str):
                    # The server's answer is the session's version (mcp-rules.md §0.2).
                    state.version = export_text(version, 64)
                    extra["mcp.protocol.version"] = state.version
            if isinstance(result, dict) and result.get("isError") is True:
                # "When CallToolResult is returned with isError set to true ... tool_error."
                error_type = "tool_error"
            elif (
                pending.method == "tools/call"
                and self.options.include_content
                and isinstance(result, dict)
            ):
                extra["gen_ai.tool.call.result"] = self._content(result)
        if error_type is not None:
            extra["error.type"] = error_type
        for span in (op.client, op.server):
            span.attributes.update(extra)
            span.end = max(t, span.start)
            if error_type is not None:
                span.status_error = True
                span.status_message = description
        self._complete(state, op, t)

    def _finding(self, finding: FindingRecord) -> None:
        # A session given up (MAX_SESSIONS) is not opened again by a finding about
        # it (its end's unanswered requests): the finding gets a span of its own.
        state = self._sessions.get(finding.session) or _SessionState()
        op = None
        for seq in finding.seq:
            op = state.by_frame.get(seq)
            if op is not None:
                break
        if op is None:
            for pending in state.pending.values():
                if any(s in pending.op.frames for s in finding.seq):
                    op = pending.op
                    break
        event = SpanEvent(
            export_text(finding.rule, 200),
            state.last,
            {
                "mcpsniff.finding.severity": export_text(finding.severity, 32),
                "mcpsniff.finding.message": self._free_text(finding.message, MAX_ATTRIBUTE),
                "mcpsniff.finding.seq": ",".join(str(s) for s in finding.seq[:20]),
            },
        )
        if op is not None:
            _add_event(op.client, event)
            return
        if self.shedding:
            return
        # A finding about no request (a parse error, an orphan response): its own span,
        # so that nothing the checker found is lost on the way to the backend.
        attributes = self._common(state, C2S)
        attributes["mcpsniff.finding.rule"] = event.name
        span = SpanDraft(f"mcpsniff finding {event.name}", "internal", state.last, state.last, {})
        span.attributes.update(attributes)
        span.events.append(event)
        span.session = finding.session
        span.frames = tuple(finding.seq[:20])
        if finding.severity == "error":
            span.status_error = True
            span.status_message = event.attributes["mcpsniff.finding.message"]  # type: ignore[assignment]
        self._lone.append(span)

    # ------------------------------------------------------------------ helpers

    def _common(self, state: _SessionState, direction: str) -> dict[str, AttributeValue]:
        attributes: dict[str, AttributeValue] = {}
        # "SHOULD be set to tcp or quic if the transport protocol is HTTP ... pipe if stdio."
        attributes["network.transport"] = "pipe" if state.transport == "stdio" else "tcp"
        if state.transport != "stdio":
            attributes["network.protocol.name"] = "http"
            attributes["network.protocol.version"] = "1.1"
        if state.version is not None:
            attributes["mcp.protocol.version"] = state.version
        if state.session_id is not None and state.version != STATELESS_VERSION:
            attributes["mcp.session.id"] = state.session_id
        if self.options.server_address is not None:
            attributes["server.address"] = self.options.server_address
            if self.options.server_port is not None:
                attributes["server.port"] = self.options.server_port
        elif state.server_host is not None:
            # No single upstream (the mitmproxy addon): the host the request went to.
            attributes["server.address"] = state.server_host[0]
            if state.server_host[1] is not None:
                attributes["server.port"] = state.server_host[1]
        attributes["mcpsniff.direction"] = (
            "client_to_server" if direction == C2S else ("server_to_client")
        )
        return attributes

    def _free_text(self, text: str, limit: int) -> str:
        """Traffic text bound for the collector (an error message, a URI, a finding that
        quotes the wire): credentials replaced, as in ``_content``. A backend is shared
        far more widely than the trace, even when the trace was recorded --no-redact."""
        if self.options.redact_content:
            text, _ = redact_text(text)
        return export_text(text, limit)

    def _content(self, value: Any) -> str:
        if self.options.redact_content:
            value, _ = redact_json_value(value)
        try:
            text = orjson.dumps(value).decode()
        except (TypeError, orjson.JSONEncodeError):
            text = repr(value)
        return export_text(text, MAX_CONTENT)

    def _complete(self, state: _SessionState, op: Operation, t: float) -> None:
        state.by_frame[op.frames[-1]] = op
        state.by_frame[op.frames[0]] = op
        self._done.append(op)

    def _unanswered(self, state: _SessionState, pending: _Pending, t: float, why: str) -> None:
        op = pending.op
        op.answered = False
        for span in (op.client, op.server):
            span.end = max(t, span.start)
            span.attributes["error.type"] = why
            span.status_error = True
            span.status_message = "no response before the session ended"
        self._done.append(op)

    def _end_session(self, key: str, t: float, data: dict[str, Any]) -> None:
        state = self._sessions.get(key)
        if state is None or state.ended:
            return
        state.ended = True
        for pending in state.pending.values():
            # Kept findable: the session's end reports these requests right after.
            for seq in pending.op.frames:
                state.by_frame[seq] = pending.op
            self._unanswered(state, pending, t, "no_response")
        state.pending.clear()
        start = state.start if state.start is not None else t
        attributes: dict[str, AttributeValue] = {
            "network.transport": "pipe" if state.transport == "stdio" else "tcp"
        }
        if state.version is not None:
            attributes["mcp.protocol.version"] = state.version
        for name in ("mcp.client.session.duration", "mcp.server.session.duration"):
            self._metrics.append(MetricPoint(name, max(0.0, t - start), dict(attributes)))


_URI_METHODS = frozenset(
    {
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "notifications/resources/updated",
    }
)

#: Attributes the operation-duration metrics carry (low cardinality only).
_METRIC_ATTRIBUTES = frozenset(
    {
        "mcp.method.name",
        "error.type",
        "gen_ai.tool.name",
        "gen_ai.prompt.name",
        "gen_ai.operation.name",
        "mcp.protocol.version",
        "network.transport",
        "network.protocol.name",
        "rpc.response.status_code",
        "server.address",
        "server.port",
    }
)


def operation_metrics(op: Operation) -> list[MetricPoint]:
    """The operation-duration points of ``op``: one as its client saw it, one as its server did.

    The relay sees both at one point on the wire, so both take its duration.
    """
    duration = max(0.0, op.client.end - op.client.start)
    attributes = {k: v for k, v in op.client.attributes.items() if k in _METRIC_ATTRIBUTES}
    return [
        MetricPoint("mcp.client.operation.duration", duration, attributes),
        MetricPoint("mcp.server.operation.duration", duration, dict(attributes)),
    ]


def _add_event(span: SpanDraft, event: SpanEvent) -> None:
    if len(span.events) < MAX_EVENTS:
        span.events.append(event)
    else:
        dropped = span.attributes.get("mcpsniff.findings.dropped", 0)
        span.attributes["mcpsniff.findings.dropped"] = int(dropped) + 1


def _id_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


def _host_port(text: str) -> tuple[str, int] | None:
    """``("127.0.0.1", 52336)`` from ``"127.0.0.1:52336"`` (or ``"[::1]:52336"``)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host or len(text) > 300:
        return None
    return export_text(host.strip("[]"), 256), int(port)


def _header(headers: Any, name: str) -> str | None:
    """The first value of header ``name`` in an event's ``[[name, value], ...]`` list."""
    if not isinstance(headers, list):
        return None
    for pair in headers:
        if (
            isinstance(pair, (list, tuple))
            and len(pair) == 2
            and isinstance(pair[0], str)
            and pair[0].lower() == name
            and isinstance(pair[1], str)
        ):
            return pair[1]
    return None


def spans_of(
    records: Iterator[Record], options: ExportOptions | None = None
) -> Iterator[tuple[list[Operation], list[SpanDraft], list[MetricPoint]]]:
    """Drive a :class:`SpanBuilder` over ``records``; yield its output every 256 records."""
    builder = SpanBuilder(options)
    count = 0
    for record in records:
        count += 1
        # Take only where a new frame starts: the findings about a frame come
        # right after its messages, and must find its spans still open.
        if count >= 256 and isinstance(record, FrameRecord):
            count = 0
            yield builder.take()
        builder.feed(record)
    builder.finish()
    yield builder.take()
