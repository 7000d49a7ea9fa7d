"""The recorder every capture ends in: analyzer in, trace out.

An adapter (``mcpsniff.core.stdio_adapter``, ``mcpsniff.core.http.adapter``)
replaying a shell's observations calls ``feed`` with bytes the shell has
*already forwarded* (forward first, observe second: docs/architecture.md, invariant 2)
and the wall-clock time it read them; the recorder runs the sans-I/O session
and writes every record to the trace. Listeners (``--show``) and sinks get
the same records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from mcpsniff.capture.sinks import Outputs, Sink, build_sinks
from mcpsniff.core.analyzer import Analyzer
from mcpsniff.core.model import FindingRecord, FrameRecord, Record
from mcpsniff.core.redact import holds_no_hint, redact_frame
from mcpsniff.core.session import Session
from mcpsniff.trace.codec import frame_line_format
from mcpsniff.trace.writer import TraceWriter

Listener = Callable[[Record], None]
_loads = orjson.loads
#: CR as an int: ``in`` with an int is one memchr.
_CR = 0x0D
#: Sequence numbers ``frame_line_format``'s lines take (orjson refuses larger ones).
_SEQ_LIMIT = 1 << 63
#: What ends a line of ``frame_line_format``'s after the frame's bytes.
_TAIL = b"}\n"


class TraceRecorder:
    """Feeds one capture's traffic through the analyzer into a trace writer."""

    def __init__(
        self,
        writer: TraceWriter | None,
        transport: str = "stdio",
        *,
        redact: bool = True,
        autoflush: bool = True,
        frames_only: bool = False,
    ) -> None:
        self.writer = writer
        #: Flush the trace after every batch, so a reader (or a crash) sees it at once.
        self.autoflush = autoflush
        self.transport = transport
        self.frames_only = frames_only
        #: ``frames_only``: frame and event records only (the recording lane of
        #: mcpsniff/capture/lanes.py; the derived lane analyzes them).
        self.analyzer = Analyzer(redactor=redact_frame if redact else None, frames_only=frames_only)
        self.listeners: list[Listener] = []
        #: Called after each batch of records (one feed call), e.g. to flush a display.
        self.batch_listeners: list[Callable[[], None]] = []
        #: Called once the sessions are closed, after their last records (a display's end).
        self.close_listeners: list[Callable[[], None]] = []
        #: Further outputs (OTLP, a live view): see mcpsniff.capture.sinks.
        self.sinks: list[Sink] = []
        self.findings = 0

    def attach_sinks(self, outputs: Outputs | None) -> TraceRecorder:
        """Add the sinks ``outputs`` asks for (call in the analysis process); this recorder."""
        if outputs is not None:
            self.sinks.extend(build_sinks(outputs))
        return self

    def attach_display(
        self,
        show: Listener | None,
        flush: Callable[[], None] | None = None,
        close: Callable[[], None] | None = None,
    ) -> TraceRecorder:
        """Let a display (``--show``) see every record, each batch's end and the sessions' end."""
        if show is not None:
            self.listeners.append(show)
        if flush is not None:
            self.batch_listeners.append(flush)
        if close is not None:
            self.close_listeners.append(close)
        return self

    def _emit(self, records: list[Record]) -> list[Record]:
        if self.analyzer.drops:
            # Sessions whose state was dropped to make room (core/analyzer.py
            # MAX_SESSIONS): their seqs were drawn before these records'.
            t = records[0].t if records and hasattr(records[0], "t") else 0.0
            records = self.analyzer.take_dropped(t) + records
        writer = self.writer
        # Counted in C (the record classes are final: compared by type).
        self.findings += list(map(type, records)).count(FindingRecord)
        if not self.listeners and not self.sinks:
            # The usual capture: the trace is the only output.
            if writer is not None:
                writer.write_all(records)
            for hook in self.batch_listeners:
                hook()
            if self.autoflush and writer is not None:
                writer.flush()
            return records
        for record in records:
            if writer is not None:
                writer.write(record)
            for listener in self.listeners:
                listener(record)
            for sink in self.sinks:
                sink.record(record)
        for hook in self.batch_listeners:
            hook()
        for sink in self.sinks:
            sink.batch_end()
        if self.autoflush and writer is not None:
            writer.flush()
        return records

    def feed(self, session: str, direction: str, data: bytes, t: float) -> list[Record]:
        """Stream bytes (stdio) seen in ``direction``.

        The records made, except in the recording lane of a two-lane capture
        whose trace is its only output: its frame lines go straight to the
        writer (``_write_frames``), and no records are returned.
        """
        # Once per chunk of a stdio relay: the session found without a method call.
        s = self.analyzer.sessions.get(session)
        if s is None:
            s = self.analyzer.session(session, self.transport)
        writer = self.writer
        if (
            self.frames_only
            and writer is not None
            and not (self.listeners or self.sinks or self.analyzer.drops)
            and writer.takes_lines(s.key)
        ):
            self._write_frames(s, writer, direction, data, t)
            for hook in self.batch_listeners:
                hook()
            if self.autoflush:
                writer.flush()
            return []
        return self._emit(s.feed(direction, self.transport, data, t))

    def _write_frames(
        self, s: Session, writer: TraceWriter, direction: str, data: bytes, t: float
    ) -> None:
        """``s.feed`` and ``writer.write_all`` of its frames, for the frames-only session.

        The very lines, seqs and count of records, with no ``FrameRecord`` for
        the usual frame: JSON orjson reads (the frames-only session's parse
        decides only whether a frame is stored as embedded JSON), no CR, no
        hint of a secret in the read (``holds_no_hint``: redaction would leave
        it as it is). Any other frame is made a record as ``Session.feed``
        makes it and analyzed by the session, and ``encode_line`` writes it.
        Nothing is written if the redactor fails (``Session.feed`` writes
        nothing then either); the seqs drawn stay drawn.
        """
        data = bytes(data)  # no copy when it is bytes already (the relays pass bytes)
        framer = s._framers[direction]
        carried = framer.pending  # the first line's start came in an earlier read
        parts = framer.split(data)
        if not parts:
            return
        transport = self.transport
        key = s.key
        redactor = s.redactor
        head = frame_line_format(key, direction, transport, t)
        fast = head is not None and _CR not in data
        plain = redactor is None or (redactor is redact_frame and holds_no_hint(data))
        loads = _loads
        # Three pieces a line (its head, the frame's bytes, ``_TAIL``), joined once
        # the writer writes them; or the record of a frame the session takes.
        pieces: list[Any] = []
        slow: list[FrameRecord] = []
        counter = s.counter
        seq = counter.value
        # Taken off the list one by one, so that a long line the record's way holds
        # its bytes once (``raw``), not once more in ``parts`` until the loop ends.
        parts.reverse()
        take = parts.pop
        try:
            while parts:
                part = take()
                seq += 1
                if fast and (plain and not carried) and seq < _SEQ_LIMIT:
                    try:
                        loads(part)
                    except Exception:  # not orjson's JSON: the session decides
                        pass
                    else:
                        pieces += (head % (seq, len(part)), part, _TAIL)  # type: ignore[operator]
                        continue
                carried = 0
                raw = part + b"\n"
                del part
                frame = FrameRecord(seq, t, key, direction, transport, raw)
                if redactor is not None:
                    frame.raw, count = redactor(raw)
                    if count:
                        frame.meta = {"redacted": count}
                slow.append(frame)
                pieces.append(frame)
        finally:
            counter.value = seq  # the numbers handed out, even if the redactor failed
        if not slow:
            writer.write_lines(pieces, len(pieces) // 3)
            return
        s.analyze_frames(slow)
        start = 0
        for at, item in enumerate(pieces):
            if type(item) is FrameRecord:
                if start < at:
                    writer.write_lines(pieces[start:at], (at - start) // 3)
                writer.write(item)
                start = at + 1
        if start < len(pieces):
            writer.write_lines(pieces[start:], (len(pieces) - start) // 3)

    def feed_frame(
        self,
        session: str,
        direction: str,
        raw: bytes,
        t: float,
        transport: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> list[Record]:
        """One whole frame (HTTP body, SSE event data)."""
        kind = transport or self.transport
        s = self.analyzer.session(session, kind)
        return self._emit(s.feed_frame(direction, kind, raw, t, meta))

    def eof(self, session: str, direction: str, t: float) -> list[Record]:
        """The stream in ``direction`` ended."""
        return self._emit(self.analyzer.session(session, self.transport).eof(direction, t))

    def event(
        self, session: str, name: str, t: float, data: dict[str, Any] | None = None
    ) -> list[Record]:
        """A transport event."""
        return self._emit(self.analyzer.session(session, self.transport).event(name, t, data))

    def close(self, t: float) -> list[Record]:
        """End all sessions and flush the trace."""
        records = self._emit(self.analyzer.close(t))
        for hook in self.close_listeners:
            hook()
        if self.writer is not None:
            self.writer.flush()
        for sink in self.sinks:
            sink.close()
        return records
