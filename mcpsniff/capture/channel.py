"""The capture channel: the one way observations go from a shell to its analysis.

docs/architecture.md, invariant 2 says recording and analysis never sit between a read
and its write. In one Python process they would still share the
interpreter, so every shell (``mcpsniff stdio``, ``mcpsniff http``, the
mitmproxy addon) runs its analysis in an analysis process
(``mcpsniff.capture.worker``) and only hands it copies of what it forwarded,
as observations (``mcpsniff.core.observations``) encoded with
``mcpsniff.core.observation_codec`` into a pipe.

``Channel`` is the shell's end. Observations made during one turn of the
event loop (or within ``delay``) are encoded into one batch and written with
one system call; a big body goes on its own, uncopied (``writev``), and so
does a stdio chunk that nothing waits before (a lone request must not wait
for the end of the turn). What the pipe cannot take now waits in a backlog,
bounded by ``limit`` bytes; past it, bytes are dropped, never forwarded
bytes, and never silently:

* stream bytes (stdio) become a ``StreamGap`` of their direction, told before
  that direction's next observation;
* a response body piece becomes a ``ResponseGap`` of its exchange, a request
  body a ``RequestGap`` (a streamed piece is left out: its offset shows the
  hole); what says an exchange happened always goes;
* every other observation dropped is counted in a ``CaptureGap``: the ones
  with bytes (bodies, stderr pieces) in one, told once the backlog has room
  again, and, far behind, the ones without (an exchange's begin, head or
  end) in another with no bytes, told before the next observation that is
  not dropped, since only those may hide traffic that no gap of its own
  accounts for;
* every gap still untold is told before the trace ends (``end``).

``read_batches`` is the analysis process's end. ``InProcess`` has the same
interface and replays observations at once, in the shell's own process
(replay and tests record that way).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import itertools
import os
import select
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from mcpsniff.capture.priority import ForwardingClock
from mcpsniff.core.observation_codec import (
    decode_prefix,
    encode,
    encode_bytes,
    encode_stream_data,
)
from mcpsniff.core.observations import (
    CaptureEnd,
    CaptureGap,
    ExchangeEnd,
    RequestBegin,
    RequestBody,
    RequestGap,
    ResponseBody,
    ResponseGap,
    Stderr,
    StreamData,
    StreamEnd,
    StreamGap,
    Unreachable,
)

#: A bigger pipe means fewer wake-ups of both processes (Linux lets an
#: unprivileged process raise it to /proc/sys/fs/pipe-max-size, 1 MiB by default).
PIPE_SIZE = 1 << 20
#: How much the analysis process reads at a time.
READ_SIZE = 1 << 20
#: After a read smaller than this, the analysis process pauses ``COALESCE_SECONDS``.
COALESCE_BELOW = 256 << 10
COALESCE_SECONDS = 0.002
#: The rest of a cut frame kept as bytes (above: a bytearray, appended to).
_SMALL_REST = 256 << 10
#: Bytes up to this size travel inside a batch; bigger ones on their own, uncopied.
INLINE_LIMIT = 64 << 10
#: Bytes of observations without bodies queued past the backlog limit before
#: even they are dropped (counted in the capture gap).
METADATA_ALLOWANCE = 16 << 20
#: Pieces per writev call when draining the backlog (Linux allows 1024).
_WRITEV_MAX = 512
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


class Capture(Protocol):
    """What a shell hands its observations to: a ``Channel`` or ``InProcess``."""

    def send(self, observation: Any) -> None:
        """One observation of something already forwarded."""

    def end(self, t: float) -> None:
        """The capture is over: account for what was lost, then end every session."""


def big_pipe() -> tuple[int, int]:
    """A pipe (read end, write end) with a 1 MiB buffer where the kernel allows it."""
    read_fd, write_fd = os.pipe()
    with contextlib.suppress(OSError):
        fcntl.fcntl(write_fd, _F_SETPIPE_SZ, PIPE_SIZE)
    return read_fd, write_fd


class Channel:
    """The shell's end of the pipe: batches, a bounded backlog, and gap accounting.

    Never blocks. ``on_broken`` is told once when the analysis process is gone
    (the pipe broke); ``on_dropped`` of every observation without bytes that
    the backlog dropped (the addon releases the hook that waits for it).
    """

    def __init__(
        self,
        fd: int,
        limit: int,
        *,
        delay: float = 0.0,
        on_broken: Callable[[OSError], None] | None = None,
        on_dropped: Callable[[Any], None] | None = None,
        clock: ForwardingClock | None = None,
    ) -> None:
        self.fd = fd
        #: Where each observation's time goes (``ForwardingClock``; else a private cell).
        self._stamp = clock.stamp if clock is not None else memoryview(bytearray(8)).cast("d")
        self.limit = limit
        #: Seconds a batch may wait for more (0: until the end of this event-loop turn).
        self.delay = delay
        self.on_broken = on_broken
        self.on_dropped = on_dropped
        self.broken = False
        #: What the pipe did not take yet, written when it has room.
        self.pending: deque[memoryview] = deque()
        self.pending_bytes = 0
        #: Encoded observations not written yet (this batch).
        self._batch: list[bytes] = []
        self._batch_bytes = 0
        self._batch_t = 0.0
        self._flush_handle: asyncio.Handle | asyncio.TimerHandle | None = None
        #: Stream bytes dropped per direction, not told yet (a ``StreamGap``).
        self._lost_streams: dict[str, int] = {}
        #: Response body bytes dropped per exchange, not told yet (a ``ResponseGap``).
        self._lost_bodies: dict[int, int] = {}
        #: Observations with bytes (and their bytes) dropped since the last ``CaptureGap``.
        self.lost_calls = 0
        self.lost_bytes = 0
        #: Observations without bytes dropped since then (told in a ``CaptureGap`` of their own).
        self.lost_bare = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._drained: asyncio.Event | None = None
        os.set_blocking(fd, False)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Batch and drain with ``loop`` (without one, every observation is written at once)."""
        self._loop = loop
        self._drained = asyncio.Event()
        if not self.pending:
            self._drained.set()
        else:
            loop.add_writer(self.fd, self._drain)
        if not self.broken:
            # The write end of a pipe is never readable; the poller reports it
            # (as an error) once the read end is closed: the analysis process
            # died. Known at once, not at the next write, which may be long
            # after (the pipe may have room for all that follows).
            with contextlib.suppress(OSError, ValueError):  # not pollable: the next write tells
                loop.add_reader(self.fd, self._reader_gone)

    def _reader_gone(self) -> None:
        """The poller says the pipe has no reader any more: confirm it, then break."""
        try:
            poller = select.poll()
            poller.register(self.fd, select.POLLOUT)
            events = poller.poll(0)
        except (OSError, ValueError):
            events = [(self.fd, select.POLLERR)]
        assert self._loop is not None
        self._loop.remove_reader(self.fd)
        if events and events[0][1] & select.POLLERR:
            self._break(BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE)))

    # ------------------------------------------------------------------ observations

    def send(self, observation: Any) -> None:
        """Queue one observation; when the backlog is full, its bytes are dropped and counted."""
        if self.broken:
            return
        self._stamp[0] = observation.t
        kind = type(observation)
        if kind is StreamData:
            self.send_data(observation.direction, observation.t, observation.body)
            return
        if kind is ResponseBody or kind is RequestBody or kind is Stderr:
            size = len(observation.body)
            if size and not self._room(size):
                self._count_lost(size, observation.t)
                if kind is ResponseBody:
                    number = observation.exchange
                    self._lost_bodies[number] = self._lost_bodies.get(number, 0) + size
                return
            if self._lost_bodies and kind is ResponseBody:
                self._tell_body_gap(observation.exchange, observation.t)
        elif kind is RequestBegin:
            size = len(observation.body)
            if size and not self._room(size):
                # The request line and headers go; the body is a gap of its size.
                self._count_lost(size, observation.t)
                o = observation
                self._queue(RequestGap(o.exchange, o.t, size))
                observation = RequestBegin(
                    o.exchange, o.t, o.method, o.path, o.headers, o.host, o.client, o.size, b""
                )
        elif kind is StreamEnd:
            if self._lost_streams:
                self._tell_stream_gap(observation.direction, observation.t)
        elif (kind is ExchangeEnd or kind is Unreachable) and self._lost_bodies:
            self._tell_body_gap(observation.exchange, observation.t)
        self._queue(observation)

    def send_data(self, direction: str, t: float, chunk: bytes) -> None:
        """``send(StreamData(direction, t, chunk))``, without building the object.

        The stdio relay's hot path: a call per chunk forwarded, as cheap as
        a struct header (the same frame as ``send`` makes), written at once
        unless other observations of this turn wait before it.
        """
        if self.broken:
            return
        self._stamp[0] = t
        size = len(chunk)
        if self.pending_bytes + self._batch_bytes + size > self.limit:
            lost = self._lost_streams
            lost[direction] = lost.get(direction, 0) + size
            return
        if self._lost_streams:
            self._tell_stream_gap(direction, t)
        head = encode_stream_data(direction, t, chunk)
        self._batch_t = t
        if not self._batch or size > INLINE_LIMIT:
            # At once, as the chunk itself was forwarded: waiting for the end of
            # the event-loop turn would cost a lone request a loop iteration
            # (an epoll call) per hop, and a stdio relay reads whole 64 KiB
            # chunks under load anyway.
            self.flush()
            self._write((head, chunk))
            return
        self._batch.append(head + chunk)
        self._batch_bytes += len(head) + size
        if self._flush_handle is None:
            self._schedule()

    def end(self, t: float) -> None:
        """Account for everything dropped, then ``CaptureEnd``: every session ends."""
        for direction in list(self._lost_streams):
            self._tell_stream_gap(direction, t)
        for number in list(self._lost_bodies):
            self._tell_body_gap(number, t)
        if self.lost_calls or self.lost_bare:
            self._tell_capture_gap(t, now=True)
        self._queue(CaptureEnd(t), force=True)
        self.flush()

    def flush_soon(self) -> None:
        """Send the batch at the end of this event-loop turn, not after ``delay``."""
        if self._loop is None:
            self.flush()
            return
        handle = self._flush_handle
        if isinstance(handle, asyncio.TimerHandle):
            handle.cancel()
            handle = None
        if handle is None:
            self._flush_handle = self._loop.call_soon(self.flush)

    def flush(self) -> None:
        """Write the batch, in one piece."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if self.lost_calls or self.lost_bare:
            self._tell_capture_gap(self._batch_t or time.time())
        batch = self._batch
        if not batch:
            return
        self._batch = []
        self._batch_bytes = 0
        self._write((batch[0] if len(batch) == 1 else b"".join(batch),))

    def _room(self, size: int) -> bool:
        """Whether ``size`` more bytes fit in the backlog."""
        return self.pending_bytes + self._batch_bytes + size <= self.limit

    def _count_lost(self, size: int, t: float) -> None:
        self._batch_t = t
        self.lost_calls += 1
        self.lost_bytes += size

    def _tell_stream_gap(self, direction: str, t: float) -> None:
        lost = self._lost_streams.pop(direction, 0)
        if lost:
            self._queue(StreamGap(direction, t, lost), force=True)

    def _tell_body_gap(self, number: int, t: float) -> None:
        lost = self._lost_bodies.pop(number, 0)
        if lost:
            self._queue(ResponseGap(number, t, lost), force=True)

    def _tell_bare(self, t: float) -> None:
        """Say how many observations without bytes were dropped (a few bytes: at once)."""
        frame = encode_bytes(CaptureGap(t, self.lost_bare, 0))
        self.lost_bare = 0
        self._batch.append(frame)
        self._batch_bytes += len(frame)

    def _tell_capture_gap(self, t: float, *, now: bool = False) -> None:
        """Once the backlog has room again (or ``now``): say what the trace lacks."""
        if not now and self.pending_bytes >= self.limit // 2:
            return
        gaps = [(self.lost_calls, self.lost_bytes), (self.lost_bare, 0)]
        self.lost_calls = self.lost_bytes = self.lost_bare = 0
        for calls, size in gaps:
            if calls:
                frame = encode_bytes(CaptureGap(t, calls, size))
                self._batch.append(frame)
                self._batch_bytes += len(frame)

    def _queue(self, observation: Any, *, force: bool = False) -> None:
        if not force and self.pending_bytes > self.limit + METADATA_ALLOWANCE:
            # Even observations without bodies stop when the analysis process
            # is this far behind: memory stays bounded, and the gap is counted.
            self.lost_bare += 1
            if self.on_dropped is not None:
                self.on_dropped(observation)
            return
        if self.lost_bare:
            # Told before anything that follows them: a reply after a dropped
            # request begin must not be judged before the gap that may hold it.
            self._tell_bare(observation.t)
        head, payload = encode(observation)
        self._batch_t = observation.t
        if len(payload) > INLINE_LIMIT:
            self.flush()
            self._write((head, payload))
            return
        self._batch.append(head + payload if payload else head)
        self._batch_bytes += len(head) + len(payload)
        if self._flush_handle is None:
            self._schedule()

    def _schedule(self) -> None:
        """Flush at the end of this event-loop turn (or ``delay``; at once without a loop)."""
        loop = self._loop
        if loop is None:
            self.flush()
        elif self.delay:
            self._flush_handle = loop.call_later(self.delay, self.flush)
        else:
            self._flush_handle = loop.call_soon(self.flush)

    # ------------------------------------------------------------------ the pipe

    def _write(self, pieces: tuple[bytes, ...]) -> None:
        """Write ``pieces`` (never joined here); what the pipe does not take waits."""
        if self.broken:
            return
        written = 0
        if not self.pending:
            try:
                written = os.writev(self.fd, pieces)
            except BlockingIOError:
                written = 0
            except OSError as exc:
                # The analysis process died: forwarding goes on, unrecorded.
                self._break(exc)
                return
            if written == sum(map(len, pieces)):
                return
        for piece in pieces:
            if written >= len(piece):
                written -= len(piece)
                continue
            view = memoryview(piece)[written:]
            written = 0
            self.pending.append(view)
            self.pending_bytes += len(view)
        if self._loop is not None and self._drained is not None and self._drained.is_set():
            self._drained.clear()
            self._loop.add_writer(self.fd, self._drain)

    def _break(self, exc: OSError) -> None:
        if self.broken:
            return
        self.broken = True
        self.pending.clear()
        self.pending_bytes = 0
        if self._loop is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self.fd)
        if self._drained is not None and not self._drained.is_set():
            assert self._loop is not None
            self._loop.remove_writer(self.fd)
            self._drained.set()
        if self.on_broken is not None:
            self.on_broken(exc)

    def _drain(self) -> None:
        """The pipe has room: write as much of the backlog as it takes, many pieces per call."""
        pending = self.pending
        try:
            while pending:
                batch = list(itertools.islice(pending, _WRITEV_MAX))
                written = os.writev(self.fd, batch)
                self.pending_bytes -= written
                for piece in batch:
                    if written < len(piece):
                        if written:
                            pending[0] = piece[written:]
                        return  # the pipe is full again
                    written -= len(piece)
                    pending.popleft()
        except BlockingIOError:
            return
        except OSError as exc:
            self._break(exc)
            return
        assert self._loop is not None and self._drained is not None
        self._loop.remove_writer(self.fd)
        self._drained.set()
        if self.lost_calls or self.lost_bare:
            # A flood that overflowed the backlog may stop for good: the gap is
            # told as soon as the backlog drains, not only with a later observation.
            self._tell_capture_gap(time.time())
            self.flush()

    async def close(self) -> None:
        """Write everything still queued (as the reader takes it), then close the pipe."""
        self.flush()
        if self._drained is not None:
            await self._drained.wait()
        self.close_blocking()

    def close_blocking(self) -> None:
        """``close`` without an event loop: blocking writes."""
        self.flush()
        if self.pending and not self.broken:
            with contextlib.suppress(OSError):
                os.set_blocking(self.fd, True)
                for view in self.pending:
                    os.write(self.fd, view)
        self.pending.clear()
        self.pending_bytes = 0
        if self._loop is not None and self._drained is not None and not self._drained.is_set():
            with contextlib.suppress(Exception):
                self._loop.remove_writer(self.fd)
            self._drained.set()
        if self._loop is not None and self.fd >= 0:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self.fd)
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1
        self.broken = True  # nothing more can go


class InProcess:
    """The ``Capture`` of a shell without an analysis process: observations replayed at once."""

    def __init__(self, apply: Callable[[Any], None]) -> None:
        self.apply = apply

    def send(self, observation: Any) -> None:
        """Replay ``observation`` now, in this process."""
        self.apply(observation)

    def end(self, t: float) -> None:
        """End every session."""
        self.apply(CaptureEnd(t))


class Tee(Protocol):
    """Where ``read_batches`` passes on the bytes it reads (the derived lane: capture/lanes.py)."""

    def hold(self, chunk: bytes) -> None:
        """Bytes just read, not yet recorded."""

    def recorded(self, fd: int) -> None:
        """Every batch yielded so far is recorded; the next read of ``fd`` may wait."""


def read_batches(fd: int, tee: Tee | None = None) -> Iterator[list[Any]]:
    """The analysis side: every batch of whole observations the pipe holds, until EOF.

    A batch is what one read completed (up to ``READ_SIZE`` bytes), so that a
    caller can flush its output whenever the relay gave it a pause. Raises
    ``CodecError`` for bytes that are no observations. ``tee`` is handed
    every chunk read (``hold``), and told before each read that the caller
    has recorded every batch yielded (it asks for the next one only then).
    """
    # What the last read left of a frame cut at its end: bytes while it is
    # small (joined with the next read into bytes, which decode_prefix cuts
    # bodies from in one copy each), a bytearray once it is big (a body of
    # many reads is appended to, not copied again with every read).
    buffer: bytes | bytearray = b""
    while True:
        if tee is not None:
            tee.recorded(fd)
        try:
            chunk = os.read(fd, READ_SIZE)
        except InterruptedError:  # pragma: no cover - PEP 475 retries for us
            continue
        if tee is not None and chunk:
            tee.hold(chunk)
        if not chunk:
            if buffer:
                # Whole frames left behind a bad one raise here; a frame cut
                # short (the shell died while writing it) is simply left out.
                batch, _ = decode_prefix(buffer)
                if batch:
                    yield batch
            return
        size = len(chunk)
        if type(buffer) is bytearray:
            buffer += chunk
            data: bytes | bytearray = buffer
        else:
            data = buffer + chunk if buffer else chunk
        batch, used = decode_prefix(data)
        rest = len(data) - used
        if not rest:
            # A new, empty buffer: deleting a bytearray's prefix keeps its
            # allocation, and after a 50 MB body that would be 50 MB held
            # while the body is analyzed.
            buffer = b""
        elif rest <= _SMALL_REST:
            buffer = bytes(memoryview(data)[used:])
        elif data is buffer:
            del buffer[:used]
        else:
            buffer = bytearray(memoryview(data)[used:])
        del data
        del chunk
        if batch:
            yield batch
            del batch
        if size < COALESCE_BELOW:
            # The relay is not busy: rather than wake up for every chunk it
            # forwards (each wake-up costs the relay a little too), let a few
            # arrive and take them in one read. Traces lag by at most this.
            time.sleep(COALESCE_SECONDS)
