"""Where the records of a capture go: the sink interface.

Every output of a recording (the trace file, ``--show`` lines, an OTLP export,
a live view) is a :class:`Sink`. The recorder hands each record to every sink in
order, tells them when a batch of records (one read from the wire) is complete,
and closes them when the capture ends. Adding an output is one class.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from mcpsniff.core.model import Record


@runtime_checkable
class Sink(Protocol):
    """A consumer of a capture's records. Methods must not raise into the relay."""

    def record(self, record: Record) -> None:
        """Take one record (frame, finding, event, session end, ...)."""

    def batch_end(self) -> None:
        """The records of one read are all delivered: a good moment to flush."""

    def close(self) -> None:
        """The capture ended; release what the sink holds."""
