"""Copies of records whose traffic strings are terminal-safe, for the timeline to print.

``render.Timeline`` prints a message's method, target and id, a finding's
message and an event's data as they are; these copies pass each such string
through ``terminal_safe`` first (docs/architecture.md, invariant 6), so that ``show``
never lets the trace drive the terminal, whatever the timeline does.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.model import EventRecord, FindingRecord, MessageRecord


def _safe(value: Any) -> Any:
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, dict):
        return {_safe(k): _safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_safe(v) for v in value]
    return value


def safe_message(message: MessageRecord) -> MessageRecord:
    """``message`` with a safe method, target, id and note (itself when nothing needed it)."""
    changes = {}
    for name in ("method", "target", "id", "note"):
        value = getattr(message, name)
        if isinstance(value, str) and terminal_safe(value) != value:
            changes[name] = terminal_safe(value)
    return dataclasses.replace(message, **changes) if changes else message


def safe_finding(finding: FindingRecord) -> FindingRecord:
    """``finding`` with a safe rule id and message."""
    rule, message = terminal_safe(finding.rule), terminal_safe(finding.message)
    if rule == finding.rule and message == finding.message:
        return finding
    return dataclasses.replace(finding, rule=rule, message=message)


def safe_event(event: EventRecord) -> EventRecord:
    """``event`` with safe strings in its name and data."""
    return dataclasses.replace(event, event=terminal_safe(event.event), data=_safe(event.data))
