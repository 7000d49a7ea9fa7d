"""``mcpsniff demo``: record a real MCP client and server, show the timeline, check it."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

from mcpsniff.check.run import CheckOptions
from mcpsniff.cli.check import check_exit_status
from mcpsniff.cli.shared import EXIT_ERROR, colour, fail
from mcpsniff.terminal.render import Style, Timeline
from mcpsniff.trace.paths import make_private_dirs, traces_dir
from mcpsniff.trace.reader import TraceReader


@click.command()
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the trace (default: the state folder, where ls and ui find it).",
)
@click.option(
    "--bug",
    type=click.Choice(["none", "banner", "skip-initialized", "string-ids"]),
    default="none",
    show_default=True,
    help="Make the demo peers commit a classic bug, to see how mcpsniff reports it.",
)
def demo(trace_path: Path | None, bug: str) -> None:
    """Record a real MCP client and server talking through mcpsniff, then check it."""
    from mcpsniff.demo.runner import run_demo

    if trace_path is None:
        # The state folder, as every recording: not the current directory, which a
        # demo run from anywhere would litter (and which ls and ui do not read).
        folder = traces_dir()
        try:
            make_private_dirs(folder)
        except OSError as exc:
            fail("demo", f"cannot create {folder}: {exc.strerror or exc}")
        trace_path = folder / f"demo-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.jsonl"
    server_args = (
        ["--banner"] if bug == "banner" else ["--string-ids"] if bug == "string-ids" else []
    )
    client_args = ["--skip-initialized"] if bug == "skip-initialized" else []
    try:
        result = run_demo(trace_path, server_args=server_args, client_args=client_args)
    except FileExistsError:
        fail("demo", f"{trace_path} already exists; choose another --trace path")
    except OSError as exc:
        fail("demo", f"could not run the demo ({trace_path}): {exc.strerror or exc}")
    click.echo(f"mcpsniff demo: recorded {result.frames} frames to {trace_path}\n")
    timeline = Timeline(Style(colour(sys.stdout)))
    with TraceReader(trace_path) as reader:
        for record in reader.records():
            for line in timeline.feed(record):
                click.echo(line)
    for line in timeline.flush():
        click.echo(line)
    click.echo("")
    if not result.ok:
        reason = "timed out" if result.timed_out else f"client exited {result.client_exit}"
        click.echo(f"mcpsniff demo: the demo peers failed ({reason}); client log:", err=True)
        click.echo(result.client_log.rstrip() or "(empty)", err=True)
    click.echo(f"$ mcpsniff check {trace_path}")
    sys.stdout.flush()
    try:
        code = check_exit_status(CheckOptions(trace=trace_path, colour=colour(sys.stdout)))
    except SystemExit as exc:  # the trace is unreadable; check said why
        code = exc.code if isinstance(exc.code, int) else 0
    if not result.ok:
        sys.exit(EXIT_ERROR)
    # With --bug the findings are the point of the run, not a failure.
    sys.exit(0 if bug != "none" else code)
