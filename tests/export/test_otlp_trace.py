"""``mcpsniff export otlp``: a recorded session, received by a real collector (rotel)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main

from .collector import Collector, start_collector
from .support import write_stdio_trace

pytest.importorskip("opentelemetry.sdk", reason='needs the otel extra: pip install ".[otel]"')

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collector]:
    running = start_collector(tmp_path_factory.mktemp("rotel"))
    yield running
    running.stop()


def req(id_: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return message


def ok(id_: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def session_frames(marker: str) -> list[tuple[str, Any]]:
    """A 2025-11-25 stdio session exercising every attribute the conventions name."""
    return [
        ("c2s", req(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})),
        (
            "s2c",
            ok(
                0,
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                    "serverInfo": {"name": "s", "version": "1"},
                },
            ),
        ),
        ("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        (
            "c2s",
            req(
                1,
                "tools/call",
                {
                    "name": f"echo-{marker}",
                    "arguments": {"text": "hi", "api_key": "sk-live-0123456789abcdef0123"},
                    "_meta": {"traceparent": TRACEPARENT, "tracestate": "rojo=00f067aa0ba902b7"},
                },
            ),
        ),
        ("s2c", ok(1, {"content": [{"type": "text", "text": "hi"}]})),
        ("c2s", req(2, "tools/call", {"name": "fail", "arguments": {}})),
        ("s2c", ok(2, {"content": [{"type": "text", "text": "boom"}], "isError": True})),
        ("c2s", req(3, "resources/read", {"uri": "file:///tmp/x.txt"})),
        (
            "s2c",
            {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "no such resource"}},
        ),
        ("c2s", req(4, "prompts/get", {"name": "greet"})),
        ("s2c", ok(4, {"messages": []})),
        # A server-initiated request: its CLIENT span belongs to the server.
        ("s2c", req("srv-1", "roots/list")),
        ("c2s", ok("srv-1", {"roots": []})),
        ("s2c", b"Loading model...\n"),
        ("c2s", req(5, "tools/call", {"name": "never", "arguments": {}})),
    ]


def export(trace: Path, *args: str, **env: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["export", "otlp", str(trace), *args], env=env or None)
    return result.exit_code, result.output


def pairs(spans: list[dict[str, Any]], name: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(CLIENT, SERVER) span pairs named ``name``, matched by parent id."""
    clients = [s for s in spans if s["name"] == name and s["kind"] == "SPAN_KIND_CLIENT"]
    servers = {s["parent_id"]: s for s in spans if s["kind"] == "SPAN_KIND_SERVER"}
    return [(c, servers[c["span_id"]]) for c in clients if c["span_id"] in servers]


