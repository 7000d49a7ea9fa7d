"""The sans-I/O HTTP-to-MCP adapter: HTTP exchanges in, frames and transport events out.

Both HTTP shells, mcpsniff's own reverse proxy (``relay/http.py``) and the
mitmproxy addon, see the same things: a request (method, path, headers,
body), a response head, then a body that is either one JSON document or an
SSE stream arriving chunk by chunk. This module turns those into the
transport events and frames that ``mcpsniff/core/rules/http.py`` and the rest
of the core analyze. It is the only place that does, so both shells record
identical traces for identical traffic. It does no I/O and reads no clock
(``HttpObserver.clock`` is set by its driver): the shells only observe what
happened (``mcpsniff.core.observations``), with the time it happened, and
``ObservationAdapter`` replays the observations here, where the analysis runs.

Session keys follow the transport: ``Mcp-Session-Id`` (Streamable HTTP), the
``sessionId`` query parameter of the legacy HTTP+SSE endpoint, one group for
stateless 2026-07-28 traffic, and ``http`` for the rest. A GET stream without
a session header may be a legacy SSE stream; its session is known only from
its first event (the ``endpoint`` URL), so its events wait until then.

A reverse proxy forwards every path of the upstream's origin, MCP or not
(OAuth metadata, token endpoints, health checks). Such *plain* exchanges
(``is_plain_request``) are recorded as HTTP events marked ``"mcp": false``,
and their bodies are not analyzed as JSON-RPC.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

import brotli  # type: ignore[import-untyped]

from mcpsniff.core.framing import SseEvent, SseParser
from mcpsniff.core.model import C2S, S2C
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
from mcpsniff.core.protocol import META_VERSION
from mcpsniff.core.redact import redact_frame, redact_header_pairs, redact_query


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


#: Largest body copy handed to the analyzer; bigger bodies are forwarded whole
#: but recorded only up to this size (the frame's meta says so).
ANALYZE_LIMIT = 128 << 20

# RFC 9110 §7.6.1 connection-specific headers: they describe one hop, not the message.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)

#: The event for a body whose content-encoding the analyzer cannot undo.
NOT_ANALYZED = "http-body-not-analyzed"
#: Characters of an HTTP error body shown in its ``http-error-body`` event.
ERROR_EXCERPT = 200
#: Bytes of a plain exchange's body kept for that excerpt: redacted whole, then
#: cut (cut first, a secret member's closing quote could fall past the cut).
EXCERPT_KEEP = 4096

PENDING = "pending"
STREAMABLE = "streamable"
LEGACY = "legacy-sse"

#: Looked for in a request body to tell the stateless (2026-07-28) era.
_META_VERSION_BYTES = META_VERSION.encode()


def header(headers: list[tuple[str, str]], name: str) -> str | None:
    """The first value of header ``name``, given in lower case (RFC 9110 §5.1: any case)."""
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def lowered(headers: list[tuple[str, str]]) -> dict[str, str]:
    """Header names in lower case to the first value of each (RFC 9110 §5.1: any case).

    Performance: built once per message, so that every later look-up is a dict
    access instead of a scan that lower-cases every name again.
    """
    return _first(_names(headers), headers)


def _names(headers: list[tuple[str, str]]) -> list[str]:
    """The lower-cased names of ``headers``, in order."""
    return [key.lower() for key, _ in headers]


def _first(names: list[str], headers: list[tuple[str, str]]) -> dict[str, str]:
    """``names`` (lower-cased, parallel to ``headers``) to the first value of each."""
    # Built from the end, so that the first of repeated names is the one left.
    return dict(zip(reversed(names), [value for _, value in reversed(headers)], strict=True))


def _end_to_end(
    headers: list[tuple[str, str]], names: list[str]
) -> tuple[list[tuple[str, str]], list[str]]:
    """``end_to_end`` given the lower-cased names; also returns the names it kept."""
    drop = HOP_BY_HOP
    if "connection" in names:
        listed = {
            token.strip().lower()
            for name, (_, value) in zip(names, headers, strict=True)
            if name == "connection"
            for token in value.split(",")
        }
        drop = HOP_BY_HOP | listed
    if drop.isdisjoint(names):  # the usual case: nothing to drop
        return list(headers), names
    kept = [name not in drop for name in names]
    return (
        [pair for pair, keep in zip(headers, kept, strict=True) if keep],
        [name for name, keep in zip(names, kept, strict=True) if keep],
    )


def end_to_end(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers a proxy forwards: all but hop-by-hop ones.

    Those are HOP_BY_HOP plus every header a ``Connection`` header names
    (RFC 9110 §7.6.1): a sender may declare any header connection-specific.
    """
    return _end_to_end(headers, _names(headers))[0]


