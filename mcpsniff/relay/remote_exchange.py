"""HTTP exchanges observed where the bytes move, and recorded where the analysis runs.

Both HTTP shells (``mcpsniff http`` and the mitmproxy addon) forward in one
process and analyze in another. A shell only *observes* what happens to an
exchange (``RemoteExchange``: the request, the response head, each body
piece, the end, each with its time), as the typed observations of
``mcpsniff.core.observations``, one small object each; ``ExchangeReplay``
replays them on a real ``HttpObserver`` in the analysis process, or in the
shell's own process when it has none.

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
from mcpsniff.core.observations import (
    CaptureEnd,
    CaptureGap,
    ExchangeEnd,
    ExchangeNote,
    NoFirstEvent,
    Observation,
    RequestBegin,
    RequestBody,
    RequestGap,
    ResponseBody,
    ResponseGap,
    ResponseHead,
    TransportEvent,
    Unreachable,
)
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

#: ``sink(observation)``: takes one observation to wherever it is replayed.
Sink = Callable[[Observation], None]

#: Most bytes of one request body the analysis side keeps (``--capture-limit``).
CAPTURE_LIMIT = 64 << 20
#: The session key of relay-wide events (capture gaps, refusals).
RELAY_SESSION = "http"

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
        self.sink(RequestBody(number, time.time(), offset, chunk))

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
        self.sink(RequestBegin(number, when, method, path, tuple(headers), host, client, body))  # type: ignore[arg-type]
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
        self._sink(ResponseHead(self.number, t, status, tuple(headers)))  # type: ignore[arg-type]

    def body_chunk(self, chunk: bytes) -> None:
        """A piece of the response body, forwarded (or held) by the shell."""
        self._sink(ResponseBody(self.number, time.time(), False, chunk))
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
        self._sink(ResponseBody(self.number, time.time(), True, body))

    def first_event(self, event: None) -> None:
        """No first event came in time: the stream is no legacy one (see ExchangeRecorder)."""
        if self.waiting_for_first_event:
            self._decided()
            self._sink(NoFirstEvent(self.number, time.time()))

    def _decided(self) -> None:
        self.waiting_for_first_event = False
        self._parser = None

    def note(self, name: str, data: dict[str, Any]) -> None:
        """Another transport event about this exchange (e.g. an endpoint rewrite)."""
        self._sink(ExchangeNote(self.number, time.time(), name, data))

    def finish(self, outcome: str = "complete", *, whole: bool = True) -> None:
        """The exchange is over (``whole``: False when cut short, see ExchangeRecorder)."""
        self._sink(ExchangeEnd(self.number, time.time(), outcome, whole))

    def unreachable(self, url: str, reason: str) -> None:
        """The upstream could not be reached: the shell answers 502."""
        self._sink(Unreachable(self.number, time.time(), url, reason))


def _text(headers: Headers) -> list[tuple[str, str]]:
    """Header pairs as text; bytes pairs decoded as mitmproxy's ``Headers`` decodes them."""
    if headers and isinstance(headers[0][0], bytes):
        return [
            (k.decode("utf-8", "surrogateescape"), v.decode("utf-8", "surrogateescape"))  # type: ignore[union-attr]
            for k, v in headers
        ]
    return list(headers)  # type: ignore[arg-type]


