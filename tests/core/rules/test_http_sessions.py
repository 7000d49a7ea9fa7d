"""rules/http_sessions.py: session ids a server hands out, 403 scope challenges."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.rules.dsl import Proof, Step, assert_proof, http_response, play, req
from tests.core.rules.test_http import JSON, V4, post

SECURE = "0f8e3c6a-5b1d-4c7e-9a2f-6d4b8e1c3a5f"
INIT = req(
    1,
    "initialize",
    {"protocolVersion": V4, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
)
SCOPED = 'Bearer error="insufficient_scope", scope="files:write"'


def proof(rule: str, fire: list, miss: list, **kw: Any) -> Proof:
    kw.setdefault("transport", "http")
    return Proof(rule, fire, miss, **kw)


def initialized(sid: str = SECURE) -> list[Step]:
    """An initialize POST answered with session id ``sid``."""
    return [*post(1, INIT), http_response(1, 200, content_type=JSON, mcp_session_id=sid)]


def unsessioned_ping(status: int) -> list[Step]:
    """A ping POSTed without the session id, refused with ``status``."""
    return [*initialized(), *post(2, req(2, "ping")), http_response(2, status)]


PROOFS = [
    proof("HTTP-SESSION-SECURE", fire=initialized("42"), miss=initialized(), version=None),
    proof(
        "HTTP-SESSION-ASSIGN",
        fire=[
            *post(1, req(1, "ping"), mcp_session_id=SECURE),
            http_response(1, 200, content_type=JSON, mcp_session_id=SECURE[::-1]),
        ],
        miss=[
            *post(1, req(1, "ping"), mcp_session_id=SECURE),
            http_response(1, 200, content_type=JSON, mcp_session_id=SECURE),
        ],
    ),
    proof(
        "HTTP-SESSION-MISSING-400",
        fire=unsessioned_ping(404),
        miss=unsessioned_ping(400),
        version=None,
    ),
    proof(
        "AUTH-INSUFFICIENT-SCOPE",
        fire=[*post(1, req(1, "tools/list"), authorization="Bearer t"), http_response(1, 403)],
        miss=[
            *post(1, req(1, "tools/list"), authorization="Bearer t"),
            http_response(1, 403, www_authenticate=SCOPED),
        ],
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def rules(steps: list[Step], version: str | None = None) -> list[str]:
    convo = play(proof("-", [], [], version=version), steps)
    return [f.rule for f in convo.findings]


@pytest.mark.parametrize("sid", ["1234567890123456789", "abc", "s-1"])
def test_short_or_numeric_session_ids_are_guessable(sid: str) -> None:
    assert rules(initialized(sid)).count("HTTP-SESSION-SECURE") == 1


def test_a_session_id_echoed_on_every_response_is_no_new_assignment() -> None:
    steps = [
        *initialized(),
        *post(2, req(2, "ping"), mcp_session_id=SECURE),
        http_response(2, 200, content_type=JSON, mcp_session_id=SECURE),
    ]
    assert "HTTP-SESSION-ASSIGN" not in rules(steps)


@pytest.mark.parametrize("status", [401, 403, 405, 406, 415])
def test_a_refusal_with_its_own_cause_is_not_about_the_missing_session(status: int) -> None:
    assert "HTTP-SESSION-MISSING-400" not in rules(unsessioned_ping(status))


def test_a_server_that_never_assigned_a_session_is_not_judged() -> None:
    steps = [*post(1, req(1, "ping")), http_response(1, 404)]
    assert "HTTP-SESSION-MISSING-400" not in rules(steps, V4)


def test_a_403_to_a_browser_request_is_left_to_the_origin_check() -> None:
    steps = [
        *post(1, req(1, "tools/list"), authorization="Bearer t", origin="https://evil.example"),
        http_response(1, 403),
    ]
    assert "AUTH-INSUFFICIENT-SCOPE" not in rules(steps, V4)
