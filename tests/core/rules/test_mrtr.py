"""rules/mrtr.py: inputRequests only for declared capabilities; requestState for one retry."""

from __future__ import annotations

from typing import Any

from tests.core.rules.dsl import Proof, c, play, req, res, s

V5 = "2026-07-28"
SERVER_META = {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
FORM = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {}}}
URL = {
    "method": "elicitation/create",
    "params": {"mode": "url", "message": "Sign in", "url": "https://example.com/a"},
}


def v5(id_: int, method: str, caps: dict[str, Any] | None = None, **params: Any) -> Any:
    meta = {
        "io.modelcontextprotocol/protocolVersion": V5,
        "io.modelcontextprotocol/clientCapabilities": {} if caps is None else caps,
        "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
    }
    return req(id_, method, {**params, "_meta": meta})


def call(id_: int, caps: dict[str, Any] | None = None, name: str = "book", **extra: Any) -> Any:
    return c(v5(id_, "tools/call", caps, name=name, arguments={}, **extra))


def input_required(id_: int, state: str | None = "s1", **inputs: Any) -> Any:
    body: dict[str, Any] = {"resultType": "input_required", "_meta": SERVER_META}
    if inputs:
        body["inputRequests"] = inputs
    if state is not None:
        body["requestState"] = state
    return s(res(id_, body))


def done(id_: int) -> Any:
    body = {"resultType": "complete", "_meta": SERVER_META, "content": []}
    return s(res(id_, body))


def found(steps: list, rule: str) -> list[str]:
    convo = play(Proof(rule, [], [], version=None), steps)
    return [f.message for f in convo.find(rule)]


def test_input_requests_for_an_undeclared_capability() -> None:
    """Regression: only "neither inputRequests nor requestState" was judged."""
    fired = found([call(1), input_required(1, name=FORM)], "MOD-MRTR-CONTENT")
    assert fired == [
        "the server's input_required answer to tools/call: input 'name' asks for "
        "elicitation/create, but the client did not declare the elicitation capability"
    ]
    near = [call(1, {"elicitation": {}}), input_required(1, name=FORM)]
    assert found(near, "MOD-MRTR-CONTENT") == []


def test_url_mode_needs_elicitation_url() -> None:
    fired = found(
        [call(1, {"elicitation": {"form": {}}}), input_required(1, login=URL)], "MOD-MRTR-CONTENT"
    )
    assert len(fired) == 1 and "elicitation.url (URL mode)" in fired[0]
    near = [call(1, {"elicitation": {"form": {}, "url": {}}}), input_required(1, login=URL)]
    assert found(near, "MOD-MRTR-CONTENT") == []


def test_capabilities_count_per_request_not_per_session() -> None:
    """A declaration on an earlier request does not cover this one."""
    steps = [
        call(1, {"roots": {}}),
        input_required(1, where={"method": "roots/list"}),
        call(2, {}),
        input_required(2, where={"method": "roots/list"}),
    ]
    assert len(found(steps, "MOD-MRTR-CONTENT")) == 1


def test_input_requests_of_another_kind() -> None:
    fired = found(
        [call(1, {"roots": {}}), input_required(1, x={"method": "ping"})], "MOD-MRTR-CONTENT"
    )
    assert len(fired) == 1 and "'ping', not elicitation/create" in fired[0]


def test_a_request_state_reused_on_a_parallel_request() -> None:
    retry = {"inputResponses": {"name": {"action": "accept"}}, "requestState": "s1"}
    steps = [call(1, {"elicitation": {}}), input_required(1, name=FORM), call(2, **retry)]
    parallel = [*steps, call(3, **retry)]
    fired = play(Proof("MOD-MRTR-STATE-ECHO", [], [], version=None), parallel)
    (finding,) = fired.find("MOD-MRTR-STATE-ECHO")
    assert finding.data["parallel"] is True
    assert "while its request at seq" in finding.message
    # The same retry again once the first one is answered (the server may ask again).
    sequential = [*steps, input_required(2, name=FORM), call(3, **retry), done(3)]
    assert found(sequential, "MOD-MRTR-STATE-ECHO") == []


def test_a_request_state_used_for_another_request() -> None:
    retry = {"inputResponses": {}, "requestState": "s1"}
    steps = [call(1, {"elicitation": {}}), input_required(1, name=FORM)]
    fired = found([*steps, call(2, name="other", **retry)], "MOD-MRTR-STATE-ECHO")
    assert fired == [
        "the client sent on tools/call 'other' the requestState the server gave to "
        "tools/call 'book'; it may be used only to retry that request"
    ]
    assert found([*steps, call(2, **retry)], "MOD-MRTR-STATE-ECHO") == []
