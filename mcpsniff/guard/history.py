"""The state folder's memory of what each server offered, across sessions and traces.

One file per server identity under ``STATE/guard/`` (``trace/paths.py``'s
state folder), named by a digest of the identity: each holds the server's
last ``MAX_OFFERS`` distinct offers with when and where they were seen. The
relays add the offers of a finished trace (``remember``); ``check`` compares
a session with the newest offer seen *before* it in another trace, so a check
of an old trace gives the same verdict later.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from mcpsniff.core.guard.diff import Listed
from mcpsniff.core.guard.fingerprint import offer_fingerprint
from mcpsniff.guard.inventory import Inventory, SessionOffer
from mcpsniff.guard.stored import (
    StoredError,
    listed_from_stored,
    read_json,
    stored_definitions,
    write_json,
)
from mcpsniff.trace.paths import make_private_dirs, state_dir

#: The distinct offers kept per server.
MAX_OFFERS = 20


def history_dir() -> Path:
    """Where the history files are (not created)."""
    return state_dir() / "guard"


def history_file(identity: str, folder: Path | None = None) -> Path:
    """The history file of one server identity."""
    digest = hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return (folder or history_dir()) / f"{digest}.json"


def remember(inventory: Inventory, folder: Path | None = None) -> int:
    """Add every listed session's offer to its server's history; how many were new.

    ``StoredError`` when a history file cannot be written.
    """
    added = 0
    for identity, offers in inventory.by_identity().items():
        path = history_file(identity, folder)
        entries = _entries(path)
        for offer in offers:
            defs = offer.definitions()
            fingerprint = offer_fingerprint(defs.values())
            seen = {(e.get("trace"), e.get("session")) for e in entries}
            if (offer.trace, offer.session) in seen:
                continue
            if entries and entries[-1].get("offer") == fingerprint:
                continue  # the same offer again: the newest entry says it
            entries.append(
                {
                    "t": offer.started,
                    "trace": offer.trace,
                    "session": offer.session,
                    "offer": fingerprint,
                    "definitions": stored_definitions(defs),
                }
            )
            added += 1
        entries.sort(key=lambda e: e.get("t") or 0.0)
        if added:
            make_private_dirs(path.parent)
            write_json(path, {"identity": identity, "offers": entries[-MAX_OFFERS:]}, 0o600)
    return added


def previous_offer(
    offer: SessionOffer, folder: Path | None = None
) -> tuple[dict[str, Any], dict[str, Listed]] | None:
    """The newest offer of ``offer``'s server seen before it in another trace, and its entry."""
    path = history_file(offer.identity, folder)
    if not path.exists():
        return None
    before = [
        e
        for e in _entries(path)
        if e.get("trace") != offer.trace and (e.get("t") or 0.0) < (offer.started or 0.0)
    ]
    if not before:
        return None
    entry = before[-1]
    return entry, listed_from_stored(str(path), entry.get("definitions"))


def _entries(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    raw = read_json(path)
    offers = raw.get("offers") if type(raw) is dict else None
    if type(offers) is not list:
        raise StoredError(f"{path}: not an mcpsniff guard history file")
    return [e for e in offers if type(e) is dict]
