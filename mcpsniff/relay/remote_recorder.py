"""The HTTP shells' channel to the analysis process: observations, encoded and batched.

The HTTP relay observes what happens to each exchange (``remote_exchange``)
and a few things of its own (a refusal, the capture's end). None of them is
analyzed here: ``RemoteRecorder`` encodes them (``observation_codec``, no
pickle) into the pipe to the forked analysis process (see ``observer_pipe``),
and ``apply_calls`` replays them there on an ``ExchangeReplay`` around a real
``Recorder``. The backlog is bounded: when it is full, body bytes are dropped
and counted (per exchange and in all), never the observations that say an
exchange happened.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from mcpsniff.core.observation_codec import CodecError, decode_all, encode
from mcpsniff.core.observations import (
    CaptureEnd,
    CaptureGap,
    ExchangeEnd,
    Observation,
    RequestBegin,
    RequestBody,
    RequestGap,
    ResponseBody,
    ResponseGap,
    Unreachable,
)
from mcpsniff.relay.observer_pipe import CALLS, STOP, AnalysisProcess, read_observations
from mcpsniff.relay.recorder import Recorder
from mcpsniff.relay.remote_exchange import RELAY_SESSION, ExchangeReplay

__all__ = ["RELAY_SESSION", "RemoteRecorder", "apply_calls", "end_trace", "replay_calls"]

#: Seconds ``finish`` waits in silence before it says what it is waiting for.
FINISH_NOTICE_SECONDS = 1.0
#: Bytes up to this size travel inside a batch; bigger ones on their own, uncopied.
INLINE_LIMIT = 64 << 10
#: Bytes of observations without bodies queued past the backlog limit before
#: even they are dropped (counted in the relay's capture gap).
METADATA_ALLOWANCE = 16 << 20


def shed_bodies(batch: list[Any], room: int) -> tuple[list[Any], int, int]:
    """``batch`` with the body bytes that do not fit in ``room`` taken out; and what was.

    The backlog policy for a shell that queues a batch at a time (the addon):
    what says an exchange happened always stays; a response body that does not
    fit becomes a ``ResponseGap`` of its size, a request body a ``RequestGap``
    (a streamed piece is simply left out: the analysis side sees the hole by
    its offset). Returns the new batch, the observations shed and their bytes.
    """
    out: list[Any] = []
    shed = shed_bytes = 0
    for message in batch:
        kind = type(message)
        if kind is ResponseBody or kind is RequestBody or kind is RequestBegin:
            size = len(message.body)
            if size <= room:
                room -= size
            else:
                shed += 1
                shed_bytes += size
                if kind is ResponseBody:
                    message = ResponseGap(message.exchange, message.t, size)
                elif kind is RequestBody:
                    continue
                else:
                    out.append(RequestGap(message.exchange, message.t, size))
                    message = RequestBegin(
                        message.exchange,
                        message.t,
                        message.method,
                        message.path,
                        message.headers,
                        message.host,
                        message.client,
                        message.size,
                        b"",
                    )
        out.append(message)
    return out, shed, shed_bytes


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
        #: Encoded observations not sent yet (this turn of the event loop).
        self._batch: list[bytes] = []
        self._batch_t = 0.0
        self._batch_bytes = 0
        #: Response body bytes dropped per exchange, not yet observed in it.
        self._lost_bodies: dict[int, int] = {}
        self._flush_scheduled = False
        self._warn = warn
        # A flood that overflowed the backlog may stop for good: the gap is told
        # as soon as the backlog drains, not only when another observation comes.
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

    def send(self, observation: Observation) -> None:
        """Queue one observation for the analysis process (the relay's ``Sink``).

        Observations made during one turn of the event loop travel together
        (one write), sent at the end of the turn; a big body goes on its own,
        uncopied. When the backlog is full only body bytes are dropped: what
        says that an exchange happened (request line, status, end, sizes)
        always goes, and each exchange's lost bytes are observed in it.
        """
        kind = type(observation)
        if kind is ResponseBody or kind is RequestBody:
            size = len(observation.body)  # type: ignore[union-attr]
            number = observation.exchange  # type: ignore[union-attr]
            if size and not self._room(size):
                self._lose(size)
                if kind is ResponseBody:
                    self._lost_bodies[number] = self._lost_bodies.get(number, 0) + size
                # A RequestBody missing is seen by the analysis side (offsets).
                return
            if self._lost_bodies:
                self._observe_loss(number, observation.t)
        elif kind is RequestBegin:
            size = len(observation.body)  # type: ignore[union-attr]
            if size and not self._room(size):
                # The request line and headers go; the body is a gap of its size.
                self._lose(size)
                o: RequestBegin = observation  # type: ignore[assignment]
                self._queue(RequestGap(o.exchange, o.t, size))
                observation = RequestBegin(
                    o.exchange, o.t, o.method, o.path, o.headers, o.host, o.client, o.size, b""
                )
        elif (kind is ExchangeEnd or kind is Unreachable) and self._lost_bodies:
            self._observe_loss(observation.exchange, observation.t)  # type: ignore[union-attr]
        self._queue(observation)

    def _observe_loss(self, number: int, t: float) -> None:
        lost = self._lost_bodies.pop(number, 0)
        if lost:
            self._queue(ResponseGap(number, t, lost))

    def _room(self, size: int) -> bool:
        """Whether ``size`` more bytes fit in the backlog."""
        return self.sender.pending_bytes + self._batch_bytes + size <= self.sender.limit

    def _lose(self, size: int) -> None:
        self.sender.lost_calls += 1
        self.sender.lost_call_bytes += size

    def _queue(self, observation: Observation, *, force: bool = False) -> None:
        if not force and self.sender.pending_bytes > self.sender.limit + METADATA_ALLOWANCE:
            # Even observations without bodies stop when the analysis process
            # is this far behind: memory stays bounded, and the gap is counted.
            self.sender.lost_calls += 1
            return
        head, payload = encode(observation)
        t = observation.t
        if len(payload) > INLINE_LIMIT:
            self._flush()
            self._send_gap(t)
            self.sender.frames(t, head, payload)
            return
        self._batch.append(head + payload if payload else head)
        self._batch_bytes += len(head) + len(payload)
        self._batch_t = t
        if self._loop is None:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        """Send the observations queued so far, in one write."""
        self._flush_scheduled = False
        if not self._batch:
            return
        batch, self._batch = self._batch, []
        self._batch_bytes = 0
        self._send_gap(self._batch_t)
        self.sender.frames(self._batch_t, batch[0] if len(batch) == 1 else b"".join(batch))

    def _send_gap(self, t: float, *, now: bool = False) -> None:
        """After a backlog overflow, once there is room again: say what the trace lacks.

        ``now``: the trace is about to end, so the gap goes in whatever the backlog holds.
        """
        lost = self.sender.take_lost_calls(now=now)
        if lost is not None:
            gap = CaptureGap(t, lost["lost_calls"], lost["lost_bytes"])
            self.sender.frames(t, *encode(gap))

    def close(self, t: float) -> list[Any]:
        """``Recorder.close`` (ends every session), in the analysis process.

        What the backlog dropped is accounted for first, inside the sessions.
        """
        self._flush()
        for number in list(self._lost_bodies):
            self._observe_loss(number, t)
        self._flush()
        self._send_gap(t, now=True)
        self._queue(CaptureEnd(t), force=True)
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
            # Every observation dropped is accounted for before the trace ends.
            self._send_gap(time.time(), now=True)
            await self.sender.close()
            return await self.analysis.wait()
        finally:
            if notice is not None:
                notice.cancel()


def replay_calls(
    fd: int,
    apply: Callable[[Observation], None],
    after_batch: Callable[[], None],
    warn: Callable[[str], None] | None = None,
) -> bool:
    """Read the observations ``RemoteRecorder`` sent and ``apply`` each, in order.

    ``after_batch`` runs after every read (the relay paused: a good moment to
    flush). Returns True when STOP arrived, False at EOF (the sender died).
    """
    for batch in read_observations(fd):
        for piece in batch:
            if piece.kind == STOP:
                after_batch()
                return True
            if piece.kind != CALLS:
                continue
            try:
                observations = decode_all(piece.payload)
            except CodecError as exc:  # never a traceback: say it, go on
                if warn is not None:
                    warn(f"mcpsniff: internal error while recording: {exc}")
                continue
            piece.payload = b""  # a big body is held once, in its observation
            for observation in observations:
                apply(observation)
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
    """The analysis process: replay the relay's observations until STOP or EOF.

    Returns the process's exit status: 0, or 3 when the trace could not be
    written in full.
    """
    recorder = replay.recorder
    writer = recorder.writer

    def apply(observation: Observation) -> None:
        try:
            replay.apply(observation)
        except Exception as exc:  # recording must never stop
            if warn is not None:
                warn(f"mcpsniff: internal error while recording: {exc!r}")

    stopped = replay_calls(fd, apply, writer.flush if writer is not None else lambda: None, warn)
    return end_trace(recorder, stopped, warn)
