"""The HTTP shells' half of the adapter: each thing seen is one observation, and the legacy
endpoint decision is made from the same bytes the analysis sees."""

from __future__ import annotations

from typing import Any

import pytest

from mcpsniff.capture.remote_exchange import RemoteObserver
from mcpsniff.core.http.exchange import HttpSettings, begin_exchange
from mcpsniff.core.observations import (
    EndpointRewritten,
    ExchangeEnd,
    HttpGuardAnswered,
    NoFirstEvent,
    RequestBegin,
    RequestBody,
    RequestCut,
    ResponseBegin,
    ResponseBody,
    Unreachable,
)

SSE = [("Content-Type", "text/event-stream")]


def observer() -> tuple[RemoteObserver, list[Any]]:
    seen: list[Any] = []
    return RemoteObserver(seen.append), seen


def test_an_exchange_is_numbered_and_each_step_is_one_observation() -> None:
    remote, seen = observer()
    number = remote.reserve()
    remote.request_body(number, b'{"a":', 0)
    exchange = remote.begin(
        "POST", "/mcp", [("Content-Type", "application/json")], b"1}", number=number, size=7
    )
    exchange.response(200, [("Content-Type", "application/json")])
    exchange.whole_body(b"{}")
    exchange.endpoint_rewritten("a", "b")
    exchange.request_cut(3)
    exchange.guard_answered("delete_all", "forbidden", 7)
    exchange.finish()
    other = remote.begin("GET", "/x", [], b"")
    other.unreachable("http://u/x", "refused")
    kinds = [type(o) for o in seen]
    assert kinds == [
        RequestBody,
        RequestBegin,
        ResponseBegin,
        ResponseBody,
        EndpointRewritten,
        RequestCut,
        HttpGuardAnswered,
        ExchangeEnd,
        RequestBegin,
        Unreachable,
    ]
    assert {o.exchange for o in seen[:8]} == {number} and seen[-1].exchange == number + 1
    assert (seen[6].tool, seen[6].reason, seen[6].id) == ("delete_all", "forbidden", 7)
    assert (seen[4].old, seen[4].new, seen[5].body_bytes) == ("a", "b", 3)
    assert seen[1].size == 7 and seen[1].body == b"1}"
    assert seen[3].whole is True and exchange.status == 200 and not exchange.is_sse


@pytest.mark.parametrize("split", [1, 7, 1000])
def test_a_legacy_stream_s_endpoint_is_found_in_its_first_event_split_anywhere(split: int) -> None:
    remote, seen = observer()
    exchange = remote.begin("GET", "/sse", [("Accept", "text/event-stream")], b"")
    exchange.response(200, SSE)
    assert exchange.endpoint_editable
    stream = b": keep-alive\n\nevent: endpoint\ndata: http://up:1/messages?sessionId=9\n\n"
    for start in range(0, len(stream), split):
        exchange.body_chunk(stream[start : start + split])
    assert exchange.endpoint == "http://up:1/messages?sessionId=9"
    assert not exchange.waiting_for_first_event
    assert b"".join(o.body for o in seen if type(o) is ResponseBody) == stream


def test_a_stream_with_a_session_or_compressed_is_not_the_shell_s_to_decide() -> None:
    remote, _ = observer()
    with_session = remote.begin("GET", "/mcp", [("Mcp-Session-Id", "s1")], b"")
    with_session.response(200, SSE)
    assert not with_session.waiting_for_first_event
    compressed = remote.begin("GET", "/sse", [], b"")
    compressed.response(200, [*SSE, ("Content-Encoding", "gzip")])
    assert compressed.waiting_for_first_event and not compressed.endpoint_editable


def test_no_first_event_in_time_is_observed_once() -> None:
    remote, seen = observer()
    exchange = remote.begin("GET", "/sse", [], b"")
    exchange.response(200, SSE)
    exchange.no_first_event()
    exchange.no_first_event()
    assert [type(o) for o in seen].count(NoFirstEvent) == 1
    assert exchange.endpoint is None and not exchange.endpoint_editable


HEADS = [
    ("GET", "/mcp", [], SSE),
    ("GET", "/mcp", [], [*SSE, ("Mcp-Session-Id", "from-the-server")]),
    ("GET", "/mcp?sessionId=abc", [], SSE),
    ("GET", "/mcp", [("Mcp-Session-Id", "s1")], SSE),
    ("GET", "/mcp", [("Connection", "Mcp-Session-Id"), ("Mcp-Session-Id", "s1")], SSE),
    ("GET", "/health", [], SSE),
    ("GET", "/events", [("Accept", "text/event-stream")], SSE),
    ("GET", "/mcp", [], [("Content-Type", "application/json")]),
    ("POST", "/mcp", [], SSE),
    ("GET", "/mcp", [], [("content-type", "Text/Event-Stream; charset=utf-8")]),
]


@pytest.mark.parametrize(("method", "path", "request_headers", "response_headers"), HEADS)
def test_the_shell_and_the_analysis_decide_the_same_streams_undecided(
    method: str,
    path: str,
    request_headers: list[tuple[str, str]],
    response_headers: list[tuple[str, str]],
) -> None:
    """Both processes call ``classify.undecided_stream``: a stream the analysis waits on
    is one the relay holds, and the other way round."""
    remote = RemoteObserver(lambda o: None, "/mcp").begin(method, path, request_headers, b"")
    remote.response(200, response_headers)
    analyzed, _ = begin_exchange(
        HttpSettings(mcp_path="/mcp"), 1, 1.0, method, path, request_headers, b""
    )
    analyzed.response(200, response_headers, 2.0)
    assert remote.waiting_for_first_event == analyzed.waiting_for_first_event
    assert remote.endpoint_editable == analyzed.endpoint_editable


def test_a_stream_whose_response_names_a_session_is_still_decided_by_its_first_event() -> None:
    """The request named none, so only the first event tells legacy from Streamable HTTP."""
    remote, _ = observer()
    exchange = remote.begin("GET", "/mcp", [], b"")
    exchange.response(200, [*SSE, ("Mcp-Session-Id", "s9")])
    assert exchange.waiting_for_first_event and exchange.endpoint_editable


def test_a_plain_stream_is_not_held() -> None:
    """Off the MCP path and not asking for an event stream: no MCP traffic, nothing to rewrite."""
    exchange = RemoteObserver(lambda o: None, "/mcp").begin("GET", "/feed", [], b"")
    exchange.response(200, SSE)
    assert not exchange.waiting_for_first_event
