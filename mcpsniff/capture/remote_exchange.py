"""What an HTTP shell sees of each exchange, as observations: the shell's half of the adapter.

Both HTTP shells (``mcpsniff http`` and the mitmproxy addon) only *observe*
what happens to an exchange (``RemoteExchange``: the request, the response
head, each body piece, the end, each with its time), as the typed
observations of ``mcpsniff.core.observations``, handed to a sink (the
capture channel). Where the analysis runs, ``mcpsniff.core.http.adapter``'s
``ObservationAdapter`` replays them on ``mcpsniff.core.http.exchange.AnalyzedExchange`` objects.

The one thing a shell must still decide itself is whether a session-less GET
stream is a legacy HTTP+SSE stream, whose ``endpoint`` event the relay rewrites
before forwarding it. ``RemoteExchange`` decides it with the pure functions
the analysis decides with (``mcpsniff.core.http.classify``: ``undecided_stream``
on the head, ``stream_verdict`` on each event until one decides), on the same
bytes, so both processes reach the same decision.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mcpsniff.core.framing import SseParser
from mcpsniff.core.http.classify import is_plain_request, stream_verdict, undecided_stream
from mcpsniff.core.http.headers import end_to_end, header, lowered, text_headers
from mcpsniff.core.observations import (
    EndpointRewritten,
    ExchangeEnd,
    HttpGuardAnswered,
    NoFirstEvent,
    Observation,
    RequestBegin,
    RequestBody,
    RequestCut,
    ResponseBegin,
    ResponseBody,
    Unreachable,
)

#: ``sink(observation)``: takes one observation to wherever it is replayed.
Sink = Callable[[Observation], None]

Headers = list[tuple[str, str]] | list[tuple[bytes, bytes]] | tuple[tuple[bytes, bytes], ...]


class RemoteObserver:
    """The shell's half of ``ObservationAdapter``: hands out ``RemoteExchange``s, numbered."""

    def __init__(self, sink: Sink, mcp_path: str | None = None) -> None:
        self.sink = sink
        #: The MCP endpoint's path, as the analysis is given it (``is_plain_request``).
        self.mcp_path = mcp_path
        self._exchanges = 0

    @property
    def numbered(self) -> int:
        """How many exchanges were numbered so far (they are 1 to this)."""
        return self._exchanges

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
        size: int | None = None,
    ) -> RemoteExchange:
        """A request arrived (its bytes are on their way); note it.

        ``headers`` are text pairs, or the bytes pairs mitmproxy holds (decoded
        in the replaying process, not the shell's). ``number``: reserved
        earlier, when the body's start was streamed; ``body`` is then its rest,
        and ``size`` the whole body's size.
        """
        if number is None:
            self._exchanges += 1
            number = self._exchanges
        when = time.time() if t is None else t
        whole = len(body) if size is None else size
        self.sink(
            RequestBegin(number, when, method, path, tuple(headers), host, client, whole, body)  # type: ignore[arg-type]
        )
        return RemoteExchange(self.sink, number, method, path, headers, self.mcp_path)


class RemoteExchange:
    """One exchange as a shell sees it: each step becomes an observation for its sink."""

    __slots__ = (
        "_mcp_path",
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
        self,
        sink: Sink,
        number: int,
        method: str,
        path: str,
        request_headers: Headers,
        mcp_path: str | None = None,
    ) -> None:
        self._sink = sink
        self._mcp_path = mcp_path
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
            request_names = lowered(end_to_end(_text(self._request_headers)))
            # A GET's body plays no part in telling it plain.
            plain = is_plain_request(self.method, self.path, request_names, b"", self._mcp_path)
            self.waiting_for_first_event = undecided_stream(
                self.method, request_names.get("mcp-session-id"), True, plain
            )
            encoding = (first.get("content-encoding") or "").strip().lower()
            if self.waiting_for_first_event and encoding in ("", "identity"):
                # Compressed bytes cannot be rewritten: then the analysis decides alone.
                self._parser = SseParser()
        self._sink(ResponseBegin(self.number, t, status, tuple(headers)))  # type: ignore[arg-type]

    def body_chunk(self, chunk: bytes) -> None:
        """A piece of the response body, forwarded (or held) by the shell."""
        self._sink(ResponseBody(self.number, time.time(), False, chunk))
        parser = self._parser
        if parser is not None and self.waiting_for_first_event:
            for event in parser.feed(chunk):
                verdict = stream_verdict(event)
                if verdict is not None:
                    # The AnalyzedExchange's decision, made from the same bytes.
                    self.endpoint = verdict.endpoint
                    self._decided()
                    break

    def whole_body(self, body: bytes) -> None:
        """The whole (not streamed) response body, for shells that buffer it anyway."""
        self._sink(ResponseBody(self.number, time.time(), True, body))

    def no_first_event(self) -> None:
        """No first event came in time: the stream is no legacy one (see AnalyzedExchange)."""
        if self.waiting_for_first_event:
            self._decided()
            self._sink(NoFirstEvent(self.number, time.time()))

    def _decided(self) -> None:
        self.waiting_for_first_event = False
        self._parser = None

    def endpoint_rewritten(self, old: str, new: str) -> None:
        """The relay rewrote the legacy endpoint URL ``old`` to ``new`` (its own address)."""
        self._sink(EndpointRewritten(self.number, time.time(), old, new))

    def guard_answered(self, tool: str, reason: str, request_id: object) -> None:
        """``--guard enforce`` answered this exchange's call to ``tool`` itself (after its head)."""
        self._sink(HttpGuardAnswered(self.number, time.time(), tool, reason, request_id))

    def request_cut(self, body_bytes: int) -> None:
        """The request ended before its end; ``body_bytes`` of its body went upstream."""
        self._sink(RequestCut(self.number, time.time(), body_bytes))

    def finish(self, outcome: str = "complete", *, whole: bool = True) -> None:
        """The exchange is over (``whole``: False when cut short, see AnalyzedExchange)."""
        self._sink(ExchangeEnd(self.number, time.time(), outcome, whole))

    def unreachable(self, url: str, reason: str) -> None:
        """The upstream could not be reached: the shell answers 502."""
        self._sink(Unreachable(self.number, time.time(), url, reason))


def _text(headers: Headers) -> list[tuple[str, str]]:
    """Header pairs as text (``mcpsniff.core.http.headers.text_headers``)."""
    return text_headers(headers)
