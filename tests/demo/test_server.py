"""The demo MCP server, driven in-process and once as a real process."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import orjson
import pytest

from mcpsniff.demo import wire
from mcpsniff.demo.server import DemoServer, ServerOptions

INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"},
}


class Harness:
    """A DemoServer whose output is collected in a list."""

    def __init__(self, **options: Any) -> None:
        self.out: list[Any] = []
        self.server = DemoServer(self.out.append, ServerOptions(**options), sleep=lambda _s: None)
        self._id = 0

    def line(self, raw: bytes) -> list[Any]:
        self.out.clear()
        self.server.handle_line(raw)
        return list(self.out)

    def send(self, message: Any) -> list[Any]:
        return self.line(wire.encode(message))

    def call(self, method: str, params: dict[str, Any] | None = None) -> list[Any]:
        self._id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._id, "method": method}
        if params is not None:
            message["params"] = params
        return self.send(message)

    def result(self, method: str, params: dict[str, Any] | None = None) -> Any:
        out = self.call(method, params)
        assert out[-1]["id"] == self._id
        assert "error" not in out[-1], out[-1]
        return out[-1]["result"]

    def error(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        out = self.call(method, params)
        assert out[-1]["id"] == self._id
        return out[-1]["error"]

    def initialize(self, version: str = "2025-11-25") -> Any:
        result = self.result("initialize", {**INIT, "protocolVersion": version})
        assert self.send({"jsonrpc": "2.0", "method": "notifications/initialized"}) == []
        return result


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
def test_supported_version_is_accepted(version: str) -> None:
    result = Harness().initialize(version)
    assert result["protocolVersion"] == version
    assert result["capabilities"] == {
        "tools": {"listChanged": False},
        "resources": {"subscribe": False, "listChanged": False},
        "prompts": {"listChanged": False},
        "logging": {},
    }
    assert result["serverInfo"]["name"] == "mcpsniff-demo-server"


@pytest.mark.parametrize("requested", ["2099-01-01", "1.0", None])
def test_unsupported_version_gets_the_latest(requested: Any) -> None:
    h = Harness()
    assert h.result("initialize", {**INIT, "protocolVersion": requested}) is not None
    assert h.server.version == "2025-11-25"


def test_second_initialize_is_refused() -> None:
    h = Harness()
    h.initialize()
    assert h.error("initialize", INIT)["code"] == -32600


def test_ping_and_unknown_method() -> None:
    h = Harness()
    h.initialize()
    assert h.result("ping") == {}
    error = h.error("tools/frobnicate", {})
    assert error == {
        "code": -32601,
        "message": "Method not found",
        "data": {"method": "tools/frobnicate"},
    }


def test_notifications_get_no_reply() -> None:
    h = Harness()
    h.initialize()
    assert (
        h.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        == []
    )
    assert h.send({"jsonrpc": "2.0", "method": "notifications/whatever"}) == []


def test_parse_error_has_null_id() -> None:
    out = Harness().line(b'{"jsonrpc": "2.0", "id": 1, "method": \n')
    assert out == [
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    ]


def test_blank_line_is_ignored() -> None:
    assert Harness().line(b"\r\n") == []


@pytest.mark.parametrize(
    ("message", "expected_id"),
    [
        ({"id": 4, "method": "ping"}, 4),  # no "jsonrpc"
        ({"jsonrpc": "2.0", "id": 5}, 5),  # neither method nor result
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),  # null id
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None),  # fractional id
        ("hello", None),
    ],
)
def test_invalid_requests(message: Any, expected_id: Any) -> None:
    out = Harness().send(message)
    assert len(out) == 1
    assert out[0]["id"] == expected_id
    assert out[0]["error"]["code"] == -32600


def test_responses_from_the_client_are_ignored() -> None:
    assert Harness().send({"jsonrpc": "2.0", "id": 9, "result": {}}) == []


def test_tools_list() -> None:
    h = Harness()
    h.initialize()
    tools = {t["name"]: t for t in h.result("tools/list")["tools"]}
    assert sorted(tools) == ["add", "echo", "slow_count"]
    assert tools["add"]["inputSchema"]["required"] == ["a", "b"]
    assert tools["add"]["outputSchema"]["properties"] == {"sum": {"type": "integer"}}
    assert "outputSchema" not in tools["echo"]
    assert h.error("tools/list", {"cursor": "x"})["code"] == -32602


def test_add_returns_structured_content_and_text() -> None:
    h = Harness()
    h.initialize()
    result = h.result("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert result["structuredContent"] == {"sum": 5}
    assert result["isError"] is False
    assert orjson.loads(result["content"][0]["text"]) == {"sum": 5}


def test_add_before_2025_06_18_has_no_structured_output() -> None:
    h = Harness()
    h.initialize("2025-03-26")
    assert all("outputSchema" not in t for t in h.result("tools/list")["tools"])
    result = h.result("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
    assert "structuredContent" not in result
    assert result["content"] == [{"type": "text", "text": '{"sum": 2}'}]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"a": 1}, "missing required argument 'b'"),
        ({"a": "1", "b": 2}, "argument 'a' must be of type integer"),
        ({"a": True, "b": 2}, "argument 'a' must be of type integer"),
        ({"a": 1, "b": 2, "c": 3}, "unexpected argument 'c'"),
    ],
)
def test_bad_arguments_are_a_tool_error(arguments: dict[str, Any], problem: str) -> None:
    h = Harness()
    h.initialize()
    result = h.result("tools/call", {"name": "add", "arguments": arguments})
    assert result == {"content": [{"type": "text", "text": f"add: {problem}"}], "isError": True}


def test_unknown_tool_is_a_protocol_error() -> None:
    h = Harness()
    h.initialize()
    error = h.error("tools/call", {"name": "nope", "arguments": {}})
    assert error["code"] == -32602
    assert error["data"] == {"tool": "nope"}
    assert h.error("tools/call", {"arguments": {}})["code"] == -32602
    assert h.error("tools/call", {"name": "echo", "arguments": [1]})["code"] == -32602


def test_echo() -> None:
    h = Harness()
    h.initialize()
    result = h.result("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert result == {"content": [{"type": "text", "text": "hi"}], "isError": False}


def test_slow_count_reports_progress_before_answering() -> None:
    h = Harness()
    h.initialize()
    params = {"name": "slow_count", "arguments": {"n": 4}, "_meta": {"progressToken": 77}}
    out = h.call("tools/call", params)
    progress = [m["params"] for m in out[:-1]]
    assert [m["method"] for m in out[:-1]] == ["notifications/progress"] * 4
    assert [p["progress"] for p in progress] == [1, 2, 3, 4]
    assert {p["progressToken"] for p in progress} == {77}
    assert {p["total"] for p in progress} == {4}
    assert out[-1]["result"]["content"] == [{"type": "text", "text": "counted to 4"}]


def test_slow_count_without_token_sends_no_progress() -> None:
    h = Harness()
    h.initialize()
    out = h.call("tools/call", {"name": "slow_count", "arguments": {"n": 2}})
    assert len(out) == 1
    assert out[0]["result"]["isError"] is False


def test_progress_has_no_message_in_2024_11_05() -> None:
    h = Harness()
    h.initialize("2024-11-05")
    params = {"name": "slow_count", "arguments": {"n": 1}, "_meta": {"progressToken": "t"}}
    out = h.call("tools/call", params)
    assert out[0]["params"] == {"progressToken": "t", "progress": 1, "total": 1}


def test_log_messages_follow_the_level() -> None:
    h = Harness()
    h.initialize()
    echo = {"name": "echo", "arguments": {"text": "x"}}
    assert len(h.call("tools/call", echo)) == 1  # no level set yet: quiet
    assert h.result("logging/setLevel", {"level": "warning"}) == {}
    assert len(h.call("tools/call", echo)) == 1  # info is below warning
    assert h.result("logging/setLevel", {"level": "debug"}) == {}
    out = h.call("tools/call", echo)
    assert out[0]["method"] == "notifications/message"
    assert out[0]["params"]["level"] == "info"
    assert out[0]["params"]["data"]["tool"] == "echo"
    assert h.error("logging/setLevel", {"level": "loud"})["code"] == -32602


def test_resources() -> None:
    h = Harness()
    h.initialize()
    resources = h.result("resources/list")["resources"]
    assert [r["uri"] for r in resources] == ["demo://readme", "demo://config.json"]
    contents = h.result("resources/read", {"uri": "demo://config.json"})["contents"]
    assert contents[0]["uri"] == "demo://config.json"
    assert orjson.loads(contents[0]["text"])["greeting"] == "hello"
    error = h.error("resources/read", {"uri": "demo://missing"})
    assert error["code"] == -32002
    assert error["data"] == {"uri": "demo://missing"}


def test_prompts() -> None:
    h = Harness()
    h.initialize()
    prompts = {p["name"]: p for p in h.result("prompts/list")["prompts"]}
    assert prompts["greet"]["arguments"][0] == {
        "name": "name",
        "description": "Who to greet.",
        "required": True,
    }
    got = h.result("prompts/get", {"name": "greet", "arguments": {"name": "Ada", "style": "warm"}})
    assert got["messages"] == [
        {
            "role": "user",
            "content": {"type": "text", "text": "Please write a friendly warm greeting for Ada."},
        }
    ]
    assert h.error("prompts/get", {"name": "greet", "arguments": {}})["code"] == -32602
    assert h.error("prompts/get", {"name": "greet", "arguments": {"name": 1}})["code"] == -32602
    assert h.error("prompts/get", {"name": "nope"})["code"] == -32602


def test_string_ids_option_echoes_ids_as_strings() -> None:
    h = Harness(string_ids=True)
    out = h.call("initialize", INIT)
    assert out[0]["id"] == "1"
    assert h.call("nope")[0]["id"] == "2"


def test_batches_only_in_2025_03_26() -> None:
    h = Harness()
    h.initialize("2025-03-26")
    out = h.send(
        [
            {"jsonrpc": "2.0", "id": 10, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 11, "method": "nope"},
        ]
    )
    assert len(out) == 1
    assert [r["id"] for r in out[0]] == [10, 11]
    assert out[0][1]["error"]["code"] == -32601
    assert h.send([{"jsonrpc": "2.0", "method": "notifications/initialized"}]) == []
    assert h.send([])[0]["error"]["code"] == -32600

    newer = Harness()
    newer.initialize()
    out = newer.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert out == [
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}
    ]


def test_big_integers_survive() -> None:
    h = Harness()
    h.initialize()
    big = 2**70
    result = h.result("tools/call", {"name": "add", "arguments": {"a": big, "b": 1}})
    assert result["structuredContent"] == {"sum": big + 1}
    assert wire.encode(result).endswith(b"\n")


def _run_server(args: list[str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "mcpsniff.demo.server", *args],
        input=stdin,
        capture_output=True,
        timeout=30,
        check=False,
    )


def test_process_serves_until_eof_and_logs_to_stderr() -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}
    done = _run_server([], wire.encode(request) + b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
    assert done.returncode == 0
    lines = done.stdout.splitlines(keepends=True)
    assert all(line.endswith(b"\n") for line in lines)
    replies = [orjson.loads(line) for line in lines]
    assert [r["id"] for r in replies] == [1, 2]
    assert replies[0]["result"]["protocolVersion"] == "2025-11-25"
    assert replies[1]["result"] == {}
    log = done.stderr.decode()
    assert "demo server: started" in log
    assert log.rstrip().endswith("demo server: stdin closed; exiting")


def test_process_banner_pollutes_stdout_first() -> None:
    done = _run_server(["--banner"], b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    assert done.returncode == 0
    assert done.stdout.splitlines()[0] == b"Loading model..."
    assert orjson.loads(done.stdout.splitlines()[1])["id"] == 1


def test_process_exits_0_on_immediate_eof() -> None:
    done = _run_server([], b"")
    assert done.returncode == 0
    assert done.stdout == b""
