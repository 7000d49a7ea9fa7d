"""One trace of many sessions checked on several cores: a share of the sessions per worker.

Sessions are analyzed independently (each has its own state), so worker ``k``
of ``n`` reads the whole trace and analyzes only the sessions it owns: the
``k``-th, ``k+n``-th, ... session key in the order the trace first names them
(every worker reads the same inputs, so all agree on who owns what). Its
runs of frames are the ones one process makes: another session's input ends
a run (``replay_inputs`` takes it as ``None``). Each finding and event it
reports is tagged with the position of the input that produced it, and the
reports of all workers are merged by that position: the order of one process.

The sessions a trace leaves open are ended after the last input, in the order
of their last activity, with the seqs following the trace's last one
(``replay_batches``). Every worker follows every session's last input and
whether it ended, so each gives its own sessions the seqs one process gives.

What one session's analysis shares with the others makes a split inexact, so
a worker gives up, and ``check`` runs in one process, when it meets any of it:
facts shared across sessions (``Analyzer.shared``: HTTP exchange numbers, a
bearer token seen, cursors), the cap of sessions kept (``MAX_SESSIONS``),
or an unreadable trace.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpsniff.core.analyzer import MAX_SESSIONS, STATE_DROPPED, Analyzer, end_unended, replay_inputs
from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, Record
from mcpsniff.core.spec_links import session_version
from mcpsniff.trace.codec import TraceError
from mcpsniff.trace.gaps import GapTally
from mcpsniff.trace.reader import TornLine, TraceReader

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

#: Traces smaller than this are checked in one process: a fork costs more.
MIN_SPLIT_BYTES = 4 << 20
#: Most distinct session keys a worker follows before it gives up (a hostile
#: trace may name a session per frame; one process bounds what it keeps).
_MAX_KEYS = 4 * MAX_SESSIONS

#: (position of the input, the record, its session's protocol version then).
Tagged = tuple[int, FindingRecord | EventRecord, str | None]


@dataclass
class Share:
    """What one worker found in its sessions (``None`` from a worker that gave up)."""

    tagged: list[Tagged] = field(default_factory=list)
    #: Its sessions still kept at the end, each with its protocol version.
    versions: dict[str, str | None] = field(default_factory=dict)
    dropped: dict[str | bytes, int] = field(default_factory=dict)
    unjudged: dict[str, int] = field(default_factory=dict)
    #: Worker 0 only: the lines the reader skipped (warnings) and the torn last line.
    skipped: list[str] = field(default_factory=list)
    torn: TornLine | None = None


class _GiveUp(Exception):
    """The split would not give one process's verdicts: check in one process."""


def check_share(trace: Path, index: int, workers: int) -> Share | None:
    """Worker ``index`` of ``workers``: analyze the sessions it owns; None when it gave up."""
    share = Share()
    on_skip = share.skipped.append if index == 0 else _ignore
    try:
        with TraceReader(trace, on_skip=on_skip) as reader:
            analyzer = Analyzer()
            _replay_share(reader, analyzer, index, workers, share)
            share.torn = reader.torn if index == 0 else None
    except (_GiveUp, TraceError, OSError):
        return None
    share.versions = {key: session_version(analyzer, key) for key in analyzer.sessions}
    share.dropped = dict(analyzer.dropped)
    gaps = GapTally()
    gaps.add_unjudged(analyzer.sessions.values(), analyzer.dropped_excused)
    share.unjudged = gaps.unjudged
    return share


def _ignore(text: str) -> None:
    """Worker 0 alone reports the lines the reader skipped."""


def _replay_share(
    reader: TraceReader, analyzer: Analyzer, index: int, workers: int, share: Share
) -> None:
    owners: dict[str, bool] = {}
    #: Every session kept (as one process keeps them), in the order of its
    #: last input: whether it ended.
    kept: dict[str, bool] = {}
    positions: list[tuple[Record, int]] = []  # the inputs handed on, not yet reported
    taken = 0  # how many of ``positions`` are behind
    last = [0.0, 0]

    def inputs() -> Iterator[FrameRecord | EventRecord | None]:
        barrier = False
        for position, record in enumerate(reader.inputs()):
            if record.t > last[0]:
                last[0] = record.t
            if record.seq > last[1]:
                last[1] = record.seq
            key = record.session
            is_drop = type(record) is EventRecord and record.event == STATE_DROPPED
            if is_drop:
                kept.pop(key, None)
            else:
                ended = kept.pop(key, None)
                if ended is None:
                    ended = False
                    if len(kept) >= MAX_SESSIONS:
                        raise _GiveUp  # one process would drop a session's state here
                if type(record) is EventRecord and record.event == "session-end":
                    ended = True
                kept[key] = ended  # now the most recent
            owned = owners.get(key)
            if owned is None:
                if len(owners) >= _MAX_KEYS:
                    raise _GiveUp
                owned = owners[key] = len(owners) % workers == index
            if owned:
                positions.append((record, position))
                barrier = False
                yield record
            elif not barrier:
                barrier = True
                yield None

    shared = analyzer.shared
    tagged = share.tagged
    sessions = analyzer.sessions
    batches = replay_inputs(inputs(), analyzer)
    try:
        while True:
            batch = next(batches)
            if shared or analyzer.drops:
                raise _GiveUp
            first = batch[0]
            while positions[taken][0] is not first:
                taken += 1
            position = positions[taken][1]
            taken += 1
            if taken > 4096:
                del positions[:taken]
                taken = 0
            session = sessions.get(first.session)
            if session is not None:
                # As ``replay_notable``: a batch of frames that raised nothing is passed over.
                if not session.notable and type(first) is FrameRecord:
                    continue
                session.notable = 0
            _tag(batch, position, sessions, tagged)
    except StopIteration:
        pass
    # The follower must agree with the analyzer on every session this worker owns.
    for key, session in sessions.items():
        if kept.get(key) is not session.state.ended:
            raise _GiveUp
    if sum(1 for key in kept if owners[key]) != len(sessions):
        raise _GiveUp
    # The last t and seq of the whole trace (``replay_inputs`` saw this worker's only).
    last_t, last_seq = last
    # The sessions left open, in the order of their last input (one process's
    # ``analyzer.sessions``), numbered after the trace's last seq.
    open_keys = [key for key, ended in kept.items() if not ended]
    for rank, key in enumerate(open_keys, start=1):
        session = sessions.get(key)
        if session is not None:  # one of this worker's
            # After every input's position: the ends come last, in this order.
            _tag(
                end_unended(session, last_seq + rank, last_t),
                _AFTER_INPUTS + rank,
                sessions,
                tagged,
            )


