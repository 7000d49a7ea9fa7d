"""rules/negotiation.py: unsupported versions and missing _meta, judged on the server's answer."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Conversation
from tests.core.rules.dsl import Proof, err, play, req
from tests.core.rules.test_http_2026 import V5, complete, post, v5

OLD = "1900-01-01"


def stdio(*steps: tuple[str, Any]) -> Conversation:
    convo = Conversation("stdio")
    for direction, payload in steps:
        (convo.client if direction == "c" else convo.server)(payload)
    return convo


def unsupported_error(id_: int, supported: Any = (V5,), requested: str = OLD) -> dict[str, Any]:
    data = {"supported": list(supported) if isinstance(supported, tuple) else supported}
    data["requested"] = requested
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "error": {"code": -32022, "message": "Unsupported protocol version", "data": data},
    }


def test_a_correct_negotiation_stays_clean() -> None:
    convo = stdio(
        ("c", v5(1, "tools/list", version=OLD)),
        ("s", unsupported_error(1)),
        ("c", v5(2, "tools/list")),
        ("s", complete(2, {"tools": [], "ttlMs": 0, "cacheScope": "public"})),
    )
    assert convo.findings == []


@pytest.mark.parametrize(
    ("answer", "how", "data"),
    [
        (
            err(1, -32602),
            f"tools/list for protocol version {OLD!r}, which it does not support, "
            "with error -32602",
            {"requested": OLD, "code": -32602},
        ),
        (
            complete(1, {"tools": []}),
            f"tools/list with a result for protocol version {OLD!r}, which it does not support",
            {"requested": OLD},
        ),
    ],
)
def test_an_unsupported_version_must_get_32022(
    answer: dict[str, Any], how: str, data: dict[str, Any]
) -> None:
    convo = stdio(("c", v5(1, "tools/list", version=OLD)), ("s", answer))
    (finding,) = convo.find("MOD-UNSUPPORTED-VERSION")
    assert finding.message == (
        f"the server answered {how}; it must answer -32022 (UnsupportedProtocolVersion) "
        "listing the versions it supports"
    )
    assert list(finding.data.items()) == list(data.items())  # the keys in the trace's order


@pytest.mark.parametrize("version", ["2025-11-25", "2099-01-01", V5])
def test_a_version_the_server_may_support_is_not_judged(version: str) -> None:
    convo = stdio(("c", v5(1, "tools/list", version=version)), ("s", err(1, -32602)))
    assert convo.find("MOD-UNSUPPORTED-VERSION") == []


def test_discover_tells_which_versions_the_server_supports() -> None:
    discover = complete(
        1,
        {"supportedVersions": [V5], "capabilities": {}, "ttlMs": 0, "cacheScope": "public"},
    )
    convo = stdio(
        ("c", v5(1, "server/discover")),
        ("s", discover),
        ("c", v5(2, "tools/list", version="2099-01-01")),
        ("s", err(2, -32602)),
    )
    (finding,) = convo.find("MOD-UNSUPPORTED-VERSION")
    assert "'2099-01-01'" in finding.message


@pytest.mark.parametrize(
    ("supported", "words"),
    [([], "an empty array"), ([1], "non-strings"), ("2026-07-28", "not an array")],
)
def test_supported_must_be_an_array_of_strings(supported: Any, words: str) -> None:
    convo = stdio(("c", v5(1, "tools/list", version=OLD)), ("s", unsupported_error(1, supported)))
    (finding,) = convo.find("MOD-UNSUPPORTED-VERSION")
    assert words in finding.message


def test_refusing_a_version_it_lists_is_contradictory() -> None:
    convo = stdio(("c", v5(1, "tools/list", version=OLD)), ("s", unsupported_error(1, (V5, OLD))))
    (finding,) = convo.find("MOD-UNSUPPORTED-VERSION")
    assert "yet its data.supported lists it" in finding.message


def test_the_clients_retry_must_pick_a_listed_version() -> None:
    convo = stdio(
        ("c", v5(1, "tools/list", version=OLD)),
        ("s", unsupported_error(1)),
        ("c", v5(2, "tools/list", version=OLD)),
    )
    found = [f for f in convo.find("MOD-UNSUPPORTED-VERSION") if "retried" in f.message]
    assert len(found) == 1 and found[0].severity == "warning"


def test_the_refusal_arms_the_retry_check_mid_session() -> None:
    # Requests before the -32022 do not call the retry check (registry.py
    # ``armed_by``); the refusal arms it, and the next request is judged.
    convo = stdio(
        ("c", v5(1, "tools/list", version=V5)),
        ("s", complete(1, {"tools": [], "ttlMs": 0, "cacheScope": "public"})),
    )
    assert convo.session.state.armed == frozenset()
    convo = stdio(
        ("c", v5(1, "tools/list", version=V5)),
        ("s", complete(1, {"tools": [], "ttlMs": 0, "cacheScope": "public"})),
        ("c", v5(2, "tools/list", version=OLD)),
        ("s", unsupported_error(2)),
        ("c", v5(3, "tools/list", version=OLD)),
    )
    assert convo.session.state.armed == frozenset({"version_retries"})
    found = [f for f in convo.find("MOD-UNSUPPORTED-VERSION") if "retried" in f.message]
    assert len(found) == 1 and found[0].seq[-1] == 5


def test_a_server_accepting_a_request_without_meta_is_reported() -> None:
    bare = req(1, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": V5}})
    convo = stdio(
        ("c", bare), ("s", complete(1, {"tools": [], "ttlMs": 0, "cacheScope": "public"}))
    )
    messages = [f.message for f in convo.find("MOD-META-REQUIRED")]
    assert len(messages) == 2  # the client's request, and the server that accepted it
    assert "answered tools/list with a result although" in messages[1]
    rejected = stdio(("c", bare), ("s", err(1, -32602)))
    assert len(rejected.find("MOD-META-REQUIRED")) == 1


def test_over_http_the_same_version_in_header_and_meta_is_negotiation() -> None:
    """Issue 25: no MOD-HTTP-PROTO-HEADER for an unsupported version sent consistently."""
    convo = play(
        Proof("-", [], [], version=None, transport="http"),
        [
            *post(
                1,
                v5(1, "tools/list", version=OLD),
                unsupported_error(1),
                status=400,
                mcp_protocol_version=OLD,
            ),
            *post(
                2,
                v5(2, "tools/list"),
                complete(2, {"tools": [], "ttlMs": 0, "cacheScope": "public"}),
            ),
        ],
    )
    assert convo.findings == []
