"""What every command shares: exit statuses, colour on a terminal, one-line errors."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import NoReturn

import click

from mcpsniff.core.escape import terminal_safe

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def colour(stream: object) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def fail(command: str, reason: str) -> NoReturn:
    """``mcpsniff COMMAND: reason`` on stderr (traffic text in it escaped), then exit 2."""
    click.echo(f"mcpsniff {command}: {terminal_safe(reason)}", err=True)
    sys.exit(EXIT_ERROR)


def warner(command: str) -> Callable[[str], None]:
    """A one-line warning on stderr for ``command`` (traffic text in it escaped)."""

    def warn(text: str) -> None:
        click.echo(f"mcpsniff {command}: warning: {terminal_safe(text)}", err=True)

    return warn
