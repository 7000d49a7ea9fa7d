"""Bad input to ``replay serve`` and ``replay drive``: one clear line, exit 2, no traceback.

A torn trace (the last line cut off by a crash) is the exception: the
replay warns and serves what is whole.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcpsniff.core.model import FrameRecord
from mcpsniff.trace.format import TraceWriter
from tests.replay.support import MCPSNIFF, REPO, TIMEOUT, run

CLEAN = REPO / "recordings" / "clean-2025-11-25.jsonl"
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def client_only_trace(path: Path) -> Path:
    writer = TraceWriter.create(path, meta={})
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode() + b"\n"
    writer.write(FrameRecord(1, 1.0, "stdio", "c2s", "stdio", line))
    writer.close()
    return path


def assert_clean_failure(argv: list[str], expected: str) -> None:
    result = run(argv)
    assert result.code == 2, result.out + result.err
    assert "Traceback" not in result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("mcpsniff replay: ")
    assert expected in lines[0]


@pytest.mark.parametrize("command", ["serve", "drive"])
def test_a_session_not_in_the_trace(command: str) -> None:
    extra = ["--", sys.executable, "-c", "pass"] if command == "drive" else []
    assert_clean_failure(
        [*MCPSNIFF, "replay", command, str(CLEAN), "--session", "nope", *extra],
        "no session 'nope' in this trace "
        "(sessions: clean-2025-11-25 (gallery-client 1.0, 14 message(s)))",
    )


@pytest.mark.parametrize("command", ["serve", "drive"])
def test_a_trace_with_no_server_side(command: str, tmp_path: Path) -> None:
    trace = client_only_trace(tmp_path / "client-only.jsonl")
    extra = ["--", sys.executable, "-c", "pass"] if command == "drive" else []
    assert_clean_failure(
        [*MCPSNIFF, "replay", command, str(trace), *extra],
        "the trace has no server side (no server-to-client messages): nothing to replay",
    )


def test_not_a_trace_and_no_such_file(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    assert_clean_failure([*MCPSNIFF, "replay", "serve", str(other)], "not an mcpsniff trace")
    missing = tmp_path / "missing.jsonl"
    assert_clean_failure([*MCPSNIFF, "replay", "serve", str(missing)], "no such file")


def test_drive_needs_exactly_one_target() -> None:
    assert_clean_failure(
        [*MCPSNIFF, "replay", "drive", str(CLEAN)], "needs either --url URL or -- COMMAND"
    )


def test_drive_a_command_that_cannot_start() -> None:
    assert_clean_failure(
        [*MCPSNIFF, "replay", "drive", str(CLEAN), "--", "/nonexistent/server"],
        "cannot start /nonexistent/server",
    )


def test_a_torn_trace_warns_and_still_serves(tmp_path: Path) -> None:
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(CLEAN.read_bytes() + b'{"type":"frame","seq":99,"t":1.0,"ses')
    proc = subprocess.run(
        [*MCPSNIFF, "replay", "serve", str(torn)],
        input=json.dumps(PING) + "\n",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert "is incomplete, probably cut off by a crash; it was skipped" in proc.stderr
    assert "Traceback" not in proc.stderr
