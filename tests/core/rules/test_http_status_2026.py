"""rules/http_status_2026.py: the HTTP status of 2026-07-28 replies, fired and near-missed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.rules.dsl import (
    ACCEPT_BOTH,
    Proof,
    Step,
    assert_proof,
    body,
    err,
    http,
    http_response,
    note,
    play,
    req,
)
from tests.core.rules.test_http_2026 import V5, complete, post, v5

JSON = "application/json"


def proof(rule: str, fire: list, miss: list) -> Proof:
    return Proof(rule, fire, miss, version=None, transport="http")


def refused(code: int, status: int, method: str = "tools/list", **kw: Any) -> list[Step]:
    return post(1, v5(1, method, **kw), err(1, code), status=status)


PROOFS = [
    proof(
        "MOD-HTTP-404-METHOD",
        fire=refused(-32601, 200, "tools/frobnicate"),
        miss=refused(-32601, 404, "tools/frobnicate"),
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def run(*steps: Step) -> Any:
    return play(Proof("-", [], [], version=None, transport="http"), list(steps))


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        (-32020, "MOD-HTTP-STD-HEADERS"),
        (-32021, "MOD-MISSING-CLIENT-CAP"),
        (-32022, "MOD-UNSUPPORTED-VERSION"),
        (-32601, "MOD-HTTP-404-METHOD"),
    ],
)
def test_modern_errors_need_their_status(code: int, rule: str) -> None:
    wrong = run(*refused(code, 200))
    (finding,) = [f for f in wrong.find(rule) if "under HTTP" in f.message]
    assert "under HTTP 200" in finding.message and finding.data["expected_status"] in (400, 404)
    right = run(*refused(code, finding.data["expected_status"]))
    assert [f for f in right.find(rule) if "under HTTP" in f.message] == []


def test_an_error_on_an_sse_stream_is_no_400() -> None:
    steps = [
        http(1, "POST", accept=ACCEPT_BOTH, mcp_protocol_version=V5, mcp_method="tools/list"),
        body(1, v5(1, "tools/list")),
        http_response(1, 200, content_type="text/event-stream"),
        ("frame", ("s2c", err(1, -32021), {"exchange": 1})),
    ]
    convo = run(*steps)
    (finding,) = [f for f in convo.find("MOD-MISSING-CLIENT-CAP") if "under HTTP" in f.message]
    assert "under HTTP 200 on an SSE stream" in finding.message


def test_an_ordinary_invalid_params_error_may_come_with_200() -> None:
    convo = run(*refused(-32602, 200, "tools/call"))
    assert convo.findings == []


def test_missing_meta_is_rejected_with_400() -> None:
    bare = req(1, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": V5}})
    wrong = run(*post(1, bare, err(1, -32602), status=200))
    assert [f.message for f in wrong.find("MOD-META-REQUIRED") if "under HTTP" in f.message]
    right = run(*post(1, bare, err(1, -32602), status=400))
    assert [f for f in right.find("MOD-META-REQUIRED") if "under HTTP" in f.message] == []


def test_a_legacy_server_refusing_the_discover_probe_is_not_judged() -> None:
    convo = run(*refused(-32601, 200, "server/discover"))
    assert convo.find("MOD-HTTP-404-METHOD") == []


def test_a_server_accepting_a_header_mismatch_is_reported() -> None:
    convo = run(*post(1, v5(1, "tools/list"), complete(1, {"tools": []}), mcp_method="tools/call"))
    messages = [f.message for f in convo.find("MOD-HTTP-STD-HEADERS")]
    assert len(messages) == 2
    assert "answered tools/list with a result although" in messages[1]


def test_a_server_rejecting_a_header_mismatch_is_not_blamed() -> None:
    convo = run(*post(1, v5(1, "tools/list"), err(1, -32020), status=400, mcp_method="tools/call"))
    assert len(convo.find("MOD-HTTP-STD-HEADERS")) == 1  # the client's fault only


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_get_405(method: str) -> None:
    head = http(1, method, accept="text/event-stream", mcp_protocol_version=V5)
    wrong = run(head, http_response(1, 200, content_type="text/event-stream"))
    (finding,) = wrong.find("MOD-HTTP-POST-ONLY")
    assert finding.severity == "warning" and "405" in finding.message
    assert run(head, http_response(1, 405)).find("MOD-HTTP-POST-ONLY") == []


def test_a_legacy_get_is_not_judged() -> None:
    head = http(1, "GET", accept="text/event-stream", mcp_protocol_version="2025-11-25")
    convo = run(*post(2, v5(2, "tools/list")), head, http_response(1, 200, content_type=JSON))
    assert convo.find("MOD-HTTP-POST-ONLY") == []


def test_a_notification_post_gets_202() -> None:
    cancel = note("notifications/cancelled", {"requestId": 1})
    steps = [
        *post(1, v5(1, "tools/list")),
        http(2, "POST", accept=ACCEPT_BOTH, mcp_protocol_version=V5),
        body(2, cancel),
    ]
    wrong = run(*steps, http_response(2, 200, content_type=JSON))
    assert wrong.find("HTTP-202")
    assert run(*steps, http_response(2, 202)).find("HTTP-202") == []


def test_a_server_that_does_not_decode_base64_is_reported() -> None:
    """The server side of issue 25's false alarm: -32020 for a correctly encoded name."""
    from tests.core.rules.test_http_2026 import b64

    named = v5(1, "tools/call", {"name": "天気"})
    wrong = run(*post(1, named, err(1, -32020), status=400, mcp_name=b64("天気")))
    (finding,) = wrong.find("MOD-HTTP-BASE64")
    assert "Mcp-Name match the body once" in finding.message
    plain = run(
        *post(1, v5(1, "tools/call", {"name": "a"}), err(1, -32020), status=400, mcp_name="a")
    )
    assert plain.find("MOD-HTTP-BASE64") == []
    served = run(*post(1, named, complete(1, {"content": []}), mcp_name=b64("天気")))
    assert served.findings == []
