"""``mcpsniff check --explain`` as a new user types it."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from mcpsniff.cli import main

TRACE = str(Path(__file__).resolve().parents[2] / "recordings" / "clean-2025-11-25.jsonl")


def test_an_unknown_rule_without_a_trace_is_refused() -> None:
    """The near-miss: without TRACE, a typo is named."""
    result = CliRunner().invoke(main, ["check", "--explain", "JR-PARES"])
    assert result.exit_code == 2
    assert "unknown rule id 'JR-PARES'" in result.output


def test_an_unknown_rule_with_a_trace_is_named_too() -> None:
    """A typo in the rule id prints the report and no explanation, and no word why."""
    result = CliRunner().invoke(main, ["check", "--explain", "JR-PARES", TRACE])
    assert "JR-PARES" in result.output, result.output
