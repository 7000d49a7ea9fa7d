"""``mcpsniff http --fault``: the HTTP relay's connections when faults are asked for.

Without ``--fault`` the relay's own ``ClientSide`` runs and nothing here is
imported: forwarding stays as it was. With one, each client connection is a
``FaultedClientSide``, which holds every request until its end (to keep
their order) and has the fault engine (``mcpsniff.faults.engine``) judge each
POST body, the one JSON-RPC message it carries; then the request is
forwarded, held, dropped, sent twice, damaged, cut off, or answered in the
server's place (``error``, ``tool-error``, ``status``). On the way back,
each SSE event of an MCP response (or a JSON body, whole) is judged the same
way by ``ResponseFaults`` and delivered, held, dropped, delivered twice,
damaged, or followed by a cut connection. The response of a judged
exchange is sent chunked (HTTP/1.1, RFC 9112 §7.1), since a fault may change
its length.

Every fault is told to the analysis as an ``ExchangeFault`` before the
frames it marks (``mcpsniff.faults.engine.fault_record``), so that the
trace says what mcpsniff did and ``check`` never blames a peer for it.
What the trace gets is what the receiving peer got; a message never
delivered is recorded all the same (marked, ``delivered: false``).

Bodies larger than ``JUDGE_LIMIT``, compressed ones, HTTP/1.0 clients and
session-less GET streams (a legacy endpoint may be rewritten in them) pass
unjudged.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from mcpsniff.core.model import C2S, REQUEST, S2C
from mcpsniff.faults.damage import corrupt
from mcpsniff.faults.engine import Injection, original_bytes
from mcpsniff.faults.http import (
    ExchangeFaults,
    event_data,
    response_bytes,
    server_answer,
    split_events,
    with_data,
)
from mcpsniff.faults.spec import (
    ANSWERS,
    CORRUPT,
    DELAY,
    DISCONNECT,
    DROP,
    DUPLICATE,
    Fault,
)
from mcpsniff.http1.events import Body, End, RequestHead, ResponseHead
from mcpsniff.http1.fields import field_tokens
from mcpsniff.intercept.http_messages import LAST_CHUNK, chunk, is_event_stream
from mcpsniff.intercept.http_wire import ClientSide, Relay
from mcpsniff.intercept.relayed_exchange import STREAM_AT, RelayedExchange

#: Most bytes of a body (or of one SSE event) judged; a bigger one passes as it is.
JUDGE_LIMIT = STREAM_AT
#: How a piece of an event stream ends when it ends with whole events.
_WHOLE = (b"\n\n", b"\r\n\r\n", b"\r\r")
#: Seconds a dropped request's connection stays open, unanswered, before it is cut:
#: the client is to time out and cancel first (basic/lifecycle.mdx § Timeouts).
DROP_HOLD = 60.0
#: Pause between the pieces of ``corrupt split``, seconds.
SPLIT_PAUSE = 0.02
#: How many pieces ``corrupt split`` writes a body in.
SPLIT_PIECES = 3


def with_length(head: bytes, length: int) -> bytes:
    """A forwarded request head framing a body of ``length`` bytes with Content-Length."""
    lines = head[:-4].split(b"\r\n")
    kept = [
        line
        for line in lines[1:]
        if line.split(b":", 1)[0].strip().lower() not in (b"content-length", b"transfer-encoding")
    ]
    return b"\r\n".join([lines[0], *kept, b"Content-Length: %d" % length]) + b"\r\n\r\n"


def chunked_head(head: ResponseHead) -> ResponseHead:
    """``head`` with chunked framing instead of a Content-Length (the body may change)."""
    pairs = [
        (name, line, pair)
        for name, line, pair in zip(head.names, head.lines, head.headers, strict=True)
        if name != "content-length"
    ]
    lines = [line for _, line, _ in pairs] + [b"Transfer-Encoding: chunked"]
    start = head.raw.split(b"\r\n", 1)[0]
    return replace(
        head,
        headers=[pair for _, _, pair in pairs] + [("Transfer-Encoding", "chunked")],
        names=[name for name, _, _ in pairs] + ["transfer-encoding"],
        lines=lines,
        raw=b"\r\n".join([start, *lines]) + b"\r\n\r\n",
    )


def silent_head(head: ResponseHead) -> ResponseHead:
    """``head`` forwarded as nothing: the response of a duplicate nobody asked for."""
    return replace(head, lines=[], names=[], raw=b"")


class FaultedClientSide(ClientSide):
    """A client connection whose requests and responses go through the fault engine."""

    def __init__(self, relay: Relay, faults: ExchangeFaults) -> None:
        super().__init__(relay)
        self.faults = faults
        self._drop_timer: asyncio.TimerHandle | None = None
        #: Requests too big to judge, passed on as they come.
        self._unjudged: set[RelayedExchange] = set()

    # ------------------------------------------------------------------ requests

    def _request_head(self, head: RequestHead, out: list[bytes]) -> list[bytes]:
        # Every request is held until its end, so that a held one never lets a
        # later one pass it on the upstream connection (RFC 9112 §9.3.2).
        wire: list[bytes] = []
        super()._request_head(head, wire)
        assert self.incoming is not None
        self.incoming.wire = wire
        return wire

    def _stream_body(self, exchange: RelayedExchange) -> None:
        # Too big to judge: what is held goes on now, the rest as it comes.
        wire = exchange.wire
        if wire is not None:
            self._send_upstream(list(wire))
            wire.clear()
            self._unjudged.add(exchange)
        super()._stream_body(exchange)

    def _begin(self, exchange: RelayedExchange) -> None:
        wire = exchange.wire
        if wire is None:
            super()._begin(exchange)
            return
        exchange.wire = None
        if not exchange.request_done:
            # Cut off before its end: nothing of it goes on.
            super()._begin(exchange)
            return
        head = exchange.head
        injection = None
        judged = exchange not in self._unjudged
        self._unjudged.discard(exchange)
        if judged and head.method == "POST" and head.version == "HTTP/1.1":
            body = b"".join(exchange.pieces)
            if body and "content-encoding" not in head.names:
                injection = self.faults.judge(C2S, body)
        if injection is None:
            self._send_upstream(wire)
            super()._begin(exchange)
            return
        try:
            self._request_fault(exchange, wire, injection)
        except (OSError, ValueError, TypeError) as exc:
            # A fault must never cost a message or the relay: forwarded as it came.
            if exchange.remote is not None:
                self.faults.tell(
                    self.relay.observer.sink,
                    exchange.remote.number,
                    injection,
                    {},
                    delivered=True,
                    failed=str(exc)[:200],
                )
        self._answer_front()

    def _request_fault(
        self, exchange: RelayedExchange, wire: list[bytes], injection: Injection
    ) -> None:
        faults, observer = self.faults, self.relay.observer
        action = injection.fault.action
        kind = injection.message.kind
        body = b"".join(exchange.pieces)
        if action == CORRUPT:
            damaged = b"".join(corrupt(injection.fault.corruption, body, b""))
            exchange.pieces = [damaged]
            exchange.body_bytes = len(damaged)
        super()._begin(exchange)
        remote = exchange.remote
        assert remote is not None
        number = remote.number
        session = "mcp-session-id" in exchange.head.names

        def tell(marks: dict[str, int | str], *, delivered: bool, **extra: Any) -> None:
            faults.tell(
                observer.sink,
                number,
                injection,
                marks,
                delivered=delivered,
                session_id=session,
                **extra,
            )

        if action == DELAY:
            self.pause_reading("fault-delay")
            loop = asyncio.get_running_loop()
            loop.call_later(
                injection.delay_ms / 1000.0,
                self._delayed,
                wire,
                exchange,
                injection,
                time.monotonic(),
            )
            return
        if action == DROP:
            tell({C2S: 1}, delivered=False)
            if kind == REQUEST:
                # Lost on the way: no answer comes; nothing after it is read.
                self.last_request = True
                exchange.fault_answer = b""
            else:
                # A notification or response: the server would have answered 202.
                exchange.fault_answer = response_bytes(202, b"", b"text/plain")[0]
            return
        if action == DUPLICATE:
            tell({C2S: 2, S2C: 2}, delivered=True)
            self._send_upstream(wire)
            self._send_upstream(wire)
            shadow = RelayedExchange(exchange.head, time.time(), request_done=True, swallow=True)
            self.exchanges.insert(self.exchanges.index(exchange) + 1, shadow)
            if self.upstream is not None:
                self.upstream.parser.expect(exchange.head.method)
            shadow.remote = observer.begin(
                exchange.head.method,
                exchange.head.target,
                exchange.head.headers,
                body,
                client=self.peer,
            )
            return
        if action in ANSWERS:
            reply = server_answer(injection)
            content_type = reply.content_type.encode()
            exchange.fault_answer = response_bytes(reply.status, reply.body, content_type)[0]
            tell(reply.marks, delivered=False)
            return
        if action == CORRUPT:
            extra = original_bytes(body, verbatim=faults.verbatim)
            tell({C2S: 1}, delivered=True, **extra)
            head = with_length(wire[0], len(damaged))
            if injection.fault.corruption == "split":
                self._send_in_pieces(head, damaged)
            else:
                self._send_upstream([head, damaged])
            return
        if action == DISCONNECT:
            tell({C2S: 1}, delivered=False)
            data = b"".join(wire)
            self._send_upstream([data[: len(wire[0]) + len(body) // 2]])
            self._finish(exchange, "fault: disconnect", whole=False)
            self.exchanges.remove(exchange)
            self.last_request = True
            if self.upstream is not None:
                self.upstream.close()
                self.upstream = None
            if self.transport is not None:
                self.transport.abort()
            return
        # kill (refused on HTTP), reorder: nothing an HTTP exchange can carry out.
        self._send_upstream(wire)

    def _delayed(
        self, wire: list[bytes], exchange: RelayedExchange, injection: Injection, arrived: float
    ) -> None:
        remote = exchange.remote
        if self.closed:
            if remote is not None:
                self.faults.tell(
                    self.relay.observer.sink,
                    remote.number,
                    injection,
                    {C2S: 1},
                    delivered=False,
                    cut_short=True,
                )
            return
        if remote is not None:
            self.faults.tell(
                self.relay.observer.sink,
                remote.number,
                injection,
                {},
                delivered=True,
                held_ms=_since(arrived),
            )
        self._send_upstream(wire)
        self.resume_reading("fault-delay")

    def _send_in_pieces(self, head: bytes, body: bytes) -> None:
        size = max(1, -(-len(body) // SPLIT_PIECES))
        pieces = [head + body[:size]] + [body[i : i + size] for i in range(size, len(body), size)]
        loop = asyncio.get_running_loop()
        for number, piece in enumerate(pieces):
            loop.call_later(number * SPLIT_PAUSE, self._send_upstream, [piece])

    def _answer_front(self) -> None:
        """Send mcpsniff's answers whose turn it is (earlier responses are out)."""
        while self.exchanges and self.exchanges[0].fault_answer is not None and not self.closed:
            exchange = self.exchanges[0]
            if not exchange.fault_answer:
                # A dropped request: nothing comes; the connection is cut after a while.
                if self._drop_timer is None and self.transport is not None:
                    loop = asyncio.get_running_loop()
                    self._drop_timer = loop.call_later(DROP_HOLD, self._cut_dropped)
                return
            self.exchanges.popleft()
            data = exchange.fault_answer
            if self.transport is not None:
                self.transport.write(data)
            remote = exchange.remote
            if remote is not None:
                head, _, body = data.partition(b"\r\n\r\n")
                status = int(head.split(b" ", 2)[1])
                fields = [
                    tuple(part.strip() for part in line.decode().split(":", 1))
                    for line in head.split(b"\r\n")[1:]
                ]
                remote.response(status, fields)  # type: ignore[arg-type]
                if body:
                    remote.body_chunk(body)
            self._finish(exchange, "complete", whole=True)
            super()._after_response(exchange)

    def _cut_dropped(self) -> None:
        if self.exchanges:
            self._finish(self.exchanges[0], "fault: dropped, connection closed", whole=False)
            self.exchanges.popleft()
        if self.transport is not None and not self.closed:
            self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._drop_timer is not None:
            self._drop_timer.cancel()
        super().connection_lost(exc)

    # ------------------------------------------------------------------ responses

    def response_events(self, upstream: Any, events: list[Any], eof: bool) -> None:
        index = 0
        last = len(events) - 1
        for place, event in enumerate(events):
            kind = type(event)
            if kind is Body:
                if index < len(self.exchanges):
                    exchange = self.exchanges[index]
                    faulted = exchange.faulted
                    if faulted is not None and faulted.sse:
                        # Whole chunks when the body's end follows, or when the
                        # parser stopped between two. ``rechunk`` holds for all of
                        # the exchange's pieces here: the parser gives one per feed.
                        framed = (
                            upstream.parser.between_chunks
                            if place == last
                            else (type(events[place + 1]) is End)
                        )
                        exchange.rechunk = not faulted.passes(event.payload, framed)
            elif kind is ResponseHead and not event.interim and index < len(self.exchanges):
                events[place] = self._divert(self.exchanges[index], event)
            elif kind is End:
                index += 1
        super().response_events(upstream, events, eof)

    def _divert(self, exchange: RelayedExchange, head: ResponseHead) -> ResponseHead:
        """Take over the response of a judged exchange (or of a duplicate): its head as sent."""
        request = exchange.head
        sse = is_event_stream(head)
        names = head.names
        codings = (
            field_tokens(head.headers, "transfer-encoding") if "transfer-encoding" in names else []
        )
        has_length = "content-length" in names
        if exchange.swallow:
            exchange.rechunk = True
            exchange.faulted = ResponseFaults(self, exchange, sse=sse, chunked=False, silent=True)
            return silent_head(head)
        judged = (
            request.version == "HTTP/1.1"
            and "content-encoding" not in head.names
            and (request.method == "POST" or (sse and "mcp-session-id" in request.names))
            and not (sse and has_length)
            and (not codings or codings == ["chunked"])
            and head.status == 200
        )
        if not judged or not (sse or self.faults.engine.answers_may_match(S2C)):
            # A JSON answer no fault can match keeps its framing, untouched.
            return head
        # Every piece of a JSON body comes to _held_body; an SSE stream's pieces only
        # when they may have to be judged (``response_events``, ``ResponseFaults.passes``).
        exchange.rechunk = not sse
        chunked = bool(codings) or has_length
        exchange.faulted = ResponseFaults(self, exchange, sse=sse, chunked=chunked)
        return chunked_head(head) if has_length else head

    def _held_body(self, exchange: RelayedExchange, payload: bytes) -> None:
        faulted = exchange.faulted
        if faulted is None:
            super()._held_body(exchange, payload)
            return
        faulted.body(payload)

    def _held_end(self, exchange: RelayedExchange) -> None:
        faulted = exchange.faulted
        if faulted is None:
            super()._held_end(exchange)
            return
        faulted.end()

    def _observe(self, exchange: RelayedExchange, kind: str, arg: Any) -> None:
        faulted = exchange.faulted
        if kind == "end" and faulted is not None and faulted.busy:
            faulted.deferred_end = arg  # once what is held went out
            return
        super()._observe(exchange, kind, arg)

    def _after_response(self, exchange: RelayedExchange) -> None:
        faulted = exchange.faulted
        if faulted is not None:
            if faulted.busy:
                return
            # Each refers to the other: parted, both go as soon as they are done
            # with, not at the next garbage collection.
            exchange.faulted = None
        super()._after_response(exchange)
        self._answer_front()

    def ended_late(self, exchange: RelayedExchange, outcome: str) -> None:
        """A response held by a fault went out: it ends now."""
        exchange.faulted = None
        super()._observe(exchange, "end", outcome)
        super()._after_response(exchange)
        self._answer_front()

    def send(self, data: bytes) -> None:
        """Bytes to the client."""
        self._send_client(data)

    def cut(self) -> None:
        """Cut the client's connection (and the upstream's): the fault's disconnect."""
        self.last_request = True
        if self.upstream is not None:
            self.upstream.close(abort=True)
            self.upstream = None
        if self.transport is not None and not self.closed:
            self.transport.abort()


