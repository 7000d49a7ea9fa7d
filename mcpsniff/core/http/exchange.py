"""One HTTP exchange as the analysis sees it: a state machine, observations in, events out.

Theory of operation
-------------------
A shell observes a request, a response head, the response body in pieces
(or whole), and an end; ``ObservationAdapter`` replays each on the
exchange's ``AnalyzedExchange``, whose methods are the transitions below.
Each returns what it made of it: typed events (``mcpsniff.core.http.events``)
and frames, each routed to a session. It does no I/O and reads no clock (every
transition is given the time of its observation).

An exchange is in one ``ExchangePhase`` at a time::

    REQUEST ──response──> FIRST_EVENT ──first event / none in time / finish──> BODY
       │          └─────────────────────────────────────────────────────────> BODY
       └──unreachable──> DONE                               BODY ──finish──> DONE

* ``REQUEST``: the request is in; no response head yet. Its session is known
  at once when the request names it in its URL (a legacy POST, recorded before
  it is forwarded) or when it is no MCP traffic (``plain``); otherwise the
  response may still name it (``Mcp-Session-Id``), and its events wait.
* ``FIRST_EVENT``: a GET event stream that names no session
  (``classify.undecided_stream``): a legacy HTTP+SSE stream if its first event
  is an ``endpoint``, else a Streamable HTTP listening stream
  (``classify.stream_verdict``, the function the shell decides with too). Its
  events wait until the first event that is not only comments.
* ``BODY``: the session is known; events go out as they come.
* ``DONE``: finished, or the upstream was unreachable; nothing more happens.

Events made while the session is unknown wait in ``deferred`` and go out, in
order and with their own times, when it is known (``_bind``); the request's
frame goes out with its ``http-request`` event. A gap (bytes the backlog
dropped) stops the body's analysis at the hole: what follows it is counted, not
parsed out of place.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from mcpsniff.core.framing import SseEvent, SseParser
from mcpsniff.core.http.classify import (
    LEGACY,
    PENDING,
    STREAMABLE,
    comment_only,
    is_plain_request,
    stream_verdict,
    undecided_stream,
)
from mcpsniff.core.http.decoding import StreamDecoder, decode_body, stream_decoder
from mcpsniff.core.http.events import (
    BodyNotAnalyzed,
    ExchangeGap,
    Frame,
    HttpEnd,
    HttpErrorBody,
    HttpEvent,
    HttpRequest,
    HttpResponse,
    Routed,
    SseEventSeen,
    Unreachable,
)
from mcpsniff.core.http.headers import end_to_end_named, first_values, names_of
from mcpsniff.core.http.legacy import ENDPOINT_LIMIT, legacy_session
from mcpsniff.core.http.session_keys import (
    RELAY_SESSION,
    legacy_stream_session,
    prefixed,
    request_session,
)
from mcpsniff.core.model import C2S, S2C
from mcpsniff.core.redact import redact_frame, redact_header_pairs, redact_query

#: Largest body copy handed to the analyzer; bigger bodies are forwarded whole
#: but recorded only up to this size (the frame's meta says so).
ANALYZE_LIMIT = 128 << 20
#: Characters of an HTTP error body shown in its ``http-error-body`` event.
ERROR_EXCERPT = 200
#: Bytes of a plain exchange's body kept for that excerpt: redacted whole, then
#: cut (cut first, a secret member's closing quote could fall past the cut).
EXCERPT_KEEP = 4096


class ExchangePhase(Enum):
    """Where an exchange is (see the module's theory of operation)."""

    REQUEST = "request"
    FIRST_EVENT = "first-event"
    BODY = "body"
    DONE = "done"


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """What every exchange of one capture shares."""

    #: Redact paths, headers and error excerpts (``--no-redact``: off).
    redact: bool = True
    #: Prefix session keys with the server's host (a proxy that sees many servers).
    key_by_host: bool = False
    #: The MCP endpoint's path, for a shell that forwards other paths too
    #: (``is_plain_request``); None: every exchange is MCP traffic.
    mcp_path: str | None = None

    def shown_headers(self, headers: list[tuple[str, str]]) -> list[list[str]]:
        """Headers as the trace stores them: redacted unless redaction is off."""
        if self.redact:
            return redact_header_pairs(headers)[0]
        return [[k, v] for k, v in headers]

    def shown_url(self, url: str) -> str:
        """A path or URL as the trace stores it: its query redacted unless redaction is off."""
        return redact_query(url) if self.redact else url


@dataclass(slots=True)
class AnalyzedExchange:
    """One HTTP exchange, from its request to its end (see the module's theory of operation)."""

    settings: HttpSettings
    number: int
    t: float
    method: str
    path: str
    #: The request's end-to-end headers: what the trace shows and a proxy forwards.
    headers: list[tuple[str, str]]
    #: The analyzer's copy of the request body: decoded when the client compressed it.
    analyzed: bytes
    #: ``headers`` by lower-cased name (first value of each): built once, read often.
    request_names: dict[str, str]
    #: No MCP traffic (``is_plain_request``): HTTP events only, no frames.
    plain: bool
    #: ``PENDING`` (a GET whose stream may tell), ``STREAMABLE`` or ``LEGACY``.
    transport: str
    #: Why the request body could not be decoded for the analyzer, if it could not.
    request_problem: str | None = None
    #: The server's host, for shells that key sessions by host.
    host: str | None = None
    #: The client's address, for shells that serve clients themselves.
    client: str | None = None
    phase: ExchangePhase = ExchangePhase.REQUEST
    #: The session, once known; until then events wait in ``deferred``.
    key: str | None = None
    deferred: list[HttpEvent] = field(default_factory=list)
    #: The ``http-request`` event is made (at most once).
    request_recorded: bool = False
    status: int | None = None
    content_type: str = ""
    content_encoding: str | None = None
    is_sse: bool = False
    parser: SseParser | None = None
    #: Decodes a compressed event stream for the parser (None: not compressed).
    decode: StreamDecoder | None = None
    #: The stream decoder's problem is in the trace already.
    stream_problem_noted: bool = False
    #: The body so far (bytes when a shell handed it whole).
    copy: bytes | bytearray = field(default_factory=bytearray)
    truncated: bool = False
    #: Response body bytes seen (or lost) so far.
    received: int = 0
    #: SSE events (and comment-only blocks) seen so far.
    events: int = 0
    #: Bytes of the response body never seen here (a capture gap).
    lost: int = 0
    #: The POST URL a legacy stream's first event named.
    endpoint: str | None = None
    #: What the transition under way made (handed back, then emptied).
    out: list[Routed] = field(default_factory=list)

    # ------------------------------------------------------------------ transitions

    def begun(self) -> list[Routed]:
        """The request is in (its bytes on their way): REQUEST.

        A legacy POST's session is in its URL, so it is recorded now, before it
        is forwarded. Waiting for its response recorded it only after its 202,
        and a server that answers on the SSE stream before acknowledging (the
        SDKs handle the message, then send 202) had every answer recorded before
        its request: unpaired, with false JR-RESP-ID and JR-RESP-REQUIRED errors.
        A plain exchange is recorded at once too, in the ``http`` group: nothing
        about it waits for a session.
        """
        if self.transport == LEGACY or self.plain:
            self._record_request()
            self._bind(self._own_key())
        return self._handed()

    def unreachable(self, url: str, reason: str, t: float) -> list[Routed]:
        """The upstream could not be reached, the shell answered 502: DONE."""
        # The request itself is recorded too: it was sent (by the client), and a
        # request to an unreachable upstream must not vanish from the trace.
        self._record_request()
        self._bind(self._own_key())
        shown = self.settings.shown_url(url)
        self._emit(Unreachable(self.number, t, shown, reason))
        self._emit(HttpEnd(self.number, t, "upstream-unreachable", None))
        self.phase = ExchangePhase.DONE
        return self._handed()

    def response(self, status: int, headers: list[tuple[str, str]], t: float) -> list[Routed]:
        """The response head arrived: FIRST_EVENT for an undecided stream, else BODY."""
        self.status = status
        names = names_of(headers)
        first = first_values(names, headers)
        forwarded = end_to_end_named(headers, names)[0]
        content_type = (first.get("content-type") or "").split(";")[0].strip().lower()
        self.content_type = content_type
        self.is_sse = content_type == "text/event-stream"
        self.content_encoding = first.get("content-encoding")
        response_sid = first.get("mcp-session-id")
        request_sid = self.request_names.get("mcp-session-id")
        undecided = undecided_stream(self.method, request_sid, self.is_sse, self.plain)
        if self.transport == PENDING and not undecided:
            self.transport = STREAMABLE
        self._record_request()
        self.deferred.append(
            HttpResponse(self.number, t, status, self.settings.shown_headers(forwarded))
        )
        if undecided:
            self.phase = ExchangePhase.FIRST_EVENT
        else:
            self.phase = ExchangePhase.BODY
            self._bind(self.key if self.plain else self._session(response_sid))
        if self.is_sse and not self.plain:
            self.parser = SseParser()
            self.decode = stream_decoder(self.content_encoding)
        return self._handed()

    def whole_body(self, body: bytes, t: float) -> list[Routed]:
        """The whole (not streamed) response body, for shells that buffer it anyway.

        Performance: the body is kept as it is, not copied piece by piece.
        """
        if self.plain:
            self.received += len(body)
            self._keep_excerpt(body)
        elif self.parser is None and not self.copy and len(body) <= ANALYZE_LIMIT:
            self.received += len(body)
            self.copy = body
        else:
            return self.body_chunk(body, t)
        return []

    def body_chunk(self, chunk: bytes, t: float) -> list[Routed]:
        """A piece of the response body, forwarded or held by the shell.

        Performance: a stream's every piece comes here, so it does its work
        itself (no helper calls but the parser's) and hands its events back.
        """
        self.received += len(chunk)
        if self.lost:
            return []
        if self.parser is not None:
            decode = self.decode
            for event in self.parser.feed(chunk if decode is None else decode(chunk)):
                self._sse_event(event, t)
            if decode is not None:
                self._note_stream_problem(t)
            out = self.out
            if out:
                self.out = []
            return out
        if self.plain:
            self._keep_excerpt(chunk)
        elif len(self.copy) + len(chunk) <= ANALYZE_LIMIT:
            if isinstance(self.copy, bytes):  # kept whole by whole_body
                self.copy = bytearray(self.copy)
            self.copy += chunk
        else:
            self.truncated = True
        return []

    def first_event(self, t: float) -> list[Routed]:
        """An undecided stream sent no event in time: a Streamable HTTP stream (BODY)."""
        if self.phase is ExchangePhase.FIRST_EVENT:
            self._decide(None)
        return self._handed()

    def gap(self, lost: int, t: float) -> list[Routed]:
        """``lost`` bytes of the response body never arrived here (the backlog dropped them).

        The body is forwarded whole; its analysis stops at the hole, since what
        follows it would be parsed out of place (false findings). Its size
        still counts in ``http-end``.
        """
        self.received += lost
        if not self.lost:
            self.parser = None
            self.copy = bytearray()
        self.lost += lost
        self._emit(ExchangeGap(self.number, t, S2C, lost))
        return self._handed()

    def told(self, event: HttpEvent) -> list[Routed]:
        """Another event about this exchange, from the shell (an endpoint rewrite, a cut)."""
        self._emit(event)
        return self._handed()

    def finish(self, outcome: str, t: float, *, whole: bool = True) -> list[Routed]:
        """The exchange is over: what remains is flushed, and it ends in the trace (DONE).

        ``whole`` is False when the client or the proxy cut the exchange short:
        what remains of the body is then no message the server failed to
        finish, and is not analyzed (it would be a false truncation finding).
        """
        if self.phase is ExchangePhase.DONE:
            return []
        # A request that got no response (cut short while waiting) is recorded too.
        self._record_request()
        if self.parser is not None and whole:
            leftovers = self.parser.feed(self.decode(b"", final=True)) if self.decode else []
            for event in leftovers + self.parser.flush():
                self._sse_event(event, t)
            self._note_stream_problem(t)
        if self.key is None:
            self._decide(None)
        self.phase = ExchangePhase.DONE
        # A legacy HTTP+SSE server acknowledges each POST with 202 and a body such
        # as "Accepted" (the reference SDKs do); the answer travels on the SSE
        # stream, so that body is no JSON-RPC frame (it would be a false JR-PARSE
        # on every POST). Its size is in http-end.
        acknowledgement = self.transport == LEGACY and self.status == 202
        if self.copy and self._text_error():
            start = bytes(self.copy[:EXCERPT_KEEP])
            if self.settings.redact:
                # An error page may quote what it refused ("invalid token: Bearer ...").
                start = redact_frame(start)[0]
            excerpt = start[:ERROR_EXCERPT].decode("utf-8", "replace")
            self._emit(HttpErrorBody(self.number, t, excerpt))
        elif self.copy and whole and not acknowledgement and not self.plain:
            meta: dict[str, Any] = {"status": self.status}
            if self.truncated:
                meta["truncated_at"] = ANALYZE_LIMIT
            body, undecodable = decode_body(bytes(self.copy), self.content_encoding)
            if undecodable is None:
                self._frame(S2C, body, t, meta)
            else:
                self._emit(BodyNotAnalyzed(self.number, t, S2C, undecodable))
        self.copy = bytearray()
        self._emit(HttpEnd(self.number, t, outcome, self.received))
        return self._handed()

    # ------------------------------------------------------------------ what the shell asks

    @property
    def waiting_for_first_event(self) -> bool:
        """A GET stream whose session only its first event can tell."""
        return self.phase is ExchangePhase.FIRST_EVENT

    @property
    def endpoint_editable(self) -> bool:
        """A stream whose first event may be a legacy endpoint a shell can still rewrite.

        Only while it is undecided, and only if it is not compressed: compressed
        bytes cannot be edited, and holding them until an event decodes whole
        would buffer the stream (a compressor may keep a whole event back).
        """
        return self.phase is ExchangePhase.FIRST_EVENT and self.decode is None

    # ------------------------------------------------------------------ inside transitions

    def _decide(self, event: SseEvent | None) -> None:
        """FIRST_EVENT -> BODY: the stream's first event (None: none) tells its session.

        An ``endpoint`` event makes it a legacy stream, in the session its URL
        names (kept in ``endpoint`` for a shell that rewrites it); anything else
        makes it a Streamable HTTP stream.
        """
        verdict = stream_verdict(event)
        assert verdict is not None  # never called with a comment-only block
        self.transport = verdict.transport
        if verdict.endpoint is not None:
            self.endpoint = verdict.endpoint
            key = self._legacy_key(verdict.endpoint)
        else:
            key = self._own_key()
        self.deferred = [
            replace(e, transport=self.transport) if type(e) is HttpRequest else e
            for e in self.deferred
        ]
        if self.phase is ExchangePhase.FIRST_EVENT:
            self.phase = ExchangePhase.BODY
        self._bind(key)

    def _note_stream_problem(self, t: float) -> None:
        """The stream cannot be decoded: said once, then it passes unanalyzed."""
        decode = self.decode
        if decode is not None and decode.problem and not self.stream_problem_noted:
            self.stream_problem_noted = True
            self._emit(BodyNotAnalyzed(self.number, t, S2C, decode.problem))

    def _text_error(self) -> bool:
        """Whether the response is an HTTP error whose body is shown, not analyzed.

        An HTTP error whose body is not JSON ("Invalid Host header" with 421,
        an HTML 404 page) answers at the HTTP level; the transports only say
        such a body "MAY comprise a JSON-RPC error", so it is not a frame.
        A plain exchange's error is shown the same way, whatever its body.
        """
        if self.status is None or self.status < 400:
            return False
        if self.plain:
            return True
        json_type = self.content_type == "application/json" or self.content_type.endswith("+json")
        return not json_type and self.copy.lstrip()[:1] not in (b"{", b"[")

    def _keep_excerpt(self, chunk: bytes) -> None:
        """A plain exchange keeps only the start of its body (an error's excerpt)."""
        room = EXCERPT_KEEP - len(self.copy)
        if room > 0:
            if isinstance(self.copy, bytes):
                self.copy = bytearray(self.copy)
            self.copy += chunk[:room]

    def _sse_event(self, event: SseEvent, t: float) -> None:
        comments = comment_only(event)
        if self.key is None and not comments:
            # Events wait until the first one tells the session (legacy endpoint);
            # comments before it (padding against buffering proxies) do not decide.
            self._decide(event)
        endpoint = None
        if event.event == "endpoint" and event.data:
            # The POST URI a legacy stream names (SSE-POST-TARGET compares the
            # client's POSTs with it), redacted as request paths are, and bounded.
            endpoint = self.settings.shown_url(event.data.strip()[:ENDPOINT_LIMIT])
        seen = SseEventSeen(
            self.number,
            t,
            self.events,
            event.id,
            event.event,
            event.retry,
            event.incomplete,
            comments,
            endpoint,
        )
        # Performance (every event of every stream): _emit and _frame inlined.
        key = self.key
        if key is None:
            self.deferred.append(seen)
        else:
            self.out.append((key, seen))
        if event.data and event.event != "endpoint":
            meta: dict[str, Any] = {"exchange": self.number, "sse_index": self.events}
            if event.id is not None:
                meta["sse_id"] = event.id
            frame = Frame(S2C, t, event.data.encode("utf-8"), "sse", meta)
            self.out.append((key or RELAY_SESSION, frame))
        elif event.event == "endpoint" and event.data and self._late_endpoint():
            # A legacy stream that sent something before its endpoint event (the
            # rules report SSE-ENDPOINT-EVENT on this sse-event, in the session the
            # stream was put in). What follows on it answers the POSTs sent to this
            # endpoint, so it belongs to the session the endpoint names, or no
            # answer would pair with its request. (Its bytes are already on their
            # way, so the endpoint is not rewritten.)
            self.transport = LEGACY
            self.key = self._legacy_key(event.data.strip())
        self.events += 1

    def _late_endpoint(self) -> bool:
        """Whether an endpoint event now shows a stream taken for Streamable HTTP was legacy."""
        return (
            self.method == "GET"
            and self.transport == STREAMABLE
            and not self.request_names.get("mcp-session-id")
        )

    def _record_request(self) -> None:
        """Make the http-request event (and with it the request's frame), once."""
        if not self.request_recorded:
            self.request_recorded = True
            self.deferred.append(
                HttpRequest(
                    self.number,
                    self.t,
                    self.method,
                    self.settings.shown_url(self.path),
                    self.settings.shown_headers(self.headers),
                    self.transport if self.transport != PENDING else STREAMABLE,
                    self.host,
                    self.client,
                    not self.plain,
                )
            )

    def _session(self, response_sid: str | None) -> str | None:
        """The session the request (and the response's Mcp-Session-Id) tells, prefixed."""
        key = request_session(
            self.method,
            self.path,
            self.request_names,
            self.analyzed,
            response_sid,
            undecided_get=self.transport == PENDING,
        )
        return None if key is None else prefixed(key, self.host, self.settings.key_by_host)

    def _legacy_key(self, endpoint: str) -> str:
        """The session of a legacy stream: the session id its endpoint URL names."""
        key = legacy_stream_session(endpoint, self.number)
        return prefixed(key, self.host, self.settings.key_by_host)

    def _own_key(self) -> str:
        """The session the request alone tells (the ``http`` group when it tells none)."""
        key = None if self.plain else self._session(None)
        return key or prefixed(RELAY_SESSION, self.host, self.settings.key_by_host)

    def _emit(self, event: HttpEvent) -> None:
        if self.key is None:
            self.deferred.append(event)
        else:
            self.out.append((self.key, event))

    def _frame(
        self,
        direction: str,
        raw: bytes,
        t: float,
        meta: dict[str, Any] | None = None,
        transport: str = "http",
    ) -> None:
        data: dict[str, Any] = {"exchange": self.number}
        if meta:
            data.update(meta)
        self.out.append((self.key or RELAY_SESSION, Frame(direction, t, raw, transport, data)))

    def _bind(self, key: str) -> None:
        """The session is known: what waited goes out, the request's frame with its event."""
        self.key = key
        out = self.out
        for event in self.deferred:
            out.append((key, event))
            if type(event) is HttpRequest and not self.plain:
                if self.analyzed:
                    self._frame(C2S, self.analyzed, event.t)
                elif self.request_problem is not None:
                    out.append(
                        (key, BodyNotAnalyzed(self.number, event.t, C2S, self.request_problem))
                    )
        self.deferred.clear()

    def _handed(self) -> list[Routed]:
        """What the transition made, handed back (and no longer kept)."""
        out = self.out
        if not out:
            return out
        self.out = []
        return out


def begin_exchange(
    settings: HttpSettings,
    number: int,
    t: float,
    method: str,
    path: str,
    headers: list[tuple[str, str]],
    body: bytes,
    host: str | None = None,
    client: str | None = None,
) -> tuple[AnalyzedExchange, list[Routed]]:
    """A request arrived: its exchange (REQUEST), and what it made at once."""
    forwarded, kept = end_to_end_named(headers, names_of(headers))
    names = first_values(kept, forwarded)
    legacy_post = (
        method == "POST" and names.get("mcp-session-id") is None and bool(legacy_session(path))
    )
    analyzed, undecodable = decode_body(body, names.get("content-encoding"))
    plain = is_plain_request(method, path, names, analyzed, settings.mcp_path)
    transport = LEGACY if legacy_post else PENDING if method == "GET" and not plain else STREAMABLE
    exchange = AnalyzedExchange(
        settings,
        number,
        t,
        method,
        path,
        forwarded,
        analyzed,
        names,
        plain,
        transport,
        request_problem=undecodable,
        host=host,
        client=client,
    )
    return exchange, exchange.begun()
