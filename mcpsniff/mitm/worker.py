"""The mitmproxy addon's analysis process: ``python -m mcpsniff.mitm.worker``.

The addon spawns it (``AnalysisClient.start``, through
``AnalysisProcess.spawn``) rather than forking, since mitmproxy may run
threads. It runs the same ``Worker`` as the relays' analysis processes, on an
``ObservationAdapter`` that keys sessions by the server's host too, and, with
``--replies-fd``, a ``FlowReplies`` that answers the addon's ``Sync`` and
``Show`` messages and sends each batch's findings and show lines back
(``mcpsniff.mitm.link`` describes the exchange).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from mcpsniff.capture.analysis_process import become_analysis_process
from mcpsniff.capture.recorder import TraceRecorder
from mcpsniff.capture.sinks import Outputs
from mcpsniff.capture.worker import Worker
from mcpsniff.core.http.adapter import ObservationAdapter
from mcpsniff.core.model import FindingRecord, FrameRecord, Record
from mcpsniff.core.observations import Observation
from mcpsniff.mitm.link import REPLY_LENGTH, FlowFinding, Reply, Show, Sync
from mcpsniff.terminal.render import Style, Timeline
from mcpsniff.trace.writer import TraceWriter

#: Frames remembered with their exchange (findings name frames, flows are exchanges).
FRAME_MEMORY = 100_000


class FlowReplies:
    """In the worker: answers ``Sync`` and ``Show``, and sends findings and lines back."""

    def __init__(
        self, recorder: TraceRecorder, apply: Callable[[Any], None], replies_fd: int, show: bool
    ) -> None:
        self.replay_apply = apply
        self.replies_fd = replies_fd
        self.replies_broken = False
        self.timeline: Timeline | None = Timeline(Style(False)) if show else None
        self.reply = Reply()
        #: Frame seq -> exchange number.
        self.frame_exchange: dict[int, int] = {}
        recorder.listeners.append(self._record)

    def _record(self, record: Record) -> None:
        if isinstance(record, FrameRecord):
            meta = record.meta or {}
            number = meta.get("exchange")
            if isinstance(number, int):
                if len(self.frame_exchange) >= FRAME_MEMORY:
                    self.frame_exchange.clear()
                self.frame_exchange[record.seq] = number
        elif isinstance(record, FindingRecord):
            # A finding naming two frames of one exchange goes on its flow once.
            exchanges = tuple(dict.fromkeys(self.frame_exchange.get(s, -1) for s in record.seq))
            self.reply.findings.append(
                FlowFinding(exchanges, record.rule, record.severity, record.message)
            )
        if self.timeline is not None:
            self.reply.lines.extend(self.timeline.feed(record))

    def apply(self, message: Observation | Sync | Show) -> None:
        """Replay one observation, or act on a control message."""
        kind = type(message)
        if kind is Sync:
            self.reply.synced.append(message.exchange)  # type: ignore[union-attr]
        elif kind is Show:
            if message.on and self.timeline is None:  # type: ignore[union-attr]
                self.timeline = Timeline(Style(False))
            elif not message.on and self.timeline is not None:  # type: ignore[union-attr]
                self.reply.lines.extend(self.timeline.flush())
                self.timeline = None
        else:
            self.replay_apply(message)

    def send_reply(self) -> None:
        """After a batch: what was found since the last reply, to the addon."""
        if self.timeline is not None:
            # A frame's lines wait for the next frame; no later record of the batch belongs
            # to it, so show them now rather than one message late.
            self.reply.lines.extend(self.timeline.flush())
        reply, self.reply = self.reply, Reply()
        if not reply or self.replies_broken:
            return
        payload = reply.encode()
        try:
            _write_all(self.replies_fd, REPLY_LENGTH.pack(len(payload)) + payload)
        except OSError:
            # The addon is gone; the trace is still worth finishing.
            self.replies_broken = True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main(argv: list[str] | None = None) -> int:
    """The spawned analysis process (``AnalysisProcess.spawn``, the mitmproxy addon's)."""
    parser = argparse.ArgumentParser(prog="mcpsniff.mitm.worker")
    parser.add_argument("--fd", type=int, required=True, help="the channel's read end")
    parser.add_argument("--trace-fd", type=int, required=True)
    parser.add_argument("--trace-path", default="")
    parser.add_argument("--meta", default="{}", help="the trace header's meta (JSON)")
    parser.add_argument("--created", type=float, required=True)
    parser.add_argument("--no-redact", action="store_true")
    parser.add_argument("--replies-fd", type=int, help="findings back to the addon")
    parser.add_argument("--show", action="store_true")
    parser.add_argument("--outputs", default="", help="Outputs as JSON (mcpsniff.capture.sinks)")
    ns = parser.parse_args(argv)
    # Normal priority: unlike a relay's, the addon's hooks wait for this process
    # (findings must be on a flow before the later addons see it).
    become_analysis_process(niceness=0)
    stream = os.fdopen(ns.trace_fd, "wb", buffering=1 << 16)
    writer = TraceWriter(stream, Path(ns.trace_path) if ns.trace_path else None)
    writer.write_header(orjson.loads(ns.meta), ns.created)
    writer.flush()
    recorder = TraceRecorder(writer, "http", redact=not ns.no_redact, autoflush=False)
    recorder.attach_sinks(Outputs.from_json(ns.outputs))
    # Sessions are keyed by the server's host too: mitmproxy sees many servers.
    adapter = ObservationAdapter(recorder, redact=not ns.no_redact, key_by_host=True)
    if ns.replies_fd is None:
        return Worker(recorder, adapter.apply).run(ns.fd)
    replies = FlowReplies(recorder, adapter.apply, ns.replies_fd, ns.show)
    worker = Worker(
        recorder,
        replies.apply,
        after_batch=replies.send_reply,
        after_close=replies.send_reply,
    )
    return worker.run(ns.fd)


if __name__ == "__main__":
    # Run as the module's real name, not ``__main__``: one copy of its classes.
    from mcpsniff.mitm.worker import main as _main

    sys.exit(_main())
