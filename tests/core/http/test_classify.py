"""core/http/classify.py: MCP or plain traffic, and the one stream decision both processes make."""

from __future__ import annotations

import pytest

from mcpsniff.core.framing import SseEvent
from mcpsniff.core.http.classify import (
    LEGACY,
    STREAMABLE,
    comment_only,
    is_mcp_request,
    is_plain_request,
    stream_verdict,
    undecided_stream,
)


def test_a_comment_only_block_is_no_event() -> None:
    assert comment_only(SseEvent())
    assert not comment_only(SseEvent(data=""))
    assert not comment_only(SseEvent(retry=5))


@pytest.mark.parametrize(
    ("method", "path", "names", "body"),
    [
        ("GET", "/.well-known/oauth-protected-resource", {}, b""),
        ("POST", "/token", {"mcp-protocol-version": "2025-06-18"}, b"grant_type=x"),
        ("GET", "/health", {"accept": "application/json"}, b""),
        ("OPTIONS", "/other", {}, b""),
    ],
)
def test_requests_off_the_mcp_path_that_say_nothing_of_mcp_are_plain(
    method: str, path: str, names: dict[str, str], body: bytes
) -> None:
    assert is_plain_request(method, path, names, body, "/mcp")


@pytest.mark.parametrize(
    ("method", "path", "names", "body", "mcp_path"),
    [
        ("GET", "/anything", {}, b"", None),
        ("POST", "/mcp?x=1", {}, b"", "/mcp"),
        ("DELETE", "/other", {"mcp-session-id": "s"}, b"", "/mcp"),
        ("POST", "/messages?sessionId=1", {}, b"", "/mcp"),
        ("POST", "/other", {}, b'{"jsonrpc":"2.0","method":"x"}', "/mcp"),
        ("GET", "/sse", {"accept": "text/event-stream"}, b"", "/mcp"),
    ],
)
def test_requests_on_the_mcp_path_or_that_say_they_are_mcp_are_not_plain(
    method: str, path: str, names: dict[str, str], body: bytes, mcp_path: str | None
) -> None:
    assert not is_plain_request(method, path, names, body, mcp_path)


def test_is_mcp_request_for_shells_that_see_all_traffic() -> None:
    assert is_mcp_request("POST", [], b'{"jsonrpc":"2.0"}', "/x")
    assert is_mcp_request("GET", [("Accept", "text/event-stream")], b"", "/x")
    assert is_mcp_request("GET", [], b"", "/app/sse?x=1")
    assert is_mcp_request("DELETE", [("MCP-Session-Id", "s")], b"", "/x")
    assert not is_mcp_request("GET", [("Accept", "text/html")], b"", "/index")
    assert not is_mcp_request("DELETE", [], b"", "/x")
    assert not is_mcp_request("POST", [], b"a=1", "/login")


def test_only_a_session_less_mcp_get_event_stream_is_undecided() -> None:
    assert undecided_stream("GET", None, True, False)
    assert not undecided_stream("GET", "s1", True, False)  # it names its session
    assert not undecided_stream("GET", None, False, False)  # no event stream
    assert not undecided_stream("POST", None, True, False)  # a POST's stream answers it
    assert not undecided_stream("GET", None, True, True)  # no MCP traffic


def test_the_first_event_decides_and_comments_do_not() -> None:
    assert stream_verdict(SseEvent()) is None
    legacy = stream_verdict(SseEvent(event="endpoint", data="/messages?sessionId=1\n"))
    assert legacy is not None
    assert (legacy.transport, legacy.endpoint) == (LEGACY, "/messages?sessionId=1")
    streamable = stream_verdict(SseEvent(event="message", data="{}"))
    assert streamable is not None and (streamable.transport, streamable.endpoint) == (
        STREAMABLE,
        None,
    )
    none_in_time = stream_verdict(None)
    assert none_in_time is not None and none_in_time.transport == STREAMABLE
