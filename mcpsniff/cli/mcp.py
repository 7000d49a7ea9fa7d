"""``mcpsniff mcp``: the recorded traces as an MCP server (stdio, or ``--http`` on loopback)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import click

from mcpsniff.cli.shared import fail
from mcpsniff.net.listen_address import parse_listen_address
from mcpsniff.trace.paths import traces_dir


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--http", "use_http", is_flag=True, help="Serve Streamable HTTP instead of stdio.")
@click.option(
    "--listen",
    default="127.0.0.1:6290",
    show_default=True,
    help="HOST:PORT for --http (a loopback address; port 0 picks a free one).",
)
def mcp(paths: tuple[Path, ...], use_http: bool, listen: str) -> None:
    """Serve the recorded traces to an agent over MCP: read-only, confined to PATHS.

    PATHS are trace files or folders of them (default: the state folder). The
    tools list sessions, summarize them, search messages with the filter
    language, get one message, list findings with explanations, give stats,
    explain a rule, compare two sessions and follow a live one. Nothing outside
    PATHS is read; recorded traffic is quoted as untrusted data.
    """
    from mcpsniff.agent.access import TraceAccess
    from mcpsniff.agent.server import TraceServer

    roots = list(paths) or [traces_dir()]
    for root in roots:
        if not root.exists():
            fail("mcp", f"{root}: no such file or folder")
    server = TraceServer(TraceAccess(roots))
    if not use_http:
        from mcpsniff.agent.stdio import serve_stdio

        # The client went away (a closed pipe) or was stopped: nothing left to answer.
        with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
            serve_stdio(server)
        return
    try:
        host, port = parse_listen_address(listen, "--listen")
    except ValueError as exc:
        fail("mcp", str(exc))
    from mcpsniff.net.listen_address import is_loopback

    if not is_loopback(host):
        fail("mcp", f"--listen {host}: mcpsniff mcp listens on loopback addresses only")
    from mcpsniff.agent.http import serve_http

    try:
        asyncio.run(serve_http(server, host, port))
    except OSError as exc:
        fail("mcp", f"cannot listen on {listen}: {exc.strerror or exc}")
    except KeyboardInterrupt:
        pass
