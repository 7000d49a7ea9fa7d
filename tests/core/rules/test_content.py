"""rules/content.py: content blocks, resources, annotations and icons, fired and near-missed."""

from __future__ import annotations

from typing import Any

import pytest

from mcpsniff.core.rules import registry
from tests.core.rules.dsl import Proof, assert_cause, assert_proof, c, req, res, s

PNG = "iVBORw0KGgo="
CALL = req(2, "tools/call", {"name": "t", "arguments": {}})


def called(*blocks: dict[str, Any], **extra: Any) -> list:
    return [c(CALL), s(res(2, {"content": list(blocks), **extra}))]


def asked(method: str, params: Any, result: dict[str, Any]) -> list:
    return [c(req(3, method, params)), s(res(3, result))]


TEXT = {"type": "text", "text": "ok"}
IMAGE = {"type": "image", "data": PNG, "mimeType": "image/png"}
LINK = {"type": "resource_link", "uri": "file:///a.txt", "name": "a"}
EMBEDDED = {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hi"}}
NO_RESOURCES = {"tools": {}, "prompts": {}}


def tools_with(**fields: Any) -> dict[str, Any]:
    return {"tools": [{"name": "t", "inputSchema": {"type": "object"}, **fields}]}


PROOFS = [
    Proof(
        "TOOL-BINARY-BASE64",
        fire=called({**IMAGE, "data": "not base64!"}),
        miss=called(IMAGE),
    ),
    Proof(
        "TOOL-RESOURCE-LINK-SHAPE",
        fire=called({"type": "resource_link", "uri": "file:///a.txt"}),
        miss=called(LINK),
    ),
    Proof(
        "TOOL-STRUCTURED-TEXT",
        fire=called(TEXT, structuredContent={"v": 1}),
        miss=called({"type": "text", "text": '{"v": 1}'}, structuredContent={"v": 1}),
    ),
    Proof(
        "TOOL-EMBEDDED-RES-CAP",
        fire=called(EMBEDDED),
        miss=called(LINK),
        server_caps=NO_RESOURCES,
    ),
    Proof(
        "TOOL-ANNOTATIONS-SHAPE",
        fire=asked("tools/list", {}, tools_with(annotations={"readOnlyHint": "yes"})),
        miss=asked("tools/list", {}, tools_with(annotations={"readOnlyHint": True, "title": "T"})),
    ),
    Proof(
        "RES-URI",
        fire=asked("resources/list", {}, {"resources": [{"uri": "my file.txt", "name": "a"}]}),
        miss=asked(
            "resources/list", {}, {"resources": [{"uri": "file:///my%20file.txt", "name": "a"}]}
        ),
    ),
    Proof(
        "RES-ANNOTATIONS",
        fire=asked(
            "resources/list",
            {},
            {"resources": [{"uri": "file:///a", "name": "a", "annotations": {"priority": 2}}]},
        ),
        miss=asked(
            "resources/list",
            {},
            {
                "resources": [
                    {
                        "uri": "file:///a",
                        "name": "a",
                        "annotations": {"priority": 0.5, "audience": ["user"]},
                    }
                ]
            },
        ),
    ),
    Proof(
        "PROMPT-EMBEDDED",
        fire=asked(
            "prompts/get",
            {"name": "p"},
            {
                "messages": [
                    {
                        "role": "user",
                        "content": {"type": "resource", "resource": {"uri": "file:///a"}},
                    }
                ]
            },
        ),
        miss=asked(
            "prompts/get",
            {"name": "p"},
            {"messages": [{"role": "user", "content": EMBEDDED}]},
        ),
    ),
    Proof(
        "ICON-SHAPE",
        fire=asked("tools/list", {}, tools_with(icons=[{"sizes": ["48x48"]}])),
        miss=asked(
            "tools/list",
            {},
            tools_with(icons=[{"src": "https://x.example/i.png", "sizes": ["48x48"]}]),
        ),
    ),
    Proof(
        "ICON-SAFE-SCHEME",
        fire=asked(
            "prompts/list",
            {},
            {"prompts": [{"name": "p", "icons": [{"src": "javascript:alert(1)"}]}]},
        ),
        miss=asked(
            "prompts/list",
            {},
            {"prompts": [{"name": "p", "icons": [{"src": "data:image/png;base64,AA=="}]}]},
        ),
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def test_registered_rules_declare_their_event_and_methods() -> None:
    described = {d["function"].rsplit(".", 1)[1]: d for d in registry.describe()}
    assert described["binary_blocks"]["ids"] == ["TOOL-BINARY-BASE64"]
    assert described["binary_blocks"]["on"] == registry.RESULT
    assert described["binary_blocks"]["methods"] == ["prompts/get"]
    assert "TOOL-BINARY-BASE64" in described["tool_result"]["ids"]
    assert registry.handlers(registry.RESULT, "vendor/unknown") == ()


def test_a_task_payload_gets_the_registered_result_rules_of_its_origin() -> None:
    from tests.core.rules.dsl import play

    caps = {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}
    task = {
        "taskId": "t1",
        "status": "working",
        "createdAt": "2025-11-25T10:00:00Z",
        "lastUpdatedAt": "2025-11-25T10:00:00Z",
        "ttl": None,
    }
    meta = {"io.modelcontextprotocol/related-task": {"taskId": "t1"}}
    steps = [
        c(req(2, "tools/call", {"name": "t", "arguments": {}, "task": {}})),
        s(res(2, {"task": task})),
        c(req(3, "tasks/result", {"taskId": "t1"})),
        s(res(3, {"content": [{**IMAGE, "data": "%%%"}], "_meta": meta})),
    ]
    convo = play(Proof("-", [], [], server_caps=caps), steps)
    assert convo.rules() == ["TOOL-BINARY-BASE64"]


def test_a_wrapped_plain_value_in_the_text_block_counts_as_the_serialized_json() -> None:
    from tests.core.rules.dsl import play

    for text, value in (("Echo: hi", "Echo: hi"), ("2.0", 2.0)):
        steps = called({"type": "text", "text": text}, structuredContent={"result": value})
        assert play(Proof("-", [], []), steps).findings == []


#: Values for ``_compact``: what it may answer with a text, and what it must leave
#: to the parse (NaN and the infinities, which orjson writes as null; integers
#: beyond 64 bits; lone surrogates; nesting deeper than orjson writes).
_COMPACT_CASES: list[Any] = [
    {"summary": 'über café 数据 ✓ "quoted" C:\\temp\n\t', "word_count": 12},
    {"keywords": ["a", "b"], "n": -0.0, "big": 2**63 - 1, "small": -(2**63), "x": 1e308},
    {"f": 0.1, "g": 1.0, "h": 5e-324, "t": True, "u": False, "e": {}, "l": []},
    ["list", 1, 2.5],
    "a plain string",
    3,
    {"n": None},
    {"nan": float("nan")},
    {"inf": float("inf"), "ninf": float("-inf")},
    [float("nan")],
    {"huge": 2**64},
    {"s": "\ud800"},
]


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("value", [*_COMPACT_CASES, _deep(50), _deep(300)])
def test_the_compact_text_parses_back_to_the_value_it_was_written_from(value: Any) -> None:
    """structured_text's shortcut: a text equal to ``_compact(value)`` is one the
    parse finds equal to ``value``; what orjson cannot write faithfully is left
    to the parse (NaN != NaN is why the comparison below is on the parse)."""
    import math

    import orjson

    from mcpsniff.core.rules import content

    text = content._compact(value)
    writes_faithfully = True
    try:
        written = orjson.dumps(value)
    except TypeError:
        writes_faithfully = False
    else:
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, float) and not math.isfinite(item):
                writes_faithfully = False
            elif isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        writes_faithfully = writes_faithfully and b"null" not in written
    if not writes_faithfully:
        assert text is content._NOTHING
        return
    assert isinstance(text, str)
    assert orjson.loads(text) == value


@pytest.mark.parametrize(
    ("text", "structured", "fires"),
    [
        ('{"v":1,"w":"über"}', {"v": 1, "w": "über"}, False),  # the compact text
        ('{"v": 1, "w": "über"}', {"v": 1, "w": "über"}, False),  # spaced: the parse
        ('{"w":"über","v":1}', {"v": 1, "w": "über"}, False),  # reordered: the parse
        ('{"v":1,"w":"uber"}', {"v": 1, "w": "über"}, True),
        ('{"v":null}', {"v": None}, False),  # null: left to the parse
        ('{"v":2}', {"v": 1}, True),
        ("[1,2]", {"v": 1}, True),
    ],
)
def test_structured_text_judges_as_the_parse_of_every_text_block(
    text: str, structured: Any, fires: bool
) -> None:
    from tests.core.rules.dsl import play

    steps = called({"type": "text", "text": text}, structuredContent=structured)
    rules = play(Proof("-", [], []), steps).rules()
    assert ("TOOL-STRUCTURED-TEXT" in rules) is fires


def listed_with(**annotations: Any) -> list:
    """A resources/list result with one resource carrying ``annotations``."""
    resource = {"uri": "file:///a", "name": "a", "annotations": annotations}
    return asked("resources/list", {}, {"resources": [resource]})


#: Causes the descriptions name beyond the one each proof fires: (proof, message fragment).
CALLED = {"name": "t", "arguments": {}}
CAUSES = [
    (
        Proof(
            "TOOL-BINARY-BASE64",
            fire=called({**IMAGE, "mimeType": "png"}),
            miss=called(IMAGE),
        ),
        "has no valid mimeType",
    ),
    (
        Proof(
            "TOOL-BINARY-BASE64",
            fire=called({"type": "resource", "resource": {"uri": "file:///a", "blob": "%%"}}),
            miss=called({"type": "resource", "resource": {"uri": "file:///a", "blob": "AAAA"}}),
        ),
        "has a blob that is not base64",
    ),
    (
        Proof(
            "TOOL-ANNOTATIONS-SHAPE",
            fire=asked("tools/list", {}, tools_with(annotations={"title": 5})),
            miss=asked("tools/list", {}, tools_with(annotations={"title": "T"})),
        ),
        "malformed annotations: title",
    ),
    (
        Proof(
            "RES-ANNOTATIONS",
            fire=listed_with(audience=["robot"]),
            miss=listed_with(audience=["user"]),
        ),
        "audience must list only",
    ),
    (
        Proof(
            "RES-ANNOTATIONS",
            fire=listed_with(lastModified="Tuesday"),
            miss=listed_with(lastModified="2025-01-12T15:00:58Z"),
        ),
        "lastModified must be an ISO 8601",
    ),
    (
        Proof(
            "RES-URI",
            # A resource_link in a tool result whose uri is no URI.
            fire=asked("tools/call", CALLED, {"content": [{**LINK, "uri": "my file.txt"}]}),
            miss=asked("tools/call", CALLED, {"content": [LINK]}),
        ),
        "resource uri 'my file.txt' is not a valid URI",
    ),
]


@pytest.mark.parametrize(("p", "fragment"), CAUSES, ids=[f for _, f in CAUSES])
def test_each_cause_the_description_names_fires(p: Proof, fragment: str) -> None:
    assert_cause(p, fragment)
