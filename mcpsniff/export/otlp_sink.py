"""``--otlp URL``: live OpenTelemetry export, as a sink of the analysis process.

The sink runs where the analysis runs (the analysis process of ``mcpsniff
stdio`` and ``mcpsniff http``, or the addon's), never on the forwarding path.
It turns records into span drafts as they arrive (pure and cheap, see
:mod:`mcpsniff.export.otel_spans`) and hands each batch to a worker thread
through a bounded queue; the worker makes the SDK spans and sends them. When
the queue is full the batch is dropped and counted, and a collector that is
down costs one warning: nothing here ever raises into the recorder or waits
on the network in its thread (the Sink contract, ``mcpsniff/capture/sinks.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from mcpsniff.core.model import FrameRecord, Record
from mcpsniff.export.otel_spans import ExportOptions, SpanBuilder
from mcpsniff.export.otlp import OtlpExporter, OtlpSettings
from mcpsniff.listing.identity import Origin, SessionIdentity

#: Batches waiting for the worker; beyond this they are dropped (and counted).
QUEUE_LIMIT = 1024
#: Spans are sent at least this often (seconds) while traffic flows.
SEND_INTERVAL = 1.0
#: Metrics are sent this often (seconds), and at the end.
METRICS_INTERVAL = 10.0
#: The share of one core the worker may use (thread CPU time per wall second).
#: Beyond it, batches are dropped and counted: under a flood the export becomes
#: a sample instead of taking CPU from the relay, the server and the client.
CPU_BUDGET = 0.25
#: How long closing waits for the last export (seconds). Short: clients give a
#: stdio server about two seconds to exit after closing its stdin (the official
#: SDKs then terminate it), and mcpsniff exits only after its analysis process.
CLOSE_TIMEOUT = 1.0

#: A frame longer than this is not parsed for the server's name.
NAME_BODY_LIMIT = 1 << 20

_STOP = object()


class _Budget:
    """Whether a thread is still within ``share`` of one core over the last second.

    Measured with the thread's own CPU clock (``time.thread_time``), so waiting
    for the network or the queue costs nothing.
    """

    def __init__(self, share: float, window: float = 1.0) -> None:
        self.share = share
        self.window = window
        self._start_wall = time.monotonic()
        self._start_cpu = time.thread_time()

    def allows(self) -> bool:
        wall = time.monotonic()
        cpu = time.thread_time()
        if wall - self._start_wall >= self.window:
            self._start_wall, self._start_cpu = wall, cpu
            return True
        return cpu - self._start_cpu < self.share * self.window


class OtlpSink:
    """A :class:`mcpsniff.capture.sinks.Sink` that exports MCP spans and metrics over OTLP."""

    def __init__(
        self,
        settings: OtlpSettings,
        options: ExportOptions | None = None,
        warn: Callable[[str], None] | None = None,
        queue_limit: int = QUEUE_LIMIT,
        origin: Origin | None = None,
    ) -> None:
        self.settings = settings
        #: The server, as its spans' ``service.name``: ``origin.name`` (a person's
        #: --name), else its ``serverInfo`` (read here), else ``origin.fallback``.
        self.server = SessionIdentity("", origin or Origin())
        self.options = options or ExportOptions()
        self.warn = warn or (lambda text: None)
        self._builder: SpanBuilder | None = None
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=queue_limit)
        self._thread: threading.Thread | None = None
        self._broken = False
        #: Batches dropped because the queue was full, and operations in them.
        self.dropped_batches = 0
        self.dropped_operations = 0
        self.spans_sent = 0
        self.spans_failed = 0
        self._collector_warned = False

    # ------------------------------------------------------------------ Sink

    def record(self, record: Record) -> None:
        """Take one record (never raises)."""
        if self._broken:
            return
        try:
            if self._builder is None:
                self._start()
            assert self._builder is not None
            if (
                self.server.server is None
                and type(record) is FrameRecord
                and record.direction == "s2c"
                and len(record.raw) <= NAME_BODY_LIMIT
                and b"serverInfo" in record.raw
            ):
                with contextlib.suppress(ValueError, RecursionError):
                    self.server.saw_body("s2c", json.loads(record.raw))
            self._builder.feed(record)
        except Exception as exc:
            self._give_up(f"OTLP export stopped after an internal error: {exc!r}")

    def batch_end(self) -> None:
        """A read's records are in: queue what is complete for the worker."""
        if self._broken or self._builder is None:
            return
        try:
            # Shed load at the source while the worker is behind: a full queue
            # means new operations would only be dropped after costing their spans.
            size = self._queue.qsize()
            if self._builder.shedding and size <= self._queue.maxsize // 2:
                self._builder.shedding = False
            self._enqueue(self._builder.take())
        except Exception as exc:
            self._give_up(f"OTLP export stopped after an internal error: {exc!r}")

    def close(self) -> None:
        """The capture ended: send what is left (bounded wait), report what was lost."""
        if self._builder is not None and not self._broken:
            with contextlib.suppress(Exception):
                self._builder.finish()
                self._enqueue(self._builder.take())
        thread = self._thread
        if thread is not None:
            deadline = time.monotonic() + CLOSE_TIMEOUT
            while thread.is_alive() and time.monotonic() < deadline:
                try:
                    self._queue.put(_STOP, timeout=0.1)
                    break
                except queue.Full:
                    continue
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive() and not self._collector_warned:
                self._collector_warned = True
                self.warn(
                    f"OTLP export to {self.settings.describe()} could not send its last spans "
                    f"within {CLOSE_TIMEOUT:g} s; they are in the trace "
                    "(mcpsniff export otlp sends them later)"
                )
        if self._builder is not None:
            self.dropped_operations += self._builder.shed
            self._builder.shed = 0
        if self.dropped_operations and not self._collector_warned:
            # One line at most: a collector that is down was already said once.
            self.warn(
                f"OTLP export fell behind: {self.dropped_operations} MCP operation(s) not "
                "sent (the trace has them all: mcpsniff export otlp can send them)"
            )

    # ------------------------------------------------------------------ internals

    def _start(self) -> None:
        # Started on first use, in the process that records: the HTTP relay builds
        # its recorder before forking the analysis process, and threads do not
        # survive a fork.
        self._builder = SpanBuilder(self.options)
        self._thread = threading.Thread(target=self._work, name="mcpsniff-otlp", daemon=True)
        self._thread.start()

    def _enqueue(self, batch: tuple[list[Any], list[Any], list[Any]]) -> None:
        ops, lone, metrics = batch
        if not (ops or lone or metrics):
            return
        try:
            self._queue.put_nowait(batch)
        except queue.Full:
            self.dropped_batches += 1
            self.dropped_operations += len(ops)
            if self._builder is not None:
                self._builder.shedding = True

    def _give_up(self, text: str) -> None:
        self._broken = True
        self.warn(text)

    def _work(self) -> None:
        # The lowest CPU priority for this thread alone (Linux schedules threads
        # one by one): what it does is worth less than forwarding and analysis.
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        # The exporter (and with it the spans' service.name) is made with the first
        # operations: by then the initialize result has named the server.
        first = self._queue.get()
        if first is _STOP:
            return
        try:
            name = self.server.name
            exporter = OtlpExporter(self.settings, service=None if name == "?" else name)
        except Exception as exc:
            self._give_up(f"OTLP export disabled: {exc}")
            self._drain()
            return
        carried: Any = first
        last_send = last_metrics = time.monotonic()
        budget = _Budget(CPU_BUDGET)
        stopping = False
        while not stopping:
            if carried is not None:
                item, carried = carried, None
            else:
                try:
                    item = self._queue.get(timeout=SEND_INTERVAL)
                except queue.Empty:
                    item = None
            if item is _STOP:
                stopping = True
            elif item is not None:
                if not budget.allows():
                    self.dropped_batches += 1
                    self.dropped_operations += len(item[0])
                    continue
                try:
                    exporter.emit(*item)
                except Exception as exc:
                    self._give_up(f"OTLP export stopped after an internal error: {exc!r}")
                    break
            now = time.monotonic()
            due = now - last_send >= SEND_INTERVAL or exporter.pending >= 512
            if stopping or due:
                with_metrics = stopping or now - last_metrics >= METRICS_INTERVAL
                # A collector that did not take the spans gets no metrics try on top.
                with_metrics = with_metrics and not self._collector_warned
                ok = exporter.flush(metrics=with_metrics)
                last_send = now
                if with_metrics:
                    last_metrics = now
                self.spans_sent = exporter.spans_sent
                self.spans_failed = exporter.spans_failed
                if not ok and not self._collector_warned:
                    self._collector_warned = True
                    self.warn(
                        f"the OTLP collector at {self.settings.describe()} "
                        "did not take the spans; dropping them until it does (the relay and "
                        "the trace are not affected)"
                    )
        exporter.shutdown()

    def _drain(self) -> None:
        """Disabled: consume the queue until close() says stop."""
        while self._queue.get() is not _STOP:
            pass
