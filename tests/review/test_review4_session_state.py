"""Review 4: the analyzer keeps every session it has seen, about 7.6 KB each, forever.

``Analyzer.sessions`` is a plain dict, and a session leaves it never (the state
of an ended one stays too). Each distinct session key costs ~7.6 KB of state
(measured with tracemalloc: 2,000 and 8,000 one-request sessions, 7,658 and
7,666 B each). A 30 MB hostile trace of 200,000 one-frame sessions costs
``check`` 84 s and 1.8 GB (stats: 3.6 s, 30 MB); live, every Mcp-Session-Id a
client opens and never DELETEs stays in ``mcpsniff http``'s analysis process:
one new session a second is 4.6 GB after a week. README: check's memory is
"flat: state depends on requests in flight"; it depends on sessions seen.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

from mcpsniff.core.analyzer import Analyzer, replay_batches
from mcpsniff.core.model import FrameRecord

REQUEST = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}\n'


def _frames(start: int, count: int) -> Iterator[FrameRecord]:
    for i in range(start, start + count):
        yield FrameRecord(i + 1, 1.0 + i * 1e-3, f"s{i}", "c2s", "stdio", REQUEST)


def test_analyzer_state_does_not_grow_with_the_sessions_seen() -> None:
    # The cap (core/analyzer.py MAX_SESSIONS, 10,000) lowered so that 4,000 and
    # 8,000 sessions both pass it: past the cap, memory is flat but for the
    # dropped keys remembered (~100 B each, MAX_DROPPED_KEYS).
    analyzer = Analyzer(max_sessions=1_000)
    tracemalloc.start()
    try:
        for _ in replay_batches(_frames(0, 4_000), analyzer):
            pass
        after_4k = tracemalloc.get_traced_memory()[0]
        for _ in replay_batches(_frames(4_000, 4_000), analyzer):
            pass
        after_8k_sessions = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # Twice the sessions, each with its one request still in flight: flat, as
    # check's memory is for twice the messages (benchmarks/bench_memory.py).
    assert after_8k_sessions < 1.25 * after_4k, (after_4k >> 20, after_8k_sessions >> 20)
