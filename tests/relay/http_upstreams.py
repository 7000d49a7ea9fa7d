"""Upstream servers for the HTTP relay tests, run on 127.0.0.1 in a background thread.

:class:`Upstream` is one aiohttp application on an ephemeral port that plays
every server the tests need, chosen by path:

* ``/{flavors}/mcp``: a small but real MCP server over Streamable HTTP
  (2025-03-26 and later). ``flavors`` is a ``+``-separated set that changes
  its behaviour: ``json`` (plain, JSON answers), ``sse`` (answers POSTs with
  an SSE stream), ``gzip`` (JSON answers gzip-compressed), ``lax`` (answers
  notification POSTs 200 with a body instead of 202), ``getjson`` (answers
  GET with 200 application/json), ``noterm`` (DELETE answers 200 but the
  session lives on), ``dupid`` (SSE event ids restart at 1 on every stream).
  It checks ``Origin`` (DNS-rebinding protection: 403 for anything but
  localhost/127.0.0.1), assigns ``Mcp-Session-Id`` on initialize, answers an
  unknown or terminated session with 404 and an unknown method with -32601.
* ``/{flavor}/sse`` + ``/{flavor}/message?sessionId=``: the legacy 2024-11-05
  HTTP+SSE transport; ``legacy`` announces a relative endpoint, ``legacyabs``
  an absolute URL of this server, ``legacybad`` sends a message event before
  the endpoint event, ``legacypad`` a comment (padding) before an absolute one.
* ``/echo...``: answers any method with what it received, as JSON.
* ``/delay``: answers a JSON-RPC request ``params.delay`` seconds later.
* ``/lockstep``, ``/idle``, ``/hang``, ``/truncated``, ``/bigsse``: SSE
  streams for buffering, idle, disconnect, truncation and size tests.
* ``/_control/ack?name=``: a side channel the tests call directly (not
  through the proxy) to set a named flag the handlers wait on.

:class:`BareServer` is a raw asyncio HTTP/1.1 server that answers with
exactly the header lines it is told to (aiohttp always adds ``Server`` and
``Date``, so it cannot show that the proxy adds nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import hashlib
import json
import threading
import uuid
import zlib
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import brotli  # type: ignore[import-untyped]
from aiohttp import web
from yarl import URL

from mcpsniff.core.protocol import META_SERVER_INFO

T = TypeVar("T")

#: How long a handler waits for the test's signal before giving up (so nothing hangs).
HANDLER_WAIT = 30.0
#: Bodies bigger than this are kept only as a hash in :attr:`Upstream.seen`.
KEEP_BODY = 1 << 20

#: What a ``/{flavor}/mcp`` server does; "stateless" is a 2026-07-28 server (no sessions).
FLAVORS = frozenset(
    {"json", "sse", "gzip", "br", "zstd", "lax", "getjson", "noterm", "dupid", "stateless"}
)
LEGACY_FLAVORS = frozenset({"legacy", "legacyabs", "legacybad", "legacypad"})
ALLOWED_ORIGIN_HOSTS = frozenset({"localhost", "127.0.0.1"})
#: The credential ``/echo?status=401`` quotes in its error page.
REFUSED_TOKEN = "refused-secret-3131"
#: The cookie ``/echo?cookie=1`` sets: a secret the trace must not hold.
SET_COOKIE = "session=set-cookie-secret-4242; HttpOnly"
#: A response header the echo endpoint adds, to check headers pass server -> client.
ECHO_HEADER = ("X-Upstream-Custom", "from-upstream")


def sse_event(data: str, *, event: str | None = None, event_id: str | None = None) -> bytes:
    """One SSE event block, LF line endings."""
    lines = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    if event is not None:
        lines.append(f"event: {event}")
    lines.extend(f"data: {line}" for line in data.split("\n"))
    return ("\n".join(lines) + "\n\n").encode()


def big_sse_body(size: int) -> bytes:
    """The deterministic body of ``/bigsse?size=``: one event whose data is ``size``+ bytes."""
    filler = (hashlib.sha256(b"mcpsniff").hexdigest() * (size // 64 + 1))[:size]
    message = {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "data": filler},
    }
    return sse_event(json.dumps(message), event_id="big-1")


@dataclass
class Seen:
    """One request as the upstream received it."""

    method: str
    path_qs: str
    headers: list[tuple[str, str]]
    body: bytes
    body_len: int
    body_sha256: str

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def header_names(self) -> set[str]:
        return {key.lower() for key, _ in self.headers}


@dataclass
class McpSession:
    """A Streamable HTTP session on the upstream."""

    version: str
    terminated: bool = False
    streams: int = 0
    events: int = 0


@dataclass
class LegacySession:
    """A legacy HTTP+SSE session: its stream's outgoing queue."""

    queue: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)


