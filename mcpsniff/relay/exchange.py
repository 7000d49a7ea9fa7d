"""Describing HTTP exchanges to the analyzer, whoever moves the bytes.

Both HTTP shells, mcpsniff's own aiohttp reverse proxy and the mitmproxy
addon, see the same things: a request (method, path, headers, body), a
response head, then a body that is either one JSON document or an SSE stream
arriving chunk by chunk. This module turns those into the transport events
and frames that ``mcpsniff/core/rules/http.py`` and the rest of the core
analyze, so both shells record identical traces for identical traffic.

Session keys follow the transport: ``Mcp-Session-Id`` (Streamable HTTP), the
``sessionId`` query parameter of the legacy HTTP+SSE endpoint, one group for
stateless 2026-07-28 traffic, and ``http`` for the rest. A GET stream without
a session header may be a legacy SSE stream; its session is known only from
its first event (the ``endpoint`` URL), so its events wait until then.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcpsniff.core.framing import SseEvent, SseParser
from mcpsniff.core.model import C2S, S2C
from mcpsniff.core.protocol import META_VERSION
from mcpsniff.core.redact import redact_headers
from mcpsniff.relay.recorder import Recorder

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

PENDING = "pending"
STREAMABLE = "streamable"
LEGACY = "legacy-sse"


def header(headers: list[tuple[str, str]], name: str) -> str | None:
    """The first value of header ``name`` (case-insensitive, RFC 9110 §5.1)."""
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def end_to_end(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers a proxy forwards: everything but hop-by-hop ones."""
    return [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]


def decoded(body: bytes, encoding: str | None) -> bytes:
    """The analyzer's copy of a body: decompressed when the server compressed it."""
    if not encoding or encoding.strip().lower() == "identity":
        return body
    name = encoding.strip().lower()
    try:
        if name in ("gzip", "x-gzip"):
            return zlib.decompress(body, 16 + zlib.MAX_WBITS)
        if name == "deflate":
            try:
                return zlib.decompress(body)
            except zlib.error:
                return zlib.decompress(body, -zlib.MAX_WBITS)
        if name == "br":
            import brotli  # type: ignore[import-not-found]  # optional

            return bytes(brotli.decompress(body))
    except Exception:  # a broken body is recorded as it came
        return body
    return body


def is_mcp_request(method: str, headers: list[tuple[str, str]], body: bytes, path: str) -> bool:
    """Whether a request looks like MCP traffic (for shells that see other traffic too)."""
    if header(headers, "mcp-session-id") or header(headers, "mcp-protocol-version"):
        return True
    if method == "POST":
        head = body[:4096]
        return b'"jsonrpc"' in head
    if method == "GET":
        accept = header(headers, "accept") or ""
        return "text/event-stream" in accept or path.split("?")[0].endswith("/sse")
    return method == "DELETE" and header(headers, "mcp-session-id") is not None


