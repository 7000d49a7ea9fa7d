"""rules/replies.py: the receiver's reply to bad input is judged against what JSON-RPC asks."""

from __future__ import annotations

from typing import Any

import pytest

from mcpsniff.core.rules import replies
from tests.core.rules.dsl import Proof, assert_proof, c, end, play, req, s

V2 = "2025-03-26"
BAD_JSON = b'{"jsonrpc": "2.0", "id": 1, "method": "ping",}\n'
NOT_A_REQUEST = {"jsonrpc": "2.0", "method": 1, "params": "bar"}


def failure(id_: Any, code: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": "x"}}


PROOFS = [
    Proof(
        "JR-BATCH-EMPTY",
        fire=[c([]), s([failure(None, -32600)])],
        miss=[c([]), s(failure(None, -32600))],
        version=V2,
    ),
    Proof(
        "JR-RESP-ID-NULL",
        fire=[c(BAD_JSON), s(failure(1, -32700))],
        miss=[c(BAD_JSON), s(failure(None, -32700))],
    ),
    Proof(
        "JR-ERROR-SEMANTICS",
        fire=[c(NOT_A_REQUEST), s(failure(None, -32700))],
        miss=[c(NOT_A_REQUEST), s(failure(None, -32600))],
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def test_every_replies_rule_is_proven() -> None:
    # the two batch-reply rules are proven in test_utilities.py
    proven = {p.rule for p in PROOFS} | {"JR-BATCH-BAD-JSON", "JR-BATCH-ELEMENT"}
    assert proven == set(replies.RULES)


def _one(steps: list, rule: str, version: str = "2025-11-25") -> Any:
    (finding,) = play(Proof("-", [], [], version=version), steps).find(rule)
    return finding


def test_empty_batch_answered_with_the_wrong_code() -> None:
    finding = _one([c([]), s(failure(None, -32700))], "JR-BATCH-EMPTY", V2)
    assert finding.data["cause"] == "wrong-code" and finding.data["code"] == -32700


def test_empty_batch_answered_with_an_empty_array() -> None:
    finding = _one([c([]), s([])], "JR-BATCH-EMPTY", V2)
    assert finding.data["cause"] == "empty-reply"


def test_the_empty_batch_itself_is_an_invalid_request_and_its_right_reply_is_linked() -> None:
    convo = play(Proof("-", [], [], version=V2), [c([]), s(failure(None, -32600)), end()])
    assert convo.rules() == ["JR-TOPLEVEL"]
    assert convo.findings[0].data["cause"] == "empty-batch"
    (reply,) = [m for m in convo.messages if m.kind == "error"]
    assert reply.answers == convo.findings[0].seq[0] and reply.note == "invalid-request-reply"


def test_invalid_json_answered_with_invalid_request_breaks_jr_parse() -> None:
    convo = play(Proof("-", [], []), [c(BAD_JSON), s(failure(None, -32600))])
    causes = [f.data["cause"] for f in convo.find("JR-PARSE")]
    assert causes == ["trailing-comma", "reply-code"]


def test_a_parse_error_for_a_request_that_parsed() -> None:
    finding = _one([c(req(4, "ping")), s(failure(4, -32700))], "JR-ERROR-SEMANTICS")
    assert "this request parsed" in finding.message


def test_a_reply_with_an_id_to_unreadable_input_is_not_an_orphan() -> None:
    convo = play(Proof("-", [], []), [c(BAD_JSON), s(failure(1, -32700))])
    assert "JR-RESP-ID" not in convo.rules()
    (reply,) = [m for m in convo.messages if m.kind == "error"]
    assert reply.answers == convo.find("JR-PARSE")[0].seq[0]


def test_each_bad_frame_gets_its_own_reply_in_order() -> None:
    convo = play(
        Proof("-", [], []),
        [c(BAD_JSON), c(NOT_A_REQUEST), s(failure(None, -32700)), s(failure(None, -32600))],
    )
    assert "JR-ERROR-SEMANTICS" not in convo.rules()
    frames = [
        m.frame
        for m in convo.messages
        if m.direction == "c2s" and m.kind in ("unparseable", "invalid")
    ]
    assert [m.answers for m in convo.messages if m.kind == "error"] == frames
