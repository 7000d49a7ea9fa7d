"""The analysis worker: observations in from the channel, trace records out.

Every analysis process runs one ``Worker``: it decodes the observations the
shell sent (``channel.read_batches``), replays each on its adapter
(``mcpsniff.core.stdio_adapter`` or ``mcpsniff.core.http.adapter``), which
drives the ``Session`` through a ``TraceRecorder`` into the trace writer and the
sinks, and flushes the trace whenever the shell pauses. ``CaptureEnd`` ends
every session; the end of the pipe ends the worker. A pipe that ends without
``CaptureEnd`` means the shell died: the worker ends the sessions itself, so
that the trace still says what was unanswered.

The relays fork their analysis process and run a ``Worker`` in it
(``fork_analysis``); the mitmproxy addon spawns ``python -m
mcpsniff.mitm.worker``, which runs one too.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from mcpsniff.capture.analysis_process import (
    ANALYSIS_NICENESS,
    TRACE_INCOMPLETE,
    AnalysisProcess,
)
from mcpsniff.capture.channel import Tee, read_batches
from mcpsniff.capture.lanes import reopen, start_derived_lane
from mcpsniff.capture.priority import Baton, Behind, ForwardingClock, lower_priority
from mcpsniff.capture.recorder import TraceRecorder
from mcpsniff.capture.sinks import Outputs
from mcpsniff.core.model import Record
from mcpsniff.core.observation_codec import CodecError
from mcpsniff.core.observations import CaptureEnd
from mcpsniff.trace.writer import DerivedWriter, TraceWriter

#: The collector's thresholds in a forked analysis process (``gc.set_threshold``).
COLLECT_RARELY = (100_000, 50, 100)


class Worker:
    """Replays one capture's observations into its recorder, until the pipe ends."""

    def __init__(
        self,
        recorder: TraceRecorder,
        apply: Callable[[Any], None],
        *,
        lost: Callable[[float], None] | None = None,
        label: str = "mcpsniff",
        warn: Callable[[str], None] | None = None,
        after_batch: Callable[[], None] | None = None,
        after_close: Callable[[], None] | None = None,
        baton: Baton | Behind | None = None,
        tee: Tee | None = None,
        warn_trace: bool = True,
    ) -> None:
        self.recorder = recorder
        self.apply = apply
        #: What ends the sessions when the shell died (default: ``CaptureEnd``).
        self.lost = lost or (lambda t: apply(CaptureEnd(t)))
        self.label = label
        self.warn = warn or _stderr
        self.after_batch = after_batch
        self.after_close = after_close
        #: Two threads by turns, low while the relay forwards (None: this thread alone).
        self.baton = baton
        #: Where the bytes read go too (the derived lane: mcpsniff/capture/lanes.py).
        self.tee = tee
        #: Whether a trace that cannot be written was warned about (``warn_trace``
        #: false: the derived lane leaves it to the recording lane, one warning).
        self._trace_warned = not warn_trace

    def run(self, fd: int) -> int:
        """Read and replay until the pipe ends; the exit status (3: the trace is incomplete)."""
        writer = self.recorder.writer
        self._batches = read_batches(fd, self.tee)
        self._batch: Iterator[Any] | None = None
        self._ended = False
        if self.baton is None:
            self._work(_always)
        else:
            self.baton.run(self._work)
        if not self._ended:
            self.lost(time.time())
        if self.after_close is not None:
            self.after_close()
        if writer is None:
            return 0
        writer.close()
        if writer.failed is not None:
            if not self._trace_warned:
                self.warn(f"{self.label}: warning: the trace is incomplete: {writer.failed}")
            return TRACE_INCOMPLETE
        return 0

    def _work(self, keep_going: Callable[[], bool]) -> bool:
        """Replay observations until the pipe ends (True) or ``keep_going()`` is false.

        ``keep_going`` is asked after each observation; the next call goes on
        with the next one (``Baton`` calls it from one thread, then the other).
        """
        writer = self.recorder.writer
        apply = self.apply
        try:
            while True:
                batch = self._batch
                if batch is None:
                    found = next(self._batches, None)
                    if found is None:
                        return True
                    batch = self._batch = iter(found)
                    del found
                    if not keep_going():  # a new burst: to the low thread before any work
                        return False
                for observation in batch:
                    if type(observation) is CaptureEnd:
                        self._ended = True
                    try:
                        apply(observation)
                    except Exception as exc:  # recording must never stop
                        self.warn(f"{self.label}: internal error while recording: {exc!r}")
                    if not keep_going():
                        return False
                self._batch = None
                if writer is not None:
                    self._check(writer)
                    # The shell paused: readers of the trace (``show --follow``, a
                    # crash) see everything up to here.
                    writer.flush()
                if self.after_batch is not None:
                    self.after_batch()
        except CodecError as exc:
            self.warn(f"{self.label}: internal error while recording: {exc}")
            return True

    def _check(self, writer: Any) -> None:
        if writer.failed is not None and not self._trace_warned:
            self._trace_warned = True
            self.warn(
                f"{self.label}: warning: cannot write the trace ({writer.failed}); "
                "relaying continues without recording"
            )


