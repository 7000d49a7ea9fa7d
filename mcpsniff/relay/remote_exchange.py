"""HTTP exchanges noted where the bytes move, and recorded where the analysis runs.

Both HTTP shells (``mcpsniff http`` and the mitmproxy addon) forward in one
process and analyze in another. The exchange bookkeeping of
``exchange.HttpObserver`` (session keys, SSE parsing, decompression, redacted
header copies, the trace events of an exchange) used to stay with the shell,
which then sent the recorder calls it made. It cost the shell 20 to 40 µs per
exchange: in mitmdump, most of the addon's cost. Now a shell only *notes* what
happened to an exchange (``RemoteExchange``: the request, the response head,
each body piece, the end, each with its time), one small call each, and
``ExchangeReplay`` replays the notes on a real ``HttpObserver`` in the analysis
process, or in the shell's own process when it has none.

The one thing a shell must still decide itself is whether a session-less GET
stream is a legacy HTTP+SSE stream, whose ``endpoint`` event the relay rewrites
before forwarding it. ``RemoteExchange`` watches such a stream's first event
with the same functions the ``ExchangeRecorder`` uses (``undecided_stream``,
``legacy_endpoint``), so both processes reach the same decision.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mcpsniff.core.framing import SseParser
from mcpsniff.relay.exchange import (
    ExchangeRecorder,
    HttpObserver,
    comment_only,
    end_to_end,
    header,
    legacy_endpoint,
    lowered,
    undecided_stream,
)
from mcpsniff.relay.recorder import Recorder

#: ``sink(method, t, args, data)``: takes one note to wherever it is replayed.
#: ``data`` (a body or a piece of one) travels apart from ``args`` (uncopied,
#: when big) and is put back at ``DATA_ARG`` (see ``with_data``).
Sink = Callable[[str, float, tuple[Any, ...], bytes], None]

# The notes, by method name. Each one's arguments start (number, t, ...).
BEGIN = "x_begin"  # (number, t, body, method, path, headers, host, client)
RESPONSE = "x_response"  # (number, t, status, headers)
BODY = "x_body"  # (number, t, chunk)
WHOLE_BODY = "x_whole_body"  # (number, t, body)
NO_FIRST_EVENT = "x_no_first_event"  # (number, t)
NOTE = "x_note"  # (number, t, name, data)
FINISH = "x_finish"  # (number, t, outcome, whole)
UNREACHABLE = "x_unreachable"  # (number, t, url, reason)
#: A piece of a request body, sent ahead of its BEGIN (a big body is streamed,
#: never held whole by the shell): (number, t, chunk, offset).
REQUEST_BODY = "x_request_body"
#: Bytes of a response body that never reached the analysis (a full backlog):
#: (number, t, lost).
GAP = "x_gap"
#: The rest of a request body (after what was streamed) never reached the
#: analysis: (number, t, lost).
REQUEST_GAP = "x_request_gap"
#: The notes that carry bytes (``with_data``).
WITH_DATA = frozenset({BEGIN, BODY, WHOLE_BODY, REQUEST_BODY})
#: The notes whose bytes may be dropped when the backlog is full (never the
#: notes that say an exchange happened).
BYTES_NOTES = frozenset({BODY, WHOLE_BODY, REQUEST_BODY})
#: Most bytes of one request body the analysis side keeps (``--capture-limit``).
CAPTURE_LIMIT = 64 << 20
#: Where a note's bytes go in its arguments: after number and time.
DATA_ARG = 2


def with_data(method: str, args: tuple[Any, ...], data: bytes) -> tuple[Any, ...]:
    """A call's whole arguments: ``data`` put back at ``DATA_ARG`` for the notes with bytes."""
    if method in WITH_DATA:
        return (*args[:DATA_ARG], data, *args[DATA_ARG:])
    return args


Headers = list[tuple[str, str]] | list[tuple[bytes, bytes]] | tuple[tuple[bytes, bytes], ...]


