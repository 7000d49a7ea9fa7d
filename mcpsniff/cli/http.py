"""``mcpsniff http``: reverse-proxy and record an MCP server over HTTP."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mcpsniff.capture.sinks import Outputs
from mcpsniff.cli.fault_option import fault_options, parsed_faults
from mcpsniff.cli.guard_options import enforce_policy, guard_relay_options
from mcpsniff.cli.recording import (
    OTLP_HELP,
    otlp_sink,
    recording_options,
    time_ordered_display,
)
from mcpsniff.cli.seconds import seconds_option
from mcpsniff.cli.shared import fail
from mcpsniff.core.escape import terminal_safe


@click.command()
@click.option(
    "--upstream", required=True, help="The MCP server's URL, e.g. http://127.0.0.1:3001/mcp."
)
@click.option(
    "--listen",
    default="127.0.0.1:6280",
    show_default=True,
    help="HOST:PORT to listen on. Anything but loopback must be asked for explicitly.",
)
@recording_options
@click.option(
    "--keep-host",
    is_flag=True,
    help="Forward the Host header as the client sent it. By default a Host naming the proxy "
    "(what a client using the printed URL sends) becomes the upstream's; any other passes.",
)
@click.option(
    "--no-busy-poll",
    is_flag=True,
    help="Never poll instead of sleeping. By default the proxy polls for 0.2 ms after "
    "forwarding while one client talks alone, which saves a wake-up per hop (mostly on VMs).",
)
@click.option("--otlp", metavar="URL", help=OTLP_HELP)
@seconds_option(
    "--head-timeout",
    30.0,
    "Seconds a client has to send a whole request head (then 408 and close).",
    maximum=1e7,
)
@seconds_option(
    "--idle-timeout",
    75.0,
    "Seconds a client may stay silent between requests or mid-body (then close).",
    maximum=1e7,
)
@click.option(
    "--capture-limit",
    type=click.IntRange(min=0),
    default=64 << 20,
    show_default=True,
    help="Most bytes of one request body kept for analysis; a bigger one is forwarded "
    "whole and recorded as a capture gap.",
)
@guard_relay_options
@fault_options
def http(
    upstream: str,
    listen: str,
    trace_path: str | None,
    show: bool,
    no_redact: bool,
    keep_host: bool,
    no_busy_poll: bool,
    head_timeout: float,
    idle_timeout: float,
    capture_limit: int,
    fault_specs: tuple[str, ...] = (),
    fault_files: tuple[str, ...] = (),
    otlp: str | None = None,
    guard_mode: str = "off",
    guard_pins: Path | None = None,
    guard_forbid: tuple[str, ...] = (),
) -> None:
    """Reverse-proxy and record an MCP server over Streamable HTTP or HTTP+SSE.

    Runs until SIGINT or SIGTERM. Exit status: 0 when the trace is complete,
    3 when it could not be written in full (a warning says why), 2 when the
    proxy cannot start.
    """
    from mcpsniff.core.redact import redact_query
    from mcpsniff.relay.http import HttpOptions, StartError, parse_listen, run_http

    faults = parsed_faults("http", fault_specs, fault_files, http=True)
    try:
        host, port = parse_listen(listen)
    except ValueError as exc:
        fail("http", str(exc))
    options = HttpOptions(
        upstream=upstream,
        host=host,
        port=port,
        trace=trace_path,
        show=show,
        redact=not no_redact,
        busy_poll=not no_busy_poll,
        keep_host=keep_host,
        head_timeout=head_timeout,
        idle_timeout=idle_timeout,
        capture_limit=capture_limit,
        faults=faults,
    )
    # The server as the trace's header names it, so that the lock file's keys match.
    shown = upstream if no_redact else redact_query(upstream)
    options.guard = enforce_policy("http", f"http:{shown}", guard_mode, guard_pins, guard_forbid)
    if options.guard is not None and faults:
        # Both hold each request to judge it, in two different ways: one at a time.
        fail("http", "--fault and --guard enforce cannot be used together; choose one")
    if otlp:
        otlp_sink("http", otlp, upstream)  # a bad endpoint or a missing extra: exit 2 now
        options.outputs = Outputs(otlp=otlp, otlp_upstream=upstream)

    def announce(relay: object, path: Path) -> None:
        click.echo(
            f"mcpsniff: proxying {relay.client_url} -> {upstream}; recording to {path}",  # type: ignore[attr-defined]
            err=True,
        )

    def warn(text: str) -> None:
        click.echo(terminal_safe(text), err=True)

    listener, flush, close = time_ordered_display(show)
    try:
        status = run_http(
            options,
            announce=announce,
            warn=warn,
            show=listener,
            show_flush=flush,
            show_close=close,
        )
    except StartError as exc:
        fail("http", str(exc))
    sys.exit(status)
