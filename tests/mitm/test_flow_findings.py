"""mitm/flow_findings.py: findings onto flows, and the bounded book of flows awaiting them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcpsniff.mitm.flow_findings import FLOW_MEMORY, MARKERS, FlowBook, attach
from mcpsniff.mitm.link import FlowFinding, Reply


@dataclass
class Flow:
    """What mitmproxy's HTTPFlow offers a finding."""

    name: str
    comment: str = ""
    marked: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


def finding(severity: str, *exchanges: int, rule: str = "R-1") -> FlowFinding:
    return FlowFinding(exchanges, rule, severity, f"{severity} message")


def test_attach_adds_a_comment_line_per_finding_and_marks_the_worst() -> None:
    flow = Flow("a", comment="user note")
    attach(flow, finding("warning", 1, rule="W-1"))
    assert flow.marked == MARKERS["warning"] == ":warning:"
    attach(flow, finding("info", 1, rule="I-1"))  # milder: the marker stays
    assert flow.marked == ":warning:"
    attach(flow, finding("error", 1, rule="E-1"))
    assert flow.marked == ":red_circle:"
    assert flow.comment.splitlines() == [
        "user note",
        "warning W-1: warning message",
        "info I-1: info message",
        "error E-1: error message",
    ]
    assert flow.metadata["mcpsniff_severity"] == "error"
    assert [f["rule"] for f in flow.metadata["mcpsniff_findings"]] == ["W-1", "I-1", "E-1"]
    assert flow.metadata["mcpsniff_findings"][0] == {
        "rule": "W-1",
        "severity": "warning",
        "message": "warning message",
    }


def test_apply_puts_findings_on_their_flows_and_returns_those_gone_on_once() -> None:
    book: FlowBook[Flow] = FlowBook()
    a, b, c = Flow("a"), Flow("b"), Flow("c")
    book.remember(1, a)
    book.remember(2, b)
    book.remember(3, c)
    book.hold(2)
    reply = Reply(
        findings=[finding("warning", 1, 2), finding("error", 1), finding("info", 9)],
        synced=[2],
    )
    gone_on = book.apply(reply)
    # a got two findings but is told once; b is held (its hook is waiting): not told.
    assert [f.name for f in gone_on] == ["a"]
    assert a.marked == ":red_circle:" and len(a.metadata["mcpsniff_findings"]) == 2
    assert b.marked == ":warning:"
    assert c.comment == "" and c.marked == ""
    # The synced exchange is forgotten; the others wait for theirs.
    assert sorted(book.flows) == [1, 3] and book.held == set()
    assert book.apply(Reply(findings=[finding("error", 2)])) == []
    assert b.metadata["mcpsniff_severity"] == "warning"


def test_the_book_remembers_only_the_last_flow_memory_exchanges() -> None:
    book: FlowBook[Flow] = FlowBook()
    for number in range(1, FLOW_MEMORY + 11):
        book.remember(number, Flow(str(number)))
    assert len(book.flows) == FLOW_MEMORY
    assert min(book.flows) == 11 and max(book.flows) == FLOW_MEMORY + 10
    book.forget(11)
    book.forget(11)  # twice: no error
    assert 11 not in book.flows
    book.hold(12)
    book.clear()
    assert book.flows == {} and book.held == set()