class RemoteObserver:
    """The shell's ``HttpObserver``: hands out ``RemoteExchange`` objects, numbered."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self._exchanges = 0

    def reserve(self) -> int:
        """A number for an exchange whose body is streamed (``request_body``) before ``begin``."""
        self._exchanges += 1
        return self._exchanges

    def request_body(self, number: int, chunk: bytes, offset: int) -> None:
        """A piece of exchange ``number``'s request body, already forwarded.

        ``offset``: the bytes of the body before it, so that the analysis side
        can tell a piece the backlog dropped (the body then counts as a gap).
        """
        t = time.time()
        self.sink(REQUEST_BODY, t, (number, t, offset), chunk)

    def begin(
        self,
        method: str,
        path: str,
        headers: Headers,
        body: bytes,
        t: float | None = None,
        host: str | None = None,
        client: str | None = None,
        number: int | None = None,
    ) -> RemoteExchange:
        """A request arrived (its bytes are on their way); note it.

        ``headers`` are text pairs, or the bytes pairs mitmproxy holds (decoded
        in the replaying process, not the shell's). ``number``: reserved
        earlier, when the body's start was streamed; ``body`` is then its rest.
        """
        if number is None:
            self._exchanges += 1
            number = self._exchanges
        when = time.time() if t is None else t
        self.sink(BEGIN, when, (number, when, method, path, headers, host, client), body)
        return RemoteExchange(self.sink, number, method, path, headers)


class RemoteExchange:
    """One exchange as a shell sees it: the ``ExchangeRecorder`` calls, noted for elsewhere."""

    __slots__ = (
        "_parser",
        "_request_headers",
        "_sink",
        "endpoint",
        "is_sse",
        "method",
        "number",
        "path",
        "status",
        "waiting_for_first_event",
    )

    def __init__(
        self, sink: Sink, number: int, method: str, path: str, request_headers: Headers
    ) -> None:
        self._sink = sink
        self.number = number
        self.method = method
        self.path = path
        self._request_headers = request_headers
        self.status: int | None = None
        self.is_sse = False
        #: A session-less GET stream whose first event is still to come (see module doc).
        self.waiting_for_first_event = False
        self._parser: SseParser | None = None
        #: The POST URL a legacy stream's first event named.
        self.endpoint: str | None = None

    @property
    def endpoint_editable(self) -> bool:
        """A stream whose first event may be a legacy endpoint the relay can still rewrite."""
        return self.waiting_for_first_event and self._parser is not None

    def response(self, status: int, headers: Headers) -> None:
        """The response head arrived."""
        t = time.time()
        self.status = status
        text = _text(headers)
        content_type = (header(text, "content-type") or "").split(";")[0].strip().lower()
        self.is_sse = content_type == "text/event-stream"
        if self.is_sse and self.method == "GET":
            # Only a GET stream needs more of its head here (the analysis reads the rest).
            first = lowered(text)
            request_sid = lowered(end_to_end(_text(self._request_headers))).get("mcp-session-id")
            self.waiting_for_first_event = undecided_stream(
                self.method, self.path, request_sid, first.get("mcp-session-id"), True
            )
            encoding = (first.get("content-encoding") or "").strip().lower()
            if self.waiting_for_first_event and encoding in ("", "identity"):
                # Compressed bytes cannot be rewritten: then the analysis decides alone.
                self._parser = SseParser()
        self._sink(RESPONSE, t, (self.number, t, status, headers), b"")

    def body_chunk(self, chunk: bytes) -> None:
        """A piece of the response body, forwarded (or held) by the shell."""
        t = time.time()
        self._sink(BODY, t, (self.number, t), chunk)
        parser = self._parser
        if parser is not None and self.waiting_for_first_event:
            for event in parser.feed(chunk):
                if not comment_only(event):
                    # The ExchangeRecorder's decision, made from the same bytes.
                    self.endpoint = legacy_endpoint(event)
                    self._decided()
                    break

    def whole_body(self, body: bytes) -> None:
        """The whole (not streamed) response body, for shells that buffer it anyway."""
        t = time.time()
        self._sink(WHOLE_BODY, t, (self.number, t), body)

    def first_event(self, event: None) -> None:
        """No first event came in time: the stream is no legacy one (see ExchangeRecorder)."""
        if self.waiting_for_first_event:
            self._decided()
            t = time.time()
            self._sink(NO_FIRST_EVENT, t, (self.number, t), b"")

    def _decided(self) -> None:
        self.waiting_for_first_event = False
        self._parser = None

    def note(self, name: str, data: dict[str, Any]) -> None:
        """Another transport event about this exchange (e.g. an endpoint rewrite)."""
        t = time.time()
        self._sink(NOTE, t, (self.number, t, name, data), b"")

    def finish(self, outcome: str = "complete", *, whole: bool = True) -> None:
        """The exchange is over (``whole``: False when cut short, see ExchangeRecorder)."""
        t = time.time()
        self._sink(FINISH, t, (self.number, t, outcome, whole), b"")

    def unreachable(self, url: str, reason: str) -> None:
        """The upstream could not be reached: the shell answers 502."""
        t = time.time()
        self._sink(UNREACHABLE, t, (self.number, t, url, reason), b"")


def _text(headers: Headers) -> list[tuple[str, str]]:
    """Header pairs as text; bytes pairs decoded as mitmproxy's ``Headers`` decodes them."""
    if headers and isinstance(headers[0][0], bytes):
        return [
            (k.decode("utf-8", "surrogateescape"), v.decode("utf-8", "surrogateescape"))  # type: ignore[union-attr]
            for k, v in headers
        ]
    return headers  # type: ignore[return-value]


class ExchangeReplay:
    """Replays a shell's notes on a real ``HttpObserver``; other calls go to the recorder.

    ``apply(method, args)`` takes the notes (with their bytes back in place)
    and the plain recorder calls a shell makes too (``event``, ``close``).
    """

    def __init__(
        self,
        recorder: Recorder,
        *,
        redact: bool = True,
        key_by_host: bool = False,
        mcp_path: str | None = None,
        capture_limit: int = CAPTURE_LIMIT,
    ):
        self.recorder = recorder
        #: Request bodies streamed ahead of their BEGIN (see ``_request_body``).
        self.bodies: dict[int, _StreamedBody] = {}
        self.capture_limit = capture_limit
        self.observer = HttpObserver(
            recorder,  # type: ignore[arg-type]
            redact=redact,
            key_by_host=key_by_host,
            mcp_path=mcp_path,
        )
        #: The time of the note being replayed: the exchange's events carry it.
        self.now = 0.0
        self.observer.clock = lambda: self.now
        self.open: dict[int, ExchangeRecorder] = {}
        self._notes: dict[str, Callable[..., None]] = {
            BEGIN: self._begin,
            RESPONSE: self._response,
            BODY: self._body,
            WHOLE_BODY: self._whole_body,
            NO_FIRST_EVENT: self._no_first_event,
            NOTE: self._note,
            FINISH: self._finish,
            UNREACHABLE: self._unreachable,
            REQUEST_BODY: self._request_body,
            GAP: self._gap,
            REQUEST_GAP: self._request_gap,
        }

    def apply(self, method: str, args: tuple[Any, ...]) -> None:
        """Replay one note, or one recorder call."""
        note = self._notes.get(method)
        if note is None:
            getattr(self.recorder, method)(*args)
            return
        number, self.now = args[0], args[1]
        if method in (BEGIN, REQUEST_BODY, REQUEST_GAP):
            note(number, *args[2:])
            return
        exchange = self.open.get(number)
        if exchange is not None:  # else already finished (or begun before a new trace)
            note(exchange, *args[2:])

    def sink(self, method: str, t: float, args: tuple[Any, ...], data: bytes) -> None:
        """A ``Sink`` replaying at once, in this process (a shell with no analysis process)."""
        self.apply(method, with_data(method, args, data))

    def _request_body(self, number: int, chunk: bytes, offset: int) -> None:
        """Keep a streamed piece of a request body, up to the capture limit."""
        streamed = self.bodies.get(number)
        if streamed is None:
            streamed = self.bodies[number] = _StreamedBody()
        streamed.add(chunk, offset, self.capture_limit)

    def _request_gap(self, number: int, lost: int) -> None:
        """The rest of a request body was dropped on the way: the body is a gap."""
        streamed = self.bodies.get(number)
        if streamed is None:
            streamed = self.bodies[number] = _StreamedBody()
        streamed.add(b"", streamed.size + lost, self.capture_limit)

    def _begin(
        self,
        number: int,
        body: bytes,
        method: str,
        path: str,
        headers: Headers,
        host: str | None,
        client: str | None,
    ) -> None:
        streamed = self.bodies.pop(number, None)
        gap = 0
        if streamed is not None:
            streamed.add(body, streamed.size, self.capture_limit)
            body, gap = streamed.whole()
        exchange = self.observer.begin(
            method, path, _text(headers), body, self.now, host, client, number=number
        )
        self.open[number] = exchange
        if gap:
            exchange.note(
                "capture-gap",
                {
                    "direction": "c2s",
                    "lost_bytes": gap,
                    "reason": "request body over the capture limit "
                    f"({self.capture_limit} bytes), or cut by a full backlog: "
                    "forwarded, not analyzed",
                },
            )

    @staticmethod
    def _response(exchange: ExchangeRecorder, status: int, headers: Headers) -> None:
        exchange.response(status, _text(headers))

    @staticmethod
    def _body(exchange: ExchangeRecorder, chunk: bytes) -> None:
        exchange.body_chunk(chunk)

    @staticmethod
    def _whole_body(exchange: ExchangeRecorder, body: bytes) -> None:
        exchange.whole_body(body)

    @staticmethod
    def _gap(exchange: ExchangeRecorder, lost: int) -> None:
        exchange.gap(lost)

    @staticmethod
    def _no_first_event(exchange: ExchangeRecorder) -> None:
        if exchange.waiting_for_first_event:
            exchange.first_event(None)

    @staticmethod
    def _note(exchange: ExchangeRecorder, name: str, data: dict[str, Any]) -> None:
        exchange.note(name, data)

    def _finish(self, exchange: ExchangeRecorder, outcome: str, whole: bool) -> None:
        del self.open[exchange.number]
        exchange.finish(outcome, whole=whole)

    def _unreachable(self, exchange: ExchangeRecorder, url: str, reason: str) -> None:
        del self.open[exchange.number]
        exchange.unreachable(url, reason)


class _StreamedBody:
    """A request body streamed in pieces: kept whole up to a limit, or only counted."""

    __slots__ = ("lost", "pieces", "size")

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        #: Bytes of the body seen so far (kept or not).
        self.size = 0
        #: Whether the body is no longer kept (over the limit, or a piece missing).
        self.lost = False

    def add(self, chunk: bytes, offset: int, limit: int) -> None:
        if offset != self.size:
            # A piece before this one was dropped on the way (a full backlog):
            # the body has a hole, and a body with a hole is no frame.
            self.lost = True
            self.size = offset
        self.size += len(chunk)
        if self.lost:
            return
        if self.size > limit:
            self.lost = True
            self.pieces = []
            return
        if chunk:
            self.pieces.append(chunk)

    def whole(self) -> tuple[bytes, int]:
        """The body, and the bytes not analyzed (all of them, or 0)."""
        if self.lost:
            return b"", self.size
        return b"".join(self.pieces), 0
