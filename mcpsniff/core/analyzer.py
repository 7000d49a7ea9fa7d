"""Many sessions, one trace: the analyzer the shells and ``check`` share.

An HTTP relay sees one session per ``Mcp-Session-Id``; a stdio relay sees
one. Sequence numbers are trace-wide, so every session draws them from one
counter. ``replay`` runs the recorded inputs of a trace through fresh
sessions: this is how ``mcpsniff check`` re-analyzes raw frames with today's
rules, through exactly the code the live relays run (docs/architecture.md, invariant 4).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Generator, Iterable, Iterator
from itertools import islice

from mcpsniff.core.model import C2S, S2C, EventRecord, FindingRecord, FrameRecord, Record
from mcpsniff.core.session import END_EVENTS, FramesOnlySession, SeqCounter, Session
from mcpsniff.core.state import CaptureGaps

#: Most sessions whose state the analyzer keeps (each costs ~7.6 KB). A live
#: HTTP relay opens one per Mcp-Session-Id, and a client that never DELETEs
#: its session would otherwise grow the analysis process forever; a hostile
#: trace may name a session per frame. Past it the least recently active
#: session's state is dropped, and the drop is recorded (``STATE_DROPPED``).
MAX_SESSIONS = 10_000
#: Most keys of dropped sessions remembered (a key is ~100 B): a key that
#: comes back is judged as after a capture gap. Past it the oldest are
#: forgotten, and such a key's later frames are judged as a new session's.
MAX_DROPPED_KEYS = 10 * MAX_SESSIONS
#: How many of the least recently active sessions are searched for an ended one to drop.
_VICTIM_SCAN = 32
#: The event that records a session's state dropped at the cap.
STATE_DROPPED = "session-state-dropped"


class Analyzer:
    """Holds the sessions of one capture, keyed by session key.

    ``sessions`` is ordered by last activity (oldest first) and holds at most
    ``max_sessions``; see ``MAX_SESSIONS``.
    """

    def __init__(
        self,
        counter: SeqCounter | None = None,
        redactor: Callable[[bytes], tuple[bytes, int]] | None = None,
        max_sessions: int = MAX_SESSIONS,
        *,
        frames_only: bool = False,
    ) -> None:
        #: ``frames_only``: sessions that frame, number and redact only
        #: (``FramesOnlySession``: the recording lane of mcpsniff/capture/lanes.py).
        self.session_class: type[Session] = FramesOnlySession if frames_only else Session
        self.counter = counter or SeqCounter()
        self.redactor = redactor
        self.sessions: dict[str, Session] = {}
        #: Facts every session of the capture sees (HTTP session ids assigned).
        self.shared: dict[str, object] = {}
        self.max_sessions = max(1, max_sessions)
        #: Keys whose state was dropped, oldest first: the seq of the drop.
        self.dropped: dict[str | bytes, int] = {}
        #: Drops not yet handed out as records (``take_dropped``): (key, seq).
        self.drops: list[tuple[str, int]] = []
        #: The verdicts dropped sessions' capture gaps excused, per rule id
        #: (``CaptureGaps.excused``, kept for check's note when the session goes).
        self.dropped_excused: dict[str, int] = {}

    def session(self, key: str, transport: str = "stdio", seq: int | None = None) -> Session:
        """The session for ``key``, created on first use (then made the most recent).

        Creating one past ``max_sessions`` drops the least recently active
        session's state (``take_dropped`` hands out the records saying so);
        ``seq``: the seq to give that drop (a replay's input), else the counter's next.
        """
        sessions = self.sessions
        session = sessions.get(key)
        if session is None:
            while len(sessions) >= self.max_sessions:
                self.drop(self._victim(), self.counter.next() if seq is None else seq)
            session = sessions[key] = self.session_class(
                key, transport, self.counter, self.redactor
            )
            session.shared = self.shared
            gap_seq = self.dropped.pop(dropped_id(key), None)
            if gap_seq is not None:
                # Its earlier traffic is judged no more: for the rules it is as if
                # both directions lost bytes at the drop (rules/flow.py's capture
                # gaps), so a reply to a forgotten request, or a request before the
                # forgotten handshake, is excused rather than misreported (§14).
                gaps = session.state.gaps = CaptureGaps()
                for direction in (C2S, S2C):
                    gaps.lost[direction] = 1
                    gaps.last_seq[direction] = max(gap_seq, 1)
        elif len(sessions) > 1:
            # Most recent last, so the first is the one to drop (dicts keep order).
            del sessions[key]
            sessions[key] = session
        return session

    def _victim(self) -> str:
        """The session to drop: an ended one among the least recently active, else the oldest.

        An ended session's verdicts are given (its unanswered requests were
        reported at its end), so dropping it withholds less than dropping one
        still in flight. A look at the oldest few only, so a drop costs no scan.
        """
        oldest = None
        for key, session in islice(self.sessions.items(), _VICTIM_SCAN):
            if session.state.ended:
                return key
            if oldest is None:
                oldest = key
        assert oldest is not None
        return oldest

    def drop(self, key: str, seq: int) -> None:
        """Forget session ``key``'s state (at seq ``seq``); remember that it was dropped."""
        session = self.sessions.pop(key, None)
        if session is None:
            return
        gaps = session.state.gaps
        if gaps is not None:
            for rule, count in gaps.excused.items():
                self.dropped_excused[rule] = self.dropped_excused.get(rule, 0) + count
        dropped = self.dropped
        key_id = dropped_id(key)
        dropped.pop(key_id, None)
        while len(dropped) >= MAX_DROPPED_KEYS:
            del dropped[next(iter(dropped))]
        dropped[key_id] = seq
        self.drops.append((key, seq))

    def take_dropped(self, t: float) -> list[Record]:
        """The ``STATE_DROPPED`` event records of the drops since the last call, at ``t``."""
        drops, self.drops = self.drops, []
        return [
            EventRecord(seq, t, key, STATE_DROPPED, {"max_sessions": self.max_sessions})
            for key, seq in drops
        ]

    def close(self, t: float) -> list[Record]:
        """End every session that has not ended yet."""
        out: list[Record] = []
        for session in self.sessions.values():
            out.extend(session.close(t))
        return out