#: Orders past every input's position: those of the made-up session ends.
_AFTER_INPUTS = 1 << 62


def _tag(batch: list[Record], order: int, sessions: dict[str, Any], tagged: list[Tagged]) -> None:
    """Keep the findings and events of ``batch``, with their order and session's version."""
    for record in batch:
        kind = type(record)
        if kind is FindingRecord or kind is EventRecord:
            session = sessions.get(record.session)
            version = session.state.version if session is not None else None
            if not isinstance(version, str):
                version = None
            tagged.append((order, record, version))  # type: ignore[arg-type]


@dataclass
class Merged:
    """The shares of all workers, merged into one process's order."""

    shares: list[Share]
    #: The protocol version of the session of the record ``records()`` gave last.
    version: str | None = None

    def records(self) -> Iterator[FindingRecord | EventRecord]:
        """The findings and events, in the order one process reports them."""
        for _, record, version in heapq.merge(*(s.tagged for s in self.shares), key=_order):
            self.version = version
            yield record

    def skipped(self) -> list[str]:
        """The reader's warnings about lines it skipped (as ``TraceReader``'s ``on_skip``)."""
        return self.shares[0].skipped

    def torn(self) -> TornLine | None:
        """The torn last line of the trace, if it has one."""
        return self.shares[0].torn

    def sessions(self) -> list[str]:
        """Every session kept at the end."""
        return [key for share in self.shares for key in share.versions]

    def session_version(self, key: str) -> str | None:
        """The protocol version of session ``key`` at the end (None: not known)."""
        for share in self.shares:
            if key in share.versions:
                return share.versions[key]
        return None

    def dropped(self) -> dict[str | bytes, int]:
        """The keys of the sessions whose state was dropped."""
        out: dict[str | bytes, int] = {}
        for share in self.shares:
            out.update(share.dropped)
        return out

    def add_unjudged(self, gaps: GapTally) -> None:
        """Add up the verdicts the workers' capture gaps excused (order does not matter)."""
        for share in self.shares:
            for rule, count in share.unjudged.items():
                gaps.unjudged[rule] = gaps.unjudged.get(rule, 0) + count


def many_sessions(trace: Path, samples: int = 16) -> bool:
    """Whether pieces from all over ``trace`` name more than one session.

    Only whether a split is worth its workers: a trace of one session would
    keep one worker busy and the others reading in vain, and one of HTTP
    sessions makes them give up (``Analyzer.shared``). A guess, never a
    verdict (what a split reports does not depend on it).
    """
    size = trace.stat().st_size
    keys: set[bytes] = set()
    with trace.open("rb") as f:
        for number in range(samples):
            f.seek(size * number // samples)
            piece = f.read(_SAMPLE_BYTES)
            if _HTTP_EXCHANGE in piece:
                # An HTTP capture: its sessions share exchange numbers, and a
                # worker would give up at the first one.
                return False
            keys.update(_SESSION_KEY.findall(piece))
    return len(keys) > 1


#: A record's session key, as the writer puts it (a guess is all ``many_sessions`` needs).
_SESSION_KEY = re.compile(rb'"t":[-0-9.e+]+,"session":"((?:[^"\\\n]|\\.){0,256})"')
_SAMPLE_BYTES = 1 << 16
_HTTP_EXCHANGE = b'"event":"http-request"'


def _order(item: Tagged) -> int:
    return item[0]


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes, forked where the system can fork."""
    # Imported once workers are wanted: a trace of one session, the usual case,
    # is checked without them (docs/performance.md, "Start-up").
    import gc
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # What this process holds now (mcpsniff's modules, mostly) is moved out of
    # the cyclic collector's reach before the fork: a worker's collections then
    # do not write to (and so copy) the pages it shares with this process, and
    # this process's exit does not walk it all once more.
    gc.freeze()

    # A fork starts a worker without importing mcpsniff again (its start-up);
    # where there is none, a fresh interpreter.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=context)


def check_split(trace: Path, jobs: int) -> Merged | None:
    """Check ``trace`` with ``jobs`` workers (``check_share``); None: check in one process."""
    try:
        if jobs < 2 or trace.stat().st_size < MIN_SPLIT_BYTES or not many_sessions(trace):
            return None
    except OSError:
        return None
    try:
        with worker_pool(jobs) as pool:
            futures = [pool.submit(check_share, trace, k, jobs) for k in range(jobs)]
            shares = [future.result() for future in futures]
    except Exception:
        # A worker died (killed, out of memory) or failed: one process checks
        # the trace, and tells of a failure its own way.
        return None
    if any(share is None for share in shares):
        return None
    return Merged(shares)  # type: ignore[arg-type]
