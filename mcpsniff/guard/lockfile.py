"""``mcpsniff.lock``: the reviewed definitions of each server, one entry a server.

::

    {
      "format": "mcpsniff-lock",
      "servers": {
        "stdio:everything [mcp-servers/everything]": {
          "definitions": {"tool:echo": {"definition": {...}, "fingerprint": "sha256:..."}},
          "offer": "sha256:..."
        }
      },
      "version": 1
    }

Keys sorted, two-space indents, non-ASCII escaped: a re-pin of an unchanged
server changes no byte, and a changed description shows as a readable diff in
review. ``check --pins`` compares every session with its server's entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpsniff.core.guard.diff import Listed
from mcpsniff.core.guard.fingerprint import offer_fingerprint
from mcpsniff.guard.inventory import Inventory
from mcpsniff.guard.stored import (
    StoredError,
    listed_from_stored,
    read_json,
    stored_definitions,
    write_json,
)

FORMAT = "mcpsniff-lock"
VERSION = 1


@dataclass(frozen=True)
class Lock:
    """A read lock file: each server's pinned definitions by ``kind:name``."""

    path: Path
    servers: dict[str, dict[str, Listed]]


def lock_data(inventory: Inventory) -> dict[str, Any]:
    """The lock file's content for the last session of each server that listed anything."""
    servers: dict[str, Any] = {}
    for identity, offers in inventory.by_identity().items():
        defs = offers[-1].definitions()
        servers[identity] = {
            "offer": offer_fingerprint(defs.values()),
            "definitions": stored_definitions(defs),
        }
    return {"format": FORMAT, "version": VERSION, "servers": servers}


def write_lock(path: Path, data: Mapping[str, Any]) -> None:
    """Write the lock file (atomically); ``StoredError`` with a one-line reason."""
    write_json(path, data)


def read_lock(path: Path) -> Lock:
    """Read and validate a lock file; ``StoredError`` with a one-line reason."""
    raw = read_json(path)
    if type(raw) is not dict or raw.get("format") != FORMAT:
        raise StoredError(f'{path}: not an mcpsniff lock file (no "format": "{FORMAT}")')
    if raw.get("version") != VERSION:
        raise StoredError(f"{path}: lock file version {raw.get('version')!r}, expected {VERSION}")
    servers = raw.get("servers")
    if type(servers) is not dict:
        raise StoredError(f"{path}: 'servers' is not an object")
    pinned: dict[str, dict[str, Listed]] = {}
    for identity, entry in servers.items():
        if type(entry) is not dict:
            raise StoredError(f"{path}: server {identity[:80]!r} is not an object")
        pinned[identity] = listed_from_stored(
            f"{path}: server {identity[:80]!r}", entry.get("definitions")
        )
    return Lock(path, pinned)
