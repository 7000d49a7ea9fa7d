"""Each server's cost: largest definitions first, findings attached by server."""

from __future__ import annotations

from mcpsniff.core.model import FindingRecord
from mcpsniff.guard.context_cost import server_costs, session_costs
from tests.guard.offers import inventory, offer, tool


def test_servers_and_definitions_costliest_first_with_their_findings() -> None:
    small = offer("stdio:small", tool("a", "A."), session="s1")
    big = offer("stdio:big", tool("b", "B" * 300), tool("c", "Hi\u200bthere."), session="s2")
    finding = FindingRecord("GUARD-DRIFT", "warning", "m", "s2", [1], {"server": "stdio:big"})
    servers = server_costs(inventory(small, big), [finding])
    assert [s.identity for s in servers] == ["stdio:big", "stdio:small"]
    first = servers[0]
    assert [d.definition.name for d in first.definitions] == ["b", "c"]
    assert first.total.bytes == sum(d.cost.bytes for d in first.definitions)
    assert first.findings == [finding] and servers[1].findings == []
    (note,) = first.definitions[1].notes
    assert note.startswith("warning: description carries zero-width")
    data = first.as_data()
    assert data["definitions"][0]["tokens"]["o200k_base"] > 0
    by_session = session_costs(inventory(small, big))
    assert set(by_session) == {"s1", "s2"} and by_session["s2"]["server"] == "stdio:big"
    assert "not_estimated" in by_session["s1"]
