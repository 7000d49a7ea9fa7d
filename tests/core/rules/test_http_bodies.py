"""rules/http_bodies.py: what may travel in which HTTP body or stream, fired and near-missed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.rules.dsl import (
    ACCEPT_BOTH,
    Proof,
    assert_cause,
    assert_proof,
    body,
    http,
    http_response,
    note,
    play,
    req,
    res,
)

V2, V4, V5 = "2025-03-26", "2025-11-25", "2026-07-28"
JSON = "application/json"
STREAM = "text/event-stream"
S2C = "s2c"
V5_META = {
    "io.modelcontextprotocol/protocolVersion": V5,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
}


def post(number: int, payload: Any, version: str = V4, **headers: str) -> list:
    headers.setdefault("accept", ACCEPT_BOTH)
    headers.setdefault("mcp_protocol_version", version)
    return [http(number, "POST", **headers), body(number, payload)]


def get_stream(number: int, **headers: str) -> Any:
    return http(number, "GET", accept=STREAM, mcp_protocol_version=V4, **headers)


def proof(rule: str, fire: list, miss: list, **kw: Any) -> Proof:
    kw.setdefault("transport", "http")
    return Proof(rule, fire, miss, **kw)


PROOFS = [
    proof(
        "HTTP-POST-BODY",
        # A 2025-11-25 POST carrying a batch (MSG-BATCH-REMOVED is its root).
        fire=post(1, [req(1, "ping"), req(2, "ping")]),
        miss=post(1, req(1, "ping")),
    ),
    proof(
        "MOD-HTTP-POST-BODY",
        # A 2026-07-28 client POSTing a response.
        fire=[
            *post(1, req(1, "tools/list", {"_meta": V5_META}), V5, mcp_method="tools/list"),
            *post(2, res(9, {}), V5),
        ],
        miss=[
            *post(1, req(1, "tools/list", {"_meta": V5_META}), V5, mcp_method="tools/list"),
            *post(2, note("notifications/cancelled", {"requestId": 1}), V5),
        ],
        version=None,
    ),
    proof(
        "HTTP-JSON-BODY",
        # The JSON reply to a POSTed request is an array.
        fire=[
            *post(1, req(1, "ping")),
            http_response(1, 200, content_type=JSON),
            body(1, [res(1, {})], S2C, status=200),
        ],
        miss=[
            *post(1, req(1, "ping")),
            http_response(1, 200, content_type=JSON),
            body(1, res(1, {}), S2C, status=200),
        ],
    ),
    proof(
        "HTTP-GET-NO-RESPONSES",
        # The response to a POSTed ping comes on the GET stream.
        fire=[
            get_stream(1),
            http_response(1, 200, content_type=STREAM),
            *post(2, req(1, "ping")),
            http_response(2, 202),
            body(1, res(1, {}), S2C, sse_index=0),
        ],
        miss=[
            get_stream(1),
            http_response(1, 200, content_type=STREAM),
            *post(2, req(1, "ping")),
            http_response(2, 200, content_type=STREAM),
            body(2, res(1, {}), S2C, sse_index=0),
        ],
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def test_a_batch_post_is_linked_to_its_root_finding() -> None:
    convo = play(proof("-", [], []), post(1, [req(1, "ping"), req(2, "ping")]))
    (finding,) = convo.find("HTTP-POST-BODY")
    assert finding.data["caused_by"]["rule"] == "MSG-BATCH-REMOVED"
    assert convo.find("MSG-BATCH-REMOVED")


def test_a_2025_03_26_batch_post_and_its_array_reply_are_fine() -> None:
    convo = play(
        proof("-", [], [], version=V2),
        [
            *post(1, [req(1, "ping"), req(2, "ping")], V2),
            http_response(1, 200, content_type=JSON),
            body(1, [res(1, {}), res(2, {})], S2C, status=200),
        ],
    )
    assert convo.find("HTTP-POST-BODY") == [] and convo.find("HTTP-JSON-BODY") == []


def test_a_json_reply_carrying_a_notification_or_another_posts_answer() -> None:
    notified = play(
        proof("-", [], []),
        [
            *post(1, req(1, "ping")),
            http_response(1, 200, content_type=JSON),
            body(1, note("notifications/message", {"level": "info", "data": 1}), S2C, status=200),
        ],
    )
    assert [f.data["cause"] for f in notified.find("HTTP-JSON-BODY")] == ["not-a-response"]
    crossed = play(
        proof("-", [], []),
        [
            *post(1, req(1, "ping")),
            *post(2, req(2, "ping")),
            http_response(2, 200, content_type=JSON),
            body(2, res(1, {}), S2C, status=200),
        ],
    )
    assert [f.data["cause"] for f in crossed.find("HTTP-JSON-BODY")] == ["other-request"]


def test_a_resumed_get_stream_may_carry_responses() -> None:
    convo = play(
        proof("-", [], []),
        [
            *post(1, req(1, "ping")),
            http_response(1, 200, content_type=STREAM),
            get_stream(2, last_event_id="e1"),
            http_response(2, 200, content_type=STREAM),
            body(2, res(1, {}), S2C, sse_index=0),
        ],
    )
    assert convo.find("HTTP-GET-NO-RESPONSES") == []


def _listing(id_: int) -> dict[str, Any]:
    return req(id_, "tools/list", {"_meta": V5_META})


#: Causes the descriptions name beyond the one each proof fires: (proof, message fragment).
CAUSES = [
    (
        proof(
            "MOD-HTTP-POST-BODY",
            # A 2026-07-28 client POSTing a batch.
            fire=post(1, [_listing(1), _listing(2)], V5, mcp_method="tools/list"),
            miss=post(1, _listing(1), V5, mcp_method="tools/list"),
            version=None,
        ),
        "POSTed a JSON array; in 2026-07-28",
    ),
    (
        proof(
            "HTTP-POST-BODY",
            # A 2025-03-26 batch mixing a request and a response (MSG-BATCH-V2-SHAPE's root).
            fire=post(1, [req(1, "ping"), res(9, {})], V2),
            miss=post(1, [req(1, "ping"), req(2, "ping")], V2),
            version=V2,
        ),
        "a batch mixing requests or notifications with responses",
    ),
]


@pytest.mark.parametrize(("p", "fragment"), CAUSES, ids=[f for _, f in CAUSES])
def test_each_cause_the_description_names_fires(p: Proof, fragment: str) -> None:
    assert_cause(p, fragment)
