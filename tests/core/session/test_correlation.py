"""core/session/correlation.py: each reply pairs with the request (or bad input) it answers.

The first cases are side findings that used to be misattributed.
"""

from __future__ import annotations

import math
import random

from hypothesis import given
from hypothesis import strategies as st

from mcpsniff.core.model import MessageRecord
from mcpsniff.core.session.correlation import round_ms
from tests.conftest import Conversation, error, notification, request, result

INIT = request(
    0,
    "initialize",
    {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    },
)
INIT_RESULT = result(
    0,
    {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "serverInfo": {"name": "s", "version": "1"},
    },
)


def test_null_id_request_answered_with_a_null_id_echo_is_one_finding() -> None:
    convo = Conversation()
    convo.handshake()
    sent = convo.client(request(None, "ping"))
    convo.server(result(None, {}))
    convo.close()
    assert convo.rules() == ["MSG-ID-NOT-NULL"]
    (reply,) = [m for m in convo.messages if m.kind == "response" and m.id is None]
    assert reply.answers == sent[0].seq and reply.note == "null-id-echo"


def test_duplicate_ids_in_a_batch_pair_by_result_shape() -> None:
    convo = Conversation()
    convo.handshake("2025-03-26")
    batch = convo.client([request(1, "ping"), request(1, "tools/list")])
    convo.server([result(1, {"tools": []}), result(1, {})])
    convo.close()
    assert convo.rules() == ["MSG-ID-REUSE"]
    replies = [m for m in convo.messages if m.kind == "response" and m.answers == batch[0].seq]
    # the tools array answers tools/list (element 1), the empty result answers ping (element 0)
    assert [(m.index, m.request_index) for m in replies] == [(0, 1), (1, 0)]


def test_duplicate_ids_with_alike_results_pair_oldest_first() -> None:
    convo = Conversation()
    convo.handshake()
    first = convo.client(request(1, "ping"))
    second = convo.client(request(1, "ping"))
    convo.server(result(1, {}))
    convo.server(result(1, {}))
    replies = [m.answers for m in convo.messages if m.kind == "response" and m.id == 1]
    assert replies == [first[0].seq, second[0].seq]


def test_late_initialize_result_after_a_cancel_still_settles_the_handshake() -> None:
    convo = Conversation()
    convo.client(INIT)
    convo.client(notification("notifications/cancelled", {"requestId": 0}))
    convo.server(INIT_RESULT)
    convo.client(notification("notifications/initialized"))
    convo.client(request(1, "ping"))
    convo.server(result(1, {}))
    convo.close()
    assert convo.rules() == ["CANCEL-INITIALIZE"]
    assert convo.session.state.version == "2025-11-25"


def _response_for(convo: Conversation, frame_seq: int) -> MessageRecord:
    (msg,) = [m for m in convo.messages if m.answers == frame_seq]
    return msg


def test_response_is_paired_with_latency(convo: Conversation) -> None:
    convo.handshake()
    req = convo.client(request(1, "tools/list"))
    convo.t += 0.25
    convo.server(result(1, {"tools": []}))
    response = _response_for(convo, req[0].seq)
    assert response.kind == "response"
    assert 250.0 < response.latency_ms < 252.0
    assert not [f for f in convo.findings if f.severity == "error"]


def test_id_echoed_as_string(convo: Conversation) -> None:
    convo.handshake()
    req = convo.client(request(7, "tools/list"))
    convo.server(result("7", {"tools": []}))
    (finding,) = convo.find("JR-RESP-ID")
    assert finding.data["cause"] == "id-type"
    assert finding.data["request_id"] == 7 and finding.data["response_id"] == "7"
    assert _response_for(convo, req[0].seq).note == "id-type-mismatch"
    convo.close()
    assert convo.find("JR-RESP-REQUIRED") == []


def test_orphan_response(convo: Conversation) -> None:
    convo.handshake()
    convo.server(result(99, {}))
    (finding,) = convo.find("JR-RESP-ID")
    assert finding.data == {"cause": "unknown-id", "id": 99}
    assert "never sent a request" in finding.message


def test_duplicate_response(convo: Conversation) -> None:
    convo.handshake()
    req = convo.client(request(5, "ping"))
    first = convo.server(result(5, {}))
    convo.server(result(5, {}))
    (finding,) = convo.find("JR-RESP-ID")
    assert finding.data["cause"] == "duplicate-response"
    assert finding.data["first_response_seq"] == first[0].seq
    assert finding.seq[0] == req[0].seq


def test_ids_are_per_direction(convo: Conversation) -> None:
    convo.handshake(server_caps={"tools": {}})
    convo.client(request(1, "ping"))
    convo.server(request(1, "ping"))
    convo.client(result(1, {}))
    convo.server(result(1, {}))
    assert convo.find("JR-RESP-ID") == []
    assert convo.find("MSG-ID-REUSE") == []


def test_id_reuse_in_flight_and_after_completion_handshake_era(convo: Conversation) -> None:
    convo.handshake()
    convo.client(request(1, "ping"))
    convo.client(request(1, "ping"))
    convo.server(result(1, {}))
    convo.client(request(2, "ping"))
    convo.server(result(2, {}))
    convo.client(request(2, "ping"))
    reuse = convo.find("MSG-ID-REUSE")
    assert [f.data["in_flight"] for f in reuse] == [True, False]


def test_parse_error_reply_links_to_bad_frame(convo: Conversation) -> None:
    convo.handshake()
    bad = convo.client(b'{"jsonrpc":"2.0","id":4,"method":"ping",}\n')
    convo.server(error(None, -32700, "Parse error"))
    reply = _response_for(convo, bad[0].seq)
    assert reply.note == "parse-error-reply"
    (parse,) = convo.find("JR-PARSE")
    assert parse.data["cause"] == "trailing-comma"
    assert parse.data["sender"] == "client"


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
