"""core/session/batches.py: arrays of messages and the reply arrays that answer them."""

from __future__ import annotations

from tests.conftest import Conversation, request, result


def test_out_of_order_batch_reply_pairs_every_element(convo: Conversation) -> None:
    convo.handshake("2025-03-26")
    batch = convo.client([request(1, "ping"), request(2, "tools/list"), request(3, "ping")])
    convo.server([result(3, {}), result(1, {}), result(2, {"tools": []})])
    elements = [m for m in convo.messages if m.frame == batch[0].seq + 0 and m.index is not None]
    assert len(elements) == 3
    reply = [m for m in convo.messages if m.answers == batch[0].seq]
    assert sorted((m.id, m.request_index) for m in reply) == [(1, 0), (2, 1), (3, 2)]
    assert convo.findings == []


def test_batch_reply_missing_an_element(convo: Conversation) -> None:
    convo.handshake("2025-03-26")
    convo.client([request(1, "ping"), request(2, "ping")])
    convo.server([result(1, {})])
    convo.close()
    (finding,) = convo.find("JR-BATCH-RESP-COUNT")
    assert finding.data["missing"] == [2]
    assert finding.data["expected"] == 2 and finding.data["received"] == 1
    # The missing element was already reported; it is not reported twice.
    assert convo.find("JR-RESP-REQUIRED") == []


def test_batch_removed_after_2025_06_18(convo: Conversation) -> None:
    convo.handshake("2025-06-18")
    convo.client([request(1, "ping")])
    (finding,) = convo.find("MSG-BATCH-REMOVED")
    assert finding.severity == "error"
    assert finding.data["version"] == "2025-06-18"
