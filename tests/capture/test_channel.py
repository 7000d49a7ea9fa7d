"""The capture channel on real OS pipes: batches, the bounded backlog and its gap accounting."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.capture import channel as channel_module
from mcpsniff.capture.analysis_process import AnalysisProcess
from mcpsniff.capture.channel import Channel, InProcess, read_batches
from mcpsniff.capture.priority import ForwardingClock
from mcpsniff.capture.recorder import TraceRecorder
from mcpsniff.capture.remote_exchange import RemoteObserver
from mcpsniff.capture.worker import Worker
from mcpsniff.core.http.adapter import ObservationAdapter
from mcpsniff.core.model import C2S, S2C, EventRecord, FrameRecord
from mcpsniff.core.observations import (
    CaptureEnd,
    CaptureGap,
    ChildSpawned,
    ExchangeEnd,
    RequestBegin,
    RequestBody,
    RequestGap,
    ResponseBody,
    ResponseGap,
    SignalForwarded,
    Stderr,
    StdioStart,
    StreamData,
    StreamEnd,
    StreamGap,
)
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter


def drain_all(fd: int) -> list[Any]:
    """Every observation the pipe carries until EOF."""
    return [o for batch in read_batches(fd) for o in batch]


def test_observations_arrive_in_order_with_their_time_and_bytes() -> None:
    read_fd, write_fd = os.pipe()
    channel = Channel(write_fd, limit=1 << 20)
    sent = [
        StdioStart(1.5, ["server"], 7),
        StreamData(C2S, 2.25, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'),
        StreamData(S2C, 3.0, b"\xff\x00 not utf-8"),
        Stderr(3.5, b"log line\n"),
        StreamEnd(C2S, 4.0),
    ]
    for observation in sent:
        channel.send(observation)
    channel.end(5.0)
    channel.close_blocking()
    got = drain_all(read_fd)
    os.close(read_fd)
    assert got == [*sent, CaptureEnd(5.0)]


def test_one_turn_of_the_event_loop_is_one_write() -> None:
    async def scenario() -> tuple[int, list[Any]]:
        read_fd, write_fd = os.pipe()
        channel = Channel(write_fd, limit=1 << 20)
        channel.attach(asyncio.get_running_loop())
        channel.send(ChildSpawned(0.0, 7, "/bin/server"))
        for n in range(99):
            channel.send(StreamData(C2S, float(n), b"x" * 100 + b"\n"))
        os.set_blocking(read_fd, False)
        try:  # nothing written yet: the batch waits for the end of the turn
            os.read(read_fd, 1)
            raise AssertionError("written before the end of the turn")
        except BlockingIOError:
            pass
        os.set_blocking(read_fd, True)
        await asyncio.sleep(0)  # the flush runs at the end of the turn
        first = os.read(read_fd, 1 << 20)
        await channel.close()
        rest = drain_all(read_fd)
        os.close(read_fd)
        from mcpsniff.core.observation_codec import decode_all

        return len(decode_all(first)), rest

    in_first_read, rest = asyncio.run(scenario())
    assert in_first_read == 100
    assert rest == []


def test_a_lone_chunk_is_written_at_once() -> None:
    async def scenario() -> list[Any]:
        read_fd, write_fd = os.pipe()
        channel = Channel(write_fd, limit=1 << 20)
        channel.attach(asyncio.get_running_loop())
        channel.send_data(S2C, 1.0, b"pong\n")
        # No turn of the loop: a lone request's chunk does not wait for one.
        from mcpsniff.core.observation_codec import decode_all

        got = decode_all(os.read(read_fd, 1 << 16))
        await channel.close()
        os.close(read_fd)
        return got

    assert asyncio.run(scenario()) == [StreamData(S2C, 1.0, b"pong\n")]


def test_a_full_backlog_drops_stream_bytes_and_tells_the_gap_before_the_next_data() -> None:
    async def scenario() -> tuple[list[Any], int]:
        read_fd, write_fd = os.pipe()
        channel = Channel(write_fd, limit=256 << 10)
        channel.attach(asyncio.get_running_loop())
        chunk = b"x" * (64 << 10)
        # Nobody reads: the pipe fills, then the backlog, then copies are dropped.
        for _ in range(64):
            channel.send(StreamData(C2S, 1.0, chunk))
            await asyncio.sleep(0)
        assert channel.pending_bytes <= 256 << 10
        lost = channel._lost_streams[C2S]
        assert lost > 0
        received: list[Any] = []
        reader = threading.Thread(target=lambda: received.extend(drain_all(read_fd)))
        reader.start()
        while channel.pending:
            await asyncio.sleep(0.01)
        channel.send(StreamData(C2S, 2.0, b"after\n"))
        channel.end(3.0)
        await channel.close()
        await asyncio.get_running_loop().run_in_executor(None, reader.join)
        os.close(read_fd)
        return received, lost

    received, lost = asyncio.run(scenario())
    data = [o for o in received if type(o) is StreamData]
    gaps = [o for o in received if type(o) is StreamGap]
    assert gaps == [StreamGap(C2S, 2.0, lost)]
    # Whatever was not lost arrived whole, in order, and the gap comes right before "after".
    assert sum(len(o.body) for o in data[:-1]) + lost == 64 * (64 << 10)
    assert received[-3:] == [gaps[0], data[-1], CaptureEnd(3.0)]
    assert data[-1].body == b"after\n"


def test_a_gap_still_open_when_the_capture_ends_is_told_before_the_end() -> None:
    read_fd, write_fd = os.pipe()
    channel = Channel(write_fd, limit=10)
    channel.send(StreamData(S2C, 1.0, b"y" * 100))  # over the limit: dropped
    channel.send(ResponseBody(4, 1.5, False, b"z" * 50))  # over the limit too
    channel.send(Stderr(1.7, b"e" * 30))
    channel.end(2.0)
    channel.close_blocking()
    got = drain_all(read_fd)
    os.close(read_fd)
    assert StreamGap(S2C, 2.0, 100) in got
    assert ResponseGap(4, 2.0, 50) in got
    capture = [o for o in got if type(o) is CaptureGap]
    assert capture == [CaptureGap(2.0, 2, 80)]  # the body and the stderr piece
    assert got[-1] == CaptureEnd(2.0)
    assert not [o for o in got if type(o) in (StreamData, ResponseBody, Stderr)]


def test_what_says_an_exchange_happened_always_goes() -> None:
    read_fd, write_fd = os.pipe()
    channel = Channel(write_fd, limit=10)
    headers = (("Content-Type", "application/json"),)
    channel.send(RequestBegin(1, 1.0, "POST", "/mcp", headers, None, None, 20, b"b" * 20))
    channel.send(ResponseBody(1, 2.0, True, b"r" * 40))
    channel.send(ExchangeEnd(1, 3.0, "complete", True))
    channel.close_blocking()
    everything = drain_all(read_fd)
    os.close(read_fd)
    got = [o for o in everything if type(o) is not CaptureGap]
    counted = [o for o in everything if type(o) is CaptureGap]
    assert sum(o.lost_calls for o in counted) == 2
    assert sum(o.lost_bytes for o in counted) == 60
    assert got[:2] == [
        RequestGap(1, 1.0, 20),
        RequestBegin(1, 1.0, "POST", "/mcp", headers, None, None, 20, b""),
    ]
    assert got[2:] == [ResponseGap(1, 3.0, 40), ExchangeEnd(1, 3.0, "complete", True)]


def test_a_dead_analysis_process_never_stops_the_sender() -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    broken: list[OSError] = []
    channel = Channel(write_fd, limit=1 << 20, on_broken=broken.append)
    channel.send(StreamData(C2S, 1.0, b"bytes nobody will analyze\n"))  # EPIPE: no exception
    assert channel.broken and len(broken) == 1
    channel.send(StreamData(S2C, 2.0, b"more\n"))
    channel.end(3.0)
    asyncio.run(channel.close())
    assert len(broken) == 1


def test_in_process_replays_at_once() -> None:
    seen: list[Any] = []
    capture = InProcess(seen.append)
    capture.send(StreamData(C2S, 1.0, b"x\n"))
    capture.end(2.0)
    assert seen == [StreamData(C2S, 1.0, b"x\n"), CaptureEnd(2.0)]


def test_send_data_makes_the_frame_send_makes() -> None:
    frames = []
    for use_send in (True, False):
        read_fd, write_fd = os.pipe()
        channel = Channel(write_fd, limit=1 << 20)
        if use_send:
            channel.send(StreamData(S2C, 1.25, b"abc\n"))
        else:
            channel.send_data(S2C, 1.25, b"abc\n")
        channel.close_blocking()
        frames.append(os.read(read_fd, 1 << 16))
        os.close(read_fd)
    assert frames[0] == frames[1]
    from mcpsniff.core.observation_codec import decode_all

    assert decode_all(frames[0]) == [StreamData(S2C, 1.25, b"abc\n")]


@pytest.mark.parametrize("seed", range(6))
def test_read_batches_gives_every_observation_whatever_the_reads_cut(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reads cut frames anywhere (small rests kept as bytes, big ones appended to)."""
    import random

    from mcpsniff.capture import channel
    from mcpsniff.core.observation_codec import decode_all, encode_bytes

    rng = random.Random(seed)
    sizes = [rng.choice([0, 5, 1000, 70_000]) for _ in range(200)] + [600_000, 3_000_000]
    rng.shuffle(sizes)
    observations = [StreamData(C2S, float(i), bytes([i % 251]) * n) for i, n in enumerate(sizes)]
    stream = b"".join(encode_bytes(o) for o in observations)
    pieces: list[bytes] = []
    at = 0
    while at < len(stream):
        step = rng.choice([1, 7, 4096, 300_000, channel.READ_SIZE])
        pieces.append(stream[at : at + step])
        at += step
    reads = iter(pieces)
    monkeypatch.setattr(channel.os, "read", lambda fd, size: next(reads, b""))
    monkeypatch.setattr(channel.time, "sleep", lambda seconds: None)
    batches = list(read_batches(-1))
    got = [o for batch in batches for o in batch]
    assert got == decode_all(stream) == observations
    assert all(type(o.body) is bytes for o in got)


