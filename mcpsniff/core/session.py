"""The session object: bytes in, records out.

A ``Session`` is the sans-I/O heart of mcpsniff (the h11 model). A shell hands
it ``(direction, transport, bytes, timestamp)``; it frames, parses, classifies
and correlates the traffic, runs the conformance rules for the protocol
version in force, and returns records. It never reads a clock, never does I/O
and never raises on traffic: a bad frame is data (docs/architecture.md, invariant 3).

The state machine lives here, in one place: framing, parsing, classification,
the pairing of replies with requests (and with the bad input they answer), the
protocol era. It reports nothing itself: what it found goes to the rules
registered for it (``rules/registry.py``: by message kind and method, by
pairing outcome, by frame shape, by transport event), through tables built
once per key.

``mcpsniff check`` re-runs the same ``analyze_frame``/``apply_event`` code on
the frame and event records of a saved trace, so live and offline findings
agree (invariant 4).
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import orjson

from mcpsniff.core import catalog
from mcpsniff.core.framing import LineFramer
from mcpsniff.core.ids import coerced_keys, id_key
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
    UNPARSEABLE,
    UNPARSED,
    EventRecord,
    FindingRecord,
    FrameRecord,
    MessageRecord,
    Record,
)
from mcpsniff.core.protocol import META_VERSION, STATELESS, V5, is_known_version
from mcpsniff.core.rules import http, registry
from mcpsniff.core.rules.jsonrpc import FLAGGED_REQUEST_PREFIXES
from mcpsniff.core.rules.registry import FRAME, PAIRING
from mcpsniff.core.rules.reuse import INLINE_PRINT
from mcpsniff.core.state import (
    BAD_BATCH_PARSE,
    BAD_EMPTY_BATCH,
    BAD_INVALID,
    BAD_PARSE,
    Answered,
    BatchInfo,
    Msg,
    Pending,
    SessionState,
)

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
        #: Findings and events added to the output since a reader last cleared it
        #: (``analyzer.replay_notable`` skips a batch of frames that has none).
        self.notable = 0
        self._severity_cache: dict[tuple[str, str | None], str | None] = {}

    # ------------------------------------------------------------------ shell API

    def feed(self, direction: str, transport: str, data: bytes, t: float) -> list[Record]:
        """Feed stream bytes (newline-delimited JSON, as stdio carries it)."""
        lines = self._framers[direction].feed(data)
        if not lines:
            return []
        # ``_new_frame`` per line, with the lookups bound once (a relay's read
        # carries dozens of lines), then one ``analyze_frames`` for them all.
        counter = self.counter
        seq = counter.value
        redactor = self.redactor
        key = self.key
        frames = []
        append = frames.append
        try:
            for line in lines:
                seq += 1
                frame = FrameRecord(seq, t, key, direction, transport, line)
                if redactor is not None:
                    frame.raw, count = redactor(line)
                    if count:
                        frame.meta = {"redacted": count}
                append(frame)
        finally:
            counter.value = seq  # the numbers handed out, even if the redactor failed
        return self.analyze_frames(frames)

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
        return self.analyze_frames((frame,))

    def analyze_frames(self, frames: Iterable[FrameRecord]) -> list[Record]:
        """Analyze frames in order; each frame record is followed by what it produced."""
        self._out = out = []
        state = self.state
        offsets = state.stream_offset
        message = self._message
        for frame in frames:
            start = len(out)
            out.append(frame)
            try:
                direction = frame.direction
                offset = offsets[direction]
                offsets[direction] = offset + len(frame.raw)
                value = frame.value
                if value is UNPARSED:
                    # A live frame: parsed here, where the usual one goes straight on
                    # to ``_message``; what orjson refuses, ``_analyze`` takes apart.
                    try:
                        value = frame.value = orjson.loads(frame.raw)
                    except orjson.JSONDecodeError:
                        value = UNPARSED  # ``_analyze`` tries the exact parser, then reports
                if type(value) is dict and type(value.get("id")) is not float:
                    # The usual frame: one message, already parsed (by the trace
                    # reader, or by a shell that parsed it to redact it).
                    message(value, frame, None)
                else:
                    self._analyze(frame, value, offset)
                meta = frame.meta
                if state.line_runs or (meta is not None and "exchange" in meta):
                    # Only rules that follow frames need this (a pretty-printed run ends
                    # at the first line that is not part of it; an HTTP body's messages
                    # belong to its exchange): most frames skip it.
                    messages = [r for r in out[start:] if isinstance(r, MessageRecord)]
                    self._frame("parsed", frame, messages)
            except Exception as exc:
                out.append(self._internal_error(frame.seq, frame.t, exc))
                self.notable += 1
        self._out = []
        return out

    def apply_event(self, record: EventRecord) -> list[Record]:
        """Apply a transport event record (live or from a trace)."""
        self._out = out = [record]
        try:
            name = record.event
            if name in END_EVENTS:
                if self.state.ended:
                    return out
                self.state.ended = True
            found = _EVENT_HANDLERS.get(name)
            if found is None:
                found = registry.handlers(registry.EVENT, name)
            for handler in found:
                handler(self, record)
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
        self.notable += 1

    @property
    def emitted(self) -> int:
        """How many records the frame or event being analyzed has produced so far."""
        return len(self._out)

    def emit(self, record: Record) -> None:
        """Append a derived record to the current output."""
        self._out.append(record)
        if type(record) is not MessageRecord:
            self.notable += 1

    def reported_since(self, start: int, rules: tuple[str, ...]) -> bool:
        """Whether a finding of one of ``rules`` was emitted after output position ``start``."""
        return any(type(r) is FindingRecord and r.rule in rules for r in self._out[start:])

    # ------------------------------------------------------------------ dispatch

    def _frame(self, shape: str, frame: FrameRecord, *details: Any) -> bool:
        """Run the FRAME rules for ``shape`` until one claims the frame; whether one did."""
        found = _FRAME_HANDLERS.get(shape)
        if found is None:
            found = registry.handlers(FRAME, shape)
        return any(handler(self, frame, *details) for handler in found)

    def _pairing(self, outcome: str, msg: Msg, *details: Any) -> None:
        """Run the PAIRING rules for what correlation found (``registry.OUTCOMES``)."""
        found = _PAIRING_HANDLERS.get(outcome)
        if found is None:
            found = registry.handlers(PAIRING, outcome)
        for handler in found:
            handler(self, msg, *details)

    def _note_bad(self, direction: str, seq: int, kind: str) -> None:
        """Remember frame ``seq`` as bad input waiting for its error reply (rules/replies.py)."""
        self.state.bad_frames[direction].append((seq, kind))

    def _link_bad_input(self, msg: Msg) -> tuple[int, str] | None:
        """The oldest bad frame of the other side that the -32700/-32600 ``msg`` answers."""
        bad = self.state.bad_frames[OPPOSITE[msg.direction]]
        if not bad:
            return None
        culprit, kind = bad.popleft()
        msg.answers = culprit
        msg.note = "parse-error-reply" if msg.error_code == -32700 else "invalid-request-reply"
        return culprit, kind

    def _note_era(self, msg: Msg) -> None:
        """A client request whose _meta names a protocol version opens the stateless era.

        Decided before the request is keyed (the era decides how ids pair); only
        the first such request sets it.
        """
        state = self.state
        if state.era is not None or msg.direction != C2S:
            return
        params = msg.params
        meta = None if params is None else params.get("_meta")
        if isinstance(meta, dict) and META_VERSION in meta:
            state.era = STATELESS
            requested = meta[META_VERSION]
            state.version = requested if is_known_version(requested) else V5

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
            self._note_bad(frame.direction, frame.seq, BAD_INVALID)
            self._frame("not-object", frame, value)

    def _unparseable(self, frame: FrameRecord, offset: int) -> None:
        raw = frame.raw
        if frame.transport == "stdio" and not raw.strip():
            # A blank line between messages: not a message, nor bad input to answer.
            self._frame("blank", frame, offset)
            return
        self.emit(MessageRecord(frame.seq, self.key, frame.direction, UNPARSEABLE, size=len(raw)))
        bad = BAD_BATCH_PARSE if raw.lstrip()[:1] == b"[" else BAD_PARSE
        self._note_bad(frame.direction, frame.seq, bad)
        self._frame("unparseable", frame, offset)

    # ------------------------------------------------------------------ classification

    def _batch(self, items: list[Any], frame: FrameRecord) -> None:
        direction = frame.direction
        self.emit(MessageRecord(frame.seq, self.key, direction, BATCH, size=len(frame.raw)))
        reported = self.emitted
        self._frame("batch", frame, items)
        if not items:
            # `[]` may be a reply: to an empty batch (the bad input, answered with
            # an array), or to a batch of only notifications (which gets none).
            other = OPPOSITE[direction]
            bad = self.state.bad_frames[other]
            if bad and bad[0][1] == BAD_EMPTY_BATCH:
                culprit, _ = bad.popleft()
                self._frame("empty-batch-reply", frame, culprit)
                return
            answered = self.state.notification_batch[other]
            if answered is not None:
                self.state.notification_batch[other] = None
                self._frame("notification-batch-reply", frame, answered)
                return
            self._note_bad(direction, frame.seq, BAD_EMPTY_BATCH)
            self._frame("empty-batch", frame, reported)
            return
        msgs = [
            self._message(item, frame, i)
            if isinstance(item, dict)
            else self._not_object(item, frame, i)
            for i, item in enumerate(items)
        ]
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
        self._frame("batch-done", frame, msgs)

    def _not_object(self, obj: Any, frame: FrameRecord, index: int) -> Msg:
        """A batch element that is not an object: an invalid message."""
        direction = frame.direction
        seq = frame.seq
        record = MessageRecord(
            seq, self.key, direction, INVALID, index, obj=obj, source=frame, sent_at=frame.t
        )
        self._out.append(record)
        self._note_bad(direction, seq, BAD_INVALID)
        self._frame("not-object-element", frame, obj, index)
        return record

    def _message(self, obj: dict[str, Any], frame: FrameRecord, index: int | None) -> Msg:
        """Classify, record, correlate and check one JSON-RPC object."""
        direction = frame.direction
        seq = frame.seq
        # Classify first and build the record (which is also the rules' working
        # view) once, whole: this runs for every message.
        kind = INVALID
        ident: Any = None
        has_id = False
        method: str | None = None
        params: dict[str, Any] | None = None
        target: str | None = None
        error_code: Any = None
        plain = False
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
            elif method is not None:
                # The plain envelope (see below): a request of exactly jsonrpc, id,
                # method and maybe params, a notification of jsonrpc, method and
                # maybe params; params an object without _meta (or, in a request,
                # a _meta of one well-typed progressToken); the id a string or
                # an integer; a method name not reserved ("rpc.", JSON-RPC §4) and
                # no request named like a notification (MSG-NOTIF-NO-ID).
                size = len(obj)
                if kind == REQUEST:
                    plain = (
                        (
                            (
                                size == 4
                                and params is not None
                                and ("_meta" not in params or _progress_only(params["_meta"]))
                            )
                            or (size == 3 and "params" not in obj)
                        )
                        and (type(ident) is int or type(ident) is str)
                        and not method.startswith(FLAGGED_REQUEST_PREFIXES)
                    )
                else:
                    plain = (
                        size == 2 or (size == 3 and params is not None and "_meta" not in params)
                    ) and not method.startswith("rpc.")
        elif "result" in obj:
            kind = RESPONSE
            if "id" in obj:
                ident = obj["id"]
                has_id = True
                # The plain envelope: exactly jsonrpc, id and an object result.
                plain = len(obj) == 3 and type(obj["result"]) is dict
        elif "error" in obj:
            kind = ERROR
            if "id" in obj:
                ident = obj["id"]
                has_id = True
            error = obj["error"]
            if isinstance(error, dict):
                error_code = error.get("code")
        # The record, built slot by slot (``_new_record``: every message pays this).
        msg = _new_record(MessageRecord)
        msg.frame = seq
        msg.session = self.key
        msg.direction = direction
        msg.kind = kind
        msg.index = index
        msg.id = ident
        msg.has_id = has_id
        msg.method = method
        msg.answers = None
        msg.request_index = None
        msg.latency_ms = None
        msg.note = None
        msg.size = None
        msg.error_code = error_code
        msg.target = target
        msg.obj = obj
        msg.params = params
        msg.source = frame
        msg.sent_at = frame.t
        msg.request = None
        msg.key = None
        self._out.append(msg)

        # The rules, by what the message is (registry.py). Each lookup below is
        # one dict access; the tables are built once per method. The structural
        # (MESSAGE) rules judge an envelope that is not the plain one of its kind:
        # in a plain one, with "jsonrpc": "2.0", no member is missing, extra or
        # mistyped, so none of them has anything to say.
        if not plain or obj.get("jsonrpc") != "2.0":
            for handler in _MESSAGE_HANDLERS.get("") or registry.handlers(registry.MESSAGE, ""):
                handler(self, msg)
        if kind == REQUEST:
            if method is None:
                self._invalid(msg)
                return msg
            state = self.state
            era = state.era
            if era is None and direction == C2S:
                # The era decides how the id is keyed (``_scope``): known before it is.
                self._note_era(msg)
                era = state.era
            # Registration: keyed by its id (``pairing_key``, inlined: only the
            # stateless era scopes ids), remembered as used, in flight from now.
            key = ident if type(ident) is int else id_key(ident)
            if era == STATELESS:
                key = self.scoped(key, msg)
            msg.key = key
            pending = state.pending[direction]
            # IdHistory.check_and_add, its fast path inlined: an integer id beyond
            # every one used (real clients count up) is new, and extends the last
            # interval or opens one.
            used = state.used[direction]
            ends = used._ends
            if type(key) is int and ends and key > ends[-1]:
                if ends[-1] + 1 == key:
                    ends[-1] = key
                else:
                    used._starts.append(key)
                    ends.append(key)
                seen = False
            else:
                seen = used.check_and_add(key)
            # reuse.fingerprint, inlined: this runs for every request.
            this_print: bytes | int | None = None
            if index is None:
                this_print = frame.raw
                if len(this_print) > INLINE_PRINT:
                    this_print = hash(this_print)
            if seen or key in pending:
                self._reused(msg, key, seen, this_print)
            # Pending(...), built slot by slot (``_new_record``).
            request = _new_record(Pending)
            request.seq = seq
            request.index = index
            request.key = key
            request.id = ident
            request.method = method
            request.t = frame.t
            request.params = params
            request.progress_token = None
            request.cancelled = False
            request.batch_seq = None if index is None else seq
            request.missing_reported = False
            request.fingerprint = this_print
            pending[key] = request
            handlers = _REQUEST_HANDLERS.get(method)
            if handlers is None:
                handlers = registry.handlers(registry.REQUEST, method)
            for handler in handlers:
                handler(self, msg)
        elif kind == NOTIFICATION:
            if method is None:
                self._invalid(msg)
                return msg
            handlers = _NOTIFICATION_HANDLERS.get(method)
            if handlers is None:
                handlers = registry.handlers(registry.NOTIFICATION, method)
            for handler in handlers:
                handler(self, msg)
        elif kind == INVALID:
            self._invalid(msg)
        else:
            # The usual reply answers the one request in flight under its id:
            # paired here (``_match_response`` and ``_pair``, inlined). Everything
            # else (no id, a shadowed or cancelled request, a -32700, the
            # stateless era's scoped ids, no request at all) takes the full path.
            state = self.state
            request = None
            if ident is not None and state.era != STATELESS:
                request_direction = OPPOSITE[direction]
                pending = state.pending[request_direction]
                key = ident if type(ident) is int else id_key(ident)
                request = pending.get(key)
                if (
                    request is not None
                    and not request.cancelled
                    and error_code != -32700
                    and not state.shadowed[request_direction]
                ):
                    del pending[key]
                    msg.answers = request.seq
                    msg.request_index = request.index
                    msg.latency_ms = round_ms((frame.t - request.t) * 1000.0)
                    msg.request = request
                    # BoundedMap.put, inlined: a new key goes to the end by itself; only
                    # an id answered before (and still remembered) has to move there.
                    answered = state.answered[request_direction]
                    key = request.key
                    if key in answered:
                        del answered[key]
                    # Answered(...), built slot by slot (``_new_record``).
                    entry = _new_record(Answered)
                    entry.seq = request.seq
                    entry.index = request.index
                    entry.method = request.method
                    entry.response_seq = seq
                    entry.cancelled = False
                    entry.fingerprint = request.fingerprint
                    answered[key] = entry
                    if len(answered) > answered.limit:
                        answered.popitem(False)
                else:
                    request = None
            if request is None:
                self._match_response(msg)
                request = msg.request
            answered_method = "" if request is None else request.method
            handlers = _RESPONSE_HANDLERS.get(answered_method)
            if handlers is None:
                handlers = registry.handlers(registry.RESPONSE, answered_method)
            for handler in handlers:
                handler(self, msg)
            if request is not None:
                result = obj.get("result")
                if kind == RESPONSE and type(result) is dict and "task" not in result:
                    # The method's own result (``_reply``, inlined for the usual one).
                    handlers = _REPLY_HANDLERS.get(answered_method)
                    if handlers is None:
                        handlers = registry.handlers(registry.REPLY, answered_method)
                    for handler in handlers:
                        handler(self, msg)
                    handlers = _RESULT_HANDLERS.get(answered_method)
                    if handlers is None:
                        handlers = registry.handlers(registry.RESULT, answered_method)
                    for handler in handlers:
                        handler(self, msg, result)
                else:
                    self._reply(msg, request, obj)
        return msg

    def _reply(self, msg: Msg, request: Pending, obj: dict[str, Any]) -> None:
        """The rules for a paired reply, by the method of the request it answers."""
        method = request.method
        result = obj.get("result")
        if (
            msg.kind == RESPONSE
            and type(result) is dict
            and "task" in result
            and request.params is not None
            and type(request.params.get("task")) is dict
            and method not in _TASK_RESULT_FREE
            and self.state.era != STATELESS
        ):
            # A CreateTaskResult answers an accepted task-augmented request instead
            # of the method's result, and keeps its progress token alive (tasks.mdx).
            for handler in registry.handlers(registry.TASK_CREATED, method):
                handler(self, msg, result)
            return
        handlers = _REPLY_HANDLERS.get(method)
        if handlers is None:
            handlers = registry.handlers(registry.REPLY, method)
        for handler in handlers:
            handler(self, msg)
        if msg.kind == ERROR:
            for handler in registry.handlers(registry.ERROR, method):
                handler(self, msg)
            return
        handlers = _RESULT_HANDLERS.get(method)
        if handlers is None:
            handlers = registry.handlers(registry.RESULT, method)
        if handlers and type(result) is dict:
            for handler in handlers:
                handler(self, msg, result)

    def _invalid(self, msg: Msg) -> None:
        """A message no rule below the JSON-RPC layer can use."""
        msg.kind = INVALID
        self._note_bad(msg.direction, msg.frame, BAD_INVALID)

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
        number = frame.meta.get("exchange")
        # A trace's meta is hostile: only an integer names an exchange.
        exchange = http_state.exchanges.get(number) if type(number) is int else None
        if (
            exchange is None
            or exchange.transport != http.STREAMABLE
            or "mcp-session-id" in exchange.headers
        ):
            return None
        return exchange.client

    def _reused(self, msg: Msg, key: Any, seen: bool, this_print: bytes | int | None) -> None:
        """A request whose id was used before (``_message`` registers it after this)."""
        direction = msg.direction
        state = self.state
        pending = state.pending[direction]
        if key in pending:
            self._pairing("reuse-in-flight", msg, pending[key], this_print)
        elif seen:
            self._pairing("reuse-after-completion", msg, key, this_print)
        if key in pending:
            # Both requests are in flight under one id: keep both, so each reply
            # pairs with one of them (``_take_pending``) instead of the second
            # reply counting as a duplicate of the first.
            by_id = state.shadowed[direction]
            if key in by_id or len(by_id) < MAX_SHADOWED_IDS:
                shadowed = by_id.setdefault(key, [])
                if len(shadowed) < MAX_SHADOWED:
                    shadowed.append(pending[key])

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
            # JSON-RPC §5: "If there was an error in detecting the id in the Request
            # object (e.g. Parse error/Invalid Request), it MUST be Null": such a
            # reply answers the oldest bad frame the other side sent.
            code = msg.error_code
            if msg.kind == ERROR and type(code) is int and code in _BAD_INPUT_CODES:
                linked = self._link_bad_input(msg)
                if linked is not None:
                    self._pairing("bad-input-reply", msg, *linked)
                return
            self._pairing("null-id", msg)
            return
        ident = msg.id
        scope = self._scope(msg) if state.era == STATELESS else None
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
                self._pairing("parse-error-for-request", msg, request)
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
                self._pairing("id-type-mismatch", msg, request)
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
                    self._pairing("late-initialize", msg)
                return
            msg.note = "duplicate-response"
            self._pairing("duplicate-response", msg, answered)
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
            self._pairing("duplicate-response", msg, None)
            return
        code = msg.error_code
        if msg.kind == ERROR and type(code) is int and code in _BAD_INPUT_CODES:
            # A -32700/-32600 with an id nobody sent, while a bad frame waits for
            # its reply: that reply, with an id it could not have read.
            linked = self._link_bad_input(msg)
            if linked is not None:
                self._pairing("orphan-bad-input-reply", msg, *linked)
                return
        if self._lost_precision(msg, pending):
            return
        msg.note = "orphan"
        self._pairing("orphan", msg)

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
                self._pairing("id-precision", msg, request)
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
        if missing:
            # Their requests are reported here, not again as never answered.
            pending = state.pending[request_direction]
            for k in missing:
                if k in pending:
                    pending[k].missing_reported = True
        self._frame("batch-reply", frame, batch, msgs, missing, extra_null, missing_invalid)


#: The registry's per-key handler tables, read directly on the hot path.
_MESSAGE_HANDLERS = registry.TABLES[registry.MESSAGE]
_REQUEST_HANDLERS = registry.TABLES[registry.REQUEST]
_NOTIFICATION_HANDLERS = registry.TABLES[registry.NOTIFICATION]
_RESPONSE_HANDLERS = registry.TABLES[registry.RESPONSE]
_REPLY_HANDLERS = registry.TABLES[registry.REPLY]
_RESULT_HANDLERS = registry.TABLES[registry.RESULT]
_FRAME_HANDLERS = registry.TABLES[FRAME]
_PAIRING_HANDLERS = registry.TABLES[PAIRING]
_EVENT_HANDLERS = registry.TABLES[registry.EVENT]
#: A record without its ``__init__``, for ``_message`` to fill slot by slot: a
#: dataclass's ``__init__`` is reached through ``type.__call__`` and
#: ``slot_tp_init``, a call CPython 3.11 does not inline, which costs more than
#: the slot stores themselves (about 40% of a MessageRecord's construction), and
#: every message builds one to three records. ``_message`` sets every field of
#: the dataclass (tests/core/test_fast_paths.py holds it to that).
_new_record = object.__new__
#: Error codes whose reply carries a null id when the request could not be read.
_BAD_INPUT_CODES = frozenset({-32700, -32600})
#: tasks/* requests answer with their own results, never a CreateTaskResult.
_TASK_RESULT_FREE = frozenset({"tasks/get", "tasks/list", "tasks/cancel"})


class ScopedKey(NamedTuple):
    """A request id's key within one client connection (``Session._scope``)."""

    scope: str
    key: Any


class _FrameView(NamedTuple):
    """What ``http.request_of_exchange`` reads of a message: its kind and its frame."""

    kind: str
    frame: FrameRecord | None


def _progress_only(meta: Any) -> bool:
    """Whether ``meta`` is ``{"progressToken": <string or integer>}``: a _meta the
    structural rules pass (MSG-META-PROGRESS, MSG-META-KEYS), the usual one."""
    return type(meta) is dict and len(meta) == 1 and type(meta.get("progressToken")) in _TOKEN


#: The progressToken types of a plain _meta (``type`` is exact: a bool is no int).
_TOKEN = (int, str)


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