def dropped_id(key: str) -> str | bytes:
    """How a dropped key is remembered: itself, or a digest of a long one.

    A hostile trace's session keys may be as long as its lines: the keys
    remembered must not cost more than ``MAX_DROPPED_KEYS`` short strings.
    """
    if len(key) <= 128:
        return key
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()


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
        # A batch of a session no longer kept (a session-state-dropped event,
        # or the drops a new session caused: ``MAX_SESSIONS``) is all events.
        first = batch[0]
        session = sessions.get(first.session)
        if session is not None:
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
    last_t, last_seq = yield from replay_inputs(inputs, analyzer)
    analyzer.counter.value = last_seq
    for session in list(analyzer.sessions.values()):
        if not session.state.ended:
            yield end_unended(session, analyzer.counter.next(), last_t)


def replay_inputs(
    inputs: Iterable[FrameRecord | EventRecord | None], analyzer: Analyzer
) -> Generator[list[Record], None, tuple[float, int]]:
    """``replay_batches`` without the ends of the sessions left open; returns the last t and seq.

    A ``None`` among the inputs stands for an input another analyzer takes
    (``check`` split by session, ``mcpsniff/check/split.py``): it ends the run
    of frames, as that input would, and is otherwise passed over.
    """
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
        if is_frame and record.session == run_key and len(run) < limit:  # type: ignore[union-attr]
            # The usual input: the next frame of the run (the checks below, for it).
            run.append(record)  # type: ignore[arg-type]
            if record.t > last_t:  # type: ignore[union-attr]
                last_t = record.t  # type: ignore[union-attr]
            if record.seq > last_seq:  # type: ignore[union-attr]
                last_seq = record.seq  # type: ignore[union-attr]
            continue
        if record is None:
            if run:
                yield run_session.analyze_frames(run)  # type: ignore[union-attr]
                run = []
                run_session = run_key = None
            continue
        if record.t > last_t:
            last_t = record.t
        if record.seq > last_seq:
            last_seq = record.seq
        if run:
            yield run_session.analyze_frames(run)  # type: ignore[union-attr]
            run = []
            run_session = run_key = None
        if not is_frame and record.event == STATE_DROPPED:  # type: ignore[union-attr]
            # The capture dropped this session's state here: so does the replay,
            # so that its later frames are judged as they were live.
            analyzer.drop(record.session, record.seq)
            analyzer.drops.clear()  # the trace's own record says it
            yield [record]
            continue
        session = analyzer.session(
            record.session,
            record.transport if is_frame else "stdio",  # type: ignore[union-attr]
            record.seq,
        )
        if analyzer.drops:
            yield analyzer.take_dropped(record.t)
        if is_frame:
            run.append(record)  # type: ignore[arg-type]
            run_session = session
            run_key = record.session
        else:
            yield session.apply_event(record)  # type: ignore[arg-type]
    if run:
        yield run_session.analyze_frames(run)  # type: ignore[union-attr]
    return last_t, last_seq


def end_unended(session: Session, seq: int, t: float) -> list[Record]:
    """End a session the trace left open, with a made-up ``session-end`` at ``seq`` and ``t``."""
    end = EventRecord(
        seq,
        t,
        session.key,
        "session-end",
        {"synthetic": True, "reason": "trace ended without session-end"},
    )
    return session.apply_event(end)


__all__ = [
    "END_EVENTS",
    "MAX_DROPPED_KEYS",
    "MAX_SESSIONS",
    "STATE_DROPPED",
    "Analyzer",
    "dropped_id",
    "end_unended",
    "replay",
    "replay_batches",
    "replay_inputs",
    "replay_notable",
]