class ExchangeReplay:
    """Replays a shell's observations on a real ``HttpObserver`` and its ``Recorder``."""

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
        #: Request bodies streamed ahead of their ``RequestBegin``.
        self.bodies: dict[int, _StreamedBody] = {}
        self.capture_limit = capture_limit
        self.observer = HttpObserver(
            recorder,  # type: ignore[arg-type]
            redact=redact,
            key_by_host=key_by_host,
            mcp_path=mcp_path,
        )
        #: The time of the observation being replayed: the exchange's events carry it.
        self.now = 0.0
        self.observer.clock = lambda: self.now
        self.open: dict[int, ExchangeRecorder] = {}
        #: What each kind of observation does; those of an exchange get its recorder.
        self._handlers: dict[type, Callable[[Any], None]] = {
            RequestBegin: self._begin,
            RequestBody: self._request_body,
            RequestGap: self._request_gap,
            TransportEvent: self._event,
            CaptureGap: self._capture_gap,
            CaptureEnd: self._end,
        }
        self._exchange_handlers: dict[type, Callable[[ExchangeRecorder, Any], None]] = {
            ResponseHead: self._response,
            ResponseBody: self._body,
            ResponseGap: self._gap,
            NoFirstEvent: self._no_first_event,
            ExchangeNote: self._note,
            ExchangeEnd: self._finish,
            Unreachable: self._unreachable,
        }

    def apply(self, observation: Observation) -> None:
        """Replay one observation."""
        kind = type(observation)
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(observation)
            return
        self.now = observation.t
        exchange = self.open.get(observation.exchange)  # type: ignore[union-attr]
        if exchange is not None:  # else already finished (or begun before a new trace)
            self._exchange_handlers[kind](exchange, observation)

    #: A ``Sink`` replaying at once, in this process (a shell with no analysis process).
    sink = apply

    def _event(self, o: TransportEvent) -> None:
        self.recorder.event(o.session, o.name, o.t, o.data)

    def _capture_gap(self, o: CaptureGap) -> None:
        data = {"lost_calls": o.lost_calls, "lost_bytes": o.lost_bytes}
        self.recorder.event(RELAY_SESSION, "capture-gap", o.t, data)

    def _end(self, o: CaptureEnd) -> None:
        self.recorder.close(o.t)

    def _streamed(self, number: int) -> _StreamedBody:
        streamed = self.bodies.get(number)
        if streamed is None:
            streamed = self.bodies[number] = _StreamedBody()
        return streamed

    def _request_body(self, o: RequestBody) -> None:
        """Keep a streamed piece of a request body, up to the capture limit."""
        self._streamed(o.exchange).add(o.body, o.offset, self.capture_limit)

    def _request_gap(self, o: RequestGap) -> None:
        """The rest of a request body was dropped on the way: the body is a gap."""
        streamed = self._streamed(o.exchange)
        streamed.add(b"", streamed.size + o.lost, self.capture_limit)

    def _begin(self, o: RequestBegin) -> None:
        self.now = o.t
        body = o.body
        streamed = self.bodies.pop(o.exchange, None)
        gap = 0
        if streamed is not None:
            streamed.add(body, streamed.size, self.capture_limit)
            body, gap = streamed.whole()
        exchange = self.observer.begin(
            o.method, o.path, _text(o.headers), body, o.t, o.host, o.client, number=o.exchange
        )
        self.open[o.exchange] = exchange
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
    def _response(exchange: ExchangeRecorder, o: ResponseHead) -> None:
        exchange.response(o.status, _text(o.headers))

    @staticmethod
    def _body(exchange: ExchangeRecorder, o: ResponseBody) -> None:
        if o.whole:
            exchange.whole_body(o.body)
        else:
            exchange.body_chunk(o.body)

    @staticmethod
    def _gap(exchange: ExchangeRecorder, o: ResponseGap) -> None:
        exchange.gap(o.lost)

    @staticmethod
    def _no_first_event(exchange: ExchangeRecorder, o: NoFirstEvent) -> None:
        if exchange.waiting_for_first_event:
            exchange.first_event(None)

    @staticmethod
    def _note(exchange: ExchangeRecorder, o: ExchangeNote) -> None:
        exchange.note(o.name, o.data)

    def _finish(self, exchange: ExchangeRecorder, o: ExchangeEnd) -> None:
        del self.open[exchange.number]
        exchange.finish(o.outcome, whole=o.whole)

    def _unreachable(self, exchange: ExchangeRecorder, o: Unreachable) -> None:
        del self.open[exchange.number]
        exchange.unreachable(o.url, o.reason)


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
