"""``mcpsniff.core.state``: which run of a shared trace a session key belongs to."""

from __future__ import annotations

import pytest

from mcpsniff.core.state import run_of


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
