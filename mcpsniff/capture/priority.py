"""The analysis process's two priorities: below the relay while it forwards, normal after.

docs/architecture.md, invariant 2: forwarding comes first. A forked analysis
process therefore runs below the relay (``ANALYSIS_NICENESS``, or
``SCHED_IDLE``), so that the client, the server and the relay get the cores
during a burst and the analysis catches up in the pauses. An unprivileged
process cannot undo that (sched(7): raising the nice value back needs
``RLIMIT_NICE``, leaving ``SCHED_IDLE`` too), so a process that lowers itself
stays low when the burst is over: on a machine where anything else runs (a
build, a browser, other relays), an idle-priority analysis then gets almost no
CPU, and its trace lags by many seconds after the traffic stopped.

Priorities are per thread on Linux (setpriority(2): "the nice value is a
per-thread attribute"; sched_setscheduler(2) with pid 0 sets the calling
thread's policy). So the analysis process keeps two threads, only one of which
works at a time (``Baton``): the main thread at normal priority, and a low one
that lowered itself at start. The relay stamps the time of each observation it
hands over in a page both processes share (``ForwardingClock``); while that
stamp is recent, the relay is forwarding and the low thread works; once the
relay has been quiet for ``QUIET_SECONDS``, the main thread takes over and the
analysis competes with other programs as any normal process does. Whichever
thread works does the same work, on the same observations, in the same order:
the records, the trace and the verdicts do not depend on it.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
import time
from collections.abc import Callable

#: How long the relay must have handed over nothing before the analysis runs at
#: normal priority. Long enough that a client's next request, a few
#: milliseconds after the last response, finds the analysis already low again.
QUIET_SECONDS = 0.05


class ForwardingClock:
    """The time of the relay's last observation, in a page shared across the fork.

    Create it before the fork; the relay ``tick``s it with each observation's
    time (``Channel``), the analysis process reads it (``Baton``). A float
    store in a shared page: no system call, no lock (a torn read of an 8-byte
    aligned store does not happen on the platforms CPython runs on, and would
    only choose the wrong thread for one observation).
    """

    __slots__ = ("_map", "stamp")

    def __init__(self) -> None:
        self._map = mmap.mmap(-1, mmap.PAGESIZE)  # MAP_SHARED | MAP_ANONYMOUS
        #: ``stamp[0]``: the time (``time.time()``) of the last observation handed over.
        self.stamp = memoryview(self._map).cast("d")

    def tick(self, t: float) -> None:
        """The relay handed over an observation made at ``t``."""
        self.stamp[0] = t

    def forwarding(self, now: float | None = None) -> bool:
        """Whether the relay handed over anything in the last ``QUIET_SECONDS``."""
        if now is None:
            now = time.time()
        return now - self.stamp[0] < QUIET_SECONDS


def lower_priority(niceness: int, idle: bool) -> None:
    """Lower the calling thread below the relay (Linux: this thread only).

    ``idle``: ``SCHED_IDLE``, preempted the moment a normal task wakes (a nice
    one may first run out its time slice, which on the EEVDF scheduler delayed
    the relay's wake-ups); else ``niceness`` only.
    """
    if niceness:
        with contextlib.suppress(OSError):
            os.nice(niceness)
    if idle:
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


class Baton:
    """Runs a piece of work in two threads by turns: low while the relay forwards.

    ``work(keep_going)`` does the work until it is done (returns True) or
    ``keep_going()`` says to stop (returns False; it is asked between two
    observations, and called again later to go on where it stopped). The
    calling thread (normal priority) works while the relay is quiet, a thread
    that lowers itself (``lower``) while it forwards. ``run`` returns once the
    work is done, in the calling thread; an exception in the low thread is
    raised there.
    """

    def __init__(
        self,
        forwarding: Callable[[], bool],
        lower: Callable[[], None],
    ) -> None:
        self.forwarding = forwarding
        self.lower = lower
        self._turn = threading.Condition()
        #: Whose turn it is: "low", "normal", or "done".
        self._holder = "normal"
        self._error: BaseException | None = None
        #: How often the work changed threads (for tests and benchmarks).
        self.handovers = 0

    def run(self, work: Callable[[Callable[[], bool]], bool]) -> None:
        """Do ``work`` to its end, in whichever thread the relay's activity calls for."""
        low = threading.Thread(target=self._low, args=(work,), name="analysis-low", daemon=True)
        low.start()
        forwarding = self.forwarding
        try:
            while True:
                self._hand("normal")
                if self._holder == "done":
                    break
                if work(lambda: not forwarding()):
                    self._finish()
                    break
                self._give("low")
        finally:
            if self._holder != "done":
                self._finish()
            low.join()
        if self._error is not None:
            raise self._error

    def _low(self, work: Callable[[Callable[[], bool]], bool]) -> None:
        try:
            self.lower()
            forwarding = self.forwarding
            while True:
                self._hand("low")
                if self._holder == "done":
                    return
                if work(forwarding):
                    self._finish()
                    return
                self._give("normal")
        except BaseException as exc:  # raised again in the calling thread
            self._error = exc
            self._finish()

    def _hand(self, me: str) -> None:
        """Wait until it is ``me``'s turn (or the work is done)."""
        with self._turn:
            while self._holder != me and self._holder != "done":
                self._turn.wait()

    def _give(self, other: str) -> None:
        with self._turn:
            if self._holder != "done":
                self._holder = other
                self.handovers += 1
            self._turn.notify_all()

    def _finish(self) -> None:
        with self._turn:
            self._holder = "done"
            self._turn.notify_all()


class Behind:
    """Runs a piece of work while the relay is quiet: the derived lane's turns.

    The derived lane is behind by design (mcpsniff/capture/lanes.py): during a
    burst it waits, so that the relay, its peers and the recording lane share
    the cores, and it catches up in the pauses. ``far_behind()`` true (the
    recording lane holds much for it: traffic with no pause) makes it work
    while the relay forwards too, at its own low priority. ``work(keep_going)``
    as for ``Baton``.
    """

    def __init__(
        self,
        forwarding: Callable[[], bool],
        far_behind: Callable[[], bool],
        poll: float = QUIET_SECONDS / 5,
    ) -> None:
        self.forwarding = forwarding
        self.far_behind = far_behind
        self.poll = poll

    def run(self, work: Callable[[Callable[[], bool]], bool]) -> None:
        """Do ``work`` to its end, pausing while the relay forwards (unless far behind)."""
        forwarding, far_behind = self.forwarding, self.far_behind

        def may_work() -> bool:
            return not forwarding() or far_behind()

        while not work(may_work):
            while not may_work():
                time.sleep(self.poll)
