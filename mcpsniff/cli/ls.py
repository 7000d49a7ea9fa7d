"""The ``mcpsniff ls`` command."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from mcpsniff.cli.options import format_option
from mcpsniff.cli.shared import EXIT_ERROR
from mcpsniff.core.escape import terminal_safe
from mcpsniff.listing.columns import pad
from mcpsniff.listing.identity import duration_text
from mcpsniff.listing.summary import Skipped, TraceSummary, list_traces
from mcpsniff.terminal.safe_output import terminal_json_line, tolerate_surrogates
from mcpsniff.trace.paths import traces_dir


def _duration(seconds: float | None) -> str:
    return "-" if seconds is None else duration_text(seconds, compact=True)


def _size(size: int) -> str:
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{size} B"


def _row(row: TraceSummary) -> str:
    started = (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.started)) if row.started else "-"
    )
    f = row.findings
    findings = f"{f['error']}/{f['warning']}/{f['info']}"
    line = (
        f"{pad(row.server, 24)} {started:<19} {_duration(row.duration):>8} "
        f"{row.started_sessions:>8} {row.messages:>10,} {findings:>12} {_size(row.size):>9}  "
        f"{terminal_safe(row.path.name)}"
    )
    failed = row.failed_launches
    if failed:
        # A launch whose server never started is no session of 0 messages.
        line += f"  ({failed} launch{'es' if failed > 1 else ''} failed to start)"
    return line


@click.command(name="ls")
@click.argument("folder", required=False, type=click.Path(path_type=Path))
@format_option(("text", "json"))
def ls(folder: Path | None, fmt: str) -> None:
    """List the traces in the state folder (or FOLDER), newest first.

    For each: server name (the --name label, else the server's serverInfo name),
    start time, duration, sessions, messages, findings (errors/warnings/info),
    size and file name; launches whose server failed to start are marked.
    """
    tolerate_surrogates()
    folder = folder if folder is not None else traces_dir()
    if not folder.is_dir():
        if folder == traces_dir() and not folder.exists():
            click.echo(f"no traces yet ({terminal_safe(str(folder))} does not exist)", err=True)
            return
        click.echo(f"mcpsniff ls: {terminal_safe(str(folder))}: not a folder", err=True)
        sys.exit(EXIT_ERROR)
    skipped: list[Skipped] = []
    rows = list_traces(folder, skipped)
    if fmt == "json":
        for row in rows:
            click.echo(terminal_json_line(row.to_json()))
    else:
        click.echo(
            f"{'SERVER':<24} {'STARTED':<19} {'DURATION':>8} {'SESSIONS':>8} {'MESSAGES':>10} "
            f"{'ERR/WARN/INFO':>12} {'SIZE':>9}  FILE"
        )
        for row in rows:
            click.echo(_row(row))
    # A *.jsonl file that is no readable trace is no row, but not a silent one:
    # a damaged trace must not simply vanish from the list.
    for skip in skipped:
        click.echo(f"mcpsniff ls: skipped {terminal_safe(skip.reason)}", err=True)
