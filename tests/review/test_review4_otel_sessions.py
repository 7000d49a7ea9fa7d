"""Review 4: ``export otlp`` and ``--otlp`` remembered every open session.

``SpanBuilder`` kept per-session state until a session ended, and sessions
that never end (a trace cut short, HTTP sessions nobody DELETEs, a hostile
trace) were kept all: a 30 MB trace of 200,000 one-request sessions cost
``export otlp`` 2.2 GB and 240 s (20,000: 261 MB, 22 s). At most
``MAX_SESSIONS`` open ones are kept now; the least recently active is given up
and its requests exported as unanswered (``mcpsniff_dropped``), as the oldest
of too many unanswered requests in one session already were.
"""

from __future__ import annotations

import pytest

from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import FrameRecord
from mcpsniff.export import otel_spans
from mcpsniff.export.otel_spans import SpanBuilder

REQUEST = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{}}\n'


def test_open_sessions_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(otel_spans, "MAX_SESSIONS", 10)
    frames = [FrameRecord(i + 1, 1.0 + i, f"s{i}", "c2s", "stdio", REQUEST) for i in range(25)]
    # s0 is answered after every other session began: the most recently active.
    frames.append(FrameRecord(100, 100.0, "s0", "s2c", "stdio", ANSWER))
    builder = SpanBuilder()
    ops = []
    for record in replay(frames):
        builder.feed(record)
        done, _, _ = builder.take()
        ops.extend(done)
        assert len(builder._sessions) <= 10
    builder.finish()
    ops.extend(builder.take()[0])
    # s0 was given up before its answer came (s10 needed the room); the answer
    # opened it again, giving up s15. So s0..s15 went out as given up, one
    # request each, and s16..s24 as unanswered when the capture ended.
    assert builder.evicted == 16
    dropped = [op for op in ops if op.client.attributes.get("error.type") == "mcpsniff_dropped"]
    assert sorted(op.session for op in dropped) == sorted(f"s{i}" for i in range(16))
    unanswered = [op for op in ops if op.client.attributes.get("error.type") == "no_response"]
    assert sorted(op.session for op in unanswered) == sorted(f"s{i}" for i in range(16, 25))
