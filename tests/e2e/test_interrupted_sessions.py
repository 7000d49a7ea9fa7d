"""Ctrl-C with a request in flight: interrupted, not a server that never answered.

The user report: ``mcpsniff stdio`` wrapping a real server, a slow tool call in
flight, Ctrl-C in the terminal (SIGINT to the whole foreground process group).
The trace used to hold a JR-RESP-REQUIRED *error*, as if the server had
ignored the request. The real SDK 2.x server, the real relay, a real signal.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mcpsniff.core.model import EventRecord, FindingRecord
from mcpsniff.trace.reader import TraceReader
from tests.e2e.sdk_peers import REPO, SDK2_PYTHON

SDK2_SERVER = REPO / "tests" / "e2e" / "peers" / "sdk2_server.py"

pytestmark = pytest.mark.skipif(not SDK2_PYTHON.exists(), reason="SDK 2.x peer not built")


def _line(message: dict[str, object]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _records(trace: Path) -> list[object]:
    with TraceReader(trace) as reader:
        return list(reader.records())


def _interrupted_trace(tmp_path: Path) -> Path:
    trace = tmp_path / "interrupted.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    relay = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpsniff",
            "stdio",
            "--trace",
            str(trace),
            "--",
            str(SDK2_PYTHON),
            str(SDK2_SERVER),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,  # its own group: the "terminal" we press Ctrl-C in
    )
    try:
        assert relay.stdin is not None and relay.stdout is not None
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "terminal-user", "version": "1"},
        }
        relay.stdin.write(
            _line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        )
        relay.stdin.flush()
        assert b'"id":1' in relay.stdout.readline()
        relay.stdin.write(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        call = {
            "name": "trigger-long-running-operation",
            "arguments": {"duration": 60, "steps": 60},
            "_meta": {"progressToken": "p"},
        }
        relay.stdin.write(
            _line({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        )
        relay.stdin.flush()
        # The server is working on it once its first progress notification arrives.
        assert b"notifications/progress" in relay.stdout.readline()
        os.killpg(relay.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
        relay.communicate(timeout=60)
    finally:
        if relay.poll() is None:
            relay.kill()
            relay.communicate()
    return trace


def test_ctrl_c_with_a_call_in_flight_is_an_interruption(tmp_path: Path) -> None:
    trace = _interrupted_trace(tmp_path)
    records = _records(trace)
    assert [
        r.data["signal"] for r in records if isinstance(r, EventRecord) and r.event == "signal"
    ] == ["SIGINT"]
    # What the live relay wrote into the trace.
    live = [r for r in records if isinstance(r, FindingRecord) and r.rule == "JR-RESP-REQUIRED"]
    assert [(f.severity, f.data["cause"], f.data["method"]) for f in live] == [
        ("info", "interrupted", "tools/call")
    ]
    assert "forwarded SIGINT (Ctrl-C)" in live[0].message
    assert not [r for r in records if isinstance(r, FindingRecord) and r.severity == "error"]
    # What check says re-analyzing it: the same, and nothing fails.
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    check = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "check", str(trace), "--format", "json"],
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    found = [json.loads(line) for line in check.stdout.splitlines()]
    assert [(f["rule"], f["severity"], f["data"]["cause"]) for f in found] == [
        ("JR-RESP-REQUIRED", "info", "interrupted")
    ]
