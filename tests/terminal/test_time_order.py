"""The --show display's time order (terminal/time_order.py): groups released by their time."""

from __future__ import annotations

from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, MessageRecord
from mcpsniff.terminal.time_order import TimeOrder


def frame(seq: int, t: float) -> FrameRecord:
    return FrameRecord(seq, t, "s", "c2s", "http", b"{}")


def message(seq: int) -> MessageRecord:
    return MessageRecord(seq, "s", "c2s", "request", id=seq, has_id=True, method="ping")


def finding(seq: int) -> FindingRecord:
    return FindingRecord("RULE", "warning", "text", "s", [seq])


def test_a_later_group_waits_for_an_earlier_one_that_arrives_late() -> None:
    order = TimeOrder(hold=1.0)
    late = [frame(3, 10.0), message(3), finding(3)]
    for record in [frame(1, 10.2), message(1), EventRecord(2, 10.3, "s", "stderr", {})]:
        order.add(record)
    # Nothing is a second old yet: held.
    assert order.due(10.9) == []
    for record in late:
        order.add(record)
    out = order.due(11.25)
    # The earlier frame first, with its message and finding; the 10.3 event is too young.
    assert out[:3] == late and [type(r).__name__ for r in out] == [
        "FrameRecord",
        "MessageRecord",
        "FindingRecord",
        "FrameRecord",
        "MessageRecord",
    ]
    assert out[3].seq == 1 and len(order) == 1
    assert [r.seq for r in order.drain()] == [2]
    assert len(order) == 0


def test_equal_times_keep_their_arrival_order_and_the_limit_bounds_what_is_held() -> None:
    order = TimeOrder(hold=60.0, limit=3)
    for seq in range(1, 6):
        order.add(frame(seq, 5.0))
    # Five held, limit three: the two that came first go out now, in arrival order.
    assert [r.seq for r in order.due(5.0)] == [1, 2]
    assert [r.seq for r in order.drain()] == [3, 4, 5]


def test_a_finding_before_any_frame_is_its_own_group() -> None:
    order = TimeOrder(hold=0.0)
    order.add(finding(9))
    order.add(frame(1, 1.0))
    out = order.drain()
    assert isinstance(out[0], FindingRecord) and out[1].seq == 1
