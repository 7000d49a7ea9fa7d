"""rules/http_stateless.py: 2026-07-28 Streamable HTTP has no sessions, fired and near-missed."""

from __future__ import annotations

import pytest

from tests.core.rules.dsl import (
    ACCEPT_BOTH,
    Proof,
    assert_proof,
    body,
    err,
    http,
    http_response,
    play,
    req,
    res,
)

V4, V5 = "2025-11-25", "2026-07-28"
JSON = "application/json"
META = {
    "io.modelcontextprotocol/protocolVersion": V5,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
}


def modern_post(**response_headers: str) -> list:
    return [
        http(1, "POST", accept=ACCEPT_BOTH, mcp_protocol_version=V5, mcp_method="tools/list"),
        body(1, req(1, "tools/list", {"_meta": META})),
        http_response(1, 200, content_type=JSON, **response_headers),
        body(1, res(1, {"tools": [], "resultType": "complete"}), "s2c", status=200),
    ]


PROOFS = [
    Proof(
        "MOD-HTTP-POST-ONLY",
        fire=modern_post(mcp_session_id="abc"),
        miss=modern_post(),
        version=None,
        transport="http",
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def test_a_dual_era_server_may_mint_a_session_for_initialize() -> None:
    init = req(
        1,
        "initialize",
        {"protocolVersion": V4, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
    )
    convo = play(
        Proof("-", [], [], version=None, transport="http"),
        [
            http(1, "POST", accept=ACCEPT_BOTH),
            body(1, init),
            http_response(1, 200, content_type=JSON, mcp_session_id="abc"),
        ],
    )
    assert convo.find("MOD-HTTP-POST-ONLY") == []


def test_a_2025_server_refusing_the_probe_is_not_judged() -> None:
    """An HTTP 400 with an error body (and a session header) answers a dual-era probe."""
    convo = play(
        Proof("-", [], [], version=None, transport="http"),
        [
            http(1, "POST", accept=ACCEPT_BOTH, mcp_protocol_version=V5),
            body(1, req(1, "server/discover", {"_meta": META})),
            http_response(1, 400, content_type=JSON, mcp_session_id="abc"),
            body(1, err(1, -32600), "s2c", status=400),
        ],
    )
    assert convo.find("MOD-HTTP-POST-ONLY") == []
