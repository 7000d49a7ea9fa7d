"""``show`` names the layer of every error: timeline, -v and --format json."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.trace.writer import TraceWriter
from tests.conftest import Conversation, error, request, result


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    c = Conversation()
    c.handshake()
    c.client(request(1, "bogus/method"))
    c.server(error(1, -32601, "no such method"))
    c.client(request(2, "resources/read", {"uri": "file:///nope"}))
    c.server(error(2, -32002, "not found"))
    c.client(request(3, "tools/list"))
    c.server(error(3, -32650, "odd"))
    c.client(request(4, "prompts/list"))
    c.server(error(4, 42, "quota exceeded"))
    c.client(request(5, "tools/call", {"name": "t", "arguments": {}}))
    c.server(result(5, {"content": [], "isError": True}))
    c.client(request(6, "tools/call", {"name": "t", "arguments": {}}))
    c.server({"jsonrpc": "2.0", "id": 6, "error": {"code": "E_\x1b[31m", "message": "m"}})
    c.close()
    path = tmp_path_factory.mktemp("layers") / "t.jsonl"
    writer = TraceWriter.create(path, meta={})
    writer.write_all(c.records)
    writer.close()
    return path


def show(*args: str) -> list[str]:
    outcome = CliRunner().invoke(main, ["show", *args])
    assert outcome.exit_code == 0, outcome.output
    return outcome.output.splitlines()


def _line_of(lines: list[str], id_: int) -> str:
    return next(line for line in lines if "error" in line and f"id={id_} " in line)


def test_timeline_names_each_error_layer(trace: Path) -> None:
    lines = show(str(trace))
    assert "code=-32601 Method not found [JSON-RPC protocol]" in _line_of(lines, 1)
    assert (
        "code=-32002 Resource not found (MCP 2024-11-05..2025-11-25) [server-error range]"
        in _line_of(lines, 2)
    )
    assert (
        "code=-32650 reserved for future use, undefined by JSON-RPC 2.0 [JSON-RPC protocol]"
        in _line_of(lines, 3)
    )
    assert "code=42 [application]" in _line_of(lines, 4)
    i = next(n for n, line in enumerate(lines) if "result" in line and "id=5 " in line)
    assert lines[i + 1].strip() == "✖ tool error (result with isError: true)"


def test_a_hostile_non_integer_code_is_escaped_and_named(trace: Path) -> None:
    line = _line_of(show(str(trace)), 6)
    assert "\x1b" not in line
    assert "not an integer, which JSON-RPC 2.0 §5.1 requires [application]" in line


def test_verbose_keeps_the_layer_on_the_timeline_line(trace: Path) -> None:
    lines = show(str(trace), "-vv", "--filter", "id == 1")
    assert "code=-32601 Method not found [JSON-RPC protocol]" in _line_of(lines, 1)


def test_json_carries_the_error_layer(trace: Path) -> None:
    objs = [orjson.loads(line) for line in show(str(trace), "--format", "json")]
    by_id = {(o.get("id"), o["kind"]): o for o in objs if "id" in o}
    assert by_id[(1, "error")]["error_layer"] == {
        "layer": "protocol",
        "title": "JSON-RPC protocol error (-32768..-32600)",
        "name": "Method not found",
        "defined_by": "JSON-RPC 2.0",
    }
    assert by_id[(2, "error")]["error_layer"]["defined_by"] == "MCP 2024-11-05..2025-11-25"
    assert by_id[(2, "error")]["error_layer"]["layer"] == "server"
    assert by_id[(3, "error")]["error_layer"]["note"].startswith("reserved for future use")
    assert by_id[(4, "error")]["error_layer"] == {
        "layer": "application",
        "title": "application error",
    }
    assert by_id[(5, "response")]["error_layer"]["layer"] == "tool"
    assert "error_layer" not in by_id[(1, "request")]
    assert "error_layer" not in by_id[(0, "response")]
