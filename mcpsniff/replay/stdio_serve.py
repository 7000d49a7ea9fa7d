"""``replay serve`` over stdio: the recording answers on stdin/stdout, one JSON line each."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Callable, Sequence
from typing import BinaryIO

from mcpsniff.core.model import C2S, S2C
from mcpsniff.faults.engine import FAULT_EVENT, FaultEngine
from mcpsniff.faults.lines import LineFaults, StreamPort
from mcpsniff.faults.spec import Fault
from mcpsniff.replay.serve import ReplayServer
from mcpsniff.replay.tap import Tap

#: How long in-flight requests may finish after stdin closed.
DRAIN_TIMEOUT = 5.0


async def serve_stdio(
    server: ReplayServer,
    tap: Tap,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    faults: Sequence[Fault] = (),
) -> None:
    """Serve until stdin ends, then let requests in flight finish.

    With ``faults`` the mock server misbehaves as they say (``serve_faulty``).
    """
    source = stdin or sys.stdin.buffer
    sink = stdout or sys.stdout.buffer
    if faults:
        await serve_faulty(server, tap, source, sink, list(faults))
        return
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[bytes | None] = asyncio.Queue()
    # A thread reads stdin: it works for pipes, files and terminals alike.
    reader = threading.Thread(
        target=_pump, args=(source, lambda line: loop.call_soon_threadsafe(lines.put_nowait, line))
    )
    reader.daemon = True
    reader.start()

    async def emit(frame: bytes) -> None:
        data = frame + b"\n"
        sink.write(data)
        sink.flush()
        tap.stream(S2C, data)

    tasks: set[asyncio.Task[object]] = set()
    while (line := await lines.get()) is not None:
        tap.stream(C2S, line)
        if not line.strip():
            continue
        # Each frame runs on its own: one waiting for a client's answer must not block it.
        task = asyncio.create_task(server.handle(line, emit))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.wait(tasks, timeout=DRAIN_TIMEOUT)


def _pump(source: BinaryIO, put: Callable[[bytes | None], object]) -> None:
    try:
        for line in source:
            put(line)
    except (OSError, ValueError):
        pass
    put(None)


async def serve_faulty(
    server: ReplayServer, tap: Tap, source: BinaryIO, sink: BinaryIO, faults: list[Fault]
) -> None:
    """Serve through a fault carrier: a misbehaving mock server, to test a client's resilience.

    The carrier sits between the wire and the recording: each request line
    the client sends and each answer the recording gives passes it
    (``mcpsniff.faults.lines``), so ``drop``, ``delay``, ``error``,
    ``corrupt``, ... act exactly as in ``mcpsniff stdio``; ``kill`` stops
    serving, as a crashed server would.
    """
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[bytes | None] = asyncio.Queue()
    reader = threading.Thread(
        target=_pump, args=(source, lambda line: loop.call_soon_threadsafe(lines.put_nowait, line))
    )
    reader.daemon = True
    reader.start()
    tasks: set[asyncio.Task[object]] = set()
    stopped = asyncio.Event()
    carrier: LineFaults

    async def emit(frame: bytes) -> None:
        await carrier.carry(S2C, frame + b"\n")

    async def write(direction: str, data: bytes) -> None:
        if direction == S2C:
            sink.write(data)
            sink.flush()
            return
        for line in data.splitlines(keepends=True):
            if line.strip():
                task = asyncio.create_task(server.handle(line, emit))
                tasks.add(task)
                task.add_done_callback(tasks.discard)

    def close(direction: str) -> None:
        if direction == S2C:
            stopped.set()
            with contextlib.suppress(OSError, ValueError):
                sink.close()

    carrier = LineFaults(
        FaultEngine(faults),
        StreamPort(
            write,
            tap.stream,
            lambda data: tap.event(FAULT_EVENT, data),
            close,
            stopped.set,
        ),
        verbatim=True,  # the replay serves a recording: nothing new to hide
    )
    while not stopped.is_set():
        getting = asyncio.ensure_future(lines.get())
        waiting = asyncio.ensure_future(stopped.wait())
        await asyncio.wait({getting, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if not getting.done():
            getting.cancel()
            break
        line = getting.result()
        if line is None:
            break
        await carrier.carry(C2S, line)
    await carrier.end(C2S)
    if tasks and not stopped.is_set():
        await asyncio.wait(tasks, timeout=DRAIN_TIMEOUT)
    await carrier.end(S2C)
    await carrier.settle(DRAIN_TIMEOUT)
    for task in tasks:
        task.cancel()
