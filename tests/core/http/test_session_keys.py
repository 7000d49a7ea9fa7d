"""core/http/session_keys.py: which session an exchange's records are grouped under."""

from __future__ import annotations

from mcpsniff.core.http.session_keys import (
    RELAY_SESSION,
    STATELESS_SESSION,
    legacy_stream_session,
    prefixed,
    request_session,
)

STATELESS_BODY = (
    b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":'
    b'{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}'
)


def key(method: str = "POST", path: str = "/mcp", names: dict[str, str] | None = None, **kw):  # type: ignore[no-untyped-def]
    return request_session(
        method,
        path,
        names or {},
        kw.get("analyzed", b""),
        kw.get("response_sid"),
        undecided_get=kw.get("undecided_get", False),
    )


def test_the_response_s_session_id_wins_then_the_request_s() -> None:
    assert key(names={"mcp-session-id": "req"}, response_sid="resp") == "resp"
    assert key(names={"mcp-session-id": "req"}) == "req"


def test_a_legacy_url_names_its_session() -> None:
    assert key(path="/messages?sessionId=abc") == "sse-abc"


def test_an_undecided_get_has_no_session_yet_but_a_decided_one_does() -> None:
    assert key("GET", undecided_get=True) is None
    assert key("GET", undecided_get=False) == RELAY_SESSION


def test_the_stateless_era_is_one_group_by_header_or_by_body() -> None:
    assert key(names={"mcp-protocol-version": "2026-07-28"}) == STATELESS_SESSION
    assert key(analyzed=STATELESS_BODY) == STATELESS_SESSION
    assert key(names={"mcp-protocol-version": "2025-11-25"}) == RELAY_SESSION


def test_keys_are_prefixed_with_the_host_only_when_keyed_by_host() -> None:
    assert prefixed("s1", "up:80", True) == "up:80 s1"
    assert prefixed("s1", "up:80", False) == "s1"
    assert prefixed("s1", None, True) == "s1"


def test_a_legacy_stream_without_a_session_id_gets_its_own_session() -> None:
    assert legacy_stream_session("/messages?sessionId=9", 4) == "sse-9"
    assert legacy_stream_session("/messages", 4) == "sse-4"
