"""relay/stdio.py alone: what ``StdioRelay`` sends on its capture channel.

The relay runs in a subprocess (it owns that process's stdin, stdout and stderr,
as under ``mcpsniff stdio``) with a capturing stand-in for the analysis process
(``stdio_relay_alone.py``), in front of a tiny child. The end-to-end tests in
``tests/e2e/test_stdio_relay.py`` check the trace; these check the observations themselves:
their order, that they carry every byte forwarded, and how a run ends.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcpsniff.intercept.stdio_pipes import CHUNK
from mcpsniff.relay.stdio import EXIT_NOT_STARTED

BOUND = 30.0


def relay_alone(
    tmp_path: Path, command: list[str], stdin: bytes
) -> tuple[int, bytes, list[dict[str, Any]]]:
    """The relay's exit status, what it wrote on stdout, and what it captured in order."""
    out = tmp_path / "seen.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "tests.relay.stdio_relay_alone", str(out), "--", *command],
        input=stdin,
        capture_output=True,
        timeout=BOUND,
        cwd=Path(__file__).parents[2],
    )
    seen = [json.loads(line) for line in out.read_text().splitlines()]
    return done.returncode, done.stdout, seen


def kinds(seen: list[dict[str, Any]]) -> list[str]:
    return [row.get("name", row["kind"]) for row in seen]


def body(seen: list[dict[str, Any]], kind: str, direction: str | None = None) -> bytes:
    rows = [r for r in seen if r["kind"] == kind and r.get("direction") == direction]
    return b"".join(r["body"].encode("latin-1") for r in rows)


CHILD = (
    "import sys\n"
    "line = sys.stdin.buffer.readline()\n"
    "sys.stdout.buffer.write(b'out:' + line); sys.stdout.flush()\n"
    "sys.stderr.write('one\\ntwo'); sys.stderr.flush()\n"
    "sys.exit(7)\n"
)


def test_a_run_is_observed_in_order_and_ends_once(tmp_path: Path) -> None:
    line = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\x00\xff\n'
    status, stdout, seen = relay_alone(tmp_path, [sys.executable, "-c", CHILD], line)
    assert status == 7
    assert stdout == b"out:" + line
    assert body(seen, "StreamData", "c2s") == line
    assert body(seen, "StreamData", "s2c") == b"out:" + line
    assert body(seen, "Stderr") == b"one\ntwo"
    order = kinds(seen)
    assert order[:3] == ["attach", "session-start", "spawned"]
    assert order[-3:] == ["exit", "end", "finish"]  # then the capture ends, once
    assert order.count("end") == 1 and order.count("finish") == 1
    # Every stream's end is told before the exit: nothing forwarded comes after it.
    ends = [i for i, row in enumerate(seen) if row["kind"] == "StreamEnd"]
    assert sorted(r["direction"] for r in seen if r["kind"] == "StreamEnd") == ["c2s", "s2c"]
    assert max(ends) < order.index("exit")
    assert [r["body"] for r in seen if r["kind"] == "Stderr"][-1] == ""  # stderr's end
    spawned = seen[order.index("spawned")]["data"]
    assert spawned["argv0"] == shutil.which(sys.executable)
    assert isinstance(spawned["child_pid"], int)
    start = seen[order.index("session-start")]["data"]
    assert start["command"][:2] == [sys.executable, "-c"] and start["transport"] == "stdio"
    assert seen[order.index("exit")]["data"] == {"returncode": 7, "status": 7}


def test_a_megabyte_of_output_is_captured_whole_in_bounded_pieces(tmp_path: Path) -> None:
    size = 1 << 20
    child = f"import sys; sys.stdout.buffer.write(bytes(range(256)) * {size // 256})"
    status, stdout, seen = relay_alone(tmp_path, [sys.executable, "-c", child], b"")
    assert status == 0
    expected = bytes(range(256)) * (size // 256)
    assert stdout == expected
    pieces = [r for r in seen if r["kind"] == "StreamData" and r["direction"] == "s2c"]
    assert body(seen, "StreamData", "s2c") == expected
    assert max(len(p["body"]) for p in pieces) <= CHUNK
    times = [p["t"] for p in pieces]
    assert times == sorted(times)


def test_a_child_killed_by_a_signal_is_observed_with_its_name(tmp_path: Path) -> None:
    child = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    status, _stdout, seen = relay_alone(tmp_path, [sys.executable, "-c", child], b"")
    assert status == 128 + 9
    exit_row = next(r for r in seen if r.get("name") == "exit")
    assert exit_row["data"] == {"returncode": -9, "status": 137, "signal": "SIGKILL"}
    assert kinds(seen)[-2:] == ["end", "finish"]


def test_a_command_that_cannot_start_is_observed_and_nothing_is_forwarded(tmp_path: Path) -> None:
    status, stdout, seen = relay_alone(tmp_path, ["no-such-command-mcpsniff"], b"ignored\n")
    assert status == EXIT_NOT_STARTED
    assert stdout == b""
    assert kinds(seen) == ["attach", "session-start", "spawn-failed", "end", "finish"]
    failed = seen[2]["data"]
    assert failed == {"command": ["no-such-command-mcpsniff"], "error": "command not found"}
