"""Peers that leak the secrets of ``secrets_corpus.py``, for the redaction corpus tests.

``stdio-server ARGS...``: an NDJSON server that writes the corpus's stderr lines,
then answers each ``tools/call`` with the corpus result (odd ids) or error
(even ids). Its own ARGS are the corpus's command line, which the relay records.

``http-upstream``: an aiohttp server on a free loopback port (printed on
stdout) whose ``/mcp`` answers with the corpus result and secret response
headers, and answers method ``fail`` with a plain-text 401 quoting a key.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import secrets_corpus as corpus


def stdio_server() -> None:
    for line in corpus.STDERR_LINES:
        sys.stderr.write(line + "\n")
    sys.stderr.flush()
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        request_id = message["id"]
        answer = corpus.tool_result(request_id) if request_id % 2 else corpus.tool_error(request_id)
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


def http_upstream() -> None:
    from aiohttp import web

    async def mcp(request: web.Request) -> web.Response:
        message = await request.json()
        if message.get("method") == "fail":
            return web.Response(status=401, text=corpus.ERROR_BODY, content_type="text/plain")
        return web.json_response(
            corpus.tool_result(message.get("id")), headers=corpus.RESPONSE_HEADERS
        )

    async def start() -> None:
        app = web.Application()
        app.router.add_post("/mcp", mcp)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        print(port, flush=True)
        while True:
            await asyncio.sleep(3600)

    import asyncio

    asyncio.run(start())


if __name__ == "__main__":
    {"stdio-server": stdio_server, "http-upstream": http_upstream}[sys.argv[1]]()
