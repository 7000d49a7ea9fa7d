"""A recorder that runs in the analysis process: the HTTP relay's half of the split.

The HTTP relay keeps the exchange bookkeeping (``exchange.HttpObserver``:
session keys, which bytes are frames) because it is cheap and needs the live
exchange, but the core's analysis and the trace writing are not: they move
to the forked analysis process (see ``observer_pipe``). ``RemoteRecorder``
has the recorder methods the observer calls; each call is pickled into the
pipe and ``apply_calls`` replays it on a real ``Recorder`` there.
"""

from __future__ import annotations

import asyncio
import pickle
import time
from collections.abc import Callable
from typing import Any

from mcpsniff.relay.observer_pipe import CALL, STOP, AnalysisProcess, read_observations
from mcpsniff.relay.recorder import Recorder

#: The session key of relay-wide events (capture gaps).
RELAY_SESSION = "http"


class RemoteRecorder:
    """Stands in for ``Recorder`` in the relay process; the records are made elsewhere.

    Its methods return no records: the analysis process owns them (``--show``
    prints from there).
    """

    #: The trace belongs to the analysis process.
    writer = None

    def __init__(self, analysis: AnalysisProcess) -> None:
        self.analysis = analysis
        self.sender = analysis.sender

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Drain the pipe with ``loop`` (call once the loop runs)."""
        self.sender.attach(loop)

    def _call(self, method: str, t: float, *args: Any) -> list[Any]:
        sender = self.sender
        if sender.lost_calls and sender.pending_bytes < sender.limit // 2:
            # Room again after a backlog overflow: say what the trace lacks.
            lost = {"lost_calls": sender.lost_calls, "lost_bytes": sender.lost_call_bytes}
            sender.lost_calls = sender.lost_call_bytes = 0
            gap = ("event", (RELAY_SESSION, "capture-gap", t, lost))
            sender.call(pickle.dumps(gap, pickle.HIGHEST_PROTOCOL), t)
        sender.call(pickle.dumps((method, args), pickle.HIGHEST_PROTOCOL), t)
        return []

    def feed_frame(
        self,
        session: str,
        direction: str,
        raw: bytes,
        t: float,
        transport: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> list[Any]:
        """``Recorder.feed_frame``, in the analysis process."""
        return self._call("feed_frame", t, session, direction, raw, t, transport, meta)

    def feed(self, session: str, direction: str, data: bytes, t: float) -> list[Any]:
        """``Recorder.feed``, in the analysis process."""
        return self._call("feed", t, session, direction, data, t)

    def eof(self, session: str, direction: str, t: float) -> list[Any]:
        """``Recorder.eof``, in the analysis process."""
        return self._call("eof", t, session, direction, t)

    def event(
        self, session: str, name: str, t: float, data: dict[str, Any] | None = None
    ) -> list[Any]:
        """``Recorder.event``, in the analysis process."""
        return self._call("event", t, session, name, t, data)

    def close(self, t: float) -> list[Any]:
        """``Recorder.close`` (ends every session), in the analysis process."""
        return self._call("close", t, t)

    async def finish(self) -> int:
        """Send STOP, wait until the analysis process has written the trace; its status."""
        await self.sender.close()
        return await self.analysis.wait()


def apply_calls(fd: int, recorder: Recorder, warn: Callable[[str], None] | None = None) -> int:
    """The analysis process: replay the relay's recorder calls until STOP or EOF.

    Returns the process's exit status: 0, or 3 when the trace could not be
    written in full.
    """
    writer = recorder.writer
    stopped = False
    for batch in read_observations(fd):
        for observation in batch:
            if observation.kind == STOP:
                stopped = True
                break
            if observation.kind != CALL:
                continue
            try:
                method, args = pickle.loads(observation.payload)
                getattr(recorder, method)(*args)
            except Exception as exc:  # recording must never stop
                if warn is not None:
                    warn(f"mcpsniff: internal error while recording: {exc!r}")
        if writer is not None:
            writer.flush()
        if stopped:
            break
    if not stopped:
        # The relay died: end every session so the trace says what was unanswered.
        recorder.close(time.time())
    if writer is None:
        return 0
    writer.close()
    if writer.failed is not None:
        if warn is not None:
            warn(f"mcpsniff: warning: the trace is incomplete: {writer.failed}")
        return 3
    return 0