@dataclass
class ExchangeRecorder:
    """Records one HTTP exchange as it happens."""

    observer: HttpObserver
    number: int
    t: float
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes
    transport: str
    key: str | None = None
    deferred: list[tuple[str, float, dict[str, Any]]] = field(default_factory=list)
    status: int | None = None
    content_encoding: str | None = None
    is_sse: bool = False
    parser: SseParser | None = None
    copy: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    received: int = 0
    events: int = 0
    finished: bool = False
    host: str | None = None
    request_recorded: bool = False

    # ------------------------------------------------------------------ request/response

    def _request_event(self) -> dict[str, Any]:
        return {
            "exchange": self.number,
            "method": self.method,
            "path": self.path,
            "headers": self.observer.shown_headers(self.headers),
            "transport": self.transport if self.transport != PENDING else STREAMABLE,
            **({"host": self.host} if self.host else {}),
        }

    def _record_request(self) -> None:
        """Queue the http-request event (and with it the request's frame), once."""
        if not self.request_recorded:
            self.request_recorded = True
            self.deferred.append(("http-request", self.t, self._request_event()))

    def unreachable(self, url: str, reason: str) -> None:
        """The upstream could not be reached: the shell answers 502."""
        # Fixed: the request itself was never recorded here (only response() queued
        # it), so a request to an unreachable upstream left no frame in the trace.
        self._record_request()
        self._bind(self.observer.session_key(self, None) or "http")
        now = time.time()
        self._emit(
            "upstream-unreachable", now, {"exchange": self.number, "url": url, "error": reason}
        )
        self._emit("http-end", now, {"exchange": self.number, "outcome": "upstream-unreachable"})
        self.finished = True

    def response(self, status: int, headers: list[tuple[str, str]]) -> None:
        """The response head arrived."""
        t = time.time()
        self.status = status
        content_type = (header(headers, "content-type") or "").split(";")[0].strip().lower()
        self.is_sse = content_type == "text/event-stream"
        self.content_encoding = header(headers, "content-encoding")
        if self.transport == PENDING and (
            not self.is_sse or header(self.headers, "mcp-session-id")
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
                    "headers": self.observer.shown_headers(end_to_end(headers)),
                },
            )
        )
        key = self.observer.session_key(self, headers)
        if key is not None and self.transport != PENDING:
            self._bind(key)
        if self.is_sse:
            self.parser = SseParser()

    @property
    def waiting_for_first_event(self) -> bool:
        """A GET stream whose session only its first event can tell."""
        return self.key is None and self.is_sse

    # ------------------------------------------------------------------ body

    def body_chunk(self, chunk: bytes) -> list[SseEvent]:
        """A piece of the response body that has been forwarded; returns SSE events seen."""
        self.received += len(chunk)
        if self.parser is not None:
            if self.content_encoding:
                return []  # a compressed event stream: forwarded, not analyzable
            events = self.parser.feed(chunk)
            for event in events:
                self._sse_event(event)
            return events
        if len(self.copy) + len(chunk) <= ANALYZE_LIMIT:
            self.copy += chunk
        else:
            self.truncated = True
        return []

    def first_event(self, event: SseEvent | None) -> str | None:
        """Bind a GET stream's session from its first event; return the legacy endpoint URL."""
        if self.key is not None:
            return None
        if event is not None and event.event == "endpoint" and event.data:
            self.transport = LEGACY
            for name, _t, data in self.deferred:
                if name == "http-request":
                    data["transport"] = LEGACY
            endpoint = event.data.strip()
            query = parse_qs(urlsplit(endpoint).query)
            session_id = (query.get("sessionId") or query.get("session_id") or [None])[0]
            # Fixed: prefixed() needs the exchange (for its host); without it every
            # legacy SSE stream raised TypeError at its endpoint event and went unrecorded.
            key = f"sse-{session_id}" if session_id else f"sse-{self.number}"
            self._bind(self.observer.prefixed(key, self))
            return endpoint
        self.transport = STREAMABLE
        for name, _t, data in self.deferred:
            if name == "http-request":
                data["transport"] = STREAMABLE
        self._bind(self.observer.session_key(self, None) or "http")
        return None

    def note(self, name: str, data: dict[str, Any]) -> None:
        """Record another transport event about this exchange (e.g. an endpoint rewrite)."""
        self._emit(name, time.time(), {"exchange": self.number, **data})

    def finish(self, outcome: str = "complete") -> None:
        """The exchange is over: flush what remains and close it in the trace."""
        if self.finished:
            return
        self.finished = True
        if self.parser is not None:
            leftovers = self.parser.flush()
            if self.key is None:
                self.first_event(leftovers[0] if leftovers else None)
            for event in leftovers:
                self._sse_event(event)
        if self.key is None:
            self._bind(self.observer.session_key(self, None) or "http")
        # Fixed: a legacy HTTP+SSE server acknowledges each POST with 202 and a body
        # such as "Accepted"; the answer travels on the SSE stream, so that body is no
        # JSON-RPC frame (recording it was a false JR-PARSE on every POST, and the
        # trace differed from mcpsniff http's, which skips it too). Its size is in http-end.
        acknowledgement = self.transport == LEGACY and self.status == 202
        if self.copy and not acknowledgement:
            meta: dict[str, Any] = {"status": self.status}
            if self.truncated:
                meta["truncated_at"] = ANALYZE_LIMIT
            body = decoded(bytes(self.copy), self.content_encoding)
            self._frame(S2C, body, time.time(), **meta)
            self.copy = bytearray()
        self._emit(
            "http-end",
            time.time(),
            {"exchange": self.number, "outcome": outcome, "body_bytes": self.received},
        )

    # ------------------------------------------------------------------ plumbing

    def _sse_event(self, event: SseEvent) -> None:
        if self.key is None:
            # Held until the first event tells the session (legacy endpoint).
            self.first_event(event)
        t = time.time()
        data: dict[str, Any] = {"exchange": self.number, "index": self.events}
        if event.id is not None:
            data["id"] = event.id
        if event.event is not None:
            data["event"] = event.event
        if event.retry is not None:
            data["retry"] = event.retry
        if event.incomplete:
            data["incomplete"] = True
        self._emit("sse-event", t, data)
        if event.data and event.event != "endpoint":
            meta: dict[str, Any] = {"sse_index": self.events}
            if event.id is not None:
                meta["sse_id"] = event.id
            self._frame(S2C, event.data.encode("utf-8"), t, transport="sse", **meta)
        self.events += 1

    def _emit(self, name: str, t: float, data: dict[str, Any]) -> None:
        if self.key is None:
            self.deferred.append((name, t, data))
        else:
            self.observer.recorder.event(self.key, name, t, data)

    def _frame(self, direction: str, raw: bytes, t: float, **meta: Any) -> None:
        transport = meta.pop("transport", "http")
        self.observer.recorder.feed_frame(
            self.key or "http",
            direction,
            raw,
            t,
            transport=transport,
            meta={"exchange": self.number, **meta},
        )

    def _bind(self, key: str) -> None:
        self.key = key
        recorder = self.observer.recorder
        for name, t, data in self.deferred:
            recorder.event(key, name, t, data)
            if name == "http-request" and self.body:
                self._frame(C2S, self.body, t)
        self.deferred.clear()


