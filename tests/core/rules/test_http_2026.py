"""rules/http_2026.py: the 2026-07-28 request metadata headers, fired and near-missed."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.core.rules.dsl import (
    ACCEPT_BOTH,
    Proof,
    Step,
    assert_proof,
    body,
    http,
    http_response,
    play,
    req,
    res,
)

V4, V5 = "2025-11-25", "2026-07-28"
JSON = "application/json"
SERVER_META = {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}


def meta(version: str = V5, **extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
        **extra,
    }


def v5(id_: int, method: str, params: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    return req(id_, method, {**(params or {}), "_meta": meta(**kw)})


def complete(id_: int, value: dict[str, Any] | None = None) -> dict[str, Any]:
    return res(id_, {**(value or {}), "resultType": "complete", "_meta": SERVER_META})


def post(
    number: int,
    payload: dict[str, Any],
    reply: dict[str, Any] | None = None,
    status: int = 200,
    **headers: str,
) -> list[Step]:
    """A modern POST: the standard headers unless the test gives them (None: left out)."""
    headers.setdefault("accept", ACCEPT_BOTH)
    headers.setdefault("mcp_protocol_version", V5)
    headers.setdefault("mcp_method", payload["method"])
    given = {k: v for k, v in headers.items() if v is not None}
    steps = [http(number, "POST", **given), body(number, payload)]
    if reply is not None:
        steps += [
            http_response(number, status, content_type=JSON),
            body(number, reply, "s2c", status=status),
        ]
    return steps


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


REGION_TOOL = {
    "name": "execute_sql",
    "inputSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "query": {"type": "string"},
        },
    },
}
CACHE = {"ttlMs": 0, "cacheScope": "public"}


def listed(*tools: dict[str, Any]) -> list[Step]:
    """tools/list answered with ``tools``."""
    return post(9, v5(9, "tools/list"), complete(9, {"tools": list(tools), **CACHE}))


def call(
    number: int, arguments: dict[str, Any], name: str = "execute_sql", **headers: str
) -> list[Step]:
    headers.setdefault("mcp_name", name)
    payload = v5(number, "tools/call", {"name": name, "arguments": arguments})
    return post(number, payload, complete(number, {"content": []}), **headers)


def proof(rule: str, fire: list, miss: list, **kw: Any) -> Proof:
    return Proof(rule, fire, miss, version=None, transport="http", **kw)


PROOFS = [
    proof(
        "MOD-HTTP-STD-HEADERS",
        fire=post(1, v5(1, "tools/list"), mcp_method="tools/call"),
        miss=post(1, v5(1, "tools/list")),
    ),
    proof(
        "MOD-HTTP-PROTO-HEADER",
        fire=post(1, v5(1, "tools/list"), mcp_protocol_version=V4),
        miss=post(1, v5(1, "tools/list")),
    ),
    proof(
        "MOD-HTTP-BASE64",
        # A raw UTF-8 name: header values are visible ASCII, so it must be encoded.
        fire=post(1, v5(1, "prompts/get", {"name": "grüße"}), mcp_name="grüße"),
        miss=post(1, v5(1, "prompts/get", {"name": "grüße"}), mcp_name=b64("grüße")),
    ),
    proof(
        "MOD-HTTP-PARAM-HEADERS",
        fire=[*listed(REGION_TOOL), *call(1, {"region": "us-west1", "query": "q"})],
        miss=[
            *listed(REGION_TOOL),
            *call(1, {"region": "us-west1", "query": "q"}, mcp_param_Region="us-west1"),
        ],
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def run(*steps: Step) -> Any:
    return play(Proof("-", [], [], version=None, transport="http"), [s for s in steps])


@pytest.mark.parametrize(
    "name",
    ["get weather", "grüße", "天気", " padded ", "=?base64?literal?=", "a" * 300],
)
def test_an_encoded_mcp_name_is_decoded_before_it_is_compared(name: str) -> None:
    """streamable-http.mdx § Value Encoding: servers decode before comparing."""
    convo = run(*post(1, v5(1, "tools/call", {"name": name}), mcp_name=b64(name)))
    assert convo.findings == []


def test_a_plain_name_with_inner_spaces_needs_no_encoding() -> None:
    convo = run(*post(1, v5(1, "tools/call", {"name": "get weather"}), mcp_name="get weather"))
    assert convo.findings == []


def test_an_encoded_name_that_decodes_to_another_name_is_a_mismatch() -> None:
    convo = run(*post(1, v5(1, "tools/call", {"name": "a"}), mcp_name=b64("b")))
    (finding,) = convo.find("MOD-HTTP-STD-HEADERS")
    assert "'b' (decoded)" in finding.message and "'a'" in finding.message


def test_uppercase_markers_are_no_encoding() -> None:
    convo = run(*post(1, v5(1, "tools/call", {"name": "ü"}), mcp_name="=?BASE64?" + b64("ü")[9:]))
    (finding,) = convo.find("MOD-HTTP-STD-HEADERS")
    assert "case-sensitive" in finding.message


def test_bad_base64_in_mcp_name() -> None:
    convo = run(*post(1, v5(1, "tools/call", {"name": "x"}), mcp_name="=?base64?!!!?="))
    (finding,) = convo.find("MOD-HTTP-BASE64")
    assert "not valid Base64" in finding.message


def test_a_value_that_looks_like_the_sentinel_must_be_encoded() -> None:
    name = "=?base64?eA==?="  # decodes to "x": the server would read "x"
    convo = run(*post(1, v5(1, "tools/call", {"name": name}), mcp_name=name))
    assert convo.rules() == ["MOD-HTTP-STD-HEADERS"]
    assert "'x' (decoded)" in convo.findings[0].message


def test_missing_mcp_name_and_method() -> None:
    convo = run(*post(1, v5(1, "resources/read", {"uri": "file:///a"}), mcp_method=None))
    messages = " | ".join(f.message for f in convo.find("MOD-HTTP-STD-HEADERS"))
    assert len(convo.find("MOD-HTTP-STD-HEADERS")) == 2
    assert "no Mcp-Method header" in messages and "no Mcp-Name header" in messages


def test_the_version_header_is_compared_with_the_requests_own_meta() -> None:
    """An unsupported version in header and _meta alike is negotiation, not a mismatch."""
    convo = run(
        *post(1, v5(1, "tools/list")),
        *post(2, v5(2, "tools/list", version="1900-01-01"), mcp_protocol_version="1900-01-01"),
    )
    assert convo.find("MOD-HTTP-PROTO-HEADER") == []


def test_a_missing_version_header_is_reported() -> None:
    convo = run(*post(1, v5(1, "tools/list"), mcp_protocol_version=None))
    (finding,) = convo.find("MOD-HTTP-PROTO-HEADER")
    assert "no MCP-Protocol-Version header" in finding.message


def test_notification_posts_are_not_judged() -> None:
    payload = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}
    convo = run(
        http(1, "POST", accept=ACCEPT_BOTH), body(1, payload), *post(2, v5(2, "tools/list"))
    )
    assert [f for f in convo.findings if f.rule.startswith("MOD-HTTP")] == []


# --------------------------------------------------------------------------- Mcp-Param-*


@pytest.mark.parametrize(
    ("arguments", "headers"),
    [
        (
            {"region": "us-west1", "limit": 42},
            {"mcp_param_Region": "us-west1", "mcp_param_limit": "42"},
        ),
        ({"region": "Hello, 世界"}, {"mcp_param_region": b64("Hello, 世界")}),
        ({"region": " padded "}, {"mcp_param_Region": b64(" padded ")}),
        ({"region": None, "limit": 7.0}, {"mcp_param_Limit": "7"}),
        ({"query": "q"}, {}),
    ],
)
def test_correct_param_headers_stay_clean(arguments: dict, headers: dict) -> None:
    convo = run(*listed(REGION_TOOL), *call(1, arguments, **headers))
    # (A null region breaks the tool's schema: TOOL-ARGS-SCHEMA, not a header fault.)
    assert [f.message for f in convo.findings if f.rule != "TOOL-ARGS-SCHEMA"] == []


@pytest.mark.parametrize(
    ("arguments", "headers", "rule", "words"),
    [
        (
            {"region": "eu"},
            {"mcp_param_Region": "us"},
            "MOD-HTTP-PARAM-HEADERS",
            "but arguments.region",
        ),
        ({"region": None}, {"mcp_param_Region": "x"}, "MOD-HTTP-PARAM-HEADERS", "is null"),
        ({}, {"mcp_param_Region": "x"}, "MOD-HTTP-PARAM-HEADERS", "is absent"),
        ({"limit": 3}, {}, "MOD-HTTP-PARAM-HEADERS", "no Mcp-Param-Limit header"),
        (
            {"region": "Hello, 世界"},
            {"mcp_param_Region": "Hello, 世界"},
            "MOD-HTTP-BASE64",
            "outside",
        ),
        ({"region": " padded "}, {"mcp_param_Region": "padded"}, "MOD-HTTP-BASE64", "whitespace"),
        ({"region": "a\x01b"}, {"mcp_param_Region": "a\x01b"}, "MOD-HTTP-BASE64", "outside"),
    ],
)
def test_param_header_faults(arguments: dict, headers: dict, rule: str, words: str) -> None:
    convo = run(*listed(REGION_TOOL), *call(1, arguments, **headers))
    found = [f for f in convo.findings if f.rule != "TOOL-ARGS-SCHEMA"]
    client, server = found[0], found[1:]
    assert client.rule == rule and words in client.message, [f.message for f in found]
    # The server answered with a result: it did not validate the headers.
    assert [(f.rule, "with a result although" in f.message) for f in server] == [(rule, True)]


def test_nested_properties_are_mirrored() -> None:
    tool = {
        "name": "t",
        "inputSchema": {
            "type": "object",
            "properties": {
                "where": {
                    "type": "object",
                    "properties": {"zone": {"type": "boolean", "x-mcp-header": "Zone"}},
                }
            },
        },
    }
    clean = run(*listed(tool), *call(1, {"where": {"zone": True}}, "t", mcp_param_zone="true"))
    assert clean.findings == []
    wrong = run(*listed(tool), *call(1, {"where": {"zone": True}}, "t", mcp_param_zone="True"))
    assert wrong.rules() == ["MOD-HTTP-PARAM-HEADERS"] * 2  # the client's, the server's


def test_a_tool_not_listed_is_not_judged() -> None:
    convo = run(*call(1, {"region": "x"}))
    assert convo.findings == []


@pytest.mark.parametrize(
    ("properties", "words"),
    [
        ({"a": {"type": "string", "x-mcp-header": ""}}, "non-empty"),
        ({"a": {"type": "string", "x-mcp-header": "Bad Name"}}, "token"),
        ({"a": {"type": "number", "x-mcp-header": "A"}}, "'number'"),
        ({"a": {"type": "object", "x-mcp-header": "A"}}, "'object'"),
        (
            {
                "a": {"type": "string", "x-mcp-header": "A"},
                "b": {"type": "string", "x-mcp-header": "a"},
            },
            "case-insensitive",
        ),
        ({"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}, "reachable"),
        ({"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}, "reachable"),
    ],
)
def test_invalid_annotations_make_the_tool_invalid(properties: dict, words: str) -> None:
    tool = {"name": "bad", "inputSchema": {"type": "object", "properties": properties}}
    convo = run(*listed(tool))
    (finding,) = convo.find("MOD-HTTP-PARAM-HEADERS")
    assert "'bad' is invalid" in finding.message and words in finding.message
    called = run(*listed(tool), *call(1, {"a": "x"}, "bad"))
    messages = [f.message for f in called.find("MOD-HTTP-PARAM-HEADERS")]
    assert any("a client must drop such a tool" in m for m in messages)


def test_valid_annotations_stay_clean_in_the_listing() -> None:
    convo = run(*listed(REGION_TOOL))
    assert convo.findings == []


def test_a_redacted_value_is_not_compared() -> None:
    convo = run(*listed(REGION_TOOL), *call(1, {"region": "x"}, mcp_param_Region="[REDACTED]"))
    assert convo.findings == []
