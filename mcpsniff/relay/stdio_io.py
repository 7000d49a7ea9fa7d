"""Our own stdin, stdout and stderr as the stdio relay moves bytes through them.

Pipes and sockets become non-blocking asyncio transports; files and
terminals keep plain blocking writes (a terminal's stdin is read on a daemon
thread). The relay puts every descriptor's blocking mode back as it was
(``blocking_modes``, ``restore_blocking``): O_NONBLOCK belongs to the open
file description, which the process that gave us the pipe shares.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import stat
import threading
from typing import Any, TextIO

from mcpsniff.intercept.stdio_pipes import CHUNK, write_through


class Output:
    """Our stdout or stderr: non-blocking for pipes, plain writes for files."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.writer: asyncio.StreamWriter | None = None
        self.protocol: _WriteProtocol | None = None
        self.was_blocking = True
        self.broken = False

    async def open(self) -> None:
        try:
            mode = os.fstat(self.fd).st_mode
        except OSError:
            self.broken = True
            return
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            loop = asyncio.get_running_loop()
            self.was_blocking = os.get_blocking(self.fd)
            pipe = os.fdopen(os.dup(self.fd), "wb", buffering=0)
            transport, protocol = await loop.connect_write_pipe(_WriteProtocol, pipe)
            write_through(transport)
            self.protocol = protocol
            self.writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def write(self, data: bytes) -> None:
        if self.broken:
            return
        try:
            if self.writer is not None:
                self.writer.write(data)
                await self.writer.drain()
            else:
                view = memoryview(data)
                while view:
                    written = os.write(self.fd, view)
                    view = view[written:]
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.broken = True

    def write_nowait(self, data: bytes) -> None:
        """Queue ``data`` behind what is already being written, without waiting."""
        if self.broken:
            return
        if self.writer is None:
            with contextlib.suppress(OSError):
                os.write(self.fd, data)  # a file or terminal: a plain blocking write
            return
        if self.writer.transport.is_closing():
            # The reader went away. Writing on would make asyncio log a warning
            # to sys.stderr, which may be this very stream: stop here instead.
            self.broken = True
            return
        self.writer.write(data)

    def text_stream(self, like: TextIO) -> TextIO:
        """A text stream whose writes are queued on this output (see ``StdioRelay.run``)."""
        return io.TextIOWrapper(
            _QueuedRaw(self),
            encoding=getattr(like, "encoding", None) or "utf-8",
            errors=getattr(like, "errors", None) or "backslashreplace",
            line_buffering=True,
            write_through=True,
        )

    async def close(self, stall: float) -> None:
        """Write out what is still queued, then close.

        Waits until the transport has written everything (``drain()`` returns
        while up to the low-water mark is still queued, and that tail would be
        lost), as long as the reader makes progress; a reader that takes
        nothing for ``stall`` seconds does not hold the relay forever.
        """
        if self.writer is None or self.protocol is None:
            return
        transport = self.writer.transport
        transport.close()  # flushes what is queued, then reports connection_lost
        closed = self.protocol.closed
        while not closed.done():
            queued = transport.get_write_buffer_size()
            await asyncio.wait({closed}, timeout=stall)
            if not closed.done() and transport.get_write_buffer_size() >= queued:
                transport.abort()
                break


class _WriteProtocol(asyncio.streams.FlowControlMixin):
    """Flow control for a write pipe, plus a future that is done when it is closed."""

    def __init__(self) -> None:
        super().__init__()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if not self.closed.done():
            self.closed.set_result(None)


class _QueuedRaw(io.RawIOBase):
    """The raw layer under ``Output.text_stream``: every write goes to ``write_nowait``."""

    def __init__(self, output: Output) -> None:
        super().__init__()
        self.output = output

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self.output.write_nowait(chunk)
        return len(chunk)


class Input:
    """Our stdin: a non-blocking pipe reader, or a thread for files and terminals."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.reader: asyncio.StreamReader | None = None
        self.transport: asyncio.BaseTransport | None = None

    async def open(self) -> None:
        try:
            mode = os.fstat(self.fd).st_mode
        except OSError:
            return
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=CHUNK, loop=loop)
            pipe = os.fdopen(os.dup(self.fd), "rb", buffering=0)
            self.transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe
            )
            self.reader = reader

    async def read(self) -> bytes:
        if self.reader is not None:
            return await self.reader.read(CHUNK)
        # A daemon thread per read, not the default executor: on a terminal
        # the read blocks until the user types something, and ``asyncio.run``
        # joins the executor's threads before it returns (mcpsniff would hang
        # after the child exited until Enter was pressed).
        loop = asyncio.get_running_loop()
        done: asyncio.Future[bytes] = loop.create_future()

        def read_blocking() -> None:
            try:
                data = os.read(self.fd, CHUNK)
            except OSError:
                data = b""
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(_resolve, done, data)

        threading.Thread(target=read_blocking, name="mcpsniff-stdin", daemon=True).start()
        return await done

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


def _resolve(future: asyncio.Future[bytes], data: bytes) -> None:
    if not future.done():
        future.set_result(data)


async def forward(sink: asyncio.StreamWriter, data: bytes) -> bool:
    """Write ``data`` to ``sink`` and wait for it to go; False once its reader is gone.

    A reader that closed its end (or died) makes the write fail: the caller keeps
    reading, so whoever writes to it is not blocked, and keeps recording, but
    writes no more, which asyncio would log once per chunk ("pipe closed by peer").
    """
    try:
        sink.write(data)
        await sink.drain()
    except (BrokenPipeError, ConnectionResetError):
        return False
    return True


def blocking_modes() -> dict[int, bool]:
    """The blocking mode of each of our standard descriptors."""
    modes: dict[int, bool] = {}
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            modes[fd] = os.get_blocking(fd)
    return modes


def restore_blocking(modes: dict[int, bool]) -> None:
    # All at once, from modes read before any was changed: stdout and stderr
    # are often one pipe (2>&1), so per-descriptor bookkeeping would read the
    # mode another transport had already changed.
    for fd, mode in modes.items():
        with contextlib.suppress(OSError):
            os.set_blocking(fd, mode)
