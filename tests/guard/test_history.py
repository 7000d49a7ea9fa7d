"""The state folder's history of offers: kept per server, bounded, compared with earlier ones."""

from __future__ import annotations

from pathlib import Path

from mcpsniff.guard.history import MAX_OFFERS, history_file, previous_offer, remember
from tests.guard.offers import inventory, offer, tool


def test_remember_keeps_distinct_offers_and_finds_the_earlier_one(tmp_path: Path) -> None:
    monday = offer("stdio:a", tool("x", "Old."), trace="mon.jsonl", started=100.0)
    assert remember(inventory(monday), tmp_path) == 1
    assert remember(inventory(monday), tmp_path) == 0  # the same session again
    same = offer("stdio:a", tool("x", "Old."), trace="tue.jsonl", started=200.0)
    assert remember(inventory(same), tmp_path) == 0  # the same offer: nothing new
    wednesday = offer("stdio:a", tool("x", "New."), trace="wed.jsonl", started=300.0)
    assert remember(inventory(wednesday), tmp_path) == 1
    found = previous_offer(wednesday, tmp_path)
    assert found is not None
    entry, listed = found
    assert entry["trace"] == "mon.jsonl"
    assert listed["tool:x"].body == tool("x", "Old.")
    assert previous_offer(monday, tmp_path) is None
    assert history_file("stdio:a", tmp_path).stat().st_mode & 0o777 == 0o600


def test_history_is_bounded(tmp_path: Path) -> None:
    for day in range(MAX_OFFERS + 5):
        remember(
            inventory(offer("stdio:a", tool("x", f"V{day}."), trace=f"{day}.jsonl", started=day)),
            tmp_path,
        )
    import json

    kept = json.loads(history_file("stdio:a", tmp_path).read_text())["offers"]
    assert len(kept) == MAX_OFFERS and kept[-1]["trace"] == f"{MAX_OFFERS + 4}.jsonl"
