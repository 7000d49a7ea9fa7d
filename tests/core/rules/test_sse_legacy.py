"""rules/sse_legacy.py: the legacy HTTP+SSE transport's two endpoints, fired and near-missed."""

from __future__ import annotations

import pytest

from tests.core.rules.dsl import (
    STREAM,
    Proof,
    assert_proof,
    body,
    http,
    http_response,
    play,
    req,
    sse,
)

V1 = "2024-11-05"


def stream(endpoint: str = "/message?sessionId=a") -> list:
    return [
        http(1, "GET", "/sse", "legacy-sse", accept=STREAM),
        http_response(1, 200, content_type=STREAM),
        sse(1, event="endpoint", endpoint=endpoint),
    ]


def post(number: int, path: str, status: int = 202) -> list:
    return [
        http(number, "POST", path, "legacy-sse"),
        body(number, req(number, "ping")),
        http_response(number, status),
    ]


def proof(rule: str, fire: list, miss: list) -> Proof:
    return Proof(rule, fire, miss, version=V1, transport="http")


PROOFS = [
    proof(
        "SSE-POST-TARGET",
        fire=[*stream(), *post(2, "/messages?sessionId=a")],
        miss=[*stream(), *post(2, "/message?sessionId=a")],
    ),
    proof(
        "SSE-TWO-ENDPOINTS",
        fire=[*stream(), *post(2, "/message?sessionId=a", 405)],
        miss=[*stream(), *post(2, "/message?sessionId=a", 202)],
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def test_an_absolute_or_relative_endpoint_names_the_same_target() -> None:
    absolute = play(
        proof("-", [], []),
        [*stream("http://127.0.0.1:9/message?sessionId=a"), *post(2, "/message?sessionId=a")],
    )
    relative = play(
        proof("-", [], []), [*stream("message?sessionId=a"), *post(2, "/message?sessionId=a")]
    )
    assert absolute.find("SSE-POST-TARGET") == [] and relative.find("SSE-POST-TARGET") == []


def test_a_404_after_the_stream_closed_is_a_finished_session() -> None:
    ended = [("event", ("http-end", {"exchange": 1, "outcome": "complete"}))]
    convo = play(proof("-", [], []), [*stream(), *ended, *post(2, "/message?sessionId=a", 404)])
    assert convo.find("SSE-TWO-ENDPOINTS") == []


def test_hostile_event_data_is_ignored_not_an_analyzer_error() -> None:
    hostile = [
        ("event", ("sse-event", {"exchange": [], "event": "endpoint", "endpoint": "/m"})),
        ("event", ("sse-event", {"exchange": 1, "event": "endpoint", "endpoint": ["x"]})),
        ("event", ("sse-event", {"exchange": 1, "event": "endpoint", "endpoint": "http://[::1"})),
        *post(2, "/m" * 5000, 404),
    ]
    convo = play(proof("-", [], []), [*stream(), *hostile])
    assert [r for r in convo.records if getattr(r, "event", "") == "analyzer-error"] == []
    (finding,) = convo.find("SSE-POST-TARGET")
    assert len(finding.message) < 600
