"""One response under ``mcpsniff http --fault``: SSE event by event, or a JSON body whole.

``FaultedClientSide`` (``mcpsniff.intercept.http_faults``) gives each response it
may have to judge a ``ResponseFaults``, which reads the response's pieces as
they come, has the fault engine judge each whole SSE event (or the JSON body),
and delivers, holds, drops, duplicates, damages or cuts accordingly, through
the connection it was given. A response no fault can match passes by a byte
pre-test, in the upstream's own framing.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from mcpsniff.core.model import S2C
from mcpsniff.faults.damage import SPLIT_PAUSE, SPLIT_PIECES, corrupt
from mcpsniff.faults.engine import FaultEngine, Injection, original_bytes
from mcpsniff.faults.http import ExchangeFaults, event_data, split_events, with_data
from mcpsniff.faults.spec import CORRUPT, DELAY, DISCONNECT, DROP, DUPLICATE
from mcpsniff.http1.events import Body, End, RequestHead, ResponseHead
from mcpsniff.http1.fields import field_tokens
from mcpsniff.intercept.http_messages import LAST_CHUNK, chunk, is_event_stream
from mcpsniff.intercept.relay_needs import Relay
from mcpsniff.intercept.relayed_exchange import STREAM_AT, RelayedExchange

#: Most bytes of a body (or of one SSE event) judged; a bigger one passes as it is.
JUDGE_LIMIT = STREAM_AT
#: How a piece of an event stream ends when it ends with whole events.
WHOLE_EVENTS = (b"\n\n", b"\r\n\r\n", b"\r\r")


class FaultedConnection(Protocol):
    """What a ``ResponseFaults`` needs of its client connection."""

    faults: ExchangeFaults
    relay: Relay

    def send(self, data: bytes) -> None:
        """Write ``data`` to the client."""

    def cut(self) -> None:
        """Close the client connection now."""

    def ended_late(self, exchange: RelayedExchange, outcome: str) -> None:
        """Tell that ``exchange`` ended after its response was held."""


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
        connection: FaultedConnection,
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
            and payload.endswith(WHOLE_EVENTS)
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
            and payload.endswith(WHOLE_EVENTS)
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
            self._then(lambda: tell({}, delivered=True, held_ms=since_ms(arrived)))
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
            call_after(pause, self._resume)

    def _resume(self) -> None:
        self.busy = False
        steps = self.steps
        while steps and not self.busy:
            pause = steps.popleft()()
            if pause:
                self.busy = True
                call_after(pause, self._resume)
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


def judged_response(request: RequestHead, head: ResponseHead, sse: bool) -> bool:
    """Whether a response (``sse``: an event stream) is one ``--fault`` judges.

    A POST's over HTTP/1.1 (or a session's GET stream), with status 200, not
    compressed, framed by a length, chunked or the close (an event stream not by a
    length: its events may change); everything else passes unjudged.
    """
    names = head.names
    codings = (
        field_tokens(head.headers, "transfer-encoding") if "transfer-encoding" in names else []
    )
    return (
        request.version == "HTTP/1.1"
        and "content-encoding" not in names
        and (request.method == "POST" or (sse and "mcp-session-id" in request.names))
        and not (sse and "content-length" in names)
        and (not codings or codings == ["chunked"])
        and head.status == 200
    )


def unfinished_json(events: list[Any], exchanges: Sequence[RelayedExchange]) -> int:
    """Where the JSON response ``events`` end in the middle of starts, if it may wait
    for its whole body before anything of it goes on (-1: none).

    ``exchanges`` are those whose responses ``events`` carry, in order.
    A JSON body is judged whole, so nothing of it could go on before its end if a
    fault applies to it; waiting for that end (bodies up to ``JUDGE_LIMIT``) lets the
    byte search clear a body no fault can match, which then passes as it came, its
    head and framing too, instead of being taken over at its head and re-chunked.
    """
    index = 0
    start = -1
    size = 0
    for place, event in enumerate(events):
        kind = type(event)
        if kind is Body:
            size += len(event.payload)
        elif kind is End:
            index += 1
            start = -1
        elif kind is ResponseHead and event.status >= 200:
            start, at, size = place, index, 0
    if start < 0 or at >= len(exchanges) or size > JUDGE_LIMIT:
        return -1
    head = events[start]
    if is_event_stream(head) or not json_may_wait(exchanges[at], head):
        return -1
    return start


def json_may_wait(exchange: RelayedExchange, head: ResponseHead) -> bool:
    """Whether the JSON response ``head`` starts may wait for its whole body
    (``unfinished_json``): one ``--fault`` judges, whose length is not too big to."""
    if exchange.swallow or not judged_response(exchange.head, head, False):
        return False
    names = head.names
    if "content-length" in names:
        length = head.headers[names.index("content-length")][1]
        return length.isdigit() and int(length) <= JUDGE_LIMIT
    return True


def may_match(engine: FaultEngine, events: list[Any], place: int) -> bool:
    """Whether a fault may apply to the response whose head is ``events[place]``.

    Not when its whole body is in ``events`` and holds none of the bytes every
    message a fault can match holds (``FaultEngine.could_match``): such a
    response passes as the relay's own would pass it, framing and all.
    """
    pieces = []
    for at in range(place + 1, len(events)):
        event = events[at]
        kind = type(event)
        if kind is Body:
            pieces.append(event.payload)
        elif kind is End:
            body = pieces[0] if len(pieces) == 1 else b"".join(pieces)
            return bool(body) and engine.could_match(body, S2C)
        else:
            return True
    return True


def call_after(seconds: float, callback: Callable[..., object], *args: object) -> None:
    """Run ``callback(*args)`` once at least ``seconds`` have passed by ``time.monotonic``.

    uvloop (the HTTP relay's loop when installed) keeps its time in whole
    milliseconds, cached at the start of a turn of the loop: a timer set late
    in a long turn runs up to that turn's length early. A ``delay 300ms``
    fault holds for at least 300 ms, so an early timer is set again for the rest.
    """
    deadline = time.monotonic() + seconds
    loop = asyncio.get_running_loop()

    def due() -> None:
        left = deadline - time.monotonic()
        if left > 0:
            loop.call_later(left, due)
        else:
            callback(*args)

    loop.call_later(seconds, due)


def since_ms(start: float) -> float:
    """Milliseconds since ``start`` (``time.monotonic``), to the millisecond (asyncio may
    run a timer a fraction of a millisecond before its time)."""
    return float(round((time.monotonic() - start) * 1000.0))
