"""``mcpsniff mcp``'s options: paths that must exist, loopback only."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from mcpsniff.cli import main


def test_a_missing_path_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["mcp", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "no such file or folder" in result.stderr


def test_a_bad_listen_address_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["mcp", str(tmp_path), "--http", "--listen", "nonsense"])
    assert result.exit_code == 2 and result.stderr.startswith("mcpsniff mcp: ")


def test_help_names_the_tools() -> None:
    result = CliRunner().invoke(main, ["mcp", "--help"])
    assert result.exit_code == 0 and "read-only" in result.output and "--http" in result.output
