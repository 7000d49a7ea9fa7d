"""Options many commands declare alike: ``--format`` and ``-o/--output``, spelled once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def format_option(choices: Sequence[str], help: str | None = None) -> Callable[[F], F]:
    """``--format`` (parameter ``fmt``), one of ``choices``; the first is the default."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(list(choices)),
        default=choices[0],
        show_default=True,
        help=help,
    )


def output_option(
    help: str, *, required: bool = False, folder: bool = False, default: Path | None = None
) -> Callable[[F], F]:
    """``-o/--output`` (parameter ``output``): the file to write, or with ``folder`` a folder."""
    kind = (
        click.Path(file_okay=False, path_type=Path)
        if folder
        else click.Path(dir_okay=False, path_type=Path)
    )
    extra: dict[str, Any] = {} if default is None else {"default": default, "show_default": True}
    return click.option("-o", "--output", required=required, type=kind, help=help, **extra)
