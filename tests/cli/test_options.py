"""The shared ``--format`` and ``-o/--output`` options (mcpsniff/cli/options.py)."""

from __future__ import annotations

from pathlib import Path

import click
from click.testing import CliRunner

from mcpsniff.cli.options import format_option, output_option


@click.command()
@format_option(("text", "json", "csv"), "How to print.")
@output_option("Where to write.")
def _file_command(fmt: str, output: Path | None) -> None:
    click.echo(f"{fmt} {output!r}")


@click.command()
@output_option("The folder.", required=True, folder=True)
def _folder_command(output: Path) -> None:
    click.echo(repr(output))


@click.command()
@output_option("The lock.", default=Path("x.lock"))
def _default_command(output: Path) -> None:
    click.echo(repr(output))


def test_the_first_format_is_the_default_and_others_are_refused(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(_file_command, []).output == "text None\n"
    result = runner.invoke(_file_command, ["--format", "csv", "-o", str(tmp_path / "f")])
    assert result.output == f"csv {tmp_path / 'f'!r}\n"
    refused = runner.invoke(_file_command, ["--format", "xml"])
    assert refused.exit_code == 2
    assert "'xml' is not one of 'text', 'json', 'csv'" in refused.output


def test_help_shows_the_format_default_and_both_output_spellings() -> None:
    text = CliRunner().invoke(_file_command, ["--help"]).output
    assert "--format [text|json|csv]" in text
    assert "How to print.  [default: text]" in text
    assert "-o, --output FILE" in text
    assert "Where to write." in text


def test_a_file_output_refuses_a_folder_and_a_folder_output_a_file(tmp_path: Path) -> None:
    runner = CliRunner()
    refused = runner.invoke(_file_command, ["-o", str(tmp_path)])
    assert refused.exit_code == 2
    assert "is a directory" in refused.output
    afile = tmp_path / "a"
    afile.write_text("")
    refused = runner.invoke(_folder_command, ["--output", str(afile)])
    assert refused.exit_code == 2
    assert "is a file" in refused.output
    missing = runner.invoke(_folder_command, [])
    assert missing.exit_code == 2
    assert "Missing option '-o' / '--output'" in missing.output


def test_a_default_output_is_shown_and_used() -> None:
    runner = CliRunner()
    assert runner.invoke(_default_command, []).output == f"{Path('x.lock')!r}\n"
    assert "[default: x.lock]" in runner.invoke(_default_command, ["--help"]).output
