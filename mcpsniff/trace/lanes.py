"""Reading a two-lane trace: each input followed by its derived records, wherever they sit.

The two-lane stdio analysis (docs/trace-format.md, "Two-lane traces") writes a
session's input records (frames, events) from one process and its derived
records (messages, findings, ``analyzer-error`` events) from another, so the
derived records of an input may come after later inputs. ``lane`` records say
which sessions are written so and how far the derived lane has got; a
``LaneMerge`` consumes them and hands on every other item in the order a
one-lane trace has: each input, then its derived records.

Readers build a ``LaneMerge`` only at the first ``lane`` record of a file, so a
trace without one costs them nothing. The merge holds the inputs of a lane
session (and everything read after them, so that the global order of inputs is
kept) until a ``through`` covers them; what it holds is bounded
(``MAX_HELD`` items, ``MAX_HELD_BYTES`` of lines), and past that the oldest is
handed on as it is. It is told about each item by the record it carries, so it
serves readers whose items are records with something beside (a byte offset,
a header).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, MessageRecord

#: At most this many items are held waiting for a ``through``.
MAX_HELD = 100_000
#: At most this many bytes of lines are held waiting for a ``through``.
MAX_HELD_BYTES = 64 << 20
#: At most this many sessions are opened by ``lane`` records (a hostile trace
#: of a million ``open`` records must not grow the reader's state without end).
MAX_LANES = 10_000
#: At most this many bytes of session keys are kept for opened sessions.
MAX_LANE_KEY_BYTES = 16 << 20

#: What ``feed`` returns when nothing is due (most calls while inputs are held): no new list.
_NOTHING: list[Any] = []

#: The event a derived lane writes for an analyzer bug; every other event is an input.
ANALYZER_ERROR = "analyzer-error"


class _Lane:
    """What the merge knows of one session opened by a ``lane ... open`` record."""

    __slots__ = ("cursor", "held", "lost", "through")

    def __init__(self) -> None:
        #: Every derived record of an input with a seq up to this one has been read.
        self.through = -1
        #: No more derived records will come (the derived lane died or was cut off).
        self.lost = False
        #: The input the session's next non-message derived record attaches to.
        self.cursor: int | None = None
        #: The held entries of this session's inputs, by seq.
        self.held: dict[int, _Entry] = {}


class _Entry:
    """A place in the merge's queue: a held input and its derived records, or items passed on."""

    __slots__ = ("items", "lane", "seq", "size")

    def __init__(self, lane: _Lane | None, seq: int, item: Any, size: int) -> None:
        self.lane = lane
        self.seq = seq
        self.items = [item]
        self.size = size


class LaneMerge:
    """Puts the derived records of lane sessions back after their inputs.

    ``feed(record, item, size)`` takes one record (``item`` is what is handed
    on for it; ``size`` its line's length in bytes) and ``lane(obj)`` one
    ``lane`` record (checked by ``validate.lane_problem``); each returns the
    items now due, in order. ``finish()`` returns the rest at the end of a
    file that is not followed as it grows. Items that are not records (an
    appended session's header) are fed with ``record`` None and keep their place.
    """

    def __init__(self, max_held: int = MAX_HELD, max_bytes: int = MAX_HELD_BYTES) -> None:
        self._lanes: dict[str, _Lane] = {}
        self._key_bytes = 0
        #: Whether an open past MAX_LANES (or MAX_LANE_KEY_BYTES) was refused.
        self._full = False
        self._queue: deque[_Entry] = deque()
        self._held = 0
        self._bytes = 0
        self._max_held = max_held
        self._max_bytes = max_bytes

    @property
    def holding(self) -> int:
        """How many items are held now."""
        return self._held

    def feed(self, record: Any, item: Any, size: int = 0) -> list[Any]:
        """The items due after ``item`` (carrying ``record``) is read."""
        kind = type(record)
        lane: _Lane | None
        if kind is FrameRecord or (kind is EventRecord and record.event != ANALYZER_ERROR):
            lane = self._lanes.get(record.session)
            if lane is not None and not lane.lost and record.seq > lane.through:
                entry = _Entry(lane, record.seq, item, size)
                lane.held[record.seq] = entry
                self._queue.append(entry)
                self._held += 1
                self._bytes += size
                return self._bounded()
        elif kind is MessageRecord or kind is FindingRecord or kind is EventRecord:
            lane = self._lanes.get(record.session)
            if lane is not None:
                if kind is MessageRecord:
                    lane.cursor = record.frame
                target = lane.held.get(lane.cursor) if lane.cursor is not None else None
                if target is not None:
                    target.items.append(item)
                    target.size += size
                    self._held += 1
                    self._bytes += size
                    return self._bounded()
        # Anything else keeps its place: after what is held, or handed on now.
        if not self._queue:
            return [item]
        self._queue.append(_Entry(None, 0, item, size))
        self._held += 1
        self._bytes += size
        return self._bounded()

    def lane(self, obj: dict[str, Any]) -> tuple[list[Any], str | None]:
        """The items due after the (well-formed) lane record ``obj``, and why it was skipped."""
        session = obj["session"]
        lane = self._lanes.get(session)
        if "open" in obj:
            if lane is None:
                cost = len(session) + 64
                if len(self._lanes) >= MAX_LANES or self._key_bytes + cost > MAX_LANE_KEY_BYTES:
                    # The session is read as a one-lane one. Said once: a hostile
                    # trace of a million opens must not fill the skipped list.
                    if self._full:
                        return [], None
                    self._full = True
                    return [], f"more than {MAX_LANES} sessions are opened by lane records"
                self._lanes[session] = _Lane()
                self._key_bytes += cost
            return [], None
        if lane is None:
            return [], "a lane record of a session no lane record opened"
        if "input" in obj:
            lane.cursor = obj["input"]
            return _NOTHING, None
        if "through" in obj:
            through = obj["through"]
            if through < lane.through:
                return [], f"through {through} goes back from {lane.through}"
            lane.through = through
        else:
            lane.lost = True
        return self._due(), None

    def finish(self) -> list[Any]:
        """Everything still held, in order: the file has ended and no more will come."""
        out: list[Any] = []
        while self._queue:
            out.extend(self._pop())
        return out

    def _pop(self) -> list[Any]:
        entry = self._queue.popleft()
        lane = entry.lane
        if lane is not None and lane.held.get(entry.seq) is entry:
            del lane.held[entry.seq]
        self._held -= len(entry.items)
        self._bytes -= entry.size
        return entry.items

    def _due(self) -> list[Any]:
        """The items at the head of the queue no ``through`` is awaited for."""
        out: list[Any] = []
        queue = self._queue
        while queue:
            entry = queue[0]
            lane = entry.lane
            if lane is not None and not lane.lost and entry.seq > lane.through:
                break
            out.extend(self._pop())
        return out

    def _bounded(self) -> list[Any]:
        """What must be handed on now: the oldest held, while too much is held."""
        if self._held <= self._max_held and self._bytes <= self._max_bytes:
            return _NOTHING
        out: list[Any] = []
        while self._queue and (self._held > self._max_held or self._bytes > self._max_bytes):
            # Its late derived records follow wherever they are read.
            out.extend(self._pop())
            out.extend(self._due())
        return out
