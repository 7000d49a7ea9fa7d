"""``mcpsniff stdio --otlp`` and ``mcpsniff http --otlp``: live export to a real collector.

Real peers: the official SDK 2.x client and server over stdio, server-everything
(npm) over stdio driven by a scripted client that puts a W3C ``traceparent`` in
``_meta``, and server-everything over Streamable HTTP with the SDK client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.core.model import MessageRecord
from mcpsniff.trace.reader import TraceReader
from tests.e2e.sdk_peers import SDK2_PYTHON, SDK_CLIENT, client_result
from tests.export.collector import Collector, free_port, start_collector
from tests.export.http_session import EVERYTHING_JS, record_http_session
from tests.export.support import ROOT

pytest.importorskip("opentelemetry.sdk", reason='needs the otel extra: pip install ".[otel]"')

SDK2_SERVER = ROOT / "tests" / "e2e" / "peers" / "sdk2_server.py"
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
TIMEOUT = 60


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collector]:
    running = start_collector(tmp_path_factory.mktemp("rotel-live"))
    yield running
    running.stop()


def relay_command(trace: Path, otlp: str, *server: str) -> list[str]:
    relay = [sys.executable, "-m", "mcpsniff", "stdio", "--otlp", otlp, "--trace", str(trace)]
    return [*relay, "--", *server]


def run_sdk_client(trace: Path, otlp: str, *options: str) -> dict[str, Any]:
    """The SDK client and server through ``mcpsniff stdio --otlp OTLP OPTIONS``."""
    if not SDK2_PYTHON.exists():
        pytest.skip("end-to-end peers not installed; run scripts/setup-peers.sh")
    command = relay_command(trace, otlp, str(SDK2_PYTHON), str(SDK2_SERVER))
    at = command.index("--")
    command[at:at] = options
    client = subprocess.Popen(
        [str(SDK2_PYTHON), str(SDK_CLIENT), "--", *command],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    return client_result(client, "SDK client through mcpsniff stdio --otlp")


def messages(trace: Path) -> list[MessageRecord]:
    with TraceReader(trace) as reader:
        return [r for r in reader.records() if isinstance(r, MessageRecord)]


def test_live_stdio_session_with_the_sdk_peers(collector: Collector, tmp_path: Path) -> None:
    trace = tmp_path / "live.jsonl"
    run_sdk_client(trace, collector.http_url)
    recorded = [m for m in messages(trace) if m.kind in ("request", "notification")]
    assert recorded, "the trace has no requests"
    spans = collector.spans(wait_for=2 * len(recorded))
    clients = [s for s in spans if s["kind"] == "SPAN_KIND_CLIENT"]
    servers = {s["parent_id"]: s for s in spans if s["kind"] == "SPAN_KIND_SERVER"}
    calls = [s for s in clients if s["name"] == "tools/call echo"]
    assert len(calls) == 1
    call = calls[0]
    server = servers[call["span_id"]]
    assert server["name"] == "tools/call echo"
    assert server["trace_id"] == call["trace_id"]
    for span in (call, server):
        attributes = span["attributes"]
        assert attributes["mcp.method.name"] == "tools/call"
        assert attributes["gen_ai.tool.name"] == "echo"
        assert attributes["gen_ai.operation.name"] == "execute_tool"
        assert attributes["network.transport"] == "pipe"
        # The SDK 2.x peers speak the stateless era: a version, and no session id.
        assert attributes["mcp.protocol.version"] == "2026-07-28"
        assert "mcp.session.id" not in attributes
    methods = sorted(m.method for m in recorded if m.method)
    assert sorted(s["attributes"]["mcp.method.name"] for s in clients) == methods
    assert collector.metric_points("mcp.client.operation.duration")
    # The spans' service is the server, as its serverInfo names it.
    assert "service.name: Str(mcpsniff-e2e-sdk2)" in collector.text()


def test_live_service_is_the_name_a_person_gave(collector: Collector, tmp_path: Path) -> None:
    run_sdk_client(tmp_path / "named.jsonl", collector.http_url, "--name", "weather-live")
    deadline = time.monotonic() + TIMEOUT
    while "service.name: Str(weather-live)" not in collector.text():
        assert time.monotonic() < deadline, "no span with service.name weather-live"
        time.sleep(0.1)


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def _receive(proc: subprocess.Popen[bytes], id_: int) -> dict[str, Any]:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, "the server closed its stdout"
        message = json.loads(line)
        if message.get("id") == id_:
            return message


def test_live_traceparent_from_meta_parents_the_spans(collector: Collector, tmp_path: Path) -> None:
    index = EVERYTHING_JS / "dist" / "index.js"
    if not index.exists():
        pytest.skip("server-everything not installed; run scripts/setup-peers.sh")
    trace = tmp_path / "tp.jsonl"
    proc = subprocess.Popen(
        relay_command(trace, collector.http_url, "node", str(index), "stdio"),
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _send(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "tp-client", "version": "1"},
                },
            },
        )
        assert "result" in _receive(proc, 1)
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {
                    "name": "echo",
                    "arguments": {"message": "traced"},
                    "_meta": {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"},
                },
            },
        )
        answer = _receive(proc, 2)
        assert answer["result"]["content"][0]["text"] == "Echo: traced"
    finally:
        # End of input: the server exits, then mcpsniff (it closes the sink last).
        _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err.decode(errors="replace")
    traced = collector.wait(lambda spans: [s for s in spans if s["trace_id"] == TRACE_ID], 2)
    [client] = [s for s in traced if s["kind"] == "SPAN_KIND_CLIENT"]
    [server] = [s for s in traced if s["kind"] == "SPAN_KIND_SERVER"]
    assert client["parent_id"] == PARENT_ID
    assert server["parent_id"] == client["span_id"]
    assert client["name"] == "tools/call echo"
    assert client["attributes"]["mcp.protocol.version"] == "2025-11-25"


def test_collector_down_costs_one_warning(tmp_path: Path) -> None:
    if not SDK2_PYTHON.exists():
        pytest.skip("end-to-end peers not installed; run scripts/setup-peers.sh")
    trace = tmp_path / "down.jsonl"
    down = f"http://127.0.0.1:{free_port()}"
    command = relay_command(trace, down, str(SDK2_PYTHON), str(SDK2_SERVER))
    client = subprocess.Popen(
        [str(SDK2_PYTHON), str(SDK_CLIENT), "--", *command],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "OTEL_EXPORTER_OTLP_TIMEOUT": "1"},
    )
    out, err = client.communicate(timeout=TIMEOUT)
    assert client.returncode == 0, err.decode(errors="replace")
    result = json.loads(out)
    assert result  # the whole plan ran: the relay worked
    text = err.decode(errors="replace")
    warnings = [line for line in text.splitlines() if "OTLP" in line]
    assert len(warnings) == 1, text
    assert "did not take the spans" in warnings[0] or "could not send" in warnings[0]
    assert "Traceback" not in text
    # The trace is complete all the same.
    assert any(m.method == "tools/call" for m in messages(trace))


def test_bad_otlp_option_fails_before_relaying(tmp_path: Path) -> None:
    proc = subprocess.run(
        relay_command(tmp_path / "x.jsonl", "ftp://nowhere", sys.executable, "-c", "pass"),
        cwd=ROOT,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 2
    assert b"http:// or https://" in proc.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_live_http_relay_exports_with_the_upstream_address(
    collector: Collector, tmp_path: Path
) -> None:
    before = len(collector.spans(wait_for=0))
    trace, stderr = record_http_session(tmp_path, "--otlp", collector.http_url)
    assert "OTLP" not in stderr, stderr
    echo = collector.wait(
        lambda spans: [
            s
            for s in spans[before:]
            if s["name"] == "tools/call echo" and s["attributes"].get("network.transport") == "tcp"
        ],
        2,
    )
    assert len(echo) == 2
    for span in echo:
        attributes = span["attributes"]
        assert attributes["server.address"] == "127.0.0.1"
        assert isinstance(attributes["server.port"], int)
        assert attributes["mcp.protocol.version"] == "2025-11-25"
        assert len(attributes["mcp.session.id"]) > 8
    assert trace.exists()
