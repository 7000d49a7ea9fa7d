"""Durations on the command line: -1, nan and 1e300 are one-line errors, not tracebacks."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.cli.seconds import seconds_option

TRACE = Path(__file__).resolve().parents[2] / "recordings" / "string-id-echo.jsonl"


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "1e300", "soon"])
@pytest.mark.parametrize(
    "args",
    [
        ["show", "--follow", str(TRACE), "--interval"],
        ["replay", "drive", str(TRACE), "--timeout"],
    ],
    ids=["show --interval", "replay drive --timeout"],
)
def test_a_bad_duration_is_a_usage_error(args: list[str], value: str) -> None:
    extra = ["--", "cat"] if args[0] == "replay" else []
    result = CliRunner().invoke(main, [*args, value, *extra])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    option = args[-1]
    assert f"Invalid value for '{option}': '{value}' is not a number of seconds" in result.output
    assert "Traceback" not in result.output


def test_a_good_duration_is_taken() -> None:
    result = CliRunner().invoke(main, ["show", str(TRACE), "--interval", "0.5"])
    assert result.exit_code == 0 and "tools/list" in result.output


@pytest.mark.parametrize("option", ["--head-timeout", "--idle-timeout"])
@pytest.mark.parametrize("value", ["nan", "inf", "-5"])
def test_the_http_relay_s_timeouts_refuse_nan_and_infinity(option: str, value: str) -> None:
    """FloatRange let NaN through: the proxy started with a timeout no clock can reach."""
    args = ["http", "--upstream", "http://127.0.0.1:9/mcp", option, value]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}': '{value}' is not a number of seconds" in result.output


def test_seconds_option_shows_its_default_and_bounds_its_value() -> None:
    @click.command()
    @seconds_option("--wait", 2.5, "Seconds to wait.", maximum=10)
    def command(wait: float) -> None:
        click.echo(repr(wait))

    runner = CliRunner()
    assert runner.invoke(command, []).output == "2.5\n"
    assert runner.invoke(command, ["--wait", "10"]).output == "10.0\n"
    refused = runner.invoke(command, ["--wait", "11"])
    assert refused.exit_code == 2
    assert "is not a number of seconds above 0 and at most 10" in refused.output
    assert "Seconds to wait.  [default: 2.5]" in runner.invoke(command, ["--help"]).output
