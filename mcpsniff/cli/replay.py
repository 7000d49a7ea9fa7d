"""``mcpsniff replay``: serve a recording as a mock server, or drive a live server with one."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from urllib.parse import urlsplit

import click

from mcpsniff.cli.fault_option import fault_options, parsed_faults
from mcpsniff.cli.seconds import seconds_option
from mcpsniff.cli.shared import EXIT_OK, fail
from mcpsniff.core.escape import terminal_safe_lines
from mcpsniff.replay.compare import PathPart, parse_path
from mcpsniff.replay.matcher import AUTO, MODES
from mcpsniff.replay.script import ReplayError, load_script
from mcpsniff.terminal.safe_output import tolerate_surrogates

#: The replayed server or client behaved differently from the recording.
EXIT_DIFFERENT = 1

_TRACE_OPTION = click.option(
    "--trace",
    "trace_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Record the replay's own traffic to this trace file (it is checked either way).",
)
_SESSION_OPTION = click.option(
    "--session", help="Replay only this trace session (default: all, in trace order)."
)


def _warn(text: str) -> None:
    # Warnings quote traffic and traces (methods, tool names, values): made inert here,
    # line by line, so that a multi-line explanation still reads as lines.
    click.echo(f"mcpsniff replay: {_safe(text)}", err=True)


def _safe(text: str) -> str:
    return "\n".join(terminal_safe_lines(text))


def _member_path(option: str, text: str) -> tuple[PathPart, ...]:
    """A ``--ignore``/``--allow`` path; ``ValueError`` for one that names the whole message.

    ``$`` (or an empty value, as ``--ignore "$unset_variable"`` gives in a shell)
    would leave every difference out: replay drive would report "all match"
    for any server at all, the false pass replay must never give.
    """
    path = parse_path(text)
    if not path:
        raise ValueError(
            f"{option} {text!r} names the whole message, so every difference would be "
            "left out; name a member, e.g. '$.result.content[0].text'"
        )
    return path


def _bad_url(url: str) -> str | None:
    """Why ``url`` cannot be connected to (no host, a bad port, broken brackets), or None."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError outside 0-65535 or when not a number
    except ValueError as exc:
        return str(exc)
    if not parts.hostname:
        return "it names no host"
    if port == 0:
        return "port 0 is not a port a server listens on"
    return None


@click.group()
def replay() -> None:
    """Serve a recorded session as a mock server, or re-drive a live server with it."""


@replay.command()
@click.argument("trace", type=click.Path(dir_okay=True, path_type=Path))
@_SESSION_OPTION
@click.option("--http", "listen", metavar="HOST:PORT", help="Serve Streamable HTTP here.")
@click.option(
    "--match",
    "mode",
    type=click.Choice(MODES),
    default=AUTO,
    show_default=True,
    help="auto: initialize by method, tools/prompts/resources by target then arguments, "
    "others by params; strict: auto, and exit 1 at the end if a request had no recorded "
    "counterpart; params: method and params exactly; sequential: the next of the same method "
    "(and target), in recorded order.",
)
@click.option(
    "--allow",
    "allows",
    multiple=True,
    metavar="PATH",
    help="JSON path in a request where a difference still matches, with a warning, e.g. "
    "'$.params.arguments.message' (repeatable; [*] matches any element).",
)
@_TRACE_OPTION
@fault_options
def serve(
    trace: Path,
    session: str | None,
    listen: str | None,
    mode: str,
    allows: tuple[str, ...],
    trace_path: Path | None,
    fault_specs: tuple[str, ...] = (),
    fault_files: tuple[str, ...] = (),
) -> None:
    """Act as the server recorded in TRACE, over stdio (default) or HTTP.

    With --fault it misbehaves on purpose (docs/faults.md): a mock server to
    test a client's resilience without the real one.
    """
    tolerate_surrogates()
    faults = parsed_faults("replay", fault_specs, fault_files, http=listen is not None)
    from mcpsniff.replay.run import CannotServe, serve_script
    from mcpsniff.replay.tap import Tap

    try:
        allow = [_member_path("--allow", p) for p in allows]
        # The address first: a malformed one fails before any warning about it,
        # and before the trace is read or a tap file created.
        address = _listen_address(listen) if listen else None
    except ValueError as exc:
        fail("replay", str(exc))
    try:
        script = load_script(trace, session, _warn)
        tap = Tap(
            transport="http" if listen else "stdio",
            path=trace_path,
            meta={"source": "mcpsniff replay serve", "replayed": str(trace), "redacted": False},
        )
    except ReplayError as exc:
        fail("replay", str(exc))
    try:
        different = serve_script(script, tap, mode, allow, address, _warn, faults)
    except CannotServe as exc:
        fail("replay", f"cannot serve on {listen}: {exc}")
    sys.exit(EXIT_DIFFERENT if different else EXIT_OK)


def _listen_address(listen: str) -> tuple[str, int]:
    from mcpsniff.replay.http_serve import parse_listen

    return parse_listen(listen)


@replay.command(context_settings={"ignore_unknown_options": True})
@click.argument("trace", type=click.Path(dir_okay=True, path_type=Path))
@_SESSION_OPTION
@click.option("--url", help="Drive the Streamable HTTP server at this URL.")
@click.option(
    "--ignore",
    "ignores",
    multiple=True,
    metavar="PATH",
    help="JSON path to leave out of the comparison, e.g. '$.result.content[0].text' "
    "(repeatable; [*] matches any element).",
)
@seconds_option("--timeout", 30.0, "Seconds to wait for each response.")
@_TRACE_OPTION
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def drive(
    trace: Path,
    session: str | None,
    url: str | None,
    ignores: tuple[str, ...],
    timeout: float,
    trace_path: Path | None,
    command: tuple[str, ...],
) -> None:
    """Re-send TRACE's client side to a live server and compare every response.

    mcpsniff replay drive TRACE --url URL, or mcpsniff replay drive TRACE -- COMMAND [ARGS]...

    Exit status: 0 when every response matches, 1 on any difference, 2 on error.
    """
    tolerate_surrogates()
    from mcpsniff.replay.run import run_drive

    if bool(url) == bool(command):
        fail("replay", "drive needs either --url URL or -- COMMAND [ARGS]... (exactly one)")
    if url and not url.startswith(("http://", "https://")):
        fail("replay", f"--url must be an http:// or https:// URL, not {url!r}")
    if url and (reason := _bad_url(url)) is not None:
        # Else every request "broke off" and the run looks like a server fault.
        fail("replay", f"--url {url!r} is not a usable URL: {reason}")
    try:
        paths = [_member_path("--ignore", p) for p in ignores]
    except ValueError as exc:
        fail("replay", str(exc))
    try:
        script = load_script(trace, session, _warn)
        code = asyncio.run(
            run_drive(script, list(command), url, paths, timeout, trace_path, click.echo, _warn)
        )
    except ReplayError as exc:
        fail("replay", str(exc))
    sys.exit(code)
