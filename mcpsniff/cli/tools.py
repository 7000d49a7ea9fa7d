"""``mcpsniff tools``: each server's tools with fingerprint, size, tokens and guard findings."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import orjson

from mcpsniff.cli.shared import EXIT_FINDINGS, EXIT_OK, fail, warner
from mcpsniff.guard.context_cost import server_costs
from mcpsniff.guard.findings import GuardPolicy, guard_findings
from mcpsniff.guard.inventory import InventoryError, read_inventory
from mcpsniff.guard.stored import StoredError
from mcpsniff.guard.tools_report import tools_data, tools_lines
from mcpsniff.terminal.safe_output import terminal_json_line, tolerate_surrogates
from mcpsniff.trace.paths import traces_dir


@click.command()
@click.argument("traces", nargs=-1, type=click.Path(dir_okay=True, path_type=Path))
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option("--all", "every_kind", is_flag=True, help="List prompts and resources too.")
@click.option(
    "--no-history",
    is_flag=True,
    help="Do not compare with the state folder's history of each server.",
)
def tools(traces: tuple[Path, ...], fmt: str, every_kind: bool, no_history: bool) -> None:
    """Each server's tools in TRACE... (default: every trace in the state folder).

    Per tool: its definition fingerprint, its size in bytes and in tokens
    (o200k_base and cl100k_base, by the bpe-openai tokenizer of
    mcpsniff[guard]), and what the guard finds: hidden content, drift since
    the server's previous session, two servers with one tool name.
    Exit status: 0, or 1 when a guard finding is a warning or worse; 2 when a
    trace cannot be read.
    """
    tolerate_surrogates()
    paths = list(traces) or sorted(traces_dir().glob("*.jsonl"))
    files = []
    for path in paths:
        files.extend(sorted(path.glob("*.jsonl")) if path.is_dir() else [path])
    try:
        inventory = read_inventory(files, warn=warner("tools"))
        findings = guard_findings(inventory, GuardPolicy(history=not no_history))
    except (InventoryError, StoredError) as exc:
        fail("tools", str(exc))
    servers = server_costs(inventory, findings)
    if fmt == "json":
        click.echo(terminal_json_line(tools_data(servers), option=orjson.OPT_INDENT_2))
    else:
        for line in tools_lines(servers, every_kind=every_kind):
            click.echo(line)
    flagged = findings or any(
        note.startswith("warning") for s in servers for d in s.definitions for note in d.notes
    )
    sys.exit(EXIT_FINDINGS if flagged else EXIT_OK)
