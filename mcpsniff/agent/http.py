"""``mcpsniff mcp --http``: the same server over Streamable HTTP, on loopback.

MCP basic/transports, Streamable HTTP: the client POSTs each JSON-RPC message
to one endpoint; a request is answered with ``application/json`` (a server may
answer with one JSON object instead of an SSE stream), anything else with
``202 Accepted`` and no body. This server never sends requests or
notifications of its own, so a GET for a stream is ``405 Method Not
Allowed``, which the spec provides for that case, and so is DELETE (it keeps
no session to end: the transport's session id is optional).

"Servers MUST validate the Origin header on all incoming connections to
prevent DNS rebinding attacks" and "SHOULD bind only to localhost": requests
whose ``Host`` or ``Origin`` names anything but a loopback name get 403.
Handlers run one at a time on a worker thread, so a slow trace never stalls
the event loop and the trace library is read by one thread.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from aiohttp import web

from mcpsniff.agent.server import VERSIONS, TraceServer

ENDPOINT = "/mcp"
#: The largest request body read.
BODY_LIMIT = 4 << 20
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def _host_name(value: str) -> str:
    """The host of a ``Host`` value (``name:port``, ``[v6]:port``), lower case."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _loopback_request(request: web.Request) -> bool:
    host = request.headers.get("Host")
    if host is None or _host_name(host) not in LOOPBACK_NAMES:
        return False
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    try:
        name = urlsplit(origin).hostname
    except ValueError:
        return False
    return name in LOOPBACK_NAMES


def _json_error(status: int, code: int, message: str) -> web.Response:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return web.json_response(body, status=status)


def make_app(server: TraceServer) -> web.Application:
    """The aiohttp application serving ``server`` at ``ENDPOINT``."""
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcpsniff-mcp")

    async def endpoint(request: web.Request) -> web.StreamResponse:
        if not _loopback_request(request):
            return web.Response(status=403, text="mcpsniff mcp answers only loopback names\n")
        if request.method != "POST":
            return web.Response(status=405, headers={"Allow": "POST"})
        version = request.headers.get("MCP-Protocol-Version")
        if version is not None and version not in VERSIONS:
            # Streamable HTTP, Protocol Version Header: "the server MUST respond with
            # 400 Bad Request" to an invalid or unsupported version.
            return _json_error(400, -32600, f"Unsupported MCP-Protocol-Version: {version[:40]}")
        if request.content_length is not None and request.content_length > BODY_LIMIT:
            return _json_error(413, -32600, "request body too large")
        body = await request.content.read(BODY_LIMIT + 1)
        if len(body) > BODY_LIMIT:
            return _json_error(413, -32600, "request body too large")
        loop = asyncio.get_running_loop()
        reply = await loop.run_in_executor(worker, server.handle_bytes, body)
        if reply is None:
            return web.Response(status=202)
        # A message that could not be read at all (-32700, or -32600 with id null) is
        # the HTTP request's fault too.
        status = 400 if reply.startswith(b'{"jsonrpc":"2.0","id":null,"error"') else 200
        return web.Response(body=reply, status=status, content_type="application/json")

    async def shutdown(_app: web.Application) -> None:
        worker.shutdown(wait=False, cancel_futures=True)

    app = web.Application(client_max_size=BODY_LIMIT)
    app.router.add_route("*", ENDPOINT, endpoint)
    app.on_cleanup.append(shutdown)
    return app


async def serve_http(server: TraceServer, host: str, port: int) -> None:
    """Serve until cancelled; prints the URL on stderr once listening."""
    import sys

    runner = web.AppRunner(make_app(server), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    addresses = runner.addresses
    bound = addresses[0][1] if addresses else port
    shown = f"[{host}]" if ":" in host else host
    print(f"mcpsniff mcp: serving http://{shown}:{bound}{ENDPOINT}", file=sys.stderr, flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
