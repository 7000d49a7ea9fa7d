"""What a relay's analysis process keeps of a capture for the guard: each server's last offer.

When a capture ends, every session's last complete lists (which the core rule
GUARD-DRIFT-SESSION keeps in the session's state) go into the state folder's
history (``history.remember``), keyed by the server's identity, so that
``check --history`` and ``tools`` can compare the next session with it. It
runs in the analysis process once, after the capture: forwarding never waits
for it, and nothing is read back from the trace.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpsniff.core.guard.fingerprint import LISTS, Definition, fingerprint_of
from mcpsniff.guard.history import remember
from mcpsniff.guard.inventory import Inventory, SessionOffer
from mcpsniff.guard.stored import StoredError


def recorded_inventory(analyzer: Any, label: str, trace: str) -> Inventory:
    """The offers the analyzer's sessions kept, as an inventory."""
    inventory = Inventory()
    for key, session in list(analyzer.sessions.items()):
        kept = session.state.rule_state.get("guard_offers")
        if not kept:
            continue
        offer = SessionOffer(trace, key, label)
        server = session.state.rule_state.get("guard_server")
        if server:
            offer.server_name = server
            offer.identity = f"{label} [{server}]"
        for method, (listed, seq, t) in kept.items():
            kind = LISTS[method][0]
            defs = {}
            for name, item in listed.items():
                if item.body is None:
                    continue
                fingerprint, canonical = fingerprint_of(dict(item.body))
                defs[name] = Definition(
                    item.kind, item.name, fingerprint, canonical, dict(item.body)
                )
            offer.offers[kind] = offer.first_offers[kind] = defs
            offer.list_seqs[kind] = seq
            offer.started = t if offer.started is None else min(offer.started, t)
        inventory.sessions.append(offer)
    return inventory


def remember_capture(
    analyzer: Any,
    label: str,
    trace: Path | str,
    warn: Callable[[str], None],
    folder: Path | None = None,
) -> int:
    """Add the capture's offers to the history; a warning (never an exception) if it fails."""
    try:
        return remember(recorded_inventory(analyzer, label, str(trace)), folder)
    except (StoredError, OSError, ValueError, TypeError) as exc:
        warn(f"could not keep the servers' definitions in the guard history: {exc}")
        return 0
