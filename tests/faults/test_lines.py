"""faults/lines.py: the line carrier, with an in-memory port recording what each side got."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from mcpsniff.faults.engine import FaultEngine
from mcpsniff.faults.lines import LONG_LINE, LineFaults, StreamPort
from mcpsniff.faults.spec import parse_faults


class Wire:
    """What each peer received, what the trace got, and the fault records."""

    def __init__(self) -> None:
        self.got: dict[str, list[bytes]] = {"c2s": [], "s2c": []}
        self.seen: list[tuple[str, bytes]] = []
        self.events: list[dict[str, Any]] = []
        self.closed: list[str] = []
        self.killed = 0

    async def write(self, direction: str, data: bytes) -> None:
        self.got[direction].append(data)

    def port(self) -> StreamPort:
        def kill() -> None:
            self.killed += 1

        return StreamPort(
            self.write,
            lambda d, b: self.seen.append((d, b)),
            self.events.append,
            self.closed.append,
            kill,
        )


def carrier(*specs: str) -> tuple[LineFaults, Wire]:
    wire = Wire()
    return LineFaults(FaultEngine(parse_faults(list(specs))), wire.port()), wire


def msg(id_: int, method: str | None = None) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id_}
    if method:
        body["method"] = method
    else:
        body["result"] = {}
    return orjson.dumps(body) + b"\n"


def test_untouched_lines_pass_in_one_piece_and_partial_lines_wait() -> None:
    async def go() -> Wire:
        faults, wire = carrier("drop when method == nothing")
        await faults.carry("c2s", msg(1, "ping") + msg(2, "ping")[:10])
        await faults.carry("c2s", msg(2, "ping")[10:])
        return wire

    wire = asyncio.run(go())
    assert wire.got["c2s"] == [msg(1, "ping"), msg(2, "ping")]
    assert b"".join(b for _, b in wire.seen) == msg(1, "ping") + msg(2, "ping")


def test_reorder_reverses_the_matching_answers_of_a_burst() -> None:
    async def go() -> Wire:
        faults, wire = carrier("reorder when direction == s2c")
        await faults.carry("s2c", msg(1) + msg(2) + msg(3))
        return wire

    wire = asyncio.run(go())
    assert b"".join(wire.got["s2c"]) == msg(3) + msg(2) + msg(1)
    (event,) = wire.events
    assert event["action"] == "reorder" and event["reordered_ids"] == [1, 2, 3]


def test_an_injected_answer_waits_for_a_long_line_to_end() -> None:
    async def go() -> Wire:
        faults, wire = carrier("error -32603 when method == tools/call")
        big = b'{"jsonrpc":"2.0","id":9,"result":{"text":"' + b"x" * (LONG_LINE + 10)
        await faults.carry("s2c", big)  # passes unjudged, unfinished
        answering = asyncio.create_task(faults.carry("c2s", msg(1, "tools/call")))
        await asyncio.sleep(0.05)
        assert not wire.got["s2c"][1:]  # the answer must not land inside the long line
        await faults.carry("s2c", b'"}}\n')
        await answering
        return wire

    wire = asyncio.run(go())
    assert wire.got["c2s"] == []  # the request never reached the server
    assert orjson.loads(wire.got["s2c"][-1])["error"]["code"] == -32603
    assert wire.got["s2c"][-2] == b'"}}\n'


def test_split_writes_pieces_and_the_trace_sees_one_frame() -> None:
    async def go() -> Wire:
        faults, wire = carrier("corrupt split")
        await faults.carry("s2c", msg(1))
        return wire

    wire = asyncio.run(go())
    assert len(wire.got["s2c"]) == 3 and b"".join(wire.got["s2c"]) == msg(1)
    assert wire.seen == [("s2c", msg(1))]
    assert wire.events[0]["marks"] == {"s2c": 1}


def test_disconnect_cuts_the_direction_and_kill_ends_the_server() -> None:
    async def go() -> Wire:
        faults, wire = carrier("disconnect when id == 2", "kill when id == 4")
        await faults.carry("c2s", msg(1, "ping") + msg(2, "ping") + msg(3, "ping"))
        await faults.carry("s2c", msg(4))
        return wire

    wire = asyncio.run(go())
    assert wire.closed == ["c2s"]
    assert wire.got["c2s"][0] == msg(1, "ping") and len(wire.got["c2s"]) == 2  # and half of id 2
    assert msg(3, "ping") not in wire.got["c2s"]
    assert [d for d, _ in wire.seen].count("c2s") == 3  # all three are in the trace
    assert wire.killed == 1 and wire.got["s2c"] == [msg(4)]
    assert [e["marks"] for e in wire.events] == [{"c2s": "rest"}, {"c2s": "rest"}]


def test_delayed_lines_are_overtaken_and_delivered_later() -> None:
    async def go() -> Wire:
        faults, wire = carrier("delay 50ms when id == 1")
        await faults.carry("s2c", msg(1) + msg(2))
        assert wire.got["s2c"] == [msg(2)]
        await faults.settle(1.0)
        return wire

    wire = asyncio.run(go())
    assert wire.got["s2c"] == [msg(2), msg(1)]
    assert wire.events[0]["delay_ms"] == 50


def test_a_hold_cut_short_is_still_recorded() -> None:
    async def go() -> Wire:
        faults, wire = carrier("delay 10s when id == 1")
        await faults.carry("s2c", msg(1))
        await faults.settle(0.05)
        await asyncio.sleep(0)
        return wire

    wire = asyncio.run(go())
    assert wire.got["s2c"] == []
    assert wire.seen == [("s2c", msg(1))]
    (event,) = wire.events
    assert (
        event["delivered"] is False and event["cut_short"] is True and event["marks"] == {"s2c": 1}
    )


def test_a_stray_carriage_return_stays_inside_its_line() -> None:
    async def go() -> Wire:
        faults, wire = carrier("drop when id == 1")
        await faults.carry("s2c", b'{"jsonrpc":"2.0","id":1,"result":{}}\r{"x":1}\n' + msg(2))
        return wire

    wire = asyncio.run(go())
    # Not JSON as one line, so nothing matches id 1: both lines pass whole.
    assert b"".join(wire.got["s2c"]) == b'{"jsonrpc":"2.0","id":1,"result":{}}\r{"x":1}\n' + msg(2)
    assert wire.events == []


def test_a_line_completed_by_a_chunk_without_the_name_is_still_judged() -> None:
    # The name a fault needs straddles two reads: the second alone holds none of it
    # and ends a line, yet the line it completes is judged whole (and dropped).
    line = msg(7, "tools/call")
    cut = line.index(b"tools/call") + 4

    async def go() -> Wire:
        faults, wire = carrier("drop when method == tools/call")
        await faults.carry("c2s", line[:cut])
        await faults.carry("c2s", line[cut:])
        await faults.carry("c2s", msg(8, "ping"))
        return wire

    wire = asyncio.run(go())
    assert wire.got["c2s"] == [msg(8, "ping")]
    assert [e["marks"] for e in wire.events] == [{"c2s": 1}]
    assert [b for _, b in wire.seen] == [line, msg(8, "ping")]


def test_lines_no_fault_can_match_are_recorded_but_not_written_once_cut() -> None:
    async def go() -> Wire:
        faults, wire = carrier("disconnect when method == tools/call")
        await faults.carry("c2s", msg(1, "ping") + msg(2, "tools/call"))
        await faults.carry("c2s", msg(3, "ping"))  # whole, and no fault can match it
        return wire

    wire = asyncio.run(go())
    assert wire.closed == ["c2s"]
    assert msg(3, "ping") not in b"".join(wire.got["c2s"])
    assert wire.seen[-1] == ("c2s", msg(3, "ping"))


def test_a_lane_is_clear_only_while_no_line_is_pending_and_a_search_can_decide() -> None:
    lines, _ = carrier('drop when tool == "echo"')
    lane = lines.lanes["c2s"]
    assert (lane.needle, lane.others, lane.clear) == (b'"echo"', (), True)
    assert lane.asked is lines.engine.asked("c2s")

    async def run() -> list[bool]:
        seen = []
        await lines.carry("c2s", msg(1, "ping")[:5])  # half a line waits
        seen.append(lane.clear)
        await lines.carry("c2s", msg(1, "ping")[5:])
        seen.append(lane.clear)
        await lines.carry("c2s", msg(2, "tools/list")[:-1])
        seen.append(lane.clear)
        await lines.end("c2s")  # the unterminated line went on
        seen.append(lane.clear)
        return seen

    assert asyncio.run(run()) == [False, True, False, True]
    # Without a name to look for, a byte search cannot decide: never clear.
    everything, _ = carrier("drop prob 0.5 seed 1")
    assert not everything.lanes["c2s"].clear and not everything.lanes["s2c"].clear
    # A direction no fault watches has nothing to search for: its needle is a
    # backslash, which a chunk searched for it never holds.
    one_way, _ = carrier("drop when direction == c2s")
    assert one_way.lanes["s2c"].clear and one_way.lanes["s2c"].needle == b"\\"
    assert not one_way.lanes["c2s"].clear
