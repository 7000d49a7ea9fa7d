"""What every stdio pump shares, whichever carries the bytes: plain, gated or faulted.

The relay's own stdin and stdout (``mcpsniff.relay.stdio_io``) and the child's
pipes are read ``CHUNK`` bytes at a time and written through.
"""

from __future__ import annotations

import asyncio

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
