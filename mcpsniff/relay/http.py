"""``mcpsniff http --upstream URL``: a recording reverse proxy for MCP over HTTP.

It serves Streamable HTTP (2025-03-26 and later) and the legacy HTTP+SSE
transport (2024-11-05) on any path, passing method, path, query, status,
headers and bodies unchanged (hop-by-hop headers excepted) and streaming
responses chunk by chunk, so SSE events reach the client as they arrive.
Compressed bodies are forwarded compressed; the analyzer gets a decoded copy.

The shell only moves bytes (``intercept/http_wire.py``) and notes what happens to each
exchange (``remote_exchange``), as observations sent down the capture channel
(``mcpsniff.capture.channel``); what that means to the analyzer is worked out
in its analysis process (``mcpsniff.capture.worker``) by
``mcpsniff/core/http/``, shared with the mitmproxy addon (the
transport events are documented in ``mcpsniff/core/rules/http.py``). It
never answers in the server's place,
except with 502 when the upstream cannot be reached, and, asked for with
``--guard enforce``, a ``tools/call`` the guard refuses (``intercept/http_gate.py``).
The one deliberate change to forwarded bytes is the legacy ``endpoint`` event:
an absolute URL pointing at the upstream is rewritten to the proxy's own
address so that the client keeps talking through mcpsniff, and the trace
records the rewrite.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from yarl import URL

from mcpsniff.capture.analysis_process import TRACE_INCOMPLETE, AnalysisProcess
from mcpsniff.capture.channel import Capture, InProcess
from mcpsniff.capture.recorder import TraceRecorder
from mcpsniff.capture.remote_exchange import RemoteExchange, RemoteObserver
from mcpsniff.capture.sinks import Outputs
from mcpsniff.capture.supervisor import Forwarded, Supervisor
from mcpsniff.capture.worker import fork_analysis
from mcpsniff.core.http.adapter import ObservationAdapter
from mcpsniff.core.http.session_keys import RELAY_SESSION
from mcpsniff.core.model import Record
from mcpsniff.core.observations import HttpRefused
from mcpsniff.core.redact import redact_query
from mcpsniff.faults.spec import Fault
from mcpsniff.guard.enforce import EnforcePolicy, Gates
from mcpsniff.http1.events import RequestHead
from mcpsniff.intercept.http_gate import HttpGate
from mcpsniff.intercept.http_wire import ClientSide
from mcpsniff.net.listen_address import is_loopback, parse_listen_address, wildcard_warning
from mcpsniff.relay import event_loop
from mcpsniff.relay.event_loop import Spinner
from mcpsniff.trace.paths import TraceOpenError, open_trace_file
from mcpsniff.trace.salvage import TracePlace
from mcpsniff.trace.writer import TraceWriter

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 6280
#: Seconds a stopping proxy lets in-flight exchanges finish before it cuts them
#: off. Long-lived SSE streams never finish on their own.
SHUTDOWN_GRACE = 2.0
#: Most bytes of a session-less GET stream held back while waiting for its first
#: event (a legacy endpoint to rewrite) before they are forwarded as they are.
HOLD_LIMIT = 1 << 20
#: Longest such a hold lasts. Legacy servers send their endpoint event at once;
#: a stream that opens with keep-alive comments goes on after this.
HOLD_SECONDS = 1.0
#: Seconds a client has to send a whole request head (from the connection's
#: opening, or from the head's first byte), as nginx's client_header_timeout
#: (60 s) or Apache's RequestReadTimeout (20-40 s) bound slow heads.
HEAD_TIMEOUT = 30.0
#: Seconds a client may stay silent between requests, or in the middle of a
#: request body (aiohttp's server keeps idle connections 75 s, nginx 75 s).
IDLE_TIMEOUT = 75.0
#: Most bytes of one request body analyzed; a bigger body is forwarded whole and
#: recorded as a capture gap (its request line, path, status and sizes still
#: reach the trace).
CAPTURE_LIMIT = 64 << 20
#: Most bytes of observations queued for the analysis process before the relay
#: drops copies (and the trace records a capture gap): with the capture limit,
#: what bounds the proxy's memory, whatever the traffic.
BACKLOG_LIMIT = 64 << 20


@dataclass
class HttpOptions:
    """What ``mcpsniff http`` was asked to do."""

    upstream: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    #: A --trace value: a file, a pattern or a directory (see mcpsniff.trace.paths).
    trace: Path | str | None = None
    show: bool = False
    redact: bool = True
    #: Poll instead of sleeping for a moment while a request is alone (``event_loop``).
    busy_poll: bool = True
    #: Forward the Host field as the client sent it, even when it names the proxy.
    keep_host: bool = False
    #: What the analysis feeds besides the trace (``mcpsniff.capture.sinks``).
    outputs: Outputs = field(default_factory=Outputs)
    head_timeout: float = HEAD_TIMEOUT
    idle_timeout: float = IDLE_TIMEOUT
    capture_limit: int = CAPTURE_LIMIT
    #: Most client connections at once (None: as many as the descriptors allow).
    max_connections: int | None = None
    #: ``--guard enforce``: what the relay refuses to forward (None: a transparent recorder).
    guard: EnforcePolicy | None = None

    #: Faults to inject (``mcpsniff.faults``); empty: a transparent relay.
    faults: list[Fault] = field(default_factory=list)


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything else starts (so that a port in
    use fails before a trace file or an analysis process exists)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    # One socket: for a name with both (localhost), the IPv4 address, which every
    # client tries (a client that resolves localhost to ::1 first falls back to it).
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(1024)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def max_connections() -> int:
    """How many client connections the descriptors allow (two each, and some to spare)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY or soft <= 0:
            soft = 1 << 16
    except (ImportError, ValueError, OSError):
        soft = 1024
    return max(8, (soft - 64) // 2)


def mcp_path(upstream: str) -> str:
    """The MCP endpoint's path: the path of ``--upstream`` (exchanges elsewhere are plain)."""
    return URL(upstream).raw_path or "/"


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` or ``PORT`` into a host and port (0-65535; 0: any free port).

    The whole address is checked by ``parse_listen_address`` (the one other listeners use),
    so ``[::1`` is refused instead of being split at its last colon into host ``[:``; a
    missing host is loopback. Raises ``ValueError`` with a one-line reason.
    """
    text = value.strip()
    if text.isascii() and text.isdigit():
        text = f"{DEFAULT_HOST}:{text}"
    elif text.startswith(":") and text[1:].isascii() and text[1:].isdigit():
        text = DEFAULT_HOST + text
    return parse_listen_address(text, "--listen")


def parse_upstream(text: str) -> URL:
    """The ``--upstream`` URL, checked whole; ``ValueError`` with a one-line reason if invalid."""
    try:
        upstream = URL(text)
        upstream.port  # noqa: B018 - yarl checks the port when it is read
    except ValueError as exc:
        raise ValueError(f"--upstream is no valid URL: {exc}") from None
    if upstream.scheme not in ("http", "https") or not upstream.host:
        raise ValueError(f"--upstream must be an http(s) URL, not {text!r}")
    return upstream


class HttpRelay:
    """The proxy: a listening socket whose connections are relayed by ``intercept/http_wire.py``."""

    def __init__(
        self,
        options: HttpOptions,
        writer: TraceWriter | None,
        show: Callable[[Record], None] | None = None,
        show_flush: Callable[[], None] | None = None,
        capture: Capture | None = None,
        show_close: Callable[[], None] | None = None,
    ) -> None:
        self.options = options
        upstream = parse_upstream(options.upstream)
        self.upstream = upstream
        self.origin = upstream.origin()
        self.upstream_host: str = upstream.host
        self.upstream_port: int = upstream.port or (443 if upstream.scheme == "https" else 80)
        self.ssl_context: ssl.SSLContext | None = (
            ssl.create_default_context() if upstream.scheme == "https" else None
        )
        self._origin_text = str(self.origin)
        host = upstream.raw_host or ""
        host = f"[{host}]" if ":" in host else host
        #: The upstream as a Host field value (RFC 9110 §7.2: host and any explicit port).
        self.upstream_authority = host + (
            f":{upstream.explicit_port}" if upstream.explicit_port else ""
        )
        self._host_line = b"Host: " + self.upstream_authority.encode("ascii")  # punycode
        #: Host values that name this proxy (filled in once it listens).
        self.own_authorities: frozenset[str] = frozenset()
        #: The trace, when this process writes it (no analysis process).
        self.writer = writer
        #: Where observations go: the channel to the analysis process (what
        #: ``run_http`` uses), or a replay in this process.
        self.capture: Capture
        if capture is None:
            recorder = (
                TraceRecorder(writer, "http", redact=options.redact)
                .attach_sinks(options.outputs)
                .attach_display(show, show_flush, show_close)
            )
            self.capture = InProcess(adapter(recorder, options).apply)
        else:
            self.capture = capture
        # The relay only notes what happens to each exchange (``remote_exchange``).
        self.observer = RemoteObserver(self.capture.send, mcp_path(options.upstream))
        self.server: asyncio.Server | None = None
        self.port: int | None = None
        self.connections: set[ClientSide] = set()
        #: Most client connections at once (each holds two descriptors, with its
        #: upstream one): past it, the oldest one still waiting for its head goes.
        self.max_connections = options.max_connections or max_connections()
        self.hold_limit = HOLD_LIMIT
        self.hold_seconds = HOLD_SECONDS
        #: ``--guard enforce``: each POST held to its end, judged (``intercept/http_gate.py``).
        self.gate = HttpGate(Gates(options.guard)) if options.guard is not None else None
        #: Busy polling after activity while one client talks alone.
        self.spinner: Spinner | None = None
        #: The connection that forwarded a whole message last.
        self.last_forwarder: ClientSide | None = None
        #: Set once stop() begins: exchanges cut off after that were cut off by us.
        self.stopping = False
        self._sweeper: asyncio.Task[None] | None = None

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

    async def start(self, sock: socket.socket | None = None) -> None:
        """Listen (on ``sock`` when the caller bound it already) and start the timeouts."""
        loop = asyncio.get_running_loop()
        if self.options.busy_poll:
            self.spinner = Spinner(loop)
        factory: Callable[[], ClientSide] = lambda: ClientSide(self)  # noqa: E731
        if self.options.faults:
            # --fault: connections that judge each message (intercept/http_faults.py).
            from mcpsniff.intercept.http_faults import faulted_factory

            factory = faulted_factory(self, self.options.faults, verbatim=not self.options.redact)
        if sock is not None:
            self.server = await loop.create_server(factory, sock=sock)
        else:
            self.server = await loop.create_server(factory, self.options.host, self.options.port)
        sockets = self.server.sockets
        self.port = sockets[0].getsockname()[1] if sockets else self.options.port
        host = self.options.host.lower()
        names = {host}
        if is_loopback(host) or host in ("0.0.0.0", "::", "[::]", ""):
            # On a wildcard address a local client names it by loopback too.
            names |= {"localhost", "127.0.0.1", "[::1]", "::1"}
        self.own_authorities = frozenset(
            f"[{n}]:{self.port}" if ":" in n and not n.startswith("[") else f"{n}:{self.port}"
            for n in names
        )
        upstream_authority = f"{self.upstream_host.lower()}:{self.upstream_port}"
        if upstream_authority in self.own_authorities or (
            host in ("0.0.0.0", "::", "")
            and self.upstream_port == self.port
            and is_loopback(self.upstream_host)
        ):
            # Every request would open another connection to itself, without end.
            self.server.close()
            raise ValueError(f"--upstream {self.options.upstream} is this proxy itself")
        self._sweeper = loop.create_task(self._expire_connections())

    async def _expire_connections(self) -> None:
        """Close the connections that waited too long (see ``ClientSide.expire``)."""
        options = self.options
        period = min(1.0, options.head_timeout / 4, options.idle_timeout / 4)
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            for connection in list(self.connections):
                try:
                    connection.expire(now, options.head_timeout, options.idle_timeout)
                except Exception:  # one connection's trouble must not end the timeouts
                    connection.cut_off()

    def make_room(self, newcomer: ClientSide) -> None:
        """Too many connections: close the oldest one still sending its head, or the newcomer.

        Slow heads (slowloris) must not take every descriptor from the clients
        that send whole requests: they go first, with 408, and are recorded.
        """
        waiting = [c for c in self.connections if c.head_started is not None and not c.exchanges]
        if waiting:
            oldest = min(waiting, key=lambda c: c.head_started or 0.0)
            self.refused(oldest.peer, "too-many-connections", "oldest slow head closed")
            oldest.refuse(408, "too many connections: this one was the slowest to send its head")
            self.connections.discard(oldest)
            return
        self.refused(newcomer.peer, "too-many-connections", "new connection closed")
        if newcomer.transport is not None:
            newcomer.transport.close()

    def refused(self, client: str | None, kind: str, reason: str) -> None:
        """Record what the relay refused or cut that belongs to no exchange."""
        self.observer.sink(HttpRefused(time.time(), kind, reason, client))

    async def stop(self) -> None:
        """Stop listening, let open exchanges finish (for a while), end every session."""
        self.stopping = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        if self.server is not None:
            self.server.close()
        deadline = time.monotonic() + SHUTDOWN_GRACE
        while True:
            busy = [c for c in list(self.connections) if not c.close_if_idle()]
            if not busy or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.02)
        for connection in list(self.connections):
            connection.cut_off()
        await asyncio.sleep(0)  # let the transports' connection_lost callbacks run
        self.capture.end(time.time())
        if self.writer is not None:
            self.writer.close()

    def forwarded(self, connection: ClientSide) -> None:
        """A whole request or response of ``connection`` went on: poll for what follows?

        Only when one client is talking alone (its request went upstream and
        its response came back, with no other connection forwarding in
        between) does polling pay (see ``event_loop``): with more clients the
        loop has work enough, and spinning would take the peers' CPU.
        """
        spinner = self.spinner
        if spinner is None:
            return
        if connection is self.last_forwarder:
            spinner.kick()
        else:
            self.last_forwarder = connection

    def host_line(self, head: RequestHead) -> tuple[int, bytes] | None:
        """The Host field to send instead of the client's, if any.

        A client that uses the printed URL names the proxy in Host
        (``127.0.0.1:6280``); the upstream gets its own name instead, as from
        a direct client, or a server that routes by name (most https ones)
        would not know the request. Any other Host passes unchanged, so a
        DNS-rebinding request (``Host: evil.example``) still reaches the
        server as it was sent, and the server still refuses it.
        """
        if self.options.keep_host:
            return None
        try:
            index = head.names.index("host")
        except ValueError:
            return None
        if head.headers[index][1].strip().lower() not in self.own_authorities:
            return None
        return index, self._host_line

    def target(self, path: str) -> str:
        """The upstream URL a request for ``path`` goes to."""
        return self._origin_text + path

    def rewrite_endpoint(self, exchange: RemoteExchange, held: bytes) -> bytes:
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
        exchange.endpoint_rewritten(endpoint, rewritten)
        return held.replace(endpoint.encode(), rewritten.encode(), 1)


def adapter(recorder: TraceRecorder, options: HttpOptions) -> ObservationAdapter:
    """The HTTP-to-MCP adapter that replays this relay's observations into ``recorder``."""
    return ObservationAdapter(
        recorder,
        redact=options.redact,
        mcp_path=mcp_path(options.upstream),
        capture_limit=options.capture_limit,
    )


async def serve(
    options: HttpOptions,
    writer: TraceWriter | None,
    *,
    show: Callable[[Record], None] | None = None,
    show_flush: Callable[[], None] | None = None,
    show_close: Callable[[], None] | None = None,
    announce: Callable[[HttpRelay], None] | None = None,
    stop: asyncio.Event | None = None,
    analysis: AnalysisProcess | None = None,
    sock: socket.socket | None = None,
    warn: Callable[[str], None] | None = None,
    place: TracePlace | None = None,
) -> int:
    """Run the proxy until SIGINT/SIGTERM (or ``stop`` is set).

    With ``analysis``, the analysis runs in that process; ``serve`` returns
    once it has finished the trace, even when the proxy could not start, with
    its exit status (0 without one). Should it die first, the trace at
    ``place`` is completed here (``mcpsniff.trace.salvage``).
    """
    capture = None
    relay: HttpRelay | None = None
    status = 0
    supervisor: Supervisor | None = None
    if analysis is not None:
        capture = analysis.channel
        capture.attach(asyncio.get_running_loop())
        # Should the analysis process die, the exchanges it missed are the gap.
        supervisor = Supervisor(
            analysis,
            place,
            Forwarded(
                RELAY_SESSION,
                lambda: {"exchanges": relay.observer.numbered if relay is not None else 0},
            ),
            lambda text: _tell(warn, f"mcpsniff http: warning: {text}"),
        )
        capture.on_broken = supervisor.pipe_broke
    try:
        relay = HttpRelay(options, writer, show, show_flush, capture, show_close)
        await relay.start(sock)
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
        if analysis is not None and supervisor is not None:
            status = await analysis.finish(warn)
            # The analysis process warns itself when the trace is incomplete (3);
            # had it died, the supervisor completes the trace: either way, what
            # the command reports is the trace's state.
            if await supervisor.settle(status):
                status = TRACE_INCOMPLETE
    return status


def _tell(warn: Callable[[str], None] | None, text: str) -> None:
    if warn is not None:
        warn(text)


class StartError(Exception):
    """``mcpsniff http`` cannot start; the one-line reason."""


def run_http(
    options: HttpOptions,
    *,
    announce: Callable[[HttpRelay, Path], None] | None = None,
    warn: Callable[[str], None] | None = None,
    show: Callable[[Record], None] | None = None,
    show_flush: Callable[[], None] | None = None,
    show_close: Callable[[], None] | None = None,
) -> int:
    """``mcpsniff http``: bind, open the trace, fork the analysis, proxy until stopped.

    Returns the analysis process's exit status (3: the trace is incomplete);
    raises ``StartError`` when it cannot start. ``warn`` gets the notes the
    user should see (escaped by the caller).
    """
    if not options.upstream.startswith(("http://", "https://")):
        raise StartError(f"--upstream must be an http:// or https:// URL, not {options.upstream!r}")
    try:
        # Checked before anything is bound or created: a refused start leaves nothing.
        parse_upstream(options.upstream)
    except ValueError as exc:
        raise StartError(str(exc)) from None
    listen = f"{options.host}:{options.port}"
    try:
        # Bound before the trace and the analysis process exist: a port in use
        # leaves nothing behind, and the same --trace works on a retry.
        sock = bind(options.host, options.port)
    except OSError as exc:
        raise StartError(f"cannot listen on {listen}: {exc.strerror or exc}") from None
    meta = {
        "source": "mcpsniff http",
        "upstream": redact_query(options.upstream) if options.redact else options.upstream,
        "redacted": options.redact,
        # What the upstream got as Host when the client's named the proxy.
        "host_header": "as sent" if options.keep_host else "upstream's",
    }
    try:
        opened = open_trace_file(options.trace, name="http", meta=meta)
    except TraceOpenError as exc:
        sock.close()
        raise StartError(str(exc)) from None
    place = TracePlace.after_header(opened.writer)
    if opened.note and warn is not None:
        warn(f"mcpsniff http: warning: {opened.note}")
    warning = wildcard_warning(options.host, "can use the proxy and the server behind it")
    if warning and warn is not None:
        warn(f"mcpsniff http: {warning}")
    try:
        # Recording only, the analysis runs on CPU nobody else wants: under load the
        # proxy keeps the cores and the analysis catches up in the pauses. With
        # --show the user is watching it live, so it keeps a (low) share instead.
        analysis = fork_analysis(
            opened.writer,
            "http",
            lambda recorder: adapter(recorder, options),
            limit=BACKLOG_LIMIT,
            redact=options.redact,
            outputs=options.outputs,
            show=show,
            show_flush=show_flush,
            show_close=show_close,
            warn=warn,
            idle=not options.show,
            in_child=sock.close,  # the listening socket is the relay's alone
            history_label=f"http:{meta['upstream']}",
        )
    except OSError as exc:
        opened.writer.close()
        sock.close()
        raise StartError(f"cannot start the analysis process: {exc.strerror or exc}") from None
    # The trace belongs to the analysis process now (fork_analysis closed it here).
    path = opened.path

    def announced(relay: HttpRelay) -> None:
        if announce is not None:
            announce(relay, path)

    try:
        return event_loop.run(
            serve(
                options,
                None,
                announce=announced,
                analysis=analysis,
                sock=sock,
                warn=warn,
                place=place,
            )
        )
    except OSError as exc:
        raise StartError(f"cannot listen on {listen}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise StartError(str(exc)) from None
