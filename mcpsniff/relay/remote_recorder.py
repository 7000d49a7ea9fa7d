"""The HTTP shells' pipe to the analysis process: notes and recorder calls, batched.

The HTTP relay notes what happens to each exchange (``remote_exchange``) and
makes a few recorder calls of its own (``close``, a ``capture-gap`` event).
None of them is analyzed here: ``RemoteRecorder`` pickles them into the pipe
to the forked analysis process (see ``observer_pipe``), and ``apply_calls``
replays them there on an ``ExchangeReplay`` around a real ``Recorder``.
"""

from __future__ import annotations

import asyncio
import pickle
import time
from collections.abc import Callable
from typing import Any

from mcpsniff.relay.observer_pipe import (
    CALL,
    CALL_DATA,
    CALLS,
    STOP,
    AnalysisProcess,
    read_observations,
)
from mcpsniff.relay.recorder import Recorder
from mcpsniff.relay.remote_exchange import (
    BEGIN,
    BODY,
    BYTES_NOTES,
    FINISH,
    GAP,
    REQUEST_GAP,
    UNREACHABLE,
    WHOLE_BODY,
    ExchangeReplay,
    with_data,
)

#: The session key of relay-wide events (capture gaps).
RELAY_SESSION = "http"
_PROTOCOL = pickle.HIGHEST_PROTOCOL
#: Seconds ``finish`` waits in silence before it says what it is waiting for.
FINISH_NOTICE_SECONDS = 1.0
#: Bytes up to this size travel inside a batch of calls; bigger ones on their own.
INLINE_LIMIT = 64 << 10
#: Bytes of notes without bodies queued past the backlog limit before even
#: they are dropped (counted in the relay's capture gap).
METADATA_ALLOWANCE = 16 << 20


def _decode_call(payload: bytes, data: bytes) -> tuple[str, tuple[Any, ...]]:
    """A call as ``RemoteRecorder.send`` sent it, with its bytes put back in place."""
    method, args = pickle.loads(payload)
    return method, with_data(method, args, data)


