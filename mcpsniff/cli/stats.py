"""The ``mcpsniff stats`` command."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import click
import orjson

from mcpsniff.cli.filter_option import filter_option, parse_filter
from mcpsniff.cli.options import format_option
from mcpsniff.cli.shared import EXIT_ERROR
from mcpsniff.core.escape import terminal_safe
from mcpsniff.filter import HELP as FILTER_HELP
from mcpsniff.filter import Filter, build_views, index_findings
from mcpsniff.filter.analyzed import AnalyzedRecords, frames_only
from mcpsniff.filter.reading import LazyTraceRecords
from mcpsniff.guard.context_cost import trace_costs
from mcpsniff.guard.tools_report import context_lines, tools_data
from mcpsniff.listing.summary import session_titles
from mcpsniff.stats.compute import compute
from mcpsniff.stats.render import stats_lines
from mcpsniff.terminal.safe_output import terminal_json_line, tolerate_surrogates
from mcpsniff.trace.codec import TraceError
from mcpsniff.trace.spool import is_stream, rereadable


@click.command(epilog=FILTER_HELP)
@click.argument("trace", type=click.Path(dir_okay=True, path_type=Path))
@format_option(("text", "json"))
@filter_option
def stats(trace: Path, fmt: str, filter_expr: str | None) -> None:
    """Per method and per tool: counts, errors, latency p50/p95/p99/max; errors by layer.

    Reads the messages and findings recorded in TRACE (no re-analysis), so it
    is fast on long traces; a trace of frames without messages is analyzed.
    With --filter, only matching messages count.
    """
    flt: Filter | None = parse_filter("stats", filter_expr)
    tolerate_surrogates()
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)
    try:
        with rereadable(trace) as readable:
            # Frames without message records (cut by hand, written without
            # analysis) would count nothing: they are analyzed, as check does.
            analyze = frames_only(readable)
            if analyze:
                where = terminal_safe(str(trace))
                click.echo(
                    f"mcpsniff stats: {where} holds frames but no message records: "
                    "analyzing its frames with today's rules, as check does",
                    err=True,
                )
            reading = AnalyzedRecords if analyze else LazyTraceRecords
            index = None
            if flt is not None:
                # A late finding (an unanswered request, at session end) belongs to its request.
                index = index_findings(reading(readable, on_skip=_quiet))
            records = reading(readable)
            result = compute(build_views(records, index), flt)
            torn = records.torn
            costs = trace_costs(readable, result.by_method)
    except TraceError as exc:
        click.echo(f"mcpsniff stats: {terminal_safe(str(exc))}", err=True)
        sys.exit(EXIT_ERROR)
    except OSError as exc:
        reason = f"{trace}: read failed: {exc.strerror or exc}"
        click.echo(f"mcpsniff stats: {terminal_safe(reason)}", err=True)
        sys.exit(EXIT_ERROR)
    if torn is not None:
        warning = f"{trace}: {torn.describe()}"
        click.echo(f"mcpsniff stats: warning: {terminal_safe(warning)}", err=True)
    if fmt == "json":
        document = result.to_json()
        document["context_cost"] = tools_data(costs)
        click.echo(terminal_json_line(document, option=orjson.OPT_NON_STR_KEYS))
        return
    # A pipe was read once already; a file is read again, by its line heads only.
    titles = {} if is_stream(trace) else session_titles(trace)
    for line in stats_lines(result, str(trace), titles):
        click.echo(line)
    if costs:
        click.echo("")
    for line in context_lines(costs):
        click.echo(line)


def _quiet(message: str) -> None:
    """Skipped lines are reported once, by the pass that prints; the index pass is silent."""
