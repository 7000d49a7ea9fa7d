"""Records put back in time order for a live display, holding each line a moment.

The HTTP analysis hands over an exchange's records when the exchange is
complete (the session a request belongs to is known from its response's
``Mcp-Session-Id``), so a request that took a second reaches the display
after the requests sent during that second. A display that prints what it
gets shows a later request first. ``TimeOrder`` holds each group of records
(a frame with its messages and findings, or an event) until it is ``hold``
seconds old, then releases the groups by their observation time. It holds at
most ``limit`` groups: past that the oldest go out at once, so memory stays
bounded whatever the traffic, and an exchange slower than ``hold`` is shown
where it arrived, as before.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from mcpsniff.core.model import EventRecord, FrameRecord, Record

#: Seconds a group waits for records observed before it.
HOLD = 1.0
#: Groups held at most.
LIMIT = 10_000


@dataclass(order=True)
class _Group:
    t: float
    arrival: int
    records: list[Record] = field(compare=False)


class TimeOrder:
    """Groups of records in, the same groups out by observation time (see the module)."""

    def __init__(self, hold: float = HOLD, limit: int = LIMIT) -> None:
        self.hold = hold
        self.limit = limit
        self._held: list[_Group] = []
        self._open: _Group | None = None
        self._arrivals = 0
        self._last_t = 0.0

    def __len__(self) -> int:
        return len(self._held) + (self._open is not None)

    def add(self, record: Record) -> None:
        """Take the next record; a frame or an event starts a group, the rest join it."""
        if isinstance(record, FrameRecord | EventRecord):
            self._close()
            self._last_t = record.t
            self._open = _Group(record.t, self._arrivals, [record])
            self._arrivals += 1
        elif self._open is not None:
            self._open.records.append(record)
        else:
            # A finding with no frame before it: it goes with the time last seen.
            self._open = _Group(self._last_t, self._arrivals, [record])
            self._arrivals += 1

    def due(self, now: float) -> list[Record]:
        """The records of every group at least ``hold`` seconds old at ``now``, oldest first."""
        self._close()
        out: list[Record] = []
        held = self._held
        while held and (held[0].t <= now - self.hold or len(held) > self.limit):
            out.extend(heapq.heappop(held).records)
        return out

    def drain(self) -> list[Record]:
        """Every record still held, oldest first (the capture ended)."""
        self._close()
        out: list[Record] = []
        while self._held:
            out.extend(heapq.heappop(self._held).records)
        return out

    def _close(self) -> None:
        if self._open is not None:
            heapq.heappush(self._held, self._open)
            self._open = None
