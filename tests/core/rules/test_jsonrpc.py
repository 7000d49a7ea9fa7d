"""rules/jsonrpc.py: JSON-RPC 2.0 structure and MCP base messages, each fired and near-missed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.rules.dsl import Proof, assert_cause, assert_proof, c, note, req, res, s

V1, V2, V3 = "2024-11-05", "2025-03-26", "2025-06-18"
PING = req(1, "ping")
PONG = res(1, {})
INIT = req(
    0,
    "initialize",
    {"protocolVersion": V2, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
)


def raw(**members: Any) -> dict[str, Any]:
    """A JSON-RPC object with exactly these members (and "jsonrpc": "2.0" unless given)."""
    return {"jsonrpc": "2.0", **members}


def failure(id_: Any, error: Any) -> dict[str, Any]:
    return raw(id=id_, error=error)


def err(code: Any = -32601, message: Any = "Method not found") -> dict[str, Any]:
    return {"code": code, "message": message}


LISTED = note("notifications/roots/list_changed")

PROOFS = [
    Proof("JR-TOPLEVEL", fire=[c(raw(id=1, foo=1))], miss=[c(PING)]),
    Proof("JR-VERSION", fire=[c(raw(jsonrpc="1.0", id=1, method="ping"))], miss=[c(PING)]),
    Proof("JR-METHOD-TYPE", fire=[c(raw(id=1, method=1))], miss=[c(PING)]),
    Proof("JR-METHOD-RPC-RESERVED", fire=[c(req(1, "rpc.discover"))], miss=[c(PING)]),
    Proof(
        "JR-PARAMS-STRUCTURED",
        fire=[c(raw(id=1, method="ping", params="x"))],
        miss=[c(raw(id=1, method="ping", params={}))],
    ),
    Proof("JR-ID-TYPE", fire=[c(req(True, "ping"))], miss=[c(PING)]),
    Proof(
        "JR-RESULT-XOR-ERROR",
        fire=[c(raw(id=1, method="ping", result={}))],
        miss=[c(PING)],
    ),
    Proof(
        "JR-ERROR-OBJECT",
        fire=[c(PING), s(failure(1, "bad"))],
        miss=[c(PING), s(failure(1, err()))],
    ),
    Proof(
        "JR-ERROR-CODE-INT",
        fire=[c(PING), s(failure(1, err(code=-32601.5)))],
        miss=[c(PING), s(failure(1, err()))],
    ),
    Proof(
        "JR-ERROR-MSG-SHORT",
        fire=[c(PING), s(failure(1, err(message="first line\nsecond line")))],
        miss=[c(PING), s(failure(1, err(message="Method not found")))],
    ),
    Proof(
        "JR-ERROR-RESERVED",
        fire=[c(PING), s(failure(1, err(code=-32500)))],
        miss=[c(PING), s(failure(1, err(code=-32001)))],
    ),
    Proof(
        "JR-MEMBER-CASE",
        fire=[c(raw(id=1, method="ping", Params={}))],
        miss=[c(raw(id=1, method="ping", params={}))],
    ),
    Proof(
        "JR-NOTIF-NO-REPLY", fire=[c(LISTED), s(res(None, {}))], miss=[c(LISTED), c(PING), s(PONG)]
    ),
    Proof("JR-RESP-ID", fire=[c(PING), s(res("1", {}))], miss=[c(PING), s(PONG)]),
    Proof(
        "JR-BATCH-RESP-COUNT",
        fire=[c([req(1, "ping"), req(2, "ping")]), s([res(1, {})])],
        miss=[c([req(1, "ping"), req(2, "ping")]), s([res(2, {}), res(1, {})])],
        version=V2,
    ),
    Proof(
        "JR-BATCH-ALL-NOTIF",
        fire=[c([LISTED, LISTED]), s([])],
        miss=[c([LISTED, LISTED])],
        version=V2,
    ),
    Proof("MSG-ID-TYPE", fire=[c(req(1.5, "ping"))], miss=[c(req(2, "ping"))]),
    Proof("MSG-ID-NOT-NULL", fire=[c(req(None, "ping"))], miss=[c(PING)]),
    Proof(
        "MSG-NOTIF-NO-ID",
        fire=[c(req(7, "notifications/roots/list_changed"))],
        miss=[c(LISTED)],
    ),
    Proof(
        "MSG-PARAMS-OBJECT",
        fire=[c(raw(id=1, method="ping", params=[1]))],
        miss=[c(raw(id=1, method="ping", params={}))],
    ),
    Proof("MSG-RESULT-OBJECT", fire=[c(PING), s(res(1, []))], miss=[c(PING), s(PONG)]),
    Proof(
        "MSG-RESP-XOR",
        fire=[c(PING), s(raw(id=1, result={}, error=err()))],
        miss=[c(PING), s(failure(1, err()))],
    ),
    Proof(
        "MSG-ERR-FIELDS",
        fire=[c(PING), s(failure(1, {"code": -32601}))],
        miss=[c(PING), s(failure(1, err()))],
    ),
    Proof(
        "MSG-ERR-ID",
        fire=[c(PING), s(failure(None, err()))],
        miss=[c(PING), s(failure(1, err()))],
    ),
    Proof("MSG-BATCH-V1", fire=[c([PING])], miss=[c(PING)], version=V1),
    Proof("MSG-BATCH-V2-SHAPE", fire=[c([PING, res(9, {})])], miss=[c([PING])], version=V2),
    Proof("MSG-BATCH-V2-INIT", fire=[c([INIT])], miss=[c(INIT)], version=None),
    Proof("MSG-BATCH-REMOVED", fire=[c([PING])], miss=[c(PING)], version=V3),
    Proof(
        "MSG-META-KEYS",
        fire=[c(req(1, "ping", {"_meta": {"bad key!": 1}}))],
        miss=[c(req(1, "ping", {"_meta": {"example.com/good-key": 1}}))],
    ),
    Proof(
        "MSG-META-PROGRESS",
        fire=[c(req(1, "ping", {"_meta": {"progressToken": True}}))],
        miss=[c(req(1, "ping", {"_meta": {"progressToken": "t1"}}))],
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


#: Causes the descriptions name beyond the one each proof fires: (proof, message fragment).
CAUSES = [
    (
        Proof("JR-RESP-ID", fire=[c(PING), s(raw(result={}))], miss=[c(PING), s(PONG)]),
        "without an id",
    ),
    (
        Proof(
            "JR-ERROR-OBJECT",
            fire=[c(PING), s(failure(1, err(message=["no"])))],
            miss=[c(PING), s(failure(1, err(message="no")))],
        ),
        '"message" that is a array',
    ),
    (Proof("JR-TOPLEVEL", fire=[c(1)], miss=[c(PING)]), "sent a JSON int"),
]


@pytest.mark.parametrize(("p", "fragment"), CAUSES, ids=[f for _, f in CAUSES])
def test_each_cause_the_description_names_fires(p: Proof, fragment: str) -> None:
    assert_cause(p, fragment)
