"""Side findings that used to be misattributed: each case pairs its messages correctly."""

from __future__ import annotations

from tests.conftest import Conversation, notification, request, result

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
