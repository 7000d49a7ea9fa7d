"""The session: bytes in, records out (moved here from ``core/session.py``)."""

from mcpsniff.core.session.session import END_EVENTS, SeqCounter, Session

__all__ = ["END_EVENTS", "SeqCounter", "Session"]
