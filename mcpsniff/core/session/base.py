"""What every module of the session works on: its identity, its state and its output.

``Session`` (session.py) adds the ways in; the modules that do the analysis
(parsing, classification, correlation, scoping, batches, dispatch) take a
``SessionBase`` and the rules report through it, so none of them needs the
class that imports them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcpsniff.core import catalog
from mcpsniff.core.fault_ledger import FaultLedger
from mcpsniff.core.framing import LineFramer
from mcpsniff.core.model import C2S, S2C, FindingRecord, MessageRecord, Record
from mcpsniff.core.state import SessionState


class SeqCounter:
    """Hands out the trace-wide sequence numbers that records refer to."""

    __slots__ = ("value",)

    def __init__(self, start: int = 0) -> None:
        self.value = start

    def next(self) -> int:
        """The next sequence number."""
        self.value += 1
        return self.value


class SessionBase:
    """A session's attributes (key, state, framers, seq counter) and its output, where rules
    add findings (``report``) and records (``emit``)."""

    def __init__(
        self,
        key: str = "default",
        transport: str = "stdio",
        counter: SeqCounter | None = None,
        redactor: Callable[[bytes], tuple[bytes, int]] | None = None,
    ) -> None:
        self.key = key
        #: State shared by all sessions of one capture (HTTP session ids).
        self.shared: dict[str, Any] = {}
        #: Rewrites secrets in each frame before it is analyzed and recorded.
        self.redactor = redactor
        self.transport = transport
        self.counter = counter or SeqCounter()
        self.state = SessionState()
        self._framers = {C2S: LineFramer(), S2C: LineFramer()}
        #: The records the frame or event being analyzed has produced so far.
        self.output: list[Record] = []
        #: Findings and events added to the output since a reader last cleared it
        #: (``analyzer.replay_notable`` skips a batch of frames that has none).
        self.notable = 0
        self._severity_cache: dict[tuple[str, str | None], str | None] = {}
        #: The faults mcpsniff injected into this session; None until the first one.
        self.faults: FaultLedger | None = None

    # ------------------------------------------------------------------ reporting

    def report(
        self,
        rule: str,
        message: str,
        seqs: list[int],
        *,
        severity: str | None = None,
        **data: Any,
    ) -> None:
        """Emit a finding for ``rule`` if it applies to the version in force."""
        version = self.state.version
        cache_key = (rule, version)
        default = self._severity_cache.get(cache_key, "")
        if default == "":
            entry = catalog.get(rule)
            default = entry.severity_for(version) if entry.applies_to(version) else None
            self._severity_cache[cache_key] = default
        if default is None:
            return
        faults = self.faults
        if faults is not None and faults.excuses(rule, seqs):
            # A frame mcpsniff injected, damaged or withheld on purpose: the
            # peer is not to blame (fault_ledger.py).
            faults.withheld_finding(rule, seqs)
            return
        self.output.append(FindingRecord(rule, severity or default, message, self.key, seqs, data))
        self.notable += 1

    @property
    def emitted(self) -> int:
        """How many records the frame or event being analyzed has produced so far."""
        return len(self.output)

    def emit(self, record: Record) -> None:
        """Append a derived record to the current output."""
        self.output.append(record)
        if type(record) is not MessageRecord:
            self.notable += 1

    def reported_since(self, start: int, rules: tuple[str, ...]) -> bool:
        """Whether a finding of one of ``rules`` was emitted after output position ``start``."""
        return any(type(r) is FindingRecord and r.rule in rules for r in self.output[start:])
