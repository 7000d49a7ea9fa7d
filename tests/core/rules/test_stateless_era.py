"""rules/stateless_era.py: the 2026-07-28 checks lifecycle.py's rules call.

The firing proofs and near misses of these MOD-* rules are in test_lifecycle.py,
where they are registered; here each check is called on one message.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcpsniff.core.model import FindingRecord, MessageRecord
from mcpsniff.core.protocol import (
    META_CLIENT_CAPS,
    META_CLIENT_INFO,
    META_SERVER_INFO,
    META_VERSION,
)
from mcpsniff.core.rules.stateless_era import lacks_meta, stateless_request, v5_error, v5_result
from mcpsniff.core.session import Session

V5 = "2026-07-28"


def _findings(check: Any, obj: dict[str, Any], *args: Any) -> list[str]:
    session = Session("k")
    session.state.version = V5
    direction = "c2s" if "method" in obj else "s2c"
    msg = MessageRecord(1, "k", direction, "request", method=obj.get("method"), obj=obj)
    msg.params = obj.get("params")
    check(session, msg, *args)
    return [r.rule for r in session.output if isinstance(r, FindingRecord)]


def _request(meta: dict[str, Any] | None, method: str = "tools/list") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": meta}}


FULL_META = {META_VERSION: V5, META_CLIENT_CAPS: {}, META_CLIENT_INFO: {"name": "c"}}


@pytest.mark.parametrize(
    ("meta", "method", "rules"),
    [
        (FULL_META, "tools/list", []),
        ({META_VERSION: V5, META_CLIENT_CAPS: {}}, "tools/list", ["MOD-CLIENTINFO"]),
        ({META_VERSION: V5}, "tools/list", ["MOD-META-REQUIRED"]),
        (None, "tools/list", ["MOD-META-REQUIRED"]),
        (FULL_META, "logging/setLevel", ["MOD-REMOVED"]),
    ],
)
def test_stateless_request(meta: Any, method: str, rules: list[str]) -> None:
    request = _request(meta, method)
    assert _findings(stateless_request, request) == rules


@pytest.mark.parametrize(
    ("params", "missing"),
    [
        ({"_meta": FULL_META}, []),
        ({"_meta": {META_VERSION: V5}}, [META_CLIENT_CAPS]),
        ({"_meta": {META_VERSION: 5, META_CLIENT_CAPS: {}}}, [META_VERSION]),
        ({"_meta": {META_CLIENT_CAPS: []}}, [META_VERSION, META_CLIENT_CAPS]),
        ({"_meta": "x"}, [META_VERSION, META_CLIENT_CAPS]),
        ({}, [META_VERSION, META_CLIENT_CAPS]),
        (None, [META_VERSION, META_CLIENT_CAPS]),
        (["not", "an", "object"], [META_VERSION, META_CLIENT_CAPS]),
    ],
)
def test_lacks_meta(params: Any, missing: list[str]) -> None:
    msg = MessageRecord(1, "k", "c2s", "request", method="tools/list")
    msg.params = params
    assert lacks_meta(msg) == missing


def _result(method: str, **result: Any) -> list[str]:
    obj = {"jsonrpc": "2.0", "id": 1, "result": result}
    return _findings(v5_result, obj, method)


@pytest.mark.parametrize(
    ("meta", "carries"),
    [
        ({}, f"no _meta {META_SERVER_INFO}"),
        ({META_SERVER_INFO: None}, f"no _meta {META_SERVER_INFO}"),
        (
            {META_SERVER_INFO: {"name": "s", "version": ""}},
            f"_meta {META_SERVER_INFO} without a name and a version that identify the server",
        ),
        (
            {META_SERVER_INFO: "s 1"},
            f"_meta {META_SERVER_INFO} without a name and a version that identify the server",
        ),
    ],
)
def test_a_result_without_the_servers_identity(meta: dict[str, Any], carries: str) -> None:
    session = Session("k")
    session.state.version = V5
    obj = {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "_meta": meta}}
    v5_result(session, MessageRecord(1, "k", "s2c", "response", obj=obj), "ping")
    (finding,) = [r for r in session.output if isinstance(r, FindingRecord)]
    assert (finding.rule, finding.message, finding.seq, finding.data) == (
        "MOD-SERVERINFO",
        f'the result of "ping" carries {carries}',
        [1],
        {"method": "ping"},
    )


def test_v5_result() -> None:
    info = {META_SERVER_INFO: {"name": "s", "version": "1"}}
    hints = {"ttlMs": 0, "cacheScope": "public"}
    assert _result("tools/list", resultType="complete", _meta=info, tools=[], **hints) == []
    assert _result("tools/list", resultType="complete", _meta=info, tools=[]) == ["MOD-CACHE"]
    assert _result("ping", resultType="done", _meta=info) == ["MOD-RESULTTYPE"]
    assert _result("ping", resultType="complete") == ["MOD-SERVERINFO"]
    assert _result("ping", resultType="input_required", _meta=info) == [
        "MOD-MRTR-METHODS",
        "MOD-MRTR-CONTENT",
    ]
    assert _result("tools/call", resultType="input_required", _meta=info, requestState="s") == []
    discover = _result("server/discover", resultType="complete", _meta=info, **hints)
    assert discover == ["MOD-DISCOVER"]


@pytest.mark.parametrize(
    ("code", "data", "rules"),
    [
        (-32602, None, []),
        (-32021, None, []),
        (-32042, None, ["MOD-ERRCODES"]),
        (-32050, None, ["MOD-ERRCODES"]),
        (-32022, {"supported": [V5], "requested": "1999-01-01"}, []),
        (-32022, {"supported": [V5]}, ["MOD-UNSUPPORTED-VERSION"]),
    ],
)
def test_v5_error(code: int, data: Any, rules: list[str]) -> None:
    error = {"code": code, "message": "m"} | ({} if data is None else {"data": data})
    assert _findings(v5_error, {"jsonrpc": "2.0", "id": 1, "error": error}) == rules
