"""The ``Session`` object: the shell's way in, and where the records go out.

A shell hands a ``Session`` bytes (``feed``), whole frames (``feed_frame``)
or transport events (``event``); ``mcpsniff check`` hands it the frame and
event records of a saved trace (``analyze_frames``, ``apply_event``). Either
way the same code runs, and the records come back: each frame followed by
what it produced (package docstring: the flow of one frame). Rules add to
that output through ``report`` and ``emit`` (base.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

import orjson

from mcpsniff.core.model import (
    C2S,
    S2C,
    UNPARSED,
    EventRecord,
    FrameRecord,
    MessageRecord,
    Record,
)
from mcpsniff.core.session import classification, scoping
from mcpsniff.core.session.base import SessionBase
from mcpsniff.core.session.dispatch import event_rules, frame_rules
from mcpsniff.core.session.parsing import NOT_JSON, analyze_unusual, fallback_parse

#: A record without its ``__init__``, for ``Session.feed`` to fill slot by slot
#: (as ``classification._new_record``); every field is set there.
_new_record = object.__new__
#: Transport events that end a session: unanswered requests are reported then.
END_EVENTS = frozenset({"session-end"})


class Session(SessionBase):
    """Analyzes the traffic of one MCP session (one stdio process, one HTTP session)."""

    # ------------------------------------------------------------------ shell API

    def feed(self, direction: str, transport: str, data: bytes, t: float) -> list[Record]:
        """Feed stream bytes (newline-delimited JSON, as stdio carries it)."""
        lines = self._framers[direction].feed(data)
        if not lines:
            return []
        # ``_new_frame`` per line, with the lookups bound once (a relay's read
        # carries dozens of lines), then one ``analyze_frames`` for them all.
        counter = self.counter
        seq = counter.value
        redactor = self.redactor
        key = self.key
        frames = []
        append = frames.append
        try:
            for line in lines:
                seq += 1
                # FrameRecord(seq, t, key, direction, transport, raw, meta), slot by
                # slot (``_new_record``: the dataclass's ``__init__`` through
                # ``type.__call__`` costs more than the stores; every line pays it).
                frame = _new_record(FrameRecord)
                frame.seq = seq
                frame.t = t
                frame.session = key
                frame.direction = direction
                frame.transport = transport
                frame.value = UNPARSED
                if redactor is None:
                    frame.raw = line
                    frame.meta = None
                else:
                    frame.raw, count = redactor(line)
                    frame.meta = {"redacted": count} if count else None
                append(frame)
        finally:
            counter.value = seq  # the numbers handed out, even if the redactor failed
        return self.analyze_frames(frames)

    def feed_frame(
        self,
        direction: str,
        transport: str,
        raw: bytes,
        t: float,
        meta: dict[str, Any] | None = None,
    ) -> list[Record]:
        """Feed one whole frame: an HTTP body or an SSE event's data."""
        frame = self._new_frame(direction, transport, raw, t)
        if meta:
            frame.meta = {**(frame.meta or {}), **meta}
        return self.analyze_frame(frame)

    def eof(self, direction: str, t: float) -> list[Record]:
        """The byte stream in ``direction`` ended: flush a final line without newline."""
        rest = self._framers[direction].flush()
        if rest is None:
            return []
        return self.analyze_frame(self._new_frame(direction, self.transport, rest, t))

    def event(self, name: str, t: float, data: dict[str, Any] | None = None) -> list[Record]:
        """Record a transport event (stderr line, exit, HTTP metadata, ...)."""
        record = EventRecord(self.counter.next(), t, self.key, name, data or {})
        return self.apply_event(record)

    def close(self, t: float, data: dict[str, Any] | None = None) -> list[Record]:
        """End the session: flush partial lines, then report what never completed."""
        if self.state.ended:
            return []
        out: list[Record] = []
        out.extend(self.eof(C2S, t))
        out.extend(self.eof(S2C, t))
        out.extend(self.event("session-end", t, data))
        return out

    @property
    def buffered(self) -> int:
        """Bytes waiting in the line framers for their newline."""
        return sum(f.pending for f in self._framers.values())

    def _new_frame(self, direction: str, transport: str, raw: bytes, t: float) -> FrameRecord:
        frame = FrameRecord(self.counter.next(), t, self.key, direction, transport, raw)
        if self.redactor is not None:
            frame.raw, count = self.redactor(raw)
            if count:
                frame.meta = {"redacted": count}
        return frame

    # ------------------------------------------------------------------ analysis entry points

    def analyze_frame(self, frame: FrameRecord) -> list[Record]:
        """Analyze one frame whose seq is already assigned (live or from a trace)."""
        return self.analyze_frames((frame,))

    def analyze_frames(self, frames: Iterable[FrameRecord]) -> list[Record]:
        """Analyze frames in order; each frame record is followed by what it produced."""
        self.output = out = []
        state = self.state
        offsets = state.stream_offset
        message = classification.message
        # Set only by the "fault" event's rule (rules/resilience.py), never while
        # frames are analyzed: read once for the run, not once a frame.
        faults = self.faults
        unparsed = UNPARSED
        for frame in frames:
            start = len(out)
            out.append(frame)
            try:
                direction = frame.direction
                offset = offsets[direction]
                offsets[direction] = offset + len(frame.raw)
                value = frame.value
                if value is unparsed:
                    # A live frame: parsed here, where the usual one goes straight on
                    # to ``message``; what orjson refuses, ``analyze_unusual`` takes apart.
                    try:
                        value = frame.value = orjson.loads(frame.raw)
                    except orjson.JSONDecodeError:
                        value = UNPARSED  # ``analyze_unusual`` tries the exact parser, then reports
                if faults is not None:
                    faults.frame(frame)  # before any rule judges it (fault_ledger.py)
                if type(value) is dict and type(value.get("id")) is not float:
                    # The usual frame: one message, already parsed (by the trace
                    # reader, or by a shell that parsed it to redact it).
                    message(self, value, frame, None)
                else:
                    analyze_unusual(self, frame, value, offset)
                meta = frame.meta
                if state.line_runs or (meta is not None and "exchange" in meta):
                    # Only rules that follow frames need this (a pretty-printed run ends
                    # at the first line that is not part of it; an HTTP body's messages
                    # belong to its exchange): most frames skip it.
                    messages = [r for r in out[start:] if isinstance(r, MessageRecord)]
                    frame_rules(self, "parsed", frame, messages)
            except Exception as exc:
                out.append(self._internal_error(frame.seq, frame.t, exc))
                self.notable += 1
        self.output = []
        return out

    def apply_event(self, record: EventRecord) -> list[Record]:
        """Apply a transport event record (live or from a trace)."""
        self.output = out = [record]
        try:
            name = record.event
            if name in END_EVENTS:
                if self.state.ended:
                    return out
                self.state.ended = True
            event_rules(self, record)
        except Exception as exc:
            out.append(self._internal_error(record.seq, record.t, exc))
        self.output = []
        return out

    def _internal_error(self, seq: int, t: float, exc: Exception) -> EventRecord:
        # An analyzer bug must not cost the user their traffic: record it and go on.
        # `traceback` is imported for the bug alone (docs/performance.md, "Start-up").
        import traceback

        return EventRecord(
            seq,
            t,
            self.key,
            "analyzer-error",
            {"error": repr(exc), "traceback": traceback.format_exc(limit=6)},
        )

    # ------------------------------------------------------------------ keys (scoping.py)

    #: The key request id ``ident`` is paired by, for ``msg``.
    pairing_key = scoping.pairing_key
    #: ``key`` (an id's or a progress token's) within ``msg``'s client, when scoped.
    scoped = scoping.scoped
    #: Where a mapping holds a scoped key's entry, and whether that is ambiguous.
    rescope = staticmethod(scoping.rescope)


