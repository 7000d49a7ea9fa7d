"""``mcpsniff http --upstream URL``: a recording reverse proxy for MCP over HTTP.

It serves Streamable HTTP (2025-03-26 and later) and the legacy HTTP+SSE
transport (2024-11-05) on any path, passing method, path, query, status,
headers and bodies unchanged (hop-by-hop headers excepted) and streaming
responses chunk by chunk, so SSE events reach the client as they arrive.
Compressed bodies are forwarded compressed; the analyzer gets a decoded copy.

The shell only moves bytes; what each exchange means to the analyzer is
described by ``mcpsniff/relay/exchange.py``, shared with the mitmproxy addon
(the transport events are documented in ``mcpsniff/core/rules/http.py``). It
never answers in the server's place, except with 502 when the upstream cannot
be reached.
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from mcpsniff.core.model import Record
from mcpsniff.relay.exchange import ExchangeRecorder, HttpObserver, end_to_end
from mcpsniff.relay.recorder import Recorder
from mcpsniff.relay.remote_recorder import RemoteRecorder
from mcpsniff.trace.format import TraceWriter

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 6280
CLIENT_MAX_SIZE = 1 << 30
#: Seconds a stopping proxy lets in-flight exchanges finish before it cuts them
#: off. Long-lived SSE streams never finish on their own; aiohttp's default
#: (60 s) made Ctrl-C hang for a minute whenever a client held a stream open.
SHUTDOWN_GRACE = 2.0
#: Most bytes of a session-less GET stream held back while waiting for its first
#: event (a legacy endpoint to rewrite) before they are forwarded as they are.
HOLD_LIMIT = 1 << 20
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


class HttpRelay:
    """The aiohttp application: one handler for every method and path."""

    def __init__(
        self,
        options: HttpOptions,
        writer: TraceWriter | None,
        show: Callable[[Record], None] | None = None,
        show_flush: Callable[[], None] | None = None,
        recorder: RemoteRecorder | None = None,
    ) -> None:
        self.options = options
        upstream = URL(options.upstream)
        if upstream.scheme not in ("http", "https") or not upstream.host:
            raise ValueError(f"--upstream must be an http(s) URL, not {options.upstream!r}")
        self.upstream = upstream
        self.origin = upstream.origin()
        #: Analysis and trace writing: in this process (a ``Recorder``), or in
        #: the forked analysis process (a ``RemoteRecorder``, what the CLI uses).
        self.recorder: Recorder | RemoteRecorder
        if recorder is None:
            self.recorder = Recorder(writer, "http", redact=options.redact)
            if show is not None:
                self.recorder.listeners.append(show)
            if show_flush is not None:
                self.recorder.batch_listeners.append(show_flush)
        else:
            self.recorder = recorder
        self.observer = HttpObserver(self.recorder, redact=options.redact)  # type: ignore[arg-type]
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

    def _cut_short(self) -> str:
        """The outcome of an exchange whose handler was cancelled."""
        # aiohttp cancels the handler when the client goes away, and when the
        # proxy stops with the exchange still open (after SHUTDOWN_GRACE).
        return "proxy-stopped" if self._stopping else "client-disconnected"

    # ------------------------------------------------------------------ the handler

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Proxy one request to the upstream and stream the answer back."""
        t = time.time()
        body = await request.read()
        path = request.raw_path
        exchange = self.observer.begin(
            request.method,
            path,
            list(request.headers.items()),
            body,
            t=t,
            client=request.remote,
        )
        target = str(self.origin) + path
        assert self.client is not None
        try:
            upstream = await self.client.request(
                request.method,
                URL(target, encoded=True),
                headers=CIMultiDict(exchange.headers),
                data=body if body else None,
                allow_redirects=False,
            )
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            reason = str(exc) or type(exc).__name__
            exchange.unreachable(target, reason)
            text = f"mcpsniff: the upstream server {target} is unreachable: {reason}\n"
            return web.Response(
                status=502, text=text, headers={"X-Mcpsniff": "upstream-unreachable"}
            )
        except asyncio.CancelledError:
            exchange.finish(self._cut_short(), whole=False)
            raise
        try:
            return await self._relay_response(request, exchange, upstream)
        finally:
            upstream.release()

    async def _relay_response(
        self,
        request: web.Request,
        exchange: ExchangeRecorder,
        upstream: aiohttp.ClientResponse,
    ) -> web.StreamResponse:
        head = list(upstream.headers.items())
        forwarded = end_to_end(head)
        response = RelayedResponse(
            status=upstream.status,
            reason=upstream.reason,
            upstream_names={k.lower() for k, _ in forwarded},
        )
        for name, value in forwarded:
            response.headers.add(name, value)
        outcome = "complete"
        whole = True
        try:
            try:
                await response.prepare(request)
            finally:
                # Forward first, observe second: recording the head analyzes the
                # request too, so it waits until the head is on its way.
                exchange.response(upstream.status, head)
            await self._relay_body(response, exchange, upstream)
            await response.write_eof()
        except (ConnectionResetError, aiohttp.ClientConnectionResetError):
            outcome, whole = "client-disconnected", False
        except asyncio.CancelledError:
            exchange.finish(self._cut_short(), whole=False)
            raise
        except (TimeoutError, aiohttp.ClientError) as exc:
            outcome = f"upstream-error: {exc}"
            # The upstream broke its response off: break ours off too. Returning
            # normally would end it cleanly (a last empty chunk), and the client
            # would take a cut-off body or stream for a complete one.
            if request.transport is not None:
                request.transport.abort()
        exchange.finish(outcome, whole=whole)
        return response

    async def _relay_body(
        self,
        response: web.StreamResponse,
        exchange: ExchangeRecorder,
        upstream: aiohttp.ClientResponse,
    ) -> None:
        """Forward the body chunk by chunk, each to the analyzer once it is on its way.

        A session-less GET stream may be a legacy HTTP+SSE stream, whose first
        event names the POST endpoint: its bytes are held until that event is
        whole, so that an endpoint pointing at the upstream can be rewritten.
        """
        held = bytearray()
        holding = exchange.endpoint_editable
        async for chunk in upstream.content.iter_any():
            if not holding:
                await response.write(chunk)
                exchange.body_chunk(chunk)
                continue
            held += chunk
            exchange.body_chunk(chunk)  # decides the session at the first event
            if exchange.waiting_for_first_event and len(held) < HOLD_LIMIT:
                continue
            holding = False
            if exchange.waiting_for_first_event:
                # No event within HOLD_LIMIT (comments only): not held any longer.
                exchange.first_event(None)
            await response.write(self._rewrite_endpoint(exchange, bytes(held)))
            held.clear()
        if held:
            await response.write(bytes(held))

    def _rewrite_endpoint(self, exchange: ExchangeRecorder, held: bytes) -> bytes:
        """Point a legacy endpoint URL naming the upstream at the proxy instead.

        Otherwise the client would POST to the upstream directly, past mcpsniff.
        """
        endpoint = exchange.endpoint
        if endpoint is None:
            return held
        absolute = URL(endpoint)
        if not absolute.is_absolute() or absolute.origin() != self.origin:
            return held
        rewritten = self.public_origin + absolute.raw_path_qs
        exchange.note("endpoint-rewrite", {"from": endpoint, "to": rewritten})
        return held.replace(endpoint.encode(), rewritten.encode(), 1)


async def serve(
    options: HttpOptions,
    writer: TraceWriter | None,
    *,
    show: Callable[[Record], None] | None = None,
    show_flush: Callable[[], None] | None = None,
    announce: Callable[[HttpRelay], None] | None = None,
    stop: asyncio.Event | None = None,
    recorder: RemoteRecorder | None = None,
) -> None:
    """Run the proxy until SIGINT/SIGTERM (or ``stop`` is set).

    With ``recorder``, the analysis runs in its analysis process; ``serve``
    returns once that process has finished the trace, even when the proxy
    could not start.
    """
    if recorder is not None:
        recorder.attach(asyncio.get_running_loop())
    try:
        relay = HttpRelay(options, writer, show, show_flush, recorder)
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
    finally:
        if recorder is not None:
            await recorder.finish()
