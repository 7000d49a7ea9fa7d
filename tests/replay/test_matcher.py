"""The matching modes of ``replay serve``, on hand-built exchanges."""

from __future__ import annotations

from typing import Any

from mcpsniff.replay.compare import parse_path
from mcpsniff.replay.matcher import AUTO, PARAMS, SEQUENTIAL, Matcher
from mcpsniff.replay.plan import RecordedExchange
from mcpsniff.replay.script import Message


def exchange(seq: int, method: str, params: dict[str, Any] | None = None) -> RecordedExchange:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": seq, "method": method}
    if params is not None:
        body["params"] = params
    reply = Message(seq + 1, None, "s2c", {"jsonrpc": "2.0", "id": seq, "result": {"n": seq}})
    return RecordedExchange(Message(seq, None, "c2s", body), reply)


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def request(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": "x", "method": method}
    if params is not None:
        body["params"] = params
    return body


RECORDED = [
    exchange(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}),
    exchange(3, "tools/list"),
    exchange(5, "tools/call", tool("echo", message="hi")),
    exchange(7, "tools/call", tool("get-sum", a=2, b=40)),
    exchange(9, "tools/call", tool("echo", message="again")),
]


def test_auto_matches_initialize_by_method_and_reports_capability_differences() -> None:
    matcher = Matcher(RECORDED, AUTO)
    asked = request(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "other"},
        },
    )
    match = matcher.take(asked)
    assert match.exchange is RECORDED[0]
    paths = {d.path for d in match.differences}
    assert ("params", "capabilities", "sampling") in paths
    # A second client may initialize again: the handshake is served again.
    assert matcher.take(asked).repeated


def test_auto_matches_a_tool_call_by_name_then_arguments() -> None:
    matcher = Matcher(RECORDED, AUTO)
    assert (
        matcher.take(request("tools/call", tool("echo", message="again"))).exchange is RECORDED[4]
    )
    assert matcher.take(request("tools/call", tool("echo", message="hi"))).exchange is RECORDED[2]
    # Each recorded call is served once.
    missed = matcher.take(request("tools/call", tool("echo", message="hi")))
    assert missed.exchange is None and missed.nearest is RECORDED[2]
    assert missed.differences == []


def test_an_unmatched_call_names_the_nearest_on_the_same_target() -> None:
    matcher = Matcher(RECORDED, AUTO)
    missed = matcher.take(request("tools/call", tool("get-sum", a=1, b=40)))
    assert missed.exchange is None
    assert missed.nearest is RECORDED[3]
    assert [(d.path, d.recorded, d.live) for d in missed.differences] == [
        (("params", "arguments", "a"), 2, 1)
    ]


def test_allowed_paths_serve_the_nearest_call() -> None:
    matcher = Matcher(RECORDED, AUTO, [parse_path("$.params.arguments.message")])
    match = matcher.take(request("tools/call", tool("echo", message="other")))
    assert match.exchange is RECORDED[2]
    assert [d.path for d in match.differences] == [("params", "arguments", "message")]
    # The name is never an allowed difference unless the user says so.
    assert (
        matcher.take(request("tools/call", tool("get-tiny-image", message="hi"))).exchange is None
    )


def test_sequential_keeps_order_within_a_tool_and_never_crosses_tools() -> None:
    matcher = Matcher(RECORDED, SEQUENTIAL)
    assert matcher.take(request("tools/call", tool("get-sum"))).exchange is RECORDED[3]
    assert matcher.take(request("tools/call", tool("echo"))).exchange is RECORDED[2]
    assert matcher.take(request("tools/call", tool("echo"))).exchange is RECORDED[4]
    assert matcher.take(request("tools/call", tool("echo"))).exchange is None
    assert matcher.take(request("tools/call", tool("get-sum"))).exchange is None


def test_params_mode_is_exact_and_serves_once() -> None:
    matcher = Matcher(RECORDED, PARAMS)
    assert matcher.take(request("initialize", {"capabilities": {}})).exchange is None
    assert matcher.take(request("tools/list")).exchange is RECORDED[1]
    assert matcher.take(request("tools/list")).exchange is None


def test_listings_are_served_again_in_auto_mode() -> None:
    matcher = Matcher(RECORDED, AUTO)
    assert matcher.take(request("tools/list")).exchange is RECORDED[1]
    again = matcher.take(request("tools/list", {}))
    assert again.exchange is RECORDED[1] and again.repeated


def test_each_matcher_keeps_its_own_record_of_what_it_served() -> None:
    first, second = Matcher(RECORDED, AUTO), Matcher(RECORDED, AUTO)
    asked = request("tools/call", tool("get-sum", a=2, b=40))
    assert first.take(asked).exchange is RECORDED[3]
    assert second.take(asked).exchange is RECORDED[3]
