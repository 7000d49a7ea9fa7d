"""Review 4: commands that did nothing said nothing, as a new user met them.

``install --config F --all`` on a file without servers (empty, ``{}``, an
empty ``mcpServers``, a typo'd table) printed only ``config: F`` and exited 0;
``show --filter`` that matched nothing printed nothing at all, which reads as
an empty trace or a broken command.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main

GALLERY = Path(__file__).resolve().parents[2] / "recordings" / "clean-2025-11-25.jsonl"


@pytest.mark.parametrize("text", ["", "{}", '{"mcpServers": {}}', '{"mcpServer": {"a": {}}}'])
def test_install_says_when_a_config_holds_no_server(tmp_path: Path, text: str) -> None:
    config = tmp_path / "c.json"
    config.write_text(text)
    result = CliRunner().invoke(
        main, ["install", "--config", str(config), "--all"], env={"HOME": str(tmp_path)}
    )
    assert result.exit_code == 0, result.output
    assert "no MCP servers in it" in result.output
    assert config.read_text() == text
    assert not (tmp_path / ".local").exists()  # no backup of a file left alone


def test_install_of_a_real_server_does_not_say_so(tmp_path: Path) -> None:
    config = tmp_path / "c.json"
    config.write_text('{"mcpServers": {"fs": {"command": "npx", "args": ["x"]}}}')
    result = CliRunner().invoke(
        main,
        ["install", "--config", str(config), "--all", "--dry-run"],
        env={"HOME": str(tmp_path)},
    )
    assert result.exit_code == 0, result.output
    assert "+ fs: runs under mcpsniff stdio" in result.output
    assert "no MCP servers" not in result.output


def test_show_says_when_its_filter_matched_nothing() -> None:
    result = CliRunner().invoke(main, ["show", str(GALLERY), "--filter", "method == nope"])
    assert result.exit_code == 0
    assert result.output == "mcpsniff show: no message or event matched --filter\n"
    matched = CliRunner().invoke(main, ["show", str(GALLERY), "--filter", "method == ping"])
    assert "ping" in matched.output
    assert "matched --filter" not in matched.output


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
