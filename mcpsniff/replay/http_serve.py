"""``replay serve --http``: the recording answers Streamable HTTP POSTs, as it was recorded.

Each POST is answered the way the recorded server answered the matching
request: an SSE stream or a JSON body, with the recorded status and the
recorded ``Mcp-Session-Id``. POSTs holding only notifications or answers get
``202 Accepted``. Recordings made over stdio are served as JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import uuid
from collections.abc import Callable, Sequence

from aiohttp import web

from mcpsniff.capture.channel import InProcess
from mcpsniff.core.model import C2S, S2C
from mcpsniff.faults.spec import Fault
from mcpsniff.net.listen_address import parse_listen_address
from mcpsniff.relay.http import HttpOptions, HttpRelay, adapter
from mcpsniff.replay import safejson
from mcpsniff.replay.plan import RecordedExchange
from mcpsniff.replay.script import Frame
from mcpsniff.replay.serve import FRAME_LIMIT, ReplayServer
from mcpsniff.replay.tap import Tap

SESSION_HEADER = "Mcp-Session-Id"


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port); port 0 picks a free port. ``ValueError`` when malformed."""
    return parse_listen_address(text, "--http")


class HttpReplay:
    """The aiohttp handlers around the replay servers, one per client session.

    Each client that initializes gets a session id of its own, as from a real
    server, and a ``ReplayServer`` of its own, so two clients can each be
    served the whole recording. Requests without a session share one server.
    """

    def __init__(self, make_server: Callable[[], ReplayServer], tap: Tap) -> None:
        self.make_server = make_server
        self.server = make_server()
        self.tap = tap
        self.sessions: dict[str, ReplayServer] = {}
        self.frames: dict[int, Frame] = {f.seq: f for f in self.server.script.frames}

    def _recorded(self, exchange: RecordedExchange | None) -> tuple[bool, int, bool]:
        """(as SSE, status, whether it assigned a session id) of the recorded answer."""
        if exchange is None or exchange.response is None:
            return False, 200, False
        frame = self.frames.get(exchange.response.frame)
        if frame is None:
            return False, 200, False
        sse = frame.transport == "sse"
        data = self.server.script.http_responses.get(frame.exchange or -1, {})
        status = data.get("status") if isinstance(data.get("status"), int) else 200
        assigned = any(
            isinstance(pair, list) and len(pair) == 2 and str(pair[0]).lower() == "mcp-session-id"
            for pair in data.get("headers") or []
        )
        return sse, status, assigned

    def _server_for(self, request: web.Request, body: bytes) -> tuple[ReplayServer, str | None]:
        """The replay server of this client's session, and its session id."""
        sid = request.headers.get(SESSION_HEADER)
        if sid is not None and sid in self.sessions:
            return self.sessions[sid], sid
        if _initializes(body):
            server = self.make_server()
            _sse, _status, assigned = self._recorded(server.peek(body))
            if assigned:
                sid = str(uuid.uuid4())
                self.sessions[sid] = server
                return server, sid
        return self.server, None

    async def post(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        server, session = self._server_for(request, body)
        tap_session = session or "replay"
        self.tap.frame(C2S, body, "http", tap_session)
        sse, status, _assigned = self._recorded(server.peek(body))
        headers = {SESSION_HEADER: session} if session else {}
        if sse:
            stream = web.StreamResponse(
                status=status,
                headers={
                    **headers,
                    "Content-Type": "text/event-stream",
                    "Cache-Control": "no-cache",
                },
            )
            await stream.prepare(request)

            async def send_event(frame: bytes) -> None:
                self.tap.frame(S2C, frame, "sse", tap_session)
                await stream.write(b"event: message\ndata: " + frame + b"\n\n")

            await server.handle(body, send_event)
            await stream.write_eof()
            return stream
        sent: list[bytes] = []

        async def keep(frame: bytes) -> None:
            sent.append(frame)

        handled = await server.handle(body, keep)
        if not handled.answered or not sent:
            return web.Response(status=202, headers=headers)
        # A JSON body holds one message: the response; nothing else was sent on it either.
        self.tap.frame(S2C, sent[-1], "http", tap_session)
        return web.Response(
            status=status, body=sent[-1], headers=headers, content_type="application/json"
        )

    async def get(self, request: web.Request) -> web.StreamResponse:
        # No standalone stream: server messages are sent on the POST that they preceded.
        return web.Response(status=405, headers={"Allow": "POST, DELETE"})

    async def delete(self, request: web.Request) -> web.StreamResponse:
        sid = request.headers.get(SESSION_HEADER)
        if sid is not None:
            self.sessions.pop(sid, None)
        return web.Response(status=200)


def _initializes(body: bytes) -> bool:
    """Whether a POST body holds an ``initialize`` request."""
    try:
        value = safejson.loads(body, finite=True)
    except ValueError:
        return False
    items = value if isinstance(value, list) else [value]
    return any(isinstance(m, dict) and m.get("method") == "initialize" for m in items)


async def serve_http(
    make_server: Callable[[], ReplayServer],
    tap: Tap,
    host: str,
    port: int,
    announce: Callable[[str], None] | None = None,
    ready: Callable[[str], None] | None = None,
    faults: Sequence[Fault] = (),
) -> None:
    """Serve until cancelled (Ctrl-C); ``ready`` gets the URL once listening.

    ``make_server`` makes the replay server of each client session. With
    ``faults`` the replay listens on a loopback port of its own, behind an
    ``mcpsniff http`` relay that carries the faults out (``intercept/http_faults.py``)
    and records, into ``tap``'s trace, what the client got and each fault.
    """
    if faults:
        front = tap
        # The replay's own view (before the faults) is analyzed, not recorded twice.
        tap = Tap(transport="http")
    replay = HttpReplay(make_server, tap)
    app = web.Application(client_max_size=FRAME_LIMIT)
    app.router.add_route("POST", "/{tail:.*}", replay.post)
    app.router.add_route("GET", "/{tail:.*}", replay.get)
    app.router.add_route("DELETE", "/{tail:.*}", replay.delete)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1" if faults else host, 0 if faults else port)
    relay = None
    try:
        await site.start()
        bound = runner.addresses[0][1] if runner.addresses else port
        url = f"http://{host}:{bound}/mcp"
        if faults:
            relay = await _faulty_front(f"http://127.0.0.1:{bound}/mcp", front, host, port, faults)
            url = relay.client_url
        if announce is not None:
            announce(f"serving {replay.server.script.path} at {url}")
        if ready is not None:
            ready(url)
        stop = asyncio.Event()
        # SIGTERM ends the replay like Ctrl-C: the trace is closed and strict mode reports.
        with contextlib.suppress(NotImplementedError, RuntimeError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
    finally:
        if relay is not None:
            await relay.stop()
        await runner.cleanup()


async def _faulty_front(
    inner: str, tap: Tap, host: str, port: int, faults: Sequence[Fault]
) -> HttpRelay:
    """The relay in front of the replay that misbehaves on purpose, recording into ``tap``."""
    options = HttpOptions(
        upstream=inner, host=host, port=port, redact=False, busy_poll=False, faults=list(faults)
    )
    relay = HttpRelay(options, None, capture=InProcess(adapter(tap.recorder, options).apply))
    await relay.start()
    return relay
