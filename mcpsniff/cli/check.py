"""``mcpsniff check``: the options; the run itself is ``mcpsniff/check/run.py``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mcpsniff.check.run import FORMATS, CheckError, CheckOptions, run_check
from mcpsniff.cli.filter_option import filter_option, parse_filter
from mcpsniff.cli.shared import EXIT_FINDINGS, EXIT_OK, colour, fail
from mcpsniff.core import catalog
from mcpsniff.core.explain import explain_lines
from mcpsniff.filter import HELP as FILTER_HELP
from mcpsniff.terminal.safe_output import tolerate_surrogates


@click.command(epilog=FILTER_HELP)
@click.argument("trace", type=click.Path(dir_okay=True, path_type=Path), required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(FORMATS)),
    default="text",
    show_default=True,
    help="sarif: SARIF 2.1.0 for code scanning; junit: JUnit XML, a test case per session.",
)
@click.option(
    "--fail-on",
    type=click.Choice(["error", "warning", "info"]),
    default="error",
    show_default=True,
    help="Exit 1 when a finding at or above this severity exists.",
)
@filter_option
@click.option(
    "--explain",
    metavar="RULE|all",
    help="Explain RULE (what it means, how to fix it; no TRACE needed), or after the text "
    "report every rule it found ('all').",
)
@click.option(
    "--as",
    "as_version",
    type=click.Choice(catalog.VERSIONS),
    help="Judge the sessions by the rules of this protocol version: what would break if "
    "client and server moved to it (docs/upgrade.md).",
)
@click.option(
    "--faults-summary",
    is_flag=True,
    help="After the text report, list each fault mcpsniff injected (--fault) and how the "
    "other peer reacted (docs/faults.md).",
)
def check(
    trace: Path | None,
    fmt: str,
    fail_on: str,
    filter_expr: str | None = None,
    explain: str | None = None,
    as_version: str | None = None,
    faults_summary: bool = False,
) -> None:
    """Re-analyze the raw frames of TRACE with today's rules and report findings.

    With --filter, only findings about matching messages are reported and counted
    (the syntax: mcpsniff show --help).
    Exit status: 0 when nothing is at or above --fail-on, 1 when something is,
    2 when the trace is missing or unreadable.
    """
    if explain and explain != "all":
        explain = explain.upper()  # rule ids are upper case; jr-resp-id means JR-RESP-ID
    if trace is None:
        _explain_only(explain)
        return
    if as_version is not None:
        from mcpsniff.check.upgrade import upgrade_check

        sys.exit(upgrade_check(trace, as_version, fmt, fail_on))
    if explain and explain != "all":
        try:
            catalog.get(explain)
        except KeyError as exc:  # a typo is named before the trace is read
            fail("check", str(exc.args[0]))
    options = CheckOptions(
        trace=trace,
        fmt=fmt,
        fail_on=fail_on,
        flt=parse_filter("check", filter_expr),
        explain=explain,
        colour=colour(sys.stdout),
        faults_summary=faults_summary,
    )
    if faults_summary and fmt != "text":
        raise click.UsageError("--faults-summary is part of the text report (--format text)")
    sys.exit(check_exit_status(options))


def check_exit_status(options: CheckOptions) -> int:
    """Run ``check`` on stdout and stderr: 0 or 1 by the verdict (2 exits at once)."""
    tolerate_surrogates()
    try:
        failing = run_check(options, sys.stdout, click.echo, _warn)
    except CheckError as exc:
        fail("check", str(exc))
    return EXIT_FINDINGS if failing else EXIT_OK


def _warn(text: str) -> None:
    click.echo(f"mcpsniff check: warning: {text}", err=True)


def _explain_only(rule_id: str | None) -> None:
    """``check --explain RULE`` without a trace: the rule's paragraph."""
    if rule_id == "all":
        raise click.UsageError(
            "--explain all explains the rules a TRACE's report found: name the TRACE "
            "(every rule is described by: mcpsniff rules --format json)"
        )
    if not rule_id:
        raise click.UsageError("missing argument TRACE (or --explain RULE to explain a rule)")
    try:
        catalog.get(rule_id)
    except KeyError as exc:
        fail("check", str(exc.args[0]))
    for line in explain_lines([rule_id]):
        click.echo(line)
