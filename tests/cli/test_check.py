"""`check --explain`, `rules --format json` descriptions, and the folded text report."""

from __future__ import annotations

from pathlib import Path

import orjson
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core import explain
from mcpsniff.core.rules import IMPLEMENTED

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"


def test_explain_a_rule_without_a_trace() -> None:
    result = CliRunner().invoke(main, ["check", "--explain", "STDIO-FRAMING"])
    assert result.exit_code == 0
    assert result.output.startswith("STDIO-FRAMING (error)\n")
    assert "delimited by newlines" in result.output and "Serialize compactly" in result.output


def test_explain_an_unknown_rule_is_a_clear_error() -> None:
    result = CliRunner().invoke(main, ["check", "--explain", "JR-NOPE"])
    assert result.exit_code == 2
    assert "unknown rule id 'JR-NOPE'" in result.output


def test_check_without_trace_or_rule_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["check"])
    assert result.exit_code == 2 and "missing argument TRACE" in result.output


def test_explain_all_follows_the_report_with_each_rule_found_once() -> None:
    path = str(RECORDINGS / "stdout-pollution.jsonl")
    result = CliRunner().invoke(main, ["check", "--explain", "all", path])
    assert result.exit_code == 1
    report, _, explained = result.output.partition("finding(s) at or above error\n")
    assert "↳ so also STDIO-STDOUT-CLEAN" in report
    heads = [line for line in explained.splitlines() if not line.startswith(" ")]
    assert heads == ["JR-PARSE (error)", "STDIO-STDOUT-CLEAN (error)"]


def test_json_output_keeps_every_finding_and_is_unchanged_by_explain() -> None:
    path = str(RECORDINGS / "stdout-pollution.jsonl")
    plain = CliRunner().invoke(main, ["check", "--format", "json", path]).output
    explained = CliRunner().invoke(main, ["check", "--format", "json", "--explain", "all", path])
    assert explained.output == plain
    assert [orjson.loads(line)["rule"] for line in plain.splitlines()] == [
        "JR-PARSE",
        "STDIO-STDOUT-CLEAN",
    ]


def test_rules_json_has_a_description_for_every_rule() -> None:
    result = CliRunner().invoke(main, ["rules", "--format", "json"])
    rows = [orjson.loads(line) for line in result.output.splitlines()]
    assert [r["rule"] for r in rows] == list(IMPLEMENTED)
    for row in rows:
        assert row["description"] == explain.description(row["rule"]) != ""


def test_text_report_names_the_layer_of_an_error_code() -> None:
    from mcpsniff.core.model import FindingRecord
    from mcpsniff.terminal.render import Style, report_lines

    findings = [
        FindingRecord("TASK-ERRORS", "error", "m", "s", [3], {"code": -32001}),
        FindingRecord("JR-ERROR-SEMANTICS", "info", "m", "s", [4], {"code": -32700}),
        FindingRecord("LOG-SETLEVEL-INVALID", "warning", "m", "s", [5], {"code": 7}),
    ]
    text = "\n".join(str(line) for line in report_lines({"s": findings}, Style(False)))
    assert "error -32001: implementation-defined server error (-32099..-32000)" in text
    assert "error -32700 Parse error: JSON-RPC protocol error (-32768..-32600)" in text
    assert "error 7: application error" in text


# ------------------------------------------------------------ as a new user types it

# ``mcpsniff check --explain`` as a new user types it.


CLEAN_TRACE = str(Path(__file__).resolve().parents[2] / "recordings" / "clean-2025-11-25.jsonl")


def test_an_unknown_rule_without_a_trace_is_refused() -> None:
    """The near-miss: without TRACE, a typo is named."""
    result = CliRunner().invoke(main, ["check", "--explain", "JR-PARES"])
    assert result.exit_code == 2
    assert "unknown rule id 'JR-PARES'" in result.output


def test_an_unknown_rule_with_a_trace_is_named_too() -> None:
    """A typo in the rule id prints the report and no explanation, and no word why."""
    result = CliRunner().invoke(main, ["check", "--explain", "JR-PARES", CLEAN_TRACE])
    assert "JR-PARES" in result.output, result.output


def test_check_explain_takes_a_rule_id_in_any_case() -> None:
    lower = CliRunner().invoke(main, ["check", "--explain", "jr-resp-id"])
    upper = CliRunner().invoke(main, ["check", "--explain", "JR-RESP-ID"])
    assert lower.exit_code == 0, lower.output
    assert lower.output == upper.output
    assert lower.output.startswith("JR-RESP-ID (error)")


def test_check_explain_all_without_a_trace_says_what_all_means() -> None:
    result = CliRunner().invoke(main, ["check", "--explain", "all"])
    assert result.exit_code == 2
    assert "--explain all explains the rules a TRACE's report found" in result.output
    assert "mcpsniff rules --format json" in result.output
