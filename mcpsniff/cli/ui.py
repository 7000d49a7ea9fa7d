"""``mcpsniff ui``: a live web UI over traces."""

from __future__ import annotations

import asyncio
import webbrowser
from pathlib import Path

import click

from mcpsniff.cli.shared import fail
from mcpsniff.net.listen_address import parse_listen_address, wildcard_warning
from mcpsniff.trace.paths import traces_dir


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port); port 0 picks a free port. One line when malformed."""
    try:
        return parse_listen_address(text, "--listen")
    except ValueError as exc:
        fail("ui", str(exc))


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--listen",
    default="127.0.0.1:6288",
    show_default=True,
    help="Address to serve the page on (port 0 picks a free one).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a web browser.")
def ui(paths: tuple[Path, ...], listen: str, open_browser: bool) -> None:
    """Serve a live web UI over traces: sessions, sequence diagram, messages, findings.

    PATHS are trace files or folders of traces (default: the state folder, where
    relays record). Sessions recorded while the page is open appear as they happen.
    """
    from mcpsniff.replay.trace_diff import compare_sessions
    from mcpsniff.ui.server import serve

    host, port = parse_listen(listen)
    roots = list(paths) or [traces_dir()]
    for root in roots:
        if not root.exists() and root != traces_dir():
            fail("ui", f"{root}: no such file or folder")
    warning = wildcard_warning(
        host, "and has the URL below (its ?token=) can read every recorded trace the UI serves"
    )
    if warning:
        click.echo(f"mcpsniff ui: {warning}", err=True)

    def announce(line: str) -> None:
        click.echo(line, err=True)

    def ready(url: str) -> None:
        if open_browser:
            webbrowser.open(url)

    try:
        asyncio.run(serve(roots, host, port, announce, ready, comparer=compare_sessions))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        fail("ui", f"cannot serve on {listen}: {exc.strerror or exc}")
