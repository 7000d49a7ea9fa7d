"""What a shell does when its analysis process dies: one supervisor for every shell.

Forwarding never waits for the analysis process (docs/architecture.md, "forward
first, observe second"), so its death stops no traffic: the shell goes on
forwarding, unrecorded, and the trace must still say what it lacks (nothing
is lost unnoticed). The ``Supervisor`` is that duty, the same for
``mcpsniff stdio``, ``mcpsniff http`` and the mitmproxy addon:

* ``lost``: the pipe broke. The user is told once, and as soon as the dead
  process is reaped the trace is completed with what it missed so far
  (``mcpsniff.trace.salvage``), so that a reader of the trace (``show
  --follow``) learns of the loss at once, not only when the shell stops;
* ``settle``: the shell is done and the process has exited. If it died
  before it ended the trace (any status but 0, or ``TRACE_INCOMPLETE``, which
  the process explains itself), the trace is completed once more, reading on
  from the first salvage, and every session is ended.

A shell supplies only what its gap means: a ``Forwarded``, the session its
salvage records belong to and what the shell has forwarded so far (stream
bytes per direction and stderr bytes for stdio, the exchanges it numbered for
HTTP), compared by the salvage with what the trace holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcpsniff.capture.analysis_process import TRACE_INCOMPLETE, AnalysisProcess
from mcpsniff.trace.salvage import SalvageReport, TracePlace, exit_reason, salvage_once

#: Seconds a shell waits for an analysis process whose pipe broke to exit
#: before it completes the trace (a live one could still be writing it).
SALVAGE_WAIT = 5.0


@dataclass(frozen=True)
class Forwarded:
    """What a shell's lost analysis means in its trace."""

    #: The session the salvage's records belong to.
    key: str
    #: What the shell forwarded so far, as ``salvage`` keywords (copies, taken
    #: when called): ``forwarded`` and ``stderr`` (stdio) or ``exchanges`` (HTTP).
    counts: Callable[[], dict[str, Any]]


class Supervisor:
    """Watches one analysis process for its death, and completes its trace if it dies.

    ``warn`` gets each sentence for the user (the shell adds its name);
    ``alarm``, if given, gets the one saying the process is gone (the addon
    logs it as an error). ``activity`` names what goes on unrecorded.
    ``tell_each_salvage``: tell what the first salvage completed at once
    (a proxy may run for days after); otherwise the user hears the total at
    the end. Without ``place`` (the trace's file unknown) nothing is salvaged.
    """

    def __init__(
        self,
        analysis: AnalysisProcess,
        place: TracePlace | None,
        forwarded: Forwarded,
        warn: Callable[[str], None],
        *,
        alarm: Callable[[str], None] | None = None,
        activity: str = "relaying",
        tell_each_salvage: bool = False,
    ) -> None:
        self.analysis = analysis
        self.place = place
        self.forwarded = forwarded
        self.warn = warn
        self.alarm = alarm or warn
        self.activity = activity
        self.tell_each_salvage = tell_each_salvage
        #: Whether the user was told the analysis process is gone (told once).
        self.told = False
        #: Refusals to complete the trace already told: the salvage made at the
        #: death and the one at the end meet the same refusal (the path no
        #: longer names this run's file), said once.
        self.refusals: set[str] = set()
        #: Completing the trace as soon as the analysis process is known dead.
        self.salvaging: list[asyncio.Task[SalvageReport | None]] = []
        #: What the salvage made at the death completed, when it ran without a loop.
        self._earlier: SalvageReport | None = None

    # ------------------------------------------------------------------ the death

    def pipe_broke(self, exc: OSError) -> None:
        """The channel's ``on_broken``: the process is gone, the error says how."""
        self.lost(exc.strerror or str(exc))

    def lost(self, reason: str) -> None:
        """The analysis process is gone (its pipe broke): say so, complete the trace once reaped."""
        if self.told:
            return
        self.told = True
        self.alarm(
            f"the analysis process is gone ({reason}); {self.activity} continues unrecorded "
            "(the trace will say what it lacks)"
        )
        if self.place is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (the addon's, gone): complete it here
            self._earlier = self._salvage_blocking(self.analysis.wait_blocking(SALVAGE_WAIT))
            return
        self.salvaging.append(loop.create_task(self._salvage_when_reaped()))

    async def _salvage_when_reaped(self) -> SalvageReport | None:
        """Once the dead process is reaped, account for what it missed so far."""
        try:
            status = await asyncio.wait_for(self.analysis.wait(), SALVAGE_WAIT)
        except TimeoutError:
            return None  # its pipe closed but it lives on: the end salvages
        if status in (0, TRACE_INCOMPLETE):
            return None  # it ended the trace itself
        report, refused = await asyncio.to_thread(self._salvage, status, False, None)
        self._tell(report, refused, early=True)
        return report

    def _salvage_blocking(self, status: int | None) -> SalvageReport | None:
        if status is None or status in (0, TRACE_INCOMPLETE):
            return None  # still alive (the end salvages), or it ended the trace itself
        report, refused = self._salvage(status, False, None)
        self._tell(report, refused, early=True)
        return report

    # ------------------------------------------------------------------ the end

    async def settle(self, status: int | None) -> bool:
        """The process exited with ``status``: complete the trace if it died; whether it did."""
        if not self._died(status):
            return False
        if self.place is None:
            return True
        earlier = self._earlier
        for task in self.salvaging:
            with contextlib.suppress(Exception):
                earlier = await task
        report, refused = await asyncio.to_thread(self._salvage, status, True, earlier)
        self._tell_total(report, refused, earlier)
        return True

    def settle_blocking(self, status: int | None) -> bool:
        """``settle`` without an event loop (the addon at mitmproxy's exit): blocking."""
        if not self._died(status):
            return False
        if self.place is None:
            return True
        report, refused = self._salvage(status, True, self._earlier)
        self._tell_total(report, refused, self._earlier)
        return True

    def _died(self, status: int | None) -> bool:
        """Whether ``status`` says the process died before it ended the trace (told once)."""
        if status in (0, TRACE_INCOMPLETE):
            return False
        if not self.told:
            # The pipe may have broken (and said so) before the end, or while
            # the end was written, or not at all.
            self.told = True
            self.warn(f"{exit_reason(status)}; the trace may be incomplete")
        return True

    # ------------------------------------------------------------------ the trace

    def _salvage(
        self, status: int | None, end: bool, after: SalvageReport | None
    ) -> tuple[SalvageReport | None, str | None]:
        """Account in the trace for what the dead process never recorded (blocking: a thread).

        ``end``: the shell is done, end every session too; ``after``: the
        salvage made when the death was noticed, if any (read on from it).
        """
        assert self.place is not None
        return salvage_once(
            self.place,
            self.refusals,
            reason=exit_reason(status),
            t=time.time(),
            key=self.forwarded.key,
            end=end,
            after=after,
            **self.forwarded.counts(),
        )

    def _tell(self, report: SalvageReport | None, refused: str | None, *, early: bool) -> None:
        if refused is not None:
            self.warn(refused)
        if early and self.tell_each_salvage and report is not None and report.records:
            self.warn(report.describe())

    def _tell_total(
        self, report: SalvageReport | None, refused: str | None, earlier: SalvageReport | None
    ) -> None:
        self._tell(report, refused, early=False)
        if report is None:
            return
        if self.tell_each_salvage:
            # The first salvage was told already: what the end added, if anything.
            if report.records:
                self.warn(report.describe())
            return
        total = report if earlier is None else earlier.add(report)
        self.warn(total.describe())
