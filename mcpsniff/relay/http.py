"""``mcpsniff http --upstream URL``: a recording reverse proxy for MCP over HTTP.

It serves Streamable HTTP (2025-03-26 and later) and the legacy HTTP+SSE
transport (2024-11-05) on any path, passing method, path, query, status,
headers and bodies unchanged (hop-by-hop headers excepted) and streaming
responses chunk by chunk, so SSE events reach the client as they arrive.
Compressed bodies are forwarded compressed; the analyzer gets a decoded copy.

The shell only moves bytes and describes each exchange to the analyzer with
transport events (see ``mcpsniff/core/rules/http.py``); it never answers in
the server's place, except with 502 when the upstream cannot be reached.
The one deliberate change to forwarded bytes is the legacy ``endpoint`` event:
an absolute URL pointing at the upstream is rewritten to the proxy's own
address so that the client keeps talking through mcpsniff, and the trace
records the rewrite.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import signal
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from mcpsniff.core.framing import SseEvent, SseParser
from mcpsniff.core.model import C2S, S2C, Record
from mcpsniff.core.protocol import META_VERSION
from mcpsniff.core.redact import redact_headers
from mcpsniff.relay.recorder import Recorder
from mcpsniff.trace.format import TraceWriter

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 6280
#: Largest body copy handed to the analyzer; bigger bodies are forwarded whole
#: but recorded only up to this size (and the trace says so).
ANALYZE_LIMIT = 128 << 20
CLIENT_MAX_SIZE = 1 << 30
#: Seconds a stopping proxy lets in-flight exchanges finish before it cuts them
#: off. Long-lived SSE streams never finish on their own; aiohttp's default
#: (60 s) made Ctrl-C hang for a minute whenever a client held a stream open.
SHUTDOWN_GRACE = 2.0

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
# Headers aiohttp's client would otherwise add on its own: the upstream must
# see only what the client sent.
_SKIP_AUTO = frozenset({"User-Agent", "Accept", "Accept-Encoding", "Content-Type"})


class RelayedResponse(web.StreamResponse):
    """A response that carries exactly the upstream's headers.

    aiohttp adds ``Server``, ``Date`` and a default ``Content-Type`` to every
    response it writes; a transparent proxy must not, so the ones the upstream
    did not send are taken out again just before the header block is written.
    """

    def __init__(self, *, status: int, reason: str | None, upstream_names: set[str]) -> None:
        super().__init__(status=status, reason=reason)
        self._upstream_names = upstream_names

    async def _write_headers(self) -> None:
        for name in ("Server", "Date", "Content-Type"):
            if name.lower() not in self._upstream_names and name in self.headers:
                del self.headers[name]
        await super()._write_headers()


@dataclass
class HttpOptions:
    """What ``mcpsniff http`` was asked to do."""

    upstream: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    trace: Path | None = None
    show: bool = False
    redact: bool = True


def is_loopback(host: str) -> bool:
    """Whether ``host`` names a loopback interface only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` or ``PORT`` into a host and port."""
    text = value.strip()
    if text.isdigit():
        return DEFAULT_HOST, int(text)
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--listen must be HOST:PORT, not {value!r}")
    return (host.strip("[]") or DEFAULT_HOST), int(port)


@dataclass
class _Exchange:
    """Bookkeeping for one proxied request."""

    number: int
    t: float
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes
    transport: str
    #: The analyzer's copy of ``body``: decoded when the client compressed it.
    analyzed: bytes = b""
    key: str | None = None
    deferred: list[tuple[str, float, dict[str, Any]]] = field(default_factory=list)


class HttpRelay:
    """The aiohttp application: one handler for every method and path."""

    def __init__(
        self,
        options: HttpOptions,
        writer: TraceWriter | None,
        show: Callable[[Record], None] | None = None,
        show_flush: Callable[[], None] | None = None,
    ) -> None:
        self.options = options
        upstream = URL(options.upstream)
        if upstream.scheme not in ("http", "https") or not upstream.host:
            raise ValueError(f"--upstream must be an http(s) URL, not {options.upstream!r}")
        self.upstream = upstream
        self.origin = upstream.origin()
        self.recorder = Recorder(writer, "http", redact=options.redact)
        if show is not None:
            self.recorder.listeners.append(show)
        if show_flush is not None:
            self.recorder.batch_listeners.append(show_flush)
        self._exchanges = 0
        self.client: aiohttp.ClientSession | None = None
        self.runner: web.AppRunner | None = None
        self.port: int | None = None
        #: Set once stop() begins: exchanges cancelled after that were cut off by us.
        self._stopping = False

    # ------------------------------------------------------------------ lifecycle

    @property
    def public_origin(self) -> str:
        host = self.options.host
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}"

    @property
    def client_url(self) -> str:
        """The URL a client should use: our origin plus the upstream's path."""
        return self.public_origin + (self.upstream.raw_path_qs or "/")

    async def start(self) -> None:
        """Bind the listening socket and open the upstream client."""
        self.client = aiohttp.ClientSession(
            auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=15),
            connector=aiohttp.TCPConnector(limit=0, force_close=False),
            skip_auto_headers=_SKIP_AUTO,
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        app = web.Application(client_max_size=CLIENT_MAX_SIZE)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        # handler_cancellation: a client that goes away cancels its upstream request.
        # auto_decompress=False: a compressed request body must be forwarded as the
        # client sent it, to match its Content-Encoding and Content-Length headers
        # (aiohttp would otherwise hand us the decoded bytes); the analyzer decodes a copy.
        self.runner = web.AppRunner(
            app,
            handler_cancellation=True,
            access_log=None,
            auto_decompress=False,
            shutdown_timeout=SHUTDOWN_GRACE,
        )
        await self.runner.setup()
        site = web.TCPSite(self.runner, self.options.host, self.options.port)
        await site.start()
        sockets = site._server.sockets if site._server else []
        self.port = sockets[0].getsockname()[1] if sockets else self.options.port

    async def stop(self) -> None:
        """Stop listening, end every session and flush the trace."""
        self._stopping = True
        if self.runner is not None:
            await self.runner.cleanup()
        if self.client is not None:
            await self.client.close()
        self.recorder.close(time.time())
        if self.recorder.writer is not None:
            self.recorder.writer.close()

    def _next(self) -> int:
        self._exchanges += 1
        return self._exchanges

    # ------------------------------------------------------------------ sessions

    def _session_key(
        self, exchange: _Exchange, response_headers: CIMultiDict[str] | None
    ) -> str | None:
        """Which session an exchange belongs to, or None when only the stream can tell."""
        sid = None
        if response_headers is not None:
            sid = response_headers.get("Mcp-Session-Id")
        sid = sid or _header(exchange.headers, "mcp-session-id")
        if sid:
            return sid
        query = parse_qs(urlsplit(exchange.path).query)
        legacy = query.get("sessionId") or query.get("session_id")
        if legacy:
            return f"sse-{legacy[0]}"
        if exchange.method == "GET" and exchange.transport == "pending":
            return None
        version = _header(exchange.headers, "mcp-protocol-version") or ""
        if version >= "2026-07-28" or META_VERSION.encode() in exchange.analyzed:
            # Stateless era: no session at all; group by client connection.
            return "stateless"
        return "http"

    def _emit(self, exchange: _Exchange, name: str, t: float, data: dict[str, Any]) -> None:
        if exchange.key is None:
            exchange.deferred.append((name, t, data))
            return
        self.recorder.event(exchange.key, name, t, data)

    def _frame(
        self, exchange: _Exchange, direction: str, raw: bytes, t: float, **meta: Any
    ) -> None:
        key = exchange.key or "http"
        self.recorder.feed_frame(
            key,
            direction,
            raw,
            t,
            transport=meta.pop("transport", "http"),
            meta={"exchange": exchange.number, **meta},
        )

    def _bind(self, exchange: _Exchange, key: str) -> None:
        exchange.key = key
        for name, t, data in exchange.deferred:
            self.recorder.event(key, name, t, data)
            if name == "http-request" and exchange.analyzed:
                self._frame(exchange, C2S, exchange.analyzed, t)
        exchange.deferred.clear()

    # ------------------------------------------------------------------ the handler

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Proxy one request to the upstream and stream the answer back."""
        t = time.time()
        body = await request.read()
        hop_by_hop = _hop_by_hop(request.headers)
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in hop_by_hop]
        path = request.raw_path
        exchange = _Exchange(
            self._next(),
            t,
            request.method,
            path,
            headers,
            body,
            "legacy-sse"
            if _is_legacy_post(request)
            else "pending"
            if request.method == "GET"
            else "streamable",
        )
        exchange.analyzed = _decoded(body, request.headers.get("Content-Encoding")) or body
        request_event = {
            "exchange": exchange.number,
            "method": request.method,
            "path": path,
            "headers": _shown_headers(headers, self.options.redact),
            "transport": exchange.transport if exchange.transport != "pending" else "streamable",
            "client": request.remote,
        }
        target = str(self.origin) + path
        assert self.client is not None
        try:
            upstream = await self.client.request(
                request.method,
                URL(target, encoded=True),
                headers=CIMultiDict(headers),
                data=body if body else None,
                allow_redirects=False,
            )
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            return self._unreachable(exchange, request_event, target, exc)
        try:
            return await self._relay_response(request, exchange, request_event, upstream)
        finally:
            upstream.release()

    def _unreachable(
        self, exchange: _Exchange, request_event: dict[str, Any], target: str, exc: BaseException
    ) -> web.Response:
        reason = str(exc) or type(exc).__name__
        exchange.key = self._session_key(exchange, None) or "http"
        self.recorder.event(exchange.key, "http-request", exchange.t, request_event)
        if exchange.analyzed:
            self._frame(exchange, C2S, exchange.analyzed, exchange.t)
        now = time.time()
        self.recorder.event(
            exchange.key,
            "upstream-unreachable",
            now,
            {"exchange": exchange.number, "url": target, "error": reason},
        )
        self.recorder.event(
            exchange.key,
            "http-end",
            now,
            {"exchange": exchange.number, "outcome": "upstream-unreachable"},
        )
        text = f"mcpsniff: the upstream server {target} is unreachable: {reason}\n"
        return web.Response(status=502, text=text, headers={"X-Mcpsniff": "upstream-unreachable"})

    async def _relay_response(
        self,
        request: web.Request,
        exchange: _Exchange,
        request_event: dict[str, Any],
        upstream: aiohttp.ClientResponse,
    ) -> web.StreamResponse:
        t_response = time.time()
        content_type = upstream.headers.get("Content-Type", "").split(";")[0].strip().lower()
        is_sse = content_type == "text/event-stream"
        if exchange.transport == "pending" and not is_sse:
            exchange.transport = "streamable"
        key = self._session_key(exchange, upstream.headers)
        if exchange.transport == "pending" and _header(exchange.headers, "mcp-session-id"):
            exchange.transport = "streamable"
        if key is not None and exchange.transport != "pending":
            exchange.key = key
        request_event["transport"] = (
            exchange.transport if exchange.transport != "pending" else "streamable"
        )
        self._emit(exchange, "http-request", exchange.t, request_event)
        if exchange.key is not None and exchange.analyzed:
            self._frame(exchange, C2S, exchange.analyzed, exchange.t)
        hop_by_hop = _hop_by_hop(upstream.headers)
        response_headers = [
            (k, v) for k, v in upstream.headers.items() if k.lower() not in hop_by_hop
        ]
        self._emit(
            exchange,
            "http-response",
            t_response,
            {
                "exchange": exchange.number,
                "status": upstream.status,
                "headers": _shown_headers(response_headers, self.options.redact),
            },
        )
        response = RelayedResponse(
            status=upstream.status,
            reason=upstream.reason,
            upstream_names={k.lower() for k, _ in response_headers},
        )
        for name, value in response_headers:
            response.headers.add(name, value)
        outcome = "complete"
        received = 0
        try:
            await response.prepare(request)
            if is_sse:
                received = await self._relay_sse(response, exchange, upstream)
            else:
                received = await self._relay_body(response, exchange, upstream)
            await response.write_eof()
        except (ConnectionResetError, aiohttp.ClientConnectionResetError):
            outcome = "client-disconnected"
        except asyncio.CancelledError:
            # aiohttp cancels the handler when the client goes away, and when the
            # proxy stops with the exchange still open (after SHUTDOWN_GRACE).
            outcome = "proxy-stopped" if self._stopping else "client-disconnected"
            self._finish(exchange, outcome, received)
            raise
        except (TimeoutError, aiohttp.ClientError) as exc:
            outcome = f"upstream-error: {exc}"
            # The upstream broke its response off: break ours off too. Returning
            # normally would end it cleanly (a last empty chunk), and the client
            # would take a cut-off body or stream for a complete one.
            if request.transport is not None:
                request.transport.abort()
        self._finish(exchange, outcome, received)
        return response

    def _finish(self, exchange: _Exchange, outcome: str, received: int) -> None:
        if exchange.key is None:
            self._bind(exchange, self._session_key(exchange, None) or "http")
        self._emit(
            exchange,
            "http-end",
            time.time(),
            {"exchange": exchange.number, "outcome": outcome, "body_bytes": received},
        )

    async def _relay_body(
        self, response: web.StreamResponse, exchange: _Exchange, upstream: aiohttp.ClientResponse
    ) -> int:
        copy = bytearray()
        received = 0
        truncated = False
        async for chunk in upstream.content.iter_any():
            await response.write(chunk)
            received += len(chunk)
            if len(copy) + len(chunk) <= ANALYZE_LIMIT:
                copy += chunk
            else:
                truncated = True
        # A legacy HTTP+SSE server acknowledges each POST with 202 and a body such
        # as "Accepted" (the reference SDKs do); its messages travel on the SSE
        # stream, so that body is not a JSON-RPC frame and is not analyzed as one
        # (it would be a JR-PARSE on every POST). Its size is in http-end.
        acknowledgement = exchange.transport == "legacy-sse" and upstream.status == 202
        if copy and not acknowledgement:
            body = _decoded(bytes(copy), upstream.headers.get("Content-Encoding"))
            meta: dict[str, Any] = {"status": upstream.status}
            if truncated:
                meta["truncated_at"] = ANALYZE_LIMIT
            if body is not None:
                self._frame(exchange, S2C, body, time.time(), **meta)
        return received

    async def _relay_sse(
        self, response: web.StreamResponse, exchange: _Exchange, upstream: aiohttp.ClientResponse
    ) -> int:
        parser = SseParser()
        received = 0
        index = 0
        held = bytearray()
        # A GET stream without a session id may be a legacy HTTP+SSE stream,
        # whose first event names the POST endpoint: hold bytes until it is whole.
        # Comments before it (padding against buffering proxies) are no events
        # and do not decide; they are recorded once the stream is decided.
        holding = exchange.key is None
        waiting: list[SseEvent] = []
        # A compressed stream is forwarded compressed; the events are parsed
        # (and recorded) from a decoded copy.
        decode = _stream_decoder(upstream.headers.get("Content-Encoding"))
        async for chunk in upstream.content.iter_any():
            received += len(chunk)
            events = parser.feed(chunk if decode is None else decode(chunk))
            if holding:
                waiting += events
                first = next((e for e in waiting if not _comment_only(e)), None)
                if decode is not None:
                    # Compressed bytes cannot be edited, and holding them until an
                    # event decodes whole would buffer the stream (a compressor may
                    # keep a whole event back): forward at once, decide the session
                    # from the first decoded event, leave an endpoint URL as it is.
                    await response.write(chunk)
                    if first is None:
                        continue
                    holding = False
                    self._first_event(exchange, b"", first, rewrite=False)
                else:
                    held += chunk
                    if first is None and len(held) < 1 << 20:
                        continue
                    holding = False
                    await response.write(self._first_event(exchange, bytes(held), first))
                events, waiting = waiting, []
            else:
                await response.write(chunk)
            for event in events:
                self._sse_event(exchange, event, index)
                index += 1
        tail = parser.feed(decode(b"", final=True)) if decode is not None else []
        tail += parser.flush()
        if holding:
            if held:
                await response.write(bytes(held))
            tail = waiting + tail
        for event in tail:
            self._sse_event(exchange, event, index)
            index += 1
        return received

    def _first_event(
        self, exchange: _Exchange, held: bytes, event: SseEvent | None, rewrite: bool = True
    ) -> bytes:
        """Decide the session of a GET stream from its first event; rewrite the endpoint."""
        if event is not None and event.event == "endpoint" and event.data:
            exchange.transport = "legacy-sse"
            for name, _t, data in exchange.deferred:
                if name == "http-request":
                    data["transport"] = "legacy-sse"
            endpoint = event.data.strip()
            self._bind(exchange, _legacy_key(exchange, endpoint))
            absolute = URL(endpoint)
            if rewrite and absolute.is_absolute() and absolute.origin() == self.origin:
                rewritten = self.public_origin + absolute.raw_path_qs
                held = held.replace(endpoint.encode(), rewritten.encode(), 1)
                self.recorder.event(
                    exchange.key or "http",
                    "endpoint-rewrite",
                    time.time(),
                    {"exchange": exchange.number, "from": endpoint, "to": rewritten},
                )
            return held
        exchange.transport = "streamable"
        for name, _t, data in exchange.deferred:
            if name == "http-request":
                data["transport"] = "streamable"
        self._bind(exchange, self._session_key(exchange, None) or "http")
        return held

    def _sse_event(self, exchange: _Exchange, event: SseEvent, index: int) -> None:
        t = time.time()
        data: dict[str, Any] = {"exchange": exchange.number, "index": index}
        if event.id is not None:
            data["id"] = event.id
        if event.event is not None:
            data["event"] = event.event
        if event.retry is not None:
            data["retry"] = event.retry
        if event.incomplete:
            data["incomplete"] = True
        if _comment_only(event):
            data["comment_only"] = True
        self._emit(exchange, "sse-event", t, data)
        if event.data and event.event != "endpoint":
            meta: dict[str, Any] = {"sse_index": index}
            if event.id is not None:
                meta["sse_id"] = event.id
            self._frame(exchange, S2C, event.data.encode("utf-8"), t, transport="sse", **meta)
        elif (
            event.event == "endpoint"
            and event.data
            and exchange.method == "GET"
            and exchange.transport == "streamable"
            and not _header(exchange.headers, "mcp-session-id")
        ):
            # A legacy stream that sent something before its endpoint event (the
            # rules report SSE-ENDPOINT-EVENT on this sse-event, in the session the
            # stream was put in). What follows on it answers the POSTs sent to this
            # endpoint, so it belongs to the session the endpoint names, or no
            # answer would pair with its request. (Its bytes are already on their
            # way, so an absolute URL here is not rewritten.)
            exchange.transport = "legacy-sse"
            exchange.key = _legacy_key(exchange, event.data.strip())


def _comment_only(event: SseEvent) -> bool:
    """Whether an SSE block held only comments (or unknown fields): no event for a client."""
    return event.data is None and event.event is None and event.id is None and event.retry is None


def _legacy_key(exchange: _Exchange, endpoint: str) -> str:
    """The session of a legacy stream: the session id its endpoint URL names."""
    query = parse_qs(urlsplit(endpoint).query)
    session_id = (query.get("sessionId") or query.get("session_id") or [None])[0]
    return f"sse-{session_id}" if session_id else f"sse-{exchange.number}"


def _is_legacy_post(request: web.Request) -> bool:
    return (
        request.method == "POST"
        and "Mcp-Session-Id" not in request.headers
        and ("sessionId" in request.query or "session_id" in request.query)
    )


def _stream_decoder(encoding: str | None) -> Callable[..., bytes] | None:
    """Incremental decoding of a compressed stream for the analyzer (None: not compressed).

    ``decode(chunk)`` returns what ``chunk`` decodes to so far; ``decode(b"", final=True)``
    the rest. An encoding it cannot decode (br, a corrupt stream) yields nothing.
    """
    name = (encoding or "").strip().lower()
    if name in ("", "identity"):
        return None
    # 32 + MAX_WBITS: a gzip or a zlib header, whichever the stream has.
    zstream = (
        zlib.decompressobj(32 + zlib.MAX_WBITS) if name in ("gzip", "x-gzip", "deflate") else None
    )
    failed = zstream is None

    def decode(chunk: bytes, final: bool = False) -> bytes:
        nonlocal failed
        if failed or zstream is None:
            return b""
        try:
            return zstream.flush() if final else zstream.decompress(chunk)
        except zlib.error:
            failed = True
            return b""

    return decode


def _hop_by_hop(headers: CIMultiDictProxy[str]) -> frozenset[str]:
    """HOP_BY_HOP plus the header names a Connection header lists (RFC 9110 §7.6.1)."""
    listed = {
        token.strip().lower()
        for value in headers.getall("Connection", [])
        for token in value.split(",")
    }
    return HOP_BY_HOP | listed


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def _shown_headers(headers: list[tuple[str, str]], redact: bool) -> list[list[str]]:
    pairs = redact_headers(headers) if redact else headers
    return [[k, v] for k, v in pairs]


def _decoded(body: bytes, encoding: str | None) -> bytes | None:
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
    except Exception:
        return body
    return body


async def serve(
    options: HttpOptions,
    writer: TraceWriter | None,
    *,
    show: Callable[[Record], None] | None = None,
    show_flush: Callable[[], None] | None = None,
    announce: Callable[[HttpRelay], None] | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Run the proxy until SIGINT/SIGTERM (or ``stop`` is set)."""
    relay = HttpRelay(options, writer, show, show_flush)
    await relay.start()
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    if announce is not None:
        announce(relay)
    try:
        await stop.wait()
    finally:
        await relay.stop()
