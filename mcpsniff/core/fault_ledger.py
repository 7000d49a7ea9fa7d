"""What mcpsniff did on purpose in a session: the faults it injected, and the frames they touched.

A relay run with ``--fault`` records each injection as a ``fault`` event
(``mcpsniff.faults.engine.fault_record``) *before* the frames it changed.
Its ``marks`` say, per direction, how many of the next frames recorded in
that direction are mcpsniff's doing (an answer in its name, a damaged copy,
a duplicate, a message never delivered), or ``"rest"`` for every later one.
The ledger numbers those frames as they arrive, and ``SessionBase.report``
asks it before emitting a finding: a finding that names a touched frame
would blame a peer for what mcpsniff did, so it is withheld and counted
instead. The resilience rules (``rules/resilience.py``) read the notes to
judge how the other peer reacted.

Sessions without a fault never create a ledger: ``Session.faults`` stays
None and nothing here runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcpsniff.core.model import C2S, S2C, EventRecord, FrameRecord

#: ``marks`` value: every later frame of the direction.
REST = "rest"
#: Rules whose findings assume that the sender of a request saw its answer: a
#: cancel after it, or a second answer (a stream resumed after mcpsniff cut the
#: first one off redelivers it, as 2025-11-25 basic/transports.mdx § Resumability
#: and Redelivery has the server do).
ANSWER_SEEN_RULES = frozenset({"CANCEL-IN-PROGRESS", "JR-RESP-ID"})
#: Rules a resilience rule judges instead when mcpsniff caused what they react to:
#: a client reusing a session after an injected 404 is RESIL-SESSION-REUSED's.
JUDGED_BY_RESILIENCE = {"HTTP-SESSION-REINIT": ("status", 404)}
#: Notes a ledger keeps (a long run with ``prob`` faults must stay bounded).
NOTES_LIMIT = 100_000


@dataclass(slots=True)
class FaultNote:
    """One injected fault as the analysis saw its record."""

    seq: int
    t: float
    action: str
    direction: str
    kind: str
    method: str | None
    id: Any
    has_id: bool
    data: dict[str, Any]
    #: The frames it touched, as they were recorded after it.
    frames: list[int] = field(default_factory=list)
    #: Filled by the rules: what the other peer did about it.
    reaction: str | None = None


@dataclass(slots=True)
class FaultLedger:
    """The faults of one session and the frames they touched."""

    notes: list[FaultNote] = field(default_factory=list)
    #: Frames mcpsniff made, changed or withheld: no finding may blame a peer for them.
    touched: set[int] = field(default_factory=set)
    #: Findings withheld because they named a touched frame.
    withheld: int = 0
    #: Their rules and frames.
    withheld_rules: list[tuple[str, list[int]]] = field(default_factory=list)
    _marks: dict[str, int] = field(default_factory=lambda: {C2S: 0, S2C: 0})
    _rest: set[str] = field(default_factory=set)
    _marking: dict[str, FaultNote | None] = field(default_factory=lambda: {C2S: None, S2C: None})
    #: Requests whose answer mcpsniff dropped: their sender never saw it answered.
    answer_withheld: set[int] = field(default_factory=set)
    #: Request ids (``repr``) per direction the receiver never read as requests (corrupted).
    hidden_requests: dict[str, set[str]] = field(default_factory=dict)
    #: Frames a peer answered with -32700/-32600 (``bad-input-reply``).
    answered_culprits: set[int] = field(default_factory=set)
    #: Request ids the client (c2s) or server (s2c) cancelled (``repr`` keys), and when.
    cancelled: dict[str, dict[str, float]] = field(default_factory=lambda: {C2S: {}, S2C: {}})
    #: Methods requested in each direction after the latest fault, for retry checks.
    requested_after: dict[str, list[tuple[int, str]]] = field(
        default_factory=lambda: {C2S: [], S2C: []}
    )
    #: Answers (ids, ``repr``) each direction carried after a fault, and when: one
    #: mcpsniff withheld may come again on a resumed stream.
    answered_after: dict[str, dict[str, float]] = field(default_factory=lambda: {C2S: {}, S2C: {}})
    #: HTTP requests after a fault, as (seq of their event, whether they resume a
    #: stream with Last-Event-ID, their Mcp-Session-Id, their method).
    http_requests: list[tuple[int, bool, str | None, str]] = field(default_factory=list)

    def note(self, record: EventRecord) -> FaultNote | None:
        """Take a ``fault`` event: remember it and the frames it announces."""
        data = record.data
        marks = data.get("marks")
        note = FaultNote(
            seq=record.seq,
            t=record.t,
            action=str(data.get("action", "")),
            direction=str(data.get("dir", "")),
            kind=str(data.get("kind", "")),
            method=data.get("method") if isinstance(data.get("method"), str) else None,
            id=data.get("id"),
            has_id="id" in data,
            data=data,
        )
        if isinstance(marks, dict):
            for direction in (C2S, S2C):
                count = marks.get(direction)
                if count == REST:
                    self._rest.add(direction)
                    self._marking[direction] = note
                elif type(count) is int and 0 < count <= 1_000_000:
                    self._marks[direction] += count
                    self._marking[direction] = note
        if note.action == "corrupt" and note.kind == "request" and note.has_id:
            # The receiver never read this request: the sender cancelling it later
            # cancels nothing the receiver knows of, through no fault of its own.
            hidden = self.hidden_requests.setdefault(note.direction, set())
            if len(hidden) < NOTES_LIMIT:
                hidden.add(repr(note.id))
        if len(self.notes) < NOTES_LIMIT:
            self.notes.append(note)
        return note

    def frame(self, frame: FrameRecord) -> None:
        """A frame is about to be analyzed: number it if a fault touched it; watch reactions."""
        direction = frame.direction
        if direction in self._rest or self._marks.get(direction, 0) > 0:
            if direction not in self._rest:
                self._marks[direction] -= 1
            self.touched.add(frame.seq)
            note = self._marking.get(direction)
            if note is not None and len(note.frames) < 1000:
                note.frames.append(frame.seq)
            return
        value = frame.value
        if type(value) is dict and self.notes:
            method = value.get("method")
            if method == "notifications/cancelled":
                params = value.get("params")
                cancelled = self.cancelled[direction]
                if isinstance(params, dict) and "requestId" in params:
                    key = repr(params["requestId"])
                    if len(cancelled) < NOTES_LIMIT:
                        cancelled.setdefault(key, frame.t)
                    if key in self.hidden_requests.get(direction, ()):
                        self.touched.add(frame.seq)
            elif isinstance(method, str) and "id" in value:
                after = self.requested_after[direction]
                if len(after) < NOTES_LIMIT:
                    after.append((frame.seq, method))
            elif method is None and "id" in value:
                answered = self.answered_after[direction]
                if len(answered) < NOTES_LIMIT:
                    answered.setdefault(repr(value["id"]), frame.t)

    def http_request(self, record: EventRecord) -> None:
        """An ``http-request`` event after a fault: does it resume a stream, in which session?"""
        if not self.notes or len(self.http_requests) >= NOTES_LIMIT:
            return
        headers = record.data.get("headers")
        names: dict[str, str] = {}
        if isinstance(headers, list):
            for pair in headers[:200]:
                if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str):
                    names.setdefault(pair[0].lower(), str(pair[1]))
        resumes = "last-event-id" in names
        method = str(record.data.get("method", ""))[:20]
        self.http_requests.append((record.seq, resumes, names.get("mcp-session-id"), method))

    def withheld_finding(self, rule: str, seqs: list[int]) -> None:
        """Count a finding withheld because it named a touched frame."""
        self.withheld += 1
        if len(self.withheld_rules) < NOTES_LIMIT:
            self.withheld_rules.append((rule, list(seqs)))

    def excuses(self, rule: str, seqs: list[int]) -> bool:
        """Whether a finding of ``rule`` naming ``seqs`` would blame a peer for mcpsniff's doing.

        It names a touched frame; or it says a request was answered when
        mcpsniff withheld that answer from the peer it concerns; or a resilience
        rule judges the same reaction to what mcpsniff did (``JUDGED_BY_RESILIENCE``).
        """
        touched = self.touched
        if any(seq in touched for seq in seqs):
            return True
        judged = JUDGED_BY_RESILIENCE.get(rule)
        if judged is not None and any(
            note.action == judged[0] and note.data.get("code") == judged[1] for note in self.notes
        ):
            return True
        return rule in ANSWER_SEEN_RULES and any(seq in self.answer_withheld for seq in seqs)
