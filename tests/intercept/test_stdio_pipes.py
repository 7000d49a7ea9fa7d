"""intercept/stdio_pipes.py: a written-through pipe's drain() waits for every byte."""

from __future__ import annotations

import asyncio
import os

from mcpsniff.intercept.stdio_pipes import CHUNK, write_through


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
