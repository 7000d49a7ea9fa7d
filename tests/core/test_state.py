"""``mcpsniff.core.state``: which run of a shared trace a session key belongs to, fingerprints."""

from __future__ import annotations

from typing import Any

import pytest

from mcpsniff.core.model import FrameRecord, MessageRecord
from mcpsniff.core.state import INLINE_PRINT, MAX_RUNS, fingerprint, per_run, run_of


@pytest.mark.parametrize(
    ("key", "run"),
    [
        ("stdio", ""),
        ("http", ""),
        ("0b3a-4c1d", ""),
        ("stdio@4242.1796000000", "@4242.1796000000"),
        ("http@7.1", "@7.1"),
        ("sid-1@7.1", "@7.1"),
        ("user@example.com", ""),  # an "@" that is no run suffix
        ("a@7.1x", ""),
        ("a@7", ""),
    ],
)
def test_run_of(key: str, run: str) -> None:
    assert run_of(key) == run


def test_shared_facts_are_kept_for_at_most_max_runs() -> None:
    """A hostile trace naming endless runs cannot grow the analyzer's shared state."""
    shared: dict = {}
    for number in range(MAX_RUNS + 50):
        runs = per_run(shared, "k", f"@{number}.1")
        if runs is not None:
            runs[f"@{number}.1"] = number
    assert len(shared["k"]) == MAX_RUNS
    assert per_run(shared, "k", "@0.1") is shared["k"]  # a run already kept still is
    assert per_run(shared, "k", "@99999.1") is None


def test_the_fingerprint_is_the_short_frame_or_the_long_frames_hash() -> None:
    def printed(raw: bytes) -> Any:
        frame = FrameRecord(1, 0.0, "k", "c2s", "stdio", raw)
        return fingerprint(MessageRecord(1, "k", "c2s", "request", source=frame))

    short = b"x" * INLINE_PRINT
    long = b"x" * (INLINE_PRINT + 1)
    assert printed(short) is short
    assert printed(long) == hash(long)
