"""Session titles of followed and filtered ``show`` (show/titles.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.filter import ViewBuilder
from mcpsniff.show.titles import BODY_LIMIT, FirstLineTitles, LiveTitles
from mcpsniff.trace.writer import TraceWriter
from tests.conftest import Conversation
from tests.relay.stdio_support import show_follow, stop_follow


def test_a_session_is_titled_once_its_server_names_itself() -> None:
    c = Conversation()
    c.handshake()
    c.close()
    titles = LiveTitles({"meta": {"name": "my-server"}})
    said = [(type(r).__name__, titles.feed(r)) for r in c.records]
    titled = [(kind, t) for kind, t in said if t is not None]
    # Once, at the frame of the initialize result (the second frame).
    assert len(titled) == 1 and titled[0][0] == "FrameRecord"
    assert said.index(titled[0]) == [type(r).__name__ for r in c.records].index("FrameRecord", 1)
    frames = [r for r in c.records if isinstance(r, FrameRecord)]
    assert titles.feed(frames[2]) is None and "test" in titles.announced
    key, title = titled[0][1]
    assert key == "test" and title.startswith("my-server · server s 1 · client t 1 · ")
    assert title.endswith(" · live")


def test_a_session_whose_server_never_names_itself_is_titled_at_its_end() -> None:
    titles = LiveTitles()
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    assert titles.feed(FrameRecord(1, 10.0, "k", "c2s", "stdio", ping)) is None
    # A huge frame is not parsed for names (nor does it name anyone).
    huge = b'{"serverInfo":' + b" " * BODY_LIMIT + b'{"name":"x"}}\n'
    assert titles.feed(FrameRecord(2, 10.5, "k", "s2c", "stdio", huge)) is None
    ended = titles.feed(EventRecord(3, 11.0, "k", "exit", {"status": 3, "returncode": 3}))
    assert ended is not None and ended[0] == "k"
    assert ended[1].startswith("? · ") and ended[1].endswith(" · 1.0 s · exit 3")
    assert titles.feed(EventRecord(4, 11.0, "k", "session-end", {})) is None


def test_first_line_titles_name_each_session_once_and_only_known_ones() -> None:
    first = FirstLineTitles({"a": "server A"})
    # Views as the builder makes them; only their session matters here.
    builder = ViewBuilder()
    views = [*builder.feed(EventRecord(1, 1.0, "a", "stderr", {"line": "x"})), *builder.flush()]
    assert len(views) == 1
    assert first.before([]) is None
    assert first.before(list(views)) == ("a", "server A")
    assert first.before(list(views)) is None
    other = [*builder.feed(EventRecord(2, 1.0, "b", "stderr", {"line": "y"})), *builder.flush()]
    assert first.before(list(other)) is None


def test_show_follow_titles_each_session_as_it_goes(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    writer = TraceWriter.create(path, meta={"name": "watched"})
    proc = show_follow(path)
    try:
        assert proc.stdout is not None
        c = Conversation()
        c.handshake()
        writer.write_all(c.records)
        writer.flush()
        lines = [proc.stdout.readline().decode().rstrip("\n") for _ in range(3)]
        time.sleep(0.1)
        writer.close()
    finally:
        stop_follow(proc)
    assert "initialize" in lines[0] and "request" in lines[0]
    assert lines[1].startswith("session test: watched · server s 1 · client t 1 · ")
    assert lines[1].endswith(" · live")
    assert "result" in lines[2] and "initialize" in lines[2]


def test_titles_stop_past_the_session_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import mcpsniff.show.titles as titles_module

    monkeypatch.setattr(titles_module, "SESSION_LIMIT", 2)
    titles = LiveTitles()
    said = [titles.feed(EventRecord(n, 1.0, f"s{n}", "session-end", {})) for n in range(1, 5)]
    # Two sessions titled; what is kept stays bounded and the rest go untitled.
    assert [s is not None for s in said] == [True, True, False, False]
    assert len(titles.announced) + len(titles.identities) == 2
