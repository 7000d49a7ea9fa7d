"""The pipe between the relay's forwarding loop and its analysis process, on real OS pipes."""

from __future__ import annotations

import asyncio
import os
import threading

import orjson

from mcpsniff.core.model import C2S, S2C
from mcpsniff.relay.observer_pipe import (
    DATA,
    EOF,
    EVENT,
    GAP,
    STDERR,
    STOP,
    AnalysisProcess,
    Observation,
    ObservationSender,
    read_observations,
)


def drain_all(fd: int) -> list[Observation]:
    """Every observation the pipe carries until EOF."""
    return [o for batch in read_observations(fd) for o in batch]


def test_every_kind_of_observation_arrives_in_order_with_its_time_and_bytes() -> None:
    read_fd, write_fd = os.pipe()
    sender = ObservationSender(write_fd, limit=1 << 20)
    sender.event("session-start", 1.5, {"pid": 7})
    sender.data(C2S, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n', 2.25)
    sender.data(S2C, b"\xff\x00 not utf-8", 3.0)
    sender.stderr(b"log line\n", 3.5)
    sender.eof(C2S, 4.0)
    sender.stop(5.0)
    os.close(write_fd)
    got = drain_all(read_fd)
    os.close(read_fd)
    assert [(o.kind, o.direction, o.t) for o in got] == [
        (EVENT, "", 1.5),
        (DATA, C2S, 2.25),
        (DATA, S2C, 3.0),
        (STDERR, "", 3.5),
        (EOF, C2S, 4.0),
        (STOP, "", 5.0),
    ]
    assert got[0].json() == {"name": "session-start", "data": {"pid": 7}}
    assert got[1].payload == b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    assert got[2].payload == b"\xff\x00 not utf-8"
    assert got[3].payload == b"log line\n"


def test_a_full_pipe_queues_up_to_the_limit_then_counts_lost_bytes_and_reports_a_gap() -> None:
    async def scenario() -> tuple[list[Observation], int]:
        read_fd, write_fd = os.pipe()
        sender = ObservationSender(write_fd, limit=256 << 10)
        sender.attach(asyncio.get_running_loop())
        chunk = b"x" * (64 << 10)
        # Nobody reads: the pipe fills, then the queue, then copies are dropped.
        for _ in range(64):
            sender.data(C2S, chunk, 1.0)
        queued = sender.pending_bytes
        assert queued <= 256 << 10
        assert sender.lost[C2S] > 0
        lost = sender.lost[C2S]
        received: list[Observation] = []
        reader = threading.Thread(target=lambda: received.extend(drain_all(read_fd)))
        reader.start()
        # Room again: the next chunk is preceded by a gap saying what was lost.
        while sender.pending:
            await asyncio.sleep(0.01)
        sender.data(C2S, b"after\n", 2.0)
        await sender.close()
        await asyncio.get_running_loop().run_in_executor(None, reader.join)
        os.close(read_fd)
        return received, lost

    received, lost = asyncio.run(scenario())
    data = [o for o in received if o.kind == DATA]
    gaps = [o for o in received if o.kind == GAP]
    assert len(gaps) == 1 and gaps[0].json() == {"lost": lost}
    assert gaps[0].direction == C2S
    # Whatever was not lost arrived whole, in order, and the gap comes right before "after".
    assert sum(len(o.payload) for o in data[:-1]) + lost == 64 * (64 << 10)
    assert received[-3:-1] == [gaps[0], data[-1]] and data[-1].payload == b"after\n"
    assert received[-1].kind == STOP


def test_a_dead_analysis_process_never_stops_the_sender() -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    sender = ObservationSender(write_fd, limit=1 << 20)
    sender.data(C2S, b"bytes nobody will analyze\n", 1.0)  # EPIPE: no exception
    assert sender.broken
    sender.data(S2C, b"more\n", 2.0)
    asyncio.run(sender.close())


def test_the_forked_process_gets_everything_and_its_exit_status_comes_back(tmp_path) -> None:
    out = tmp_path / "seen.json"

    def work(fd: int) -> int:
        seen = [[o.kind, o.direction, o.payload.decode()] for o in drain_all(fd)]
        out.write_bytes(orjson.dumps(seen))
        return 5

    async def scenario() -> int:
        process = AnalysisProcess.start(work, limit=1 << 20)
        process.sender.attach(asyncio.get_running_loop())
        process.sender.data(C2S, b"hello\n", 1.0)
        process.sender.eof(S2C, 2.0)
        await process.sender.close()
        return await process.wait()

    assert asyncio.run(scenario()) == 5
    assert orjson.loads(out.read_bytes()) == [
        [DATA, C2S, "hello\n"],
        [EOF, S2C, ""],
        [STOP, "", ""],
    ]
