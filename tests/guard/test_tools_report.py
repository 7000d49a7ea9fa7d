"""The text of ``mcpsniff tools`` and of the context cost section."""

from __future__ import annotations

from mcpsniff.guard.context_cost import server_costs
from mcpsniff.guard.tokens import Cost
from mcpsniff.guard.tools_report import context_lines, cost_text, tools_data, tools_lines
from tests.guard.offers import inventory, offer, tool


def test_cost_text() -> None:
    assert cost_text(Cost(1234, {})) == "1,234 B"
    assert cost_text(Cost(10, {"o200k_base": 3, "cl100k_base": 4})) == (
        "10 B, 3 o200k_base, 4 cl100k_base tokens"
    )


def test_lines_escape_traffic_and_name_the_tokenizers() -> None:
    servers = server_costs(inventory(offer("stdio:\x1b[31mx", tool("t\x1b", "Does."))))
    lines = list(tools_lines(servers))
    assert lines[0].startswith("stdio:\\x1b[31mx: 1 definition(s), ")
    assert "t\\x1b" in lines[1] and "\x1b" not in "".join(lines)
    assert lines[-1].startswith("tokens: o200k_base (GPT-4o")
    assert "Claude, Gemini: no published tokenizer, not estimated" in lines[-1]
    assert list(tools_lines([])) == ["no server listed its definitions in these traces"]
    section = list(context_lines(servers))
    assert section[0].startswith("context cost of definitions")
    assert tools_data(servers)["servers"][0]["server"] == "stdio:\x1b[31mx"
