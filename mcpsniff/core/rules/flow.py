"""Request flow across messages: cancellation (CANCEL-*), progress (PROG-*) and
requests never answered (JR-RESP-REQUIRED).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcpsniff.core.ids import IdKey, id_key, show_id
from mcpsniff.core.model import C2S, OPPOSITE, S2C, SENDER
from mcpsniff.core.protocol import STATELESS, V4
from mcpsniff.core.rules.interruption import interruption
from mcpsniff.core.rules.registry import EVENT, NOTIFICATION, REPLY, REQUEST, rule
from mcpsniff.core.state import (
    CAPTURE_GAP,
    EXCHANGES_BEGUN,
    Answered,
    CaptureGaps,
    Pending,
    ProgressState,
    channel_gap,
    gaps_of,
    per_run,
    run_of,
)

if TYPE_CHECKING:
    from mcpsniff.core.model import EventRecord
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

RULES = (
    "JR-RESP-REQUIRED",
    "CANCEL-SHAPE",
    "CANCEL-SAME-DIRECTION",
    "CANCEL-IN-PROGRESS",
    "CANCEL-INITIALIZE",
    "PROG-TOKEN-TYPE",
    "PROG-TOKEN-UNIQUE",
    "PROG-ACTIVE-TOKEN",
    "PROG-MONOTONIC",
    "PROG-STOP",
    "PROG-PARAMS",
    "PROG-TOTAL",
    "PROG-DIRECTION-V5",
)

#: At most this many unanswered requests are reported one by one at session end.
MAX_UNANSWERED_REPORTS = 200
#: ``session.shared`` key: per run (``run_of``), the exchange ranges its salvaged
#: HTTP capture-gaps name (its exchanges may belong to any session of the run).
GAP_EXCHANGES = "capture-gap-exchanges"
#: JSON numbers, and the types a progress token may have (with bool excluded
#: apart): tuples, which ``isinstance`` reads as they are, where ``int | float``
#: builds a union object on every call (``_progress`` runs for every progress
#: notification).
_NUMBER = (int, float)
_TOKEN_TYPES = (str, int, float)
#: A slotted record without its ``__init__`` (classification.py builds its own so).
_new_record = object.__new__


@rule("PROG-TOKEN-TYPE", "PROG-TOKEN-UNIQUE", on=REQUEST)
def on_request(session: Session, msg: Msg) -> None:
    """Register the request's progress token, if it has one."""
    params = msg.params
    if params is None:
        return
    meta = params.get("_meta")
    if not isinstance(meta, dict) or "progressToken" not in meta:
        return
    token = meta["progressToken"]
    state = session.state
    if type(token) is int:
        key: IdKey = token  # the usual token is its own key (ids.id_key), asked first
    else:
        if isinstance(token, float) and not token.is_integer():
            session.report(
                "PROG-TOKEN-TYPE",
                f"{SENDER[msg.direction]} used progress token {token}; tokens are strings or "
                "integers",
                [msg.frame],
            )
        if isinstance(token, bool) or not isinstance(token, _TOKEN_TYPES):
            return
        key = id_key(token)
    if state.era == STATELESS:
        key = session.scoped(key, msg)  # per client in the stateless era, as ids are
    active = state.progress[msg.direction]
    if key in active:
        session.report(
            "PROG-TOKEN-UNIQUE",
            f"{SENDER[msg.direction]} reused progress token {show_id(token)} while the request "
            f"at seq {active[key].request_seq} that owns it is still active",
            [active[key].request_seq, msg.frame],
            token=token,
        )
    # The session registered the request (and keyed its id) just before.
    request_key = msg.key if msg.key is not None else id_key(msg.id)
    # ProgressState(request_key, msg.frame), built slot by slot (no __init__
    # frame: a request with progress pays this); tests/core/rules/test_flow.py
    # holds it to the constructor's fields.
    entry = _new_record(ProgressState)
    entry.request_key = request_key
    entry.request_seq = msg.frame
    entry.last = None
    active[key] = entry
    pending = state.pending[msg.direction].get(request_key)
    if pending is not None:
        pending.progress_token = key