class FramesOnlySession(Session):
    """A ``Session`` that frames, numbers and redacts, and analyzes nothing.

    The recording lane of a two-lane stdio capture (mcpsniff/capture/lanes.py)
    writes the input records at once and leaves parsing, classification and
    the rules to the derived lane, which runs a full ``Session`` on the same
    observations. Both draw the same sequence numbers: a seq is drawn per
    frame and per event only (``feed``, ``_new_frame``, ``event``), never by
    the analysis. ``analyze_frames`` and ``apply_event`` return their inputs;
    ``session-end`` still ends the session once, as ``Session`` does.
    """

    def analyze_frames(self, frames: Iterable[FrameRecord]) -> list[Record]:
        """The frames, each known to be JSON or not, and nothing derived from them.

        The trace writer stores a frame that is JSON as embedded JSON (trace
        format 2) and any other as text: to write the very line a full
        ``Session`` makes, a frame is parsed as ``analyze_frames`` and
        ``analyze_unusual`` parse it (orjson, then the exact parser for what
        orjson refuses), with the same outcome for every exception: a frame
        the full analysis would leave unparsed stays unparsed here.
        """
        out = frames if type(frames) is list else list(frames)
        loads = orjson.loads
        unparsed = UNPARSED
        for frame in out:
            if frame.value is not unparsed:
                continue
            try:
                frame.value = loads(frame.raw)
            except orjson.JSONDecodeError:
                with contextlib.suppress(Exception):
                    value = fallback_parse(frame.raw)
                    if value is not NOT_JSON:
                        frame.value = value
            except Exception:  # the full analysis records an analyzer-error, unparsed
                continue
        return out

    def apply_event(self, record: EventRecord) -> list[Record]:
        """The event alone; a ``session-end`` marks the session ended."""
        if record.event in END_EVENTS:
            self.state.ended = True
        return [record]
