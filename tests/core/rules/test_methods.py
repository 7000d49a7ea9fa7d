"""rules/methods.py: per-method parameters and results, each fired and near-missed."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.conftest import Conversation, request, result
from tests.core.rules.dsl import Proof, assert_cause, assert_proof, c, note, req, res, s

OBJ = {"type": "object"}
ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "number"}},
    "required": ["a"],
}
WEATHER_OUT = {"type": "object", "properties": {"t": {"type": "number"}}, "required": ["t"]}


def tool(name: str, schema: Any = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": OBJ if schema is None else schema, **extra}


def listed(*tools: dict[str, Any]) -> list:
    return [c(req(1, "tools/list")), s(res(1, {"tools": list(tools)}))]


TOOLS = listed(tool("add", ADD_SCHEMA), tool("weather", outputSchema=WEATHER_OUT))


def call(name: str, arguments: Any = None, id_: int = 2) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return req(id_, "tools/call", params)


def text(t: str = "ok") -> dict[str, Any]:
    return {"content": [{"type": "text", "text": t}]}


def asked(method: str, params: Any, reply: Any, direction: str = "c") -> list:
    """A request and its result, in the given direction (c: client asks, s: server asks)."""
    ask, answer = (c, s) if direction == "c" else (s, c)
    return [ask(req(5, method, params)), answer(res(5, reply))]


READ = {"uri": "file:///a"}
CLIENT_CAPS = {"sampling": {}, "roots": {}, "elicitation": {}}
SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 9}
ELICIT = {"message": "name?", "requestedSchema": {"type": "object", "properties": {}}}


def proof(rule: str, fire: list, miss: list, **kw: Any) -> Proof:
    kw.setdefault("client_caps", CLIENT_CAPS)
    return Proof(rule, fire, miss, **kw)


PROOFS = [
    proof("TOOL-LIST-SHAPE", fire=listed({"name": "x"}), miss=listed(tool("x"))),
    proof("TOOL-NAME-UNIQUE", fire=listed(tool("x"), tool("x")), miss=listed(tool("x"), tool("y"))),
    proof("TOOL-NAME-FORMAT", fire=listed(tool("has space")), miss=listed(tool("has_underscore"))),
    proof(
        "TOOL-INPUTSCHEMA-VALID",
        fire=listed(tool("x", {"type": "object", "properties": {"a": {"type": "nope"}}})),
        miss=listed(tool("x", {"type": "object", "properties": {"a": {"type": "string"}}})),
    ),
    proof(
        "TOOL-CALL-KNOWN",
        fire=[*TOOLS, c(call("sub", {}))],
        miss=[*TOOLS, c(call("add", {"a": 1}))],
    ),
    proof(
        "TOOL-CALL-ARGS-OBJECT",
        fire=[*TOOLS, c(call("add", [1]))],
        miss=[*TOOLS, c(call("add", {"a": 1}))],
    ),
    proof(
        "TOOL-ARGS-SCHEMA",
        fire=[*TOOLS, c(call("add", {"a": "one"}))],
        miss=[*TOOLS, c(call("add", {"a": 1}))],
    ),
    proof(
        "TOOL-RESULT-SHAPE",
        fire=[*TOOLS, c(call("add", {"a": 1})), s(res(2, {"content": "3"}))],
        miss=[*TOOLS, c(call("add", {"a": 1})), s(res(2, text("3")))],
    ),
    proof(
        "TOOL-OUTPUT-CONFORMS",
        fire=[
            *TOOLS,
            c(call("weather", {})),
            s(res(2, {**text(), "structuredContent": {"t": "hot"}})),
        ],
        miss=[
            *TOOLS,
            c(call("weather", {})),
            s(res(2, {**text(), "structuredContent": {"t": 30}})),
        ],
    ),
    proof(
        "TOOL-STRUCTURED-TYPE",
        fire=[*TOOLS, c(call("add", {"a": 1})), s(res(2, {**text(), "structuredContent": [3]}))],
        miss=[
            *TOOLS,
            c(call("add", {"a": 1})),
            s(res(2, {**text(), "structuredContent": {"v": 3}})),
        ],
    ),
    proof(
        "RES-LIST-SHAPE",
        fire=asked("resources/list", {}, {"resources": [{"uri": "file:///a"}]}),
        miss=asked("resources/list", {}, {"resources": [{"uri": "file:///a", "name": "a"}]}),
    ),
    proof(
        "RES-READ-SHAPE",
        fire=asked("resources/read", READ, {"contents": [{"uri": "file:///a"}]}),
        miss=asked("resources/read", READ, {"contents": [{"uri": "file:///a", "text": "x"}]}),
    ),
    proof(
        "RES-BLOB-BASE64",
        fire=asked(
            "resources/read", READ, {"contents": [{"uri": "file:///a", "blob": "not base64!"}]}
        ),
        miss=asked("resources/read", READ, {"contents": [{"uri": "file:///a", "blob": "aGk="}]}),
    ),
    proof(
        "RES-TEMPLATE-SHAPE",
        fire=asked("resources/templates/list", {}, {"resourceTemplates": [{"name": "t"}]}),
        miss=asked(
            "resources/templates/list",
            {},
            {"resourceTemplates": [{"name": "t", "uriTemplate": "x://{a}"}]},
        ),
    ),
    proof(
        "RES-SUB-RESULT",
        fire=asked("resources/subscribe", READ, {"subscribed": True}),
        miss=asked("resources/subscribe", READ, {}),
    ),
    proof(
        "PROMPT-LIST-SHAPE",
        fire=asked("prompts/list", {}, {"prompts": [{"description": "no name"}]}),
        miss=asked("prompts/list", {}, {"prompts": [{"name": "p"}]}),
    ),
    proof(
        "PROMPT-GET-ARGS",
        fire=[c(req(5, "prompts/get", {"name": "p", "arguments": {"n": 3}}))],
        miss=[c(req(5, "prompts/get", {"name": "p", "arguments": {"n": "3"}}))],
    ),
    proof(
        "PROMPT-MESSAGES",
        fire=asked("prompts/get", {"name": "p"}, {"messages": [{"role": "system", "content": {}}]}),
        miss=asked(
            "prompts/get",
            {"name": "p"},
            {"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]},
        ),
    ),
    proof(
        "LOG-LEVEL-ENUM",
        fire=[c(req(5, "logging/setLevel", {"level": "verbose"}))],
        miss=[c(req(5, "logging/setLevel", {"level": "debug"}))],
    ),
    proof(
        "LOG-MESSAGE-PARAMS",
        fire=[s(note("notifications/message", {"level": "info"}))],
        miss=[s(note("notifications/message", {"level": "info", "data": "x"}))],
    ),
    proof(
        "LOG-SETLEVEL-RESULT",
        fire=asked("logging/setLevel", {"level": "info"}, {"level": "info"}),
        miss=asked("logging/setLevel", {"level": "info"}, {}),
    ),
    proof(
        "LOG-FILTER",
        fire=[
            *asked("logging/setLevel", {"level": "error"}, {}),
            s(note("notifications/message", {"level": "info", "data": "x"})),
        ],
        miss=[
            *asked("logging/setLevel", {"level": "error"}, {}),
            s(note("notifications/message", {"level": "error", "data": "x"})),
        ],
    ),
    proof(
        "COMPL-MAX-100",
        fire=asked(
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}},
            {"completion": {"values": [str(i) for i in range(101)]}},
        ),
        miss=asked(
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}},
            {"completion": {"values": [str(i) for i in range(100)], "hasMore": True}},
        ),
    ),
    proof(
        "COMPL-RESULT-SHAPE",
        fire=asked(
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}},
            {"completion": {"values": [1, 2]}},
        ),
        miss=asked(
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}},
            {"completion": {"values": ["1", "2"]}},
        ),
    ),
    proof(
        "COMPL-REF",
        fire=[
            c(
                req(
                    5,
                    "completion/complete",
                    {
                        "ref": {"type": "ref/tool", "name": "p"},
                        "argument": {"name": "a", "value": ""},
                    },
                )
            )
        ],
        miss=[
            c(
                req(
                    5,
                    "completion/complete",
                    {
                        "ref": {"type": "ref/prompt", "name": "p"},
                        "argument": {"name": "a", "value": ""},
                    },
                )
            )
        ],
    ),
    proof(
        "PAGE-SHAPE",
        fire=asked("prompts/list", {}, {"prompts": [], "nextCursor": 2}),
        miss=asked("prompts/list", {}, {"prompts": [], "nextCursor": "2"}),
    ),
    proof(
        "PAGE-CURSOR-OPAQUE",
        fire=[
            *asked("prompts/list", {}, {"prompts": [], "nextCursor": "abc"}),
            c(req(6, "prompts/list", {"cursor": "abd"})),
        ],
        miss=[
            *asked("prompts/list", {}, {"prompts": [], "nextCursor": "abc"}),
            c(req(6, "prompts/list", {"cursor": "abc"})),
        ],
    ),
    proof(
        "PING-EMPTY-RESULT", fire=asked("ping", None, {"pong": True}), miss=asked("ping", None, {})
    ),
    proof(
        "PING-NO-PARAMS",
        fire=[c(req(5, "ping", {"x": 1}))],
        miss=[c(req(5, "ping", {"_meta": {"progressToken": "t"}}))],
    ),
    proof(
        "ROOTS-FILE-URI",
        fire=asked("roots/list", None, {"roots": [{"uri": "https://example.com/repo"}]}, "s"),
        miss=asked("roots/list", None, {"roots": [{"uri": "file:///home/me/repo"}]}, "s"),
    ),
    proof(
        "ROOTS-RESULT-SHAPE",
        fire=asked("roots/list", None, {"roots": [{"name": "no uri"}]}, "s"),
        miss=asked("roots/list", None, {"roots": [{"uri": "file:///r", "name": "r"}]}, "s"),
    ),
    proof(
        "SAMP-REQ-SHAPE",
        fire=[s(req(5, "sampling/createMessage", {**SAMPLE, "maxTokens": "9"}))],
        miss=[s(req(5, "sampling/createMessage", SAMPLE))],
    ),
    proof(
        "SAMP-RESULT-SHAPE",
        fire=asked(
            "sampling/createMessage",
            SAMPLE,
            {"role": "assistant", "content": {"type": "text", "text": "x"}},
            "s",
        ),
        miss=asked(
            "sampling/createMessage",
            SAMPLE,
            {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"},
            "s",
        ),
    ),
    proof(
        "ELIC-RESULT-ACTION",
        fire=asked("elicitation/create", ELICIT, {"action": "ok"}, "s"),
        miss=asked("elicitation/create", ELICIT, {"action": "decline"}, "s"),
    ),
]


def _tools(const: object) -> dict[str, object]:
    schema = {
        "type": "object",
        "properties": {"flag": {"const": const}},
        "required": ["flag"],
    }
    return {"tools": [{"name": "t", "inputSchema": schema}]}


ADD_TOOL = {
    "tools": [
        {
            "name": "add",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
            "outputSchema": {
                "type": "object",
                "properties": {"sum": {"type": "integer"}},
                "required": ["sum"],
            },
        }
    ]
}


def test_tool_rules(convo: Conversation) -> None:
    convo.handshake()
    convo.client(request(1, "tools/list"))
    convo.server(result(1, ADD_TOOL))
    convo.client(request(2, "tools/call", {"name": "nope", "arguments": {}}))
    convo.client(request(3, "tools/call", {"name": "add", "arguments": {"a": 1}}))
    convo.client(request(4, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))
    convo.server(
        result(4, {"content": [{"type": "text", "text": "3"}], "structuredContent": {"sum": "3"}})
    )
    convo.client(request(5, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))
    convo.server(result(5, {"content": [], "isError": True}))
    assert convo.find("TOOL-CALL-KNOWN")[0].data["tool"] == "nope"
    assert "'b' is a required property" in convo.find("TOOL-ARGS-SCHEMA")[0].message
    (conform,) = convo.find("TOOL-OUTPUT-CONFORMS")
    assert conform.severity == "error" and "sum" in conform.data["error"]


def test_repeated_tools_list_keeps_validating_with_the_listed_schema(convo: Conversation) -> None:
    convo.handshake()
    convo.client(request(1, "tools/list"))
    convo.server(result(1, _tools(True)))
    convo.client(request(2, "tools/call", {"name": "t", "arguments": {"flag": True}}))
    assert convo.find("TOOL-ARGS-SCHEMA") == []
    # Equal to the previous list for Python (1 == True), not for JSON Schema.
    convo.client(request(3, "tools/list"))
    convo.server(result(3, _tools(1)))
    convo.client(request(4, "tools/call", {"name": "t", "arguments": {"flag": True}}))
    assert len(convo.find("TOOL-ARGS-SCHEMA")) == 1
    # The same list again, byte for byte: the tools stay as they are.
    convo.client(request(5, "tools/list"))
    convo.server(result(5, _tools(1)))
    convo.client(request(6, "tools/call", {"name": "t", "arguments": {"flag": 1}}))
    assert len(convo.find("TOOL-ARGS-SCHEMA")) == 1


def test_a_whole_tools_list_is_known_by_its_replys_bytes(convo: Conversation) -> None:
    """One page: the key is the reply's bytes after its id (rules/repeats.py), not
    orjson's of the tools; pages: orjson's bytes of them all, an array."""
    convo.handshake()
    convo.client(request(1, "tools/list"))
    convo.server(result(1, _tools(True)))
    version, key = convo.session.state.tools_seen
    assert version == "2025-11-25" and isinstance(key, tuple)
    assert key[0].startswith(b'{"tools":[') and key[0].endswith(b"}}\n")
    first = _tools(True)["tools"][0]
    convo.client(request(2, "tools/list"))
    convo.server(result(2, {"tools": [first], "nextCursor": "p2"}))
    convo.client(request(3, "tools/list", {"cursor": "p2"}))
    convo.server(result(3, {"tools": []}))
    version, key = convo.session.state.tools_seen
    assert key == orjson.dumps([first])


def test_repeated_tools_list_with_a_finding_reports_it_every_time(convo: Conversation) -> None:
    convo.handshake()
    bad = {"tools": [{"name": "bad name!", "inputSchema": {"type": "object"}}]}
    for id_ in (1, 2, 3):
        convo.client(request(id_, "tools/list"))
        convo.server(result(id_, bad))
    assert len(convo.find("TOOL-NAME-FORMAT")) == 3


def test_tools_list_under_a_new_version_is_checked_again() -> None:
    convo = Conversation()
    convo.handshake("2025-06-18")
    listed = {"tools": [{"name": "bad name!", "inputSchema": {"type": "object"}}]}
    convo.client(request(1, "tools/list"))
    convo.server(result(1, listed))
    assert convo.find("TOOL-NAME-FORMAT") == []  # a 2025-11-25 rule
    convo.session.state.version = "2025-11-25"
    convo.client(request(2, "tools/list"))
    convo.server(result(2, listed))
    assert len(convo.find("TOOL-NAME-FORMAT")) == 1


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


#: Causes the descriptions name beyond the one each proof fires: (proof, message fragment).
CAUSES = [
    (
        proof(
            "TOOL-RESULT-SHAPE",
            fire=[*TOOLS, c(call("add", {"a": 1})), s(res(2, {**text("3"), "isError": "no"}))],
            miss=[*TOOLS, c(call("add", {"a": 1})), s(res(2, {**text("3"), "isError": False}))],
        ),
        "isError must be a boolean",
    ),
    (
        proof(
            "TOOL-RESULT-SHAPE",
            fire=[*TOOLS, c(call("add", {"a": 1})), s(res(2, {"content": [{"type": "html"}]}))],
            miss=[*TOOLS, c(call("add", {"a": 1})), s(res(2, text("3")))],
        ),
        "unknown content block type(s) html",
    ),
    (
        proof(
            "PAGE-SHAPE",
            fire=[c(req(6, "prompts/list", {"cursor": 2}))],
            miss=[c(req(6, "prompts/list", {"cursor": "2"}))],
        ),
        "cursor that is not a string",
    ),
    (
        proof(
            "LOG-LEVEL-ENUM",
            fire=[s(note("notifications/message", {"level": "verbose", "data": "x"}))],
            miss=[s(note("notifications/message", {"level": "debug", "data": "x"}))],
        ),
        "a log message has level 'verbose'",
    ),
    (
        proof(
            "TOOL-LIST-SHAPE",
            fire=[c(req(1, "tools/list")), s(res(1, {"tool": []}))],
            miss=[c(req(1, "tools/list")), s(res(1, {"tools": []}))],
        ),
        "no tools array",
    ),
    (
        proof(
            "TOOL-OUTPUT-CONFORMS",
            fire=[*TOOLS, c(call("weather", {})), s(res(2, text()))],
            miss=[
                *TOOLS,
                c(call("weather", {})),
                s(res(2, {**text(), "structuredContent": {"t": 30}})),
            ],
        ),
        "has no structuredContent",
    ),
    (
        proof(
            "RES-READ-SHAPE",
            fire=asked("resources/read", READ, {"content": []}),
            miss=asked("resources/read", READ, {"contents": []}),
        ),
        "needs a contents array",
    ),
    (
        proof(
            "RES-READ-SHAPE",
            fire=asked("resources/read", READ, {"contents": [{"text": "a"}]}),
            miss=asked("resources/read", READ, {"contents": [{"uri": "file:///a", "text": "a"}]}),
        ),
        "needs a string uri",
    ),
]


@pytest.mark.parametrize(("p", "fragment"), CAUSES, ids=[f for _, f in CAUSES])
def test_each_cause_the_description_names_fires(p: Proof, fragment: str) -> None:
    assert_cause(p, fragment)
