"""An HTTP shell's channel to a real forked worker: what the backlog drops, the trace says."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.capture.analysis_process import AnalysisProcess
from mcpsniff.capture.recorder import TraceRecorder
from mcpsniff.capture.remote_exchange import RemoteObserver
from mcpsniff.capture.worker import Worker
from mcpsniff.core.http.adapter import ObservationAdapter
from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.core.observations import ExchangeEnd, RequestBegin, RequestBody
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter

EVENTS = 200
EVENT = (
    b"data: "
    + b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"%s"}}'
    % (b"x" * 100_000)
    + b"\n\n"
)


def flood(trace: Path, *, limit: int, pause: float) -> list[EventRecord]:
    """One SSE stream of EVENTS big events to an analysis process that starts after ``pause``."""
    writer = TraceWriter.create(trace)
    recorder = TraceRecorder(writer, "http", autoflush=False)
    worker = Worker(recorder, ObservationAdapter(recorder).apply)

    def analyze(fd: int) -> int:
        time.sleep(pause)  # behind the traffic: the pipe and the backlog fill up
        return worker.run(fd)

    analysis = AnalysisProcess.fork(analyze, limit)
    writer.close()  # the child owns the trace now
    channel = analysis.channel

    async def relay() -> int:
        channel.attach(asyncio.get_running_loop())
        observer = RemoteObserver(channel.send)
        sid = [("Mcp-Session-Id", "s1")]
        exchange = observer.begin("GET", "/mcp", [("Accept", "text/event-stream"), *sid], b"")
        exchange.response(200, [("Content-Type", "text/event-stream"), *sid])
        for _ in range(EVENTS):
            exchange.body_chunk(EVENT)
        exchange.finish()
        channel.end(time.time())
        return await analysis.finish()

    assert asyncio.run(relay()) == 0
    with TraceReader(trace) as reader:
        return [r for r in reader.records() if isinstance(r, EventRecord)]


def test_a_flood_over_the_backlog_is_counted_in_its_exchange_and_the_trace(
    tmp_path: Path,
) -> None:
    """The backlog drops body bytes only: the exchange is whole in the trace, its gap counted.

    Nothing comes after the flood (no later exchange would report the relay's
    gap): the trace's end accounts for every byte by itself.
    """
    events = flood(tmp_path / "t.jsonl", limit=1 << 20, pause=0.5)
    names = [e.event for e in events]
    # What says the exchange happened is never dropped.
    assert names.count("http-request") == names.count("http-response") == 1
    (end,) = [e for e in events if e.event == "http-end"]
    assert end.data["body_bytes"] == EVENTS * len(EVENT)
    in_exchange = [e for e in events if e.event == "capture-gap" and "exchange" in e.data]
    relay_wide = [e for e in events if e.event == "capture-gap" and "exchange" not in e.data]
    assert in_exchange and relay_wide, "bytes were dropped but no capture-gap was recorded"
    lost = sum(e.data["lost_bytes"] for e in in_exchange)
    assert 0 < lost < EVENTS * len(EVENT)
    assert lost == sum(e.data["lost_bytes"] for e in relay_wide)
    # Analysis stops at the first hole: the events before it are whole.
    assert 0 < names.count("sse-event") < EVENTS
    # Recorded inside the session, before it ends.
    assert names.index("capture-gap") < names.index("session-end")


def test_nothing_is_dropped_when_the_backlog_holds_it(tmp_path: Path) -> None:
    events = flood(tmp_path / "t.jsonl", limit=64 << 20, pause=0.2)
    names = [e.event for e in events]
    assert names.count("sse-event") == EVENTS
    assert "capture-gap" not in names


# --------------------------------------------------------------------------- streamed bodies


def replay_streamed(
    pieces: list[tuple[bytes, int]], rest: bytes, limit: int, size: int | None = None
) -> list[Any]:
    """Replay RequestBody pieces then RequestBegin on a real in-process recorder; its records."""
    size = len(BODY) if size is None else size
    records: list[Any] = []
    recorder = TraceRecorder(None, "http")
    recorder.listeners.append(records.append)
    replay = ObservationAdapter(recorder, capture_limit=limit)
    for chunk, offset in pieces:
        replay.apply(RequestBody(7, 1.0, offset, chunk))
    headers = (("Content-Type", "application/json"),)
    replay.apply(RequestBegin(7, 2.0, "POST", "/mcp", headers, None, None, size, rest))
    replay.apply(ExchangeEnd(7, 3.0, "complete", True))
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
    assert_body_gap(records)


def test_pieces_lost_at_the_end_of_a_body_are_counted() -> None:
    """The last pieces never arrived (and the rest was empty): the whole size is the gap."""
    assert_body_gap(replay_streamed([(BODY[:10], 0)], b"", 1 << 20))


def assert_body_gap(records: list[Any]) -> None:
    assert [r for r in records if isinstance(r, FrameRecord)] == []
    (gap,) = [r for r in records if isinstance(r, EventRecord) and r.event == "capture-gap"]
    assert gap.data["lost_bytes"] == len(BODY)
    assert gap.data["direction"] == "c2s"
    (request,) = [r for r in records if isinstance(r, EventRecord) and r.event == "http-request"]
    assert request.data["path"] == "/mcp"
