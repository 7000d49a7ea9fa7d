"""``mcpsniff stdio``: relay and record a stdio MCP server."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mcpsniff.capture.sinks import Outputs
from mcpsniff.cli.fault_option import fault_options, parsed_faults
from mcpsniff.cli.guard_options import enforce_policy, guard_relay_options
from mcpsniff.cli.recording import OTLP_HELP, live_display, otlp_sink, recording_options
from mcpsniff.cli.shared import fail
from mcpsniff.core.escape import terminal_safe
from mcpsniff.trace.writer import TraceWriter


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@recording_options
@click.option("--name", help="Label for the session and the default trace file name.")
@click.option("--otlp", metavar="URL", help=OTLP_HELP)
@click.option(
    "--lanes",
    type=click.IntRange(1, 2),
    default=None,
    help="2 (the default where it applies: the trace is the only output): record every frame "
    "at once and run the rules in a second, lower-priority process behind it; 1: one "
    "analysis process.",
)
@guard_relay_options
@fault_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def stdio(
    trace_path: str | None,
    show: bool,
    no_redact: bool,
    name: str | None,
    command: tuple[str, ...],
    otlp: str | None = None,
    guard_mode: str = "off",
    guard_pins: Path | None = None,
    guard_forbid: tuple[str, ...] = (),
    fault_specs: tuple[str, ...] = (),
    fault_files: tuple[str, ...] = (),
    lanes: int | None = None,
) -> None:
    """Relay and record a stdio MCP server: mcpsniff stdio [OPTIONS] -- COMMAND [ARGS]...

    Bytes pass unchanged both ways; stderr passes through; the exit code passes
    on (128+N for a child killed by signal N); SIGINT, SIGTERM and SIGHUP are
    forwarded to the child's process group.
    """
    from mcpsniff.relay.stdio import StartError, StdioOptions, run_stdio

    options = StdioOptions(
        command=list(command),
        trace=trace_path,
        show=show,
        redact=not no_redact,
        name=name,
        faults=parsed_faults("stdio", fault_specs, fault_files, http=False),
        lanes=lanes,
    )
    label = f"stdio:{name or Path(command[0]).name}"
    options.guard = enforce_policy("stdio", label, guard_mode, guard_pins, guard_forbid)
    if options.guard is not None and options.faults:
        # Both take over the pumps a whole line at a time; one carrier judges a line.
        fail("stdio", "--fault and --guard enforce cannot be used together; choose one")
    if otlp:
        otlp_sink("stdio", otlp)  # a bad endpoint or a missing extra: exit 2 now, not later
        options.outputs = Outputs(
            otlp=otlp, otlp_name=name or "", otlp_fallback=Path(command[0]).name
        )

    def announce(writer: TraceWriter) -> None:
        if writer.note:
            click.echo(f"mcpsniff stdio: warning: {terminal_safe(writer.note)}", err=True)
        verb = "appending a session of" if writer.appended else "recording"
        # "recording everything (node) to ...": the --name label first, then the program.
        what = f"{name} ({command[0]})" if name and name != command[0] else command[0]
        where = f"{what} to {writer.path}"  # --name may come from any config file
        click.echo(f"mcpsniff: {verb} {terminal_safe(where)}", err=True)

    def warn(text: str) -> None:
        click.echo(terminal_safe(text), err=True)

    # The child's stderr already passes through unchanged: don't show it twice.
    listener, flush = live_display(show, skip_events={"stderr"})
    try:
        status = run_stdio(options, announce=announce, warn=warn, show=listener, show_flush=flush)
    except StartError as exc:
        fail("stdio", str(exc))
    sys.exit(status)
