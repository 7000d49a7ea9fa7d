"""Dispatch: the rule registry's tables, and the calls that run a key's rules.

The session reports nothing itself: what it found goes to the rules
registered for it (``rules/registry.py``), by message kind and method, by
pairing outcome, by frame shape, by transport event. ``registry.handlers``
builds a key's tuple of functions once; the hot path reads the tables
directly (one dict access per message) and asks ``handlers`` only for a key
it has not seen.

Importing the registry imports ``mcpsniff.core.rules`` first, whose
``__init__`` imports every rule module in the order their checks run: a
session always runs the full rule set, and no module here names a rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.rules import registry
from mcpsniff.core.rules.registry import EVENT, FRAME, PAIRING, dispatch_table, handlers

if TYPE_CHECKING:
    from mcpsniff.core.model import EventRecord, FrameRecord
    from mcpsniff.core.session.base import SessionBase
    from mcpsniff.core.state import Msg

#: The registry's per-key handler tables, read directly on the hot path.
MESSAGE_HANDLERS = dispatch_table(registry.MESSAGE)
REQUEST_HANDLERS = dispatch_table(registry.REQUEST)
NOTIFICATION_HANDLERS = dispatch_table(registry.NOTIFICATION)
RESPONSE_HANDLERS = dispatch_table(registry.RESPONSE)
REPLY_HANDLERS = dispatch_table(registry.REPLY)
RESULT_HANDLERS = dispatch_table(registry.RESULT)
#: The same without the rules that are silent in a legacy session (registry.py:
#: ``modern``), read for a session of the handshake era before 2026-07-28
#: (``SessionState.legacy``, settled where era or version is set).
LEGACY_REQUEST_HANDLERS = dispatch_table(registry.REQUEST, legacy=True)
LEGACY_NOTIFICATION_HANDLERS = dispatch_table(registry.NOTIFICATION, legacy=True)
LEGACY_RESPONSE_HANDLERS = dispatch_table(registry.RESPONSE, legacy=True)
LEGACY_REPLY_HANDLERS = dispatch_table(registry.REPLY, legacy=True)
LEGACY_RESULT_HANDLERS = dispatch_table(registry.RESULT, legacy=True)
FRAME_HANDLERS = dispatch_table(FRAME)
PAIRING_HANDLERS = dispatch_table(PAIRING)
EVENT_HANDLERS = dispatch_table(EVENT)


def frame_rules(session: SessionBase, shape: str, frame: FrameRecord, *details: Any) -> bool:
    """Run the FRAME rules for ``shape`` until one claims the frame; whether one did."""
    found = FRAME_HANDLERS.get(shape)
    if found is None:
        found = handlers(FRAME, shape)
    return any(handler(session, frame, *details) for handler in found)


def pairing_rules(session: SessionBase, outcome: str, msg: Msg, *details: Any) -> None:
    """Run the PAIRING rules for what correlation found (``registry.OUTCOMES``)."""
    found = PAIRING_HANDLERS.get(outcome)
    if found is None:
        found = handlers(PAIRING, outcome)
    for handler in found:
        handler(session, msg, *details)


def event_rules(session: SessionBase, record: EventRecord) -> None:
    """Run the EVENT rules for a transport event, by its name."""
    name = record.event
    found = EVENT_HANDLERS.get(name)
    if found is None:
        found = handlers(EVENT, name)
    for handler in found:
        handler(session, record)