@rule("PROG-STOP", on=REPLY)
def on_response(session: Session, msg: Msg) -> None:
    """A response ends its request's progress token."""
    request = msg.request
    if request is None or request.progress_token is None:
        return
    request_direction = OPPOSITE[msg.direction]
    active = session.state.progress[request_direction]
    state = active.get(request.progress_token)
    if state is not None and state.request_key == request.key:
        token = request.progress_token
        del active[token]
        # BoundedMap.put, inlined (a reply with progress ends its token: one call
        # fewer each): a new token goes to the end by itself; only one finished
        # before (and still remembered) has to move there.
        finished = session.state.finished_tokens[request_direction]
        if token in finished:
            del finished[token]
        finished[token] = msg.frame
        if len(finished) > finished.limit:
            finished.popitem(False)


@rule(
    "CANCEL-IN-PROGRESS",
    "CANCEL-INITIALIZE",
    "CANCEL-SAME-DIRECTION",
    "CANCEL-SHAPE",
    on=NOTIFICATION,
    methods=("notifications/cancelled",),
)
def _cancelled(session: Session, msg: Msg) -> None:
    state = session.state
    params = msg.params or {}
    sender = SENDER[msg.direction]
    if "requestId" not in params:
        # Optional only in 2025-11-25, where it "MUST be provided for cancelling
        # non-task requests"; tasks use tasks/cancel instead.
        if state.version != V4:
            session.report(
                "CANCEL-SHAPE",
                f"{sender} sent notifications/cancelled without params.requestId",
                [msg.frame],
            )
        return
    request_id = params["requestId"]
    if isinstance(request_id, bool) or not isinstance(request_id, str | int | float):
        session.report(
            "CANCEL-SHAPE",
            f"{sender} sent notifications/cancelled whose requestId is not a string or number",
            [msg.frame],
        )
        return
    if "reason" in params and not isinstance(params["reason"], str):
        session.report(
            "CANCEL-SHAPE", f"{sender} sent a cancellation reason that is not a string", [msg.frame]
        )
    key = session.pairing_key(request_id, msg)
    lc = state.lifecycle
    if msg.direction == C2S and lc.init_key == key and lc.init_seq is not None:
        session.report(
            "CANCEL-INITIALIZE",
            "the client tried to cancel its initialize request, which it must never do",
            [lc.init_seq, msg.frame],
        )
    key, ambiguous = session.rescope(state.pending[msg.direction], key)
    if ambiguous:
        return  # several clients have a request with this id in flight: not whose
    pending = state.pending[msg.direction].get(key)
    if pending is not None:
        pending.cancelled = True
        # A cancelled request is never "unanswered" (cancellation.mdx), and its
        # late result is an expected race (catalogue trap 6).
        del state.pending[msg.direction][key]
        state.answered[msg.direction].put(
            key,
            Answered(
                pending.seq,
                pending.index,
                pending.method,
                None,
                cancelled=True,
                fingerprint=pending.fingerprint,
            ),
        )
        _forget_token(session, msg.direction, pending.progress_token, key, msg.frame)
        return
    answered = state.answered[msg.direction].get(
        session.rescope(state.answered[msg.direction], key)[0]
    )
    if answered is not None or key in state.used[msg.direction]:
        # Already answered: a normal race unless the canceller had long seen the answer.
        session.report(
            "CANCEL-IN-PROGRESS",
            f"{sender} cancelled request {show_id(request_id)}, which had already been "
            "answered (usually a harmless race)",
            [msg.frame] if answered is None else [answered.seq, msg.frame],
            request_id=request_id,
            severity="info",
        )
        return
    if state.era == STATELESS and msg.direction == S2C:
        return  # servers cancel subscriptions/listen streams (MOD-SUBS-CLOSE)
    other = key in state.used[OPPOSITE[msg.direction]]
    if not other and _gap_may_hide(session, msg.direction, "CANCEL-SAME-DIRECTION"):
        return  # the cancelled request may be in the sender's capture gap
    session.report(
        "CANCEL-SAME-DIRECTION",
        f"{sender} cancelled request {show_id(request_id)}, but "
        + (
            f"that id belongs to a request the {SENDER[OPPOSITE[msg.direction]]} sent; only "
            "the requestor can cancel"
            if other
            else f"the {sender} never sent a request with that id"
        ),
        [msg.frame],
        request_id=request_id,
    )


def _forget_token(session: Session, direction: str, token: Any, request_key: Any, seq: int) -> None:
    if token is None:
        return
    active = session.state.progress[direction]
    state = active.get(token)
    if state is not None and state.request_key == request_key:
        del active[token]
        # Progress after a cancel is a race too: remember the token as cancelled.
        session.state.finished_tokens[direction].put(token, -seq)


