"""rules/http.py: Streamable HTTP and legacy SSE transport rules, each fired and near-missed."""

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
    req,
    res,
    sse,
)

V4, V5 = "2025-11-25", "2026-07-28"
JSON = "application/json"
STREAM = "text/event-stream"
NOTE = note("notifications/roots/list_changed")


def post(number: int, payload: Any, **headers: str) -> list:
    headers.setdefault("accept", ACCEPT_BOTH)
    headers.setdefault("mcp_protocol_version", V4)
    return [http(number, "POST", **headers), body(number, payload)]


def v5(id_: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": V5,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
    }
    return req(id_, method, {**(params or {}), "_meta": meta})


def proof(rule: str, fire: list, miss: list, **kw: Any) -> Proof:
    kw.setdefault("transport", "http")
    return Proof(rule, fire, miss, **kw)


PROOFS = [
    proof(
        "HTTP-POST-ACCEPT",
        fire=post(1, req(1, "ping"), accept=JSON),
        miss=post(1, req(1, "ping")),
    ),
    proof(
        "HTTP-GET-ACCEPT",
        fire=[http(1, "GET", accept=JSON, mcp_protocol_version=V4)],
        miss=[http(1, "GET", accept=STREAM, mcp_protocol_version=V4)],
    ),
    proof(
        "HTTP-GET-REPLY",
        fire=[
            http(1, "GET", accept=STREAM, mcp_protocol_version=V4),
            http_response(1, 200, content_type=JSON),
        ],
        miss=[http(1, "GET", accept=STREAM, mcp_protocol_version=V4), http_response(1, 405)],
    ),
    proof(
        "HTTP-202",
        fire=[*post(1, NOTE), http_response(1, 200, content_type=JSON)],
        miss=[*post(1, NOTE), http_response(1, 202)],
    ),
    proof(
        "HTTP-REQ-CONTENT-TYPE",
        fire=[*post(1, req(1, "ping")), http_response(1, 202)],
        miss=[*post(1, req(1, "ping")), http_response(1, 200, content_type=JSON)],
    ),
    proof(
        "HTTP-SESSION-CHARS",
        fire=[
            *post(1, req(1, "ping")),
            http_response(1, 200, content_type=JSON, mcp_session_id="a b"),
        ],
        miss=[
            *post(1, req(1, "ping")),
            http_response(1, 200, content_type=JSON, mcp_session_id="a-b"),
        ],
    ),
    proof(
        "HTTP-SESSION-ECHO",
        fire=[
            http(1, "POST", accept=ACCEPT_BOTH),
            http_response(1, 200, content_type=JSON, mcp_session_id="s1"),
            http(2, "POST", accept=ACCEPT_BOTH),
            http_response(2, 202),
        ],
        miss=[
            http(1, "POST", accept=ACCEPT_BOTH),
            http_response(1, 200, content_type=JSON, mcp_session_id="s1"),
            http(2, "POST", accept=ACCEPT_BOTH, mcp_session_id="s1"),
            http_response(2, 202),
        ],
        version=None,
    ),
    proof(
        "HTTP-SESSION-404",
        fire=[
            http(1, "DELETE", mcp_session_id="s1", mcp_protocol_version=V4),
            http_response(1, 200),
            *post(2, req(1, "ping"), mcp_session_id="s1"),
            http_response(2, 200, content_type=JSON),
        ],
        miss=[
            http(1, "DELETE", mcp_session_id="s1", mcp_protocol_version=V4),
            http_response(1, 200),
            *post(2, req(1, "ping"), mcp_session_id="s1"),
            http_response(2, 404),
        ],
    ),
    proof(
        "HTTP-PROTO-HEADER",
        fire=[http(1, "POST", accept=ACCEPT_BOTH), body(1, req(1, "ping"))],
        miss=post(1, req(1, "ping")),
    ),
    proof(
        "HTTP-PROTO-HEADER-VALUE",
        fire=post(1, req(1, "ping"), mcp_protocol_version="2025-06-18"),
        miss=post(1, req(1, "ping")),
    ),
    proof(
        "HTTP-EVENT-ID-UNIQUE",
        fire=[
            http(1, "GET", accept=STREAM, mcp_protocol_version=V4),
            sse(1, id="e1"),
            http(2, "GET", accept=STREAM, mcp_protocol_version=V4),
            sse(2, id="e1"),
        ],
        miss=[
            http(1, "GET", accept=STREAM, mcp_protocol_version=V4),
            sse(1, id="e1"),
            http(2, "GET", accept=STREAM, mcp_protocol_version=V4),
            sse(2, id="e2"),
        ],
    ),
    proof(
        "SSE-ENDPOINT-EVENT",
        fire=[http(1, "GET", "/sse", "legacy-sse", accept=STREAM), sse(1, event="message")],
        miss=[http(1, "GET", "/sse", "legacy-sse", accept=STREAM), sse(1, event="endpoint")],
        version=None,
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def test_the_exchanges_answer_what_correlation_asks() -> None:
    import orjson

    from mcpsniff.core.session import Session

    session = Session("http", "http")

    def begin(number: int, headers: list[list[str]], transport: str = "streamable") -> None:
        data = {"exchange": number, "method": "POST", "path": "/mcp", "headers": headers}
        session.event("http-request", 0.0, {**data, "transport": transport, "client": "h:1"})

    def post(number: int, payload: Any) -> None:
        session.feed_frame("c2s", "http", orjson.dumps(payload), 0.0, {"exchange": number})

    begin(1, [])
    begin(2, [["Mcp-Session-Id", "abc"]])
    begin(3, [], transport="legacy-sse")
    post(1, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    post(
        2,
        [
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
            {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        ],
    )
    post(3, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    exchanges = session.state.http
    # Only a session-less Streamable HTTP exchange scopes ids by its client.
    assert [exchanges.sessionless_client(n) for n in (1, 2, 3, 4)] == ["h:1", None, None, None]
    # The one request a POST carried; none for a batch of two, a notification, no exchange.
    sole = exchanges.sole_request(1)
    assert sole is not None and (sole.id, sole.key) == (1, 1)
    assert [exchanges.sole_request(n) for n in (2, 3, 4)] == [None, None, None]


def test_streamable_exchange_finds_a_frames_exchange_of_the_method_asked() -> None:
    from mcpsniff.core.model import FrameRecord
    from mcpsniff.core.rules.http import streamable_exchange
    from mcpsniff.core.session import Session

    session = Session("http", "http")
    for number, method, transport in ((1, "POST", "streamable"), (2, "GET", "streamable")):
        data = {"exchange": number, "method": method, "path": "/mcp", "headers": []}
        session.event("http-request", 0.0, {**data, "transport": transport})
    session.event(
        "http-request",
        0.0,
        {"exchange": 3, "method": "POST", "path": "/m", "headers": [], "transport": "legacy-sse"},
    )

    def frame(meta: Any) -> FrameRecord:
        return FrameRecord(1, 0.0, "http", "c2s", "http", b"{}", meta)

    def found(meta: Any, method: str | None = None) -> Any:
        exchange = streamable_exchange(session, frame(meta), method)
        return None if exchange is None else exchange.method

    assert [found({"exchange": n}) for n in (1, 2, 3, 4)] == ["POST", "GET", None, None]
    assert [found({"exchange": n}, "POST") for n in (1, 2)] == ["POST", None]
    assert found({"exchange": 2}, "GET") == "GET"
    # A frame that names no exchange, or not by number (a hand-edited trace).
    assert [found(meta, "POST") for meta in (None, {}, {"exchange": "1"})] == [None, None, None]


def test_a_reply_body_pairs_with_its_request() -> None:
    from tests.core.rules.dsl import play

    p = proof("-", [], [])
    convo = play(
        p,
        [
            *post(1, req(1, "ping")),
            http_response(1, 200, content_type=JSON),
            body(1, res(1, {}), "s2c"),
        ],
    )
    assert convo.findings == []
    (reply,) = [m for m in convo.messages if m.kind == "response" and m.id == 1]
    assert reply.answers is not None


#: Causes the descriptions name beyond the one each proof fires: (proof, message fragment).
CAUSES = [
    (
        proof(
            "SSE-ENDPOINT-EVENT",
            # A session-less GET stream whose endpoint event comes after another event.
            fire=[
                http(1, "GET", "/sse", accept=STREAM),
                sse(1, event="message"),
                sse(1, event="endpoint", endpoint="/messages?session=1"),
            ],
            miss=[
                http(1, "GET", "/sse", accept=STREAM),
                sse(1, event="endpoint", endpoint="/messages?session=1"),
                sse(1, event="message"),
            ],
            version=None,
        ),
        "other events before its endpoint event",
    ),
]


@pytest.mark.parametrize(("p", "fragment"), CAUSES, ids=[f for _, f in CAUSES])
def test_each_cause_the_description_names_fires(p: Proof, fragment: str) -> None:
    assert_cause(p, fragment)
