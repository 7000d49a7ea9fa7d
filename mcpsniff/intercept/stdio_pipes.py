"""What every stdio pump shares, whichever carries the bytes: plain, gated or faulted.

The relay's own stdin and stdout (``mcpsniff.relay.stdio_io``) and the child's
pipes are read ``CHUNK`` bytes at a time and written through; the child's
stdin is a ``ChildInput``.
"""

from __future__ import annotations

import asyncio
import contextlib

#: Bytes read at a time.
CHUNK = 1 << 16


def write_through(transport: asyncio.WriteTransport) -> None:
    """Make ``drain()`` wait until the pipe has taken every byte, not just most of them.

    A chunk is handed to the analysis process only after ``drain()``; with
    asyncio's default high-water mark up to 64 KiB could still sit in the
    transport's buffer then, and if mcpsniff were killed at that moment the
    trace would record bytes the peer never received.
    """
    transport.set_write_buffer_limits(high=0, low=0)


class ChildInput:
    """The child's stdin as a pump writes it: written through, quiet once the child stops reading.

    A child that closed its stdin (or died) makes the write fail: the pump
    keeps reading its client, so that the client is not blocked, and keeps
    recording, but writes no more, which asyncio would log once per chunk
    ("pipe closed by peer").
    """

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin is not None
        self.writer = proc.stdin
        write_through(self.writer.transport)
        #: False once the child stopped reading (or its stdin was closed).
        self.reads = True

    async def write(self, data: bytes) -> None:
        """Write ``data``, wait until the pipe took it; nothing once the child stopped reading."""
        if not self.reads:
            return
        try:
            self.writer.write(data)
            await self.writer.drain()
        except (BrokenPipeError, ConnectionResetError):
            self.reads = False

    def close(self) -> None:
        """Close the child's stdin (its end of input); write nothing more."""
        self.reads = False
        with contextlib.suppress(Exception):
            self.writer.close()
