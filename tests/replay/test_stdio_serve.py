"""``replay serve --fault``: a misbehaving mock server made from a recording, over stdio.

A real session (the SDK 2.x client's ``fault_client.py`` against
server-everything, through ``mcpsniff stdio``) is recorded once; then the same
client (SDK 2.x and 1.x) talks to ``mcpsniff replay serve --fault ...`` instead
of the real server, and sees exactly the misbehaviour asked for, recorded in
the replay's own trace.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.core.model import EventRecord
from mcpsniff.trace.reader import TraceReader
from tests.relay.test_stdio_faults import (
    EVERYTHING,
    EVERYTHING_JS,
    FAULT_CLIENT,
    REPO,
    RUN_TIMEOUT,
    SDK1_PYTHON,
    SDK2_PYTHON,
)

MCPSNIFF = [sys.executable, "-m", "mcpsniff"]


def _client(
    python: Path, server: list[str], calls: int = 3, timeout: float = 2.0
) -> dict[str, Any]:
    command = [str(python), str(FAULT_CLIENT), "--calls", str(calls), "--timeout", str(timeout)]
    proc = subprocess.run(
        [*command, "--", *server], capture_output=True, timeout=RUN_TIMEOUT, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for path in (SDK2_PYTHON, EVERYTHING_JS):
        if not path.exists():
            pytest.skip(f"{path} missing (scripts/setup-peers.sh builds the peers)")
    trace = tmp_path_factory.mktemp("faulty-replay") / "recorded.jsonl"
    relay = [*MCPSNIFF, "stdio", "--trace", str(trace), "--", *EVERYTHING]
    report = _client(SDK2_PYTHON, relay)
    assert [c["outcome"] for c in report["calls"]] == ["ok", "ok", "ok"]
    return trace


def _serve(recording: Path, own: Path, *faults: str) -> list[str]:
    command = [*MCPSNIFF, "replay", "serve", "--trace", str(own)]
    for spec in faults:
        command += ["--fault", spec]
    return [*command, str(recording)]


def _faults(trace: Path) -> list[EventRecord]:
    with TraceReader(trace) as reader:
        return [r for r in reader.records() if isinstance(r, EventRecord) and r.event == "fault"]


@pytest.mark.parametrize("python", [SDK2_PYTHON, SDK1_PYTHON], ids=["sdk2", "sdk1"])
def test_a_slow_tool_from_the_recording(recording: Path, tmp_path: Path, python: Path) -> None:
    own = tmp_path / "served.jsonl"
    server = _serve(recording, own, 'delay 300ms when tool == "echo" and direction == s2c')
    report = _client(python, server)
    assert [c["outcome"] for c in report["calls"]] == ["ok", "ok", "ok"]
    assert [c["text"] for c in report["calls"]] == ["Echo: call 0", "Echo: call 1", "Echo: call 2"]
    # Held at least 300 ms each (the replay itself answers call 1 after the pause
    # it recorded before a server notification; tests/relay measures 300-400 ms).
    assert all(300 <= c["ms"] < 2000 for c in report["calls"]), report
    assert [f.data["delay_ms"] for f in _faults(own)] == [300, 300, 300]


def test_errors_drops_and_duplicates_from_the_recording(recording: Path, tmp_path: Path) -> None:
    own = tmp_path / "served.jsonl"
    server = _serve(
        recording,
        own,
        'error -32603 "backend down" when tool == "echo" times 1',
        'drop when tool == "echo" and direction == s2c times 1',
        'duplicate when tool == "echo" and direction == s2c',
    )
    report = _client(SDK2_PYTHON, server, timeout=1)
    assert [c["outcome"] for c in report["calls"]] == ["error", "timeout", "ok"]
    assert [f.data["action"] for f in _faults(own)] == ["error", "drop", "duplicate"]
    check = subprocess.run(
        [*MCPSNIFF, "check", "--faults-summary", str(own)],
        capture_output=True,
        timeout=RUN_TIMEOUT,
        cwd=REPO,
    )
    summary = check.stdout.decode()
    assert "Faults: 3 injected" in summary
    assert "reaction: coped: the client cancelled it" in summary


def test_kill_stops_the_mock_server(recording: Path, tmp_path: Path) -> None:
    own = tmp_path / "served.jsonl"
    server = _serve(recording, own, 'kill when tool == "echo" and direction == s2c after 1')
    report = _client(SDK2_PYTHON, server, timeout=2)
    outcomes = [c["outcome"] for c in report["calls"]]
    assert outcomes[:2] == ["ok", "ok"]
    assert outcomes[2] != "ok"


def test_a_bad_fault_is_refused_before_serving(recording: Path) -> None:
    proc = subprocess.run(
        [*MCPSNIFF, "replay", "serve", "--fault", "corrupt sideways", str(recording)],
        capture_output=True,
        timeout=RUN_TIMEOUT,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.decode()
        .splitlines()[0]
        .startswith("mcpsniff replay: --fault: corrupt takes one of truncate")
    )
