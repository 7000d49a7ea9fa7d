"""``mcpsniff export``: a recorded trace into another tool's format (OTLP, HAR)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from mcpsniff.cli.filter_option import filter_option, parse_filter
from mcpsniff.cli.options import output_option
from mcpsniff.cli.shared import fail, warner
from mcpsniff.export.otlp_trace import send_trace, trace_service
from mcpsniff.trace.codec import TraceError
from mcpsniff.trace.output_target import holds_a_trace
from mcpsniff.trace.reader import TraceReader


@click.group("export")
def export() -> None:
    """Export a recorded trace: OpenTelemetry (OTLP) spans and metrics, or HAR."""


@export.command("otlp")
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--endpoint",
    help="The collector's OTLP URL, e.g. http://127.0.0.1:4318 (default: "
    "OTEL_EXPORTER_OTLP_ENDPOINT, else the SDK's default).",
)
@click.option(
    "--protocol",
    type=click.Choice(["http/protobuf", "grpc"]),
    help="OTLP transport (default: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf).",
)
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="K=V",
    help="A header for the collector (repeatable), e.g. an API key. "
    "Default: OTEL_EXPORTER_OTLP_HEADERS.",
)
@click.option(
    "--include-content",
    is_flag=True,
    help="Add the opt-in gen_ai.tool.call.arguments and gen_ai.tool.call.result "
    "attributes (credentials in them redacted). Off by default: they may be sensitive.",
)
@click.option(
    "--deadline",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="Give up (exit 2) when the collector has not taken the whole export by then.",
)
@filter_option
def otlp(
    trace: Path,
    endpoint: str | None,
    protocol: str | None,
    headers: tuple[str, ...],
    include_content: bool,
    deadline: float = 60.0,
    filter_expr: str | None = None,
) -> None:
    """Send the MCP operations of TRACE to an OpenTelemetry collector as spans and metrics.

    Each request becomes a CLIENT span (the side that sent it) and a SERVER span
    (the side that answered), with the times the capture saw; a `traceparent`
    in the request's `_meta` makes them part of the caller's trace. Findings
    become span events named by rule id. With --filter, only operations with a
    matching message are sent. Exit status: 0 when the collector took
    everything, 2 otherwise.
    """
    from mcpsniff.export.otlp import (
        OtlpExporter,
        OtlpSettings,
        OtlpSettingsError,
        OtlpUnavailable,
        check_endpoint,
        parse_headers,
    )

    flt = parse_filter("export otlp", filter_expr)
    try:
        settings = OtlpSettings(
            endpoint=check_endpoint(endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", ""))
            if endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
            else None,
            protocol=protocol,
            headers=parse_headers(headers),
        )
        exporter = OtlpExporter(settings, deadline=deadline, service=trace_service(trace))
    except (OtlpSettingsError, OtlpUnavailable) as exc:
        fail("export otlp", str(exc))
    reader = _open("export otlp", trace)
    try:
        with reader:
            sent = send_trace(reader, exporter, include_content, flt)
    except TraceError as exc:
        exporter.shutdown()
        fail("export otlp", str(exc))
    except OSError as exc:
        exporter.shutdown()
        fail("export otlp", f"{trace}: read failed: {exc.strerror or exc}")
    exporter.shutdown()
    if reader.torn is not None:
        warner("export otlp")(f"{trace}: {reader.torn.describe()}")
    if exporter.unsampled:
        warner("export otlp")(
            f"{exporter.unsampled} operation(s) left out: their traceparent says not sampled"
        )
    where = settings.describe()
    if exporter.timed_out:
        fail(
            "export otlp",
            f"the collector at {where} had not taken the export after {deadline:g} s "
            f"({exporter.spans_sent} span(s) sent, {exporter.spans_failed} not; --deadline)",
        )
    if not sent.ok:
        fail(
            "export otlp",
            f"the collector at {where} did not take the export "
            f"({exporter.spans_sent} span(s) sent, {exporter.spans_failed} not): "
            "is it running, and is --endpoint/--protocol right?",
        )
        return
    click.echo(
        f"mcpsniff export otlp: sent {exporter.spans_sent} span(s) for {sent.operations} MCP "
        f"operation(s) to {where}",
        err=True,
    )


def _open(command: str, trace: Path) -> TraceReader:
    """A reader of ``trace`` whose skipped lines warn as ``command``; exit 2 when it won't open."""
    try:
        return TraceReader(trace, on_skip=warner(command))
    except TraceError as exc:
        fail(command, str(exc))


def _refuse_to_replace_a_trace(command: str, trace: Path, output: Path) -> None:
    """``-o`` must not name the trace being read, nor any other mcpsniff trace.

    ``export har t.jsonl -o t.jsonl`` (a slip of the shell's completion) would
    replace the user's only recording with its HAR. Any other file is replaced
    as ``-o`` says.
    """
    try:
        same = output.exists() and output.samefile(trace)
    except OSError:
        same = False
    if same:
        fail(f"export {command}", f"{output} is the trace itself; choose another -o")
    if holds_a_trace(output):
        fail(
            f"export {command}",
            f"{output} is an mcpsniff trace; it was left untouched (choose another -o)",
        )


@export.command("har")
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@output_option("Write the HAR file here (default: standard output).")
@click.option(
    "--no-redact",
    is_flag=True,
    help="Keep credentials (headers, cookies, URLs, bodies) as the trace holds them.",
)
def har(trace: Path, output: Path | None, no_redact: bool) -> None:
    """Write the HTTP exchanges of TRACE as a HAR 1.2 file (Chrome DevTools, proxies).

    Event-stream responses carry their events as the body text; timings are the
    capture's (request sent, response head, end of body). stdio sessions have
    no place in HAR and are left out; a trace of stdio sessions only is refused.
    """
    from mcpsniff.export.har_file import HarStdioOnly, write_har

    if output is not None:
        _refuse_to_replace_a_trace("har", trace, output)
    reader = _open("export har", trace)
    try:
        with reader:
            result = write_har(reader, output, redact=not no_redact)
    except HarStdioOnly as exc:
        fail("export har", str(exc))
    except TraceError as exc:
        fail("export har", str(exc))
    except BrokenPipeError:
        # `export har TRACE | head`: the reader left; the trace is not at fault.
        # Keep the interpreter's final flush from failing on the closed pipe too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return
    except OSError as exc:
        fail("export har", f"{output or trace}: {exc.strerror or exc}")
    if result.stdio_sessions:
        warner("export har")(
            f"left out {result.stdio_sessions} stdio session(s): HAR only describes HTTP"
        )
    if reader.torn is not None:
        warner("export har")(f"{trace}: {reader.torn.describe()}")
    if output is not None:
        click.echo(f"mcpsniff export har: wrote {result.entries} entries to {output}", err=True)
