"""intercept/stdio_pipes.py: a written-through pipe's drain() waits for every byte."""

from __future__ import annotations

import asyncio
import os
import sys

from mcpsniff.intercept.stdio_pipes import CHUNK, ChildInput, write_through


def test_write_through_leaves_no_byte_in_the_transport_after_drain() -> None:
    async def main() -> tuple[tuple[int, int], int, bytes]:
        loop = asyncio.get_running_loop()
        read_end, write_end = os.pipe()
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(write_end, "wb", buffering=0)
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        write_through(transport)
        limits = transport.get_write_buffer_limits()
        # More than a pipe holds (64 KiB on Linux): drain() returns only once the
        # reader took all of it, so nothing is left in the transport's buffer.
        data = b"x" * (4 * CHUNK)
        got = bytearray()

        def read_all() -> None:
            while piece := os.read(read_end, CHUNK):
                got.extend(piece)

        reading = loop.run_in_executor(None, read_all)
        writer.write(data)
        await writer.drain()
        left = transport.get_write_buffer_size()
        transport.close()
        await reading
        os.close(read_end)
        return limits, left, bytes(got)

    limits, left, got = asyncio.run(main())
    assert limits == (0, 0)
    assert left == 0
    assert got == b"x" * (4 * CHUNK)


def test_child_input_writes_through_and_goes_quiet_once_the_child_stops_reading() -> None:
    async def main() -> tuple[bytes, bool, bool, tuple[int, int]]:
        # A child that reads one line, echoes it to stdout, and closes its stdin.
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "import os, sys; line = sys.stdin.buffer.readline(); os.close(0);"
            " sys.stdout.buffer.write(line); sys.stdout.flush(); import time; time.sleep(0.5)",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        child = ChildInput(proc)
        assert proc.stdin is not None and proc.stdout is not None
        limits = proc.stdin.transport.get_write_buffer_limits()
        await child.write(b"hello\n")
        echoed = await proc.stdout.readline()
        # Its stdin is closed now: writing fails, and the next writes are not tried.
        for _ in range(50):
            await child.write(b"x" * CHUNK)
            if not child.reads:
                break
        stopped = not child.reads
        child.close()
        await child.write(b"never")  # quiet, no exception
        await proc.wait()
        return echoed, stopped, child.reads, limits

    echoed, stopped, reads_after_close, limits = asyncio.run(main())
    assert echoed == b"hello\n"
    assert stopped and reads_after_close is False
    assert limits == (0, 0)
