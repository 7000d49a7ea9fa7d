"""A real SDK 2.x client's W3C trace context, through mcpsniff: shown, filtered, exported.

The official Python SDK 2.x injects ``traceparent`` into ``params._meta`` of
every request it sends (SEP-414) when a span is current. The client peer
attaches a remote parent of known ids; mcpsniff records the session with real
servers (the SDK 2.x server, 2026-07-28, and server-everything, 2025-11-25,
after the SDK's discover probe), then ``show`` must name that trace on every
request and its response, ``check`` must raise nothing about it, and ``export
otlp`` must put the operations inside that trace at a real collector (rotel).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main

REPO = Path(__file__).resolve().parents[2]
PEERS = REPO / ".peers"
SDK2_PYTHON = PEERS / "sdk2" / "bin" / "python"
PEER_SCRIPTS = Path(__file__).resolve().parent / "peers"
TRACED_CLIENT = PEER_SCRIPTS / "sdk2_traced_client.py"
SDK2_SERVER = PEER_SCRIPTS / "sdk2_server.py"
EVERYTHING_JS = (
    PEERS / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
) / "index.js"
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
TIMEOUT = 90

SERVERS = {
    "sdk2-server": ([str(SDK2_PYTHON), str(SDK2_SERVER)], "2026-07-28"),
    "server-everything": (["node", str(EVERYTHING_JS), "stdio"], "2025-11-25"),
}


@pytest.fixture(scope="module", params=list(SERVERS))
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    command, version = SERVERS[request.param]
    if not SDK2_PYTHON.exists():
        pytest.skip("end-to-end peers not installed; run scripts/setup-peers.sh")
    if command[0] == "node" and (shutil.which("node") is None or not EVERYTHING_JS.exists()):
        pytest.skip("server-everything or node not installed; run scripts/setup-peers.sh")
    trace = tmp_path_factory.mktemp(request.param) / "traced.jsonl"
    relay = [sys.executable, "-m", "mcpsniff", "stdio", "--trace", str(trace), "--"]
    done = subprocess.run(
        [str(SDK2_PYTHON), str(TRACED_CLIENT), TRACE_ID, PARENT_ID, "--", *relay, *command],
        cwd=REPO,
        capture_output=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    answer = json.loads(done.stdout)
    assert answer["text"] == "Echo: traced"
    assert answer["protocol_version"] == version
    return trace


def _show_json(trace: Path, *args: str) -> list[dict[str, Any]]:
    outcome = CliRunner().invoke(main, ["show", str(trace), "--format", "json", *args])
    assert outcome.exit_code == 0, outcome.output
    return [json.loads(line) for line in outcome.stdout.splitlines()]


def test_show_names_the_callers_trace_on_every_request(recorded: Path) -> None:
    objs = _show_json(recorded)
    requests = [o for o in objs if o["kind"] == "request" and o["dir"] == "c2s"]
    assert "tools/call" in {o["method"] for o in requests}
    for obj in requests:
        assert obj["trace"]["valid"] is True, obj
        assert obj["trace"]["trace_id"] == TRACE_ID
        assert obj["trace"]["parent_id"] == PARENT_ID
        assert obj["trace"]["sampled"] is True
    answers = [o for o in objs if o["kind"] in ("response", "error") and o["dir"] == "s2c"]
    assert answers and all(o["trace_id"] == TRACE_ID for o in answers)
    text = CliRunner().invoke(main, ["show", str(recorded)]).stdout
    call = next(line for line in text.splitlines() if "request" in line and "tools/call" in line)
    assert call.endswith("trace=0af76519")


def test_filter_selects_by_trace_id(recorded: Path) -> None:
    everything = [o for o in _show_json(recorded) if o["kind"] != "event"]
    mine = _show_json(recorded, "--filter", f"trace.id == {TRACE_ID}")
    # Requests and their answers; a message without _meta (notifications/initialized) not.
    traced = {o["seq"] for o in everything if "trace" in o or "trace_id" in o}
    assert {o["seq"] for o in mine} == traced
    assert "tools/call" in {o.get("method") for o in mine}
    assert _show_json(recorded, "--filter", "trace.problem") == []


def test_check_finds_nothing_about_the_trace_context(recorded: Path) -> None:
    outcome = CliRunner().invoke(main, ["check", str(recorded), "--format", "json"])
    assert "traceparent" not in outcome.stdout
    rules = {json.loads(line)["rule"] for line in outcome.stdout.splitlines()}
    assert "MSG-META-KEYS" not in rules


def test_export_puts_the_operations_inside_the_callers_trace(
    recorded: Path, tmp_path: Path
) -> None:
    pytest.importorskip("opentelemetry.sdk", reason='needs the otel extra: pip install ".[otel]"')
    from tests.export.collector import start_collector

    collector = start_collector(tmp_path)
    try:
        outcome = CliRunner().invoke(
            main, ["export", "otlp", str(recorded), "--endpoint", collector.http_url]
        )
        assert outcome.exit_code == 0, outcome.output
        spans = collector.wait(
            lambda got: [s for s in got if s["name"].startswith("tools/call")], 2
        )
    finally:
        collector.stop()
    client = next(s for s in spans if s["kind"] == "SPAN_KIND_CLIENT")
    server = next(s for s in spans if s["kind"] == "SPAN_KIND_SERVER")
    assert client["trace_id"] == TRACE_ID and client["parent_id"] == PARENT_ID
    assert server["trace_id"] == TRACE_ID and server["parent_id"] == client["span_id"]