class ResponseFaults:
    """Carries out the faults of one response: SSE event by event, or a JSON body whole."""

    # One per judged response, read for each piece of it: slots make both cheaper.
    __slots__ = (
        "buffer",
        "busy",
        "chunked",
        "connection",
        "deferred_end",
        "ended",
        "exchange",
        "framed",
        "passing",
        "silent",
        "sse",
        "steps",
    )

    def __init__(
        self,
        connection: FaultedClientSide,
        exchange: RelayedExchange,
        *,
        sse: bool,
        chunked: bool,
        silent: bool = False,
    ) -> None:
        self.connection = connection
        self.exchange = exchange
        self.sse = sse
        self.chunked = chunked
        #: A duplicate's response: recorded, never delivered.
        self.silent = silent
        self.buffer = bytearray()
        #: Too big to judge: the rest passes as it comes.
        self.passing = False
        #: Steps waiting for a held (delayed) one.
        self.steps: deque[Callable[[], float | None]] = deque()
        self.busy = False
        #: The exchange's end, told by the connection while something was held.
        self.deferred_end: str | None = None
        self.ended = False
        #: The upstream's bytes of the body so far end with whole chunks (or are not chunked).
        self.framed = True

    def passes(self, payload: bytes, framed: bool) -> bool:
        """Whether a piece of an SSE stream may go on as the upstream framed it, unread.

        Only whole events no fault can match (a byte search says so, as the
        stdio relay's does), with nothing held or buffered before them, and
        only where both the bytes before and the piece's own end with whole
        chunks: a piece judged later is re-chunked, which must start at a
        chunk's start (RFC 9112 §7.1). ``framed``: the piece's raw bytes end
        with whole chunks.
        """
        before = self.framed
        self.framed = framed or not self.chunked
        return (
            before
            and self.framed
            and not self.buffer
            and not self.busy
            and not self.passing
            and not self.silent
            and payload.endswith(_WHOLE)
            and not self.connection.faults.engine.could_match(payload, S2C)
        )

    # ------------------------------------------------------------------ input

    def body(self, payload: bytes) -> None:
        """A piece of the response body (de-chunked)."""
        if self.passing:
            self._then(lambda: self._write(payload))
            return
        if (
            self.sse
            and not self.buffer
            and not self.busy
            and payload.endswith(_WHOLE)
            and not self.connection.faults.engine.could_match(payload, S2C)
        ):
            # Whole events no fault can match (a byte search said so): on as they came.
            self._write(payload)
            return
        self.buffer += payload
        if self.sse:
            self._events()
        if len(self.buffer) > JUDGE_LIMIT:
            rest = bytes(self.buffer)
            self.buffer.clear()
            self.passing = True
            self._then(lambda: self._write(rest))

    def end(self) -> None:
        """The response ended."""
        rest = bytes(self.buffer)
        self.buffer.clear()
        if rest:
            if self.sse or self.passing:
                self._then(lambda: self._write(rest))
            else:
                self._message(rest)
        self._then(self._finish)

    def _events(self) -> None:
        for block in split_events(self.buffer):
            self._message(block)

    # ------------------------------------------------------------------ one message

    def _message(self, block: bytes) -> None:
        if self.silent:
            self._then(lambda: self._write(block))
            return
        data = event_data(block) if self.sse else block
        connection = self.connection
        injection = connection.faults.judge(S2C, data) if data else None
        if injection is None:
            self._then(lambda: self._write(block))
            return
        try:
            self._inject(block, data, injection)
        except (OSError, ValueError, TypeError) as exc:
            # A fault must never cost a message or the relay: delivered as it came.
            remote = self.exchange.remote
            number = remote.number if remote is not None else 0
            sink = connection.relay.observer.sink
            failed = str(exc)[:200]
            self._then(
                lambda: connection.faults.tell(
                    sink, number, injection, {}, delivered=True, failed=failed
                )
            )
            self._then(lambda: self._write(block))

    def _inject(self, block: bytes, data: bytes | None, injection: Injection) -> None:
        connection = self.connection
        action = injection.fault.action
        faults, observer = connection.faults, connection.relay.observer
        remote = self.exchange.remote
        number = remote.number if remote is not None else 0

        def tell(marks: dict[str, int | str], *, delivered: bool, **extra: Any) -> None:
            faults.tell(observer.sink, number, injection, marks, delivered=delivered, **extra)

        if action == DELAY:
            arrived = time.monotonic()
            self._then(lambda: injection.delay_ms / 1000.0)
            # What the hold came to, as this event loop kept it (for the user to check).
            self._then(lambda: tell({}, delivered=True, held_ms=_since(arrived)))
            self._then(lambda: self._write(block))
            return
        if action == DROP:
            self._then(lambda: tell({S2C: 1}, delivered=False))
            self._then(lambda: self._write(block, deliver=False))
            if not self.sse:
                self._then(self._cut)
            return
        if action == DUPLICATE and self.sse:
            self._then(lambda: self._write(block))
            self._then(lambda: tell({S2C: 1}, delivered=True))
            self._then(lambda: self._write(block))
            return
        if action == CORRUPT and data is not None:
            kind = injection.fault.corruption
            damaged = b"".join(corrupt(kind, data, b""))
            extra = original_bytes(data, verbatim=faults.verbatim)
            out = with_data(block, damaged) if self.sse else damaged
            self._then(lambda: tell({S2C: 1}, delivered=True, **extra))
            if kind == "split":
                size = max(1, -(-len(out) // SPLIT_PIECES))
                for at in range(0, len(out), size):
                    piece = out[at : at + size]
                    if at:
                        self._then(lambda: SPLIT_PAUSE)
                    self._then(lambda piece=piece: self._write(piece))  # type: ignore[misc]
            else:
                self._then(lambda: self._write(out))
            return
        if action == DISCONNECT:
            self._then(lambda: tell({S2C: 1}, delivered=False))
            half = block[: len(block) // 2]
            self._then(lambda: self._write(half, observed=block))
            self._then(self._cut)
            return
        # Nothing this response can carry out (a JSON body delivered twice): as it came.
        self._then(lambda: tell({}, delivered=True, failed=f"{action} needs an SSE stream"))
        self._then(lambda: self._write(block))

    # ------------------------------------------------------------------ output, in order

    def _then(self, step: Callable[[], float | None]) -> None:
        """Run ``step`` now, or after what is held; a step returning seconds holds the rest."""
        if self.busy:
            self.steps.append(step)
            return
        pause = step()
        if pause:
            self.busy = True
            asyncio.get_running_loop().call_later(pause, self._resume)

    def _resume(self) -> None:
        self.busy = False
        steps = self.steps
        while steps and not self.busy:
            pause = steps.popleft()()
            if pause:
                self.busy = True
                asyncio.get_running_loop().call_later(pause, self._resume)
        if not self.busy and self.deferred_end is not None:
            outcome, self.deferred_end = self.deferred_end, None
            self.connection.ended_late(self.exchange, outcome)

    def _write(self, data: bytes, *, deliver: bool = True, observed: bytes | None = None) -> None:
        if deliver and not self.silent and data:
            self.connection.send(chunk(data) if self.chunked else data)
        remote = self.exchange.remote
        seen = data if observed is None else observed
        if remote is not None and seen:
            remote.body_chunk(seen)

    def _finish(self) -> None:
        if not self.ended and not self.silent and self.chunked:
            self.connection.send(LAST_CHUNK)
        self.ended = True

    def _cut(self) -> None:
        self.ended = True
        self.connection.cut()


def faulted_factory(
    relay: Relay, faults: list[Fault], *, verbatim: bool
) -> Callable[[], ClientSide]:
    """The protocol factory of a relay that injects ``faults``."""
    shared = ExchangeFaults(faults, verbatim=verbatim)
    return lambda: FaultedClientSide(relay, shared)


def _since(start: float) -> float:
    """Milliseconds since ``start`` (``time.monotonic``), to the millisecond (asyncio may
    run a timer a fraction of a millisecond before its time)."""
    return float(round((time.monotonic() - start) * 1000.0))