class HttpObserver:
    """Hands out ExchangeRecorders sharing one recorder and one exchange counter."""

    def __init__(
        self, recorder: Recorder, *, redact: bool = True, key_by_host: bool = False
    ) -> None:
        self.recorder = recorder
        self.redact = redact
        #: Prefix session keys with the server's host (a proxy that sees many servers).
        self.key_by_host = key_by_host
        self._exchanges = 0

    def begin(
        self,
        method: str,
        path: str,
        headers: list[tuple[str, str]],
        body: bytes,
        t: float | None = None,
        host: str | None = None,
    ) -> ExchangeRecorder:
        """A request arrived (and has been, or is about to be, forwarded)."""
        self._exchanges += 1
        legacy_post = (
            method == "POST"
            and header(headers, "mcp-session-id") is None
            and bool(_legacy_session(path))
        )
        transport = LEGACY if legacy_post else PENDING if method == "GET" else STREAMABLE
        exchange = ExchangeRecorder(
            self,
            self._exchanges,
            t if t is not None else time.time(),
            method,
            path,
            end_to_end(headers),
            body,
            transport,
        )
        exchange.host = host
        if legacy_post:
            # Fixed: a legacy POST's session is in its URL, so it is recorded now, as it
            # is forwarded. Waiting for its response recorded the request only after its
            # 202, and a server that answers on the SSE stream before acknowledging (the
            # SDKs handle the message, then send 202) had every answer recorded before
            # its request: unpaired, with false JR-RESP-ID and JR-RESP-REQUIRED errors.
            exchange._record_request()
            exchange._bind(self.session_key(exchange, None) or "http")
        return exchange

    def prefixed(self, key: str, exchange: ExchangeRecorder) -> str:
        """A session key, prefixed with the server's host when sessions are keyed by host."""
        if self.key_by_host and exchange.host:
            return f"{exchange.host} {key}"
        return key

    def session_key(
        self, exchange: ExchangeRecorder, response_headers: list[tuple[str, str]] | None
    ) -> str | None:
        """Which session an exchange belongs to, or None when only its stream can tell."""
        sid = header(response_headers, "mcp-session-id") if response_headers else None
        sid = sid or header(exchange.headers, "mcp-session-id")
        if sid:
            return self.prefixed(sid, exchange)
        legacy = _legacy_session(exchange.path)
        if legacy:
            return self.prefixed(f"sse-{legacy}", exchange)
        if exchange.method == "GET" and exchange.transport == PENDING:
            return None
        version = header(exchange.headers, "mcp-protocol-version") or ""
        if version >= "2026-07-28" or META_VERSION.encode() in exchange.body:
            # Stateless era: there are no sessions at all.
            return self.prefixed("stateless", exchange)
        return self.prefixed("http", exchange)

    def shown_headers(self, headers: list[tuple[str, str]]) -> list[list[str]]:
        """Headers as the trace stores them: redacted unless redaction is off."""
        pairs = redact_headers(headers) if self.redact else headers
        return [[k, v] for k, v in pairs]


def _legacy_session(path: str) -> str | None:
    query = parse_qs(urlsplit(path).query)
    values = query.get("sessionId") or query.get("session_id")
    return values[0] if values else None
