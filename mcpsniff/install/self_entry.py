"""``mcpsniff install --self``: add ``mcpsniff mcp`` to a client's MCP servers.

The entry is ``"mcpsniff": {"command": PYTHON, "args": ["-m", "mcpsniff", "mcp"]}``
(the interpreter mcpsniff runs in, as wrapped servers get, so it starts
whatever PATH the client has). It goes into the file's top-level server
table (``mcpServers``, or ``servers`` in VS Code's ``mcp.json``), created
when the file has none, as one text insertion: comments, order and
indentation stay as they were. An existing ``mcpsniff`` entry is left alone.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mcpsniff.install import jsonc
from mcpsniff.install.clients import server_tables
from mcpsniff.install.plan import ConfigError, FilePlan, read_config

SELF_NAME = "mcpsniff"
#: The tables a client reads its servers from (not Claude Code's per-project ones).
TOP_TABLES = ("mcpServers", "servers", "mcp.servers")


def self_entry(python: str | None = None) -> dict[str, Any]:
    """The server entry of ``mcpsniff mcp`` over the state folder."""
    return {"command": python or sys.executable, "args": ["-m", "mcpsniff", "mcp"]}


def _indent_before(text: str, at: int) -> str:
    line_start = text.rfind("\n", 0, at) + 1
    prefix = text[line_start:at]
    return prefix if not prefix.strip() else ""


def plan_self(path: Path, table_key: str = "mcpServers", python: str | None = None) -> FilePlan:
    """Add the ``mcpsniff`` entry to ``path``; ``table_key`` names a table to create.

    Raises ``ConfigError`` for a file that is not a JSON object.
    """
    data, text, root = read_config(path)
    plan = FilePlan(path, data, text, new_text=text)
    if not isinstance(root.value, dict):
        raise ConfigError(f"{path}: not a JSON object")
    entry = jsonc.dumps(self_entry(python))
    tables = [(label, node) for label, node in server_tables(root) if label in TOP_TABLES]
    if tables:
        _label, table = tables[0]
        if SELF_NAME in table.members:
            return plan  # already there (ours, or the user's own): left alone
        if table.members:
            first_key = min(start for _node, start in table.members.values())
            indent = _indent_before(text, first_key)
            insertion = f'"{SELF_NAME}": {entry},' + (f"\n{indent}" if indent else " ")
            plan.new_text = jsonc.apply(text, [jsonc.Edit(first_key, first_key, insertion)])
        else:
            inside = table.start + 1
            plan.new_text = jsonc.apply(
                text, [jsonc.Edit(inside, table.end - 1, f' "{SELF_NAME}": {entry} ')]
            )
        return plan
    member = f'"{table_key}": {{"{SELF_NAME}": {entry}}}'
    if not text.strip():
        plan.new_text = "{\n  " + member + "\n}\n"
    elif root.members:
        first_key = min(start for _node, start in root.members.values())
        indent = _indent_before(text, first_key)
        insertion = member + "," + (f"\n{indent}" if indent else " ")
        plan.new_text = jsonc.apply(text, [jsonc.Edit(first_key, first_key, insertion)])
    else:
        plan.new_text = jsonc.apply(text, [jsonc.Edit(root.start + 1, root.end - 1, member)])
    return plan
