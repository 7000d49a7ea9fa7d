"""Correct traffic gives no finding at all: real 2025-11-25 sessions, every feature used.

The official Python SDK 1.x client (``peers/sdk1_everything_client.py``) declares
every client capability, then drives ``@modelcontextprotocol/server-everything``
through every tool it has, including the task-augmented ones (a ``tools/call``
run as a task and polled through ``tasks/get``/``tasks/result``/``tasks/list``,
and the server's own task-augmented ``sampling/createMessage`` and
``elicitation/create`` answered with a CreateTaskResult), plus progress,
sampling, form and URL elicitation, roots, logging, subscriptions, completions
and ping. Both peers are the reference implementations and speak correctly, so
mcpsniff must report nothing, not even at info level, over stdio, Streamable
HTTP and the legacy HTTP+SSE transport; and ``mcpsniff check`` on the trace
must agree with the live relay.

The same client against the SDK 1.x FastMCP server (``peers/sdk1_server.py``,
declaring the logging capability it uses) asks for each handshake-era version in
turn (2024-11-05 to 2025-11-25) over Streamable HTTP: four clean sessions.

Before tasks were modelled, these sessions gave three false errors
(TOOL-RESULT-SHAPE, SAMP-RESULT-SHAPE, ELIC-RESULT-ACTION on CreateTaskResults).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.core.model import FindingRecord, MessageRecord, Record
from mcpsniff.terminal.render import finding_json
from mcpsniff.trace.reader import TraceReader
from tests.e2e.test_http_peers import (
    EVERYTHING_JS,
    PEER_SCRIPTS,
    PEERS,
    REPO,
    Relay,
    Server,
    Trace,
    assert_check_finds_what_the_relay_found,
)

SDK1_PYTHON = PEERS / "sdk1" / "bin" / "python"
CLIENT = PEER_SCRIPTS / "sdk1_everything_client.py"
SDK1_SERVER = PEER_SCRIPTS / "sdk1_server.py"
HANDSHAKE_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
CLIENT_TIMEOUT = 120
STDIO, STREAMABLE, SSE = "stdio", "streamable-http", "sse"

#: Every server-everything tool the client calls (the two toggles are left out:
#: they keep sending for minutes after the call).
EXPECTED_TOOLS = {
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "trigger-long-running-operation",
    "get-roots-list",
    "trigger-elicitation-request",
    "trigger-url-elicitation",
    "trigger-sampling-request",
    "simulate-research-query",
    "trigger-sampling-request-async",
    "trigger-elicitation-request-async",
}


@dataclass
class Session:
    """What the client reported and what mcpsniff recorded."""

    transport: str
    client: dict[str, Any]
    trace: Path
    records: list[Record]

    @property
    def findings(self) -> list[FindingRecord]:
        return [r for r in self.records if isinstance(r, FindingRecord)]

    def methods(self) -> list[str | None]:
        return [r.method for r in self.records if isinstance(r, MessageRecord)]


def _run_client(args: list[str]) -> dict[str, Any]:
    proc = subprocess.run(
        [str(SDK1_PYTHON), str(CLIENT), *args],
        cwd=REPO,
        capture_output=True,
        timeout=CLIENT_TIMEOUT,
    )
    out = json.loads(proc.stdout or b"{}")
    assert proc.returncode == 0, out.get("traceback") or proc.stderr.decode(errors="replace")
    return out


@pytest.fixture(scope="module", params=[STDIO, STREAMABLE, SSE])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Session:
    transport: str = request.param
    for path in (SDK1_PYTHON, EVERYTHING_JS):
        if not path.exists():
            pytest.skip(f"{path.relative_to(REPO)} is missing; run scripts/setup-peers.sh")
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH")
    folder = tmp_path_factory.mktemp(transport)
    trace = folder / "trace.jsonl"
    if transport == STDIO:
        relay = [sys.executable, "-m", "mcpsniff", "stdio", "--trace", str(trace), "--"]
        client = _run_client(["--", *relay, "node", str(EVERYTHING_JS), "stdio"])
        with TraceReader(trace) as reader:
            records = list(reader.records())
            assert reader.torn is None
        return Session(transport, client, trace, records)
    mode = "streamableHttp" if transport == STREAMABLE else "sse"
    server = Server(["node", str(EVERYTHING_JS), mode], {"PORT": "{port}"}, folder / "server.log")
    try:
        relay_proc = Relay(server.url("/mcp" if transport == STREAMABLE else "/sse"), trace)
        try:
            sse = ["--sse"] if transport == SSE else []
            client = _run_client(["--url", relay_proc.url, *sse])
        finally:
            records = relay_proc.stop()
    finally:
        server.stop()
    return Session(transport, client, trace, records)


def test_the_client_used_every_feature(session: Session) -> None:
    client = session.client
    assert client["protocol_version"] == "2025-11-25"
    calls = {c["tool"]: c for c in client["tool_calls"]}
    assert set(calls) == EXPECTED_TOOLS
    research = calls["simulate-research-query"]
    assert research["as_task"] and research["status"] == "completed" and research["listed"]
    assert calls["trigger-long-running-operation"]["progress"] == 3
    methods = set(session.methods())
    for method in (
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "notifications/tasks/status",
        "sampling/createMessage",
        "elicitation/create",
        "roots/list",
        "completion/complete",
        "resources/subscribe",
        "logging/setLevel",
        "ping",
    ):
        assert method in methods, method


def test_no_finding_at_all(session: Session) -> None:
    assert [finding_json(f) for f in session.findings] == []


def test_check_agrees_with_the_live_relay(session: Session) -> None:
    assert_check_finds_what_the_relay_found(Trace(session.trace, session.records))


@pytest.fixture(scope="module", params=HANDSHAKE_VERSIONS)
def fastmcp_session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Session:
    version: str = request.param
    if not SDK1_PYTHON.exists():
        pytest.skip(f"{SDK1_PYTHON.relative_to(REPO)} is missing; run scripts/setup-peers.sh")
    folder = tmp_path_factory.mktemp(f"fastmcp-{version}")
    trace = folder / "trace.jsonl"
    server = Server(
        [str(SDK1_PYTHON), str(SDK1_SERVER), "{port}", "--declare-logging"],
        {},
        folder / "server.log",
    )
    try:
        relay = Relay(server.url("/mcp"), trace)
        try:
            client = _run_client(["--url", relay.url, "--protocol-version", version])
        finally:
            records = relay.stop()
    finally:
        server.stop()
    return Session(f"fastmcp-{version}", client, trace, records)


def test_fastmcp_at_each_handshake_version_gives_no_finding(fastmcp_session: Session) -> None:
    version = fastmcp_session.transport.removeprefix("fastmcp-")
    assert fastmcp_session.client["protocol_version"] == version
    calls = {c["tool"] for c in fastmcp_session.client["tool_calls"]}
    assert {"echo", "get-sum", "trigger-long-running-operation"} <= calls
    assert [finding_json(f) for f in fastmcp_session.findings] == []
    assert_check_finds_what_the_relay_found(Trace(fastmcp_session.trace, fastmcp_session.records))


SDK2_PYTHON = PEERS / "sdk2" / "bin" / "python"
SDK2_CLIENT = PEER_SCRIPTS / "sdk_client.py"
SDK2_SERVER = PEER_SCRIPTS / "sdk2_server.py"
SDK2_CASES = {
    # the stateless era: SDK 2.x on both sides negotiates 2026-07-28 by server/discover
    "sdk2-stateless": ([str(SDK2_PYTHON), str(SDK2_SERVER), "--declare-logging"], "2026-07-28"),
    # the SDK 2.x client falls back to initialize with server-everything (2025-11-25)
    "sdk2-everything": (["node", str(EVERYTHING_JS), "stdio"], "2025-11-25"),
}


@pytest.mark.parametrize("case", sorted(SDK2_CASES))
def test_sdk2_client_sessions_give_no_finding_at_any_level(case: str, tmp_path: Path) -> None:
    server, version = SDK2_CASES[case]
    for path in (SDK2_PYTHON, EVERYTHING_JS):
        if not path.exists():
            pytest.skip(f"{path.relative_to(REPO)} is missing; run scripts/setup-peers.sh")
    trace = tmp_path / "trace.jsonl"
    relay = [sys.executable, "-m", "mcpsniff", "stdio", "--trace", str(trace), "--"]
    proc = subprocess.run(
        [str(SDK2_PYTHON), str(SDK2_CLIENT), "--", *relay, *server],
        cwd=REPO,
        capture_output=True,
        timeout=CLIENT_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert json.loads(proc.stdout)["protocol_version"] == version
    with TraceReader(trace) as reader:
        records = list(reader.records())
    findings = [finding_json(r) for r in records if isinstance(r, FindingRecord)]
    assert findings == []
    assert_check_finds_what_the_relay_found(Trace(trace, records))
