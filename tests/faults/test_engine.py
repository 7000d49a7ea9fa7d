"""faults/engine.py: which fault applies to which message, counted and drawn deterministically."""

from __future__ import annotations

import orjson
import pytest

from mcpsniff.faults.engine import FAULT_RECORD_VERSION, FaultEngine, fault_record, original_bytes
from mcpsniff.faults.spec import parse_faults


def line(obj: object) -> bytes:
    return orjson.dumps(obj)


CALL = line({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}})
LIST = line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
ANSWER = line({"jsonrpc": "2.0", "id": 1, "result": {"content": []}})


def test_a_response_matches_by_its_requests_method_and_tool() -> None:
    engine = FaultEngine(parse_faults(['drop when tool == "echo" and direction == s2c']))
    assert engine.judge(engine.read("c2s", CALL)) is None  # the request goes through
    answer = engine.read("s2c", ANSWER)
    assert (answer.kind, answer.method, answer.tool) == ("response", "tools/call", "echo")
    injection = engine.judge(answer)
    assert injection is not None and injection.fault.action == "drop"


def test_answers_apply_to_requests_only_and_tool_error_to_tools_call_only() -> None:
    engine = FaultEngine(parse_faults(["tool-error", "error -32603"]))
    first = engine.judge(engine.read("c2s", LIST))
    assert first is not None and first.fault.action == "error"  # tools/list: not tool-error
    call = engine.judge(engine.read("c2s", CALL))
    assert call is not None and call.fault.action == "tool-error"
    assert engine.judge(engine.read("s2c", ANSWER)) is None  # a response is never answered


def test_times_and_after() -> None:
    engine = FaultEngine(parse_faults(["duplicate when method == tools/list after 2 times 2"]))
    hits = [engine.judge(engine.read("c2s", LIST)) is not None for _ in range(6)]
    assert hits == [False, False, True, True, False, False]


def test_the_same_seed_gives_the_same_faults() -> None:
    def pattern(seed: int) -> list[bool]:
        engine = FaultEngine(parse_faults([f"drop when method == tools/list prob 0.5 seed {seed}"]))
        return [engine.judge(engine.read("c2s", LIST)) is not None for _ in range(64)]

    assert pattern(7) == pattern(7)
    assert pattern(7) != pattern(8)
    assert 16 < sum(pattern(7)) < 48


def test_a_delay_range_is_drawn_within_its_bounds() -> None:
    engine = FaultEngine(parse_faults(["delay 100ms..200ms prob 1 seed 3"]))
    delays = []
    for _ in range(50):
        injection = engine.judge(engine.read("c2s", LIST))
        assert injection is not None
        delays.append(injection.delay_ms)
    assert all(100 <= d <= 200 for d in delays) and len(set(delays)) > 40


def test_not_json_is_judged_as_unparseable() -> None:
    engine = FaultEngine(parse_faults(["corrupt pretty when kind == unparseable"]))
    assert engine.judge(engine.read("s2c", b"starting server...")) is not None
    assert engine.judge(engine.read("s2c", LIST)) is None


def test_the_fault_record() -> None:
    engine = FaultEngine(parse_faults(["error -32022 when method == tools/list prob 0.9 seed 1"]))
    injection = None
    while injection is None:
        injection = engine.judge(engine.read("c2s", LIST))
    data = fault_record(engine, injection, marks={"c2s": 1, "s2c": 1}, delivered=False)
    assert data["fault_version"] == FAULT_RECORD_VERSION
    assert data["action"] == "error" and data["code"] == -32022 and data["seed"] == 1
    assert (data["dir"], data["kind"], data["method"], data["id"]) == (
        "c2s",
        "request",
        "tools/list",
        2,
    )
    assert original_bytes(b"\xff", verbatim=True) == {"original_len": 1, "original_b64": "/w=="}
    hidden = original_bytes(b"secret", verbatim=False)
    assert "original" not in hidden and len(hidden["original_sha256"]) == 64


def test_requests_in_flight_are_bounded() -> None:
    engine = FaultEngine([])
    for number in range(20_000):
        engine.read("c2s", line({"jsonrpc": "2.0", "id": number, "method": "ping"}))
    assert len(engine._pending["c2s"]) == 10_000


def test_needles_let_blocks_that_cannot_match_pass_unread() -> None:
    engine = FaultEngine(parse_faults(['drop when tool == "echo" and direction == s2c']))
    assert engine.needles == (b'"echo"',)
    assert not engine.could_match(LIST + b"\n" + LIST, "c2s")
    assert engine.could_match(CALL, "c2s")
    engine.read("c2s", CALL)  # an echo call in flight: its answer must be read
    assert engine.could_match(ANSWER, "s2c")
    assert engine.judge(engine.read("s2c", ANSWER)) is not None
    assert not engine.could_match(ANSWER, "s2c")  # answered: nothing in flight


