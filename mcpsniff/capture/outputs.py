"""The analysis side's outputs besides the trace: the one place a command's options become sinks.

Every relay command (``mcpsniff stdio``, ``mcpsniff http``, the mitmproxy
addon) records in an analysis process; what that process feeds besides the
trace writer and ``--show`` is built here, from an ``Outputs`` the command
filled in from its options. Sinks are built *in* the analysis process (after
the fork, or in the addon's fresh interpreter), so that an exporter's threads
and sockets belong to the process that uses them.

Adding an output (OTLP, a live view) is: a field here, its sink class, and a
line in ``build_sinks``.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from typing import Any

import orjson

from mcpsniff.capture.recorder import Recorder
from mcpsniff.capture.sinks import Sink
from mcpsniff.core.escape import terminal_safe


@dataclass(frozen=True)
class Outputs:
    """What a relay command asked the analysis side to feed, besides the trace."""

    #: ``--otlp URL``: live MCP spans and metrics to this collector (mcpsniff/export/live.py).
    otlp: str = ""
    #: The HTTP relay's upstream, for the spans' ``server.address``/``server.port``.
    otlp_upstream: str = ""

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

        sinks.extend(try_otlp_sink(outputs.otlp, _warn, outputs.otlp_upstream or None))
    return sinks


def _warn(text: str) -> None:
    """A sink's warning, on the analysis process's stderr (the user's), escaped."""
    print(terminal_safe(text), file=sys.stderr, flush=True)


def attach(recorder: Recorder, outputs: Outputs | None) -> Recorder:
    """Add the sinks ``outputs`` asks for to ``recorder`` (call in the analysis process)."""
    if outputs is not None:
        recorder.sinks.extend(build_sinks(outputs))
    return recorder
