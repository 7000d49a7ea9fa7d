"""The stdio relay's analysis process: observations in, trace records out.

``mcpsniff stdio`` forks this before it spawns the server (see
``observer_pipe``). It turns what the forwarding loop saw into calls on the
recorder: bytes per direction, the child's stderr split into line events,
transport events, and capture gaps.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mcpsniff.core.model import C2S, S2C, Record
from mcpsniff.core.redact import redact_frame
from mcpsniff.relay.observer_pipe import (
    DATA,
    EOF,
    EVENT,
    GAP,
    STDERR,
    STOP,
    Observation,
    read_observations,
)
from mcpsniff.relay.outputs import Outputs, attach
from mcpsniff.relay.recorder import Recorder
from mcpsniff.trace.format import TraceWriter

SESSION = "stdio"
#: Longest stderr line recorded as one event; longer lines are split.
STDERR_EVENT_LIMIT = 8192
#: Exit status of the analysis process when the trace could not be written in full.
TRACE_INCOMPLETE = 3


class StdioAnalysis:
    """Records one stdio relay run from its observations."""

    def __init__(
        self,
        writer: TraceWriter,
        *,
        redact: bool = True,
        show: Callable[[Record], None] | None = None,
        show_flush: Callable[[], None] | None = None,
        warn: Callable[[str], None] | None = None,
        outputs: Outputs | None = None,
    ) -> None:
        self.writer = writer
        self.outputs = outputs
        self.redact = redact
        # Flushed once per batch of observations instead (see ``run``).
        self.recorder = Recorder(writer, "stdio", redact=redact, autoflush=False)
        if show is not None:
            self.recorder.listeners.append(show)
        if show_flush is not None:
            self.recorder.batch_listeners.append(show_flush)
        self.warn = warn or (lambda text: None)
        #: The child's last stderr line, until its newline arrives.
        self._stderr_partial = b""
        #: After a capture gap, drop bytes up to the next newline: the analyzer
        #: resynchronises on the next whole line.
        self._skip_to_newline = {C2S: False, S2C: False}
        self._trace_warned = False

    def run(self, fd: int) -> int:
        """Read observations from ``fd`` until STOP or EOF; the process's exit status."""
        attach(self.recorder, self.outputs)  # here, in the analysis process
        stopped = False
        for batch in read_observations(fd):
            for observation in batch:
                if observation.kind == STOP:
                    stopped = True
                    break
                try:
                    self.handle(observation)
                except Exception as exc:
                    self.warn(f"mcpsniff stdio: internal error while recording: {exc!r}")
                self._check_writer()
            # The relay paused (the pipe had nothing more): readers of the
            # trace (``show --follow``, a crash) see everything up to here.
            self.writer.flush()
            if stopped:
                break
        if not stopped:
            self._relay_lost()
        self.writer.close()
        if self.writer.failed is not None:
            if not self._trace_warned:
                self.warn(f"mcpsniff stdio: warning: the trace is incomplete: {self.writer.failed}")
            return TRACE_INCOMPLETE
        return 0

    def _relay_lost(self) -> None:
        """EOF without STOP: the relay died (SIGKILL, say). End the session in the trace.

        The session ends (so unanswered requests are reported) but partial
        lines are not turned into frames: the relay may have died in the
        middle of forwarding them. Their size is recorded instead.
        """
        session = self.recorder.analyzer.session(SESSION, "stdio")
        pending = {d: session._framers[d].pending for d in (C2S, S2C)}
        self.recorder.event(
            SESSION,
            "session-end",
            time.time(),
            {"reason": "the relay ended without finishing", "unframed_bytes": pending},
        )

    def _check_writer(self) -> None:
        if self.writer.failed is not None and not self._trace_warned:
            self._trace_warned = True
            self.warn(
                f"mcpsniff stdio: warning: cannot write the trace ({self.writer.failed}); "
                "relaying continues without recording"
            )

    def handle(self, observation: Observation) -> None:
        """Record one observation."""
        kind = observation.kind
        recorder = self.recorder
        if kind == DATA:
            direction, data = observation.direction, observation.payload
            if self._skip_to_newline[direction]:
                cut = data.find(b"\n")
                if cut < 0:
                    return
                data = data[cut + 1 :]
                self._skip_to_newline[direction] = False
            recorder.feed(SESSION, direction, data, observation.t)
        elif kind == STDERR:
            self._stderr_lines(observation.payload, observation.t)
        elif kind == EOF:
            recorder.eof(SESSION, observation.direction, observation.t)
        elif kind == GAP:
            # Bytes were forwarded but not recorded: say so, drop the partial
            # line and resynchronise at the next newline.
            direction = observation.direction
            session = recorder.analyzer.session(SESSION, "stdio")
            dropped = session._framers[direction].flush()
            lost = observation.json()["lost"] + (len(dropped) if dropped else 0)
            recorder.event(
                SESSION, "capture-gap", observation.t, {"direction": direction, "lost_bytes": lost}
            )
            self._skip_to_newline[direction] = True
        elif kind == EVENT:
            event = observation.json()
            if event["name"] == "session-end":
                recorder.close(observation.t)
            else:
                recorder.event(SESSION, event["name"], observation.t, event["data"])

    def _stderr_lines(self, chunk: bytes, t: float) -> None:
        """Record the child's stderr as one event per line.

        ``chunk`` is b"" when stderr ended: the unterminated rest is recorded then.
        """
        recorder = self.recorder
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
        """A stderr line as recorded: redacted like frames, unless --no-redact."""
        # Fix: stderr lines went into the trace verbatim, so a server that logs
        # its requests (a common debug habit) put every api_key, password and
        # Bearer token in the trace despite redaction. The bytes passed on to
        # our stderr are not touched.
        if self.redact:
            line, _ = redact_frame(line)
        return line.decode("utf-8", "replace")