def test_needles_only_where_every_fault_names_a_method_or_tool() -> None:
    assert FaultEngine(parse_faults(["kill"])).needles is None
    assert FaultEngine(parse_faults(["drop when direction == s2c"])).needles is None
    either = FaultEngine(
        parse_faults(["drop when method == ping or tool == x", "drop when method == a"])
    )
    assert either.needles is not None and set(either.needles) == {b'"ping"', b'"x"', b'"a"'}
    assert FaultEngine(parse_faults(["drop when method == a or kind == request"])).needles is None


def test_an_escaped_method_name_is_still_read() -> None:
    engine = FaultEngine(parse_faults(["drop when method == tools/call"]))
    escaped = b'{"jsonrpc":"2.0","id":1,"method":"tools\\/call"}'
    assert engine.could_match(escaped, "c2s")
    assert engine.judge(engine.read("c2s", escaped)) is not None


@pytest.mark.parametrize(
    ("spec", "watched"),
    [
        ("drop", {"c2s", "s2c"}),
        ("drop when direction == c2s", {"c2s"}),
        ("drop when dir == server", {"s2c"}),
        ("drop when direction != c2s", {"s2c"}),
        ("drop when kind == request and direction == s2c", {"s2c"}),
        ("drop when direction == c2s or direction == s2c", {"c2s", "s2c"}),
        ("drop when direction == c2s and direction == s2c", set()),
        ("drop when not direction == c2s", {"c2s", "s2c"}),
        ("drop when error.code == -32601 and direction == s2c", {"s2c"}),
        # Names come from the request an answer answers, which goes the other way.
        ('drop when tool == "echo" and direction == s2c', {"c2s", "s2c"}),
        ("drop when method == ping and direction == c2s", {"c2s", "s2c"}),
        # Counting and free text: both, whatever the direction.
        ("drop when seq > 3 and direction == c2s", {"c2s", "s2c"}),
        ('drop when "x" and direction == c2s', {"c2s", "s2c"}),
        ("drop when not method == ping and direction == c2s", {"c2s", "s2c"}),
    ],
)
def test_watched_are_the_directions_a_fault_needs_to_see(spec: str, watched: set[str]) -> None:
    assert FaultEngine(parse_faults([spec])).watched == watched


def test_a_message_going_a_way_no_fault_watches_is_never_read() -> None:
    engine = FaultEngine(parse_faults(["drop when direction == c2s", "delay 1s when size > 1"]))
    assert engine.watched == {"c2s", "s2c"}
    only = FaultEngine(parse_faults(["drop when direction == c2s and kind == request"]))
    assert only.could_match(CALL, "c2s")
    assert not only.could_match(ANSWER, "s2c")
    # Whatever it holds: an answer of the server is never the fault's.
    assert not only.could_match(CALL, "s2c")


def test_watching_one_way_judges_as_watching_both() -> None:
    # The same messages, read or passed by could_match: the same injections.
    messages = [("c2s", CALL), ("s2c", ANSWER), ("s2c", CALL), ("c2s", LIST)] * 3
    specs = ["drop when direction == c2s and kind == request times 2", "delay 1s when dir == c2s"]
    fast, slow = FaultEngine(parse_faults(specs)), FaultEngine(parse_faults(specs))
    assert fast.watched == {"c2s"}
    slow.watched = frozenset({"c2s", "s2c"})
    got = []
    for engine in (fast, slow):
        out = []
        for direction, raw in messages:
            hit = (
                engine.judge(engine.read(direction, raw))
                if engine.could_match(raw, direction)
                else None
            )
            out.append(None if hit is None else (hit.index, hit.count, hit.message.kind))
        got.append(out)
    assert got[0] == got[1]
    # Two drops, then the delay for the other requests of the client; none for the server.
    indexes = [hit and hit[0] for hit in got[0]]
    assert indexes == [0, None, None, 0, 1, None, None, 1, 1, None, None, 1]


NOTHING = 'delay 1s when tool == "nothing-has-this-name"'


def test_inline_search_gives_the_one_needle_and_the_engines_own_dict_of_requests_in_flight() -> (
    None
):
    engine = FaultEngine(parse_faults([NOTHING]))
    needle, asked = engine.inline_search("s2c")
    assert needle == b'"nothing-has-this-name"'
    assert asked is engine.asked("s2c")  # kept up to date by the engine
    two = FaultEngine(parse_faults([NOTHING, 'drop when method == "x/y"']))
    assert two.inline_search("c2s") == (None, {})  # could_match's loop
    assert FaultEngine(parse_faults(["drop when direction == c2s"])).inline_search("c2s") == (
        None,
        {},
    )
    # A direction no fault watches: a backslash, and nothing in flight.
    assert FaultEngine(parse_faults(["drop when direction == c2s"])).inline_search("s2c") == (
        b"\\",
        {},
    )
    # What it clears, could_match clears too (the name, a backslash, an answer in flight not).
    for block in [b'{"id":1}', b'{"name":"nothing-has-this-name"}', b'{"a":"\\n"}', b"\\u0041"]:
        cleared = needle not in block and b"\\" not in block and not asked
        assert not cleared or not engine.could_match(block, "s2c")
        assert cleared == (block == b'{"id":1}')
