"""The one launcher: a forked analysis process gets every observation and its status comes back."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import orjson

from mcpsniff.capture.analysis_process import ANALYSIS_NICENESS, AnalysisProcess, run_forked_child
from mcpsniff.capture.channel import read_batches
from mcpsniff.capture.priority import ForwardingClock
from mcpsniff.core.model import C2S, S2C
from mcpsniff.core.observations import CaptureEnd, StreamData, StreamEnd


def test_the_forked_process_gets_everything_and_its_exit_status_comes_back(
    tmp_path: Path,
) -> None:
    out = tmp_path / "seen.json"

    def work(fd: int) -> int:
        seen = [repr(o) for batch in read_batches(fd) for o in batch]
        out.write_bytes(orjson.dumps(seen))
        return 5

    async def scenario() -> int:
        process = AnalysisProcess.fork(work, limit=1 << 20)
        process.channel.attach(asyncio.get_running_loop())
        process.channel.send(StreamData(C2S, 1.0, b"hello\n"))
        process.channel.send(StreamEnd(S2C, 2.0))
        process.channel.end(3.0)
        return await process.finish()

    assert asyncio.run(scenario()) == 5
    assert orjson.loads(out.read_bytes()) == [
        repr(StreamData(C2S, 1.0, b"hello\n")),
        repr(StreamEnd(S2C, 2.0)),
        repr(CaptureEnd(3.0)),
    ]


def test_the_status_of_a_reaped_process_stays_known() -> None:
    async def scenario() -> tuple[int, int | None]:
        process = AnalysisProcess.fork(lambda fd: 7, limit=1 << 20)
        process.channel.attach(asyncio.get_running_loop())
        first = await process.finish()
        return first, process.poll()

    assert asyncio.run(scenario()) == (7, 7)


def test_wait_blocking_gives_up_on_a_live_process_and_reaps_a_finished_one() -> None:
    """Without an event loop: None while the process still reads its pipe, its status after."""

    def work(fd: int) -> int:
        for _ in read_batches(fd):
            pass
        return 9

    process = AnalysisProcess.fork(work, limit=1 << 20)
    assert process.wait_blocking(0.05) is None  # its pipe is open: it goes on
    process.channel.close_blocking()
    assert process.wait_blocking(10) == 9
    assert process.poll() == 9


def test_with_a_clock_the_child_stays_at_normal_priority_and_sees_the_channel_tick() -> None:
    """The worker lowers one thread itself (capture/priority.py); without a clock, the whole
    process is lowered at once."""

    def work(fd: int) -> int:
        for _ in read_batches(fd):
            pass
        # The exit status carries the niceness added and the clock's last stamp.
        return (os.getpriority(os.PRIO_PROCESS, 0) - base) * 16 + int(clock.stamp[0])

    base = os.getpriority(os.PRIO_PROCESS, 0)
    clock = ForwardingClock()
    process = AnalysisProcess.fork(work, limit=1 << 20, clock=clock)
    process.channel.send(StreamData(C2S, 7.0, b"hello\n"))
    process.channel.close_blocking()
    assert process.wait_blocking(10) == 7
    lowered = AnalysisProcess.fork(
        lambda fd: os.getpriority(os.PRIO_PROCESS, 0) - base, limit=1 << 20
    )
    lowered.channel.close_blocking()
    assert lowered.wait_blocking(10) == min(base + ANALYSIS_NICENESS, 19) - base


def forked_status(work: Any) -> tuple[int, bytes]:
    """Exit status and stderr of a forked child that runs ``run_forked_child(work, ...)``."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.dup2(write_fd, 2)
        run_forked_child(work, "test: the child")
    os.close(write_fd)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read_fd, "rb") as err:
        return os.waitstatus_to_exitcode(status), err.read()


def test_a_forked_child_leaves_with_its_work_status() -> None:
    assert forked_status(lambda: 3) == (3, b"")


def test_a_forked_child_whose_work_raises_says_so_and_leaves_with_70() -> None:
    def work() -> int:
        raise ValueError("broken")

    status, err = forked_status(work)
    assert status == 70
    assert err == b"test: the child failed: ValueError('broken')\n"
