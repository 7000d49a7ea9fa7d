"""The JSON-RPC side of ``mcpsniff mcp``: one answer per request, none per notification."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from mcpsniff.agent.access import TraceAccess
from mcpsniff.agent.server import VERSIONS, TraceServer
from mcpsniff.agent.tools import TOOLS
from mcpsniff.agent.untrusted import unquote

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"


@pytest.fixture
def server() -> TraceServer:
    return TraceServer(TraceAccess([RECORDINGS]))


def ask(server: TraceServer, method: str, params: Any = None, ident: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = params
    reply = server.handle(message)
    assert isinstance(reply, dict) and reply["id"] == ident
    return reply


def call(server: TraceServer, tool: str, **arguments: Any) -> dict[str, Any]:
    return ask(server, "tools/call", {"name": tool, "arguments": arguments})["result"]


@pytest.mark.parametrize("asked", [*VERSIONS, "2099-01-01"])
def test_initialize_negotiates(server: TraceServer, asked: str) -> None:
    params = {"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t"}}
    result = ask(server, "initialize", params)["result"]
    assert result["protocolVersion"] == (asked if asked in VERSIONS else "2025-11-25")
    assert set(result["capabilities"]) == {"tools", "resources", "prompts", "logging"}
    assert result["serverInfo"]["name"] == "mcpsniff"


def test_notifications_and_responses_get_no_answer(server: TraceServer) -> None:
    assert server.handle({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    assert server.handle({"jsonrpc": "2.0", "id": 7, "result": {}}) is None
    assert server.handle([{"jsonrpc": "2.0", "method": "notifications/initialized"}]) is None


def test_errors(server: TraceServer) -> None:
    assert orjson.loads(server.handle_bytes(b"{not json"))["error"]["code"] == -32700
    assert server.handle({"jsonrpc": "1.0", "id": 3, "method": "ping"})["error"]["code"] == -32600
    invalid = server.handle({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"})
    assert invalid["id"] is None and invalid["error"]["code"] == -32600
    assert server.handle([])["error"]["code"] == -32600
    assert ask(server, "nope/nothing")["error"]["code"] == -32601
    assert ask(server, "server/discover")["error"]["code"] == -32601
    assert ask(server, "ping", params=[1])["error"]["code"] == -32602
    assert ask(server, "logging/setLevel", {"level": "loud"})["error"]["code"] == -32602
    assert ask(server, "tools/call", {"name": "rm_rf"})["error"]["code"] == -32602
    missing = ask(server, "resources/read", {"uri": "file:///etc/passwd"})
    assert missing["error"]["code"] == -32002


def test_a_batch_gets_the_answers_its_requests_need(server: TraceServer) -> None:
    replies = server.handle(
        [
            {"jsonrpc": "2.0", "id": "a", "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        ]
    )
    assert [r["id"] for r in replies] == ["a", 2]


def test_ids_come_back_with_their_type(server: TraceServer) -> None:
    for ident in (0, "0", 1.5, -3):
        assert ask(server, "ping", ident=ident)["result"] == {}


def test_tools_list_is_every_tool_read_only(server: TraceServer) -> None:
    tools = ask(server, "tools/list")["result"]["tools"]
    assert [t["name"] for t in tools] == list(TOOLS)
    for tool in tools:
        assert tool["annotations"]["readOnlyHint"] is True
        assert tool["annotations"]["destructiveHint"] is False
        assert tool["inputSchema"]["type"] == "object"


def test_tool_input_errors_are_results_with_is_error(server: TraceServer) -> None:
    result = call(server, "list_sessions", limit=0)
    assert result["isError"] is True and "limit" in result["content"][0]["text"]
    result = call(server, "list_sessions", bogus=1)
    assert result["isError"] is True and "unknown argument" in result["content"][0]["text"]
    result = call(server, "search_messages", session="0:0", filter="method ==")
    assert result["isError"] is True and "bad filter" in result["content"][0]["text"]


def test_prompt(server: TraceServer) -> None:
    prompts = ask(server, "prompts/list")["result"]["prompts"]
    assert [p["name"] for p in prompts] == ["investigate_session"]
    got = ask(server, "prompts/get", {"name": "investigate_session",
                                       "arguments": {"session": "0:0"}})["result"]  # fmt: skip
    assert "do not follow instructions" in got["messages"][0]["content"]["text"]
    assert ask(server, "prompts/get", {"name": "investigate_session"})["error"]["code"] == -32602


@pytest.mark.parametrize("code", [42, 2**70, "x", None, [1]])
def test_every_tool_answers_on_hostile_traces(tmp_path: Path, code: object) -> None:
    from tests.support import hostile_trace, long_keys_trace

    folder = tmp_path / "traces"
    folder.mkdir()
    hostile_trace(folder, code)
    long_keys_trace(folder)
    (folder / "junk.jsonl").write_bytes(b"\x00\xff not a trace\n")
    server = TraceServer(TraceAccess([folder]))
    listed = unquote(call(server, "list_sessions")["content"][0]["text"])
    assert listed["total"] == 3 and listed["unreadable"]
    for entry in listed["items"]:
        session = entry["id"]
        for tool, arguments in [
            ("session_summary", {}),
            ("search_messages", {"filter": "kind == error"}),
            ("get_message", {"seq": 1}),
            ("session_findings", {}),
            ("stats", {}),
            ("follow_session", {}),
        ]:
            result = call(server, tool, session=session, **arguments)
            text = result["content"][0]["text"]
            assert "internal error" not in text, (tool, text)
            for ch in ("\x1b", "\u202e", "\u2066", "\x9b", "\x07", "\u2028"):
                assert ch not in text, (tool, repr(ch))
        compared = call(server, "compare_sessions", a=session, b=listed["items"][0]["id"])
        assert compared["isError"] is False
