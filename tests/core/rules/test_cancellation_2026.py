"""rules/cancellation_2026.py: 2026-07-28 cancellation on Streamable HTTP and on stdio."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.rules.dsl import Proof, Step, assert_proof, c, note, play, req, res, s, wait
from tests.core.rules.test_http_2026 import complete, post, v5

CALL = {"name": "slow", "arguments": {}}
CANCEL = note("notifications/cancelled", {"requestId": 1, "reason": "user"})
ANSWER = complete(1, {"content": [{"type": "text", "text": "done"}]})


def over_http(*extra: Step) -> list[Step]:
    """A tools/call POSTed, then something else on a second POST."""
    return [*post(1, v5(1, "tools/call", CALL)), *extra]


def on_stdio(late: float) -> list[Step]:
    """A tools/call cancelled on stdio, answered ``late`` seconds after the cancellation."""
    return [c(v5(1, "tools/call", CALL)), c(CANCEL), wait(late), s(ANSWER)]


def legacy(late: float) -> list[Step]:
    """A 2025-11-25 tools/call cancelled, answered ``late`` seconds after the cancellation."""
    return [
        c(req(5, "tools/call", CALL)),
        c(note("notifications/cancelled", {"requestId": 5})),
        wait(late),
        s(res(5, {"content": []})),
    ]


PROOFS = [
    Proof(
        "MOD-CANCEL",
        fire=over_http(*post(2, CANCEL, mcp_method="notifications/cancelled")),
        miss=over_http(*post(2, v5(2, "tools/list"))),
        version=None,
        transport="http",
    ),
    Proof("STDIO-V5-CANCEL", fire=on_stdio(5.0), miss=on_stdio(0.2), version=None),
    Proof("CANCEL-NO-RESPONSE", fire=legacy(5.0), miss=legacy(0.2)),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def findings(steps: list[Step], **kw: Any) -> list[Any]:
    return play(Proof("-", [], [], version=None, **kw), steps).findings


def test_the_late_answer_names_the_cancellation_and_the_delay() -> None:
    (finding,) = [f for f in findings(on_stdio(3.5)) if f.rule == "STDIO-V5-CANCEL"]
    assert finding.severity == "error" and "3.5 s after" in finding.message
    assert finding.data["late_s"] == pytest.approx(3.5, abs=0.01)
    assert finding.seq[0] < finding.seq[1]


def test_cancelling_over_http_is_a_notice() -> None:
    steps = over_http(*post(2, CANCEL, mcp_method="notifications/cancelled"))
    (finding,) = [f for f in findings(steps, transport="http") if f.rule == "MOD-CANCEL"]
    assert finding.severity == "info" and "closing its response stream" in finding.message


def test_a_late_answer_before_2026_is_a_notice_only() -> None:
    convo = play(Proof("-", [], []), legacy(10))
    assert not convo.find("STDIO-V5-CANCEL")
    (finding,) = convo.find("CANCEL-NO-RESPONSE")
    assert finding.severity == "info" and "the server answered request 5" in finding.message


def test_a_server_s_own_cancelled_request_answered_late_by_the_client() -> None:
    steps = [
        s(req(7, "roots/list")),
        s(note("notifications/cancelled", {"requestId": 7})),
        wait(3),
        c(res(7, {"roots": []})),
    ]
    (finding,) = play(Proof("-", [], [], client_caps={"roots": {}}), steps).find(
        "CANCEL-NO-RESPONSE"
    )
    assert "the client answered" in finding.message and "after the server" in finding.message