@rule(
    "PROG-ACTIVE-TOKEN",
    "PROG-DIRECTION-V5",
    "PROG-MONOTONIC",
    "PROG-PARAMS",
    "PROG-STOP",
    "PROG-TASK-TOKEN",
    "PROG-TOTAL",
    on=NOTIFICATION,
    methods=("notifications/progress",),
)
def _progress(session: Session, msg: Msg) -> None:
    state = session.state
    params = msg.params or {}
    sender = SENDER[msg.direction]
    if state.era == STATELESS and msg.direction == C2S:
        session.report(
            "PROG-DIRECTION-V5",
            "the client sent a progress notification; in 2026-07-28 only servers send progress",
            [msg.frame],
        )
    progress = params.get("progress")
    total = params.get("total")
    problems = []
    # Asked once: the monotonic and total checks below read the same answer.
    numeric = isinstance(progress, _NUMBER) and not isinstance(progress, bool)
    if not numeric:
        problems.append("progress (number, required)")
    if "total" in params and (isinstance(total, bool) or not isinstance(total, _NUMBER)):
        problems.append("total (number)")
    if "message" in params and not isinstance(params["message"], str):
        problems.append("message (string)")
    if problems:
        session.report(
            "PROG-PARAMS",
            f"{sender} sent a progress notification with a bad " + ", ".join(problems),
            [msg.frame],
        )
    token = params.get("progressToken")
    if isinstance(token, bool) or not isinstance(token, _TOKEN_TYPES):
        session.report(
            "PROG-PARAMS", f"{sender} sent a progress notification without a token", [msg.frame]
        )
        return
    # The usual token is its own key (ids.id_key's first case, without the call:
    # this runs for every progress notification).
    key = token if type(token) is int else id_key(token)
    request_direction = OPPOSITE[msg.direction]
    # Tokens are scoped per client only in the stateless era (``Session.scoped``);
    # in the others the key is the token's own, and ``rescope`` has nothing to do.
    scoped = state.era == STATELESS
    if scoped:
        key = session.scoped(key, msg)
        key, ambiguous = session.rescope(state.progress[request_direction], key)
        if ambiguous:
            return  # several clients' requests carry this token: not whose
    active = state.progress[request_direction].get(key)
    if active is None:
        if scoped:
            key = session.rescope(state.finished_tokens[request_direction], key)[0]
        finished = state.finished_tokens[request_direction].get(key)
        if finished is not None and finished < 0:
            return  # progress racing a cancellation: expected (trap 6)
        ended_tasks = state.rule_state.get("task_tokens")
        task_id = ended_tasks.get(key) if finished is not None and ended_tasks else None
        if task_id is not None:
            # progress.mdx § Behavior Requirements 3: a task-augmented request's token
            # stays valid until the task is terminal, and no longer.
            session.report(
                "PROG-TASK-TOKEN",
                f"{sender} sent progress for token {show_id(token)} after its task "
                f"{str(task_id)[:60]!r} ended (seq {finished}); the token is valid only "
                "until the task is terminal",
                [finished, msg.frame],
                token=token,
                task_id=task_id,
            )
        elif finished is not None:
            session.report(
                "PROG-STOP",
                f"{sender} sent progress for token {show_id(token)} after the request was "
                f"answered (seq {finished})",
                [finished, msg.frame],
                token=token,
            )
        elif not _gap_may_hide(session, request_direction, "PROG-ACTIVE-TOKEN"):
            session.report(
                "PROG-ACTIVE-TOKEN",
                f"{sender} sent progress for token {show_id(token)}, which no active request "
                f"of the {SENDER[request_direction]} carries",
                [msg.frame],
                token=token,
            )
        return
    if numeric:
        if active.last is not None and progress <= active.last:
            session.report(
                "PROG-MONOTONIC",
                f"{sender} sent progress {progress} for token {show_id(token)} after "
                f"{active.last}; progress must increase with each notification",
                [active.request_seq, msg.frame],
                token=token,
                previous=active.last,
                progress=progress,
            )
        active.last = progress
        if isinstance(total, _NUMBER) and not isinstance(total, bool) and progress > total:
            session.report(
                "PROG-TOTAL",
                f"{sender} reported progress {progress} beyond its total {total}",
                [msg.frame],
                token=token,
            )


