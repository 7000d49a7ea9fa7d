"""``mcpsniff install`` and ``uninstall``: the options; the work is ``mcpsniff/install/run.py``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from mcpsniff.cli.shared import fail
from mcpsniff.install.clients import CLIENTS
from mcpsniff.install.run import (
    InstallError,
    Selection,
    run_install,
    run_install_self,
    run_uninstall,
)
from mcpsniff.terminal.safe_output import tolerate_surrogates

F = TypeVar("F", bound=Callable[..., Any])


def _target_options(verb: str, all_help: str) -> Callable[[F], F]:
    """The options install and uninstall share: which files, which servers, dry run.

    Their parameters are ``install.run.Selection``'s fields, which the command builds.
    """

    def decorate(command: F) -> F:
        for option in reversed(
            (
                click.option(
                    "--client", "client_names", multiple=True, type=click.Choice(sorted(CLIENTS))
                ),
                click.option(
                    "--config",
                    "config_paths",
                    multiple=True,
                    type=click.Path(dir_okay=False, path_type=Path),
                    help="Any JSON/JSONC file with the usual mcpServers (or servers) object.",
                ),
                click.option(
                    "--server", "servers", multiple=True, help=f"A server to {verb} (repeatable)."
                ),
                click.option("--all", "all_servers", is_flag=True, help=all_help),
                click.option(
                    "--dry-run",
                    is_flag=True,
                    help="Print a diff of what would change; change nothing.",
                ),
            )
        ):
            command = option(command)
        return command

    return decorate


@click.command()
@_target_options("wrap", "Wrap every stdio server.")
@click.option(
    "--self",
    "add_self",
    is_flag=True,
    help="Add `mcpsniff mcp` (the recorded traces, for the agent) as a server instead.",
)
def install(add_self: bool, **options: Any) -> None:
    """Make a client run its stdio MCP servers under mcpsniff, recording each launch.

    Each chosen stdio server entry becomes `mcpsniff stdio --name NAME --trace
    <state folder>/NAME-{time}-{pid}.jsonl -- COMMAND ARGS...`. HTTP entries are
    listed with the `mcpsniff http` command to run, and not changed. Without
    --client or --config, every client whose configuration exists is done.
    A backup is written before every change; `mcpsniff uninstall` undoes it.
    Running it again changes nothing. With --self, the client gets an
    `mcpsniff` server instead: `mcpsniff mcp`, so its agent can read the traces.
    """
    tolerate_surrogates()
    selection = Selection(**options)
    try:
        if add_self:
            if selection.servers or selection.all_servers:
                fail("install", "--self adds mcpsniff itself; it takes no --server or --all")
            run_install_self(selection, click.echo)
            return
        run_install(selection, click.echo, _note)
    except InstallError as exc:
        fail(exc.command, exc.reason)


@click.command()
@_target_options("unwrap", "Every wrapped server (the default).")
def uninstall(**options: Any) -> None:
    """Undo `mcpsniff install`: servers run directly again.

    When a file is still exactly what install wrote, its original bytes come
    back; otherwise only the mcpsniff wrapping is removed from each entry.
    """
    tolerate_surrogates()
    try:
        run_uninstall(Selection(**options), click.echo)
    except InstallError as exc:
        fail(exc.command, exc.reason)


def _note(text: str) -> None:
    click.echo(text, err=True)
