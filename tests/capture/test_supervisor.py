"""The supervisor: a real analysis process killed, its trace completed; a clean end left alone."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.capture.analysis_process import TRACE_INCOMPLETE, AnalysisProcess
from mcpsniff.capture.sinks import Outputs
from mcpsniff.capture.supervisor import Forwarded, Supervisor
from mcpsniff.capture.worker import fork_analysis
from mcpsniff.core.model import C2S, EventRecord, FrameRecord
from mcpsniff.core.stdio_adapter import SESSION, StdioAdapter
from mcpsniff.trace.paths import open_trace_file
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.salvage import TracePlace

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
LATER = b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
GONE = "the analysis process is gone ("


@dataclass
class Run:
    """A forked analysis process recording a stdio capture, and its supervisor."""

    path: Path
    analysis: AnalysisProcess
    supervisor: Supervisor
    forwarded: dict[str, int] = field(default_factory=lambda: {C2S: 0})
    told: list[str] = field(default_factory=list)

    def send(self, chunk: bytes) -> None:
        """Forward ``chunk`` (counted, as a shell counts it) and hand it to the channel."""
        self.forwarded[C2S] += len(chunk)
        self.analysis.channel.send_data(C2S, time.time(), chunk)

    def records(self) -> list[Any]:
        with TraceReader(self.path) as reader:
            return list(reader.records())

    def events(self) -> list[EventRecord]:
        return [r for r in self.records() if isinstance(r, EventRecord)]

    def frames(self) -> int:
        return sum(isinstance(r, FrameRecord) for r in self.records())

    def wait_recorded(self) -> None:
        """Until the analysis process has written the first frame (it flushes per batch)."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.frames():
                return
            time.sleep(0.01)
        raise AssertionError("the first frame never reached the trace")

    def kill(self) -> None:
        """SIGKILL the analysis process, and wait until it is dead (not yet reaped)."""
        os.kill(self.analysis.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if os.waitid(os.P_PID, self.analysis.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG):
                return
            time.sleep(0.005)
        raise AssertionError("the analysis process outlived SIGKILL")


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Any]:
    runs: list[Run] = []

    def start(*, with_place: bool = True, tell_each_salvage: bool = False) -> Run:
        path = tmp_path / f"t{len(runs)}.jsonl"
        writer = open_trace_file(path, name="test", meta={"source": "test"}).writer
        place = TracePlace.after_header(writer) if with_place else None
        analysis = fork_analysis(
            writer,
            "stdio",
            lambda recorder: StdioAdapter(recorder),
            limit=1 << 20,
            redact=True,
            outputs=Outputs(),
        )
        told: list[str] = []
        forwarded = {C2S: 0}
        supervisor = Supervisor(
            analysis,
            place,
            Forwarded(SESSION, lambda: {"forwarded": dict(forwarded), "stderr": 0}),
            told.append,
            tell_each_salvage=tell_each_salvage,
        )
        analysis.channel.on_broken = supervisor.pipe_broke
        run = Run(path, analysis, supervisor, forwarded, told)
        runs.append(run)
        return run

    yield start
    for run in runs:
        if run.analysis.poll() is None:
            os.kill(run.analysis.pid, signal.SIGKILL)
            run.analysis.wait_blocking(5)


def test_a_killed_analysis_process_is_told_once_and_its_trace_completed(start: Any) -> None:
    run = start()

    async def scenario() -> tuple[int, bool]:
        run.analysis.channel.attach(asyncio.get_running_loop())
        run.send(PING)
        run.analysis.channel.flush()
        await asyncio.to_thread(run.wait_recorded)
        run.kill()
        # Forwarding goes on; the first write to the dead pipe breaks it.
        for _ in range(3):
            run.send(LATER)
            run.analysis.channel.flush()
        assert run.analysis.channel.broken
        (salvaging,) = run.supervisor.salvaging
        early = await salvaging
        assert early is not None and early.lost_bytes == {C2S: 3 * len(LATER)}
        # A reader of the trace learns of the loss now, before the end.
        (gap,) = [e for e in run.events() if e.event == "capture-gap"]
        assert gap.session == SESSION and gap.data["lost_bytes"] == 3 * len(LATER)
        run.send(LATER)  # after the first salvage: the end accounts for it
        run.analysis.channel.end(time.time())
        status = await run.analysis.finish()
        return status, await run.supervisor.settle(status)

    assert asyncio.run(scenario()) == (-signal.SIGKILL, True)
    gone, total = run.told
    assert gone.startswith(GONE + "Broken pipe); relaying continues unrecorded")
    assert total == (
        "the trace was completed without the analysis process: it lacks "
        f"{4 * len(LATER)} bytes client to server (recorded as a capture-gap)"
    )
    events = run.events()
    assert sum(e.data["lost_bytes"] for e in events if e.event == "capture-gap") == 4 * len(LATER)
    assert events[-1].event == "session-end"
    assert run.frames() == 1  # what was recorded before the kill stays


def test_a_clean_end_is_left_alone(start: Any) -> None:
    """Near miss: the process ends the trace itself; nothing is told or salvaged."""
    run = start()

    async def scenario() -> tuple[int, bool]:
        run.analysis.channel.attach(asyncio.get_running_loop())
        run.send(PING)
        run.analysis.channel.end(time.time())
        status = await run.analysis.finish()
        return status, await run.supervisor.settle(status)

    assert asyncio.run(scenario()) == (0, False)
    assert run.told == []
    assert not run.supervisor.salvaging
    events = [e.event for e in run.events()]
    assert "capture-gap" not in events and "trace-salvaged" not in events
    assert events.count("session-end") == 1


def test_a_trace_the_process_called_incomplete_is_not_salvaged(start: Any) -> None:
    """Status 3: the process said why itself; the trace stays as it left it."""
    run = start()
    size = run.path.stat().st_size
    assert asyncio.run(run.supervisor.settle(TRACE_INCOMPLETE)) is False
    assert run.told == []
    assert run.path.stat().st_size == size
    run.analysis.channel.close_blocking()


def test_without_a_place_a_death_is_told_but_nothing_is_touched(start: Any) -> None:
    run = start(with_place=False)
    run.kill()
    run.analysis.channel.close_blocking()
    status = run.analysis.wait_blocking(5)
    size = run.path.stat().st_size
    assert asyncio.run(run.supervisor.settle(status)) is True
    assert run.told == ["the analysis process was killed by SIGKILL; the trace may be incomplete"]
    assert run.path.stat().st_size == size


def test_without_an_event_loop_the_salvages_block_and_each_is_told(start: Any) -> None:
    """The addon's case once mitmproxy's loop is gone: every salvage runs in place."""
    run = start(tell_each_salvage=True)
    run.send(PING)
    run.wait_recorded()
    run.kill()
    run.send(LATER)  # no loop: written at once, into the dead pipe
    assert run.analysis.channel.broken
    run.supervisor.lost("again")  # told once, whoever notices next
    run.analysis.channel.close_blocking()
    status = run.analysis.wait_blocking(5)
    assert run.supervisor.settle_blocking(status) is True
    gone, early, end = run.told
    assert gone.startswith(GONE + "Broken pipe)")
    assert early.endswith(
        f"it lacks {len(LATER)} bytes client to server (recorded as a capture-gap)"
    )
    # The end added only the sessions' end: it read on from the first salvage.
    assert "it lacks nothing more" in end
    assert run.events()[-1].event == "session-end"
