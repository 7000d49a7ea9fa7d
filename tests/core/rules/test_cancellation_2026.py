"""rules/cancellation_2026.py: 2026-07-28 cancellation on Streamable HTTP and on stdio."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.rules.dsl import Proof, Step, assert_proof, c, note, play, s, wait
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


PROOFS = [
    Proof(
        "MOD-CANCEL",
        fire=over_http(*post(2, CANCEL, mcp_method="notifications/cancelled")),
        miss=over_http(*post(2, v5(2, "tools/list"))),
        version=None,
        transport="http",
    ),
    Proof("STDIO-V5-CANCEL", fire=on_stdio(5.0), miss=on_stdio(0.2), version=None),
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


def test_a_cancellation_before_2026_on_stdio_allows_any_late_answer() -> None:
    steps = [
        c({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": CALL}),
        c(CANCEL),
        wait(10),
        s({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}),
    ]
    convo = play(Proof("-", [], []), steps)
    assert not convo.find("STDIO-V5-CANCEL")
