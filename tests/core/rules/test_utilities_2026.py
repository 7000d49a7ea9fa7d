"""rules/utilities_2026.py: log levels, trace context, missing resources, tool order."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Conversation
from tests.core.rules.dsl import (
    Proof,
    Step,
    assert_proof,
    body,
    c,
    err,
    http_response,
    note,
    play,
    s,
)
from tests.core.rules.test_http_2026 import complete, post, v5

CACHE = {"ttlMs": 0, "cacheScope": "public"}
LEVEL = "io.modelcontextprotocol/logLevel"
CALL = {"name": "t", "arguments": {}}


def log(level: str = "info") -> dict[str, Any]:
    return note("notifications/message", {"level": level, "data": "x"})


def tools(*names: str) -> dict[str, Any]:
    listed = [{"name": n, "inputSchema": {"type": "object"}} for n in names]
    return {"tools": listed, **CACHE}


PROOFS = [
    Proof(
        "MOD-LOG-OPTIN",
        fire=[c(v5(1, "tools/call", CALL)), s(log())],
        miss=[c(v5(1, "tools/call", CALL, **{LEVEL: "info"})), s(log())],
        version=None,
    ),
    Proof(
        "MOD-LOGLEVEL-INVALID",
        fire=[c(v5(1, "tools/list", **{LEVEL: "verbose"})), s(complete(1, tools("a")))],
        miss=[c(v5(1, "tools/list", **{LEVEL: "verbose"})), s(err(1, -32602))],
        version=None,
    ),
    Proof(
        "MOD-LIST-STABLE",
        fire=[
            c(v5(1, "tools/list")),
            s(complete(1, tools("a", "b"))),
            c(v5(2, "tools/list")),
            s(complete(2, tools("b", "a"))),
        ],
        miss=[
            c(v5(1, "tools/list")),
            s(complete(1, tools("a", "b"))),
            c(v5(2, "tools/list")),
            s(complete(2, tools("a", "b"))),
        ],
        version=None,
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def stdio(*steps: Step) -> Conversation:
    return play(Proof("-", [], [], version=None), list(steps))


def http_run(*steps: Step) -> Conversation:
    return play(Proof("-", [], [], version=None, transport="http"), list(steps))


# --------------------------------------------------------------------------- logging


@pytest.mark.parametrize(
    ("asked", "sent", "fires"),
    [("warning", "info", True), ("info", "info", False), ("info", "error", False)],
)
def test_log_messages_below_the_level_asked_for(asked: str, sent: str, fires: bool) -> None:
    convo = stdio(c(v5(1, "tools/call", CALL, **{LEVEL: asked})), s(log(sent)))
    found = convo.find("MOD-LOG-OPTIN")
    assert bool(found) == fires
    if fires:
        assert (
            found[0].data["cause"] == "below-level"
            and "below the level warning" in found[0].message
        )


def sse_log(number: int, level: str) -> list[Step]:
    return [
        http_response(number, 200, content_type="text/event-stream"),
        body(number, log(level), "s2c"),
    ]


def test_over_http_the_stream_names_the_request() -> None:
    """A request that asked for logs elsewhere does not excuse one on a stream that did not."""
    asked = v5(1, "tools/call", CALL, **{LEVEL: "debug"})
    silent = v5(2, "tools/call", CALL)
    convo = http_run(
        *post(1, asked, mcp_name="t"),
        *post(2, silent, mcp_name="t"),
        *sse_log(2, "info"),
    )
    (finding,) = convo.find("MOD-LOG-OPTIN")
    assert "the request it answers did not ask for logs" in finding.message
    clean = http_run(
        *post(1, asked, mcp_name="t"), *post(2, silent, mcp_name="t"), *sse_log(1, "info")
    )
    assert clean.find("MOD-LOG-OPTIN") == []


def test_no_log_messages_on_a_listen_stream() -> None:
    listen = v5(
        1, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}, **{LEVEL: "debug"}
    )
    convo = http_run(*post(1, listen), *sse_log(1, "info"))
    (finding,) = convo.find("MOD-LOG-OPTIN")
    assert finding.data["cause"] == "listen-stream"


# --------------------------------------------------------------------------- trace context

GOOD_PARENT = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"


@pytest.mark.parametrize(
    ("meta", "fires"),
    [
        ({"traceparent": GOOD_PARENT}, False),
        (
            {
                "traceparent": GOOD_PARENT,
                "tracestate": "rojo=00f067aa0ba902b7",
                "baggage": "user=alice,x=1;p",
            },
            False,
        ),
        ({"traceparent": GOOD_PARENT.upper()}, True),
        ({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"}, True),
        ({"traceparent": GOOD_PARENT, "tracestate": "Bad Key=1"}, True),
        ({"baggage": "user name=alice"}, True),
        ({"baggage": 5}, True),
    ],
)
def test_trace_context_values_follow_w3c(meta: dict[str, Any], fires: bool) -> None:
    convo = stdio(c(v5(1, "tools/list", **meta)))
    assert bool(convo.find("MSG-META-KEYS")) == fires, [f.message for f in convo.findings]


def test_trace_context_before_2026_is_not_judged() -> None:
    convo = play(
        Proof("-", [], [], version="2025-11-25"),
        [
            c(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/list",
                    "params": {"_meta": {"traceparent": "x"}},
                }
            )
        ],
    )
    assert convo.find("MSG-META-KEYS") == []


# --------------------------------------------------------------------------- resources


def listings(uris: list[str], templates: list[str]) -> list[Step]:
    resources = [{"uri": u, "name": u} for u in uris]
    described = [{"uriTemplate": t, "name": t} for t in templates]
    return [
        c(v5(1, "resources/list")),
        s(complete(1, {"resources": resources, **CACHE})),
        c(v5(2, "resources/templates/list")),
        s(complete(2, {"resourceTemplates": described, **CACHE})),
    ]


def read(id_: int, uri: str, contents: list[Any]) -> list[Step]:
    return [
        c(v5(id_, "resources/read", {"uri": uri})),
        s(complete(id_, {"contents": contents, **CACHE})),
    ]


def test_empty_contents_for_a_resource_nobody_offers() -> None:
    convo = stdio(*listings(["file:///a"], ["db://{table}/rows"]), *read(3, "file:///nope", []))
    (finding,) = convo.find("MOD-RES-NOT-FOUND")
    assert "'file:///nope'" in finding.message and "-32602" in finding.message


@pytest.mark.parametrize("uri", ["file:///a", "db://users/rows"])
def test_empty_contents_of_an_existing_resource_are_allowed(uri: str) -> None:
    convo = stdio(*listings(["file:///a"], ["db://{table}/rows"]), *read(3, uri, []))
    assert convo.find("MOD-RES-NOT-FOUND") == []


def test_without_both_listings_there_is_no_verdict() -> None:
    only_list = listings(["file:///a"], [])[:2]
    convo = stdio(*only_list, *read(3, "file:///nope", []))
    assert convo.find("MOD-RES-NOT-FOUND") == []


# --------------------------------------------------------------------------- tool order


def test_a_different_tool_set_may_come_in_any_order() -> None:
    convo = stdio(
        c(v5(1, "tools/list")),
        s(complete(1, tools("a", "b"))),
        c(v5(2, "tools/list")),
        s(complete(2, tools("c", "b", "a"))),
    )
    assert convo.find("MOD-LIST-STABLE") == []


def test_the_order_finding_is_info() -> None:
    (proof,) = [p for p in PROOFS if p.rule == "MOD-LIST-STABLE"]
    (finding,) = play(proof, proof.fire).find("MOD-LIST-STABLE")
    assert finding.severity == "info" and "position 0: 'b' instead of 'a'" in finding.message


def test_hostile_values_give_findings_not_tracebacks() -> None:
    convo = stdio(
        c(v5(1, "tools/call", CALL, **{LEVEL: {"not": "a level"}})),
        s(log("debug")),
        c(v5(2, "resources/list")),
        s(complete(2, {"resources": 5, **CACHE})),
        c(v5(3, "resources/templates/list")),
        s(complete(3, {"resourceTemplates": "x", **CACHE})),
        c(v5(4, "resources/read", {"uri": "file:///x"})),
        s(complete(4, {"contents": [], **CACHE})),
    )
    assert convo.session is not None  # no exception; a missing URI with empty listings fires
    assert len(convo.find("MOD-RES-NOT-FOUND")) == 1


def test_a_repeated_listing_reports_an_invalid_tool_once() -> None:
    from tests.core.rules.test_http_2026 import listed

    bad = {
        "name": "bad",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number", "x-mcp-header": "A"}},
        },
    }
    convo = http_run(*listed(bad), *listed(bad))
    assert len(convo.find("MOD-HTTP-PARAM-HEADERS")) == 1


def test_an_unrecognized_log_level_should_be_refused() -> None:
    (proof,) = [p for p in PROOFS if p.rule == "MOD-LOGLEVEL-INVALID"]
    (finding,) = play(proof, proof.fire).find("MOD-LOGLEVEL-INVALID")
    assert "'verbose'" in finding.message and finding.severity == "warning"
