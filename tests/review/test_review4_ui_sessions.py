"""Review 4: the UI's session list on a trace of very many sessions.

Every snapshot (``/api/sessions``, and the event stream, which sends it again
on every change) listed every session: a 30 MB trace of 200,000 one-frame
sessions made it 59 MB, 4.4 s to build, and a list no page can draw. It now
holds the newest ``SESSION_LIST_LIMIT`` and says how many there are.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from mcpsniff.ui.library import Library
from mcpsniff.ui.server import SESSION_LIST_LIMIT
from tests.ui.support import ui_server

REQUEST = '{"jsonrpc":"2.0","id":1,"method":"ping"}\n'


def _many_sessions(path: Path, count: int) -> None:
    with open(path, "w") as handle:
        handle.write(
            '{"type":"header","format":"mcpsniff-trace","version":2,"tool":"t","meta":{}}\n'
        )
        for i in range(count):
            frame = {
                "type": "frame",
                "seq": i + 1,
                "t": 1.0 + i,
                "session": f"s{i}",
                "dir": "c2s",
                "transport": "stdio",
                "text": REQUEST,
            }
            handle.write(json.dumps(frame) + "\n")


def test_the_library_gives_the_newest_sessions_first_up_to_a_limit(tmp_path: Path) -> None:
    _many_sessions(tmp_path / "t.jsonl", 50)
    library = Library([tmp_path])
    library.poll()
    library.poll()
    assert library.session_count() == 50
    newest = library.sessions(limit=10)
    assert [s["key"] for s in newest] == [f"s{i}" for i in range(49, 39, -1)]
    assert len(library.sessions()) == 50


def test_the_snapshot_is_bounded_and_counts_the_rest(tmp_path: Path) -> None:
    count = SESSION_LIST_LIMIT + 500
    _many_sessions(tmp_path / "t.jsonl", count)
    with ui_server(tmp_path) as url:
        for _ in range(100):
            with urllib.request.urlopen(url + "api/sessions", timeout=30) as response:
                snapshot = json.loads(response.read())
            if snapshot.get("total") == count:
                break
        assert snapshot["total"] == count
        assert len(snapshot["sessions"]) == SESSION_LIST_LIMIT
        assert snapshot["sessions"][0]["key"] == f"s{count - 1}"
