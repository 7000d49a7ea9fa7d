"""check/faults_summary.py: each fault with the reaction seen, and the findings withheld."""

from __future__ import annotations

from typing import Any

import orjson

from mcpsniff.check.faults_summary import NOT_JUDGED, faults_summary_lines
from mcpsniff.core.analyzer import Analyzer

CALL = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "echo"}}
ANSWER = {"jsonrpc": "2.0", "id": 5, "result": {"content": []}}


def _fault(action: str, **data: Any) -> dict[str, Any]:
    return {
        "fault_version": 1,
        "spec": f"{action} when tool == echo",
        "action": action,
        "dir": "s2c",
        "kind": "response",
        "method": "tools/call",
        "id": 5,
        **data,
    }


def _analyzed(*steps: tuple[str, Any]) -> Analyzer:
    analyzer = Analyzer()
    session = analyzer.session("stdio")
    t = 1.0
    for kind, payload in steps:
        t += 0.5
        if kind == "event":
            session.event(payload[0], t, payload[1])
        else:
            session.feed(kind, "stdio", orjson.dumps(payload) + b"\n", t)
    analyzer.close(t + 1)
    return analyzer


def test_a_trace_without_faults() -> None:
    analyzer = _analyzed(("c2s", CALL), ("s2c", ANSWER))
    assert faults_summary_lines(analyzer) == ["Faults: none injected in this trace."]


def test_each_fault_with_its_reaction() -> None:
    analyzer = _analyzed(
        ("c2s", CALL),
        ("event", ("fault", _fault("drop", delivered=False, marks={"s2c": 1}))),
        ("s2c", ANSWER),
        ("event", ("fault", _fault("delay", delay_ms=300.2, marks={}))),
    )
    lines = faults_summary_lines(analyzer)
    assert lines[0] == "Faults: 2 injected; 0 finding(s) withheld (not the peers' doing)"
    assert lines[1] == "session stdio:"
    assert "drop  to s2c response tools/call id 5" in lines[2]
    assert lines[2].endswith("reaction: the client never cancelled")
    assert "delay 300 ms" in lines[3] and lines[3].endswith(NOT_JUDGED)
