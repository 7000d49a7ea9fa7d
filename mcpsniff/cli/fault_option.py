"""The ``--fault`` and ``--faults`` options of the relays, and their one-line error with a caret."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from mcpsniff.cli.shared import EXIT_ERROR
from mcpsniff.core.escape import terminal_safe
from mcpsniff.faults.spec import HTTP_ONLY, STDIO_ONLY, Fault, FaultSpecError, load_faults

F = TypeVar("F", bound=Callable[..., Any])

FAULT_HELP = (
    "Inject a fault: 'ACTION [ARGS] [when FILTER] [prob P seed N] [times N] [after N]', "
    "for example 'delay 300ms when tool == \"echo\"' (repeatable; docs/faults.md)."
)
#: Why an HTTP relay refuses a stdio-only action.
STDIO_ONLY_WHY = {
    "kill": "an HTTP relay has no server process to end; try disconnect",
    "reorder": "each HTTP exchange carries its own message; try delay",
}
#: Longest specification shown again under its error with a caret.
CARET_LIMIT = 200


def fault_options(command: F) -> F:
    """Adds ``--fault SPEC`` (``fault_specs``) and ``--faults FILE`` (``fault_files``)."""
    command = click.option(
        "--faults",
        "fault_files",
        metavar="FILE",
        multiple=True,
        help="Read fault specifications from FILE, one a line (# starts a comment).",
    )(command)
    return click.option("--fault", "fault_specs", metavar="SPEC", multiple=True, help=FAULT_HELP)(
        command
    )


def parsed_faults(
    command: str, specs: tuple[str, ...], files: tuple[str, ...], *, http: bool
) -> list[Fault]:
    """The parsed faults, or exit 2 with ``mcpsniff CMD: --fault: message (at column N)``."""
    if not specs and not files:
        return []
    try:
        faults = load_faults(list(specs), list(files))
    except FaultSpecError as exc:
        click.echo(f"mcpsniff {command}: --fault: {terminal_safe(str(exc))}", err=True)
        if len(exc.source) <= CARET_LIMIT:
            for line in exc.caret().split("\n"):
                click.echo(f"  {line}", err=True)
        sys.exit(EXIT_ERROR)
    for fault in faults:
        if http and fault.action in STDIO_ONLY:
            click.echo(
                f"mcpsniff {command}: --fault: {fault.action} needs a stdio relay "
                f"({STDIO_ONLY_WHY[fault.action]}) ({terminal_safe(fault.text[:80])})",
                err=True,
            )
            sys.exit(EXIT_ERROR)
        if not http:
            if fault.action in HTTP_ONLY:
                click.echo(
                    f"mcpsniff {command}: --fault: {fault.action} needs an HTTP relay"
                    f" ({terminal_safe(fault.text[:80])})",
                    err=True,
                )
                sys.exit(EXIT_ERROR)
    return faults
