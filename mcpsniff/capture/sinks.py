"""Where the records of a capture go besides the trace: the sinks, and the one place they are built.

Every output of a recording besides the trace file and ``--show`` (an OTLP
export, a live view) is a :class:`Sink`. The recorder hands each record to
every sink in order, tells them when a batch of records (one read from the
wire) is complete, and closes them when the capture ends.

Every relay command (``mcpsniff stdio``, ``mcpsniff http``, the mitmproxy
addon) records in an analysis process; which sinks that process feeds is an
``Outputs``, filled in by the command from its options and built into sinks
by ``build_sinks``. Sinks are built *in* the analysis process (after the fork,
or in the addon's fresh interpreter), so that an exporter's threads and
sockets belong to the process that uses them.

Adding an output (OTLP, a live view) is: a field of ``Outputs``, its sink
class, and a line in ``build_sinks``.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

import orjson

from mcpsniff.core.escape import terminal_safe
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


@dataclass(frozen=True)
class Outputs:
    """What a relay command asked the analysis side to feed, besides the trace."""

    #: ``--otlp URL``: live MCP spans and metrics to this collector (mcpsniff/export/live.py).
    otlp: str = ""
    #: The HTTP relay's upstream, for the spans' ``server.address``/``server.port``.
    otlp_upstream: str = ""
    #: The server's name as a person gave it (``--name``), and the name to use when
    #: neither that nor its ``serverInfo`` is known (the program): the spans' service.
    otlp_name: str = ""
    otlp_fallback: str = ""

    def to_json(self) -> str:
        """For the addon's analysis process, which gets it on its command line."""
        return orjson.dumps(asdict(self)).decode()

    @classmethod
    def from_json(cls, text: str) -> Outputs:
        """``to_json``'s inverse; unknown keys (a newer sender) are ignored."""
        value: Any = orjson.loads(text) if text else {}
        known = {k: v for k, v in value.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def build_sinks(outputs: Outputs) -> list[Sink]:
    """The sinks the analysis side feeds for ``outputs``."""
    sinks: list[Sink] = []
    if outputs.otlp:
        from mcpsniff.export.live import try_otlp_sink

        sinks.extend(
            try_otlp_sink(
                outputs.otlp,
                _warn,
                outputs.otlp_upstream or None,
                outputs.otlp_name or None,
                outputs.otlp_fallback or None,
            )
        )
    return sinks


def _warn(text: str) -> None:
    """A sink's warning, on the analysis process's stderr (the user's), escaped."""
    print(terminal_safe(text), file=sys.stderr, flush=True)
