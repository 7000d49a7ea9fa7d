"""End to end over stdio: the 2026-07-28 extensions through a real ``mcpsniff stdio``.

``peers/extensions_server.py`` plays the tasks extension and MCP Apps by the
book or breaks them; a scripted client drives it through the real relay, and
``mcpsniff check`` on the trace must find exactly what the live relay found.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcpsniff.render import finding_json
from tests.relay.stdio_support import Client, findings, read_trace, relay

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


def session(client: Client) -> None:
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
    proc = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "check", "--format", "json", str(trace)],
        cwd=REPO,
        capture_output=True,
        timeout=60,
    )
    checked = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return live, checked


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
