"""Definition fingerprints: key order and whitespace do not count, meaning does."""

from __future__ import annotations

import orjson

from mcpsniff.core.guard.fingerprint import definitions, fingerprint_of, offer_fingerprint, texts

TOOL = {
    "name": "read",
    "description": "Reads a file.",
    "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def test_key_order_and_whitespace_do_not_count() -> None:
    shuffled = orjson.loads(
        b'{ "inputSchema" : {"properties": {"path": {"type":"string"}}, "type": "object"},'
        b' "description": "Reads a file.", "name": "read" }'
    )
    assert fingerprint_of(TOOL)[0] == fingerprint_of(shuffled)[0]
    assert fingerprint_of(TOOL)[0].startswith("sha256:") and len(fingerprint_of(TOOL)[0]) == 39


def test_every_meaningful_member_counts_and_icons_do_not() -> None:
    base = fingerprint_of(TOOL)[0]
    for change in (
        {"description": "Reads a file!"},
        {"inputSchema": {"type": "object"}},
        {"annotations": {"destructiveHint": True}},
        {"outputSchema": {"type": "object"}},
        {"_meta": {"ui": {"resourceUri": "ui://x"}}},
    ):
        assert fingerprint_of({**TOOL, **change})[0] != base, change
    assert fingerprint_of({**TOOL, "icons": [{"src": "https://x/i.png"}]})[0] == base


def test_definitions_of_each_list() -> None:
    assert [d.key for d in definitions("tools/list", {"tools": [TOOL, {"bad": 1}, 3]})] == [
        "tool:read"
    ]
    assert [d.key for d in definitions("prompts/list", {"prompts": [{"name": "p"}]})] == [
        "prompt:p"
    ]
    resources = definitions("resources/list", {"resources": [{"uri": "file:///a", "name": "a"}]})
    assert [d.key for d in resources] == ["resource:file:///a"]
    templates = {"resourceTemplates": [{"uriTemplate": "file:///{p}", "name": "t"}]}
    assert [d.key for d in definitions("resources/templates/list", templates)] == [
        "resource-template:file:///{p}"
    ]
    assert list(definitions("tools/call", {"tools": [TOOL]})) == []
    assert list(definitions("tools/list", {"tools": "nope"})) == []


def test_an_offer_fingerprint_ignores_listing_order() -> None:
    other = {**TOOL, "name": "write"}
    one = list(definitions("tools/list", {"tools": [TOOL, other]}))
    two = list(definitions("tools/list", {"tools": [other, TOOL]}))
    assert offer_fingerprint(one) == offer_fingerprint(two)
    assert offer_fingerprint(one) != offer_fingerprint(one[:1])


def test_texts_name_every_text_the_model_reads() -> None:
    tool = {
        **TOOL,
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Where."}},
        },
        "_meta": {"description": "not for the model"},
    }
    (definition,) = definitions("tools/list", {"tools": [tool]})
    found = dict(texts(definition))
    assert found["description"] == "Reads a file."
    assert found["inputSchema.properties.path.description"] == "Where."
    assert "not for the model" not in found.values()
