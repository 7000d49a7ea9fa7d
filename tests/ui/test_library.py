"""The library of followed traces: discovery, growth, forgetting, the shared row budget."""

from __future__ import annotations

from pathlib import Path

from mcpsniff.ui.library import Library
from mcpsniff.ui.model import RowBudget
from tests.ui.support import (
    BATCH_ROWS,
    batch_trace,
    copy_gallery,
    many_sessions_trace,
    write_long_trace,
)


def test_new_growing_and_deleted_traces(tmp_path: Path) -> None:
    library = Library([tmp_path])
    assert library.poll() is False and library.sessions() == []
    (first,) = copy_gallery(tmp_path, "clean-2025-11-25.jsonl")
    assert library.poll() is True
    library.poll()
    (summary,) = library.sessions()
    assert summary["file"] == "clean-2025-11-25.jsonl" and summary["ended"] is True
    assert summary["live"] is False  # ended, though written just now
    copy_gallery(tmp_path, "string-id-echo.jsonl")
    library.poll()
    assert len(library.sessions()) == 2
    first.unlink()
    assert library.poll() is True
    assert [s["file"] for s in library.sessions()] == ["string-id-echo.jsonl"]
    assert library.find(summary["id"]) is None


def test_rows_over_the_budget_are_counted_not_kept(tmp_path: Path) -> None:
    write_long_trace(tmp_path / "long.jsonl", 100)  # 200 rows
    library = Library([tmp_path], budget=RowBudget(150))
    library.poll()
    library.poll()
    (summary,) = library.sessions()
    assert summary["rows"] == 150 and summary["dropped"] == 50
    assert summary["messages"] == 200  # still counted
    (tmp_path / "long.jsonl").unlink()
    library.poll()
    assert library.budget.left == 150  # a forgotten trace gives its rows back


# The live library shows a batch's elements whatever the version (see test_model.py).


def test_the_live_library_shows_the_elements_too(tmp_path: Path) -> None:
    batch_trace(tmp_path / "t.jsonl", "2025-06-18")
    library = Library([tmp_path])
    library.poll()
    library.poll()  # the quiet poll completes the last frame's views
    (summary,) = library.sessions()
    assert summary["rows"] == len(BATCH_ROWS)
    assert summary["findings"]["error"] == 3  # LC-INIT-PARAMS (no clientInfo), 2 batches


# ---------------------------------------- very many sessions

# The UI's session list on a trace of very many sessions.
#
# Every snapshot (``/api/sessions``, and the event stream, which sends it again
# on every change) listed every session: a 30 MB trace of 200,000 one-frame
# sessions made it 59 MB, 4.4 s to build, and a list no page can draw. It now
# holds the newest ``SESSION_LIST_LIMIT`` and says how many there are.


def test_the_library_gives_the_newest_sessions_first_up_to_a_limit(tmp_path: Path) -> None:
    many_sessions_trace(tmp_path / "t.jsonl", 50)
    library = Library([tmp_path])
    library.poll()
    library.poll()
    assert library.session_count() == 50
    newest = library.sessions(limit=10)
    assert [s["key"] for s in newest] == [f"s{i}" for i in range(49, 39, -1)]
    assert len(library.sessions()) == 50
