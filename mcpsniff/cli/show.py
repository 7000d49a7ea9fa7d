"""``mcpsniff show``: the options; the run itself is ``mcpsniff/show/run.py``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mcpsniff.cli.filter_option import filter_option, parse_filter
from mcpsniff.cli.options import format_option
from mcpsniff.cli.seconds import seconds_option
from mcpsniff.cli.shared import colour, fail
from mcpsniff.filter import HELP as FILTER_HELP
from mcpsniff.show.run import ShowError, ShowOptions, run_show
from mcpsniff.terminal.safe_output import tolerate_surrogates


@click.command(epilog=FILTER_HELP)
@click.argument("trace", type=click.Path(dir_okay=True, path_type=Path))
@click.option(
    "--follow",
    "-f",
    is_flag=True,
    help="Keep reading as the trace grows, like tail -F (waits for a trace not created yet).",
)
@seconds_option("--interval", 0.2, "Polling interval for --follow, in seconds.", maximum=3600)
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="-v: each message's body as pretty JSON; -vv: also the raw bytes from the wire.",
)
@format_option(
    ("text", "json"),
    "json: one object per message or event, with its body (-vv adds the raw bytes).",
)
@filter_option
def show(
    trace: Path, follow: bool, interval: float, verbose: int, fmt: str, filter_expr: str | None
) -> None:
    """Print a readable timeline of TRACE: one line per message, findings inline.

    Every error names its layer (JSON-RPC protocol, server-error range,
    application, tool isError). Tool results with isError are marked, cancellations
    show the requestId they cancel (and how long the request had waited), progress
    notifications their values. A W3C traceparent in params._meta shows as
    trace=<first 8 hex digits> (-v: the whole context); an invalid one is named.
    """
    flt = parse_filter("show", filter_expr)
    tolerate_surrogates()
    options = ShowOptions(
        trace=trace,
        follow=follow,
        interval=interval,
        verbose=verbose,
        fmt=fmt,
        flt=flt,
        colour=colour(sys.stdout),
    )
    try:
        run_show(options, _note)
    except ShowError as exc:
        fail("show", str(exc))


def _note(text: str) -> None:
    click.echo(f"mcpsniff show: {text}", err=True)
