"""The HTTP shells' channel to a real forked analysis process: what it drops, the trace says."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from mcpsniff.core.model import EventRecord
from mcpsniff.relay.observer_pipe import AnalysisProcess
from mcpsniff.relay.recorder import Recorder
from mcpsniff.relay.remote_exchange import ExchangeReplay
from mcpsniff.relay.remote_recorder import RemoteRecorder, apply_calls
from mcpsniff.trace.format import TraceReader, TraceWriter

CALLS = 200
CALL_BYTES = 100_000


def flood(trace: Path, *, limit: int, pause: float) -> list[EventRecord]:
    """Send CALLS big events to an analysis process that starts reading after ``pause``."""
    writer = TraceWriter.create(trace)
    replay = ExchangeReplay(Recorder(writer, "http", autoflush=False))

    def analyze(fd: int) -> int:
        time.sleep(pause)  # behind the traffic: the pipe and the backlog fill up
        return apply_calls(fd, replay)

    analysis = AnalysisProcess.start(analyze, limit)
    writer.close()  # the child owns the trace now
    remote = RemoteRecorder(analysis)

    async def relay() -> int:
        remote.attach(asyncio.get_running_loop())
        for n in range(CALLS):
            t = time.time()
            remote.send("event", t, ("http", "flood", t, {"n": n}), b"x" * CALL_BYTES)
        remote.close(time.time())
        return await remote.finish()

    assert asyncio.run(relay()) == 0
    with TraceReader(trace) as reader:
        return [r for r in reader.records() if isinstance(r, EventRecord)]


def test_every_dropped_call_is_a_counted_gap_before_the_trace_ends(tmp_path: Path) -> None:
    """A flood that overflows the backlog and then stops: the gap is still recorded.

    Nothing comes after the flood (no later exchange would report it): the
    trace's end must account for every call by itself.
    """
    events = flood(tmp_path / "t.jsonl", limit=256 << 10, pause=0.5)
    arrived = [e for e in events if e.event == "flood"]
    gaps = [e for e in events if e.event == "capture-gap"]
    assert gaps, "calls were dropped but no capture-gap was recorded"
    lost = sum(g.data["lost_calls"] for g in gaps)
    assert 0 < lost < CALLS
    assert len(arrived) + lost == CALLS
    assert sum(g.data["lost_bytes"] for g in gaps) >= lost * CALL_BYTES
    # Recorded inside the session, before it ends.
    assert [e.event for e in events if e.event != "flood"][-1] == "session-end"


def test_nothing_is_dropped_when_the_backlog_holds_it(tmp_path: Path) -> None:
    events = flood(tmp_path / "t.jsonl", limit=64 << 20, pause=0.2)
    assert len([e for e in events if e.event == "flood"]) == CALLS
    assert [e for e in events if e.event == "capture-gap"] == []
