"""``ViewBuilder`` (filter/view.py): what a builder kept for a growing trace holds on to."""

from __future__ import annotations

import sys

from mcpsniff.core.model import C2S, FrameRecord, MessageRecord
from mcpsniff.filter.view import ViewBuilder


def test_a_completed_frame_is_not_held_by_the_builder() -> None:
    """The UI keeps one builder per trace for as long as it runs: a batch frame of
    100,000 elements (its bytes and its parsed body) must not live on in it."""
    raw = b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]\n'
    frame = FrameRecord(1, 1.0, "s", C2S, "stdio", raw)
    before = sys.getrefcount(frame)
    builder = ViewBuilder({})
    builder.feed(frame)
    for index in (0, 1):
        message = MessageRecord(1, "s", C2S, "request", index=index, id=index + 1, has_id=True)
        builder.feed(message)
    views = builder.flush()
    assert [v.index for v in views] == [0, 1] and all(v.frame is frame for v in views)
    del views
    assert sys.getrefcount(frame) == before
