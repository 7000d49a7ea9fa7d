"""Many sessions, one trace: the analyzer the shells and ``check`` share.

An HTTP relay sees one session per ``Mcp-Session-Id``; a stdio relay sees
one. Sequence numbers are trace-wide, so every session draws them from one
counter. ``replay`` runs the recorded inputs of a trace through fresh
sessions: this is how ``mcpsniff check`` re-analyzes raw frames with today's
rules, through exactly the code the live relays run (DESIGN.md invariant 4).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, Record
from mcpsniff.core.session import END_EVENTS, SeqCounter, Session


class Analyzer:
    """Holds the sessions of one capture, keyed by session key."""

    def __init__(
        self,
        counter: SeqCounter | None = None,
        redactor: Callable[[bytes], tuple[bytes, int]] | None = None,
    ) -> None:
        self.counter = counter or SeqCounter()
        self.redactor = redactor
        self.sessions: dict[str, Session] = {}
        #: Facts every session of the capture sees (HTTP session ids assigned).
        self.shared: dict[str, object] = {}

    def session(self, key: str, transport: str = "stdio") -> Session:
        """The session for ``key``, created on first use."""
        session = self.sessions.get(key)
        if session is None:
            session = self.sessions[key] = Session(key, transport, self.counter, self.redactor)
            session.shared = self.shared
        return session

    def close(self, t: float) -> list[Record]:
        """End every session that has not ended yet."""
        out: list[Record] = []
        for session in self.sessions.values():
            out.extend(session.close(t))
        return out


#: At most this many frames are analyzed in one call (their records wait until then).
MAX_RUN = 64


def replay(
    inputs: Iterable[FrameRecord | EventRecord], analyzer: Analyzer | None = None
) -> Iterator[Record]:
    """Re-analyze recorded frames and events; yield every record they produce.

    Sessions the trace never ended (a torn or interrupted trace) are ended
    after the last input, at the time of the last record seen. ``analyzer``:
    a fresh one to use, for a caller that reads its sessions' state afterwards
    (``check`` counts the verdicts capture gaps excused).
    """
    for batch in replay_batches(inputs, analyzer):
        yield from batch


def replay_notable(
    inputs: Iterable[FrameRecord | EventRecord], analyzer: Analyzer | None = None
) -> Iterator[FindingRecord | EventRecord]:
    """``replay``'s findings and events, in the same order, without its frames and messages.

    What ``check`` reports (its sessions are ``analyzer.sessions``, every one
    of which had an input). Frames and their messages are nine records in ten
    or more, and most batches of frames raise nothing: a batch whose session
    added no finding or event to it (``Session.notable``) is skipped whole
    instead of walked record by record.
    """
    if analyzer is None:
        analyzer = Analyzer()
    sessions = analyzer.sessions
    for batch in replay_batches(inputs, analyzer):
        # Every batch comes from one session, and its first record is that
        # session's input (a frame or an event), which names it. An event's
        # batch is always walked: the event itself is reported.
        first = batch[0]
        session = sessions[first.session]
        if not session.notable and type(first) is FrameRecord:
            continue
        session.notable = 0
        for record in batch:
            kind = type(record)
            if kind is FindingRecord or kind is EventRecord:
                yield record  # type: ignore[misc]


def replay_batches(
    inputs: Iterable[FrameRecord | EventRecord], analyzer: Analyzer | None = None
) -> Iterator[list[Record]]:
    """``replay``'s records, in the same order, one list per analyzer call.

    For a caller that walks every record itself (``check``): a generator
    hop per record costs more than the loop that walks the record, and a
    100k-message trace yields 200k records (its frames and their messages).
    """
    if analyzer is None:
        analyzer = Analyzer()
    sessions = analyzer.sessions
    last_t = 0.0
    last_seq = 0
    # Consecutive frames of one session are analyzed together (one
    # ``analyze_frames`` call for up to MAX_RUN of them), in input order: a
    # frame of another session or any event first finishes the run. A
    # session's frames are known by its key (keys name sessions one to one).
    run: list[FrameRecord] = []
    run_session: Session | None = None
    run_key: object = None  # run_session's key
    limit = MAX_RUN
    for record in inputs:
        is_frame = type(record) is FrameRecord
        if is_frame and record.session == run_key and len(run) < limit:
            # The usual input: the next frame of the run (the checks below, for it).
            run.append(record)  # type: ignore[arg-type]
            if record.t > last_t:
                last_t = record.t
            if record.seq > last_seq:
                last_seq = record.seq
            continue
        session = sessions.get(record.session)
        if session is None:
            session = analyzer.session(record.session, record.transport if is_frame else "stdio")
        if record.t > last_t:
            last_t = record.t
        if record.seq > last_seq:
            last_seq = record.seq
        if run:
            yield run_session.analyze_frames(run)  # type: ignore[union-attr]
            run = []
            run_session = run_key = None
        if is_frame:
            run.append(record)  # type: ignore[arg-type]
            run_session = session
            run_key = record.session
        else:
            yield session.apply_event(record)  # type: ignore[arg-type]
    if run:
        yield run_session.analyze_frames(run)  # type: ignore[union-attr]
    analyzer.counter.value = last_seq
    for session in analyzer.sessions.values():
        if not session.state.ended:
            end = EventRecord(
                analyzer.counter.next(),
                last_t,
                session.key,
                "session-end",
                {"synthetic": True, "reason": "trace ended without session-end"},
            )
            yield session.apply_event(end)


__all__ = ["END_EVENTS", "Analyzer", "replay", "replay_batches", "replay_notable"]
