"""The session object: bytes in, records out.

A ``Session`` is the sans-I/O heart of mcpsniff (the h11 model). A shell hands
it ``(direction, transport, bytes, timestamp)``; it frames, parses, classifies
and correlates the traffic, runs the conformance rules for the protocol
version in force, and returns records. It never reads a clock, never does I/O
and never raises on traffic: a bad frame is data (DESIGN.md invariant 3).

``mcpsniff check`` re-runs the same ``analyze_frame``/``apply_event`` code on
the frame and event records of a saved trace, so live and offline findings
agree (invariant 4).
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from typing import Any, NamedTuple

import orjson

from mcpsniff.core import catalog
from mcpsniff.core.diagnosis import diagnose
from mcpsniff.core.framing import LineFramer
from mcpsniff.core.ids import coerced_keys, id_key, id_value, show_id
from mcpsniff.core.jsontypes import json_type
from mcpsniff.core.model import (
    BATCH,
    C2S,
    ERROR,
    INVALID,
    NOTIFICATION,
    OPPOSITE,
    REQUEST,
    RESPONSE,
    S2C,
    SENDER,
    UNPARSEABLE,
    UNPARSED,
    EventRecord,
    FindingRecord,
    FrameRecord,
    MessageRecord,
    Record,
)
from mcpsniff.core.protocol import STATELESS
from mcpsniff.core.rules import (
    flow,
    http,
    jsonrpc,
    lifecycle,
    methods,
    registry,
    replies,
    reuse,
    stdio,
    tasks,
)
from mcpsniff.core.state import Answered, BatchInfo, Msg, Pending, SessionState

#: Transport events that end a session: unanswered requests are reported then.
END_EVENTS = frozenset({"session-end"})


class SeqCounter:
    """Hands out the trace-wide sequence numbers that records refer to."""

    __slots__ = ("value",)

    def __init__(self, start: int = 0) -> None:
        self.value = start

    def next(self) -> int:
        """The next sequence number."""
        self.value += 1
        return self.value


class Session:
    """Analyzes the traffic of one MCP session (one stdio process, one HTTP session)."""

    def __init__(
        self,
        key: str = "default",
        transport: str = "stdio",
        counter: SeqCounter | None = None,
        redactor: Callable[[bytes], tuple[bytes, int]] | None = None,
    ) -> None:
        self.key = key
        #: State shared by all sessions of one capture (HTTP session ids).
        self.shared: dict[str, Any] = {}
        #: Rewrites secrets in each frame before it is analyzed and recorded.
        self.redactor = redactor
        self.transport = transport
        self.counter = counter or SeqCounter()
        self.state = SessionState()
        self._framers = {C2S: LineFramer(), S2C: LineFramer()}
        self._out: list[Record] = []
        self._severity_cache: dict[tuple[str, str | None], str | None] = {}

    # ------------------------------------------------------------------ shell API

    def feed(self, direction: str, transport: str, data: bytes, t: float) -> list[Record]:
        """Feed stream bytes (newline-delimited JSON, as stdio carries it)."""
        out: list[Record] = []
        for line in self._framers[direction].feed(data):
            out.extend(self.analyze_frame(self._new_frame(direction, transport, line, t)))
        return out

    def feed_frame(
        self,
        direction: str,
        transport: str,
        raw: bytes,
        t: float,
        meta: dict[str, Any] | None = None,
    ) -> list[Record]:
        """Feed one whole frame: an HTTP body or an SSE event's data."""
        frame = self._new_frame(direction, transport, raw, t)
        if meta:
            frame.meta = {**(frame.meta or {}), **meta}
        return self.analyze_frame(frame)

    def eof(self, direction: str, t: float) -> list[Record]:
        """The byte stream in ``direction`` ended: flush a final line without newline."""
        rest = self._framers[direction].flush()
        if rest is None:
            return []
        return self.analyze_frame(self._new_frame(direction, self.transport, rest, t))

    def event(self, name: str, t: float, data: dict[str, Any] | None = None) -> list[Record]:
        """Record a transport event (stderr line, exit, HTTP metadata, ...)."""
        record = EventRecord(self.counter.next(), t, self.key, name, data or {})
        return self.apply_event(record)

    def close(self, t: float, data: dict[str, Any] | None = None) -> list[Record]:
        """End the session: flush partial lines, then report what never completed."""
        if self.state.ended:
            return []
        out: list[Record] = []
        out.extend(self.eof(C2S, t))
        out.extend(self.eof(S2C, t))
        out.extend(self.event("session-end", t, data))
        return out

    @property
    def buffered(self) -> int:
        """Bytes waiting in the line framers for their newline."""
        return sum(f.pending for f in self._framers.values())

    def _new_frame(self, direction: str, transport: str, raw: bytes, t: float) -> FrameRecord:
        frame = FrameRecord(self.counter.next(), t, self.key, direction, transport, raw)
        if self.redactor is not None:
            frame.raw, count = self.redactor(raw)
            if count:
                frame.meta = {"redacted": count}
        return frame

    # ------------------------------------------------------------------ analysis entry points

    def analyze_frame(self, frame: FrameRecord) -> list[Record]:
        """Analyze one frame whose seq is already assigned (live or from a trace)."""
        self._out = out = [frame]
        try:
            offsets = self.state.stream_offset
            direction = frame.direction
            offset = offsets[direction]
            offsets[direction] = offset + len(frame.raw)
            value = frame.value
            if type(value) is dict and type(value.get("id")) is not float:
                # The usual frame: one message, already parsed (by the trace
                # reader, or by a shell that parsed it to redact it).
                self._message(value, frame, None)
            else:
                self._analyze(frame, value, offset)
            if self.state.line_runs:
                # A pretty-printed run ends at the first line that is not part of it.
                stdio.flush(self, direction, frame.seq)
            meta = frame.meta
            if meta is not None and "exchange" in meta:
                http.on_frame(self, frame, [r for r in out if isinstance(r, MessageRecord)])
        except Exception as exc:
            out.append(self._internal_error(frame.seq, frame.t, exc))
        self._out = []
        return out

    def apply_event(self, record: EventRecord) -> list[Record]:
        """Apply a transport event record (live or from a trace)."""
        self._out = out = [record]
        try:
            if record.event in END_EVENTS and not self.state.ended:
                self.state.ended = True
                stdio.flush_all(self)
                flow.end_of_session(self, record)
                lifecycle.end_of_session(self, record)
            elif record.event.startswith(("http-", "sse-")):
                http.on_event(self, record)
        except Exception as exc:
            out.append(self._internal_error(record.seq, record.t, exc))
        self._out = []
        return out

    def _internal_error(self, seq: int, t: float, exc: Exception) -> EventRecord:
        # An analyzer bug must not cost the user their traffic: record it and go on.
        return EventRecord(
            seq,
            t,
            self.key,
            "analyzer-error",
            {"error": repr(exc), "traceback": traceback.format_exc(limit=6)},
        )

    # ------------------------------------------------------------------ reporting

    def report(
        self,
        rule: str,
        message: str,
        seqs: list[int],
        *,
        severity: str | None = None,
        **data: Any,
    ) -> None:
        """Emit a finding for ``rule`` if it applies to the version in force."""
        version = self.state.version
        cache_key = (rule, version)
        default = self._severity_cache.get(cache_key, "")
        if default == "":
            entry = catalog.get(rule)
            default = entry.severity_for(version) if entry.applies_to(version) else None
            self._severity_cache[cache_key] = default
        if default is None:
            return
        self._out.append(FindingRecord(rule, severity or default, message, self.key, seqs, data))

    @property
    def emitted(self) -> int:
        """How many records the frame or event being analyzed has produced so far."""
        return len(self._out)

    def emit(self, record: Record) -> None:
        """Append a derived record to the current output."""
        self._out.append(record)

    # ------------------------------------------------------------------ framing and parsing

    def _analyze(self, frame: FrameRecord, value: Any, offset: int) -> None:
        """Everything but an already parsed single message: parse, batches, big ids."""
        raw = frame.raw
        if value is UNPARSED:
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError:
                value = _fallback_parse(raw)
                if value is _INVALID:
                    self._unparseable(frame, offset)
                    return
            # The trace writer stores a parsed frame as embedded JSON (trace v2).
            frame.value = value
        if type(value) is dict:
            identifier = value.get("id")
            if type(identifier) is float and abs(identifier) >= _EXACT_FLOAT_LIMIT:
                # orjson turns integers beyond 64 bits into floats; ids compare
                # exactly (JSON-RPC §5), so parse such a frame exactly.
                exact = _fallback_parse(raw)
                if isinstance(exact, dict):
                    value = exact
            self._message(value, frame, None)
        elif isinstance(value, list):
            self._batch(value, frame)
        else:
            record = MessageRecord(frame.seq, self.key, frame.direction, INVALID, size=len(raw))
            self.emit(record)
            replies.note_bad(self, frame.direction, frame.seq, replies.INVALID)
            if stdio.continues_run(self, frame, value):
                return  # a line such as `  "x"` inside a pretty-printed message
            self.report(
                "JR-TOPLEVEL",
                f"{SENDER[frame.direction]} sent a JSON {type(value).__name__}, but a "
                "JSON-RPC message must be an object (or an array for a batch)",
                [frame.seq],
                value_type=json_type(value),
            )

    def _unparseable(self, frame: FrameRecord, offset: int) -> None:
        raw = frame.raw
        sender = SENDER[frame.direction]
        line_framed = frame.transport == "stdio"
        if line_framed and not raw.strip():
            # A blank line between messages: harmless to lenient readers but not a
            # message either (catalogue STDIO-STDOUT-CLEAN: "Blank lines: HEUR/INFO").
            self.report(
                "JR-PARSE",
                f"{sender} sent an empty line; it is not a JSON-RPC message",
                [frame.seq],
                severity="info",
                cause="empty",
                sender=sender,
                offset=offset,
            )
            return
        at_eof = line_framed and not raw.endswith(b"\n")
        diag = diagnose(raw, at_eof=at_eof, framing="line" if line_framed else "body")
        self.emit(MessageRecord(frame.seq, self.key, frame.direction, UNPARSEABLE, size=len(raw)))
        bad = replies.BATCH_PARSE if raw.lstrip()[:1] == b"[" else replies.PARSE
        replies.note_bad(self, frame.direction, frame.seq, bad)
        stdio.unparseable(self, frame, offset, diag)

    # ------------------------------------------------------------------ classification

    def _batch(self, items: list[Any], frame: FrameRecord) -> None:
        direction = frame.direction
        self.emit(MessageRecord(frame.seq, self.key, direction, BATCH, size=len(frame.raw)))
        reported = self.emitted
        jsonrpc.check_batch_allowed(self, frame, items)
        if not items:
            if replies.empty_array(self, frame):
                return
            answered = self.state.notification_batch[OPPOSITE[direction]]
            if answered is not None:
                self.state.notification_batch[OPPOSITE[direction]] = None
                self.report(
                    "JR-BATCH-ALL-NOTIF",
                    f"{SENDER[direction]} answered a batch of only notifications (seq "
                    f"{answered}) with `[]`; it must send nothing at all",
                    [answered, frame.seq],
                )
                return
            replies.note_bad(self, direction, frame.seq, replies.EMPTY_BATCH)
            if self.emitted == reported:
                # JSON-RPC §6: a batch is "an Array with at least one value"; `[]`
                # is an invalid request (its reply is judged: rules/replies.py).
                # Where batches do not exist at all, MSG-BATCH-* said it already.
                self.report(
                    "JR-TOPLEVEL",
                    f"{SENDER[direction]} sent an empty batch `[]`, which is not a request; "
                    "the only valid reply is a single -32600 Invalid Request error",
                    [frame.seq],
                    cause="empty-batch",
                )
            return
        msgs = [self._message(item, frame, i) for i, item in enumerate(items)]
        kinds = {m.kind for m in msgs}
        if kinds & {REQUEST, NOTIFICATION, INVALID} and not kinds - {
            REQUEST,
            NOTIFICATION,
            INVALID,
        }:
            requests = [m for m in msgs if m.kind == REQUEST]
            invalid = sum(1 for m in msgs if m.kind == INVALID)
            if requests or invalid:
                self.state.batches[frame.seq] = BatchInfo(
                    frame.seq,
                    direction,
                    [id_key(m.id) for m in requests],
                    invalid,
                    len(msgs) - len(requests) - invalid,
                )
            else:
                self.state.notification_batch[direction] = frame.seq
        elif kinds <= {RESPONSE, ERROR}:
            self._batch_reply(msgs, frame)
        jsonrpc.check_batch_shape(self, frame, msgs)

    def _message(self, obj: Any, frame: FrameRecord, index: int | None) -> Msg:
        direction = frame.direction
        seq = frame.seq
        if not isinstance(obj, dict):
            record = MessageRecord(
                seq, self.key, direction, INVALID, index, obj=obj, source=frame, sent_at=frame.t
            )
            self._out.append(record)
            replies.note_bad(self, direction, seq, replies.INVALID)
            self.report(
                "JR-TOPLEVEL",
                f"element {index} of the batch is a JSON {json_type(obj)}, not a "
                "request or notification object",
                [seq],
                index=index,
            )
            return record
        # Classify first and build the record (which is also the rules' working
        # view) once, whole: this runs for every message.
        kind = INVALID
        ident: Any = None
        has_id = False
        method: str | None = None
        params: dict[str, Any] | None = None
        target: str | None = None
        error_code: Any = None
        if "method" in obj:
            if "id" in obj:
                kind = REQUEST
                ident = obj["id"]
                has_id = True
            else:
                kind = NOTIFICATION
            name = obj["method"]
            if isinstance(name, str):
                method = name
            value = obj.get("params")
            if isinstance(value, dict):
                params = value
                shown = value.get("name") or value.get("uri") or value.get("level")
                if isinstance(shown, str):
                    target = shown[:200]
            if "result" in obj or "error" in obj:
                kind = INVALID
        elif "result" in obj:
            kind = RESPONSE
            if "id" in obj:
                ident = obj["id"]
                has_id = True
        elif "error" in obj:
            kind = ERROR
            if "id" in obj:
                ident = obj["id"]
                has_id = True
            error = obj["error"]
            if isinstance(error, dict):
                error_code = error.get("code")
        msg = MessageRecord(
            seq,
            self.key,
            direction,
            kind,
            index,
            ident,
            has_id,
            method,
            None,
            None,
            None,
            None,
            None,
            error_code,
            target,
            obj,
            params,
            frame,
            frame.t,
        )
        self._out.append(msg)

        jsonrpc.check_message(self, msg)
        if kind == REQUEST:
            if method is None:
                self._invalid(msg)
                return msg
            # The era decides how the id is keyed (``_scope``): known before it is.
            lifecycle.note_era(self, msg)
            self._register_request(msg)
            lifecycle.on_request(self, msg)
            methods.on_request(self, msg)
            flow.on_request(self, msg)
            # Tasks matter only for task-augmented requests, tasks/* and calls of
            # tools that require tasks: this runs for every request.
            if (
                (params is not None and "task" in params)
                or method[:6] == "tasks/"
                or (method == "tools/call" and self.state.task_tools)
            ):
                tasks.on_request(self, msg)
            handlers = _REQUEST_HANDLERS.get(method)
            if handlers is None:
                handlers = registry.handlers(registry.REQUEST, method)
            for handler in handlers:
                handler(self, msg)
        elif kind == NOTIFICATION:
            if method is None:
                self._invalid(msg)
                return msg
            lifecycle.on_notification(self, msg)
            methods.on_notification(self, msg)
            flow.on_notification(self, msg)
            if method == "notifications/tasks/status":
                tasks.on_notification(self, msg)
            handlers = _NOTIFICATION_HANDLERS.get(method)
            if handlers is None:
                handlers = registry.handlers(registry.NOTIFICATION, method)
            for handler in handlers:
                handler(self, msg)
        elif kind == INVALID:
            self._invalid(msg)
        else:
            self._match_response(msg)
            lifecycle.on_response(self, msg)
            # A CreateTaskResult answers a task-augmented request instead of the
            # method's result, and keeps its progress token alive (rules/tasks.py).
            request = msg.request
            if request is not None and not (
                (
                    (request.params is not None and "task" in request.params)
                    or request.method[:6] == "tasks/"
                )
                and tasks.on_response(self, msg)
            ):
                methods.on_response(self, msg)
                flow.on_response(self, msg)
                if kind == ERROR:
                    self._registered_reply(msg, request.method)
                else:
                    handlers = _RESULT_HANDLERS.get(request.method)
                    if handlers is None:
                        handlers = registry.handlers(registry.RESULT, request.method)
                    if handlers:
                        result = obj.get("result")
                        if type(result) is dict:
                            for handler in handlers:
                                handler(self, msg, result)
        return msg

    def _registered_reply(self, msg: Msg, method: str) -> None:
        """The registered rules for the result (or error) of a ``method`` request."""
        if msg.kind == ERROR:
            for handler in registry.handlers(registry.ERROR, method):
                handler(self, msg)
            return
        found = registry.handlers(registry.RESULT, method)
        if found:
            result = msg.obj.get("result")
            if type(result) is dict:
                for handler in found:
                    handler(self, msg, result)

    def _invalid(self, msg: Msg) -> None:
        """A message no rule below the JSON-RPC layer can use."""
        msg.kind = INVALID
        replies.note_bad(self, msg.direction, msg.frame, replies.INVALID)

    # ------------------------------------------------------------------ correlation

    def pairing_key(self, ident: Any, msg: Msg) -> Any:
        """The key request id ``ident`` is paired by, for ``msg`` (see ``_scope``)."""
        return self.scoped(ident if type(ident) is int else id_key(ident), msg)

    def scoped(self, key: Any, msg: Msg) -> Any:
        """``key`` (an id's or a progress token's) within ``msg``'s client, when scoped."""
        scope = self._scope(msg)
        return key if scope is None else ScopedKey(scope, key)

    def rescope(self, mapping: Any, key: Any) -> tuple[Any, bool]:
        """Where ``mapping`` holds ``key``'s entry, and whether that is ambiguous.

        Pairing per connection (``_scope``) must not lose what a client sends
        on another of its connections (an HTTP/1.1 client pools several): a
        cancellation while its request's stream is still open, progress on a
        stream resumed elsewhere. ``key`` itself when it is there (or is not
        scoped); else the one entry for the same id under another scope; else
        ``key``, with ``True`` when several clients have that id (then nobody
        can tell whose it is, and nothing should be reported).
        """
        if type(key) is not ScopedKey or key in mapping:
            return key, False
        inner = key.key
        found = [k for k in mapping if type(k) is ScopedKey and k.key == inner]
        if len(found) == 1:
            return found[0], False
        return key, len(found) > 1

    def _scope(self, msg: Msg) -> str | None:
        """The client connection of a stateless HTTP message, when ids are paired per client.

        (Progress tokens, which clients make up too, are kept per client alike.)

        2026-07-28 has no sessions, so a server's stateless traffic is one group,
        and every client counts its request ids from 1: two concurrent clients
        through one proxy had each other's ids in flight (a false MSG-ID-INFLIGHT,
        and answers paired with the other client's request). A response travels
        on its request's HTTP exchange, so within the group ids are paired per
        client connection (the ``client`` of the exchange's http-request event,
        when the shell knows it). Only session-less Streamable HTTP exchanges
        are scoped: a session id or a legacy stream keeps clients apart already,
        and a legacy server answers on its GET stream. Batch elements are left
        unscoped: batches are gone from that era (MSG-BATCH-REMOVED).
        """
        if self.state.era != STATELESS or msg.index is not None:
            return None
        http_state = self.state.http
        frame = msg.source
        if http_state is None or frame is None or not frame.meta:
            return None
        exchange = http_state.exchanges.get(frame.meta.get("exchange"))
        if (
            exchange is None
            or exchange.transport != http.STREAMABLE
            or "mcp-session-id" in exchange.headers
        ):
            return None
        return exchange.client

    def _register_request(self, msg: Msg) -> None:
        state = self.state
        direction = msg.direction
        ident = msg.id
        key = self.pairing_key(ident, msg)
        msg.key = key
        pending = state.pending[direction]
        seen = state.used[direction].check_and_add(key)
        # reuse.fingerprint, inlined: this runs for every request.
        source = msg.source
        this_print = hash(source.raw) if msg.index is None and source is not None else None
        if key in pending:
            reuse.in_flight(self, msg, pending[key], this_print)
        elif seen:
            reuse.after_completion(self, msg, key, this_print)
        index = msg.index
        if key in pending:
            # Both requests are in flight under one id: keep both, so each reply
            # pairs with one of them (``_take_pending``) instead of the second
            # reply counting as a duplicate of the first.
            by_id = state.shadowed[direction]
            if key in by_id or len(by_id) < MAX_SHADOWED_IDS:
                shadowed = by_id.setdefault(key, [])
                if len(shadowed) < MAX_SHADOWED:
                    shadowed.append(pending[key])
        pending[key] = Pending(
            msg.frame,
            index,
            key,
            ident,
            msg.method or "",
            msg.sent_at,
            msg.params,
            None,
            False,
            None if index is None else msg.frame,
            False,
            this_print,
        )

    def _match_response(self, msg: Msg) -> None:
        state = self.state
        request_direction = OPPOSITE[msg.direction]
        if msg.has_id and msg.id is None:
            # A request sent with "id": null (MSG-ID-NOT-NULL, its root finding)
            # answered with that null id echoed: the pair, not a reply to a
            # notification nor a request never answered.
            key = self.pairing_key(None, msg)
            request = state.pending[request_direction].pop(key, None)
            if request is not None:
                self._pair(msg, request)
                msg.note = "null-id-echo"
                return
        if not msg.has_id or msg.id is None:
            # http.py reads the frame as msg.frame, which is the frame's seq here.
            request = http.request_of_exchange(self, _FrameView(msg.kind, msg.source))
            if request is not None:
                # An id-less error in an HTTP error response answers the request
                # POSTed in that exchange (catalogue trap 1, MOD-HTTP-FALLBACK).
                del state.pending[request_direction][request.key]
                self._pair(msg, request)
                msg.note = "http-error-reply"
                return
            jsonrpc.null_id_response(self, msg)
            return
        ident = msg.id
        scope = self._scope(msg)
        key = ident if type(ident) is int else id_key(ident)
        if scope is not None:
            key = ScopedKey(scope, key)
        pending = state.pending[request_direction]
        request = pending.pop(key, None)
        if request is not None and state.shadowed[request_direction]:
            request = self._take_pending(msg, key, request)
        if request is not None:
            self._pair(msg, request)
            if msg.error_code == -32700 and msg.kind == ERROR:
                replies.parse_error_for_a_request(self, msg, request.seq)
            if request.cancelled:
                # A result after notifications/cancelled is an expected race
                # (cancellation.mdx: "Both parties MUST handle these race
                # conditions gracefully"; catalogue trap 6): record, don't flag.
                msg.note = "late-after-cancel"
            return
        for alt in coerced_keys(msg.id):
            if scope is not None:
                alt = ScopedKey(scope, alt)
            request = pending.get(alt)
            if request is not None:
                del pending[alt]
                self._pair(msg, request)
                msg.note = "id-type-mismatch"
                self.report(
                    "JR-RESP-ID",
                    f"{SENDER[msg.direction]} answered request id {show_id(request.id)} "
                    f"({request.method}, seq {request.seq}) with id {show_id(msg.id)}: the id "
                    "must be echoed with the same JSON type",
                    [request.seq, msg.frame],
                    cause="id-type",
                    request_id=request.id,
                    response_id=msg.id,
                )
                return
        answered = state.answered[request_direction].get(key)
        if answered is not None:
            msg.answers = answered.seq
            msg.request_index = answered.index
            if answered.cancelled and answered.response_seq is None:
                msg.note = "late-after-cancel"
                answered.response_seq = msg.frame
                if (
                    answered.method == "initialize"
                    and answered.seq == state.lifecycle.init_seq
                    and msg.direction == S2C
                ):
                    lifecycle.late_initialize_response(self, msg)
                return
            msg.note = "duplicate-response"
            self.report(
                "JR-RESP-ID",
                f"{SENDER[msg.direction]} sent a second response to request id "
                f"{show_id(msg.id)} ({answered.method}, seq {answered.seq}); the first "
                f"was seq {answered.response_seq}",
                [answered.seq, msg.frame],
                cause="duplicate-response",
                id=msg.id,
                first_response_seq=answered.response_seq,
            )
            return
        if scope is not None:
            # Not on its own connection, nor answered there lately: a stream resumed on a
            # new connection (Last-Event-ID) carries answers to requests sent on
            # another. The one such request of another scope pairs.
            other, ambiguous = self.rescope(pending, key)
            if other is not key:
                self._pair(msg, pending.pop(other))
                return
            if ambiguous:
                return  # two clients' requests with this id: whose, the trace cannot tell
        if key in state.used[request_direction]:
            msg.note = "duplicate-response"
            self.report(
                "JR-RESP-ID",
                f"{SENDER[msg.direction]} sent another response to request id "
                f"{show_id(msg.id)}, which was already answered",
                [msg.frame],
                cause="duplicate-response",
                id=msg.id,
            )
            return
        if msg.kind == ERROR and replies.orphan_error(self, msg, msg.error_code):
            return
        if self._lost_precision(msg, pending):
            return
        msg.note = "orphan"
        self.report(
            "JR-RESP-ID",
            f"{SENDER[msg.direction]} sent a response with id {show_id(msg.id)}, but the "
            f"{SENDER[request_direction]} never sent a request with that id",
            [msg.frame],
            cause="unknown-id",
            id=msg.id,
        )

    def _lost_precision(self, msg: Msg, pending: dict[Any, Pending]) -> bool:
        """A reply whose integer id lost digits: 2**53 + 1 echoed as 2**53.

        A peer that keeps JSON numbers as IEEE doubles (JavaScript) cannot echo
        an integer id beyond 2**53 exactly; the reply then names another id.
        Ids compare exactly (JSON-RPC §5), so it is a JR-RESP-ID of its own
        cause, linked to the request it was meant for.
        """
        ident = msg.id
        if type(ident) not in (int, float) or abs(ident) < _EXACT_FLOAT_LIMIT:
            return False
        for key, request in pending.items():
            meant = request.id
            if (
                type(meant) is int
                and abs(meant) > _EXACT_FLOAT_LIMIT
                and meant != ident
                and float(meant) == float(ident)
            ):
                del pending[key]
                self._pair(msg, request)
                msg.note = "id-precision"
                self.report(
                    "JR-RESP-ID",
                    f"{SENDER[msg.direction]} answered request id {meant} ({request.method}, "
                    f"seq {request.seq}) with id {show_id(ident)}: the id lost precision (it "
                    "went through a 64-bit float, which holds integers exactly only up to "
                    "2**53); use ids within ±2**53, or strings",
                    [request.seq, msg.frame],
                    cause="id-precision",
                    request_id=meant,
                    response_id=ident,
                )
                return True
        return False

    def _take_pending(self, msg: Msg, key: Any, request: Pending) -> Pending:
        """Which of the requests in flight under one id ``msg`` answers.

        JSON-RPC gives no way to tell (the id is the only link), so the
        result's shape decides when it fits exactly one of them (a `tools`
        array answers tools/list, not ping); otherwise the oldest goes first.
        The others stay in flight under the id.
        """
        direction = OPPOSITE[msg.direction]
        shadowed = self.state.shadowed[direction]
        queue = shadowed.get(key)
        if not queue:
            return request
        candidates = [*queue, request]
        chosen = _by_result_shape(msg, candidates) or candidates[0]
        candidates.remove(chosen)
        self.state.pending[direction][key] = candidates.pop()
        if candidates:
            shadowed[key] = candidates
        else:
            del shadowed[key]
        msg.note = "ambiguous-id"
        return chosen

    def _pair(self, msg: Msg, request: Pending) -> None:
        msg.answers = request.seq
        msg.request_index = request.index
        msg.latency_ms = round_ms((msg.sent_at - request.t) * 1000.0)
        msg.request = request
        # BoundedMap.put, inlined: this runs for every response.
        answered = self.state.answered[OPPOSITE[msg.direction]]
        key = request.key
        answered[key] = Answered(
            request.seq,
            request.index,
            request.method,
            msg.frame,
            request.cancelled,
            request.fingerprint,
        )
        answered.move_to_end(key)
        if len(answered) > answered.limit:
            answered.popitem(False)

    def _batch_reply(self, msgs: list[Msg], frame: FrameRecord) -> None:
        """Check a reply array against the batch it answers (JSON-RPC §6)."""
        state = self.state
        request_direction = OPPOSITE[frame.direction]
        answered_batches = {
            m.request.batch_seq
            for m in msgs
            if m.request is not None and m.request.batch_seq is not None
        }
        null_replies = sum(1 for m in msgs if not m.has_id or m.id is None)
        if len(answered_batches) != 1:
            if not answered_batches and null_replies == len(msgs):
                batch = _oldest_batch(state.batches, request_direction)
                if batch is not None and batch.invalid_elements:
                    answered_batches = {batch.seq}
            if len(answered_batches) != 1:
                return
        batch_seq = answered_batches.pop()
        batch = state.batches.pop(batch_seq, None)
        if batch is None:
            return
        replied = {id_key(m.id) for m in msgs if m.has_id and m.id is not None}
        missing = [k for k in batch.request_keys if k not in replied]
        extra_null = max(0, null_replies - batch.invalid_elements)
        missing_invalid = max(0, batch.invalid_elements - null_replies)
        if missing_invalid:
            replies.missing_element_errors(self, batch_seq, frame.seq, missing_invalid)
        if missing or extra_null:
            pending = state.pending[request_direction]
            for k in missing:
                if k in pending:
                    pending[k].missing_reported = True
            parts = []
            if missing:
                parts.append(
                    f"{len(missing)} request(s) got no response in it ("
                    + ", ".join(show_id(id_value(k)) for k in missing[:10])
                    + ")"
                )
            if extra_null:
                parts.append(f"{extra_null} response(s) more than the batch asked for")
            self.report(
                "JR-BATCH-RESP-COUNT",
                f"the reply to the batch at seq {batch_seq} does not match it: " + "; ".join(parts),
                [batch_seq, frame.seq],
                missing=[id_value(k) for k in missing],
                expected=len(batch.request_keys) + batch.invalid_elements,
                received=len(msgs),
            )