@pytest.fixture(scope="module")
def received(
    collector: Collector, tmp_path_factory: pytest.TempPathFactory
) -> list[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("session")
    trace = write_stdio_trace(folder / "t.jsonl", session_frames("a"), session="sess-a")
    code, output = export(trace, "--endpoint", collector.http_url)
    assert code == 0, output
    assert "sent 18 span(s) for 8 MCP operation(s)" in output
    spans = [s for s in collector.spans(wait_for=19) if "echo-b" not in s["name"]]
    return spans


def test_every_operation_is_a_client_and_a_server_span(received: list[dict[str, Any]]) -> None:
    names = sorted(s["name"] for s in received if s["kind"] == "SPAN_KIND_CLIENT")
    assert names == sorted(
        [
            "initialize",
            "notifications/initialized",
            "tools/call echo-a",
            "tools/call fail",
            "resources/read",
            "prompts/get greet",
            "roots/list",
            "tools/call never",
        ]
    )
    for client, server in pairs(received, "initialize"):
        assert server["trace_id"] == client["trace_id"]
        assert client["parent_id"] == ""
        assert server["attributes"]["mcp.method.name"] == "initialize"
        assert client["attributes"]["jsonrpc.request.id"] == "0"
        assert client["attributes"]["network.transport"] == "pipe"
        assert client["attributes"]["mcp.protocol.version"] == "2025-11-25"


def test_traceparent_in_meta_makes_the_pair_part_of_the_callers_trace(
    received: list[dict[str, Any]],
) -> None:
    [(client, server)] = pairs(received, "tools/call echo-a")
    assert client["trace_id"] == TRACE_ID
    assert client["parent_id"] == PARENT_ID
    assert server["trace_id"] == TRACE_ID
    assert server["parent_id"] == client["span_id"]
    attributes = client["attributes"]
    assert attributes["gen_ai.tool.name"] == "echo-a"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["mcp.method.name"] == "tools/call"
    assert "error.type" not in attributes
    assert client["status"] == "STATUS_CODE_UNSET"
    # Opt-in content is off by default.
    assert "gen_ai.tool.call.arguments" not in attributes
    assert "gen_ai.tool.call.result" not in attributes


def test_errors_set_error_type_and_status(received: list[dict[str, Any]]) -> None:
    [(client, server)] = pairs(received, "tools/call fail")
    for span in (client, server):
        assert span["attributes"]["error.type"] == "tool_error"
        assert span["status"] == "STATUS_CODE_ERROR"
        assert "rpc.response.status_code" not in span["attributes"]
    [(client, server)] = pairs(received, "resources/read")
    for span in (client, server):
        assert span["attributes"]["mcp.resource.uri"] == "file:///tmp/x.txt"
        assert span["attributes"]["error.type"] == "-32602"
        assert span["attributes"]["rpc.response.status_code"] == "-32602"
        assert span["status"] == "STATUS_CODE_ERROR"
        assert span["status_message"] == "no such resource"
    [(client, _)] = pairs(received, "prompts/get greet")
    assert client["attributes"]["gen_ai.prompt.name"] == "greet"
    assert client["status"] == "STATUS_CODE_UNSET"


def test_server_initiated_request_and_unanswered_request(received: list[dict[str, Any]]) -> None:
    [(client, server)] = pairs(received, "roots/list")
    assert client["attributes"]["mcpsniff.direction"] == "server_to_client"
    assert client["attributes"]["jsonrpc.request.id"] == "srv-1"
    assert server["parent_id"] == client["span_id"]
    [(client, _)] = pairs(received, "tools/call never")
    assert client["attributes"]["error.type"] == "no_response"
    assert [e["name"] for e in client["events"]] == ["JR-RESP-REQUIRED"]
    event = client["events"][0]["attributes"]
    assert event["mcpsniff.finding.severity"] == "error"
    assert "never answered" in event["mcpsniff.finding.message"]


def test_a_finding_about_no_request_is_its_own_span(received: list[dict[str, Any]]) -> None:
    lone = [s for s in received if s["name"] == "mcpsniff finding JR-PARSE"]
    assert len(lone) == 1
    assert lone[0]["kind"] == "SPAN_KIND_INTERNAL"
    assert lone[0]["status"] == "STATUS_CODE_ERROR"
    assert [e["name"] for e in lone[0]["events"]] == ["JR-PARSE"]


def test_operation_duration_metrics_reach_the_collector(
    received: list[dict[str, Any]], collector: Collector
) -> None:
    points = collector.metric_points("mcp.client.operation.duration")
    by_method: dict[str, int] = {}
    for point in points:
        method = point["attributes"]["mcp.method.name"]
        by_method[method] = by_method.get(method, 0) + point["count"]
    assert by_method["tools/call"] >= 3
    assert by_method["initialize"] >= 1
    tool_error = [p for p in points if p["attributes"].get("error.type") == "tool_error"]
    assert tool_error and tool_error[0]["attributes"]["gen_ai.tool.name"] == "fail"
    # Each operation took 10 ms between its frames in the recorded session.
    assert tool_error[0]["sum"] == pytest.approx(0.010, abs=0.002)
    assert collector.metric_points("mcp.server.operation.duration")
    sessions = collector.metric_points("mcp.client.session.duration")
    assert sessions and sessions[0]["count"] >= 1


def test_grpc_include_content_redacts_and_filter_selects(
    collector: Collector, tmp_path: Path, received: list[dict[str, Any]]
) -> None:
    trace = write_stdio_trace(tmp_path / "t.jsonl", session_frames("b"), session="sess-b")
    code, output = export(
        trace,
        "--endpoint",
        collector.grpc_url,
        "--protocol",
        "grpc",
        "--include-content",
        "--filter",
        "tool == 'echo-b'",
    )
    assert code == 0, output
    assert "for 1 MCP operation(s)" in output
    spans = collector.spans(wait_for=len(received) + 2)
    mine = [s for s in spans if s["name"] == "tools/call echo-b"]
    assert len(mine) == 2
    arguments = mine[0]["attributes"]["gen_ai.tool.call.arguments"]
    assert '"text":"hi"' in arguments
    assert "sk-live" not in arguments and "[REDACTED]" in arguments
    assert '"hi"' in mine[0]["attributes"]["gen_ai.tool.call.result"]


def test_collector_down_is_a_clear_error(tmp_path: Path) -> None:
    from .collector import free_port

    trace = write_stdio_trace(tmp_path / "t.jsonl", session_frames("c"))
    code, output = export(
        trace,
        "--endpoint",
        f"http://127.0.0.1:{free_port()}",
        OTEL_EXPORTER_OTLP_TIMEOUT="1",
    )
    assert code == 2
    assert "did not take the export" in output
    assert "Traceback" not in output


def test_environment_variables_configure_the_export(collector: Collector, tmp_path: Path) -> None:
    trace = write_stdio_trace(tmp_path / "t.jsonl", session_frames("env"))
    code, output = export(
        trace,
        OTEL_EXPORTER_OTLP_ENDPOINT=collector.http_url,
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_SERVICE_NAME="mcpsniff-env-test",
    )
    assert code == 0, output
    assert collector.http_url in output
    spans = collector.spans(wait_for=1)
    assert any(s["name"] == "tools/call echo-env" for s in spans)
    assert "mcpsniff-env-test" in collector.text()


def test_bad_options_are_one_line_errors(tmp_path: Path) -> None:
    trace = write_stdio_trace(tmp_path / "t.jsonl", session_frames("d"))
    code, output = export(trace, "--endpoint", "ftp://x")
    assert code == 2 and "http:// or https://" in output
    code, output = export(trace, "--endpoint", "http://127.0.0.1:1", "--header", "nokey")
    assert code == 2 and "NAME=VALUE" in output
    code, output = export(tmp_path / "missing.jsonl", "--endpoint", "http://127.0.0.1:1")
    assert code == 2 and "no such file" in output
    assert os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") is None


def test_only_a_valid_traceparent_joins_the_callers_trace(
    collector: Collector, tmp_path: Path
) -> None:
    # The same validation as `show` (core/trace_context.py): uppercase hex, an
    # all-zero trace-id and a version-00 value with a fifth field are not W3C
    # Trace Context, so those requests start traces of their own; a bad
    # tracestate does not spoil a good traceparent.
    upper = f"00-{TRACE_ID.upper()}-{PARENT_ID}-01"
    frames: list[tuple[str, Any]] = [
        ("c2s", req(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})),
        ("s2c", ok(0, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}})),
        ("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
    bad = {
        "upper": upper,
        "zero": f"00-{'0' * 32}-{PARENT_ID}-01",
        "extra": f"{TRACEPARENT}-00",
    }
    for n, (name, value) in enumerate(bad.items(), start=1):
        meta = {"traceparent": value}
        frames.append(("c2s", req(n, "tools/call", {"name": f"tp-{name}", "_meta": meta})))
        frames.append(("s2c", ok(n, {"content": []})))
    meta = {"traceparent": TRACEPARENT, "tracestate": "Not=Valid"}
    frames.append(("c2s", req(9, "tools/call", {"name": "tp-good", "_meta": meta})))
    frames.append(("s2c", ok(9, {"content": []})))
    trace = write_stdio_trace(tmp_path / "tp.jsonl", frames, session="sess-tp")
    code, output = export(trace, "--endpoint", collector.http_url)
    assert code == 0, output
    mine = collector.wait(lambda spans: [s for s in spans if "tp-" in s["name"]], 8)
    by_name = {(s["name"], s["kind"]): s for s in mine}
    for name in bad:
        client = by_name[(f"tools/call tp-{name}", "SPAN_KIND_CLIENT")]
        assert client["parent_id"] == "", name
        assert client["trace_id"] not in (TRACE_ID, "0" * 32), name
    good = by_name[("tools/call tp-good", "SPAN_KIND_CLIENT")]
    assert good["trace_id"] == TRACE_ID and good["parent_id"] == PARENT_ID


def test_the_service_is_the_server_named_in_the_trace(collector: Collector, tmp_path: Path) -> None:
    from mcpsniff.export.otlp_trace import trace_service

    frames = session_frames("svc")
    frames[1] = ("s2c", ok(0, {"protocolVersion": "2025-11-25", "serverInfo": {"name": "wx-7"}}))
    trace = write_stdio_trace(tmp_path / "named.jsonl", frames, session="svc")
    assert trace_service(trace) == "wx-7"
    code, output = export(trace, "--endpoint", collector.http_url)
    assert code == 0, output
    deadline = time.monotonic() + 20
    while "service.name: Str(wx-7)" not in collector.text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "service.name: Str(wx-7)" in collector.text()
    # A trace naming no server keeps mcpsniff's own.
    anonymous = write_stdio_trace(tmp_path / "anon.jsonl", [("c2s", req(1, "ping"))], session="x")
    assert trace_service(anonymous) is None
