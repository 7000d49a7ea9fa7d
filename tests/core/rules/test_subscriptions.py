"""rules/subscriptions.py: subscriptions/listen (2026-07-28), each rule fired and near-missed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.rules.dsl import Proof, assert_cause, assert_proof, c, end, note, play, req, res, s

V5 = "2026-07-28"
INFO = {"name": "proof", "version": "1"}
META = {
    "io.modelcontextprotocol/protocolVersion": V5,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": INFO,
}
SUB = "io.modelcontextprotocol/subscriptionId"


def listen(id_: int, **wanted: Any) -> Any:
    """A client's subscriptions/listen asking for ``wanted`` (SubscriptionFilter members)."""
    return c(req(id_, "subscriptions/listen", {"notifications": wanted, "_meta": META}))


def ack(sub: Any, **honoured: Any) -> Any:
    params: dict[str, Any] = {"notifications": honoured}
    if sub is not None:
        params["_meta"] = {SUB: sub}
    return s(note("notifications/subscriptions/acknowledged", params))


def changed(kind: str, sub: Any, **params: Any) -> Any:
    if sub is not None:
        params["_meta"] = {SUB: sub}
    return s(note(f"notifications/{kind}", params or None))


def proof(rule: str, fire: list, miss: list) -> Proof:
    return Proof(rule, fire, miss, version=None)