@rule(
    "JR-RESP-REQUIRED",
    "JR-RESP-ID",
    "PROG-ACTIVE-TOKEN",
    "CANCEL-SAME-DIRECTION",
    on=EVENT,
    keys=("capture-gap",),
)
def capture_gap(session: Session, event: EventRecord) -> None:
    """Bytes were forwarded but not analyzed: remember what they may hold.

    A gap in one direction may hold the answers to the requests the other
    direction has in flight (they are not judged unanswered at session end),
    and the requests whose answers come later (an unknown id after it is not
    judged). A gap of an HTTP exchange concerns only that exchange's requests;
    a salvaged HTTP gap names exchanges of any session (``GAP_EXCHANGES``).
    Gaps are rare: this may cost anything, a message costs nothing.
    """
    state = session.state
    data = event.data
    direction = data.get("direction")
    if direction in (C2S, S2C):
        gaps = state.gaps
        if gaps is None:
            gaps = state.gaps = CaptureGaps()
        lost = data.get("lost_bytes")
        # A gap that says it lost nothing (or says it badly) still lost something.
        gaps.lost[direction] += lost if type(lost) is int and lost > 0 else 1
        gaps.last_seq[direction] = max(event.seq, 1)
        asking = OPPOSITE[direction]
        exchange = data.get("exchange")
        if type(exchange) is int and state.http is not None:
            # An HTTP body's gap: only the requests of that exchange lose their answer.
            found = state.http.exchanges.get(exchange)
            keys = {m.key for m in found.methods if m.kind == REQUEST} if found else set()
            in_flight = [r for r in _in_flight(session, asking) if r.key in keys]
        else:
            in_flight = _in_flight(session, asking)
        # Kept bounded by the requests in flight: the earlier gaps' requests
        # that have been answered since are forgotten.
        still = {r.seq for r in _in_flight(session, asking)}
        gaps.crossed[asking] = (gaps.crossed[asking] & still) | {r.seq for r in in_flight}
        return
    if channel_gap(session.key, data) in ("capture", "mixed"):
        # The HTTP capture channel dropped observations of any exchange, either
        # way: requests, answers, their ends (§14.9: an answer may come on any
        # stream of the session). Every session takes it in (``gaps_of``).
        run = run_of(session.key)
        runs = per_run(session.shared, CAPTURE_GAP, run)
        if runs is not None:
            runs[run] = max(runs.get(run, 0), event.seq)
        return
    ranges = data.get("exchanges")
    if isinstance(ranges, list):
        named = [
            (r[0], r[1])
            for r in ranges[:1024]
            if isinstance(r, list) and len(r) == 2 and all(type(n) is int for n in r)
        ]
        through = data.get("through_exchange")
        unlisted = data.get("unlisted_exchanges")
        if type(unlisted) is int and unlisted > 0 and type(through) is int and named:
            # Past the listed ranges, the missing exchanges are not named one by one.
            named.append((named[-1][1] + 1, through))
        run = run_of(session.key)
        runs = per_run(session.shared, GAP_EXCHANGES, run)
        kept = runs.setdefault(run, []) if runs is not None else None
        if kept is not None and len(kept) < 4096:
            kept.extend(named)


def _gap_may_hide(session: Session, direction: str, rule_id: str) -> bool:
    """Whether ``direction`` lost bytes to a capture gap (then ``rule_id`` is excused).

    For verdicts about something ``direction`` should have sent before (a
    request, its progress token): it may be in the gap. One attribute test
    when there is no gap.
    """
    gaps = gaps_of(session.state, session.shared, session.key)
    if gaps is None or not gaps.lost[direction]:
        return False
    gaps.excuse(rule_id)
    return True


def _in_flight(session: Session, direction: str) -> list[Pending]:
    """Every request ``direction`` has in flight, shadowed ones included."""
    state = session.state
    shadowed = [r for queue in state.shadowed[direction].values() for r in queue]
    return [*shadowed, *state.pending[direction].values()]


@dataclass(slots=True)
class _Hidden:
    """What a salvaged HTTP gap hides of one session's pending requests."""

    #: Keys of the client requests whose exchange the gap names.
    keys: set[Any] = field(default_factory=set)
    #: A named exchange is a GET stream of the session: any client request's
    #: answer may have travelled on it (§14.9).
    stream: bool = False
    #: A named exchange began after every exchange the trace holds: it may be
    #: the client's answer to any server request the trace holds.
    later: bool = False


