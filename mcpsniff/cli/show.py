"""The ``mcpsniff show`` command."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import click

from mcpsniff.cli.filter_option import filter_option, parse_filter
from mcpsniff.cli.seconds import Seconds
from mcpsniff.cli.shared import colour, fail
from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.model import Record
from mcpsniff.filter import HELP as FILTER_HELP
from mcpsniff.filter import Filter, ViewBuilder, index_findings
from mcpsniff.filter.analyzed import AnalyzedRecords, frames_only
from mcpsniff.filter.reading import LazyTraceRecords
from mcpsniff.show.printer import ViewPrinter
from mcpsniff.terminal.render import Style
from mcpsniff.terminal.safe_output import tolerate_surrogates
from mcpsniff.trace.codec import TraceError
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.spool import is_stream, rereadable
from mcpsniff.trace.tail import TraceTail


def _wait_for(trace: Path, interval: float) -> None:
    """Block until ``trace`` exists and has its first line, as ``tail -F`` waits for a file."""
    announced = False
    while True:
        try:
            with open(trace, "rb") as handle:
                if handle.readline().endswith(b"\n"):
                    return
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            return  # TraceReader says what is wrong
        if not announced:
            where = terminal_safe(str(trace))
            click.echo(f"mcpsniff show: waiting for {where} to appear", err=True)
            announced = True
        time.sleep(interval)


@click.command(epilog=FILTER_HELP)
@click.argument("trace", type=click.Path(dir_okay=True, path_type=Path))
@click.option(
    "--follow",
    "-f",
    is_flag=True,
    help="Keep reading as the trace grows, like tail -F (waits for a trace not created yet).",
)
@click.option(
    "--interval",
    default=0.2,
    type=Seconds(maximum=3600),
    show_default=True,
    help="Polling interval for --follow, in seconds.",
)
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="-v: each message's body as pretty JSON; -vv: also the raw bytes from the wire.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: one object per message or event, with its body (-vv adds the raw bytes).",
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
    if follow and is_stream(trace):
        fail("show", f"{trace} is a pipe or device: --follow needs a trace file")
    if follow:
        try:
            _wait_for(trace, interval)
        except KeyboardInterrupt:
            return
    try:
        with rereadable(trace) as readable:
            _show(readable, follow, interval, verbose, fmt, flt)
    except TraceError as exc:
        fail("show", str(exc))


def _show(
    trace: Path, follow: bool, interval: float, verbose: int, fmt: str, flt: Filter | None
) -> None:
    try:
        TraceReader(trace).close()
    except TraceError as exc:
        fail("show", str(exc))
    try:
        analyze = frames_only(trace)
    except TraceError as exc:
        fail("show", str(exc))
    if analyze:
        where = terminal_safe(str(trace))
        if follow:
            click.echo(
                f"mcpsniff show: warning: {where} holds frames but no message records, so "
                "--follow shows only its events; without --follow its frames are analyzed",
                err=True,
            )
        else:
            click.echo(
                f"mcpsniff show: {where} holds frames but no message records: "
                "analyzing its frames with today's rules, as check does",
                err=True,
            )
    index = None
    if flt is not None and not follow:
        # Every finding beside the message it concerns, even one raised later.
        try:
            records: Iterable[Record] = (
                AnalyzedRecords(trace, _quiet) if analyze else LazyTraceRecords(trace, _quiet)
            )
            index = index_findings(records)
        except TraceError as exc:
            fail("show", str(exc))
    builder = ViewBuilder(index)
    printer = ViewPrinter(Style(colour(sys.stdout)), verbose=verbose, fmt=fmt, flt=flt)
    if analyze and not follow:
        analyzed = AnalyzedRecords(trace)
        try:
            printed = _print_all(analyzed, builder, printer)
        except TraceError as exc:
            fail("show", str(exc))
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return
        if analyzed.torn is not None:
            where = terminal_safe(str(trace))
            click.echo(f"mcpsniff show: warning: {where}: {analyzed.torn.describe()}", err=True)
        if flt is not None and not printed:
            click.echo("mcpsniff show: no message or event matched --filter", err=True)
        return
    tail = TraceTail(trace)
    try:
        printed = _print(tail, builder, printer, follow, interval)
        if flt is not None and not printed and not follow:
            # An empty output alone reads as an empty trace or a broken command.
            click.echo("mcpsniff show: no message or event matched --filter", err=True)
    except BrokenPipeError:
        # `mcpsniff show TRACE | head`: the reader left. Say nothing more, and
        # keep the interpreter's final flush from failing on the closed pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        tail.close()


#: How much of the trace ``show`` reads at a time: memory stays flat on any trace size.
_CHUNK = 4 << 20


def _print(
    tail: TraceTail, builder: ViewBuilder, printer: ViewPrinter, follow: bool, interval: float
) -> int:
    """Print the trace's views; the number of lines printed."""
    out = sys.stdout
    printed = 0
    try:
        while True:
            for record in tail.poll(final=not follow, max_bytes=_CHUNK):
                for line in printer.lines(builder.feed(record)):
                    out.write(line + "\n")
                    printed += 1
            if tail.more:
                continue  # the rest of what is already there, a chunk at a time
            if not follow:
                break
            for line in printer.lines(builder.flush()):
                out.write(line + "\n")
                printed += 1
            out.flush()
            time.sleep(interval)
    except KeyboardInterrupt:
        pass
    for line in [*printer.lines(builder.flush()), *printer.flush()]:
        out.write(line + "\n")
        printed += 1
    out.flush()
    return printed


def _print_all(records: Iterable[Record], builder: ViewBuilder, printer: ViewPrinter) -> int:
    """Print the views of ``records``; the number of lines printed."""
    out = sys.stdout
    printed = 0
    for record in records:
        for line in printer.lines(builder.feed(record)):
            out.write(line + "\n")
            printed += 1
    for line in [*printer.lines(builder.flush()), *printer.flush()]:
        out.write(line + "\n")
        printed += 1
    out.flush()
    return printed


def _quiet(message: str) -> None:
    """Skipped lines are reported once, by the pass that prints; the index pass is silent."""
