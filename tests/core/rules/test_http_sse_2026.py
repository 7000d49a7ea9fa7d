"""rules/http_sse_2026.py: a 2026-07-28 request's SSE stream, fired and near-missed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.rules.dsl import (
    ACCEPT_BOTH,
    Proof,
    Step,
    assert_proof,
    body,
    err,
    http,
    http_response,
    note,
    play,
)
from tests.core.rules.test_http_2026 import V5, complete, v5

STREAM = "text/event-stream"
CALL = {"name": "t", "arguments": {}}


def streamed(
    request: dict[str, Any], events: list[dict[str, Any]], buffering: str | None = "no"
) -> list[Step]:
    """A POST answered with an SSE stream carrying ``events``, then the end of the exchange."""
    headers = {"content_type": STREAM}
    if buffering is not None:
        headers["x_accel_buffering"] = buffering
    method = request["method"]
    named = {"mcp_name": request["params"]["name"]} if "name" in request["params"] else {}
    steps: list[Step] = [
        http(1, "POST", accept=ACCEPT_BOTH, mcp_protocol_version=V5, mcp_method=method, **named),
        body(1, request),
        http_response(1, 200, **headers),
    ]
    steps += [body(1, event, "s2c") for event in events]
    steps.append(("event", ("http-end", {"exchange": 1, "outcome": "complete", "body_bytes": 1})))
    return steps


def progress(token: Any) -> dict[str, Any]:
    return note("notifications/progress", {"progressToken": token, "progress": 1})


TOKEN = v5(1, "tools/call", CALL)
TOKEN["params"]["_meta"]["progressToken"] = "p1"
DONE = complete(1, {"content": []})

PROOFS = [
    Proof(
        "MOD-HTTP-SSE",
        fire=streamed(TOKEN, [progress("other"), DONE]),
        miss=streamed(TOKEN, [progress("p1"), DONE]),
        version=None,
        transport="http",
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def run(*steps: Step) -> Any:
    return play(Proof("-", [], [], version=None, transport="http"), list(steps))


def test_the_final_response_ends_the_stream() -> None:
    convo = run(*streamed(TOKEN, [DONE, progress("p1")]))
    (finding,) = convo.find("MOD-HTTP-SSE")
    assert finding.severity == "warning" and "after its final response" in finding.message


def test_an_error_is_a_final_response_too() -> None:
    convo = run(*streamed(TOKEN, [err(1, -32603), progress("p1")]))
    assert len(convo.find("MOD-HTTP-SSE")) == 1


@pytest.mark.parametrize("buffering", [None, "yes"])
def test_sse_responses_ask_proxies_not_to_buffer(buffering: str | None) -> None:
    convo = run(*streamed(TOKEN, [DONE], buffering=buffering))
    (finding,) = convo.find("MOD-HTTP-SSE")
    assert "X-Accel-Buffering: no" in finding.message and finding.severity == "warning"


def test_a_listen_stream_is_not_judged_here() -> None:
    listen = v5(1, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    ack = note(
        "notifications/subscriptions/acknowledged",
        {"_meta": {"io.modelcontextprotocol/subscriptionId": 1}},
    )
    convo = run(*streamed(listen, [ack, complete(1), ack]))
    assert convo.find("MOD-HTTP-SSE") == []
