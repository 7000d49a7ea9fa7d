"""End to end: the 2026-07-28 extensions through a real ``mcpsniff stdio`` and ``mcpsniff http``.

``peers/extensions_server.py`` plays the tasks extension and MCP Apps by the
book or breaks them; a scripted client drives it through the real relays (over
HTTP the same server sits behind a small aiohttp app), and ``mcpsniff check``
on each trace must find exactly what the live relay found.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.terminal.render import finding_json
from tests.relay.stdio_support import Client, findings, read_trace, relay
from tests.relay.test_http import ProxyFactory, start_proxy  # noqa: F401  (fixture)

SERVER = Path(__file__).resolve().parent / "peers" / "extensions_server.py"
REPO = Path(__file__).resolve().parents[2]
TASKS = "io.modelcontextprotocol/tasks"
UI = "io.modelcontextprotocol/ui"


def meta(declared: bool = True) -> dict[str, Any]:
    caps: dict[str, Any] = {"elicitation": {}}
    if declared:
        caps["extensions"] = {TASKS: {}, UI: {"mimeTypes": ["text/html;profile=mcp-app"]}}
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "1"},
    }


def session(client: Client | HttpClient) -> None:
    """Discover, list, read the view, call a tool as a task, poll it to the end, cancel;
    then a tool that asks for input first (MRTR) and its retry."""
    client.request(1, "server/discover", {"_meta": meta()})
    client.request(2, "tools/list", {"_meta": meta()})
    client.request(3, "resources/read", {"uri": "ui://weather/dashboard", "_meta": meta()})
    created = client.request(4, "tools/call", {"name": "slow", "arguments": {}, "_meta": meta()})
    assert created["result"]["resultType"] == "task"
    client.request(5, "tasks/get", {"taskId": "task-1", "_meta": meta()})
    responses = {"name": {"action": "accept", "content": {"name": "Luca"}}}
    client.request(
        6, "tasks/update", {"taskId": "task-1", "inputResponses": responses, "_meta": meta()}
    )
    client.request(7, "tasks/get", {"taskId": "task-1", "_meta": meta()})
    client.request(8, "tasks/get", {"taskId": "task-1", "_meta": meta()})
    client.request(9, "tasks/cancel", {"taskId": "task-1", "_meta": meta()})
    asked = client.request(10, "tools/call", {"name": "book", "arguments": {}, "_meta": meta()})
    retry = {"name": "book", "arguments": {}, "_meta": meta(), "inputResponses": {"ask": {}}}
    client.request(11, "tools/call", {**retry, "requestState": asked["result"]["requestState"]})


def run(tmp_path: Path, mode: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The live relay's findings and ``mcpsniff check``'s, as JSON objects."""
    trace = tmp_path / f"{mode}.jsonl"
    with relay([sys.executable, str(SERVER), mode], "--trace", str(trace)) as r:
        session(Client(r))
        r.close_stdin()
        assert r.wait() == 0
    live = [finding_json(f) for f in findings(read_trace(trace))]
    return live, check(trace)


def check(trace: Path) -> list[dict[str, Any]]:
    """What ``mcpsniff check --format json`` finds in ``trace``."""
    proc = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "check", "--format", "json", str(trace)],
        cwd=REPO,
        capture_output=True,
        timeout=60,
    )
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def test_a_by_the_book_extension_session_is_clean(tmp_path: Path) -> None:
    live, checked = run(tmp_path, "good")
    assert live == checked == []


def test_a_broken_extension_session_is_caught_live_and_by_check(tmp_path: Path) -> None:
    live, checked = run(tmp_path, "bad")
    assert checked == live
    found = sorted({(f["rule"], f["severity"]) for f in live})
    assert found == [
        ("EXT-APPS-RESOURCE", "error"),
        ("EXT-TASKS-ACK", "error"),
        ("EXT-TASKS-RESULTTYPE", "error"),
        ("EXT-TASKS-TRANSITION", "error"),
        ("MOD-DEPRECATED", "info"),
        ("MOD-MRTR-CONTENT", "error"),
        ("MOD-REMOVED", "warning"),
    ]


def test_a_task_for_an_undeclared_client(tmp_path: Path) -> None:
    trace = tmp_path / "undeclared.jsonl"
    with relay([sys.executable, str(SERVER), "bad"], "--trace", str(trace)) as r:
        client = Client(r)
        params = {"name": "slow", "arguments": {}, "_meta": meta(declared=False)}
        assert client.request(1, "tools/call", params)["result"]["resultType"] == "task"
        r.close_stdin()
        assert r.wait() == 0
    rules = [f.rule for f in findings(read_trace(trace))]
    assert rules == ["EXT-TASKS-NEGOTIATED"]


# --------------------------------------------------------------------------- HTTP


class HttpUpstream:
    """``peers/extensions_server.py``'s server behind Streamable HTTP (2026-07-28, POST only)."""

    def __init__(self, mode: str) -> None:
        from aiohttp import web

        spec = importlib.util.spec_from_file_location("extensions_server", SERVER)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.server = module.Server(bad=mode == "bad")
        self.loop = asyncio.new_event_loop()
        app = web.Application()
        app.router.add_post("/mcp", self.post)
        self.runner = web.AppRunner(app)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    async def post(self, request: Any) -> Any:
        from aiohttp import web

        replies = self.server.handle(await request.json())
        answer = [r for r in replies if "id" in r]
        if not answer:
            return web.Response(status=202)
        # Extra notifications (the bad server's) go first on an SSE stream.
        if len(replies) > 1:
            # X-Accel-Buffering: no, as 2026-07-28 asks (MOD-HTTP-SSE is not this test's).
            headers = {"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}
            stream = web.StreamResponse(headers=headers)
            await stream.prepare(request)
            for reply in replies:
                await stream.write(b"data: " + json.dumps(reply).encode() + b"\n\n")
            await stream.write_eof()
            return stream
        return web.json_response(answer[0])

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


class HttpClient:
    """Posts 2026-07-28 requests with their standard headers through the proxy."""

    def __init__(self, url: str) -> None:
        self.url = url

    def request(self, id_: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": method,
        }
        name = params.get("name") or params.get("uri") or params.get("taskId")
        if name is not None:
            headers["Mcp-Name"] = name
        body = json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
        request = urllib.request.Request(self.url, body.encode(), headers, method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
        if text.startswith("data: "):
            events = [
                json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")
            ]
            return next(e for e in events if e.get("id") == id_)
        return json.loads(text)


@pytest.mark.parametrize("mode", ["good", "bad"])
def test_the_http_relay_judges_the_extensions_as_the_stdio_relay_does(
    tmp_path: Path,
    mode: str,
    start_proxy: ProxyFactory,  # noqa: F811
) -> None:
    upstream = HttpUpstream(mode)
    try:
        proxy = start_proxy(f"http://127.0.0.1:{upstream.port}/mcp")
        session(HttpClient(proxy.url))
        trace = proxy.stop()
    finally:
        upstream.stop()
    live = sorted({(f.rule, f.severity) for f in trace.findings})
    stdio_live, _ = run(tmp_path, mode)
    assert live == sorted({(f["rule"], f["severity"]) for f in stdio_live})
    assert check(trace.path) == [finding_json(f) for f in trace.findings]
