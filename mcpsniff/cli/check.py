"""``mcpsniff check``: the options; the run itself is ``mcpsniff/check/run.py``."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from mcpsniff.check import FORMATS
from mcpsniff.cli.filter_option import FilterHelpCommand, filter_option, parse_filter
from mcpsniff.cli.guard_options import guard_check_options, guard_policy
from mcpsniff.cli.options import format_option
from mcpsniff.cli.shared import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, colour, fail
from mcpsniff.core import catalog
from mcpsniff.terminal.safe_output import tolerate_surrogates

if TYPE_CHECKING:
    from mcpsniff.check.run import CheckOptions


@click.command(cls=FilterHelpCommand)
@click.argument("traces", nargs=-1, type=click.Path(dir_okay=True, path_type=Path))
@format_option(
    FORMATS, "sarif: SARIF 2.1.0 for code scanning; junit: JUnit XML, a test case per session."
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
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Processes to check with (default: the number of cores): several traces one "
    "each, one trace's sessions shared among them. The output is the same for any number.",
)
@click.option(
    "--faults-summary",
    is_flag=True,
    help="After the text report, list each fault mcpsniff injected (--fault) and how the "
    "other peer reacted (docs/faults.md).",
)
@guard_check_options
def check(
    traces: tuple[Path, ...],
    fmt: str,
    fail_on: str,
    filter_expr: str | None = None,
    explain: str | None = None,
    as_version: str | None = None,
    jobs: int | None = None,
    faults_summary: bool = False,
    **guard: object,
) -> None:
    """Re-analyze the raw frames of each TRACE with today's rules and report findings.

    Several traces are checked side by side (--jobs), and reported one after the
    other in the order given: in text, each report under a "trace PATH" line and
    a last line adding them up; in JSON, each finding names its "trace".
    With --filter, only findings about matching messages are reported and counted
    (the syntax: mcpsniff show --help). The guard options (--pins, --expect-tool,
    --forbid-tool, --max-duration, --max-definition-tokens, --history) add their
    GUARD-* findings, judged by --fail-on like every other (docs/guard.md).
    Exit status: 0 when nothing is at or above --fail-on, 1 when something is,
    2 when the trace is missing or unreadable.
    """
    if explain and explain != "all":
        explain = explain.upper()  # rule ids are upper case; jr-resp-id means JR-RESP-ID
    if not traces:
        _explain_only(explain)
        return
    if len(traces) > 1:
        if as_version is not None or fmt in ("sarif", "junit"):
            what = "--as" if as_version is not None else f"--format {fmt}"
            raise click.UsageError(f"{what} checks one TRACE at a time")
    trace = traces[0]
    if as_version is not None:
        from mcpsniff.check.upgrade import upgrade_check

        sys.exit(upgrade_check(trace, as_version, fmt, fail_on))
    if explain and explain != "all":
        try:
            catalog.get(explain)
        except KeyError as exc:  # a typo is named before the trace is read
            fail("check", str(exc.args[0]))
    # The analyzer is imported once there is a trace to check: --help and
    # --explain RULE start without it.
    from mcpsniff.check.many import default_jobs, labelled
    from mcpsniff.check.run import CheckOptions

    options = CheckOptions(
        trace=trace,
        fmt=fmt,
        fail_on=fail_on,
        flt=parse_filter("check", filter_expr),
        explain=explain,
        colour=colour(sys.stdout),
        guard=guard_policy("check", **guard),  # type: ignore[arg-type]
        faults_summary=faults_summary,
    )
    if faults_summary and fmt != "text":
        raise click.UsageError("--faults-summary is part of the text report (--format text)")
    if len(traces) == 1:
        # One trace of many sessions: its sessions shared among the cores.
        options = replace(options, jobs=default_jobs() if jobs is None else jobs)
        sys.exit(check_exit_status(options))
    several = [labelled(replace(options, trace=path), True) for path in traces]
    sys.exit(check_several_exit_status(several, default_jobs() if jobs is None else jobs))


def check_exit_status(options: CheckOptions) -> int:
    """Run ``check`` on stdout and stderr: 0 or 1 by the verdict (2 exits at once)."""
    from mcpsniff.check.run import CheckError, run_check

    tolerate_surrogates()
    try:
        failing = run_check(options, sys.stdout, click.echo, _warn)
    except CheckError as exc:
        fail("check", str(exc))
    return EXIT_FINDINGS if failing else EXIT_OK


def check_several_exit_status(options: list[CheckOptions], jobs: int) -> int:
    """Check several traces (``check_traces``); 2 when one was unreadable, else 0 or 1."""
    from mcpsniff.check.many import check_traces

    tolerate_surrogates()
    try:
        verdicts = check_traces(options, jobs, sys.stdout, sys.stderr)
    except BrokenPipeError:
        # As with one trace: the reader of the report left; say nothing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    failing = sum(v.failing for v in verdicts)
    unreadable = sum(1 for v in verdicts if v.error is not None)
    if options[0].fmt == "text":
        fail_on = options[0].fail_on
        verdict = (
            f"{failing} finding(s) at or above {fail_on}"
            if failing
            else f"nothing at or above {fail_on}"
        )
        unread = f", {unreadable} unreadable" if unreadable else ""
        click.echo(f"{len(verdicts)} trace(s){unread}; {verdict}")
    if unreadable:
        return EXIT_ERROR
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
    # Imported for --explain alone: its paragraphs (core/descriptions.py) are
    # no part of checking a trace (docs/performance.md, "Start-up").
    from mcpsniff.core.explain import explain_lines

    for line in explain_lines([rule_id]):
        click.echo(line)