class Upstream:
    """The aiohttp upstream, running its own event loop in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.port = 0
        self.seen: list[Seen] = []
        self.sessions: dict[str, McpSession] = {}
        self.legacy: dict[str, LegacySession] = {}
        self._flags: dict[str, asyncio.Event] = {}
        #: name -> how a streaming handler ended ("cancelled", "complete", ...)
        self.endings: dict[str, str] = {}
        #: Every compressed body the ``gzip``, ``br`` and ``zstd`` flavors sent, as sent.
        self.gzipped: list[bytes] = []
        self._runner: web.AppRunner | None = None
        self.bare = BareServer()

    # ------------------------------------------------------------------ running

    def start(self) -> None:
        self.thread.start()
        self.run(self._start(), timeout=30)

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.run(self._stop(), timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coro`` on the upstream's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _start(self) -> None:
        app = web.Application(client_max_size=1 << 30)
        app.router.add_route("*", "/_control/ack", self.ack)
        app.router.add_route("*", "/echo{tail:.*}", self.echo)
        app.router.add_route("*", "/lockstep", self.lockstep)
        app.router.add_route("POST", "/delay", self.delay)
        app.router.add_route("*", "/idle", self.idle)
        app.router.add_route("*", "/hang", self.hang)
        app.router.add_route("*", "/truncated", self.truncated)
        app.router.add_route("*", "/abort", self.abort)
        app.router.add_route("*", "/bigsse", self.bigsse)
        app.router.add_route("*", "/{flavor}/sse", self.legacy_stream)
        app.router.add_route("*", "/{flavor}/message", self.legacy_message)
        app.router.add_route("*", "/{flavor}/mcp", self.mcp)
        # handler_cancellation: a closed connection cancels the handler, which
        # is how the disconnect test sees that the proxy gave up upstream too.
        # shutdown_timeout: streams still open at the end of the module do not delay it.
        self._runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=1.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        assert site._server is not None
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        await self.bare.start()

    async def _stop(self) -> None:
        await self.bare.stop()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return self.origin + path

    # ------------------------------------------------------------------ flags

    def _flag(self, name: str) -> asyncio.Event:
        flag = self._flags.get(name)
        if flag is None:
            flag = self._flags[name] = asyncio.Event()
        return flag

    def wait_flag(self, name: str, timeout: float = HANDLER_WAIT) -> None:
        """Block the calling (test) thread until a handler sets flag ``name``."""

        async def wait() -> None:
            await asyncio.wait_for(self._flag(name).wait(), timeout)

        self.run(wait(), timeout + 5)

    def requests(self, path_prefix: str) -> list[Seen]:
        return [s for s in list(self.seen) if s.path_qs.startswith(path_prefix)]

    # ------------------------------------------------------------------ helpers

    async def _record(self, request: web.Request) -> tuple[bytes, Seen]:
        body = await request.read()
        seen = Seen(
            request.method,
            request.raw_path,
            [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.raw_headers],
            body if len(body) <= KEEP_BODY else b"",
            len(body),
            hashlib.sha256(body).hexdigest(),
        )
        self.seen.append(seen)
        return body, seen

    @staticmethod
    def _sse_response() -> web.StreamResponse:
        response = web.StreamResponse(status=200)
        response.content_type = "text/event-stream"
        response.headers["Cache-Control"] = "no-cache"
        return response

    async def _wait(self, name: str) -> bool:
        try:
            await asyncio.wait_for(self._flag(name).wait(), HANDLER_WAIT)
        except TimeoutError:
            return False
        return True

    # ------------------------------------------------------------------ side channel

    async def ack(self, request: web.Request) -> web.Response:
        self._flag(request.query["name"]).set()
        return web.Response(text="ok")

    # ------------------------------------------------------------------ echo

    async def delay(self, request: web.Request) -> web.Response:
        """A JSON-RPC request answered ``params.delay`` seconds later with an empty result."""
        message = json.loads(await request.read())
        if "id" not in message:
            return web.Response(status=202)
        await asyncio.sleep(float((message.get("params") or {}).get("delay", 0)))
        return web.json_response({"jsonrpc": "2.0", "id": message["id"], "result": {}})

    async def echo(self, request: web.Request) -> web.Response:
        _body, seen = await self._record(request)
        status = int(request.query.get("status", "200"))
        payload = {
            "method": seen.method,
            "path_qs": seen.path_qs,
            "headers": seen.headers,
            "body_len": seen.body_len,
            "body_sha256": seen.body_sha256,
        }
        response = web.json_response(payload, status=status)
        response.headers[ECHO_HEADER[0]] = ECHO_HEADER[1]
        if "cookie" in request.query:
            response.headers["Set-Cookie"] = SET_COOKIE
        if "twice" in request.query:
            # One field name twice: each must arrive as its own field, in order.
            response.headers.add("X-Twice", "first")
            response.headers.add("X-Twice", "second")
        if "location" in request.query:
            response.headers["Location"] = request.query["location"]
        if "connection" in request.query:
            # Names a header as connection-specific (RFC 9110 §7.6.1).
            response.headers["Connection"] = "X-Upstream-Hop"
            response.headers["X-Upstream-Hop"] = "for the proxy only"
        if "hop" in request.query:
            # Hop-by-hop headers a proxy must not pass on.
            response.headers["Keep-Alive"] = "timeout=99"
            response.headers["Proxy-Authenticate"] = 'Basic realm="upstream"'
            response.headers["Upgrade"] = "h2c"
            response.headers["Trailer"] = "X-Checksum"
        if status == 401:
            # An error page that quotes the credential it refused.
            return web.Response(status=401, text=f"token refused: Bearer {REFUSED_TOKEN}\n")
        if status == 500:
            return web.Response(
                status=500,
                text="upstream exploded: stack trace here\n",
                headers={"X-Failure": "yes", ECHO_HEADER[0]: ECHO_HEADER[1]},
            )
        return response

    # ------------------------------------------------------------------ Streamable HTTP

    async def mcp(self, request: web.Request) -> web.StreamResponse:
        flavors = set(request.match_info["flavor"].split("+"))
        if not flavors <= FLAVORS:
            raise web.HTTPNotFound()
        body, _seen = await self._record(request)
        origin = request.headers.get("Origin")
        if origin is not None and URL(origin).host not in ALLOWED_ORIGIN_HOSTS:
            return web.Response(status=403, text=f"Forbidden: origin {origin} is not allowed\n")
        if request.method == "POST":
            return await self._mcp_post(request, flavors, body)
        sid = request.headers.get("Mcp-Session-Id")
        session = self.sessions.get(sid or "")
        if request.method == "GET":
            if "getjson" in flavors:
                return web.json_response({"status": "no stream here"})
            if session is None or session.terminated:
                return _session_error(sid)
            return await self._listen(request, sid or "", session, flavors)
        if request.method == "DELETE":
            if session is None or session.terminated:
                return _session_error(sid)
            if "noterm" not in flavors:
                session.terminated = True
            return web.Response(status=200)
        return web.Response(status=405, headers={"Allow": "GET, POST, DELETE"})

    async def _mcp_post(
        self, request: web.Request, flavors: set[str], body: bytes
    ) -> web.StreamResponse:
        try:
            payload = json.loads(body)
        except ValueError:
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse"}}
            return web.json_response(error, status=400)
        batch = isinstance(payload, list)
        messages = [m for m in (payload if batch else [payload]) if isinstance(m, dict)]
        if "stateless" in flavors:
            # 2026-07-28: every POST stands alone; no session to assign or check.
            answers = [_answer(m, body) for m in messages if "method" in m and "id" in m]
            if not answers:
                return web.Response(status=202)
            for answer in answers:
                if "result" in answer:
                    answer["result"]["resultType"] = "complete"
                    server_info = {"name": "upstream", "version": "1.0"}
                    answer["result"]["_meta"] = {META_SERVER_INFO: server_info}
            if "sse" not in flavors:
                return web.json_response(answers if batch else answers[0])
            response = self._sse_response()
            # "servers SHOULD include the X-Accel-Buffering: no header" (2026-07-28).
            response.headers["X-Accel-Buffering"] = "no"
            await response.prepare(request)
            # A call to the "wait" tool is answered once the test sets the flag its
            # arguments name; the head goes first (aiohttp sends it with the first
            # bytes of the body, hence a comment).
            flags = [
                ((m.get("params") or {}).get("arguments") or {}).get("flag")
                for m in messages
                if (m.get("params") or {}).get("name") == "wait"
            ]
            for flag in flags:
                await response.write(b": waiting\n\n")
                await self._wait(str(flag))
            for answer in answers:
                await response.write(sse_event(json.dumps(answer)))
            await response.write_eof()
            return response
        sid = request.headers.get("Mcp-Session-Id")
        init = next((m for m in messages if m.get("method") == "initialize"), None)
        headers: dict[str, str] = {}
        if init is not None:
            sid = uuid.uuid4().hex
            version = str(init.get("params", {}).get("protocolVersion", "2025-03-26"))
            self.sessions[sid] = McpSession(version)
            headers["Mcp-Session-Id"] = sid
        session = self.sessions.get(sid or "")
        if session is None or session.terminated:
            return _session_error(sid, _first_id(messages))
        for message in messages:
            if "method" not in message and "id" in message:
                # The client answered a server request (the listening stream's ping).
                self._flag(f"pong-{sid}-{message['id']}").set()
        answers = [_answer(m, body) for m in messages if "method" in m and "id" in m]
        if not answers:
            if "lax" in flavors:
                return web.Response(status=200, text="accepted\n")
            return web.Response(status=202)
        if "sse" in flavors:
            stream = self._post_stream(request, sid or "", session, messages, answers, flavors)
            return await stream
        data = json.dumps(answers if batch else answers[0]).encode()
        if "gzip" in flavors:
            headers["Content-Encoding"] = "gzip"
            data = gzip.compress(data)
            self.gzipped.append(data)
        elif "br" in flavors:
            headers["Content-Encoding"] = "br"
            data = brotli.compress(data)
            self.gzipped.append(data)
        elif "zstd" in flavors and init is None:
            # A coding mcpsniff cannot undo (this "zstd" is only labelled so: the
            # client here never decodes it); initialize is answered plainly.
            headers["Content-Encoding"] = "zstd"
            data = b"\x28\xb5\x2f\xfd" + data
            self.gzipped.append(data)
        return web.Response(body=data, content_type="application/json", headers=headers)

    def _event_id(
        self, sid: str, session: McpSession, stream: int, n: int, flavors: set[str]
    ) -> str:
        session.events += 1
        return str(n) if "dupid" in flavors else f"{sid[:8]}-{stream}-{n}"

    async def _post_stream(
        self,
        request: web.Request,
        sid: str,
        session: McpSession,
        messages: list[dict[str, Any]],
        answers: list[dict[str, Any]],
        flavors: set[str],
    ) -> web.StreamResponse:
        session.streams += 1
        stream = session.streams
        response = self._sse_response()
        if messages and messages[0].get("method") == "initialize":
            response.headers["Mcp-Session-Id"] = sid
        await response.prepare(request)
        n = 0
        for message in messages:
            token = (message.get("params") or {}).get("_meta", {}).get("progressToken")
            if message.get("method") == "tools/call" and token is not None:
                n += 1
                progress = {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 1, "total": 1},
                }
                event_id = self._event_id(sid, session, stream, n, flavors)
                await response.write(sse_event(json.dumps(progress), event_id=event_id))
        for answer in answers:
            n += 1
            event_id = self._event_id(sid, session, stream, n, flavors)
            await response.write(sse_event(json.dumps(answer), event_id=event_id))
        await response.write_eof()
        return response

    async def _listen(
        self, request: web.Request, sid: str, session: McpSession, flavors: set[str]
    ) -> web.StreamResponse:
        """The GET listening stream: a server-to-client ping, then wait for its answer."""
        session.streams += 1
        stream = session.streams
        response = self._sse_response()
        await response.prepare(request)
        last = request.headers.get("Last-Event-ID")
        ping_id = f"srv-ping-{stream}"
        ping = {"jsonrpc": "2.0", "id": ping_id, "method": "ping"}
        event_id = self._event_id(sid, session, stream, 1, flavors)
        await response.write(sse_event(json.dumps(ping), event_id=event_id))
        if last is not None:
            note = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": f"resumed after {last}"},
            }
            event_id = self._event_id(sid, session, stream, 2, flavors)
            await response.write(sse_event(json.dumps(note), event_id=event_id))
        # The stream ends once the client has answered the ping (or after HANDLER_WAIT).
        await self._wait(f"pong-{sid}-{ping_id}")
        await response.write_eof()
        return response

    # ------------------------------------------------------------------ legacy HTTP+SSE

    async def legacy_stream(self, request: web.Request) -> web.StreamResponse:
        flavor = request.match_info["flavor"]
        if flavor not in LEGACY_FLAVORS or request.method != "GET":
            raise web.HTTPNotFound()
        await self._record(request)
        sid = uuid.uuid4().hex
        session = self.legacy[sid] = LegacySession()
        response = self._sse_response()
        await response.prepare(request)
        endpoint = f"/{flavor}/message?sessionId={sid}"
        if flavor in ("legacyabs", "legacypad"):
            endpoint = self.origin + endpoint
        if flavor == "legacypad":
            # A comment first (padding against buffering proxies): not an event.
            await response.write(b": " + b"-" * 2048 + b"\n\n")
        if flavor == "legacybad":
            hello = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "hello before the endpoint"},
            }
            await response.write(sse_event(json.dumps(hello), event="message"))
        await response.write(sse_event(endpoint, event="endpoint"))
        try:
            while True:
                message = await asyncio.wait_for(session.queue.get(), HANDLER_WAIT)
                if message.get("close"):
                    break
                await response.write(sse_event(json.dumps(message), event="message"))
        except TimeoutError:
            pass
        await response.write_eof()
        return response

    async def legacy_message(self, request: web.Request) -> web.StreamResponse:
        flavor = request.match_info["flavor"]
        if flavor not in LEGACY_FLAVORS or request.method != "POST":
            raise web.HTTPNotFound()
        body, _seen = await self._record(request)
        session = self.legacy.get(request.query.get("sessionId", ""))
        if session is None:
            return web.Response(status=404, text="Could not find session\n")
        try:
            payload = json.loads(body)
        except ValueError:
            return web.Response(status=400, text="Invalid message\n")
        for message in payload if isinstance(payload, list) else [payload]:
            if isinstance(message, dict) and "method" in message and "id" in message:
                session.queue.put_nowait(_answer(message, body))
        return web.Response(status=202, text="Accepted")

    async def close_legacy(self, sid: str) -> None:
        """End the legacy stream of session ``sid`` (from the test, on the upstream's loop)."""
        self.legacy[sid].queue.put_nowait({"close": True})

    # ------------------------------------------------------------------ special streams

    async def lockstep(self, request: web.Request) -> web.StreamResponse:
        """Send event i, then wait until the test acks ``{name}-{i}`` on the side channel."""
        await self._record(request)
        name = request.query["name"]
        rounds = int(request.query.get("rounds", "5"))
        response = self._sse_response()
        # gzip=1: a compressed stream, flushed after every event (as compression
        # middleware that supports streaming does).
        compressor = (
            zlib.compressobj(wbits=16 + zlib.MAX_WBITS) if "gzip" in request.query else None
        )
        if compressor is not None:
            response.headers["Content-Encoding"] = "gzip"
        await response.prepare(request)

        async def send(data: bytes) -> None:
            if compressor is not None:
                data = compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)
            await response.write(data)

        for i in range(rounds):
            note = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": f"round {i}"},
            }
            await send(sse_event(json.dumps(note), event_id=f"{name}-{i}"))
            if not await self._wait(f"{name}-{i}"):
                await send(sse_event("no ack", event="timeout"))
                break
        if compressor is not None:
            await response.write(compressor.flush())
        await response.write_eof()
        return response

    async def idle(self, request: web.Request) -> web.StreamResponse:
        """One event, a pause of ``seconds``, then a second event."""
        await self._record(request)
        seconds = float(request.query.get("seconds", "3"))
        response = self._sse_response()
        await response.prepare(request)
        for i in range(2):
            if i:
                await asyncio.sleep(seconds)
            note = _log(i)
            await response.write(sse_event(json.dumps(note), event_id=f"idle-{i}"))
        await response.write_eof()
        return response

    async def hang(self, request: web.Request) -> web.StreamResponse:
        """One event, then nothing until the connection goes away."""
        await self._record(request)
        name = request.query["name"]
        response = self._sse_response()
        await response.prepare(request)
        note = _log("hi")
        await response.write(sse_event(json.dumps(note), event_id=f"{name}-0"))
        try:
            await self._wait(f"{name}-never")
            self.endings[name] = "timeout"
        except asyncio.CancelledError:
            self.endings[name] = "cancelled"
            self._flag(f"{name}-ended").set()
            raise
        self._flag(f"{name}-ended").set()
        return response

    async def truncated(self, request: web.Request) -> web.StreamResponse:
        """A whole event, then half of one, then the end of the stream."""
        await self._record(request)
        response = self._sse_response()
        await response.prepare(request)
        note = _log("whole")
        await response.write(sse_event(json.dumps(note), event_id="t-1"))
        await response.write(TRUNCATED_TAIL)
        await response.write_eof()
        return response

    async def abort(self, request: web.Request) -> web.StreamResponse:
        """A whole event, then the connection torn down (a crashed server)."""
        await self._record(request)
        response = self._sse_response()
        await response.prepare(request)
        note = _log("bye")
        await response.write(sse_event(json.dumps(note), event_id="a-1"))
        assert request.transport is not None
        request.transport.abort()
        return response

    async def bigsse(self, request: web.Request) -> web.StreamResponse:
        await self._record(request)
        body = big_sse_body(int(request.query["size"]))
        response = self._sse_response()
        await response.prepare(request)
        for start in range(0, len(body), 1 << 20):
            await response.write(body[start : start + (1 << 20)])
        await response.write_eof()
        return response


