"""``replay serve`` over stdio: the recording answers on stdin/stdout, one JSON line each.

Memory is bounded whatever the client sends. A line is read at most
``LINE_LIMIT`` bytes at a time: a longer one is skipped to its newline, never
held, and answered with a parse error (a 500 MB line took 2 GB, and a 300 MB
one crashed the JSON parser under a 4 GB address-space limit). Lines read but
not yet answered are bounded in number and bytes (``InFlight``): past either
bound the reader stops reading stdin, so a client that floods requests is
slowed by its own pipe instead of growing the replay.
"""

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
from mcpsniff.replay.serve import FRAME_LIMIT, ReplayServer, encode, parse_error
from mcpsniff.replay.tap import Tap

#: How long in-flight requests may finish after stdin closed.
DRAIN_TIMEOUT = 5.0
#: The longest line answered: the HTTP replay's body limit too.
LINE_LIMIT = FRAME_LIMIT
#: Bytes of lines read and not yet answered, at most.
IN_FLIGHT_BYTES = 128 << 20
#: Lines read and not yet answered, at most (a server request may wait for the
#: client's answer, which must still be read: so not a small number).
IN_FLIGHT_LINES = 1024


class TooLong:
    """A line longer than ``LINE_LIMIT``: skipped, counted, answered with a parse error."""

    def __init__(self, size: int) -> None:
        self.size = size


class InFlight:
    """A budget of lines and bytes shared by the reader thread and the event loop."""

    def __init__(self, lines: int = IN_FLIGHT_LINES, size: int = IN_FLIGHT_BYTES) -> None:
        self.lines = lines
        self.size = size
        self._used_lines = 0
        self._used_size = 0
        self._changed = threading.Condition()

    def acquire(self, size: int) -> None:
        """Wait (in the reader thread) until a line of ``size`` bytes fits in the budget."""
        with self._changed:
            while self._used_lines and (
                self._used_lines >= self.lines or self._used_size + size > self.size
            ):
                self._changed.wait()
            self._used_lines += 1
            self._used_size += size

    def release(self, size: int) -> None:
        """A line of ``size`` bytes was answered (or dropped)."""
        with self._changed:
            self._used_lines -= 1
            self._used_size -= size
            self._changed.notify_all()


async def serve_stdio(
    server: ReplayServer,
    tap: Tap,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    faults: Sequence[Fault] = (),
    budget: InFlight | None = None,
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
    budget = budget or InFlight()
    lines: asyncio.Queue[bytes | TooLong | None] = asyncio.Queue()
    # A thread reads stdin: it works for pipes, files and terminals alike.
    reader = threading.Thread(
        target=_pump,
        args=(source, lambda line: loop.call_soon_threadsafe(lines.put_nowait, line), budget),
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
        if isinstance(line, TooLong):
            tap.event("replay-line-too-long", {"bytes": line.size, "limit": LINE_LIMIT})
            await emit(encode(parse_error(f"line longer than {LINE_LIMIT} bytes")))
            budget.release(0)
            continue
        tap.stream(C2S, line)
        if not line.strip():
            budget.release(len(line))
            continue
        # Each frame runs on its own: one waiting for a client's answer must not block it.
        task = asyncio.create_task(server.handle(line, emit))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        task.add_done_callback(_releaser(budget, len(line)))
    if tasks:
        await asyncio.wait(tasks, timeout=DRAIN_TIMEOUT)


def _releaser(budget: InFlight, size: int) -> Callable[[object], None]:
    """A done-callback giving ``size`` bytes back to ``budget``."""
    return lambda _task: budget.release(size)


def _pump(
    source: BinaryIO, put: Callable[[bytes | TooLong | None], object], budget: InFlight
) -> None:
    try:
        while line := source.readline(LINE_LIMIT + 1):
            if len(line) > LINE_LIMIT:
                budget.acquire(0)
                put(TooLong(len(line) + _skip_line(source)))
                continue
            budget.acquire(len(line))
            put(line)
    except (OSError, ValueError):
        pass
    put(None)


def _skip_line(source: BinaryIO) -> int:
    """Read and drop the rest of a line (a mebibyte at a time); the bytes dropped."""
    skipped = 0
    while chunk := source.readline(1 << 20):
        skipped += len(chunk)
        if chunk.endswith(b"\n"):
            break
    return skipped


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
    lines: asyncio.Queue[bytes | TooLong | None] = asyncio.Queue()
    # The same bound on lines read ahead as without faults (serve_stdio).
    budget = InFlight()
    reader = threading.Thread(
        target=_pump,
        args=(source, lambda line: loop.call_soon_threadsafe(lines.put_nowait, line), budget),
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
        if isinstance(line, TooLong):
            tap.event("replay-line-too-long", {"bytes": line.size, "limit": LINE_LIMIT})
            await emit(encode(parse_error(f"line longer than {LINE_LIMIT} bytes")))
            budget.release(0)
            continue
        await carrier.carry(C2S, line)
        budget.release(len(line))
    await carrier.end(C2S)
    if tasks and not stopped.is_set():
        await asyncio.wait(tasks, timeout=DRAIN_TIMEOUT)
    await carrier.end(S2C)
    await carrier.settle(DRAIN_TIMEOUT)
    for task in tasks:
        task.cancel()