def fork_analysis(
    writer: TraceWriter,
    transport: str,
    make_adapter: Callable[[TraceRecorder], Any],
    *,
    limit: int,
    redact: bool,
    outputs: Outputs,
    show: Callable[[Record], None] | None = None,
    show_flush: Callable[[], None] | None = None,
    show_close: Callable[[], None] | None = None,
    warn: Callable[[str], None] | None = None,
    label: str = "mcpsniff",
    idle: bool = False,
    in_child: Callable[[], None] | None = None,
    history_label: str | None = None,
    lanes: int = 1,
) -> AnalysisProcess:
    """Fork a relay's analysis process: a ``Worker`` writing ``writer``; ``OSError`` if it fails.

    ``make_adapter(recorder)`` gives the shell's adapter (its ``apply``, and
    ``lost`` if it has one). ``show``/``show_flush`` see every record (``--show``),
    and ``show_close`` the end of the sessions;
    the sinks ``outputs`` asks for are built in the child, where they run;
    ``in_child`` runs there first (to let go of what is the relay's alone).
    ``history_label`` (the server's name for the guard, ``stdio:LABEL`` or
    ``http:URL``): when the capture ends, each session's last definitions go
    into the state folder's guard history (``mcpsniff/guard/live.py``).
    Call before the event loop or any thread exists. Once the fork is made,
    ``writer`` is the analysis process's alone: this process closes its copy
    (``TraceWriter.hand_over``). Were it kept open, an ``flock`` the analysis
    process held on the trace when it was killed would outlive it (a lock
    belongs to the open file description both processes share), and the
    relay's salvage of the trace would wait for that lock.

    ``lanes=2`` (the caller has checked that the trace is the only output:
    ``mcpsniff.capture.lanes.lanes_for``): this process records the inputs and
    forks the derived lane, which analyzes them (mcpsniff/capture/lanes.py);
    one lane if the trace cannot be opened a second time.
    """
    derived_fd = reopen(writer) if lanes == 2 else None
    two = derived_fd is not None
    # Flushed once per batch of observations (the worker does it).
    recorder = TraceRecorder(writer, transport, redact=redact, autoflush=False, frames_only=two)
    recorder.attach_display(show, show_flush, show_close)
    adapter = make_adapter(recorder)
    # Below the relay while it forwards, at normal priority once it is quiet
    # (mcpsniff/capture/priority.py): the trace catches up on a busy machine too.
    clock = ForwardingClock()
    baton = Baton(clock.forwarding, lambda: lower_priority(ANALYSIS_NICENESS, idle))
    worker = Worker(
        recorder,
        adapter.apply,
        lost=getattr(adapter, "lost", None),
        label=label,
        warn=warn,
        baton=baton,
    )

    # The full analysis: here, or in the derived lane.
    derived = TraceRecorder(None, transport, redact=redact, autoflush=False) if two else recorder
    keep_offers = None
    if history_label is not None:
        path, name, say = writer.path, history_label, warn or _stderr

        def keep_offers() -> None:
            from mcpsniff.guard.live import remember_capture

            remember_capture(derived.analyzer, name, path, lambda text: say(f"{name}: {text}"))

        if not two:
            worker.after_close = keep_offers

    def derived_worker(
        trace_fd: int, finished: Callable[[], bool], far_behind: Callable[[], bool]
    ) -> Worker:
        """The derived lane's worker: the full analysis, its derived records into the trace."""
        derived.writer = DerivedWriter.from_fd(
            trace_fd,
            writer.path,
            session_suffix=writer.session_suffix,
            seq_offset=writer.seq_offset,
        )
        adapter = make_adapter(derived)
        end = getattr(adapter, "lost", None) or (lambda t: adapter.apply(CaptureEnd(t)))

        def lost(t: float) -> None:
            # The recording lane ended the sessions too unless it died (then the
            # relay's salvage does): the same inputs, the same seqs.
            if finished():
                end(t)
            else:
                derived.writer.write_lost()

        return Worker(
            derived,
            adapter.apply,
            lost=lost,
            label=f"{label} (derived lane)",
            warn=warn,
            after_close=keep_offers,
            warn_trace=False,  # a trace that cannot be written: the recording lane says so
            # Behind by design: it waits out a burst, so that the relay, its peers and
            # the recording lane share the cores, unless it is far behind.
            baton=Behind(clock.forwarding, far_behind),
        )

    if two:
        writer.open_lanes()

    def work(fd: int) -> int:
        if in_child is not None:
            in_child()
        # As in ``check`` (check/run.py): the analysis allocates many short-lived,
        # acyclic objects, and the collector's passes over everything the fork
        # inherited find nothing (about 7% of the CPU per 1 KiB call, callgrind).
        gc.freeze()
        gc.set_threshold(*COLLECT_RARELY)
        recorder.attach_sinks(outputs)
        if derived_fd is not None:
            # Before the worker starts its low thread (a fork copies no thread).
            lane = start_derived_lane(
                writer,
                derived_fd,
                derived_worker,
                close_in_child=(fd,),
                warn=warn or _stderr,
                label=label,
            )
            worker.tee = lane

            def finish() -> None:
                writer.flush()  # the inputs first: the derived lane's records follow them
                lane.finish()

            worker.after_close = finish
        return worker.run(fd)

    try:
        process = AnalysisProcess.fork(work, limit, idle=idle, clock=clock)
    finally:
        if derived_fd is not None:
            os.close(derived_fd)  # the derived lane's, through the fork
    writer.hand_over()
    return process


def _always() -> bool:
    return True


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
