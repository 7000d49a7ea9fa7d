"""The MCP clients ``install`` knows: where each keeps its configuration, and its shape.

Paths are those each client documents for Linux and macOS. Most files hold a
``mcpServers`` object (Claude Desktop, Cursor, Windsurf, Claude Code, which
also keeps one per project under ``projects``); VS Code's ``mcp.json`` holds
``servers``, and its ``settings.json`` may hold ``mcp.servers``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mcpsniff.install.jsonc import Node


@dataclass(frozen=True)
class Client:
    """One MCP client: its id, a title, and where its configuration files are."""

    name: str
    title: str
    locate: Callable[[Path, str, dict[str, str]], list[Path]]


def _config_home(home: Path, env: dict[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"


def _app_support(home: Path) -> Path:
    return home / "Library" / "Application Support"


def _claude_desktop(home: Path, platform: str, env: dict[str, str]) -> list[Path]:
    base = _app_support(home) if platform == "darwin" else _config_home(home, env)
    return [base / "Claude" / "claude_desktop_config.json"]


def _vscode(home: Path, platform: str, env: dict[str, str]) -> list[Path]:
    base = _app_support(home) if platform == "darwin" else _config_home(home, env)
    user = base / "Code" / "User"
    return [user / "mcp.json", user / "settings.json"]


CLIENTS: dict[str, Client] = {
    client.name: client
    for client in (
        Client("claude-desktop", "Claude Desktop", _claude_desktop),
        Client("claude-code", "Claude Code", lambda home, _p, _e: [home / ".claude.json"]),
        Client("cursor", "Cursor", lambda home, _p, _e: [home / ".cursor" / "mcp.json"]),
        Client("vscode", "VS Code", _vscode),
        Client(
            "windsurf",
            "Windsurf",
            lambda home, _p, _e: [home / ".codeium" / "windsurf" / "mcp_config.json"],
        ),
    )
}


def config_files(
    client: Client, home: Path | None = None, platform: str | None = None
) -> list[Path]:
    """The configuration files of ``client`` on this machine (existing or not)."""
    return client.locate(home or Path.home(), platform or sys.platform, dict(os.environ))


def server_tables(root: Node) -> Iterator[tuple[str, Node]]:
    """Every object of server entries in a configuration file, with a label for it."""
    if not isinstance(root.value, dict):
        return
    for key in ("mcpServers", "servers"):
        table = root.get(key)
        if table is not None and isinstance(table.value, dict):
            yield key, table
    mcp = root.get("mcp")
    if mcp is not None and isinstance(mcp.value, dict):
        table = mcp.get("servers")
        if table is not None and isinstance(table.value, dict):
            yield "mcp.servers", table
    projects = root.get("projects")
    if projects is not None and isinstance(projects.value, dict):
        for project, (node, _) in projects.members.items():
            table = node.get("mcpServers") if isinstance(node.value, dict) else None
            if table is not None and isinstance(table.value, dict):
                yield f"projects[{project}].mcpServers", table