def decode_body(body: bytes, encoding: str | None) -> tuple[bytes, str | None]:
    """The analyzer's copy of a whole body, decompressed when its sender compressed it.

    Returns ``(copy, None)``, or ``(b"", why)`` when the body cannot be decoded
    (an unsupported coding such as zstd, or corrupt data): such a body is no
    frame to analyze, and analyzing the compressed bytes as JSON would be a
    false JR-PARSE on every message.
    """
    name = (encoding or "").strip().lower()
    if name in ("", "identity") or not body:
        return body, None
    try:
        if name in ("gzip", "x-gzip"):
            return zlib.decompress(body, 16 + zlib.MAX_WBITS), None
        if name == "deflate":
            try:
                return zlib.decompress(body), None
            except zlib.error:
                return zlib.decompress(body, -zlib.MAX_WBITS), None
        if name == "br":
            return bytes(brotli.decompress(body)), None
    except Exception as exc:  # brotli.error, zlib.error: the body is not what it says
        return b"", f"cannot decode {name}: {exc}"
    return b"", f"unsupported content-encoding {name!r}"


class StreamDecoder:
    """Incremental decoding of a compressed event stream for the analyzer.

    An event stream is forwarded as it comes, compressed or not, and must not
    wait for its end to be analyzed. Once a stream cannot be decoded (an
    unsupported coding, corrupt data) it yields nothing more and ``problem``
    says why: the stream still passes, unanalyzed.
    """

    def __init__(self, name: str) -> None:
        self.problem: str | None = None
        self._zlib: Any = None
        self._brotli: Any = None
        if name in ("gzip", "x-gzip", "deflate"):
            # 32 + MAX_WBITS: a gzip or a zlib header, whichever the stream has.
            self._zlib = zlib.decompressobj(32 + zlib.MAX_WBITS)
        elif name == "br":
            self._brotli = brotli.Decompressor()
        else:
            self.problem = f"unsupported content-encoding {name!r}"
        self.name = name

    def __call__(self, chunk: bytes, final: bool = False) -> bytes:
        """What ``chunk`` decodes to so far; with ``final``, the rest."""
        if self.problem is not None:
            return b""
        try:
            if self._zlib is not None:
                return self._zlib.flush() if final else self._zlib.decompress(chunk)
            return b"" if final else bytes(self._brotli.process(chunk))
        except Exception as exc:  # zlib.error, brotli.error
            self.problem = f"cannot decode {self.name}: {exc}"
            return b""


def stream_decoder(encoding: str | None) -> StreamDecoder | None:
    """A decoder for a compressed stream, or None when it is not compressed."""
    name = (encoding or "").strip().lower()
    if name in ("", "identity"):
        return None
    return StreamDecoder(name)


def client_address(peer: Any) -> str | None:
    """A socket's peer as ``host:port`` (an IPv6 host in brackets, RFC 3986 §3.2.2).

    It names the client's connection in ``http-request`` events, and the
    stateless era pairs request ids per connection (``Session._scope``).
    """
    if not isinstance(peer, tuple) or len(peer) < 2:
        return None
    host = str(peer[0])
    return f"[{host}]:{peer[1]}" if ":" in host else f"{host}:{peer[1]}"


def comment_only(event: SseEvent) -> bool:
    """Whether an SSE block held only comments (or unknown fields): no event for a client."""
    return event.data is None and event.event is None and event.id is None and event.retry is None


def is_plain_request(
    method: str, path: str, names: dict[str, str], body: bytes, mcp_path: str | None
) -> bool:
    """Whether a request a reverse proxy forwards is no MCP traffic (recorded, not analyzed).

    ``mcp_path`` is the MCP endpoint's path (the path of ``--upstream``); None
    means every request is MCP traffic (a shell that filtered them already).
    A request is MCP traffic when it goes to that path, or says it is MCP
    wherever it goes: an ``Mcp-Session-Id``, a legacy ``sessionId`` query, a
    JSON-RPC body, a GET asking for an event stream (Streamable HTTP: "The
    client MUST include an Accept header, listing text/event-stream"). An
    ``MCP-Protocol-Version`` header alone does not count: SDK clients send it
    with their OAuth discovery requests too, whose JSON answers are no
    JSON-RPC (analyzed, they were false HTTP-GET-REPLY and JR-* errors).
    """
    if mcp_path is None or path.split("?", 1)[0] == mcp_path:
        return False
    if names.get("mcp-session-id") or _legacy_session(path):
        return False
    if method == "POST":
        return b'"jsonrpc"' not in body[:4096]
    if method == "GET":
        return "text/event-stream" not in (names.get("accept") or "")
    return True