#: What ``/truncated`` sends after its whole event: an event cut off mid-data.
TRUNCATED_TAIL = b'id: t-2\ndata: {"jsonrpc":"2.0","id":1,"res'


def _log(data: Any) -> dict[str, Any]:
    """A notifications/message (log message) carrying ``data``."""
    return {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "data": data},
    }


def _first_id(messages: list[dict[str, Any]]) -> Any:
    return next((m["id"] for m in messages if "method" in m and "id" in m), None)


def _session_error(sid: str | None, request_id: Any = None) -> web.Response:
    """400 without a session id, 404 for an unknown or terminated one (spec wording)."""
    if sid is None:
        error = {"code": -32000, "message": "Bad Request: no session id"}
        body = {"jsonrpc": "2.0", "id": request_id, "error": error}
        return web.json_response(body, status=400)
    error = {"code": -32001, "message": "Session not found"}
    return web.json_response({"jsonrpc": "2.0", "id": None, "error": error}, status=404)


def _answer(message: dict[str, Any], body: bytes) -> dict[str, Any]:
    """The server's answer to one request."""
    method = message.get("method")
    params = message.get("params") or {}
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion", "2025-03-26"),
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": {"name": "upstream", "version": "1.0"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        tool = {"name": "echo", "description": "Echo", "inputSchema": {"type": "object"}}
        result = {"tools": [tool]}
    elif method == "tools/call":
        # Never echo the arguments: secrets in them must not come back in the answer.
        digest = hashlib.sha256(body).hexdigest()
        text = f"called {params.get('name')}; request body sha256 {digest}"
        result = {"content": [{"type": "text", "text": text}]}
    else:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


class BareServer:
    """A raw HTTP/1.1 server answering with exactly the header lines of ``HEAD_LINES``."""

    HEAD_LINES = (b"HTTP/1.1 200 OK", b"Content-Length: 12", b"X-Only: this")
    BODY = b"bare answer\n"

    def __init__(self) -> None:
        self.server: asyncio.Server | None = None
        self.port = 0
        #: The head (request line and headers) and body of every request received.
        self.requests: list[bytes] = []
        self.bodies: list[bytes] = []

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                self.requests.append(head)
                self.bodies.append(await reader.readexactly(length) if length else b"")
                writer.write(b"\r\n".join(self.HEAD_LINES) + b"\r\n\r\n" + self.BODY)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
