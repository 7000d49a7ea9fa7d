"""The analysis process's two priorities: the shared clock, the baton, a worker using them."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.capture.priority import (
    QUIET_SECONDS,
    Baton,
    Behind,
    ForwardingClock,
    lower_priority,
)
from mcpsniff.capture.recorder import TraceRecorder
from mcpsniff.capture.worker import Worker
from mcpsniff.core.model import C2S, S2C, FindingRecord
from mcpsniff.core.observation_codec import encode_bytes
from mcpsniff.core.observations import CaptureEnd, StreamData
from mcpsniff.core.stdio_adapter import StdioAdapter
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter


def thread_nice(tid: int) -> int:
    """A thread's nice value, from /proc (field 19 of its stat line)."""
    stat = Path(f"/proc/self/task/{tid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[16])


def test_the_clock_is_shared_across_a_fork() -> None:
    clock = ForwardingClock()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child: the relay's side
        clock.tick(1000.0)
        os._exit(0)
    os.waitpid(pid, 0)
    assert clock.stamp[0] == 1000.0
    assert clock.forwarding(1000.0 + QUIET_SECONDS / 2)
    assert not clock.forwarding(1000.0 + QUIET_SECONDS * 2)


def test_a_fresh_clock_says_the_relay_is_quiet() -> None:
    assert not ForwardingClock().forwarding()


def test_work_runs_low_while_the_relay_forwards_and_normal_when_it_is_quiet() -> None:
    """Each step records the thread it ran in and that thread's nice value."""
    plan = [False, True, False, False, True, False]  # forwarding, as seen before step i
    steps: list[tuple[str, int]] = []
    state = {"step": 0}

    def forwarding() -> bool:
        return plan[min(state["step"], len(plan) - 1)]

    def work(keep_going: Any) -> bool:
        while state["step"] < len(plan):
            me = threading.current_thread()
            steps.append((me.name, thread_nice(threading.get_native_id())))
            state["step"] += 1
            if not keep_going():
                return False
        return True

    main_nice = thread_nice(threading.get_native_id())
    baton = Baton(forwarding, lambda: lower_priority(5, idle=False))
    baton.run(work)
    names = [name for name, _ in steps]
    # Step 0 in the calling thread (a fresh clock: quiet); asked after each
    # step, the relay forwards before steps 1 and 4.
    assert names == ["MainThread", "analysis-low", "MainThread", "MainThread", "analysis-low",
                     "MainThread"]  # fmt: skip
    assert {nice for name, nice in steps if name == "MainThread"} == {main_nice}
    assert {nice for name, nice in steps if name != "MainThread"} == {min(main_nice + 5, 19)}
    assert thread_nice(threading.get_native_id()) == main_nice  # this thread was never lowered
    assert baton.handovers == 4


def test_an_error_in_the_low_thread_is_raised_in_the_calling_one() -> None:
    def work(keep_going: Any) -> bool:
        if threading.current_thread().name == "analysis-low":
            raise RuntimeError("bad observation")
        keep_going()
        return False

    baton = Baton(lambda: True, lambda: None)
    with pytest.raises(RuntimeError, match="bad observation"):
        baton.run(work)


def _observations() -> bytes:
    """A session with findings: a handshake, calls, an unknown tool, one request never answered."""
    lines = [
        (C2S, b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":'
              b'"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n'),
        (S2C, b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25",'
              b'"capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"0"}}}\n'),
        (C2S, b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'),
    ]  # fmt: skip
    for i in range(1, 40):
        call = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t%d"}}\n' % (i, i)
        lines.append((C2S, call))
        if i % 7:
            answer = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text",' % i
            lines.append((S2C, answer + b'"text":"ok"}]}}\n'))
    data = b"".join(
        encode_bytes(StreamData(direction, 1.0 + n / 100, line))
        for n, (direction, line) in enumerate(lines)
    )
    return data + encode_bytes(CaptureEnd(3.0))


def _records(trace: Path, baton: Baton | None) -> list[Any]:
    writer = TraceWriter.create(trace)
    recorder = TraceRecorder(writer, "stdio", autoflush=False)
    adapter = StdioAdapter(recorder)
    worker = Worker(recorder, adapter.apply, lost=adapter.lost, baton=baton)
    read_fd, write_fd = os.pipe()
    data = _observations()
    writer_thread = threading.Thread(target=lambda: (os.write(write_fd, data), os.close(write_fd)))
    writer_thread.start()
    assert worker.run(read_fd) == 0
    writer_thread.join()
    os.close(read_fd)
    with TraceReader(trace) as reader:
        return [r for r in reader.records() if not isinstance(r, dict)]


def test_the_worker_records_the_same_whichever_thread_works(tmp_path: Path) -> None:
    """Handed from thread to thread after every observation: the same records and verdicts."""
    alone = _records(tmp_path / "alone.jsonl", None)
    flips = iter(range(1 << 30))
    baton = Baton(lambda: next(flips) % 2 == 0, lambda: lower_priority(3, idle=False))
    by_turns = _records(tmp_path / "turns.jsonl", baton)
    assert baton.handovers > 50
    assert by_turns == alone
    assert sum(isinstance(r, FindingRecord) for r in alone) >= 1


def test_a_relay_quiet_for_long_enough_hands_the_work_to_normal_priority() -> None:
    """With the real clock: ticked now, it says forwarding; QUIET_SECONDS later, quiet."""
    clock = ForwardingClock()
    clock.tick(time.time())
    assert clock.forwarding()
    time.sleep(QUIET_SECONDS * 1.5)
    assert not clock.forwarding()


def behind_run(forwarding_for: float, far: bool) -> tuple[list[float], float]:
    """``Behind`` over work of five steps; the relay forwards for ``forwarding_for`` s.

    Returns when each step ran (seconds from the start) and when the relay went quiet.
    """
    start = time.monotonic()
    quiet_at = start + forwarding_for
    steps: list[float] = []

    def work(keep_going: Any) -> bool:
        while len(steps) < 5:
            if not keep_going():
                return False
            steps.append(time.monotonic() - start)
        return True

    Behind(lambda: time.monotonic() < quiet_at, lambda: far, poll=0.005).run(work)
    return steps, forwarding_for


def test_the_derived_lane_waits_out_a_burst() -> None:
    steps, quiet = behind_run(0.2, far=False)
    assert len(steps) == 5
    assert min(steps) >= quiet  # nothing while the relay forwarded


def test_the_derived_lane_works_through_a_burst_when_far_behind() -> None:
    steps, quiet = behind_run(5.0, far=True)
    assert len(steps) == 5
    assert max(steps) < quiet  # all of it while the relay forwarded
