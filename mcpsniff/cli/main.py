"""The ``mcpsniff`` click group: every command, each from its own module in this package."""

from __future__ import annotations

import click

from mcpsniff import __version__
from mcpsniff.cli.archive import parquet, query
from mcpsniff.cli.check import check
from mcpsniff.cli.demo import demo
from mcpsniff.cli.export import export
from mcpsniff.cli.http import http
from mcpsniff.cli.install import install, uninstall
from mcpsniff.cli.ls import ls
from mcpsniff.cli.mcp import mcp
from mcpsniff.cli.pin import pin
from mcpsniff.cli.redact import redact
from mcpsniff.cli.replay import replay
from mcpsniff.cli.report import report
from mcpsniff.cli.rules import rules
from mcpsniff.cli.show import show
from mcpsniff.cli.stats import stats
from mcpsniff.cli.stdio import stdio
from mcpsniff.cli.tools import tools
from mcpsniff.cli.ui import ui


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mcpsniff")
def main() -> None:
    """Sniff, record and check Model Context Protocol (MCP) traffic."""


for _command in (
    check,
    rules,
    stdio,
    http,
    demo,
    export,
    install,
    ls,
    mcp,
    query,
    replay,
    redact,
    show,
    stats,
    uninstall,
    ui,
    report,
    pin,
    tools,
):
    main.add_command(_command)

# `export parquet` lives with `query` (cli/archive.py): both are the archive's.
export.add_command(parquet)
