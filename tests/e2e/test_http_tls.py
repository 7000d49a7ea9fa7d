"""``mcpsniff http`` in front of an https upstream: TLS to the server, its own name in Host.

The upstream is a small aiohttp MCP server serving https on ``localhost`` with
a certificate from the addon tests' test CA (``make_certificates``); mcpsniff
trusts that CA through ``SSL_CERT_FILE`` (OpenSSL's default verify paths, which
``ssl.create_default_context`` loads). A server that routes by name, as most
https servers do, must get ``Host: localhost:PORT`` although the client
addressed the proxy.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.mitm.upstreams import Certificates, make_certificates
from tests.relay.test_http import (
    V_2025_11,
    McpClient,
    ProxyFactory,
    assert_paired,
    check_findings,
    client,
    run,
    start_proxy,  # noqa: F401  (the fixture)
)


@dataclass
class TlsUpstream:
    """An https MCP server on localhost, in its own thread; records each request's Host."""

    certificates: Certificates
    port: int = 0
    hosts: list[str | None] = field(default_factory=list)
    secure: list[bool] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.runner: web.AppRunner | None = None

    def start(self) -> None:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(30)

    def stop(self) -> None:
        if self.runner is not None:
            asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/mcp", self.mcp)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        context = self.certificates.server_context()
        site = web.TCPSite(self.runner, "localhost", 0, ssl_context=context)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def mcp(self, request: web.Request) -> web.Response:
        self.hosts.append(request.headers.get("Host"))
        self.secure.append(request.secure)
        # A server that routes by name: a request for another name is not its own.
        if request.headers.get("Host") != f"localhost:{self.port}":
            return web.Response(status=421, text="Misdirected Request\n")
        message: dict[str, Any] = json.loads(await request.read())
        if "id" not in message:
            return web.Response(status=202)
        headers = {}
        result: dict[str, Any] = {}
        if message["method"] == "initialize":
            headers["Mcp-Session-Id"] = uuid.uuid4().hex
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "tls-upstream", "version": "1.0"},
            }
        elif message["method"] == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        return web.json_response(answer, headers=headers)


@pytest.fixture
def tls_upstream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TlsUpstream]:
    certificates = make_certificates(tmp_path / "tls")
    # mcpsniff (a subprocess started after this) trusts the test CA.
    monkeypatch.setenv("SSL_CERT_FILE", str(certificates.ca))
    server = TlsUpstream(certificates)
    server.start()
    yield server
    server.stop()


def test_https_upstream_gets_tls_and_its_own_name(
    start_proxy: ProxyFactory,  # noqa: F811
    tls_upstream: TlsUpstream,
) -> None:
    proxy = start_proxy(f"https://localhost:{tls_upstream.port}/mcp")

    async def talk() -> tuple[str | None, Any]:
        async with client() as http:
            mcp = McpClient(http, proxy.url, V_2025_11)
            await mcp.initialize()
            return mcp.sid, await mcp.request("tools/list")

    sid, tools = run(talk())
    assert tools == {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    # Over TLS, and addressed by its own name, though the client named the proxy.
    assert tls_upstream.secure == [True] * 3
    assert tls_upstream.hosts == [f"localhost:{tls_upstream.port}"] * 3
    trace = proxy.stop()
    requests = assert_paired(trace, sid or "")
    assert [r.method for r in requests] == ["initialize", "tools/list"]
    assert check_findings(trace) == []


def test_https_upstream_that_cannot_be_verified_gets_502(
    start_proxy: ProxyFactory,  # noqa: F811
    tls_upstream: TlsUpstream,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A certificate nobody vouches for is no upstream: 502, and the reason says so."""
    monkeypatch.delenv("SSL_CERT_FILE")
    proxy = start_proxy(f"https://localhost:{tls_upstream.port}/mcp")

    async def talk() -> tuple[int, str]:
        async with client() as http:
            mcp = McpClient(http, proxy.url, V_2025_11)
            reply = await mcp.post(mcp.request_payload("initialize", {}))
            return reply.status, reply.body.decode()

    status, body = run(talk())
    assert status == 502
    assert "CERTIFICATE_VERIFY_FAILED" in body
    assert tls_upstream.hosts == []  # nothing reached it
    trace = proxy.stop()
    (unreachable,) = trace.events("upstream-unreachable")
    assert "CERTIFICATE_VERIFY_FAILED" in unreachable.data["error"]