#: The registry's per-method handler tables, read directly on the hot path.
_REQUEST_HANDLERS = registry.TABLES[registry.REQUEST]
_NOTIFICATION_HANDLERS = registry.TABLES[registry.NOTIFICATION]
_RESULT_HANDLERS = registry.TABLES[registry.RESULT]


class ScopedKey(NamedTuple):
    """A request id's key within one client connection (``Session._scope``)."""

    scope: str
    key: Any


class _FrameView(NamedTuple):
    """What ``http.request_of_exchange`` reads of a message: its kind and its frame."""

    kind: str
    frame: FrameRecord | None


def round_ms(value: float) -> float:
    """``round(value, 3)``, exactly, in half the time for the usual latency.

    ``round`` with digits goes through a decimal string and back (about
    0.23 us), and every response pays it. Below 2**31 thousandths the product
    ``value * 1000.0`` is within 2**-22 of the exact one, so when its
    fractional part is more than 1e-6 away from one half, the integer it rounds
    to is the one the exact value rounds to, and ``n / 1000.0`` (one correctly
    rounded division of exact operands) is the double nearest to n/1000, which
    is what ``round`` returns. Near a half, at zero (the sign of -0.0) and for
    anything else, ``round`` itself decides.
    """
    scaled = value * 1000.0
    if 0.0 < scaled < 2147483648.0:
        whole = int(scaled)
        fraction = scaled - whole
        if fraction > 0.500001:
            return (whole + 1) / 1000.0
        if fraction < 0.499999 and whole:
            return whole / 1000.0
    return round(value, 3)


