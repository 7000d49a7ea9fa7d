"""rules/apps_extension.py: MCP Apps views, each rule fired and near-missed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.rules.dsl import Proof, assert_proof, c, err, play, req, res, s

UI = "io.modelcontextprotocol/ui"
MIME = "text/html;profile=mcp-app"
VIEW = "ui://weather/dashboard"
DECLARED = {"extensions": {UI: {"mimeTypes": [MIME]}}}


def tool(name: str = "weather", uri: Any = VIEW) -> dict[str, Any]:
    return {
        "name": name,
        "inputSchema": {"type": "object"},
        "_meta": {"ui": {"resourceUri": uri, "visibility": ["model", "app"]}},
    }


def listed(*tools: dict[str, Any]) -> list:
    return [c(req(1, "tools/list")), s(res(1, {"tools": list(tools)}))]


def read(id_: int, uri: str = VIEW) -> Any:
    return c(req(id_, "resources/read", {"uri": uri}))


def view(id_: int, uri: str = VIEW, mime: str = MIME, **content: Any) -> Any:
    item = {"uri": uri, "mimeType": mime, **(content or {"text": "<!DOCTYPE html><html></html>"})}
    return s(res(id_, {"contents": [item]}))


def proof(rule: str, fire: list, miss: list, **kw: Any) -> Proof:
    kw.setdefault("client_caps", DECLARED)
    return Proof(rule, fire, miss, **kw)


PROOFS = [
    proof(
        "EXT-APPS-RESOURCE",
        # The view is served as plain text/html.
        fire=[*listed(tool()), read(2), view(2, mime="text/html")],
        miss=[*listed(tool()), read(2), view(2)],
    ),
    proof(
        "EXT-APPS-TOOL-URI",
        # The view a tool names does not exist on the server.
        fire=[*listed(tool()), read(2), s(err(2, -32002, "Resource not found"))],
        miss=[*listed(tool()), read(2), view(2)],
    ),
    proof(
        "EXT-APPS-NEGOTIATED",
        # UI-enabled tools offered to a client that did not declare the extension.
        fire=listed(tool()),
        miss=listed(tool()),
        client_caps={},
        miss_client_caps=DECLARED,
    ),
    proof(
        "EXT-APPS-VISIBILITY",
        # An app-only tool whose visibility is a string, not an array of audiences.
        fire=listed(
            {**tool("refresh"), "_meta": {"ui": {"resourceUri": VIEW, "visibility": "app"}}}
        ),
        miss=listed(
            {**tool("refresh"), "_meta": {"ui": {"resourceUri": VIEW, "visibility": ["app"]}}}
        ),
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=lambda p: p.id)
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def findings(steps: list, caps: dict[str, Any] = DECLARED) -> list[tuple[str, str]]:
    convo = play(proof("EXT-APPS-RESOURCE", [], [], client_caps=caps), steps)
    return [(f.rule, f.message) for f in convo.findings]


def test_a_view_uri_that_is_not_ui_scheme() -> None:
    assert findings(listed(tool(uri="https://example.com/view.html"))) == [
        (
            "EXT-APPS-TOOL-URI",
            "tool 'weather' names its view 'https://example.com/view.html'; "
            "_meta.ui.resourceUri must be a ui:// URI",
        )
    ]


def test_a_view_without_html_is_the_resource_shape_rule() -> None:
    found = findings([*listed(tool()), read(2), view(2, blob=None)])
    assert [rule for rule, _ in found] == ["RES-READ-SHAPE"]
    found = findings([*listed(tool()), read(2), view(2, mime="text/plain")])
    assert found == [
        (
            "EXT-APPS-RESOURCE",
            f"the MCP App view {VIEW!r} was read with mimeType 'text/plain', not {MIME!r}",
        )
    ]


def test_mime_type_parameters_compare_like_mime_does() -> None:
    steps = [*listed(tool()), read(2), view(2, mime='Text/HTML; profile="mcp-app"')]
    assert findings(steps) == []


def test_an_empty_read_of_a_named_view_is_a_missing_resource() -> None:
    found = findings([*listed(tool()), read(2), s(res(2, {"contents": []}))])
    assert [rule for rule, _ in found] == ["EXT-APPS-TOOL-URI"]


def test_other_resources_and_tools_are_not_judged() -> None:
    steps = [
        c(req(1, "tools/list")),
        s(res(1, {"tools": [{"name": "plain", "inputSchema": {"type": "object"}}]})),
        read(2, "file:///a.txt"),
        s(res(2, {"contents": [{"uri": "file:///a.txt", "mimeType": "text/plain", "text": "a"}]})),
        read(3, "file:///gone"),
        s(err(3, -32002, "not found")),
    ]
    assert findings(steps, caps={}) == []


def test_a_2026_07_28_client_declares_per_request() -> None:
    def listing(caps: dict[str, Any]) -> list:
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps,
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
        }
        body = {
            "resultType": "complete",
            "tools": [tool()],
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}},
        }
        return [c(req(1, "tools/list", {"_meta": meta})), s(res(1, body))]

    def rules(steps: list) -> list[str]:
        return [
            f.rule for f in play(Proof("EXT-APPS-NEGOTIATED", [], [], version=None), steps).findings
        ]

    assert rules(listing(DECLARED)) == []
    assert rules(listing({})) == ["EXT-APPS-NEGOTIATED"]


@pytest.mark.parametrize(
    ("visibility", "fires"),
    [(["model"], False), ([], False), (["agent"], True), (["model", 1], True), (None, True)],
)
def test_visibility_names_model_and_app_only(visibility: Any, fires: bool) -> None:
    listing = {**tool(), "_meta": {"ui": {"visibility": visibility}}}
    found = [r for r, _ in findings(listed(listing)) if r == "EXT-APPS-VISIBILITY"]
    assert found == (["EXT-APPS-VISIBILITY"] if fires else [])
