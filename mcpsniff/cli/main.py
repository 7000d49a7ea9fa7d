"""The ``mcpsniff`` click group: every command, each from its own module in this package.

A command's module is imported when that command runs (or ``mcpsniff --help``
lists it), not at start-up: together they import most of mcpsniff, which
``mcpsniff check TRACE`` would otherwise pay for before its first line
(docs/performance.md, "Start-up").
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping

import click

from mcpsniff import __version__

#: Each command's name and where it is defined ("module:attribute"), in this package.
COMMANDS: dict[str, str] = {
    "check": "check:check",
    "rules": "rules:rules",
    "stdio": "stdio:stdio",
    "http": "http:http",
    "demo": "demo:demo",
    "diff": "diff:diff",
    "export": "export:export",
    "install": "install:install",
    "ls": "ls:ls",
    "mcp": "mcp:mcp",
    "query": "archive:query",
    "replay": "replay:replay",
    "redact": "redact:redact",
    "show": "show:show",
    "stats": "stats:stats",
    "uninstall": "install:uninstall",
    "ui": "ui:ui",
    "report": "report:report",
    "pin": "pin:pin",
    "tools": "tools:tools",
}


class LazyCommands(MutableMapping[str, click.Command]):
    """A click group's command table whose commands are imported on first use.

    Its keys are every name from the start, so listing the commands, a typo's
    "did you mean" and the group's usage line import nothing; looking a name
    up imports its module once.
    """

    def __init__(self, where: dict[str, str]) -> None:
        self._where = dict(where)
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        command = self._loaded.get(name)
        if command is None:
            module, _, attribute = self._where[name].partition(":")
            command = getattr(importlib.import_module(f"mcpsniff.cli.{module}"), attribute)
            if not isinstance(command, click.Command) or command.name != name:
                raise RuntimeError(f"mcpsniff.cli.{module}:{attribute} is not command {name!r}")
            if name == "export":
                _add_parquet(command)
            self._loaded[name] = command
        return command

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._where.pop(name, None)
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._where.pop(name, None)
        self._loaded.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._where or name in self._loaded

    def __iter__(self) -> Iterator[str]:
        yield from self._where
        yield from (name for name in self._loaded if name not in self._where)

    def __len__(self) -> int:
        return len(self._where) + sum(1 for name in self._loaded if name not in self._where)


def _add_parquet(export: click.Command) -> None:
    # `export parquet` lives with `query` (cli/archive.py): both are the archive's.
    from mcpsniff.cli.archive import parquet

    if isinstance(export, click.Group):
        export.add_command(parquet)


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]},
    commands=LazyCommands(COMMANDS),
)
@click.version_option(__version__, prog_name="mcpsniff")
def main() -> None:
    """Sniff, record and check Model Context Protocol (MCP) traffic."""
