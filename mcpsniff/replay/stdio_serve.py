"""``replay serve`` over stdio: the recording answers on stdin/stdout, one JSON line each."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable
from typing import BinaryIO

from mcpsniff.core.model import C2S, S2C
from mcpsniff.replay.serve import ReplayServer
from mcpsniff.replay.tap import Tap

#: How long in-flight requests may finish after stdin closed.
DRAIN_TIMEOUT = 5.0


async def serve_stdio(
    server: ReplayServer,
    tap: Tap,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
) -> None:
    """Serve until stdin ends, then let requests in flight finish."""
    source = stdin or sys.stdin.buffer
    sink = stdout or sys.stdout.buffer
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
