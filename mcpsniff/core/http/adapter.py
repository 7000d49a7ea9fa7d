"""The HTTP shells' observations in, replayed on exchanges; events and frames out to a recorder.

Both HTTP shells, mcpsniff's own reverse proxy (``relay/http.py``) and the
mitmproxy addon, see the same things: a request (method, path, headers,
body), a response head, then a body that is either one JSON document or an
SSE stream arriving chunk by chunk. They only observe what happened
(``mcpsniff.core.observations``), with the time it happened; here, where the
analysis runs, ``ObservationAdapter`` replays the observations on one
``AnalyzedExchange`` per exchange (``mcpsniff.core.http.exchange``) and hands
the events and frames it returns to the recorder. It is the only place that
does, so both shells record identical traces for identical traffic; the
transport events are documented in ``mcpsniff/core/rules/http.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from mcpsniff.core.http.events import (
    EndpointRewritten,
    ExchangeFault,
    ExchangeGap,
    Frame,
    HttpRefused,
    RequestCut,
    Routed,
)
from mcpsniff.core.http.exchange import AnalyzedExchange, HttpSettings, begin_exchange
from mcpsniff.core.http.headers import text_headers
from mcpsniff.core.http.session_keys import RELAY_SESSION
from mcpsniff.core.observations import (
    CaptureEnd,
    CaptureGap,
    ExchangeEnd,
    HttpGuardAnswered,
    NoFirstEvent,
    Observation,
    RequestBegin,
    RequestBody,
    RequestGap,
    ResponseBegin,
    ResponseBody,
    ResponseGap,
    Unreachable,
)


class Recorder(Protocol):
    """Where the adapter's output goes (``mcpsniff.capture.recorder.TraceRecorder``)."""

    def event(
        self, session: str, name: str, t: float, data: dict[str, Any] | None = None
    ) -> Any: ...

    def feed_frame(
        self,
        session: str,
        direction: str,
        raw: bytes,
        t: float,
        transport: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Any: ...

    def close(self, t: float) -> Any: ...


#: Most bytes of one request body kept for analysis (``--capture-limit``).
CAPTURE_LIMIT = 64 << 20


class ObservationAdapter:
    """Replays a shell's observations on exchanges: observations in, records out.

    Fed whole, split or byte by byte, the same observations give the same
    records: the adapter keeps the state (streamed request bodies, open
    exchanges) between them.
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
        #: Request bodies streamed ahead of their ``RequestBegin``.
        self.bodies: dict[int, _StreamedBody] = {}
        self.capture_limit = capture_limit
        self.settings = HttpSettings(redact=redact, key_by_host=key_by_host, mcp_path=mcp_path)
        self.open: dict[int, AnalyzedExchange] = {}
        #: What each kind of observation does; those of an exchange get its exchange.
        self._handlers: dict[type, Callable[[Any], None]] = {
            RequestBegin: self._begin,
            RequestBody: self._request_body,
            RequestGap: self._request_gap,
            HttpRefused: self._refused,
            CaptureGap: self._capture_gap,
            CaptureEnd: self._end,
        }
        self._exchange_handlers: dict[type, Callable[[AnalyzedExchange, Any], list[Routed]]] = {
            ResponseBegin: self._response,
            ResponseBody: self._body,
            ResponseGap: self._gap,
            NoFirstEvent: self._no_first_event,
            EndpointRewritten: AnalyzedExchange.told,
            RequestCut: AnalyzedExchange.told,
            HttpGuardAnswered: AnalyzedExchange.told,
            ExchangeFault: AnalyzedExchange.told,
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
        exchange = self.open.get(observation.exchange)  # type: ignore[union-attr]
        if exchange is not None:  # else already finished (or begun before a new trace)
            routed = self._exchange_handlers[kind](exchange, observation)
            if routed:
                self._deliver(routed)

    #: A ``Sink`` replaying at once, in this process (a shell with no analysis process).
    sink = apply

    def _deliver(self, routed: list[Routed]) -> None:
        """Hand an exchange's events and frames to the recorder, in order."""
        recorder = self.recorder
        for session, item in routed:
            if type(item) is Frame:
                recorder.feed_frame(
                    session,
                    item.direction,
                    item.raw,
                    item.t,
                    transport=item.transport,
                    meta=item.meta,
                )
            else:
                recorder.event(session, item.name, item.t, item.data())  # type: ignore[union-attr]

    def _refused(self, o: HttpRefused) -> None:
        self.recorder.event(RELAY_SESSION, o.name, o.t, o.data())

    def _capture_gap(self, o: CaptureGap) -> None:
        # Dropped body pieces are also told as a gap of their exchange
        # ("bodies"); dropped observations without bytes (an exchange's begin,
        # head or end, of any session, either way) by nothing else, so the
        # verdicts of every session may depend on them (rules/flow.py, "capture").
        scope = "bodies" if o.lost_bytes else "capture"
        data = {"lost_calls": o.lost_calls, "lost_bytes": o.lost_bytes, "scope": scope}
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
        body = o.body
        streamed = self.bodies.pop(o.exchange, None)
        gap = 0
        if streamed is not None:
            streamed.add(body, streamed.size, self.capture_limit)
            if streamed.size < o.size:
                # Pieces at its end were lost on the way: the body has a hole.
                streamed.add(b"", o.size, self.capture_limit)
            body, gap = streamed.whole()
        exchange, routed = begin_exchange(
            self.settings,
            o.exchange,
            o.t,
            o.method,
            o.path,
            text_headers(o.headers),
            body,
            o.host,
            o.client,
        )
        self.open[o.exchange] = exchange
        self._deliver(routed)
        if gap:
            reason = (
                f"request body over the capture limit ({self.capture_limit} bytes), "
                "or cut by a full backlog: forwarded, not analyzed"
            )
            self._deliver(exchange.told(ExchangeGap(o.exchange, o.t, "c2s", gap, reason)))

    @staticmethod
    def _response(exchange: AnalyzedExchange, o: ResponseBegin) -> list[Routed]:
        return exchange.response(o.status, text_headers(o.headers), o.t)

    @staticmethod
    def _body(exchange: AnalyzedExchange, o: ResponseBody) -> list[Routed]:
        if o.whole:
            return exchange.whole_body(o.body, o.t)
        return exchange.body_chunk(o.body, o.t)

    @staticmethod
    def _gap(exchange: AnalyzedExchange, o: ResponseGap) -> list[Routed]:
        return exchange.gap(o.lost, o.t)

    @staticmethod
    def _no_first_event(exchange: AnalyzedExchange, o: NoFirstEvent) -> list[Routed]:
        return exchange.first_event(o.t)

    def _finish(self, exchange: AnalyzedExchange, o: ExchangeEnd) -> list[Routed]:
        del self.open[exchange.number]
        return exchange.finish(o.outcome, o.t, whole=o.whole)

    def _unreachable(self, exchange: AnalyzedExchange, o: Unreachable) -> list[Routed]:
        del self.open[exchange.number]
        return exchange.unreachable(o.url, o.reason, o.t)


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
