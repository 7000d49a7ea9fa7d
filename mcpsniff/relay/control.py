"""The messages an addon sends its analysis process besides observations (not traffic)."""

from __future__ import annotations

from dataclasses import dataclass

from mcpsniff.core.observation_codec import register


@dataclass(frozen=True, slots=True)
class Sync:
    """Answer once every finding of exchange ``exchange`` is made."""

    exchange: int
    t: float = 0.0


@dataclass(frozen=True, slots=True)
class Show:
    """Start or stop sending ``mcpsniff_show`` lines."""

    on: bool
    t: float = 0.0


register(Sync, 200)
register(Show, 201)
