"""rules/http_origin.py: a local server accepting a foreign Origin, fired and near-missed."""

from __future__ import annotations

from typing import Any

import pytest

from mcpsniff.core.rules.http_origin import foreign_origin, is_loopback
from tests.core.rules.dsl import (
    ACCEPT_BOTH,
    STREAM,
    Proof,
    assert_proof,
    body,
    http,
    http_response,
    req,
    sse,
)

V4 = "2025-11-25"
LOCAL = "127.0.0.1:3001"
EVIL = "http://evil.example"


def post(origin: str | None, status: int, host: str = LOCAL) -> list:
    headers = {"accept": ACCEPT_BOTH, "mcp_protocol_version": V4, "host": host}
    if origin is not None:
        headers["origin"] = origin
    return [http(1, "POST", **headers), body(1, req(1, "ping")), http_response(1, status)]


def proof(rule: str, fire: list, miss: list, **kw: Any) -> Proof:
    kw.setdefault("transport", "http")
    return Proof(rule, fire, miss, **kw)


def legacy_get(origin: str, status: int) -> list:
    return [
        http(1, "GET", "/sse", "legacy-sse", accept=STREAM, host=LOCAL, origin=origin),
        http_response(1, status, content_type=STREAM),
        sse(1, event="endpoint", endpoint="/message?sessionId=a"),
    ]


PROOFS = [
    proof("HTTP-ORIGIN", fire=post(EVIL, 200), miss=post(EVIL, 403)),
    proof(
        "SSE-ORIGIN",
        fire=legacy_get(EVIL, 200),
        miss=legacy_get("http://localhost:6274", 200),
        version="2024-11-05",
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


@pytest.mark.parametrize(
    ("origin", "host", "fires"),
    [
        (EVIL, LOCAL, True),
        ("null", "localhost:3001", True),
        ("http://localhost:6274", LOCAL, False),  # the Inspector on another local port
        ("http://[::1]:8080", "[::1]:3001", False),
        (None, LOCAL, False),  # non-browser clients send no Origin
        (EVIL, "mcp.example.com", False),  # a remote server's allowed origins are unknown
    ],
)
def test_which_origins_count_as_foreign(origin: str | None, host: str, fires: bool) -> None:
    from tests.core.rules.dsl import play

    convo = play(proof("-", [], []), post(origin, 200, host))
    assert bool(convo.find("HTTP-ORIGIN")) is fires


def test_one_finding_per_origin() -> None:
    from tests.core.rules.dsl import play

    steps = post(EVIL, 200)
    again = [
        http(2, "POST", accept=ACCEPT_BOTH, mcp_protocol_version=V4, host=LOCAL, origin=EVIL),
        body(2, req(2, "ping")),
        http_response(2, 200),
    ]
    assert len(play(proof("-", [], []), [*steps, *again]).find("HTTP-ORIGIN")) == 1


def test_loopback_and_origin_helpers() -> None:
    assert is_loopback("127.0.0.2") and is_loopback("LOCALHOST") and is_loopback("[::1]")
    assert not is_loopback("10.0.0.1") and not is_loopback(None)
    assert foreign_origin("chrome-extension://abc") and not foreign_origin("https://127.0.0.1")
