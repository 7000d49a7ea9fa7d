"""What a trace says it lacks: its ``capture-gap`` events, added up for a reader.

A capture gap marks traffic that was forwarded but never analyzed (a full
backlog, a body over the capture limit, an analysis process that died and
whose trace the relay completed: ``mcpsniff.trace.salvage``). A verdict on
such a trace covers less than the session: ``mcpsniff check`` says so
(``GapTally.warning``) rather than let a clean report claim more than was
checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.model import EventRecord
from mcpsniff.core.state import channel_gap

#: An HTTP relay's channel gaps whose bytes are also told as gaps of their
#: exchanges (``core.state.channel_gap``): counted once, there.
_TOLD = ("bodies", "mixed")


@dataclass(slots=True)
class GapTally:
    """The capture gaps of a trace, counted as its records go by (``note``)."""

    count: int = 0
    lost_bytes: int = 0
    lost_exchanges: int = 0
    first_seq: int | None = None
    #: The first gap's reason, when it gives one.
    reason: str | None = None
    #: Verdicts the analysis did not give because a gap may hide what they
    #: depend on, per rule id (``CaptureGaps.excused`` of every session).
    unjudged: dict[str, int] = field(default_factory=dict)
    #: Sessions whose state the analyzer dropped at its cap (``session-state-dropped``).
    dropped_sessions: int = 0
    #: Sessions the trace never ended (the analyzer made up their session-end).
    unended: list[str] = field(default_factory=list)

    def note(self, event: EventRecord) -> None:
        """Count one capture-gap event (fields of the wrong type count as nothing)."""
        self.count += 1
        data = event.data
        lost = data.get("lost_bytes")
        if type(lost) is int and lost > 0 and channel_gap(event.session, data) not in _TOLD:
            self.lost_bytes += lost
        exchanges = data.get("lost_exchanges")
        if type(exchanges) is int and exchanges > 0:
            self.lost_exchanges += exchanges
        if self.first_seq is None:
            self.first_seq = event.seq
            reason = data.get("reason")
            if isinstance(reason, str):
                self.reason = reason[:200]

    def note_dropped(self) -> None:
        """Count one session whose state the analyzer dropped (core/analyzer.py MAX_SESSIONS)."""
        self.dropped_sessions += 1

    def add_unjudged(self, sessions: Iterable[Any], dropped: dict[str, int] | None = None) -> None:
        """Add up the verdicts the gaps of ``sessions`` (analyzer Sessions) excused,
        and ``dropped`` (those of sessions since dropped: ``Analyzer.dropped_excused``)."""
        for rule, count in (dropped or {}).items():
            self.unjudged[rule] = self.unjudged.get(rule, 0) + count
        for session in sessions:
            gaps = session.state.gaps
            if gaps is None:
                continue
            for rule, count in gaps.excused.items():
                self.unjudged[rule] = self.unjudged.get(rule, 0) + count

    def note_unended(self, event: EventRecord) -> None:
        """Count a session-end the analyzer made up: the trace did not end that session."""
        if event.data.get("synthetic") is True and len(self.unended) < 1000:
            self.unended.append(event.session)

    def still_recording(self) -> str | None:
        """One line when some session has no session-end (the trace may still grow), or None."""
        if not self.unended:
            return None
        shown = ", ".join(terminal_safe(key[:80]) for key in self.unended[:3])
        more = f" and {len(self.unended) - 3} more" if len(self.unended) > 3 else ""
        return (
            f"session {shown}{more} has no session-end: the trace may still be being recorded "
            "(or its recorder stopped); requests in flight at its end are reported as in "
            "flight (info), not as unanswered"
        )

    def warning(self) -> str | None:
        """One line for the user, or None when the trace has no gap."""
        dropped = ""
        if self.dropped_sessions:
            # Not a capture gap (every byte was analyzed), but the verdicts that
            # need a dropped session's earlier state were not given either.
            dropped = (
                f"the analyzer dropped the state of {self.dropped_sessions} session(s) past "
                "its cap of sessions kept (MAX_SESSIONS); verdicts that need their earlier "
                "state (an unanswered request, the reply to a forgotten one) are missing"
            )
        if not self.count:
            if not dropped:
                return None
            return terminal_safe(dropped + self._not_judged())
        parts = []
        if self.lost_bytes:
            parts.append(f"{self.lost_bytes} bytes")
        if self.lost_exchanges:
            parts.append(f"{self.lost_exchanges} exchange(s)")
        what = " and ".join(parts) if parts else "traffic"
        why = f": {self.reason}" if self.reason else ""
        return terminal_safe(
            f"the trace lacks {what} that passed but were not recorded "
            f"({self.count} capture gap(s), the first at seq {self.first_seq}{why}); "
            "findings about that traffic are missing"
            + (f"; {dropped}" if dropped else "")
            + self._not_judged()
        )

    def _not_judged(self) -> str:
        """What the analysis left unjudged because of the gaps, or ''."""
        parts = []
        pending = self.unjudged.get("JR-RESP-REQUIRED", 0)
        if pending:
            parts.append(
                f"{pending} request(s) pending across a capture gap were not judged "
                "unanswered (JR-RESP-REQUIRED)"
            )
        unknown = self.unjudged.get("JR-RESP-ID", 0)
        if unknown:
            parts.append(
                f"{unknown} response(s) with an unknown id after a capture gap were not "
                "judged (JR-RESP-ID)"
            )
        for rule, count in sorted(self.unjudged.items()):
            if rule not in ("JR-RESP-REQUIRED", "JR-RESP-ID") and count:
                parts.append(f"{count} {rule} verdict(s) after a capture gap were not judged")
        return "; " + "; ".join(parts) if parts else ""
