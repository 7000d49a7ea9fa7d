"""Two lanes for a stdio capture's analysis: record at once, derive behind.

docs/architecture.md, "Which process runs what". With ``mcpsniff stdio --lanes
2`` the analysis process the relay forks (the *recording lane*) frames,
numbers and redacts the traffic and writes the input records (frame and
event records) at once: a ``TraceRecorder`` with ``frames_only`` (whose
usual frame goes from the line framer to the writer's buffer without a
record: ``TraceRecorder._write_frames``), whose writer writes a ``lane ...
open`` record before each session's first input.
Every byte it reads from the relay's channel it passes on, unchanged, to a
process it forked before starting any thread (the *derived lane*, nice 19):
that one runs the same ``Worker`` with the full ``Session``, rules and
redaction on the same bytes, so it draws the same seqs and reaches the same
verdicts, and its ``DerivedWriter`` appends the derived records (messages,
findings, ``analyzer-error`` events) and the ``lane`` records that place
them (docs/trace-format.md).

The recording lane passes a batch's bytes on only after it has written that
batch's input records, so a derived record never precedes its input in the
file. It writes to the derived lane without blocking and keeps the rest in
memory up to ``QUEUE_LIMIT``; past that it waits for the derived lane (the
relay's channel then holds, and past its bound counts, the bytes: nothing
is lost unnoticed). Whenever it would wait for input, it feeds the derived
lane instead. Should the derived lane die, the recording lane writes a
``lane ... lost`` record for its sessions, warns once and records on.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import select
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mcpsniff.capture.analysis_process import TRACE_INCOMPLETE, run_forked_child
from mcpsniff.capture.channel import big_pipe

if TYPE_CHECKING:
    from mcpsniff.capture.worker import Worker
    from mcpsniff.trace.writer import TraceWriter

#: ``mcpsniff stdio``'s number of lanes when ``--lanes`` is not given.
DEFAULT_LANES = 2
#: Bytes the recording lane keeps for the derived lane before it waits for it.
QUEUE_LIMIT = 128 << 20
#: The derived lane's niceness: below everything, but always progressing (not SCHED_IDLE).
DERIVED_NICENESS = 19
#: Bytes held for the derived lane past which it works while the relay forwards: it
#: waits out a burst, but a steady stream with no pause must not leave it behind
#: until the recording lane waits for it (``QUEUE_LIMIT``).
FAR_BEHIND = 64 << 20


def lanes_for(requested: int | None, *, show: bool, sinks: bool, writer: TraceWriter) -> int:
    """How many lanes a stdio capture runs: two only where the trace is the only output.

    ``--show`` and sinks (OTLP) see every record as it is made, which the
    derived lane makes later and in another process; a trace that is no
    regular file cannot be opened a second time for the derived lane.
    """
    lanes = DEFAULT_LANES if requested is None else requested
    if lanes != 2 or show or sinks:
        return 1
    return 2 if reopen(writer, probe=True) is not None else 1


def reopen(writer: TraceWriter, *, probe: bool = False) -> int | None:
    """A second open file description of ``writer``'s regular file, for appending; None if none.

    The derived lane must lock and write through its own: an ``flock`` belongs
    to the open file description, so two processes sharing one would not
    exclude each other's writes. ``probe``: only tell whether it can be done.
    """
    fd = writer.fileno()
    try:
        if fd < 0 or not _is_regular(fd):
            return None
        try:
            new = os.open(f"/proc/self/fd/{fd}", os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        except OSError:
            if writer.path is None:
                return None
            new = os.open(Path(writer.path), os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    if not os.path.samestat(os.fstat(new), os.fstat(fd)):
        os.close(new)
        return None
    if probe:
        os.close(new)
        return 0
    return new


def _is_regular(fd: int) -> bool:
    import stat

    return stat.S_ISREG(os.fstat(fd).st_mode)


class DerivedLane:
    """The recording lane's handle on the derived lane: the pipe to it and its process.

    ``read_batches``' tee (``mcpsniff.capture.channel.Tee``): ``hold`` keeps
    each chunk read until ``recorded`` says its batches are written.
    """

    def __init__(
        self,
        pid: int,
        fd: int,
        writer: TraceWriter,
        done: mmap.mmap,
        warn: Callable[[str], None],
        label: str = "mcpsniff",
    ) -> None:
        self.pid = pid
        self.fd = fd
        self.writer = writer
        self.warn = warn
        self.label = label
        #: Shared with the derived lane: byte 0 set once this lane finished normally;
        #: the second 8-byte word, the bytes queued for it (``far_behind``).
        self._done = done
        self._shared = memoryview(done).cast("q")
        #: Chunks read whose input records may not be written yet.
        self._held: list[bytes] = []
        #: Chunks to write to the derived lane, and how far the first one is written.
        self._queue: deque[bytes] = deque()
        self._offset = 0
        #: Bytes in ``_queue`` not yet written.
        self.queued = 0
        self._shared[1] = 0
        #: The derived lane is gone (no more bytes go to it).
        self.dead = False
        #: Its exit status, once reaped.
        self.status: int | None = None
        os.set_blocking(fd, False)

    # ------------------------------------------------------------------ the tee

    def hold(self, chunk: bytes) -> None:
        """Bytes just read from the relay's channel."""
        if not self.dead:
            self._held.append(chunk)

    def recorded(self, fd: int) -> None:
        """Every batch read is written: pass its bytes on; feed the lane while ``fd`` is quiet."""
        self._release()
        if not self._queue:
            return
        self._push()
        while self._queue and not self.dead:
            readable, writable, _ = select.select([fd], [self.fd], [])
            if writable:
                self._push()
            if readable:
                return

    # ------------------------------------------------------------------ the end

    def finish(self) -> int | None:
        """Pass everything on, close the pipe, wait for the derived lane; its exit status.

        Call once the recording lane's records are all written. A derived lane
        that failed gets its ``lost`` record (unless it has one already).
        """
        self._release()
        self._drain(0)
        self._done[0] = 1  # before the pipe closes: the derived lane's EOF is a normal end
        self._close()
        status = self._reap()
        if status == TRACE_INCOMPLETE and self.writer.failed is not None:
            # The trace cannot be written at all: the recording lane warned once.
            self.dead = True
        elif status != 0 and not self.dead:
            self._died(f"it exited with status {status}")
        return status

    def _reap(self) -> int | None:
        if self.status is None:
            with contextlib.suppress(ChildProcessError):
                _, status = os.waitpid(self.pid, 0)
                self.status = os.waitstatus_to_exitcode(status)
        return self.status

    # ------------------------------------------------------------------ writing

    def _release(self) -> None:
        held = self._held
        if held:
            self._held = []
            if not self.dead:
                self._queue.extend(held)
                self.queued += sum(map(len, held))
                self._shared[1] = self.queued

    def _push(self) -> None:
        """Write what the pipe takes now; past ``QUEUE_LIMIT``, wait until it takes the excess."""
        self._write_available()
        if self.queued > QUEUE_LIMIT:
            self._drain(QUEUE_LIMIT)

    def _drain(self, limit: int) -> None:
        while self.queued > limit and not self.dead:
            select.select([], [self.fd], [])
            self._write_available()

    def _write_available(self) -> None:
        queue = self._queue
        while queue:
            head = queue[0]
            offset = self._offset
            try:
                written = os.write(self.fd, memoryview(head)[offset:] if offset else head)
            except BlockingIOError:
                return
            except OSError as exc:  # EPIPE: the derived lane is gone
                self._died(exc.strerror or str(exc))
                return
            self.queued -= written
            self._shared[1] = self.queued
            if offset + written >= len(head):
                queue.popleft()
                self._offset = 0
            else:
                self._offset = offset + written

    def _died(self, reason: str) -> None:
        """The derived lane is gone: say so in the trace and once on stderr; record on."""
        self.dead = True
        self._queue.clear()
        self._held = []
        self.queued = 0
        self._offset = 0
        self._close()
        self.writer.write_lost()
        self.writer.flush()
        self.warn(
            f"{self.label}: warning: the derived lane of the analysis ended ({reason}); "
            "every frame is still recorded, and `mcpsniff check` gives the verdicts"
        )

    def _close(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


def start_derived_lane(
    recording_writer: TraceWriter,
    trace_fd: int,
    make_worker: Callable[[int, Callable[[], bool], Callable[[], bool]], Worker],
    *,
    close_in_child: tuple[int, ...] = (),
    warn: Callable[[str], None],
    label: str = "mcpsniff",
) -> DerivedLane:
    """Fork the derived lane (call before this process starts any thread).

    ``make_worker(trace_fd, finished, far_behind)``, in the child, gives the
    ``Worker`` that writes through ``trace_fd`` (the child's own open file
    description of the trace); ``finished()`` says whether the recording lane
    ended normally, so that a pipe that ends because it died does not end the
    sessions in its stead (the relay's salvage does); ``far_behind()``, whether
    the recording lane holds more than ``FAR_BEHIND`` bytes for it. ``close_in_child``: the
    recording lane's descriptors the child must not keep (its channel).
    """
    read_fd, write_fd = big_pipe()
    done = mmap.mmap(-1, mmap.PAGESIZE)  # MAP_SHARED | MAP_ANONYMOUS
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child; tests/capture/test_lanes.py covers it

        def child() -> int:
            os.close(write_fd)
            for fd in close_in_child:
                with contextlib.suppress(OSError):
                    os.close(fd)
            # The recording lane's file description is its own: a lock it holds
            # when killed must not outlive it here.
            recording_writer.hand_over()
            with contextlib.suppress(OSError):
                os.nice(DERIVED_NICENESS)
            shared = memoryview(done).cast("q")
            worker = make_worker(trace_fd, lambda: done[0] == 1, lambda: shared[1] > FAR_BEHIND)
            return worker.run(read_fd)

        run_forked_child(child, f"{label}: derived lane")
    os.close(read_fd)
    os.close(trace_fd)
    return DerivedLane(pid, write_fd, recording_writer, done, warn, label)
