"""core/fault_ledger.py: the frames a fault touched, and hostile fault records."""

from __future__ import annotations

from typing import Any

from mcpsniff.core.fault_ledger import FaultLedger
from mcpsniff.core.model import EventRecord, FrameRecord


def event(seq: int, **data: Any) -> EventRecord:
    return EventRecord(seq, 1.0, "s", "fault", data)


def frame(seq: int, direction: str, value: Any = None) -> FrameRecord:
    record = FrameRecord(seq, 1.0, "s", direction, "stdio", b"{}\n")
    record.value = value
    return record


def test_marks_number_the_next_frames_of_their_direction() -> None:
    ledger = FaultLedger()
    note = ledger.note(
        event(1, action="error", dir="c2s", kind="request", marks={"c2s": 1, "s2c": 2})
    )
    for seq, direction in ((2, "c2s"), (3, "c2s"), (4, "s2c"), (5, "s2c"), (6, "s2c")):
        ledger.frame(frame(seq, direction))
    assert ledger.touched == {2, 4, 5}
    assert note is not None and note.frames == [2, 4, 5]
    assert ledger.excuses("ANY", [9, 4]) and not ledger.excuses("ANY", [3, 6])


def test_rest_marks_every_later_frame() -> None:
    ledger = FaultLedger()
    ledger.note(event(1, action="disconnect", marks={"s2c": "rest"}))
    for seq in range(2, 6):
        ledger.frame(frame(seq, "s2c"))
    assert ledger.touched == {2, 3, 4, 5}


def test_hostile_fault_records_touch_nothing() -> None:
    ledger = FaultLedger()
    for marks in ({"c2s": -5}, {"c2s": 10**12}, {"c2s": "all"}, {"c2s": True}, [1], "rest", None):
        ledger.note(event(1, action=["x"], dir=3, marks=marks, method=7))
    ledger.frame(frame(2, "c2s"))
    assert ledger.touched == set()
    assert all(n.action == "['x']" and n.method is None for n in ledger.notes)


def test_cancellations_and_requests_are_watched_once_a_fault_happened() -> None:
    ledger = FaultLedger()
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}}
    ledger.frame(frame(2, "c2s", cancel))
    assert ledger.cancelled["c2s"] == {}  # no fault yet: nothing watched
    ledger.note(event(3, action="drop", dir="s2c", kind="response", marks={}))
    ledger.frame(frame(4, "c2s", cancel))
    ledger.frame(frame(5, "c2s", {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}))
    assert ledger.cancelled["c2s"] == {"4": 1.0}
    assert ledger.requested_after["c2s"] == [(5, "tools/list")]
