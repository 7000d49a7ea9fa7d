"""The stdio shell's observations replayed on the ``Session``: observations in, records out.

A stdio relay sees two byte streams, the child's stderr and transport
events (``mcpsniff.core.observations``). This adapter turns them into calls
on a recorder (``mcpsniff.capture.recorder.TraceRecorder``): bytes per direction,
the child's stderr split into one ``stderr`` event per line (redacted like
frames), transport events, capture gaps, and the end of the trace.

Sans-I/O: no clock, no I/O; fed the same observations whole or one by one,
it makes the same records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from mcpsniff.core.model import C2S, S2C, Record
from mcpsniff.core.observations import (
    STDIO_EVENTS,
    CaptureEnd,
    CaptureGap,
    Stderr,
    StdioEvent,
    StreamData,
    StreamEnd,
    StreamGap,
)
from mcpsniff.core.redact import redact_frame

SESSION = "stdio"
#: Longest stderr line recorded as one event; longer lines are split.
STDERR_EVENT_LIMIT = 8192


class StreamRecorder(Protocol):
    """Where the adapter's output goes (``mcpsniff.capture.recorder.TraceRecorder``)."""

    analyzer: Any

    def feed(self, session: str, direction: str, data: bytes, t: float) -> list[Record]: ...
    def eof(self, session: str, direction: str, t: float) -> list[Record]: ...
    def event(
        self, session: str, name: str, t: float, data: dict[str, Any] | None = None
    ) -> list[Record]: ...
    def close(self, t: float) -> list[Record]: ...


class StdioAdapter:
    """Records one stdio relay run from its observations."""

    def __init__(self, recorder: StreamRecorder, *, redact: bool = True) -> None:
        self.recorder = recorder
        self.redact = redact
        #: The child's last stderr line, until its newline arrives.
        self._stderr_partial = b""
        #: After a capture gap, bytes up to the next newline are dropped: the
        #: analyzer resynchronises on the next whole line.
        self._skip_to_newline = {C2S: False, S2C: False}
        #: Bytes dropped so far while resynchronising, per direction: they are
        #: recorded as a capture-gap of their own once the newline (or the end) comes.
        self._skipped = {C2S: 0, S2C: 0}
        self._handlers: dict[type, Callable[[Any], None]] = {
            StreamData: self._data,
            StreamEnd: self._end_of_stream,
            StreamGap: self._gap,
            Stderr: self._stderr,
            **dict.fromkeys(STDIO_EVENTS, self._event),
            CaptureGap: self._capture_gap,
            CaptureEnd: self._capture_end,
        }

    def apply(self, observation: Any) -> None:
        """Record one observation (one of another shell is ignored)."""
        handler = self._handlers.get(type(observation))
        if handler is not None:
            handler(observation)

    def lost(self, t: float) -> None:
        """The relay ended without ``CaptureEnd`` (SIGKILL, say): end the session anyway.

        The session ends (so unanswered requests are reported) but partial
        lines are not turned into frames: the relay may have died in the
        middle of forwarding them. Their size is recorded instead.
        """
        for direction in (C2S, S2C):
            self._tell_skipped(direction, t)
        session = self.recorder.analyzer.session(SESSION, "stdio")
        pending = {d: session._framers[d].pending for d in (C2S, S2C)}
        data = {"reason": "the relay ended without finishing", "unframed_bytes": pending}
        self.recorder.event(SESSION, "session-end", t, data)
        self.recorder.close(t)  # the session has ended: this only closes the sinks

    def _data(self, o: StreamData) -> None:
        data = o.body
        if self._skip_to_newline[o.direction]:
            cut = data.find(b"\n")
            if cut < 0:
                self._skipped[o.direction] += len(data)
                return
            self._skipped[o.direction] += cut + 1
            data = data[cut + 1 :]
            self._skip_to_newline[o.direction] = False
            self._tell_skipped(o.direction, o.t)
        self.recorder.feed(SESSION, o.direction, data, o.t)

    def _tell_skipped(self, direction: str, t: float) -> None:
        """The bytes dropped to resynchronise are lost to the analysis too: count them."""
        skipped = self._skipped[direction]
        if skipped:
            self._skipped[direction] = 0
            data = {"direction": direction, "lost_bytes": skipped, "resync": True}
            self.recorder.event(SESSION, "capture-gap", t, data)

    def _end_of_stream(self, o: StreamEnd) -> None:
        self._tell_skipped(o.direction, o.t)
        self.recorder.eof(SESSION, o.direction, o.t)

    def _gap(self, o: StreamGap) -> None:
        """Bytes were forwarded but not recorded: say so, and resynchronise at a newline."""
        session = self.recorder.analyzer.session(SESSION, "stdio")
        dropped = session._framers[o.direction].flush()
        lost = o.lost + (len(dropped) if dropped else 0)
        data = {"direction": o.direction, "lost_bytes": lost}
        self.recorder.event(SESSION, "capture-gap", o.t, data)
        self._skip_to_newline[o.direction] = True

    def _capture_gap(self, o: CaptureGap) -> None:
        data = {"lost_calls": o.lost_calls, "lost_bytes": o.lost_bytes}
        self.recorder.event(SESSION, "capture-gap", o.t, data)

    def _event(self, o: StdioEvent) -> None:
        self.recorder.event(SESSION, o.name, o.t, o.data())

    def _capture_end(self, o: CaptureEnd) -> None:
        for direction in (C2S, S2C):
            self._tell_skipped(direction, o.t)
        self._stderr(Stderr(o.t, b""))
        self.recorder.close(o.t)

    def _stderr(self, o: Stderr) -> None:
        """The child's stderr as one event per line; ``b""``: the unterminated rest, now."""
        recorder, chunk, t = self.recorder, o.body, o.t
        if not chunk:
            if self._stderr_partial:
                line = self._stderr_text(self._stderr_partial)
                recorder.event(SESSION, "stderr", t, {"line": line})
                self._stderr_partial = b""
            return
        lines = (self._stderr_partial + chunk).split(b"\n")
        partial = lines.pop()
        while len(partial) > STDERR_EVENT_LIMIT:
            lines.append(partial[:STDERR_EVENT_LIMIT])
            partial = partial[STDERR_EVENT_LIMIT:]
        self._stderr_partial = partial
        for line in lines:
            for start in range(0, max(len(line), 1), STDERR_EVENT_LIMIT):
                piece = line[start : start + STDERR_EVENT_LIMIT]
                recorder.event(SESSION, "stderr", t, {"line": self._stderr_text(piece)})

    def _stderr_text(self, line: bytes) -> str:
        """A stderr line as recorded: redacted like frames (servers log their requests,
        credentials included), unless --no-redact. Our own stderr gets the bytes as they are."""
        if self.redact:
            line, _ = redact_frame(line)
        return line.decode("utf-8", "replace")
