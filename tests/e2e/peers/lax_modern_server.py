"""A scripted 2026-07-28 Streamable HTTP server that validates nothing and answers every error 200.

Run with mcpsniff's own interpreter (it needs aiohttp only)::

    python tests/e2e/peers/lax_modern_server.py PORT

It serves ``/mcp`` on 127.0.0.1. It is what issue 25 calls common: it answers
every JSON-RPC error with HTTP 200 (an unsupported version with -32602 rather
than 400 and -32022, an unknown method with -32601 under 200 rather than 404),
accepts a ``tools/call`` whatever its ``Mcp-Param-*`` headers say, and answers
DELETE with 200 rather than 405. Its one tool mirrors ``region`` into
``Mcp-Param-Region``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from aiohttp import web

MODERN = "2026-07-28"
SERVER_META = {"io.modelcontextprotocol/serverInfo": {"name": "lax", "version": "1"}}
TOOL = {
    "name": "execute_sql",
    "inputSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"},
        },
    },
}
CACHE = {"ttlMs": 0, "cacheScope": "public"}


def reply(ident: Any, *, result: dict[str, Any] | None = None, error: Any = None) -> web.Response:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": ident}
    if error is not None:
        body["error"] = {"code": error[0], "message": error[1]}
    else:
        body["result"] = {**(result or {}), "resultType": "complete", "_meta": SERVER_META}
    return web.json_response(body, status=200)


async def mcp(request: web.Request) -> web.StreamResponse:
    if request.method != "POST":
        return web.Response(status=200)
    message = json.loads(await request.read())
    ident, method = message.get("id"), message.get("method")
    if ident is None:
        return web.Response(status=202)
    meta = (message.get("params") or {}).get("_meta") or {}
    if meta.get("io.modelcontextprotocol/protocolVersion") != MODERN:
        return reply(ident, error=(-32602, "unsupported protocol version"))
    if method == "tools/list":
        return reply(ident, result={"tools": [TOOL], **CACHE})
    if method == "tools/call":
        return reply(ident, result={"content": [{"type": "text", "text": "done"}]})
    return reply(ident, error=(-32601, "Method not found"))


def main() -> None:
    app = web.Application()
    app.router.add_route("*", "/mcp", mcp)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)


if __name__ == "__main__":
    main()
