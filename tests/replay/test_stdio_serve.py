"""``replay serve`` over stdio keeps its memory bounded, whatever the client writes.

Real ``mcpsniff replay serve`` processes on real pipes; peak memory is read
from ``/proc/PID/status`` (``VmHWM``) while they run.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest

from mcpsniff.replay.stdio_serve import LINE_LIMIT, InFlight
from tests.replay.support import MCPSNIFF, REPO

CLEAN = REPO / "recordings" / "clean-2025-11-25.jsonl"
#: Peak resident memory the replay may reach in these tests.
MEMORY_LIMIT_KB = 200 << 10


def _peak_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        pytest.skip("needs /proc to read the peak memory")
    for line in status.read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc status")


def _serve() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*MCPSNIFF, "replay", "serve", str(CLEAN)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def _ping(n: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}).encode() + b"\n"


def test_a_line_longer_than_the_limit_is_refused_without_holding_it() -> None:
    # 2.0 GB for a 500 MB line before; here a line of 3x the limit, never held.
    proc = _serve()
    assert proc.stdin is not None and proc.stdout is not None
    chunk = b"x" * (1 << 20)
    peak = 0

    def write() -> None:
        assert proc.stdin is not None
        proc.stdin.write(b'{"jsonrpc":"2.0","id":"big","method":"ping","params":{"p":"')
        for _ in range(3 * (LINE_LIMIT >> 20)):
            proc.stdin.write(chunk)
        proc.stdin.write(b'"}}\n' + _ping(7))
        proc.stdin.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        first = json.loads(proc.stdout.readline())
        second = json.loads(proc.stdout.readline())
        peak = _peak_kb(proc.pid)
    finally:
        writer.join(60)
        proc.wait(60)
    assert first["id"] is None and first["error"]["code"] == -32700
    assert f"longer than {LINE_LIMIT} bytes" in first["error"]["message"]
    assert second == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert peak < MEMORY_LIMIT_KB, peak


def test_a_flood_of_requests_is_slowed_by_its_own_pipe() -> None:
    # The client writes 30,000 requests and reads nothing: the replay stops reading
    # stdin once its budget is full instead of queueing every line.
    count = 30_000
    proc = _serve()
    assert proc.stdin is not None and proc.stdout is not None
    written = threading.Event()

    def write() -> None:
        assert proc.stdin is not None
        try:
            for n in range(count):
                proc.stdin.write(_ping(n))
            proc.stdin.close()
        except BrokenPipeError:
            return
        written.set()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        assert not written.wait(5.0), "30,000 requests were all read with nobody answering"
        peak = _peak_kb(proc.pid)
        answers = 0
        deadline = time.monotonic() + 120
        while answers < count and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            answers += 1
        assert answers == count
        assert written.wait(30)
    finally:
        proc.kill()
        proc.wait(30)
    assert peak < MEMORY_LIMIT_KB, peak


def test_the_budget_blocks_the_reader_until_a_line_is_answered() -> None:
    budget = InFlight(lines=2, size=100)
    budget.acquire(60)
    got = threading.Event()

    def second() -> None:
        budget.acquire(60)  # 120 bytes would exceed the budget
        got.set()

    thread = threading.Thread(target=second, daemon=True)
    thread.start()
    assert not got.wait(0.3)
    budget.release(60)
    assert got.wait(5)
    # A line bigger than the whole budget still passes when nothing else is in flight.
    budget.release(60)
    budget.acquire(500)
    budget.release(500)