def _gap_hidden(session: Session) -> tuple[CaptureGaps | None, _Hidden]:
    """The session's gaps, and what a salvaged gap's exchanges hide of its requests."""
    state = session.state
    shared = session.shared
    run = run_of(session.key)
    ranges = shared.get(GAP_EXCHANGES, {}).get(run)
    hidden = _Hidden()
    if ranges:
        if state.http is not None:
            for number, exchange in state.http.exchanges.items():
                if any(first <= number <= last for first, last in ranges):
                    hidden.keys.update(m.key for m in exchange.methods if m.kind == REQUEST)
                    hidden.stream = hidden.stream or exchange.method == "GET"
        begun = shared.get(EXCHANGES_BEGUN, {}).get(run, 0)
        hidden.later = any(last > begun for _, last in ranges)
        if (hidden.keys or hidden.stream or hidden.later) and state.gaps is None:
            state.gaps = CaptureGaps()
    return gaps_of(state, shared, session.key), hidden


_NOTHING_HIDDEN = _Hidden()


@rule("JR-RESP-REQUIRED", on=EVENT, keys=("session-end",))
def end_of_session(session: Session, event: EventRecord) -> None:
    """Requests still pending when the session ends were never answered.

    Unless their answer may be in a capture gap: a request in flight when the
    answering direction lost bytes is not judged (``capture_gap``), only counted.
    And unless the session was interrupted (``interruption.py``): a request in
    flight when the server was stopped is reported as such, as info.
    """
    state = session.state
    stopped = interruption(session, event)
    reported = 0
    overflow = 0
    shared = session.shared
    gaps, hidden = (
        (None, _NOTHING_HIDDEN)
        if state.gaps is None and GAP_EXCHANGES not in shared and CAPTURE_GAP not in shared
        else _gap_hidden(session)
    )
    for direction in (C2S, S2C):
        pending = state.pending[direction]
        # Requests that shared an in-flight id with another are unanswered too.
        shadowed = [r for queue in state.shadowed[direction].values() for r in queue]
        crossed = gaps.crossed[direction] if gaps is not None else ()
        for request in [*shadowed, *pending.values()]:
            if request.missing_reported or request.method == "subscriptions/listen":
                # A listen stream ends without a response when the transport
                # closes (subscriptions.mdx): open at the end is not unanswered.
                continue
            if gaps is not None and (
                request.seq in crossed
                # Sent before a capture-wide gap, pending since: in flight across it.
                or request.seq < gaps.capture_seq
                or (
                    (hidden.stream or request.key in hidden.keys)
                    if direction == C2S
                    else hidden.later
                )
            ):
                gaps.excuse("JR-RESP-REQUIRED")
                continue
            if reported >= MAX_UNANSWERED_REPORTS:
                overflow += 1
                continue
            reported += 1
            if stopped is not None:
                cause, reason = stopped
                session.report(
                    "JR-RESP-REQUIRED",
                    f"{SENDER[direction]} request {show_id(request.id)} ({request.method}, "
                    f"seq {request.seq}) was still in flight when the session ended: {reason}",
                    [request.seq],
                    severity="info",
                    cause=cause,
                    reason=reason,
                    id=request.id,
                    method=request.method,
                    waited_ms=round((event.t - request.t) * 1000.0, 3),
                )
                continue
            session.report(
                "JR-RESP-REQUIRED",
                f"{SENDER[direction]} request {show_id(request.id)} ({request.method}, seq "
                f"{request.seq}) was never answered before the session ended",
                [request.seq],
                id=request.id,
                method=request.method,
                waited_ms=round((event.t - request.t) * 1000.0, 3),
            )
        pending.clear()
        state.shadowed[direction].clear()
    if overflow and stopped is not None:
        session.report(
            "JR-RESP-REQUIRED",
            f"{overflow} more requests were still in flight when the session ended "
            f"(not listed one by one): {stopped[1]}",
            [event.seq],
            severity="info",
            cause=stopped[0],
            reason=stopped[1],
            count=overflow,
        )
    elif overflow:
        session.report(
            "JR-RESP-REQUIRED",
            f"{overflow} more requests were never answered (not listed one by one)",
            [event.seq],
            count=overflow,
        )
