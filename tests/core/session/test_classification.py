"""core/session/classification.py: each shortcut of the hot path gives what the plain code gives."""

from __future__ import annotations

import dataclasses

import pytest

from mcpsniff.core.model import FindingRecord, MessageRecord
from mcpsniff.core.state import Answered, Pending
from tests.conftest import Conversation, error, notification, request, result

# --------------------------------------------------------------------------- plain envelopes

#: Messages one step away from the plain envelope ``classification.message`` lets pass
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


def test_the_inline_latency_is_round_to_three_digits(convo: Conversation) -> None:
    # The usual reply's latency (round_ms inlined) against round() itself, on
    # gaps near thousandths' halves, below a microsecond, zero and huge.
    import random

    convo.handshake()
    rng = random.Random(3)
    gaps = [0.0, 5e-7, 0.0005, 0.0015, 2147.4836475, 2147.484, 3e6, 1e-300]
    gaps += [
        rng.randrange(0, 10**7) / 1e6 + rng.choice((0.0, 5e-7, 4.999e-7, 1e-9)) for _ in range(3000)
    ]
    for ident, gap in enumerate(gaps, 100):
        sent = convo.client(request(ident, "ping"))[0]
        convo.t += gap - 0.001  # the reply's frame comes ``gap`` seconds later
        frame, reply = convo.server(result(ident, {}))[:2]  # (a slow ping's finding after)
        assert reply.answers == sent.seq
        expected = round((frame.t - sent.t) * 1000.0, 3)
        assert repr(reply.latency_ms) == repr(expected), (gap, reply.latency_ms, expected)


# ------------------------------------------------------------------- records built slot by slot


def _all_fields(record: object) -> dict[str, object]:
    # Every field, compared or not: reading one that ``message`` forgot to set raises.
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
