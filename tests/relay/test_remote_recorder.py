"""The HTTP shells' channel to a real forked analysis process: what it drops, the trace says."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.relay.observer_pipe import AnalysisProcess
from mcpsniff.relay.recorder import Recorder
from mcpsniff.relay.remote_exchange import BEGIN, FINISH, REQUEST_BODY, ExchangeReplay
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


# --------------------------------------------------------------------------- streamed bodies


def replay_streamed(pieces: list[tuple[bytes, int]], rest: bytes, limit: int) -> list[Any]:
    """Replay REQUEST_BODY notes then BEGIN on a real in-process recorder; its records."""
    records: list[Any] = []
    recorder = Recorder(None, "http")
    recorder.listeners.append(records.append)
    replay = ExchangeReplay(recorder, capture_limit=limit)
    for chunk, offset in pieces:
        replay.apply(REQUEST_BODY, (7, 1.0, chunk, offset))
    headers = [("Content-Type", "application/json")]
    replay.apply(BEGIN, (7, 2.0, rest, "POST", "/mcp", headers, None, None))
    replay.apply(FINISH, (7, 3.0, "complete", True))
    return records


BODY = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}'


def test_a_streamed_body_is_analyzed_whole() -> None:
    pieces = [(BODY[:10], 0), (BODY[10:40], 10)]
    records = replay_streamed(pieces, BODY[40:], limit=1 << 20)
    (frame,) = [r for r in records if isinstance(r, FrameRecord)]
    assert frame.raw == BODY
    assert not [r for r in records if isinstance(r, EventRecord) and r.event == "capture-gap"]


@pytest.mark.parametrize(
    ("pieces", "limit"),
    [
        ([(BODY[:10], 0), (BODY[20:40], 20)], 1 << 20),  # a piece lost on the way
        ([(BODY[:10], 0), (BODY[10:40], 10)], 32),  # over the capture limit
    ],
)
def test_a_body_with_a_hole_or_over_the_limit_is_a_gap_not_a_frame(
    pieces: list[tuple[bytes, int]], limit: int
) -> None:
    records = replay_streamed(pieces, BODY[40:], limit)
    assert [r for r in records if isinstance(r, FrameRecord)] == []
    (gap,) = [r for r in records if isinstance(r, EventRecord) and r.event == "capture-gap"]
    assert gap.data["lost_bytes"] == len(BODY)
    assert gap.data["direction"] == "c2s"
    (request,) = [r for r in records if isinstance(r, EventRecord) and r.event == "http-request"]
    assert request.data["path"] == "/mcp"