PROOFS = [
    proof(
        "MOD-SUBS-ACK-FIRST",
        # The change notification comes before the acknowledgement.
        fire=[
            listen(7, toolsListChanged=True),
            changed("tools/list_changed", 7),
            ack(7, toolsListChanged=True),
        ],
        miss=[
            listen(7, toolsListChanged=True),
            ack(7, toolsListChanged=True),
            changed("tools/list_changed", 7),
        ],
    ),
    proof(
        "MOD-SUBS-ID",
        # The notification names another id than the listen request's.
        fire=[
            listen(7, toolsListChanged=True),
            ack(7, toolsListChanged=True),
            changed("tools/list_changed", 8),
        ],
        miss=[
            listen(7, toolsListChanged=True),
            ack(7, toolsListChanged=True),
            changed("tools/list_changed", 7),
        ],
    ),
    proof(
        "MOD-SUBS-FILTER",
        # Prompts changes on a subscription that asked only for tools.
        fire=[
            listen(7, toolsListChanged=True),
            ack(7, toolsListChanged=True),
            changed("prompts/list_changed", 7),
        ],
        miss=[
            listen(7, toolsListChanged=True, promptsListChanged=True),
            ack(7, toolsListChanged=True, promptsListChanged=True),
            changed("prompts/list_changed", 7),
        ],
    ),
    proof(
        "MOD-SUBS-CLOSE",
        # The graceful end without resultType "complete" and the subscription id.
        fire=[listen(7, toolsListChanged=True), ack(7), s(res(7, {}))],
        miss=[
            listen(7, toolsListChanged=True),
            ack(7),
            s(res(7, {"resultType": "complete", "_meta": {SUB: 7}})),
        ],
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def test_a_resource_update_for_a_uri_not_subscribed_is_filtered_out() -> None:
    p = proof("-", [], [])
    wanted = {"resourceSubscriptions": ["file:///a"]}
    fired = play(
        p, [listen(3, **wanted), ack(3, **wanted), changed("resources/updated", 3, uri="file:///b")]
    )
    assert [f.rule for f in fired.findings] == ["MOD-SUBS-FILTER"]
    fine = play(
        p, [listen(3, **wanted), ack(3, **wanted), changed("resources/updated", 3, uri="file:///a")]
    )
    assert fine.findings == []


def test_an_open_listen_stream_is_not_unanswered_at_the_end() -> None:
    convo = play(proof("-", [], []), [listen(3, toolsListChanged=True), ack(3), end()])
    assert convo.findings == []


def test_the_server_tears_down_a_subscription_with_cancelled_only() -> None:
    p = proof("-", [], [])
    torn = play(
        p,
        [
            listen(3, toolsListChanged=True),
            ack(3),
            s(note("notifications/cancelled", {"requestId": 3})),
            end(),
        ],
    )
    assert torn.findings == []
    other = play(p, [listen(3), ack(3), s(note("notifications/cancelled", {"requestId": 99}))])
    assert [f.rule for f in other.findings] == ["MOD-SUBS-CLOSE"]


def test_a_change_without_subscription_id_while_one_is_open() -> None:
    convo = play(
        proof("-", [], []),
        [listen(3, toolsListChanged=True), ack(3), changed("tools/list_changed", None)],
    )
    assert [f.rule for f in convo.findings] == ["MOD-SUBS-ID"]
    ack_without_id = play(proof("-", [], []), [listen(3), ack(None)])
    assert [f.rule for f in ack_without_id.findings] == ["MOD-SUBS-ACK-FIRST"]


def test_a_huge_or_odd_subscription_id_is_shown_bounded() -> None:
    steps = [
        listen(3),
        ack(3),
        changed("tools/list_changed", "x" * 100_000),
        changed("tools/list_changed", {"a": [1]}),
    ]
    convo = play(proof("-", [], []), steps)
    assert [f.rule for f in convo.findings] == ["MOD-SUBS-ID", "MOD-SUBS-ID"]
    assert all(len(f.message) < 400 for f in convo.findings)
    assert [r for r in convo.records if getattr(r, "event", "") == "analyzer-error"] == []


def test_two_http_clients_with_the_same_listen_id_keep_their_own_filters() -> None:
    """Stateless HTTP clients each count ids from 1: subscriptions are kept per client."""
    from tests.core.rules.dsl import ACCEPT_BOTH, body, http_response

    def post_listen(number: int, client: str, **wanted: Any) -> list:
        headers = [["accept", ACCEPT_BOTH], ["mcp-protocol-version", V5]]
        data = {"exchange": number, "method": "POST", "path": "/mcp", "headers": headers}
        request = req(1, "subscriptions/listen", {"notifications": wanted, "_meta": META})
        return [
            ("event", ("http-request", {**data, "transport": "streamable", "client": client})),
            body(number, request),
            http_response(number, 200, content_type="text/event-stream"),
        ]

    def on_stream(number: int, payload: Any) -> Any:
        return body(number, payload[1], "s2c", sse_index=0)

    steps = [
        *post_listen(1, "127.0.0.1:5001", toolsListChanged=True),
        *post_listen(2, "127.0.0.1:5002", promptsListChanged=True),
        on_stream(1, ack(1, toolsListChanged=True)),
        on_stream(2, ack(1, promptsListChanged=True)),
        on_stream(1, changed("tools/list_changed", 1)),
        on_stream(2, changed("prompts/list_changed", 1)),
    ]
    convo = play(Proof("-", [], [], version=None, transport="http"), steps)
    assert [f.rule for f in convo.findings if f.rule.startswith("MOD-SUBS")] == []
    crossed = play(
        Proof("-", [], [], version=None, transport="http"),
        [*steps, on_stream(2, changed("tools/list_changed", 1))],
    )
    assert [f.rule for f in crossed.findings if f.rule.startswith("MOD-SUBS")] == [
        "MOD-SUBS-FILTER"
    ]


#: Causes the descriptions name beyond the one each proof fires: (proof, message fragment).
CAUSES = [
    (
        proof(
            "MOD-SUBS-FILTER",
            # The acknowledgement honours prompts changes the client did not ask for.
            fire=[
                listen(7, toolsListChanged=True),
                ack(7, toolsListChanged=True, promptsListChanged=True),
            ],
            miss=[listen(7, toolsListChanged=True), ack(7, toolsListChanged=True)],
        ),
        "which the client did not ask for; it honours a subset",
    ),
]


@pytest.mark.parametrize(("p", "fragment"), CAUSES, ids=[f for _, f in CAUSES])
def test_each_cause_the_description_names_fires(p: Proof, fragment: str) -> None:
    assert_cause(p, fragment)
