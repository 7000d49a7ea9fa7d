"""The addon's link: replies round-trip as JSON; anything else is refused."""

from __future__ import annotations

import pytest

from mcpsniff.mitm.link import FlowFinding, Reply


def test_a_reply_round_trips_and_anything_else_is_refused() -> None:
    reply = Reply([FlowFinding((1, -1), "JR-PARSE", "error", "bad \x1b json")], ["a line"], [1])
    assert Reply.decode(reply.encode()) == reply
    assert not Reply()
    for bad in (b"[]", b'{"findings": 1}', b"not json"):
        with pytest.raises((ValueError, KeyError, TypeError)):
            Reply.decode(bad)
