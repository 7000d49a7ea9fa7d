"""The ``--filter`` option as every command spells it, and its one-line error with a caret."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from mcpsniff.cli.shared import EXIT_ERROR

if TYPE_CHECKING:
    # The filter language is imported when a command is given --filter.
    from mcpsniff.filter import Filter

F = TypeVar("F", bound=Callable[..., Any])


def filter_option(command: F) -> F:
    """Adds ``--filter EXPR`` (parameter ``filter_expr``) to a click command."""
    return click.option(
        "--filter",
        "filter_expr",
        metavar="EXPR",
        help="Only messages matching EXPR (see the filter syntax below).",
    )(command)


def parse_filter(command: str, expression: str | None) -> Filter | None:
    """The compiled filter, or exit 2 with ``mcpsniff CMD: --filter: message`` and a caret."""
    if expression is None:
        return None
    from mcpsniff.filter import FilterError, compile_filter

    try:
        return compile_filter(expression)
    except FilterError as exc:
        click.echo(f"mcpsniff {command}: --filter: {exc}", err=True)
        for line in exc.caret().split("\n"):
            click.echo(f"  {line}", err=True)
        sys.exit(EXIT_ERROR)


class FilterHelpCommand(click.Command):
    """A command whose ``--help`` ends with the filter syntax (``mcpsniff.filter.HELP``).

    The syntax is read from the filter package when the epilog is asked for, so
    a command that runs without ``--filter`` never imports the filter language.
    """

    @property  # type: ignore[override]
    def epilog(self) -> str:
        from mcpsniff.filter import HELP

        return HELP

    @epilog.setter
    def epilog(self, value: str | None) -> None:
        if value is not None:
            raise TypeError("the epilog of a FilterHelpCommand is the filter syntax")
