"""Recording the replay's own traffic, and checking it, with the relays' recorder."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpsniff.capture.recorder import TraceRecorder
from mcpsniff.core.model import FindingRecord, Record
from mcpsniff.replay.script import ReplayError
from mcpsniff.trace.writer import TraceWriter


@dataclass
class Tap:
    """Feeds what the replay sent and received into a TraceRecorder (and a trace, if asked).

    Without a trace file the traffic is still analyzed, so the replay can
    report the findings its own run produced.
    """

    transport: str = "stdio"
    session: str = "replay"
    path: Path | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    findings: list[FindingRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        writer = None
        if self.path is not None:
            try:
                writer = TraceWriter.create(self.path, meta=self.meta, created=time.time())
            except FileExistsError:
                raise ReplayError(
                    f"trace file {self.path} already exists; choose another --trace"
                ) from None
            except OSError as exc:
                raise ReplayError(
                    f"cannot write trace {self.path}: {exc.strerror or exc}"
                ) from None
        # The replay serves what was already recorded (and redacted): nothing new to hide.
        self.recorder = TraceRecorder(writer, self.transport, redact=False)
        self.recorder.listeners.append(self._keep)

    def _keep(self, record: Record) -> None:
        if isinstance(record, FindingRecord):
            self.findings.append(record)

    def stream(self, direction: str, data: bytes, session: str | None = None) -> None:
        """Bytes of a stdio stream, newline-delimited (``session``: the tap's own by default)."""
        self.recorder.feed(session or self.session, direction, data, time.time())

    def frame(
        self,
        direction: str,
        raw: bytes,
        transport: str | None = None,
        session: str | None = None,
        **meta: Any,
    ) -> None:
        """One whole frame (an HTTP body or an SSE event's data)."""
        self.recorder.feed_frame(
            session or self.session, direction, raw, time.time(), transport, meta or None
        )

    def event(self, name: str, data: dict[str, Any], session: str | None = None) -> None:
        """A replay event, e.g. ``replay-unmatched``."""
        self.recorder.event(session or self.session, name, time.time(), data)

    def close(self) -> list[FindingRecord]:
        """End the session, close the trace, and return every finding of the run."""
        self.recorder.close(time.time())
        if self.recorder.writer is not None:
            self.recorder.writer.close()
        return self.findings
