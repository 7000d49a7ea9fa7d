"""What the recording commands (``stdio``, ``http``) share: their trace options, OTLP, --show."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import click

from mcpsniff.capture.sinks import Sink
from mcpsniff.cli.shared import colour, fail, warner
from mcpsniff.core.model import EventRecord, Record
from mcpsniff.terminal.render import Style, Timeline

F = TypeVar("F", bound=Callable[..., Any])

OTLP_HELP = (
    "Also send MCP spans and metrics live to this OpenTelemetry collector (OTLP, e.g. "
    "http://127.0.0.1:4318; needs mcpsniff[otel]). OTEL_EXPORTER_OTLP_* apply. A collector "
    "that is down costs one warning, never the relay."
)


def recording_options(command: F) -> F:
    """Adds ``--trace`` (parameter ``trace_path``), ``--show`` and ``--no-redact``, in order."""
    command = click.option(
        "--no-redact", is_flag=True, help="Record credentials as they are (off by default)."
    )(command)
    command = click.option(
        "--show", is_flag=True, help="Print a line per message on stderr as it happens."
    )(command)
    return click.option(
        "--trace",
        "trace_path",
        help="Trace file: created, or a new session appended to it. May hold {name}, {pid} "
        "and {time}; a directory means a new file in it "
        "(default: a new file in ~/.local/state/mcpsniff/traces).",
    )(command)


def otlp_sink(command: str, endpoint: str, upstream: str | None = None) -> Sink:
    """The live OTLP sink (mcpsniff/export/live.py), or a one-line error and exit 2."""
    from mcpsniff.export.live import otlp_sink as live_otlp_sink
    from mcpsniff.export.otlp import OtlpSettingsError, OtlpUnavailable

    try:
        return live_otlp_sink(endpoint, warner(command), upstream)
    except (OtlpSettingsError, OtlpUnavailable) as exc:
        fail(command, str(exc))


def live_display(
    show: bool, skip_events: frozenset[str] | set[str] = frozenset()
) -> tuple[Callable[[Record], None] | None, Callable[[], None] | None]:
    """The ``--show`` timeline on stderr: a record listener and a flush after each batch."""
    if not show:
        return None, None
    timeline = Timeline(Style(colour(sys.stderr)), time_format=_short_time)

    def listener(record: Record) -> None:
        if isinstance(record, EventRecord) and record.event in skip_events:
            return
        for line in timeline.feed(record):
            sys.stderr.write(line + "\n")

    def flush() -> None:
        for line in timeline.flush():
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    return listener, flush


def time_ordered_display(
    show: bool,
) -> tuple[Callable[[Record], None] | None, Callable[[], None] | None, Callable[[], None] | None]:
    """``mcpsniff http``'s ``--show``: the timeline in observation time, not arrival order.

    A record listener, a flush after each batch and a close at the end. Each
    line waits up to ``HOLD`` seconds for earlier ones (``terminal/time_order.py``);
    a clock thread, started in the analysis process on the first record, lets
    them out when no traffic comes.
    """
    if not show:
        return None, None, None
    from mcpsniff.terminal.time_order import TimeOrder

    timeline = Timeline(Style(colour(sys.stderr)), time_format=_short_time)
    order = TimeOrder()
    lock = threading.Lock()
    clock: list[threading.Thread] = []

    def write(records: list[Record]) -> None:
        for record in records:
            for line in timeline.feed(record):
                sys.stderr.write(line + "\n")
        if records:
            for line in timeline.flush():
                sys.stderr.write(line + "\n")
            sys.stderr.flush()

    def tick() -> None:
        while True:
            time.sleep(0.1)
            with lock:
                write(order.due(time.time()))

    def listener(record: Record) -> None:
        with lock:
            order.add(record)
            if not clock:
                clock.append(threading.Thread(target=tick, name="show-clock", daemon=True))
                clock[0].start()

    def flush() -> None:
        with lock:
            write(order.due(time.time()))

    def close() -> None:
        with lock:
            write(order.drain())

    return listener, flush, close


def _short_time(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t)) + f".{int((t % 1) * 1000):03d}"
