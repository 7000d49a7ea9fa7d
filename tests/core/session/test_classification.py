"""The check path's shortcuts give exactly what the plain code they replace gives."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpsniff.core import protocol
from mcpsniff.core.ids import IdHistory, coerced_keys, id_key, id_value
from mcpsniff.core.model import FindingRecord, MessageRecord
from mcpsniff.core.session.correlation import round_ms
from mcpsniff.core.state import Answered, Pending
from tests.conftest import Conversation, error, notification, request, result

# --------------------------------------------------------------------------- round_ms


def _same_float(a: float, b: float) -> bool:
    # repr tells -0.0 from 0.0, which the trace would show.
    return repr(a) == repr(b)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_round_ms_is_round_to_three_digits(value: float) -> None:
    assert _same_float(round_ms(value), round(value, 3))


@given(st.integers(min_value=-(10**9), max_value=10**9), st.integers(min_value=0, max_value=9))
def test_round_ms_near_halves(thousandths: int, extra: int) -> None:
    # Values that sit on or next to a rounding boundary: n.nnn5 and its neighbours.
    value = thousandths / 1000 + 0.0005 + extra * 1e-10
    for candidate in (value, math.nextafter(value, 0.0), math.nextafter(value, math.inf)):
        assert _same_float(round_ms(candidate), round(candidate, 3))


def test_round_ms_on_latencies_from_timestamps() -> None:
    rng = random.Random(7)
    for _ in range(200_000):
        start = 1_700_000_000.0 + rng.uniform(0, 10_000)
        latency = (start + rng.expovariate(200.0) - start) * 1000.0
        assert _same_float(round_ms(latency), round(latency, 3))
    for value in (0.0, -0.0, 0.0004, -0.0004, 0.0005, 2.675, 1e-300, 2.0**31 / 1000, 1e12):
        assert _same_float(round_ms(value), round(value, 3))


# --------------------------------------------------------------------------- IdHistory


@given(
    st.lists(
        st.one_of(
            st.integers(min_value=-5, max_value=60),
            st.text(max_size=2),
            st.floats(allow_nan=False, allow_infinity=False, min_value=-5, max_value=60),
            st.booleans(),
        ),
        max_size=80,
    )
)
def test_check_and_add_is_contains_then_add(ids: list[object]) -> None:
    fast, plain = IdHistory(), IdHistory()
    for value in ids:
        key = id_key(value)
        seen = key in plain
        plain.add(key)
        assert fast.check_and_add(key) is seen
    for value in range(-6, 62):
        assert (id_key(value) in fast) == (id_key(value) in plain)
    assert fast.interval_count == plain.interval_count


def test_integer_ids_are_their_own_key_and_stay_apart_from_other_types() -> None:
    assert id_key(7) == 7 and id_key(7.0) == 7
    keys = [id_key(v) for v in (1, "1", True, 1.5, None, [1], {"a": 1})]
    assert len(set(map(repr, keys))) == len(keys)
    assert len(set(keys)) == len(keys)  # as dict keys, too: True is not 1
    assert [id_value(k) for k in keys[:5]] == [1, "1", True, 1.5, None]
    assert coerced_keys("1") == [id_key(1)]
    assert coerced_keys(1) == [id_key("1")]


# --------------------------------------------------------------------------- method directions


def test_direction_table_matches_the_computed_directions() -> None:
    for method in protocol.KNOWN_METHODS:
        for version in (*protocol.VERSIONS, None, "1999-01-01"):
            assert protocol.direction_for(method, version) == protocol._direction_for(
                method, version
            )
    assert protocol.direction_for("no/such", protocol.V4) is None


# --------------------------------------------------------------------------- repeated tools/list


def _tools(const: object) -> dict[str, object]:
    schema = {
        "type": "object",
        "properties": {"flag": {"const": const}},
        "required": ["flag"],
    }
    return {"tools": [{"name": "t", "inputSchema": schema}]}


def test_repeated_tools_list_keeps_validating_with_the_listed_schema(convo: Conversation) -> None:
    convo.handshake()
    convo.client(request(1, "tools/list"))
    convo.server(result(1, _tools(True)))
    convo.client(request(2, "tools/call", {"name": "t", "arguments": {"flag": True}}))
    assert convo.find("TOOL-ARGS-SCHEMA") == []
    # Equal to the previous list for Python (1 == True), not for JSON Schema.
    convo.client(request(3, "tools/list"))
    convo.server(result(3, _tools(1)))
    convo.client(request(4, "tools/call", {"name": "t", "arguments": {"flag": True}}))
    assert len(convo.find("TOOL-ARGS-SCHEMA")) == 1
    # The same list again, byte for byte: the tools stay as they are.
    convo.client(request(5, "tools/list"))
    convo.server(result(5, _tools(1)))
    convo.client(request(6, "tools/call", {"name": "t", "arguments": {"flag": 1}}))
    assert len(convo.find("TOOL-ARGS-SCHEMA")) == 1


def test_repeated_tools_list_with_a_finding_reports_it_every_time(convo: Conversation) -> None:
    convo.handshake()
    bad = {"tools": [{"name": "bad name!", "inputSchema": {"type": "object"}}]}
    for id_ in (1, 2, 3):
        convo.client(request(id_, "tools/list"))
        convo.server(result(id_, bad))
    assert len(convo.find("TOOL-NAME-FORMAT")) == 3


def test_tools_list_under_a_new_version_is_checked_again() -> None:
    convo = Conversation()
    convo.handshake("2025-06-18")
    listed = {"tools": [{"name": "bad name!", "inputSchema": {"type": "object"}}]}
    convo.client(request(1, "tools/list"))
    convo.server(result(1, listed))
    assert convo.find("TOOL-NAME-FORMAT") == []  # a 2025-11-25 rule
    convo.session.state.version = "2025-11-25"
    convo.client(request(2, "tools/list"))
    convo.server(result(2, listed))
    assert len(convo.find("TOOL-NAME-FORMAT")) == 1


# --------------------------------------------------------------------------- plain envelopes

#: Messages one step away from the plain envelope ``Session._message`` lets pass
#: without the structural rules: each must still get its finding.
NEAR_PLAIN = [
    ("c2s", {"jsonrpc": "2.1", "id": 5, "method": "tools/call", "params": {}}, "JR-VERSION"),
    ("c2s", {"jsonrpc": "2.0", "id": 5.5, "method": "tools/call", "params": {}}, "MSG-ID-TYPE"),
    ("c2s", {"jsonrpc": "2.0", "id": True, "method": "tools/call", "params": {}}, "JR-ID-TYPE"),
    ("c2s", {"jsonrpc": "2.0", "id": 5, "method": "rpc.x", "params": {}}, "JR-METHOD-RPC-RESERVED"),
    (
        "c2s",
        {"jsonrpc": "2.0", "id": 5, "method": "notifications/x", "params": {}},
        "MSG-NOTIF-NO-ID",
    ),
    (
        "c2s",
        {"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"_meta": {"progressToken": True}}},
        "MSG-META-PROGRESS",
    ),
    ("c2s", {"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {}, "Id": 1}, "JR-MEMBER-CASE"),
    (
        "c2s",
        {"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"_meta": {"progressToken": [1]}}},
        "MSG-META-PROGRESS",
    ),
    (
        "c2s",
        {"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"_meta": {"progress token": 1}}},
        "MSG-META-KEYS",
    ),
    (
        "c2s",
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "ping",
            "params": {"_meta": {"progressToken": 1, "bad key": 1}},
        },
        "MSG-META-KEYS",
    ),
    ("c2s", {"jsonrpc": "2.0", "method": "rpc.x"}, "JR-METHOD-RPC-RESERVED"),
    # A request without params (plain too), one step away.
    ("c2s", {"jsonrpc": "2.1", "id": 5, "method": "ping"}, "JR-VERSION"),
    ("c2s", {"jsonrpc": "2.0", "id": None, "method": "ping"}, "MSG-ID-NOT-NULL"),
    ("c2s", {"jsonrpc": "2.0", "id": 5, "method": "rpc.ping"}, "JR-METHOD-RPC-RESERVED"),
    ("c2s", {"jsonrpc": "2.0", "id": 5, "method": "notifications/x"}, "MSG-NOTIF-NO-ID"),
    ("c2s", {"JSONRPC": "2.0", "id": 5, "method": "ping"}, "JR-MEMBER-CASE"),
    ("c2s", {"id": 5, "method": "ping", "Params": {}}, "JR-MEMBER-CASE"),
    (
        "c2s",
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": [1]},
        "MSG-PARAMS-OBJECT",
    ),
    ("c2s", {"jsonrpc": 2.0, "method": "notifications/initialized", "params": {}}, "JR-VERSION"),
    ("s2c", {"jsonrpc": "2.0", "id": 1, "result": []}, "MSG-RESULT-OBJECT"),
    ("s2c", {"jsonrpc": "2.0 ", "id": 1, "result": {}}, "JR-VERSION"),
    ("s2c", {"jsonrpc": "2.0", "id": 1, "result": {}, "Error": None}, "JR-MEMBER-CASE"),
]


@pytest.mark.parametrize(("direction", "message", "rule"), NEAR_PLAIN)
def test_an_envelope_that_is_not_plain_gets_its_structural_finding(
    convo: Conversation, direction: str, message: dict[str, object], rule: str
) -> None:
    convo.handshake()
    if direction == "s2c":
        convo.client(request(1, "ping"))
        out = convo.server(message)
    else:
        out = convo.client(message)
    assert rule in {r.rule for r in out if isinstance(r, FindingRecord)}


def test_plain_envelopes_get_no_finding(convo: Conversation) -> None:
    convo.handshake()
    convo.client(request(1, "tools/call", {"name": "t", "arguments": {}}))
    convo.client(notification("notifications/cancelled", {"requestId": 1}))
    for ident, token in ((7, 70), (8, "t8")):
        call = {"name": "t", "arguments": {}, "_meta": {"progressToken": token}}
        convo.client(request(ident, "tools/call", call))
        convo.client(notification("notifications/cancelled", {"requestId": ident}))
    convo.client(request(2, "ping", {}))
    convo.server(result(2, {}))
    convo.client({"jsonrpc": "2.0", "id": "3", "method": "tools/list"})
    convo.server(result("3", {"tools": []}))
    assert [r for r in convo.records if isinstance(r, FindingRecord)] == []


# --------------------------------------------------------------------------- inline pairing


def _replies(out: list[object]) -> list[tuple[object, ...]]:
    return [
        (r.note, r.answers, r.latency_ms)
        for r in out
        if isinstance(r, MessageRecord) and r.kind in ("response", "error")
    ]


def test_only_the_usual_reply_is_paired_inline(convo: Conversation) -> None:
    # The usual reply: paired, with its latency.
    convo.handshake()
    seq = convo.client(request(11, "ping"))[0].seq
    assert _replies(convo.server(result(11, {}))) == [(None, seq, 1.0)]
    # A reply to a cancelled request: the late answer the full path recognises.
    seq = convo.client(request(7, "ping"))[0].seq
    convo.client(notification("notifications/cancelled", {"requestId": 7}))
    assert _replies(convo.server(result(7, {}))) == [("late-after-cancel", seq, None)]
    # A -32700 to a request that parsed: paired, and judged.
    seq = convo.client(request(8, "ping"))[0].seq
    out = convo.server(error(8, -32700))
    assert _replies(out) == [(None, seq, 1.0)]
    assert [r.rule for r in out if isinstance(r, FindingRecord)] == ["JR-ERROR-SEMANTICS"]
    # Two requests in flight under one id: the result's shape picks tools/list.
    convo.client(request(9, "ping"))
    listed = convo.client(request(9, "tools/list"))[0].seq
    assert _replies(convo.server(result(9, {"tools": []}))) == [("ambiguous-id", listed, 1.0)]
    # An id echoed as a string: the full path pairs it and reports it.
    seq = convo.client(request(10, "ping"))[0].seq
    out = convo.server(result("10", {}))
    assert _replies(out) == [("id-type-mismatch", seq, 1.0)]
    assert [r.rule for r in out if isinstance(r, FindingRecord)] == ["JR-RESP-ID"]


# ------------------------------------------------------------------- records built slot by slot


def _all_fields(record: object) -> dict[str, object]:
    # Every field, compared or not: reading one that _message forgot to set raises.
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}  # type: ignore[arg-type]


def test_message_pending_and_answered_records_have_every_field(convo: Conversation) -> None:
    convo.handshake()
    params = {"name": "t", "arguments": {"a": 1}, "_meta": {"progressToken": 5}}
    [frame, msg] = convo.client(request(4, "tools/call", params))
    state = convo.session.state
    pending = state.pending["c2s"][4]
    assert _all_fields(msg) == _all_fields(
        MessageRecord(
            frame.seq,
            "test",
            "c2s",
            "request",
            None,
            4,
            True,
            "tools/call",
            target="t",
            obj=frame.value,
            params=params,
            source=frame,
            sent_at=frame.t,
            key=4,
        )
    )
    assert _all_fields(pending) == _all_fields(
        Pending(frame.seq, None, 4, 4, "tools/call", frame.t, params, 5, fingerprint=frame.raw)
    )
    [reply_frame, reply] = convo.server(result(4, {"content": []}))
    assert _all_fields(reply) == _all_fields(
        MessageRecord(
            reply_frame.seq,
            "test",
            "s2c",
            "response",
            None,
            4,
            True,
            answers=frame.seq,
            latency_ms=1.0,
            obj=reply_frame.value,
            source=reply_frame,
            sent_at=reply_frame.t,
            request=pending,
        )
    )
    assert _all_fields(state.answered["c2s"][4]) == _all_fields(
        Answered(frame.seq, None, "tools/call", reply_frame.seq, False, frame.raw)
    )
