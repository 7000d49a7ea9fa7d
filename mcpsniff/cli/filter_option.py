"""The ``--filter`` option as every command spells it, and its one-line error with a caret."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from mcpsniff.cli.shared import EXIT_ERROR
from mcpsniff.filter import Filter, FilterError, compile_filter

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
    try:
        return compile_filter(expression)
    except FilterError as exc:
        click.echo(f"mcpsniff {command}: --filter: {exc}", err=True)
        for line in exc.caret().split("\n"):
            click.echo(f"  {line}", err=True)
        sys.exit(EXIT_ERROR)
