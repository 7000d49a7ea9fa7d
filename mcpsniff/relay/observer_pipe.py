"""The pipe between a relay's forwarding loop and its analysis process.

DESIGN.md invariant 2 says recording and analysis never sit between a read
and its write. In one Python process they still share the interpreter: every
microsecond the analyzer spends on a frame is a microsecond the forwarding
loop cannot spend, so the client's throughput falls to the analyzer's. So a
relay forks an *analysis process* before it starts forwarding. The forwarding
side only copies each chunk it has already written into this pipe, tagged
with its direction and the time it was read (one ``write`` system call); the
analysis process decodes the tags, runs the sans-I/O core and writes the
trace. The two then run on separate cores.

Memory stays bounded by bytes: when the pipe is full the forwarding side
queues up to ``limit`` bytes in user space and then drops copies (never
forwarded bytes), and the trace says how many bytes it lost in each
direction (a ``gap`` observation, recorded as a ``capture-gap`` event).

The wire format is private to one run: a fixed header (kind, direction,
time, payload length) and the payload.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import io
import itertools
import os
import select
import signal
import struct
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

import orjson

from mcpsniff.core.model import C2S, S2C

HEADER = struct.Struct("<BBdI")

#: Observation kinds.
DATA = 1  # bytes forwarded in a direction
EOF = 2  # the stream in a direction ended
STDERR = 3  # the child's stderr (b"" when it ended)
EVENT = 4  # a transport event: payload is JSON {"name", "data"}
GAP = 5  # bytes forwarded but not recorded: payload is JSON {"lost"}
STOP = 6  # the relay is done: finish the trace
CALLS = 9  # HTTP shells: encoded observations (``mcpsniff.core.observation_codec``)

_DIRECTION_CODES = {"": 0, C2S: 1, S2C: 2}
_DIRECTIONS = ("", C2S, S2C)

#: A bigger pipe means fewer wake-ups of both processes (Linux lets an
#: unprivileged process raise it to /proc/sys/fs/pipe-max-size, 1 MiB by default).
PIPE_SIZE = 1 << 20
#: How much the analysis process reads at a time.
READ_SIZE = 1 << 20
#: After a read smaller than this, the analysis process pauses ``COALESCE_SECONDS``.
COALESCE_BELOW = 256 << 10
COALESCE_SECONDS = 0.002
#: How much lower the analysis process's CPU priority is than the relay's.
ANALYSIS_NICENESS = 10
#: Pieces per writev call when draining the backlog (Linux allows 1024).
_WRITEV_MAX = 512
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


@dataclass(slots=True)
class Observation:
    """One decoded observation, as the analysis process sees it."""

    kind: int
    direction: str
    t: float
    payload: bytes

    def json(self) -> Any:
        """The payload of an EVENT or GAP observation."""
        return orjson.loads(self.payload)


class ObservationSender:
    """The forwarding side: tags copies of forwarded bytes and writes them to the pipe.

    Never blocks: what the pipe cannot take now waits in ``pending`` (drained
    by an event-loop writer callback), up to ``limit`` bytes.
    """

    def __init__(
        self, fd: int, limit: int, on_broken: Callable[[OSError], None] | None = None
    ) -> None:
        self.fd = fd
        self.limit = limit
        #: Told once when the analysis process is gone (the pipe broke).
        self.on_broken = on_broken
        self.pending: deque[memoryview] = deque()
        self.pending_bytes = 0
        #: Bytes dropped per direction since the last gap was reported.
        self.lost = {C2S: 0, S2C: 0}
        #: Recorder calls (and their bytes) dropped since the last gap was reported.
        self.lost_calls = 0
        self.lost_call_bytes = 0
        self.broken = False
        #: Called when the backlog has drained (a moment to report what was lost).
        self.on_drained: Callable[[], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._drained: asyncio.Event | None = None
        os.set_blocking(fd, False)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Use ``loop`` to drain what the pipe could not take at once."""
        self._loop = loop
        self._drained = asyncio.Event()
        self._drained.set()

    # ------------------------------------------------------------------ observations

    def data(self, direction: str, chunk: bytes, t: float) -> None:
        """A copy of bytes already forwarded in ``direction``."""
        if self.pending_bytes + len(chunk) > self.limit:
            self.lost[direction] += len(chunk)
            return
        if self.lost[direction]:
            # The backlog has room again: say what was lost before resuming.
            self._gap(direction, t)
        self._send(DATA, direction, t, chunk)

    def eof(self, direction: str, t: float) -> None:
        """The stream in ``direction`` ended."""
        if self.lost[direction]:
            self._gap(direction, t)
        self._send(EOF, direction, t, b"")

    def stderr(self, chunk: bytes, t: float) -> None:
        """A copy of the child's stderr; ``b""`` when it ended."""
        # stderr is recorded as events, not frames: under pressure it is
        # queued like everything else (a chatty child is bounded by the pipe
        # it writes to, which we drain only as fast as our stderr takes it).
        self._send(STDERR, "", t, chunk)

    def event(self, name: str, t: float, data: dict[str, Any]) -> None:
        """A transport event."""
        self._send(EVENT, "", t, orjson.dumps({"name": name, "data": data}))

    def frames(self, t: float, *parts: bytes) -> None:
        """Encoded observations (``observation_codec``), as one CALLS observation.

        Never refused here: the caller decides what the backlog may hold.
        """
        self._send(CALLS, "", t, *parts)

    def take_lost_calls(self, *, now: bool = False) -> dict[str, int] | None:
        """What was dropped since the last report, once the backlog has room again.

        The caller records it (a ``capture-gap`` event), so that the trace says
        what it lacks; None when nothing was lost or there is no room yet.
        ``now``: whether or not there is room (the trace is about to end).
        """
        if not self.lost_calls or (not now and self.pending_bytes >= self.limit // 2):
            return None
        lost = {"lost_calls": self.lost_calls, "lost_bytes": self.lost_call_bytes}
        self.lost_calls = self.lost_call_bytes = 0
        return lost

    def stop(self, t: float) -> None:
        """Tell the analysis process that nothing more comes."""
        self._send(STOP, "", t, b"")

    def _gap(self, direction: str, t: float) -> None:
        lost, self.lost[direction] = self.lost[direction], 0
        self._send(GAP, direction, t, orjson.dumps({"lost": lost}))

    # ------------------------------------------------------------------ the pipe

    def _send(self, kind: int, direction: str, t: float, *parts: bytes) -> None:
        """Write one observation whose payload is ``parts`` joined (they are never joined here)."""
        if self.broken:
            return
        size = sum(len(part) for part in parts)
        pieces = (HEADER.pack(kind, _DIRECTION_CODES[direction], t, size), *parts)
        written = 0
        if not self.pending:
            try:
                # Header and payload in one system call, without copying them together.
                written = os.writev(self.fd, pieces)
            except BlockingIOError:
                written = 0
            except OSError as exc:
                # The analysis process died: forwarding goes on, unrecorded.
                self._break(exc)
                return
            if written == HEADER.size + size:
                return
        self._queue(pieces, written)

    def _break(self, exc: OSError) -> None:
        self.broken = True
        self.pending.clear()
        self.pending_bytes = 0
        if self.on_broken is not None:
            self.on_broken(exc)

    def _queue(self, pieces: tuple[bytes, ...], skip: int) -> None:
        """Keep what the pipe did not take (all but the first ``skip`` bytes), without copies.

        The event loop writes it when the pipe has room.
        """
        for piece in pieces:
            if skip >= len(piece):
                skip -= len(piece)
                continue
            view = memoryview(piece)[skip:]
            skip = 0
            self.pending.append(view)
            self.pending_bytes += len(view)
        if self._loop is not None and self._drained is not None and self._drained.is_set():
            self._drained.clear()
            self._loop.add_writer(self.fd, self._drain)

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
        assert self._loop is not None and self._drained is not None
        self._loop.remove_writer(self.fd)
        self._drained.set()
        if self.on_drained is not None:
            self.on_drained()

    async def close(self) -> None:
        """Send STOP, wait until the pipe took everything, and close it."""
        self.stop(0.0)
        if self._drained is not None:
            await self._drained.wait()
        elif self.pending:
            # No loop attached: finish with blocking writes.
            os.set_blocking(self.fd, True)
            with contextlib.suppress(OSError):
                for view in self.pending:
                    os.write(self.fd, view)
        with contextlib.suppress(OSError):
            os.close(self.fd)


def read_observations(fd: int) -> Iterator[list[Observation]]:
    """The analysis side: every batch of whole observations the pipe holds, until EOF.

    A batch is what one read returned (up to ``READ_SIZE`` bytes), so a
    caller can flush its output whenever the relay gave it a pause.
    """
    buffer = bytearray()
    size = HEADER.size
    unpack = HEADER.unpack_from
    while True:
        try:
            chunk = os.read(fd, READ_SIZE)
        except InterruptedError:  # pragma: no cover - PEP 475 retries for us
            continue
        if not chunk:
            return
        buffer += chunk
        batch: list[Observation] = []
        position = 0
        end_of_data = len(buffer)
        # One copy per payload (a bytearray slice would be a second one); the
        # view is released before the buffer is resized.
        with memoryview(buffer) as view:
            while end_of_data - position >= size:
                kind, code, t, length = unpack(buffer, position)
                end = position + size + length
                if end > end_of_data:
                    break
                payload = bytes(view[position + size : end])
                batch.append(Observation(kind, _DIRECTIONS[code], t, payload))
                position = end
        if position == len(buffer):
            # A new, empty buffer: deleting a bytearray's prefix keeps its
            # allocation, and after a 50 MB body that would be 50 MB held
            # while the body is analyzed.
            buffer = bytearray()
        else:
            del buffer[:position]
        if batch:
            yield batch
        if len(chunk) < COALESCE_BELOW:
            # The relay is not busy: rather than wake up for every chunk it
            # forwards (each wake-up costs the relay a little too), let a few
            # arrive and take them in one read. Traces lag by at most this.
            time.sleep(COALESCE_SECONDS)


@dataclass
class AnalysisProcess:
    """A forked analysis process and the sender that feeds it."""

    pid: int
    sender: ObservationSender

    @classmethod
    def start(
        cls, work: Callable[[int], int], limit: int, *, idle: bool = False
    ) -> AnalysisProcess:
        """Fork; the child runs ``work(read_fd)`` and exits with its status.

        ``idle``: the child runs only on CPU nobody else wants (``SCHED_IDLE``)
        instead of at ``ANALYSIS_NICENESS``. Call before the event loop starts
        or any thread exists: the child must inherit nothing that is running.
        """
        read_fd, write_fd = os.pipe()
        with contextlib.suppress(OSError):
            fcntl.fcntl(write_fd, _F_SETPIPE_SZ, PIPE_SIZE)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child; the relay tests cover it
            status = 70  # EX_SOFTWARE, should work() itself fail
            try:
                os.close(write_fd)
                _become_analysis_process(idle=idle)
                status = work(read_fd)
            except BaseException as exc:
                with contextlib.suppress(Exception):
                    os.write(2, f"mcpsniff: analysis process failed: {exc!r}\n".encode())
            finally:
                os._exit(status)
        os.close(read_fd)
        return cls(pid, ObservationSender(write_fd, limit))

    async def wait(self) -> int:
        """Wait for the analysis process to exit; its exit status."""
        while True:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            await asyncio.sleep(0.002)


def _become_analysis_process(niceness: int = ANALYSIS_NICENESS, *, idle: bool = False) -> None:
    """Detach the forked child from the relay's job: it only reads the pipe.

    Signals meant for the relay (Ctrl-C reaches the whole foreground process
    group) must not cut the trace short: the analysis process ends when the
    pipe does, which happens when the relay closes it or dies. It lets go of
    the client's stdin and stdout at once, so the client sees EOF when the
    relay closes them, and keeps stderr for ``--show`` and warnings.
    """
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    # Forward first, observe second, for the CPU too: when the client, the
    # server and the relay want every core, the scheduler serves them first,
    # and the analysis catches up in the pauses (the backlog holds the bytes).
    with contextlib.suppress(OSError):
        os.nice(niceness)
    if idle:
        # Stronger still: a SCHED_IDLE task is preempted the moment a normal one
        # wakes (a nice one may first run out its time slice, which on this
        # kernel's EEVDF scheduler delayed the relay's wake-ups). It cannot be
        # undone without privileges, so only a shell whose user is not watching
        # the analysis live asks for it.
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    _return_big_blocks_to_the_os()
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    sys.stderr = _blocking_stderr(sys.stderr)


def _return_big_blocks_to_the_os() -> None:
    """Serve every allocation of 1 MiB or more with its own mapping (glibc only).

    glibc raises its mmap threshold each time a large block is freed (up to
    32 MiB), after which blocks of a big frame's size come from the heap and
    stay in the process when freed: an analysis process that parsed one 50 MB
    body would keep that memory. A fixed threshold returns it at once.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    with contextlib.suppress(Exception):
        mallopt(_M_MMAP_THRESHOLD, 1 << 20)


class _BlockingRaw(io.RawIOBase):
    """Writes all of ``data`` to fd 2, waiting whenever the pipe is full.

    The relay makes the stderr pipe non-blocking, and O_NONBLOCK belongs to
    the open file description, which we share: a plain write would fail with
    EAGAIN whenever the reader is slow. This process may simply wait.
    """

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        size = len(view)
        while view:
            try:
                written = os.write(self.fd, view)
            except BlockingIOError:
                select.select([], [self.fd], [], 1.0)
                continue
            except OSError:
                break  # stderr is gone: nothing else to tell
            view = view[written:]
        return size


def _blocking_stderr(like: Any) -> TextIO:
    """A text stream on fd 2 that waits out a full pipe, encoded like ``like``."""
    with contextlib.suppress(Exception):
        like.flush()
    return io.TextIOWrapper(
        _BlockingRaw(2),
        encoding=getattr(like, "encoding", None) or "utf-8",
        errors=getattr(like, "errors", None) or "backslashreplace",
        line_buffering=True,
        write_through=True,
    )
