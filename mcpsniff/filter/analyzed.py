"""Views of a trace that holds frames but no message records.

The relays record each frame's messages and findings right after it, and the
views (``show``, ``stats``) are built from those records. A trace of frames
alone (cut by hand, or written without analysis) would show no traffic at all;
such a trace is analyzed instead, by the same code ``check`` runs over it
(``mcpsniff.core.analyzer.replay``), so the views see what ``check`` judges.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import FrameRecord, MessageRecord, Record
from mcpsniff.filter.reading import LazyTraceRecords
from mcpsniff.trace.format import TornLine, TraceReader


def frames_only(path: str | os.PathLike[str]) -> bool:
    """Whether the trace at ``path`` holds frames but not one message record.

    A recorded trace answers at its first frame (its messages follow it); only
    a trace without message records is read to its end. Raises ``TraceError``
    as ``TraceReader`` does.
    """
    frames = False
    for record in LazyTraceRecords(path, on_skip=_quiet):
        if isinstance(record, MessageRecord):
            return False
        if isinstance(record, FrameRecord):
            frames = True
    return frames


class AnalyzedRecords:
    """Iterates the records ``check`` derives from a trace's frames and events.

    Like ``LazyTraceRecords``: skipped lines go to ``on_skip``, and a torn
    last line is described in ``torn`` once the records have been read.
    """

    def __init__(
        self, path: str | os.PathLike[str], on_skip: Callable[[str], None] | None = None
    ) -> None:
        self.path = Path(path)
        self.torn: TornLine | None = None
        self._on_skip = on_skip

    def __iter__(self) -> Iterator[Record]:
        with TraceReader(self.path, on_skip=self._on_skip) as reader:
            yield from replay(reader.inputs())
            self.torn = reader.torn


def _quiet(message: str) -> None:
    """The look for message records reports nothing: the pass that prints reports skips."""