class RemoteRecorder:
    """Stands in for ``Recorder`` in the relay process; the records are made elsewhere.

    Its methods return no records: the analysis process owns them (``--show``
    prints from there).
    """

    #: The trace belongs to the analysis process.
    writer = None

    def __init__(
        self, analysis: AnalysisProcess, warn: Callable[[str], None] | None = None
    ) -> None:
        self.analysis = analysis
        self.sender = analysis.sender
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Calls not sent yet (this turn of the event loop), and the time of the last.
        self._batch: list[tuple[str, tuple[Any, ...]]] = []
        self._batch_t = 0.0
        self._batch_bytes = 0
        #: Response body bytes dropped per exchange, not yet noted in it.
        self._lost_bodies: dict[int, int] = {}
        self._flush_scheduled = False
        self._warn = warn
        # A flood that overflowed the backlog may stop for good: the gap is told
        # as soon as the backlog drains, not only when another call comes.
        self.sender.on_drained = lambda: self._send_gap(time.time())
        if warn is not None:
            self.sender.on_broken = lambda exc: warn(
                f"mcpsniff: warning: the analysis process is gone ({exc.strerror or exc}); "
                "relaying continues, the trace ends here"
            )

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Drain the pipe with ``loop`` (call once the loop runs)."""
        self.sender.attach(loop)
        self._loop = loop

    def send(self, method: str, t: float, args: tuple[Any, ...], data: bytes = b"") -> None:
        """Queue one call (a note, or a recorder call) for the analysis process.

        This is the ``remote_exchange.Sink`` of the relay's exchanges. Calls
        made during one turn of the event loop travel together (one pickle,
        one write), sent at the end of the turn. A big ``data`` (a body) goes
        on its own, after the pickled rest and uncopied; the analysis process
        puts it back in place (``with_data``).

        When the backlog is full, only bytes are dropped (body pieces): what
        says that an exchange happened (request line, status, end, sizes)
        always goes, and each exchange's lost bytes are noted in it (GAP).
        """
        size = len(data)
        if data and method in BYTES_NOTES:
            if not self._room(size):
                self._lose(method, args, size)
                return
            lost = self._lost_bodies.pop(args[0], 0) if self._lost_bodies else 0
            if lost:
                self._queue(GAP, t, (args[0], t, lost), b"")
        elif method == BEGIN and size and not self._room(size):
            # The request line and headers go; the body is a gap of its size.
            self._lose(method, args, size)
            self._queue(REQUEST_GAP, t, (args[0], t, size), b"")
            data = b""
        elif method in (FINISH, UNREACHABLE) and self._lost_bodies:
            lost = self._lost_bodies.pop(args[0], 0)
            if lost:
                self._queue(GAP, t, (args[0], t, lost), b"")
        self._queue(method, t, args, data)

    def _room(self, size: int) -> bool:
        """Whether ``size`` more bytes fit in the backlog."""
        return self.sender.pending_bytes + self._batch_bytes + size <= self.sender.limit

    def _lose(self, method: str, args: tuple[Any, ...], size: int) -> None:
        """Count a body piece dropped for want of room (per exchange, and in all)."""
        self.sender.lost_calls += 1
        self.sender.lost_call_bytes += size
        if method in (BODY, WHOLE_BODY):
            number = args[0]
            self._lost_bodies[number] = self._lost_bodies.get(number, 0) + size
        # A REQUEST_BODY piece missing is seen by the analysis side (offsets).

    def _queue(self, method: str, t: float, args: tuple[Any, ...], data: bytes) -> None:
        if self.sender.pending_bytes > self.sender.limit + METADATA_ALLOWANCE:
            # Even the notes without bytes stop when the analysis process is
            # this far behind: memory stays bounded, and the gap is counted.
            self.sender.lost_calls += 1
            return
        if len(data) > INLINE_LIMIT:
            self._flush()
            self._send_gap(t)
            self.sender.call(t, pickle.dumps((method, args), _PROTOCOL), data, force=True)
            return
        self._batch.append((method, with_data(method, args, data)))
        self._batch_bytes += len(data)
        self._batch_t = t
        if self._loop is None:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        """Send the calls queued so far, as one observation."""
        self._flush_scheduled = False
        if not self._batch:
            return
        batch, self._batch = self._batch, []
        self._batch_bytes = 0
        self._send_gap(self._batch_t)
        self.sender.call(self._batch_t, pickle.dumps(batch, _PROTOCOL), kind=CALLS, force=True)

    def _send_gap(self, t: float, *, now: bool = False) -> None:
        """After a backlog overflow, once there is room again: say what the trace lacks.

        ``now``: the trace is about to end, so the gap goes in whatever the backlog holds.
        """
        lost = self.sender.take_lost_calls(now=now)
        if lost is not None:
            gap = [("event", (RELAY_SESSION, "capture-gap", t, lost))]
            self.sender.call(t, pickle.dumps(gap, _PROTOCOL), kind=CALLS, force=True)

    def close(self, t: float) -> list[Any]:
        """``Recorder.close`` (ends every session), in the analysis process.

        What the backlog dropped is accounted for first, inside the sessions.
        """
        self._flush()
        self._send_gap(t, now=True)
        self.send("close", t, (t,))
        return []

    async def finish(self) -> int:
        """Send STOP, wait until the analysis process has written the trace; its status.

        Should that take a while (the analysis is behind, on a busy machine, where
        an idle-priority process gets little CPU), the user is told once why
        mcpsniff has not exited yet, instead of a silent wait.
        """
        notice = None
        if self._warn is not None:
            warn = self._warn
            notice = asyncio.get_running_loop().call_later(
                FINISH_NOTICE_SECONDS,
                lambda: warn(
                    "mcpsniff: waiting for the analysis process to finish the trace "
                    "(it is behind the traffic; nothing is lost)"
                ),
            )
        try:
            self._flush()
            # Every call dropped is accounted for before the trace ends.
            self._send_gap(time.time(), now=True)
            await self.sender.close()
            return await self.analysis.wait()
        finally:
            if notice is not None:
                notice.cancel()


def replay_calls(
    fd: int,
    apply: Callable[[str, tuple[Any, ...]], None],
    after_batch: Callable[[], None],
) -> bool:
    """Read the calls ``RemoteRecorder`` sent and ``apply(method, args)`` each, in order.

    ``after_batch`` runs after every read (the relay paused: a good moment to
    flush). Returns True when STOP arrived, False at EOF (the sender died).
    """
    data = b""
    for batch in read_observations(fd):
        for observation in batch:
            kind = observation.kind
            if kind == STOP:
                after_batch()
                return True
            if kind == CALL_DATA:
                data = observation.payload
                observation.payload = b""  # a big body is held once, in ``data``
                continue
            if kind == CALLS:
                calls = pickle.loads(observation.payload)
            elif kind == CALL:
                calls = [_decode_call(observation.payload, data)]
                data = b""
            else:
                continue
            for method, args in calls:
                apply(method, args)
        after_batch()
    return False


def end_trace(
    recorder: Recorder,
    stopped: bool,
    warn: Callable[[str], None] | None = None,
    after_close: Callable[[], None] | None = None,
) -> int:
    """Finish the trace after ``replay_calls``; the analysis process's exit status.

    Without STOP the sender died: every session is ended, so that the trace
    still says what was unanswered. Returns 0, or 3 when the trace could not
    be written in full.
    """
    if not stopped:
        recorder.close(time.time())
    if after_close is not None:
        after_close()
    writer = recorder.writer
    if writer is None:
        return 0
    writer.close()
    if writer.failed is not None:
        if warn is not None:
            warn(f"mcpsniff: warning: the trace is incomplete: {writer.failed}")
        return 3
    return 0


def apply_calls(fd: int, replay: ExchangeReplay, warn: Callable[[str], None] | None = None) -> int:
    """The analysis process: replay the relay's notes and calls until STOP or EOF.

    Returns the process's exit status: 0, or 3 when the trace could not be
    written in full.
    """
    recorder = replay.recorder
    writer = recorder.writer

    def apply(method: str, args: tuple[Any, ...]) -> None:
        try:
            replay.apply(method, args)
        except Exception as exc:  # recording must never stop
            if warn is not None:
                warn(f"mcpsniff: internal error while recording: {exc!r}")

    stopped = replay_calls(fd, apply, writer.flush if writer is not None else lambda: None)
    return end_trace(recorder, stopped, warn)
