"""core/protocol.py: facts about MCP versions and methods."""

from __future__ import annotations

from mcpsniff.core import protocol


def test_direction_table_matches_the_computed_directions() -> None:
    for method in protocol.KNOWN_METHODS:
        for version in (*protocol.VERSIONS, None, "1999-01-01"):
            assert protocol.direction_for(method, version) == protocol._direction_for(
                method, version
            )
    assert protocol.direction_for("no/such", protocol.V4) is None
