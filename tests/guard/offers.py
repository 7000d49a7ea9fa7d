"""Building inventories by hand for the guard's unit tests."""

from __future__ import annotations

from typing import Any

from mcpsniff.core.guard.fingerprint import definitions
from mcpsniff.guard.inventory import Inventory, SessionOffer


def tool(name: str, description: str = "Does a thing.") -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": {"type": "object"}}


def offer(
    identity: str,
    *tools: dict[str, Any],
    session: str = "s1",
    trace: str = "t.jsonl",
    started: float = 1000.0,
    seq: int = 5,
) -> SessionOffer:
    made = SessionOffer(trace, session, identity, started)
    defs = {d.key: d for d in definitions("tools/list", {"tools": list(tools)})}
    made.offers["tool"] = made.first_offers["tool"] = defs
    made.list_seqs["tool"] = seq
    return made


def inventory(*offers: SessionOffer) -> Inventory:
    return Inventory(list(offers))