#: How many requests sharing one in-flight id are remembered per id.
MAX_SHADOWED = 64
#: How many ids with shadowed requests are remembered per direction.
MAX_SHADOWED_IDS = 1024
#: The member a method's result always has (schema.ts); an empty result answers the rest.
_RESULT_MEMBER = {
    "initialize": "protocolVersion",
    "tools/list": "tools",
    "tools/call": "content",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "resources/read": "contents",
    "prompts/list": "prompts",
    "prompts/get": "messages",
    "completion/complete": "completion",
    "roots/list": "roots",
    "sampling/createMessage": "model",
    "elicitation/create": "action",
    "tasks/list": "tasks",
    "server/discover": "supportedVersions",
}


def _by_result_shape(msg: Msg, candidates: list[Pending]) -> Pending | None:
    """The one candidate whose method's result has the shape of ``msg``'s result."""
    result = msg.obj.get("result") if isinstance(msg.obj, dict) else None
    if not isinstance(result, dict):
        return None
    keys = set(result) - {"_meta"}
    fits = [
        c
        for c in candidates
        if (member := _RESULT_MEMBER.get(c.method)) in keys or (member is None and not keys)
    ]
    return fits[0] if len(fits) == 1 else None


def _oldest_batch(batches: dict[int, BatchInfo], direction: str) -> BatchInfo | None:
    for batch in batches.values():
        if batch.direction == direction:
            return batch
    return None


_INVALID = object()
#: Floats at or above 2**53 may be integers that lost digits on the way in.
_EXACT_FLOAT_LIMIT = float(2**53)


def _fallback_parse(raw: bytes) -> Any:
    """Parse what orjson refuses but JSON allows (integers beyond 64 bits)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return _INVALID
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return _INVALID


def _reject_constant(name: str) -> Any:
    # NaN and Infinity are Python extensions, not JSON (RFC 8259 §6).
    raise ValueError(name)
