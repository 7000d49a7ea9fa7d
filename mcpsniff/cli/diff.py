"""The ``mcpsniff diff`` command: two recorded sessions compared, request by request."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mcpsniff.cli.options import format_option
from mcpsniff.cli.shared import EXIT_FINDINGS, EXIT_OK, fail, warner
from mcpsniff.core.escape import terminal_safe
from mcpsniff.terminal.safe_output import terminal_json_line, tolerate_surrogates


@click.command(name="diff")
@click.argument("trace_a", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("trace_b", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--session-a", metavar="KEY", help="The session of TRACE_A (default: all of them).")
@click.option("--session-b", metavar="KEY", help="The session of TRACE_B (default: all of them).")
@format_option(("text", "json"))
def diff(
    trace_a: Path, trace_b: Path, session_a: str | None, session_b: str | None, fmt: str
) -> None:
    """Compare the answers of two recordings, request by request.

    Requests are aligned by method, tool and arguments (the n-th of one with
    the n-th of the other); their results and errors are compared field by
    field, timestamps and session ids left out. A recording beside its
    `replay drive` run, or a server before and after a change.

    Exit status: 0 the same answers, 1 they differ (a request only one side
    made counts), 2 a trace cannot be read: a CI gate for "this server still
    answers as recorded".
    """
    from mcpsniff.replay.script import ReplayError, load_script
    from mcpsniff.replay.trace_diff import align, differs, exchanges, json_value, text_lines

    tolerate_surrogates()
    warn = warner("diff")
    try:
        left = load_script(trace_a, session_a, warn)
        right = load_script(trace_b, session_b, warn)
    except ReplayError as exc:
        fail("diff", str(exc))
    pairs = align(exchanges(left), exchanges(right))
    if fmt == "json":
        click.echo(terminal_json_line(json_value(pairs)))
    else:
        for line in text_lines(pairs, str(trace_a), str(trace_b)):
            click.echo(terminal_safe(line))
    sys.exit(EXIT_FINDINGS if differs(pairs) else EXIT_OK)
