"""rules/tasks_routing.py: the tasks extension's Mcp-Name routing header over HTTP."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.core.rules.dsl import ACCEPT_BOTH, Proof, assert_proof, body, http, play, req

V5 = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": V5,
    "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    },
    "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
}


def post(method: str, task_id: str, **headers: str) -> list:
    """A 2026-07-28 Streamable HTTP POST of a tasks/* request with its standard headers."""
    payload = req(1, method, {"taskId": task_id, "_meta": META})
    headers = {"accept": ACCEPT_BOTH, "mcp_protocol_version": V5, "mcp_method": method, **headers}
    return [http(1, "POST", **headers), body(1, payload)]


def proof(rule: str, fire: list, miss: list, **kw: Any) -> Proof:
    return Proof(rule, fire, miss, version=None, transport="http", **kw)


PROOFS = [
    proof(
        "EXT-TASKS-HEADER",
        # tasks/get over HTTP without the task's id in Mcp-Name.
        fire=post("tasks/get", "t1"),
        miss=post("tasks/get", "t1", mcp_name="t1"),
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=lambda p: p.id)
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def test_the_routing_header_may_be_base64_encoded() -> None:
    task_id = "tâche 1"
    encoded = "=?base64?" + base64.b64encode(task_id.encode()).decode() + "?="
    convo = play(proof("EXT-TASKS-HEADER", [], []), post("tasks/cancel", task_id, mcp_name=encoded))
    assert convo.find("EXT-TASKS-HEADER") == []
    convo = play(proof("EXT-TASKS-HEADER", [], []), post("tasks/cancel", task_id, mcp_name="other"))
    (finding,) = convo.find("EXT-TASKS-HEADER")
    assert finding.message == (
        "the tasks/cancel POST's Mcp-Name header is 'other', but it must be the task's id 'tâche 1'"
    )


def test_a_broken_base64_header_is_compared_as_sent() -> None:
    convo = play(
        proof("EXT-TASKS-HEADER", [], []), post("tasks/update", "t1", mcp_name="=?base64?%%?=")
    )
    assert [f.data["header"] for f in convo.find("EXT-TASKS-HEADER")] == ["=?base64?%%?="]
