"""The library of followed traces: discovery, growth, forgetting, the shared row budget."""

from __future__ import annotations

from pathlib import Path

from mcpsniff.ui.library import Library
from mcpsniff.ui.model import RowBudget
from tests.ui.support import copy_gallery, write_long_trace


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