def test_dropped_observations_without_bytes_are_a_gap_of_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Far behind, an exchange's end is dropped too: told apart from dropped body bytes
    (each also a gap of its exchange), since no other gap accounts for it."""
    monkeypatch.setattr(channel_module, "METADATA_ALLOWANCE", 1000)
    read_fd, write_fd = os.pipe()
    channel = Channel(write_fd, limit=10)
    ends = 20_000  # far more than the pipe holds: the backlog passes limit + allowance
    for number in range(ends):
        channel.send(ExchangeEnd(number, 1.0, "complete", True))
    channel.send(ResponseBody(7, 2.0, True, b"r" * 40))
    assert channel.lost_bare > 0 and (channel.lost_calls, channel.lost_bytes) == (1, 40)
    received: list[Any] = []
    reader = threading.Thread(target=lambda: received.extend(drain_all(read_fd)))
    reader.start()
    channel.end(3.0)
    channel.close_blocking()
    reader.join()
    os.close(read_fd)
    gaps = [o for o in received if type(o) is CaptureGap]
    bare = [g for g in gaps if g.lost_bytes == 0]
    assert [(g.lost_calls, g.lost_bytes) for g in gaps if g.lost_bytes] == [(1, 40)]
    delivered = sum(type(o) is ExchangeEnd for o in received)
    assert delivered < ends and sum(g.lost_calls for g in bare) == ends - delivered


def test_dropped_observations_without_bytes_are_told_before_the_next_one_that_goes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A reply queued after a dropped request begin comes after the gap that says so,
    even while the backlog is still too full for the gap of dropped bytes."""
    monkeypatch.setattr(channel_module, "METADATA_ALLOWANCE", 1000)
    read_fd, write_fd = os.pipe()
    channel = Channel(write_fd, limit=10)
    ends = 20_000
    for number in range(ends):
        channel.send(ExchangeEnd(number, 1.0, "complete", True))
    assert channel.lost_bare > 0
    monkeypatch.setattr(channel_module, "METADATA_ALLOWANCE", 1 << 30)  # room for metadata again
    marker = SignalForwarded(2.0, "SIGTERM")
    channel.send(marker)
    assert channel.lost_bare == 0
    received: list[Any] = []
    reader = threading.Thread(target=lambda: received.extend(drain_all(read_fd)))
    reader.start()
    channel.end(3.0)
    channel.close_blocking()
    reader.join()
    os.close(read_fd)
    at = received.index(marker)
    assert type(received[at - 1]) is CaptureGap and received[at - 1].lost_bytes == 0
    delivered = sum(type(o) is ExchangeEnd for o in received)
    assert received[at - 1].lost_calls == ends - delivered


# ----------------------------------------------------------------------------
# An HTTP shell's channel to a real forked worker: what the backlog drops, the trace says.


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


def test_the_channel_ticks_the_clock_with_each_observation() -> None:
    clock = ForwardingClock()
    read_fd, write_fd = os.pipe()
    try:
        channel = Channel(write_fd, 1 << 20, clock=clock)
        channel.send_data(C2S, 123.5, b"{}\n")
        assert clock.stamp[0] == 123.5
        channel.send(StreamEnd(S2C, 124.25))
        assert clock.stamp[0] == 124.25
        assert clock.forwarding(124.25)
    finally:
        os.close(read_fd)
        os.close(write_fd)
