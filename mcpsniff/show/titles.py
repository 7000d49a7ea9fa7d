"""Session titles where ``show`` cannot list them all first: followed and filtered traces.

``show`` on a whole trace lists every session's title first
(``listing.summary.session_titles``). A followed trace has not ended, so its
sessions are titled as they go (``LiveTitles``): a session's line is printed
when the server names itself (the ``initialize`` or ``server/discover``
result), or when the session ends without having done so. A filtered view
shows a selection, so a session's title stands above its first line that
passed the filter (``FirstLineTitles``), and a session with none has none.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from mcpsniff.core.model import EventRecord, FrameRecord, Record
from mcpsniff.filter import MessageView
from mcpsniff.listing.identity import Origin, SessionIdentity

#: Sessions titled at most, tracked or said (a trace of more goes untitled past it).
SESSION_LIMIT = 10_000
#: A frame longer than this is not parsed for the peers' names.
BODY_LIMIT = 1 << 20
_ENDINGS = frozenset({"session-end", "exit", "spawn-failed"})


class LiveTitles:
    """Watches records; says each session's title once (see the module)."""

    def __init__(self, header: dict[str, Any] | None = None) -> None:
        self.origin = Origin.of(header or {})
        self._header = header is not None
        self.identities: dict[str, SessionIdentity] = {}
        self.announced: set[str] = set()

    def use_header(self, header: dict[str, Any] | None) -> None:
        """The trace's header, once read: its ``meta`` names the sessions (``--name``)."""
        if header is not None and not self._header:
            self.origin = Origin.of(header)
            self._header = True

    def feed(self, record: Record) -> tuple[str, str] | None:
        """``(key, title)`` when ``record`` completes a session's title, else None."""
        if not isinstance(record, FrameRecord | EventRecord):
            return None
        key = record.session
        if key in self.announced:
            return None
        identity = self.identities.get(key)
        if identity is None:
            if len(self.identities) + len(self.announced) >= SESSION_LIMIT:
                return None
            identity = self.identities[key] = SessionIdentity(key, self.origin)
        identity.saw_time(record.t)
        if isinstance(record, FrameRecord):
            raw = record.raw
            if len(raw) <= BODY_LIMIT and (b"serverInfo" in raw or b"clientInfo" in raw):
                with contextlib.suppress(ValueError, RecursionError):
                    identity.saw_body(record.direction, json.loads(raw))
            if identity.server is None:
                return None
        else:
            identity.saw_event(record.event, record.data if isinstance(record.data, dict) else {})
            if record.event not in _ENDINGS:
                return None
        self.announced.add(key)
        del self.identities[key]
        return key, identity.title(live=True, counts=False)


class FirstLineTitles:
    """A filtered ``show``'s titles: each session's above its first line that passed."""

    def __init__(self, titles: dict[str, str]) -> None:
        self.titles = titles
        self.shown: set[str] = set()

    def before(self, views: list[MessageView]) -> tuple[str, str] | None:
        """``(key, title)`` of the session of ``views`` if its lines start here, else None."""
        if not views:
            return None
        key = views[0].session
        if key in self.shown or key not in self.titles:
            return None
        self.shown.add(key)
        return key, self.titles[key]