def is_mcp_request(
    method: str,
    headers: list[tuple[str, str]],
    body: bytes,
    path: str,
    *,
    names: dict[str, str] | None = None,
) -> bool:
    """Whether a request looks like MCP traffic (for shells that see other traffic too).

    ``names`` is ``lowered(headers)`` when the caller has it already.
    """
    first = lowered(headers) if names is None else names
    sid = first.get("mcp-session-id")
    if sid or first.get("mcp-protocol-version"):
        return True
    if method == "POST":
        return b'"jsonrpc"' in body[:4096]
    if method == "GET":
        accept = first.get("accept") or ""
        return "text/event-stream" in accept or path.split("?")[0].endswith("/sse")
    return method == "DELETE" and sid is not None


@dataclass(slots=True)
class ExchangeRecorder:
    """Records one HTTP exchange as it happens.

    A shell calls ``response`` with the response head, ``body_chunk`` with each
    piece of the body it has forwarded, and ``finish`` (or ``unreachable``).
    """

    observer: HttpObserver
    number: int
    t: float
    method: str
    path: str
    #: The request's end-to-end headers: what the trace shows and a proxy forwards.
    headers: list[tuple[str, str]]
    body: bytes
    transport: str
    #: The analyzer's copy of ``body``: decoded when the client compressed it.
    analyzed: bytes = b""
    key: str | None = None
    deferred: list[tuple[str, float, dict[str, Any]]] = field(default_factory=list)
    status: int | None = None
    content_type: str = ""
    content_encoding: str | None = None
    is_sse: bool = False
    parser: SseParser | None = None
    #: Decodes a compressed event stream for the parser (None: not compressed).
    decode: StreamDecoder | None = None
    #: The body so far (bytes when a shell handed it whole).
    copy: bytes | bytearray = field(default_factory=bytearray)
    truncated: bool = False
    received: int = 0
    events: int = 0
    finished: bool = False
    #: The server's host, for shells that key sessions by host.
    host: str | None = None
    #: The client's address, for shells that serve clients themselves.
    client: str | None = None
    request_recorded: bool = False
    #: The POST URL a legacy stream's first event named.
    endpoint: str | None = None
    #: ``headers`` by lower-cased name (first value of each): built once, read often.
    request_names: dict[str, str] = field(default_factory=dict)
    #: No MCP traffic (``is_plain_request``): HTTP events only, no frames.
    plain: bool = False
    #: Why the request body could not be decoded for the analyzer, if it could not.
    request_problem: str | None = None
    #: The stream decoder's problem is in the trace already.
    stream_problem_noted: bool = False
    #: Bytes of the response body never seen here (a capture gap): what
    #: follows a hole is counted, not analyzed.
    lost: int = 0

    def __post_init__(self) -> None:
        if not self.request_names and self.headers:
            self.request_names = lowered(self.headers)

    # ------------------------------------------------------------------ request/response

    def _request_event(self) -> dict[str, Any]:
        return {
            "exchange": self.number,
            "method": self.method,
            "path": redact_query(self.path) if self.observer.redact else self.path,
            "headers": self.observer.shown_headers(self.headers),
            "transport": self.transport if self.transport != PENDING else STREAMABLE,
            **({"host": self.host} if self.host else {}),
            **({"client": self.client} if self.client else {}),
            **({"mcp": False} if self.plain else {}),
        }

    def _record_request(self) -> None:
        """Queue the http-request event (and with it the request's frame), once."""
        if not self.request_recorded:
            self.request_recorded = True
            self.deferred.append(("http-request", self.t, self._request_event()))

    def unreachable(self, url: str, reason: str) -> None:
        """The upstream could not be reached: the shell answers 502."""
        # The request itself is recorded too: it was sent (by the client), and a
        # request to an unreachable upstream must not vanish from the trace.
        self._record_request()
        self._bind(self._own_key())
        now = self.observer.clock()
        shown = redact_query(url) if self.observer.redact else url
        self._emit(
            "upstream-unreachable", now, {"exchange": self.number, "url": shown, "error": reason}
        )
        self._emit("http-end", now, {"exchange": self.number, "outcome": "upstream-unreachable"})
        self.finished = True

    def response(self, status: int, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The response head arrived; returns its end-to-end headers (what to forward)."""
        t = self.observer.clock()
        self.status = status
        names = _names(headers)
        first = _first(names, headers)
        forwarded = _end_to_end(headers, names)[0]
        content_type = (first.get("content-type") or "").split(";")[0].strip().lower()
        self.content_type = content_type
        self.is_sse = content_type == "text/event-stream"
        self.content_encoding = first.get("content-encoding")
        if self.transport == PENDING and (
            not self.is_sse or self.request_names.get("mcp-session-id")
        ):
            self.transport = STREAMABLE
        self._record_request()
        self.deferred.append(
            (
                "http-response",
                t,
                {
                    "exchange": self.number,
                    "status": status,
                    "headers": self.observer.shown_headers(forwarded),
                },
            )
        )
        key = (
            self.key if self.plain else self.observer.session_key(self, first.get("mcp-session-id"))
        )
        if key is not None and self.transport != PENDING:
            self._bind(key)
        if self.is_sse and not self.plain:
            self.parser = SseParser()
            self.decode = stream_decoder(self.content_encoding)
        return forwarded

    @property
    def waiting_for_first_event(self) -> bool:
        """A GET stream whose session only its first event can tell."""
        return self.key is None and self.is_sse

    @property
    def endpoint_editable(self) -> bool:
        """A stream whose first event may be a legacy endpoint a shell can still rewrite.

        Only while it is undecided, and only if it is not compressed: compressed
        bytes cannot be edited, and holding them until an event decodes whole
        would buffer the stream (a compressor may keep a whole event back).
        """
        return self.waiting_for_first_event and self.decode is None

    # ------------------------------------------------------------------ body

    def whole_body(self, body: bytes) -> None:
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
            self.body_chunk(body)

    def body_chunk(self, chunk: bytes) -> list[SseEvent]:
        """A piece of the response body, forwarded or held by the shell; returns its SSE events."""
        self.received += len(chunk)
        if self.lost:
            return []
        if self.parser is not None:
            decode = self.decode
            events = self.parser.feed(chunk if decode is None else decode(chunk))
            for event in events:
                self._sse_event(event)
            if decode is not None and decode.problem and not self.stream_problem_noted:
                self.stream_problem_noted = True
                self._not_analyzed(decode.problem)
            return events
        if self.plain:
            self._keep_excerpt(chunk)
            return []
        if len(self.copy) + len(chunk) <= ANALYZE_LIMIT:
            if isinstance(self.copy, bytes):  # kept whole by whole_body
                self.copy = bytearray(self.copy)
            self.copy += chunk
        else:
            self.truncated = True
        return []

    def first_event(self, event: SseEvent | None) -> None:
        """Decide a GET stream's session from its first event (None: it has none).

        An ``endpoint`` event makes it a legacy stream, in the session its URL
        names (kept in ``endpoint`` for a shell that rewrites it); anything else
        makes it a Streamable HTTP stream.
        """
        if self.key is not None:
            return
        endpoint = legacy_endpoint(event)
        if endpoint is not None:
            self.transport = LEGACY
            self.endpoint = endpoint
            key = self._legacy_key(endpoint)
        else:
            self.transport = STREAMABLE
            key = self._own_key()
        for name, _t, data in self.deferred:
            if name == "http-request":
                data["transport"] = self.transport
        self._bind(key)

    def note(self, name: str, data: dict[str, Any]) -> None:
        """Record another transport event about this exchange (e.g. an endpoint rewrite)."""
        self._emit(name, self.observer.clock(), {"exchange": self.number, **data})

    def gap(self, lost: int) -> None:
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
        self.note("capture-gap", {"direction": S2C, "lost_bytes": lost})

    def finish(self, outcome: str = "complete", *, whole: bool = True) -> None:
        """The exchange is over: flush what remains and close it in the trace.

        ``whole`` is False when the client or the proxy cut the exchange short:
        what remains of the body is then no message the server failed to
        finish, and is not analyzed (it would be a false truncation finding).
        """
        if self.finished:
            return
        self.finished = True
        # A request that got no response (cut short while waiting) is recorded too.
        self._record_request()
        if self.parser is not None and whole:
            leftovers = self.parser.feed(self.decode(b"", final=True)) if self.decode else []
            for event in leftovers + self.parser.flush():
                self._sse_event(event)
            if self.decode is not None and self.decode.problem and not self.stream_problem_noted:
                self.stream_problem_noted = True
                self._not_analyzed(self.decode.problem)
        if self.key is None:
            self.first_event(None)
        # A legacy HTTP+SSE server acknowledges each POST with 202 and a body such
        # as "Accepted" (the reference SDKs do); the answer travels on the SSE
        # stream, so that body is no JSON-RPC frame (it would be a false JR-PARSE
        # on every POST). Its size is in http-end.
        acknowledgement = self.transport == LEGACY and self.status == 202
        # An HTTP error whose body is not JSON ("Invalid Host header" with 421,
        # an HTML 404 page) answers at the HTTP level; the transports only say
        # such a body "MAY comprise a JSON-RPC error", so it is not a frame.
        # A plain exchange's error is shown the same way, whatever its body.
        text_error = (
            self.status is not None
            and self.status >= 400
            and (
                self.plain
                or (
                    not (
                        self.content_type == "application/json"
                        or self.content_type.endswith("+json")
                    )
                    and self.copy.lstrip()[:1] not in (b"{", b"[")
                )
            )
        )
        if self.copy and text_error:
            start = bytes(self.copy[:EXCERPT_KEEP])
            if self.observer.redact:
                # An error page may quote what it refused ("invalid token: Bearer ...").
                start = redact_frame(start)[0]
            excerpt = start[:ERROR_EXCERPT].decode("utf-8", "replace")
            self._emit(
                "http-error-body",
                self.observer.clock(),
                {"exchange": self.number, "excerpt": excerpt},
            )
        elif self.copy and whole and not acknowledgement and not self.plain:
            meta: dict[str, Any] = {"status": self.status}
            if self.truncated:
                meta["truncated_at"] = ANALYZE_LIMIT
            body, undecodable = decode_body(bytes(self.copy), self.content_encoding)
            if undecodable is None:
                self._frame(S2C, body, self.observer.clock(), meta)
            else:
                self._not_analyzed(undecodable)
        self.copy = bytearray()
        self._emit(
            "http-end",
            self.observer.clock(),
            {"exchange": self.number, "outcome": outcome, "body_bytes": self.received},
        )

    # ------------------------------------------------------------------ plumbing

    def _problem(self, direction: str, reason: str) -> dict[str, Any]:
        return {"exchange": self.number, "dir": direction, "reason": reason}

    def _not_analyzed(self, reason: str) -> None:
        """The response body could not be decoded: it passed, but is no frame."""
        self._emit(NOT_ANALYZED, self.observer.clock(), self._problem(S2C, reason))

    def _keep_excerpt(self, chunk: bytes) -> None:
        """A plain exchange keeps only the start of its body (an error's excerpt)."""
        room = EXCERPT_KEEP - len(self.copy)
        if room > 0:
            if isinstance(self.copy, bytes):
                self.copy = bytearray(self.copy)
            self.copy += chunk[:room]

    def _sse_event(self, event: SseEvent) -> None:
        comments = comment_only(event)
        if self.key is None and not comments:
            # Events wait until the first one tells the session (legacy endpoint);
            # comments before it (padding against buffering proxies) do not decide.
            self.first_event(event)
        t = self.observer.clock()
        data: dict[str, Any] = {"exchange": self.number, "index": self.events}
        if event.id is not None:
            data["id"] = event.id
        if event.event is not None:
            data["event"] = event.event
        if event.retry is not None:
            data["retry"] = event.retry
        if event.incomplete:
            data["incomplete"] = True
        if comments:
            data["comment_only"] = True
        if event.event == "endpoint" and event.data:
            # The POST URI a legacy stream names (SSE-POST-TARGET compares the
            # client's POSTs with it), redacted as request paths are, and bounded.
            endpoint = event.data.strip()[:ENDPOINT_LIMIT]
            data["endpoint"] = redact_query(endpoint) if self.observer.redact else endpoint
        self._emit("sse-event", t, data)
        if event.data and event.event != "endpoint":
            meta: dict[str, Any] = {"sse_index": self.events}
            if event.id is not None:
                meta["sse_id"] = event.id
            self._frame(S2C, event.data.encode("utf-8"), t, meta, transport="sse")
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

    def _legacy_key(self, endpoint: str) -> str:
        """The session of a legacy stream: the session id its endpoint URL names."""
        session_id = _legacy_session(endpoint)
        key = f"sse-{session_id}" if session_id else f"sse-{self.number}"
        return self.observer.prefixed(key, self)

    def _own_key(self) -> str:
        """The session the request alone tells (the ``http`` group when it tells none)."""
        if self.plain:
            return self.observer.prefixed("http", self)
        return self.observer.session_key(self, None) or self.observer.prefixed("http", self)

    def _emit(self, name: str, t: float, data: dict[str, Any]) -> None:
        if self.key is None:
            self.deferred.append((name, t, data))
        else:
            self.observer.recorder.event(self.key, name, t, data)

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
        self.observer.recorder.feed_frame(
            self.key or "http", direction, raw, t, transport=transport, meta=data
        )

    def _bind(self, key: str) -> None:
        self.key = key
        recorder = self.observer.recorder
        for name, t, data in self.deferred:
            recorder.event(key, name, t, data)
            if name == "http-request" and not self.plain:
                if self.analyzed:
                    self._frame(C2S, self.analyzed, t)
                elif self.request_problem is not None:
                    recorder.event(key, NOT_ANALYZED, t, self._problem(C2S, self.request_problem))
        self.deferred.clear()


class HttpObserver:
    """Hands out ExchangeRecorders sharing one recorder and one exchange counter."""

    def __init__(
        self,
        recorder: Recorder,
        *,
        redact: bool = True,
        key_by_host: bool = False,
        mcp_path: str | None = None,
    ) -> None:
        self.recorder = recorder
        self.redact = redact
        #: The MCP endpoint's path, for a shell that forwards other paths too
        #: (``is_plain_request``); None: every exchange is MCP traffic.
        self.mcp_path = mcp_path
        #: Prefix session keys with the server's host (a proxy that sees many servers).
        self.key_by_host = key_by_host
        self._exchanges = 0
        #: The time of what is being recorded. A shell's observer reads the clock;
        #: the analysis process replaying a shell's notes sets it to each note's time.
        #: The time of what is being recorded: set by the driver (no clock is read here).
        self.clock: Callable[[], float] = lambda: 0.0

    def begin(
        self,
        method: str,
        path: str,
        headers: list[tuple[str, str]],
        body: bytes,
        t: float | None = None,
        host: str | None = None,
        client: str | None = None,
        number: int | None = None,
    ) -> ExchangeRecorder:
        """A request arrived (and is about to be forwarded, with ``exchange.headers``).

        ``number`` is the exchange's number when the shell counts exchanges itself.
        """
        self._exchanges = number if number is not None else self._exchanges + 1
        forwarded, kept = _end_to_end(headers, _names(headers))
        names = _first(kept, forwarded)
        legacy_post = (
            method == "POST" and names.get("mcp-session-id") is None and bool(_legacy_session(path))
        )
        analyzed, undecodable = decode_body(body, names.get("content-encoding"))
        plain = is_plain_request(method, path, names, analyzed, self.mcp_path)
        transport = (
            LEGACY if legacy_post else PENDING if method == "GET" and not plain else STREAMABLE
        )
        exchange = ExchangeRecorder(
            self,
            self._exchanges,
            t if t is not None else self.clock(),
            method,
            path,
            forwarded,
            body,
            transport,
            analyzed=analyzed,
            host=host,
            client=client,
            request_names=names,
            plain=plain,
            request_problem=undecodable,
        )
        if legacy_post:
            # A legacy POST's session is in its URL, so it is recorded now, before it
            # is forwarded. Waiting for its response recorded it only after its 202,
            # and a server that answers on the SSE stream before acknowledging (the
            # SDKs handle the message, then send 202) had every answer recorded before
            # its request: unpaired, with false JR-RESP-ID and JR-RESP-REQUIRED errors.
            exchange._record_request()
            exchange._bind(exchange._own_key())
        elif plain:
            # Recorded at once, in the ``http`` group: nothing about it waits for a session.
            exchange._record_request()
            exchange._bind(exchange._own_key())
        return exchange

    def prefixed(self, key: str, exchange: ExchangeRecorder) -> str:
        """A session key, prefixed with the server's host when sessions are keyed by host."""
        if self.key_by_host and exchange.host:
            return f"{exchange.host} {key}"
        return key

    def session_key(self, exchange: ExchangeRecorder, response_sid: str | None) -> str | None:
        """Which session an exchange belongs to, or None when only its stream can tell.

        ``response_sid`` is the response's Mcp-Session-Id (None before a response).
        """
        sid = response_sid or exchange.request_names.get("mcp-session-id")
        if sid:
            return self.prefixed(sid, exchange)
        legacy = _legacy_session(exchange.path)
        if legacy:
            return self.prefixed(f"sse-{legacy}", exchange)
        if exchange.method == "GET" and exchange.transport == PENDING:
            return None
        version = exchange.request_names.get("mcp-protocol-version") or ""
        if version >= "2026-07-28" or _META_VERSION_BYTES in exchange.analyzed:
            # Stateless era: there are no sessions at all. (One group for every
            # client: the server's discovered capabilities are judged across it.)
            return self.prefixed("stateless", exchange)
        return self.prefixed("http", exchange)

    def shown_headers(self, headers: list[tuple[str, str]]) -> list[list[str]]:
        """Headers as the trace stores them: redacted unless redaction is off."""
        if self.redact:
            return redact_header_pairs(headers)[0]
        return [[k, v] for k, v in headers]


#: How much of a legacy endpoint URI an sse-event record keeps.
ENDPOINT_LIMIT = 2048


def legacy_endpoint(event: SseEvent | None) -> str | None:
    """The POST URL a stream's first event names if it is a legacy ``endpoint`` event.

    2024-11-05 HTTP+SSE: "When a client connects, the server MUST send an
    endpoint event containing a URI for the client to use for sending messages."
    """
    if event is not None and event.event == "endpoint" and event.data:
        return event.data.strip()
    return None


def undecided_stream(
    method: str, path: str, request_sid: str | None, response_sid: str | None, is_sse: bool
) -> bool:
    """Whether only its first event can tell an exchange's session.

    An event stream answering a GET that names no session (no Mcp-Session-Id
    either way, no ``sessionId`` in its URL) is a legacy HTTP+SSE stream if
    its first event is an ``endpoint``, else a Streamable HTTP listening stream.
    This is ``ExchangeRecorder.waiting_for_first_event`` right after the
    response head, for shells that keep no ExchangeRecorder.
    """
    return (
        is_sse
        and method == "GET"
        and not request_sid
        and not response_sid
        and _legacy_session(path) is None
    )


def _legacy_session(url: str) -> str | None:
    """The session id a legacy endpoint URL (or a POST to it) carries in its query."""
    if "?" not in url:  # no query at all: the usual case, and no parsing
        return None
    query = parse_qs(urlsplit(url).query)
    values = query.get("sessionId") or query.get("session_id")
    return values[0] if values else None


# --------------------------------------------------------------------------- observations in

#: Most bytes of one request body kept for analysis (``--capture-limit``).
CAPTURE_LIMIT = 64 << 20
#: The session key of relay-wide events (capture gaps, refusals).
RELAY_SESSION = "http"


def text_headers(headers: Any) -> list[tuple[str, str]]:
    """Header pairs as text; bytes pairs decoded as mitmproxy's ``Headers`` decodes them."""
    if headers and isinstance(headers[0][0], bytes):
        return [
            (k.decode("utf-8", "surrogateescape"), v.decode("utf-8", "surrogateescape"))  # type: ignore[union-attr]
            for k, v in headers
        ]
    return list(headers)  # type: ignore[arg-type]


class ObservationAdapter:
    """Replays a shell's observations on an ``HttpObserver``: observations in, records out.

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
        self.now = o.t
        body = o.body
        streamed = self.bodies.pop(o.exchange, None)
        gap = 0
        if streamed is not None:
            streamed.add(body, streamed.size, self.capture_limit)
            if streamed.size < o.size:
                # Pieces at its end were lost on the way: the body has a hole.
                streamed.add(b"", o.size, self.capture_limit)
            body, gap = streamed.whole()
        exchange = self.observer.begin(
            o.method,
            o.path,
            text_headers(o.headers),
            body,
            o.t,
            o.host,
            o.client,
            number=o.exchange,
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
        exchange.response(o.status, text_headers(o.headers))

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
