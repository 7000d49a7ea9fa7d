"""Each server's definitions with their fingerprint, size, tokens and guard findings.

What ``mcpsniff tools`` prints and what ``stats`` and the report show as the
context cost: per server (the last session that listed anything), its
definitions largest first, and the total.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpsniff.core.guard.fingerprint import LISTS, Definition, offer_fingerprint, texts
from mcpsniff.core.guard.hidden import scan
from mcpsniff.core.model import FindingRecord
from mcpsniff.guard.inventory import Inventory, InventoryError, SessionOffer, read_inventory
from mcpsniff.guard.tokens import (
    NO_EXACT_TOKENIZER,
    TOKENIZERS,
    Cost,
    available,
    definition_cost,
    total_cost,
)
from mcpsniff.trace.codec import TraceError


@dataclass
class DefinitionCost:
    """One definition of a server, what it costs and what the guard says of it."""

    definition: Definition
    cost: Cost
    #: One line each: hidden content found in its texts.
    notes: list[str] = field(default_factory=list)

    def as_data(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "kind": self.definition.kind,
            "name": self.definition.name,
            "fingerprint": self.definition.fingerprint,
            **self.cost.as_data(),
            "findings": list(self.notes),
        }


@dataclass
class ServerCost:
    """One server: its definitions largest first, their total, its findings."""

    identity: str
    sessions: int
    offer: str
    definitions: list[DefinitionCost]
    total: Cost
    findings: list[FindingRecord] = field(default_factory=list)

    def as_data(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "server": self.identity,
            "sessions": self.sessions,
            "offer": self.offer,
            "total": self.total.as_data(),
            "definitions": [d.as_data() for d in self.definitions],
            "findings": [
                {"rule": f.rule, "severity": f.severity, "message": f.message, "session": f.session}
                for f in self.findings
            ],
        }


def offer_cost(
    identity: str,
    offer: SessionOffer,
    sessions: int = 1,
    findings: Sequence[FindingRecord] = (),
    *,
    counting: bool | None = None,
) -> ServerCost:
    """What one session's offer costs, definitions largest first, with their hidden content."""
    counting = available() if counting is None else counting
    defs = offer.definitions()
    costs = []
    for definition in defs.values():
        notes = []
        for where, text in texts(definition):
            hits = scan(text)
            if hits:
                level = "warning" if any(h.strength == "strong" for h in hits) else "info"
                notes.append(f"{level}: {where} carries {hits[0].kind}: {hits[0].why}")
        costs.append(
            DefinitionCost(definition, definition_cost(definition, tokens=counting), notes)
        )
    costs.sort(key=lambda c: (-c.cost.bytes, c.definition.key))
    return ServerCost(
        identity,
        sessions,
        offer_fingerprint(defs.values()),
        costs,
        total_cost(c.cost for c in costs),
        [f for f in findings if _names_server(f, identity)],
    )


def session_costs(inventory: Inventory) -> dict[str, dict[str, Any]]:
    """Each listed session's own offer and its cost, as data, by session key (UI, report)."""
    counting = available()
    return {
        offer.session: {
            **offer_cost(offer.identity, offer, counting=counting).as_data(),
            **tokenizer_note(),
        }
        for offer in inventory.sessions
        if offer.listed
    }


def tokenizer_note() -> dict[str, Any]:
    """Which tokenizers counted, and for which models none exists."""
    return {
        "tokenizers": dict(TOKENIZERS) if available() else {},
        "not_estimated": NO_EXACT_TOKENIZER,
    }


def server_costs(inventory: Inventory, findings: Sequence[FindingRecord] = ()) -> list[ServerCost]:
    """Every server of ``inventory`` with what its last listed offer costs, costliest first.

    ``findings`` (trace-wide guard findings) are attached to the servers their
    data names (``server``, ``servers``). Tokens are counted only where the tokenizers are
    installed (``tokens.available``); bytes always.
    """
    counting = available()
    servers = [
        offer_cost(identity, offers[-1], len(offers), findings, counting=counting)
        for identity, offers in inventory.by_identity().items()
    ]
    servers.sort(key=lambda s: (-s.total.bytes, s.identity))
    return servers


def _names_server(finding: FindingRecord, identity: str) -> bool:
    servers = finding.data.get("servers")
    return finding.data.get("server") == identity or (type(servers) is list and identity in servers)


def trace_costs(path: Path, methods: Iterable[str]) -> list[ServerCost]:
    """The cost of each server's definitions in the trace at ``path``.

    ``methods`` are the methods the trace holds (from its stats): the trace is
    read a second time only when a list method was answered. Raises
    ``TraceError`` when it cannot be read.
    """
    if not any(method in LISTS for method in methods):
        return []
    try:
        return server_costs(read_inventory([path], warn=lambda _message: None))
    except InventoryError as exc:
        raise TraceError(str(exc)) from None
