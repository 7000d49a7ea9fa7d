"""Views of a trace that holds frames but no message records.

The relays record each frame's messages and findings right after it, and the
views (``show``, ``stats``) are built from those records. A trace of frames
alone (cut by hand, or written without analysis) would show no traffic at all;
such a trace is analyzed instead, by the same code ``check`` runs over it
(``mcpsniff.core.analyzer.replay``), so the views see what ``check`` judges.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import FrameRecord, MessageRecord, Record
from mcpsniff.filter.reading import LazyTraceRecords
from mcpsniff.trace.reader import TornLine, TraceReader
from mcpsniff.trace.validate import is_time
from mcpsniff.trace.writer import TraceWriter


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


@contextlib.contextmanager
def analyzed_copy(
    path: str | os.PathLike[str], on_skip: Callable[[str], None] | None = None
) -> Iterator[Path]:
    """A private trace of ``path``'s frames and events with the records ``check``
    derives from them, for a reader that reads a file (the UI's model, the
    report); removed after. It keeps the original's file name, and its
    header the original's meta and time.
    """
    folder = Path(tempfile.mkdtemp(prefix="mcpsniff-"))  # mode 0700
    try:
        # The original's name: a page or a listing names the trace by it.
        copy = folder / (Path(path).name or "analyzed.jsonl")
        with TraceReader(path, on_skip=on_skip) as reader:
            meta = reader.header.get("meta")
            created = reader.header.get("created")
            writer = TraceWriter.create(
                copy,
                meta=meta if isinstance(meta, dict) else None,
                created=float(created) if is_time(created) else None,
            )
            try:
                batch = []
                for record in replay(reader.inputs()):
                    batch.append(record)
                    if len(batch) >= 4096:
                        writer.write_all(batch)
                        batch = []
                writer.write_all(batch)
            finally:
                writer.close()
        yield copy
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _quiet(message: str) -> None:
    """The look for message records reports nothing: the pass that prints reports skips."""
